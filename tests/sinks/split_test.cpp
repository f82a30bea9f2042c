// SPDX-License-Identifier: MIT
// `edgetrace json --split-mb/--min-dur/--filter`: several loadable files by time window; filters shrink the output.
#include <edgetrace/sinks/chrome_json/writer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/json_lite.hpp>

namespace split_test {

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
  REQUIRE(run_cli({"json", dump_path, "-o", whole}).exit_code == 0);
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
  const auto cli_run = run_cli({"json", dump_path, "-o", out, "--split-mb", "1"});
  REQUIRE_MESSAGE(cli_run.exit_code == 0, cli_run.err);
  CHECK(file_exists(scratch("split_run-001.json")));
}

TEST_CASE("--min-dur and --filter shrink the JSON") {
  const std::string dump_path = record_workload("split_filter", 20);
  const auto spans = reference_spans(load_dump(dump_path));
  const std::string out = scratch("split_filter.json");
  REQUIRE(run_cli({"json", dump_path, "-o", out, "--filter", "^stage_"}).exit_code == 0);
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
  REQUIRE(run_cli({"json", dump_path, "-o", out, "--min-dur", "50us"}).exit_code == 0);
  doc = load_json(out);
  count = 0;
  for (std::size_t k = 0; k < doc["traceEvents"].size(); ++k) count += doc["traceEvents"][k]["ph"].str() == "X";
  CHECK(count == long_spans);
}

namespace {

/// A synthetic dump of `spans` spans on four threads, evenly spread over
/// time: big enough to split into many files at --split-mb 1.
std::string big_dump(const std::string& name, std::uint64_t spans) {
  using namespace edgetrace_test;
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "work");
  defs.site(1, edgetrace::format::site_kind::span, 1, "short").site(2, edgetrace::format::site_kind::span, 1, "a_longer_span_name");
  defs.site(3, edgetrace::format::site_kind::counter, 1, "depth");
  d.defs(1, defs);
  for (std::uint64_t t = 1; t <= 4; ++t) d.thread(1, t, 100 + t, "worker " + std::to_string(t));
  const std::uint64_t per_thread = spans / 4, per_chunk = 5000;
  for (std::uint64_t t = 1; t <= 4; ++t)
    for (std::uint64_t first = 0; first < per_thread; first += per_chunk) {
      events e(t, 1000 + first * 1000);
      for (std::uint64_t i = first; i < std::min(per_thread, first + per_chunk); ++i) {
        const std::uint64_t begin = 1000 + i * 1000 + t;
        e.span(1 + i % 2, begin, begin + 500 + i % 7);
        if (i % 50 == 0) e.counter(3, begin + 600, static_cast<double>(i % 13));
      }
      d.event_chunk(1, e);
    }
  d.end(1);
  return edgetrace_test::saved_dump(d, name);
}

/// The non-metadata events of a document, each as its JSON text's members
/// (a dur as whole ns: the whole file may write one as the longer text that
/// is exact for speedscope), sorted: what "the same events" means across files.
std::vector<std::string> event_keys(const json_lite::value& doc) {
  std::vector<std::string> keys;
  for (const auto& e : doc["traceEvents"].items) {
    if (e["ph"].str() == "M") continue;
    const std::string dur = e.has("dur") ? std::to_string(std::llround(e["dur"].num() * 1000.0)) : "";
    keys.push_back(e["ph"].str() + "|" + e["name"].str() + "|" + e["ts"].text + "|" + dur + "|" +
                   e["tid"].text + "|" + e["args"]["depth"].text);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

TEST_CASE("--split-mb keeps its promise: files of at most N MB, at most 256, each whole, the same events") {
  const std::string dump_path = big_dump("split_big.etr", 120000);
  const std::string whole = scratch("split_big_whole.json");
  REQUIRE(run_cli({"json", dump_path, "-o", whole}).exit_code == 0);
  const auto whole_doc = load_json(whole);
  const std::string out = scratch("split_big.json");
  for (std::size_t i = 1; i <= edgetrace::reader::chrome_json_max_parts; ++i)
    std::remove(edgetrace::reader::chrome_json_part_path(out, i).c_str());
  const auto r = run_cli({"json", dump_path, "-o", out, "--split-mb", "1"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::vector<std::string> parts;
  for (std::size_t i = 1; file_exists(edgetrace::reader::chrome_json_part_path(out, i)); ++i)
    parts.push_back(edgetrace::reader::chrome_json_part_path(out, i));
  const std::uint64_t whole_size = read_file(whole).size();
  CAPTURE(whole_size);
  REQUIRE(parts.size() >= whole_size / 1000000);  // several files
  CHECK(parts.size() <= edgetrace::reader::chrome_json_max_parts);
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CAPTURE(parts[i]);
    const std::string text = read_file(parts[i]);
    CHECK(text.size() <= 1000000);
    if (i + 1 < parts.size()) CHECK(text.size() >= 900000);  // filled in time order: only the last is short
    const auto doc = load_json(parts[i]);  // loads on its own: one complete document
    CHECK(doc["otherData"]["parts"].num() == static_cast<double>(parts.size()));
    const auto part_keys = event_keys(doc);
    keys.insert(keys.end(), part_keys.begin(), part_keys.end());
  }
  std::sort(keys.begin(), keys.end());
  CHECK(keys == event_keys(whole_doc));
}

TEST_CASE("--split-mb refuses up front when it would need more files than its limit, and says what would do") {
  const std::string dump_path = big_dump("split_limit.etr", 40000);
  edgetrace::reader::dump_reader r;
  REQUIRE(r.open(dump_path));
  edgetrace::reader::chrome_json_input in;
  in.reader = &r;
  const std::string out = scratch("split_limit.json");
  std::remove(edgetrace::reader::chrome_json_part_path(out, 1).c_str());
  std::vector<edgetrace::reader::chrome_json_part> parts;
  std::string error;
  // A limit of 2 files of 1 MB for a JSON of about 4 MB.
  CHECK_FALSE(edgetrace::reader::write_chrome_json_split({in}, out, 1000000, {}, parts, &error, 2));
  CHECK(parts.empty());
  CHECK_FALSE(file_exists(edgetrace::reader::chrome_json_part_path(out, 1)));  // nothing written
  CHECK(error.find("more than the limit of 2") != std::string::npos);
  CHECK(error.find("--min-dur") != std::string::npos);
  const auto at = error.find("Use --split-mb ");
  REQUIRE(at != std::string::npos);
  const std::uint64_t suggested = std::stoull(error.substr(at + 15));
  CAPTURE(error);
  // The suggestion works, and is the smallest that does.
  REQUIRE(edgetrace::reader::write_chrome_json_split({in}, out, suggested * 1000000, {}, parts, &error, 2));
  CHECK(parts.size() <= 2);
  for (const auto& part : parts) CHECK(part.bytes <= suggested * 1000000);
  CHECK_FALSE(edgetrace::reader::write_chrome_json_split({in}, out, (suggested - 1) * 1000000, {}, parts, &error, 2));
}

TEST_CASE("--split-mb N refuses, exit code 1 and nothing written, when more than N MB start within one slice") {
  using namespace edgetrace_test;
  // 30000 spans within 30 us, then one 1000 s later: all but one start in
  // the first 1/1048576 of the time range (about 1 ms).
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "work").site(1, edgetrace::format::site_kind::span, 1, "burst");
  d.defs(1, defs).thread(1, 1, 100, "t");
  events e(1, 1000);
  for (std::uint64_t i = 0; i < 30000; ++i) e.span(1, 1000 + i, 1001 + i);
  e.span(1, 1000000000000, 1000000000001);
  d.event_chunk(1, e).end(1);
  const std::string dump_path = temp_path("split_burst.etr");
  REQUIRE(write_file(dump_path, d.build()));
  const std::string out = scratch("split_burst.json");
  std::remove(edgetrace::reader::chrome_json_part_path(out, 1).c_str());
  const auto r = run_cli({"json", dump_path, "-o", out, "--split-mb", "1"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("within one 1/1048576 of the time range") != std::string::npos);
  const auto at = r.err.find("Use --split-mb ");
  REQUIRE(at != std::string::npos);
  const std::string suggested = std::to_string(std::stoull(r.err.substr(at + 15)));
  CHECK_FALSE(file_exists(edgetrace::reader::chrome_json_part_path(out, 1)));
  const auto again = run_cli({"json", dump_path, "-o", out, "--split-mb", suggested});
  CHECK_MESSAGE(again.exit_code == 0, again.err);
  CHECK(read_file(edgetrace::reader::chrome_json_part_path(out, 1)).size() <= std::stoull(suggested) * 1000000);
}

}  // namespace split_test
