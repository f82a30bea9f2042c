// SPDX-License-Identifier: MIT
// `edgetrace summary` on dumps of real traced runs, checked against statistics computed independently from the spans.
#include <edgetrace/sinks/summary/summary.hpp>

#include <doctest/doctest.h>

#include <sstream>

#include <algorithm>
#include <random>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/json_checks.hpp>
#include <support/json_lite.hpp>

namespace summary_test {

using namespace edgetrace_test;
namespace er = edgetrace::reader;

namespace {

const json_lite::value* row_named(const json_lite::value& doc, const std::string& key) {
  for (std::size_t i = 0; i < doc["rows"].size(); ++i)
    if (doc["rows"][i]["key"].str() == key) return &doc["rows"][i];
  return nullptr;
}

}  // namespace

TEST_CASE("summary rows match counts, totals, self time and percentiles computed from the spans") {
  const std::string dump_path = record_workload("summary_run");
  const loaded_dump dump = load_dump(dump_path);
  REQUIRE(dump.complete);
  const auto spans = reference_spans(dump);
  const auto rows = reference_rows(spans);
  REQUIRE(rows.count("leaf"));
  CHECK(rows.at("leaf").calls == 90);

  const auto r = run_cli({"summary", dump_path, "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json_lite::value doc = parse_json(r.out);
  CHECK(doc["rows"].size() == rows.size());
  std::uint64_t all_self = 0;
  for (const auto& s : spans) all_self += s.self;
  CHECK(u(doc["self_total_ns"]) == all_self);
  for (const auto& entry : rows) {
    CAPTURE(entry.first);
    const json_lite::value* row = row_named(doc, entry.first);
    REQUIRE(row != nullptr);
    const ref_row& want = entry.second;
    const json_lite::value& host = (*row)["host"];
    CHECK(u((*row)["calls"]) == want.calls);
    CHECK(u(host["total_ns"]) == want.total);
    CHECK(u(host["self_ns"]) == want.self);
    CHECK(u(host["min_ns"]) == want.min);
    CHECK(u(host["max_ns"]) == want.max);
    CHECK(u(host["mean_ns"]) == (want.total + want.calls / 2) / want.calls);
    CHECK(u(host["p50_ns"]) == reference_percentile(want.durations, 50));
    CHECK(u(host["p90_ns"]) == reference_percentile(want.durations, 90));
    CHECK(u(host["p95_ns"]) == reference_percentile(want.durations, 95));
    CHECK(u(host["p99_ns"]) == reference_percentile(want.durations, 99));
    CHECK(u(host["p999_ns"]) == reference_percentile(want.durations, 99.9));
    CHECK(host["exact"].is_bool());
  }
  // Self time is real: a parent's self excludes its children.
  CHECK(rows.at("stage_a").self < rows.at("stage_a").total);
  CHECK(rows.at("leaf").self == rows.at("leaf").total);

  // Default table: sorted by total, aligned, readable units.
  const auto table = run_cli({"summary", dump_path});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("iteration") != std::string::npos);
  CHECK(table.out.find("p99.9") != std::string::npos);
  const std::size_t header = table.out.find("name ");
  REQUIRE(header != std::string::npos);
  const std::size_t first_row = table.out.find('\n', table.out.find("-----", header)) + 1;
  // The largest total comes first. Usually "iteration" (it holds the main
  // thread's work), but the worker's spin-waits count wall time: on a loaded
  // machine a preempted worker_task can outgrow it, so ask the spans.
  const auto largest = std::max_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total < b.second.total;
  });
  CAPTURE(largest->first);
  CHECK(table.out.compare(first_row, largest->first.size() + 1, largest->first + " ") == 0);
  CHECK((table.out.find(" us") != std::string::npos || table.out.find(" ms") != std::string::npos));
}

TEST_CASE("iterations from marks: latency between marks, throughput, and warm-up skipping") {
  const std::string dump_path = record_workload("summary_marks");
  const loaded_dump dump = load_dump(dump_path);
  const auto marks = mark_times(dump);
  REQUIRE(marks.size() == 31);
  std::vector<std::uint64_t> latencies;
  for (std::size_t i = 1; i < marks.size(); ++i) latencies.push_back(static_cast<std::uint64_t>(marks[i] - marks[i - 1]));

  auto r = run_cli({"summary", dump_path, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  json_lite::value doc = parse_json(r.out);
  REQUIRE(doc["iterations"].size() == 1);
  const json_lite::value& it = doc["iterations"][0];
  CHECK(it["name"].str() == "frame");
  CHECK(u(it["count"]) == 30);
  CHECK(u(it["p50_ns"]) == reference_percentile(latencies, 50));
  CHECK(u(it["p99_ns"]) == reference_percentile(latencies, 99));
  CHECK(u(it["max_ns"]) == *std::max_element(latencies.begin(), latencies.end()));
  const double expected_rate = 30.0 / (static_cast<double>(marks.back() - marks.front()) / 1e9);
  CHECK(it["per_second"].num() == doctest::Approx(expected_rate).epsilon(1e-4));

  // Skip 5 iterations: spans that ended before the 6th mark are gone.
  r = run_cli({"summary", dump_path, "--format", "json", "--skip-warmup", "5"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  doc = parse_json(r.out);
  const std::int64_t cutoff = marks[5];
  std::map<std::string, std::uint64_t> kept;
  std::uint64_t skipped = 0;
  for (const auto& s : reference_spans(dump)) {
    if (s.end < cutoff) ++skipped;
    else ++kept[s.name];
  }
  CHECK(u(doc["spans_warmup"]) == skipped);
  for (const auto& k : kept) {
    CAPTURE(k.first);
    REQUIRE(row_named(doc, k.first) != nullptr);
    CHECK(u((*row_named(doc, k.first))["calls"]) == k.second);
  }
  CHECK(u(doc["iterations"][0]["count"]) == 25);
  CHECK(u(doc["iterations"][0]["skipped"]) == 5);
  CHECK(doc["notes"][0].str().find("warm-up") != std::string::npos);

  // A top-level span as the iteration.
  r = run_cli({"summary", dump_path, "--format", "json", "--iteration", "iteration"});
  REQUIRE(r.exit_code == 0);
  doc = parse_json(r.out);
  REQUIRE(doc["iterations"].size() == 1);
  CHECK(doc["iterations"][0]["from"].str() == "span");
  CHECK(u(doc["iterations"][0]["count"]) == 30);
  CHECK(u(doc["iterations"][0]["max_ns"]) == reference_rows(reference_spans(dump)).at("iteration").max);
}

TEST_CASE("summary --columns: the table keeps the name and the columns asked for, in its order; csv keeps all") {
  const std::string dump_path = record_workload("summary_columns");
  const auto narrow = run_cli({"summary", dump_path, "--columns", "p99,calls,self,+peak_mem"});
  REQUIRE_MESSAGE(narrow.exit_code == 0, narrow.err);
  std::string header;
  for (std::size_t at = 0; at < narrow.out.size();) {
    const std::size_t end = narrow.out.find('\n', at);
    const std::string line = narrow.out.substr(at, end - at);
    if (line.rfind("name ", 0) == 0) header = line;
    at = end == std::string::npos ? narrow.out.size() : end + 1;
  }
  CAPTURE(narrow.out);
  REQUIRE_FALSE(header.empty());
  std::istringstream words(header);
  std::vector<std::string> columns;
  for (std::string w; words >> w;) columns.push_back(w);
  // The table's own order, whatever the list's; a column of data the dump
  // lacks (this workload allocates nothing: no +peak mem) is simply absent.
  CHECK(columns == std::vector<std::string>{"name", "category", "calls", "self", "p99"});
  const auto all = run_cli({"summary", dump_path});
  CHECK(all.out.size() > narrow.out.size());
  const auto csv = run_cli({"summary", dump_path, "--format", "csv", "--columns", "calls"});
  REQUIRE(csv.exit_code == 0);
  CHECK(contains(csv.out, "p50_ns"));  // csv keeps every field
  const auto bad = run_cli({"summary", dump_path, "--columns", "p98"});
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.err, "--columns: no column 'p98' (the columns: calls,total,self,mean,min,p50,p90,p95,p99,p999,"));
  const auto report = run_cli({"report", dump_path, "--columns", "calls", "-o", scratch("summary_columns.html")});
  CHECK(report.exit_code == 1);
  CHECK(contains(report.err, "a report shows every column; --columns is for summary's table"));
}

TEST_CASE("summary options: --by, --top, --filter, --category, --thread, --sort-by, --min-time, csv") {
  const std::string dump_path = record_workload("summary_options");
  const auto spans = reference_spans(load_dump(dump_path));

  auto doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--by", "thread"}).out);
  REQUIRE(doc["rows"].size() == 2);
  std::uint64_t worker_calls = 0;
  for (const auto& s : spans) worker_calls += s.thread == "worker";
  const std::size_t worker_row = doc["rows"][0]["key"].str().rfind("worker", 0) == 0 ? 0 : 1;
  CHECK(doc["rows"][worker_row]["calls"].num() ==
        static_cast<double>(worker_calls));

  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--by", "category"}).out);
  CHECK(doc["rows"].size() == 2);

  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--top", "2"}).out);
  CHECK(doc["rows"].size() == 2);
  CHECK(u(doc["rows_before_top"]) == 5);

  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--filter", "^stage_"}).out);
  CHECK(doc["rows"].size() == 2);

  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--category", "aux"}).out);
  REQUIRE(doc["rows"].size() == 1);
  CHECK(doc["rows"][0]["key"].str() == "worker_task");

  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--thread", "main"}).out);
  CHECK(doc["rows"].size() == 4);

  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--sort-by", "+calls"}).out);
  REQUIRE(doc["rows"].size() == 5);
  for (std::size_t i = 1; i < 5; ++i) CHECK(doc["rows"][i - 1]["calls"].num() <= doc["rows"][i]["calls"].num());
  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--sort-by", "p99"}).out);
  for (std::size_t i = 1; i < 5; ++i)
    CHECK(doc["rows"][i - 1]["host"]["p99_ns"].num() >= doc["rows"][i]["host"]["p99_ns"].num());

  std::uint64_t long_leaves = 0;
  for (const auto& s : spans) long_leaves += s.name == "leaf" && s.dur() >= 20000;
  doc = parse_json(run_cli({"summary", dump_path, "--format", "json", "--filter", "^leaf$", "--min-time", "20us"}).out);
  REQUIRE(doc["rows"].size() == (long_leaves ? 1u : 0u));
  if (long_leaves) CHECK(u(doc["rows"][0]["calls"]) == long_leaves);

  const auto csv = run_cli({"summary", dump_path, "--format", "csv"});
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.rfind("name,category,calls,total_ns,self_ns,mean_ns,min_ns,p50_ns,p90_ns,p95_ns,p99_ns,p999_ns,max_ns,"
                      "share,exact\n",
                      0) == 0);
  CHECK(line_count(csv.out) == 6);
}

TEST_CASE("bad input: one clear message and a non-zero exit") {
  const std::string dump_path = record_workload("summary_bad", 4);
  struct bad_case {
    std::vector<std::string> args;
    int exit_code;
    const char* says;
  };
  const std::string empty = scratch("summary_empty.etr");
  write_file(empty, {});
  dump_builder future;
  future.header(2, 0);
  const std::string newer = scratch("summary_v2.etr");
  write_file(newer, future.build());
  const std::vector<bad_case> cases = {
      {{"summary", dump_path, "--frobnicate"}, 1, "unknown option '--frobnicate'"},
      {{"summary", dump_path, "--sortby", "total"}, 1, "did you mean '--sort-by'"},
      {{"summary", dump_path, "--filter", "(unclosed"}, 1, "bad --filter regex"},
      {{"summary", dump_path, "--sort-by", "speed"}, 1, "unknown column 'speed'"},
      {{"summary", dump_path, "--min-time", "5"}, 1, "needs a duration with a unit"},
      {{"summary", dump_path, "--format", "xml"}, 1, "--format must be"},
      {{"summary", dump_path, "--top"}, 1, "needs a value"},
      {{"summary", dump_path, "--iteration", "nope"}, 1, "no mark or span named \"nope\""},
      {{"summary"}, 1, "needs at least one DUMP"},
      {{"summary", empty}, 2, "empty file"},
      {{"summary", scratch("does_not_exist.etr")}, 2, "No such file"},
      {{"summary", dump_path, newer}, 2, "newer than this reader"},
      {{"diff", dump_path, newer}, 2, "newer than this reader"},
      {{"merge", dump_path, newer, "-o", scratch("mixed.etr")}, 2, "newer than this reader"},
      {{"csv", empty}, 2, "empty file"},
      {{"report", empty}, 2, "empty file"},
      {{"json", dump_path, "--filter", "[", "-o", "-"}, 1, "bad --filter regex"},
  };
  for (const bad_case& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    CAPTURE(joined);
    const auto r = run_cli(c.args);
    CHECK(r.exit_code == c.exit_code);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(r.err.rfind("edgetrace: error: ", 0) == 0);
    CHECK(r.out.empty());
  }
}

TEST_CASE("percentiles are exact up to the sample limit, then within the documented bucket error") {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> latency(10.0, 1.2);  // ~22 us median, long tail
  er::latency_stats small(1000), exact(10000000);
  std::vector<std::uint64_t> all;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<std::uint64_t>(latency(rng)) + 1;
    small.add(v);
    exact.add(v);
    all.push_back(v);
  }
  CHECK_FALSE(small.exact());
  CHECK(exact.exact());
  CHECK(small.count() == exact.count());
  CHECK(small.total() == exact.total());
  CHECK(small.min() == exact.min());
  CHECK(small.max() == exact.max());
  for (double p : {1.0, 50.0, 90.0, 95.0, 99.0, 99.9}) {
    CAPTURE(p);
    const std::uint64_t want = reference_percentile(all, p);
    CHECK(exact.percentile(p) == want);
    const double error = std::fabs(static_cast<double>(small.percentile(p)) - static_cast<double>(want)) /
                         static_cast<double>(want);
    CHECK(error <= er::log_buckets::relative_error);
  }
  // Bucket boundaries: every value maps into a bucket that contains it.
  for (std::uint64_t v : {0ull, 1ull, 255ull, 256ull, 257ull, 1000ull, 123456789ull, ~0ull}) {
    const std::size_t i = er::log_buckets::index(v);
    CHECK(i < er::log_buckets::count);
    CHECK(er::log_buckets::lower(i) <= v);
    CHECK(v - er::log_buckets::lower(i) < er::log_buckets::width(i));
  }
}

}  // namespace summary_test
