// SPDX-License-Identifier: MIT
// NVTX forwarding (nvtx.hpp) without a GPU or Nsight: nvtx_app runs under
// nvtx_injection, a recording NVTX tool loaded through
// NVTX_INJECTION64_PATH, and the calls it saw are checked: the "edgetrace"
// domain, registered strings (once each), one named category per edgetrace
// category, ranges nested like the scopes, marks for instants.
#include <doctest/doctest.h>

#include <edgetrace/config.hpp>
#include <support/process.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace {

// EDGETRACE_NVTX=1 is the run-time switch of the scope hooks; a runtime
// without them (no detail/hooks.hpp) would call it an unknown variable.
#if __has_include(<edgetrace/detail/hooks.hpp>)
const std::string nvtx_switch = "EDGETRACE_NVTX=1";
#else
const std::string nvtx_switch = "NVTX_APP_NO_SWITCH=1";
#endif

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count(const std::vector<std::string>& lines, const std::string& line) {
  return static_cast<std::size_t>(std::count(lines.begin(), lines.end(), line));
}

/// The category id NVTX got for edgetrace category `name`.
std::string category_id(const std::vector<std::string>& lines, const std::string& name) {
  for (const auto& l : lines)
    if (l.rfind("category edgetrace ", 0) == 0 && l.size() > name.size() &&
        l.compare(l.size() - name.size() - 1, std::string::npos, " " + name) == 0)
      return l.substr(19, l.size() - 19 - name.size() - 1);
  return "?";
}

}  // namespace

TEST_CASE("nvtx: scopes become ranges in the edgetrace domain, with registered names and categories") {
  const std::string dir = EDGETRACE_TEST_TMPDIR;
  const std::string log = dir + "/nvtx_calls.log";
  const auto r = edgetrace_test::run({EDGETRACE_TEST_NVTX_APP},
                                     {"EDGETRACE_OUTPUT=" + dir + "/nvtx_app.etr", nvtx_switch,
                                      "NVTX_INJECTION64_PATH=" EDGETRACE_TEST_NVTX_INJECTION, "NVTX_TEST_LOG=" + log});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto lines = lines_of(edgetrace_test::read_file(log));
  INFO(edgetrace_test::read_file(log));
  REQUIRE(!lines.empty());
  CHECK(lines.front() == "initialized");
  CHECK(count(lines, "domain edgetrace") == 1);
  const std::string cat = category_id(lines, "nvtxcat");
  const std::string other = category_id(lines, "other");
  CHECK(cat != "?");
  CHECK(other != "?");
  CHECK(cat != other);
  // Each name is registered once, however often it is used.
  for (const char* name : {"outer", "layer_3", "tick", "elsewhere"}) CHECK(count(lines, std::string("string edgetrace ") + name) == 1);
  std::vector<std::string> events;
  for (const auto& l : lines)
    if (l.rfind("push ", 0) == 0 || l.rfind("pop ", 0) == 0 || l.rfind("mark ", 0) == 0) events.push_back(l);
  std::vector<std::string> expected;
  for (int i = 0; i < 3; ++i) {
    expected.push_back("push edgetrace " + cat + " outer");
    expected.push_back("push edgetrace " + cat + " layer_3");
    expected.push_back("pop edgetrace");
    expected.push_back("mark edgetrace " + cat + " tick");
    expected.push_back("pop edgetrace");
  }
  expected.push_back("push edgetrace " + other + " elsewhere");
  expected.push_back("pop edgetrace");
  CHECK(events == expected);
}

TEST_CASE("nvtx: without a tool attached nothing is recorded and the app runs as usual") {
  const std::string dir = EDGETRACE_TEST_TMPDIR;
  const auto r = edgetrace_test::run({EDGETRACE_TEST_NVTX_APP},
                                     {"EDGETRACE_OUTPUT=" + dir + "/nvtx_app_no_tool.etr", nvtx_switch});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
}
