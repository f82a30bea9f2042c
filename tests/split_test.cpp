// SPDX-License-Identifier: MIT
// `edgetrace json --split-mb/--min-dur/--filter`: several loadable files by time window; filters shrink the output.
#include <edgetrace/reader/chrome_json.hpp>

#include <doctest/doctest.h>

#include <set>

#include "support/analysis_workload.hpp"
#include "support/json_lite.hpp"

using namespace edgetrace_test;

namespace {

json_lite::value load_json(const std::string& path) {
  json_lite::value v;
  std::string error;
  const bool parsed = json_lite::parse(read_file(path), v, error);
  const std::string why = path + ": " + error;
  REQUIRE_MESSAGE(parsed, why);
  return v;
}

}  // namespace

TEST_CASE("--split-mb writes time windows, each a complete document with its own metadata") {
  const std::string dump_path = record_workload("split_run", 200);
  const std::size_t spans = reference_spans(load_dump(dump_path)).size();
  const std::string whole = scratch("split_whole.json");
  REQUIRE(cli({"json", dump_path, "-o", whole}).exit_code == 0);
  const std::string out = scratch("split_run.json");
  // Tiny windows: --split-mb takes whole MB, so shrink through the library.
  edgetrace::reader::dump_reader r;
  REQUIRE(r.open(dump_path));
  edgetrace::reader::chrome_json_input in;
  in.reader = &r;
  std::vector<edgetrace::reader::chrome_json_part> parts;
  std::string error;
  REQUIRE(edgetrace::reader::write_chrome_json_split({in}, out, 20000, {}, parts, &error));
  REQUIRE(parts.size() >= 3);
  std::size_t total_spans = 0;
  double last_end = -1;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CAPTURE(parts[i].path);
    const auto doc = load_json(parts[i].path);
    bool has_thread_names = false;
    double first = 1e300, last = 0;
    for (std::size_t k = 0; k < doc["traceEvents"].size(); ++k) {
      const auto& e = doc["traceEvents"][k];
      if (e["ph"].str() == "M") has_thread_names = has_thread_names || e["name"].str() == "thread_name";
      if (e["ph"].str() == "X") {
        ++total_spans;
        first = std::min(first, e["ts"].num());
        last = std::max(last, e["ts"].num());
      }
    }
    CHECK(has_thread_names);
    CHECK(doc["otherData"]["part"].num() == static_cast<double>(i + 1));
    if (first < 1e300) {
      CHECK(first >= last_end);  // windows do not overlap (by span start)
      last_end = last;
    }
  }
  CHECK(total_spans == spans);

  // The CLI form writes -001, -002, ... next to OUT.
  const auto cli_run = cli({"json", dump_path, "-o", out, "--split-mb", "1"});
  REQUIRE_MESSAGE(cli_run.exit_code == 0, cli_run.err);
  CHECK(file_exists(scratch("split_run-001.json")));
}

TEST_CASE("--min-dur and --filter shrink the JSON") {
  const std::string dump_path = record_workload("split_filter", 20);
  const auto spans = reference_spans(load_dump(dump_path));
  const std::string out = scratch("split_filter.json");
  REQUIRE(cli({"json", dump_path, "-o", out, "--filter", "^stage_"}).exit_code == 0);
  auto doc = load_json(out);
  std::set<std::string> names;
  std::size_t count = 0;
  for (std::size_t k = 0; k < doc["traceEvents"].size(); ++k)
    if (doc["traceEvents"][k]["ph"].str() == "X") {
      names.insert(doc["traceEvents"][k]["name"].str());
      ++count;
    }
  CHECK(names == std::set<std::string>{"stage_a", "stage_b"});
  CHECK(count == 40);

  std::size_t long_spans = 0;
  for (const auto& s : spans) long_spans += s.dur() >= 50000;
  REQUIRE(cli({"json", dump_path, "-o", out, "--min-dur", "50us"}).exit_code == 0);
  doc = load_json(out);
  count = 0;
  for (std::size_t k = 0; k < doc["traceEvents"].size(); ++k) count += doc["traceEvents"][k]["ph"].str() == "X";
  CHECK(count == long_spans);
}
