// SPDX-License-Identifier: MIT
// NVTX forwarding (<edgetrace/nvtx.hpp>, EDGETRACE_NVTX=1) checked without a
// GPU or an NVIDIA tool: nvtx_app runs with NVTX_INJECTION64_PATH pointing
// at nvtx_injection.so, which logs every NVTX domain call edgetrace makes.
#include <doctest/doctest.h>

#include <support/process.hpp>
#include <support/read_dump.hpp>

#include "nvtx_app_dump.hpp"

#include <map>
#include <sstream>
#include <string>
#include <vector>

using edgetrace_test::line_count;
using edgetrace_test::load_dump;
using edgetrace_test::read_file;
using edgetrace_test::run;

namespace {

const std::string app = EDGETRACE_TEST_NVTX_APP;
const std::string injection = EDGETRACE_TEST_NVTX_INJECTION;
const std::string tmp = edgetrace_test::scratch_dir();

struct nvtx_log {
  std::vector<std::string> domains, strings;
  std::map<std::string, std::string> categories;           ///< id -> name
  std::map<std::string, std::vector<std::string>> threads;  ///< tid -> "push CAT TEXT" / "pop" / "mark CAT TEXT"
  bool injected = false;
};

nvtx_log parse(const std::string& text) {
  nvtx_log log;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string what, rest;
    in >> what;
    if (what == "injected") {
      log.injected = true;
    } else if (what == "domain" || what == "string") {
      std::getline(in >> std::ws, rest);
      (what == "domain" ? log.domains : log.strings).push_back(rest);
    } else if (what == "category") {
      std::string id;
      in >> id;
      std::getline(in >> std::ws, rest);
      log.categories[id] = rest;
    } else {
      std::string tid;
      in >> tid;
      std::getline(in >> std::ws, rest);
      log.threads[tid].push_back(rest.empty() ? what : what + " " + rest);
    }
  }
  return log;
}

struct nvtx_run {
  edgetrace_test::process_result result;
  nvtx_log log;
};

nvtx_run run_app(std::vector<std::string> env, const std::string& name) {
  const std::string log_path = tmp + "/" + name + ".nvtx.log";
  ::unlink(log_path.c_str());
  env.push_back("NVTX_INJECTION64_PATH=" + injection);
  env.push_back("NVTX_TEST_LOG=" + log_path);
  nvtx_run r;
  r.result = run({app}, env);
  r.log = parse(read_file(log_path));
  return r;
}

/// The id NVTX got for edgetrace category `name` ("" if never named).
std::string category_id(const nvtx_log& log, const std::string& name) {
  for (const auto& [id, n] : log.categories)
    if (n == name) return id;
  return "";
}

void check_forwarded(const nvtx_log& log) {
  REQUIRE(log.injected);
  CHECK(log.domains == std::vector<std::string>{"edgetrace"});
  const std::string model = category_id(log, "model");
  REQUIRE_FALSE(model.empty());
  CHECK(category_id(log, "io").empty());  // filtered out: EDGETRACE_CATEGORIES=*,-io
  REQUIRE(log.threads.size() == 2);
  const std::vector<std::string> worker{"push " + model + " work", "pop", "push " + model + " work", "pop",
                                        "push " + model + " work", "pop"};
  const std::vector<std::string> main_thread{"push " + model + " outer", "push " + model + " inner", "pop",
                                             "push " + model + " conv_7",  "pop",
                                             "mark " + model + " ready",   "mark " + model + " frame",
                                             "pop"};
  // The worker ran (and was joined) first; threads are keyed by tid.
  std::vector<std::vector<std::string>> seen;
  for (const auto& [tid, calls] : log.threads) seen.push_back(calls);
  CHECK(((seen[0] == worker && seen[1] == main_thread) || (seen[1] == worker && seen[0] == main_thread)));
  for (const char* name : {"work", "outer", "inner", "conv_7", "ready", "frame"}) {
    CAPTURE(name);
    CHECK(std::count(log.strings.begin(), log.strings.end(), name) >= 1);
  }
}

}  // namespace

TEST_CASE("nvtx: EDGETRACE_NVTX=1 without a dump forwards every scope, instant and mark as NVTX") {
  const auto r = run_app({"EDGETRACE_NVTX=1", "EDGETRACE_CATEGORIES=*,-io"}, "nvtx_only");
  CHECK(r.result.exit_code == 0);
  CHECK(r.result.err.empty());
  check_forwarded(r.log);
}

TEST_CASE("nvtx: with EDGETRACE_OUTPUT too, the dump has the same spans") {
  const std::string dump_path = tmp + "/nvtx_both.etr";
  ::unlink(dump_path.c_str());
  const auto r = run_app({"EDGETRACE_NVTX=1", "EDGETRACE_CATEGORIES=*,-io", "EDGETRACE_OUTPUT=" + dump_path},
                         "nvtx_both");
  CHECK(r.result.exit_code == 0);
  CHECK(r.result.err.empty());
  check_forwarded(r.log);
  const auto dump = nvtx_app_dump::load(dump_path);
  CHECK(dump.named("read_file").empty());
  CHECK(dump.named("depth").size() == 1);
}

TEST_CASE("nvtx: without EDGETRACE_NVTX=1 no NVTX call is made (the tool is never even loaded)") {
  for (const char* value : {"", "0"}) {
    CAPTURE(value);
    std::vector<std::string> env;
    if (*value != '\0') env.push_back(std::string("EDGETRACE_NVTX=") + value);
    const auto r = run_app(env, "nvtx_off");
    CHECK(r.result.exit_code == 0);
    CHECK(r.result.err.empty());
    CHECK_FALSE(r.log.injected);
    CHECK(r.log.threads.empty());
  }
}

TEST_CASE("nvtx: a bad EDGETRACE_NVTX value gets one line naming it, and NVTX stays off") {
  const auto r = run_app({"EDGETRACE_NVTX=yes"}, "nvtx_bad");
  CHECK(r.result.exit_code == 0);
  CHECK(line_count(r.result.err) == 1);
  CHECK(r.result.err.find("EDGETRACE_NVTX") != std::string::npos);
  CHECK(r.log.threads.empty());
}

TEST_CASE("nvtx: EDGETRACE_NVTX=1 in a program without nvtx.hpp says so once, at exit") {
  const std::string trace_app = EDGETRACE_TEST_TRACE_APP;
  for (bool with_dump : {false, true}) {
    CAPTURE(with_dump);
    std::vector<std::string> env{"EDGETRACE_NVTX=1"};
    if (with_dump) env.push_back("EDGETRACE_OUTPUT=" + tmp + "/nvtx_missing.etr");
    const auto r = run({trace_app, "idle"}, env);
    CHECK(r.exit_code == 0);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("no NVTX forwarding compiled in") != std::string::npos);
  }
}
