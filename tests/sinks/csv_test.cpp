// SPDX-License-Identifier: MIT
// `edgetrace csv`: one row per span of real traced runs, parsed back and compared with the spans: times, depth, and the phase, flow and argument columns; rows in time order.
#include <edgetrace/sinks/csv/sorted_rows.hpp>
#include <edgetrace/sinks/csv/spans.hpp>
#include <edgetrace/sinks/csv/tables.hpp>
#include <edgetrace/sinks/output.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/test_env.hpp>

namespace csv_test {

using namespace edgetrace_test;

namespace {

/// Minimal RFC 4180 reader (quoted fields, doubled quotes).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

/// A CSV as rows of column name -> field.
std::vector<std::map<std::string, std::string>> csv_records(const std::string& text) {
  const auto rows = parse_csv(text);
  std::vector<std::map<std::string, std::string>> out;
  REQUIRE(!rows.empty());
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == rows[0].size());
    std::map<std::string, std::string> record;
    for (std::size_t c = 0; c < rows[0].size(); ++c) record[rows[0][c]] = rows[i][c];
    out.push_back(record);
  }
  return out;
}

namespace reader = edgetrace::reader;
constexpr int steps = 200;  // trace_app typed-args COUNT

/// What trace_app's "typed-args" mode records in step k (its comment).
double step_x(int k) { return k / 8.0 - 3; }

/// The dump of `trace_app typed-args`: phases, flow steps, and arguments
/// of every value type, recorded once.
std::string typed_dump() {
  std::string path;
  REQUIRE(recorded_once("csv-typed-args.etr", {"typed-args", std::to_string(steps)}, path));
  return path;
}

}  // namespace

TEST_CASE("csv has one row per span with start, duration, self time and depth") {
  const std::string dump_path = record_workload("csv_run");
  const std::string out = scratch("csv_run.csv");
  const auto r = run_cli({"csv", dump_path, "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto rows = parse_csv(read_file(out));
  REQUIRE(!rows.empty());
  const std::vector<std::string> header = {"name",  "category", "thread", "pid",   "tid",          "start_ns",
                                           "dur_ns", "self_ns", "depth",  "gpu_start_ns", "gpu_dur_ns",
                                           "phase", "flow",    "flow_id"};
  CHECK(rows[0] == header);  // the first eleven as before; the workload records no argument: no arg: column

  using key = std::tuple<std::string, std::uint64_t, std::int64_t, std::uint64_t, std::uint64_t, std::uint32_t>;
  std::multiset<key> want, got;
  for (const ref_span& s : reference_spans(load_dump(dump_path)))
    want.insert(key{s.name, s.tid, s.begin, s.dur(), s.self, s.depth});
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == header.size());
    CHECK(rows[i][9].empty());  // no GPU spans in format 1.1
    got.insert(key{rows[i][0], std::stoull(rows[i][4]), std::stoll(rows[i][5]), std::stoull(rows[i][6]),
                   std::stoull(rows[i][7]), static_cast<std::uint32_t>(std::stoul(rows[i][8]))});
  }
  CHECK(got.size() == want.size());
  CHECK(got == want);
  // Depths of the workload's tree.
  bool leaf_at_2 = false;
  for (const auto& k : got) leaf_at_2 = leaf_at_2 || (std::get<0>(k) == "leaf" && std::get<5>(k) == 2);
  CHECK(leaf_at_2);

  // stdout, and fields that need quoting.
  CHECK(edgetrace::reader::detail::csv_field("a,b \"c\"") == "\"a,b \"\"c\"\"\"");
  const auto to_stdout = run_cli({"csv", dump_path, "-o", "-"});
  CHECK(to_stdout.exit_code == 0);
  CHECK(line_count(to_stdout.out) == static_cast<int>(rows.size()));
}

TEST_CASE("csv has argument, phase and flow columns per span, rows in time order") {
  const std::string out = scratch("typed-args.csv");
  const auto r = run_cli({"csv", typed_dump(), "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string text = read_file(out);
  const auto header = parse_csv(text.substr(0, text.find('\n') + 1)).at(0);
  const std::vector<std::string> first = {"name",   "category", "thread",       "pid",        "tid",
                                          "start_ns", "dur_ns", "self_ns",     "depth",      "gpu_start_ns",
                                          "gpu_dur_ns", "phase", "flow",       "flow_id"};
  REQUIRE(header.size() > first.size());
  CHECK(std::vector<std::string>(header.begin(), header.begin() + first.size()) == first);
  // One arg: column per key the child recorded, sorted.
  const std::vector<std::string> keys = {"batch", "cached", "even",  "fused", "huge",  "i",    "min", "nan",
                                         "neg",   "ninf",   "ratio", "shape", "third", "tiny", "x"};
  std::vector<std::string> want_args;
  for (const std::string& k : keys) want_args.push_back("arg:" + k);
  CHECK(std::vector<std::string>(header.begin() + first.size(), header.end()) == want_args);

  const auto records = csv_records(text);
  // The same spans as the reader's, and in time order.
  const auto dump = load_dump(typed_dump());
  const auto spans = reference_spans(dump);
  REQUIRE(records.size() == spans.size());
  using key = std::tuple<std::int64_t, std::uint64_t, std::uint64_t, std::uint64_t>;
  key previous{std::numeric_limits<std::int64_t>::min(), 0, 0, 0};
  int unordered = 0;
  std::multiset<std::tuple<std::string, std::int64_t, std::uint64_t, std::uint32_t>> want, got;
  for (const auto& s : spans) want.insert({s.name, s.begin, s.dur(), s.depth});
  for (const auto& rec : records) {
    const key k{std::stoll(rec.at("start_ns")), std::stoull(rec.at("pid")), std::stoull(rec.at("tid")),
                std::stoull(rec.at("depth"))};
    if (k < previous) ++unordered;
    previous = k;
    got.insert({rec.at("name"), std::stoll(rec.at("start_ns")), std::stoull(rec.at("dur_ns")),
                static_cast<std::uint32_t>(std::stoul(rec.at("depth")))});
  }
  CHECK(unordered == 0);
  CHECK(got == want);

  // Values per span, from what the child traced.
  int k = 0, wrong = 0, children = 0;
  for (const auto& rec : records) {
    const std::string& name = rec.at("name");
    if (name == "typed") {
      CHECK(rec.at("phase") == "warm up");
      CHECK(rec.at("arg:ratio") == "0.75");
      CHECK(std::strtod(rec.at("arg:huge").c_str(), nullptr) == 1.7976931348623157e308);
      CHECK(std::strtod(rec.at("arg:tiny").c_str(), nullptr) == std::numeric_limits<double>::denorm_min());
      CHECK(std::strtod(rec.at("arg:third").c_str(), nullptr) == 1.0 / 3.0);
      CHECK(rec.at("arg:neg") == "-2.5");
      CHECK(rec.at("arg:nan") == "nan");
      CHECK(rec.at("arg:ninf") == "-inf");
      CHECK(rec.at("arg:cached") == "true");
      CHECK(rec.at("arg:fused") == "false");
      CHECK(rec.at("arg:batch") == "8");
      CHECK(rec.at("arg:min") == std::to_string(std::numeric_limits<std::int64_t>::min()));
      CHECK(rec.at("arg:shape") == "1x3x224x224");
      CHECK(rec.at("arg:x").empty());
      CHECK(rec.at("flow").empty());
    } else if (name == "step") {
      const bool flow = k % 5 == 0;
      if (rec.at("phase") != "measure" || rec.at("depth") != "0" ||
          std::strtod(rec.at("arg:x").c_str(), nullptr) != step_x(k) || rec.at("arg:x") != reader::real_text(step_x(k)) ||
          rec.at("arg:i") != std::to_string(k) || rec.at("arg:even") != (k % 2 == 0 ? "true" : "false") ||
          rec.at("flow") != (flow ? "request" : "") || rec.at("flow_id") != (flow ? std::to_string(k / 5) : "") ||
          !rec.at("arg:ratio").empty())
        ++wrong;
      ++k;
    } else if (name == "child") {
      ++children;
      // Nothing of the step's passes to its child.
      if (rec.at("phase") != "measure" || !rec.at("arg:x").empty() || !rec.at("arg:i").empty() || !rec.at("flow").empty())
        ++wrong;
    }
  }
  CHECK(k == steps);
  CHECK(children == steps);
  CHECK(wrong == 0);
}

TEST_CASE("csv sorted through temporary files equals the in-memory sort") {
  auto write = [](std::size_t memory, const std::string& path) {
    reader::dump_reader r;
    REQUIRE(r.open(typed_dump()));
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    reader::csv_options options;
    options.sort_memory = memory;
    std::string error;
    std::uint64_t rows = 0;
    CHECK_MESSAGE(reader::write_spans_csv(r, f, &rows, &error, options), error);
    CHECK(rows == 2 * steps + 1);
    REQUIRE(std::fclose(f) == 0);
  };
  const std::string in_memory = scratch("typed-memory.csv"), spilled = scratch("typed-spilled.csv");
  write(std::size_t{64} << 20, in_memory);
  write(2048, spilled);  // a few rows per temporary file: dozens of runs
  CHECK(read_file(spilled) == read_file(in_memory));

  // The sorter itself: spills, merges, keeps equal keys in insertion order.
  reader::detail::sorted_rows sorter(256);
  for (int i = 0; i < 100; ++i) {
    const std::int64_t begin = (i * 37) % 20;
    CHECK(sorter.add(reader::detail::row_key{begin, 1, 1, 0}, std::to_string(begin) + ":" + std::to_string(i) + "\n"));
  }
  CHECK(sorter.runs() > 3);
  std::vector<std::pair<int, int>> order;
  CHECK(sorter.finish([&](std::string_view line) {
    const std::string s(line);
    order.emplace_back(std::stoi(s), std::stoi(s.substr(s.find(':') + 1)));
  }));
  REQUIRE(order.size() == 100);
  CHECK(std::is_sorted(order.begin(), order.end()));  // by begin, then by insertion
}

namespace {

/// One thread of a built dump (clock in ns): marks "frame" at 1000, 2000,
/// 3000 and 4000; in each of the three frames a span "work" (100 ns from
/// the mark + 100) holding a span "tiny" (10 ns), an instant "ping" and a
/// counter "depth" (frame k: k + 0.5); after the last mark one more "work"
/// and "ping", outside every iteration.
std::string marks_dump() {
  namespace fmt = edgetrace::format;
  edgetrace_test::dump_builder d;
  d.process(1);
  edgetrace_test::definitions defs;
  defs.category(1, "c")
      .site(1, fmt::site_kind::mark, 1, "frame")
      .site(2, fmt::site_kind::span, 1, "work")
      .site(3, fmt::site_kind::span, 1, "tiny")
      .site(4, fmt::site_kind::instant, 1, "ping")
      .site(5, fmt::site_kind::counter, 1, "depth");
  d.defs(1, defs).thread(1, 1, 10, "main");
  edgetrace_test::events e(1, 0);
  for (std::uint64_t k = 0; k < 4; ++k) {
    const std::uint64_t t = 1000 * (k + 1);
    if (k < 3) e.instant(1, t);
    e.span(3, t + 120, t + 130).span(2, t + 100, t + 200).instant(4, t + 300);
    if (k < 3) e.counter(5, t + 400, static_cast<double>(k) + 0.5);
  }
  e.instant(1, 4000);  // the last mark, after the fourth work (rows are sorted by time)
  d.event_chunk(1, e).end(1);
  return edgetrace_test::saved_dump(d, "csv-marks.etr");
}

std::vector<std::string> column(const std::vector<std::map<std::string, std::string>>& records, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.at(name));
  return out;
}

}  // namespace

TEST_CASE("csv --tables writes marks, counters and allocations as tables of their own, --per numbers the iterations") {
  const std::string dump = marks_dump();
  const std::string out = scratch("csv-marks.csv");
  const auto r = run_cli({"csv", dump, "-o", out, "--tables", "all", "--per", "frame"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto spans = csv_records(read_file(out));
  REQUIRE(spans.size() == 8);
  CHECK(column(spans, "name") == std::vector<std::string>{"work", "tiny", "work", "tiny", "work", "tiny", "work", "tiny"});
  CHECK(column(spans, "start_ns")[2] == "2100");
  CHECK(column(spans, "iteration") == std::vector<std::string>{"0", "0", "1", "1", "2", "2", "", ""});
  const std::string marks_text = read_file(scratch("csv-marks.marks.csv"));
  CHECK(marks_text.rfind("name,category,kind,thread,pid,tid,ts_ns,phase,iteration\n", 0) == 0);
  const auto marks = csv_records(marks_text);
  REQUIRE(marks.size() == 8);
  CHECK(column(marks, "name") == std::vector<std::string>{"frame", "ping", "frame", "ping", "frame", "ping", "frame", "ping"});
  CHECK(column(marks, "kind")[0] == "mark");
  CHECK(column(marks, "kind")[1] == "instant");
  CHECK(column(marks, "ts_ns") ==
        std::vector<std::string>{"1000", "1300", "2000", "2300", "3000", "3300", "4000", "4300"});
  CHECK(column(marks, "iteration") == std::vector<std::string>{"0", "0", "1", "1", "2", "2", "", ""});
  CHECK(column(marks, "tid")[0] == "10");
  const auto counters = csv_records(read_file(scratch("csv-marks.counters.csv")));
  CHECK(column(counters, "value") == std::vector<std::string>{"0.5", "1.5", "2.5"});
  CHECK(column(counters, "ts_ns") == std::vector<std::string>{"1400", "2400", "3400"});
  CHECK(column(counters, "iteration") == std::vector<std::string>{"0", "1", "2"});
  const std::string allocs = read_file(scratch("csv-marks.allocs.csv"));
  CHECK(allocs == std::string(reader::allocs_csv_header) + ",iteration\n");  // none recorded: the header alone

  SUBCASE("the selection applies to the tables it fits") {
    const auto selected = run_cli({"csv", dump, "-o", "-", "--min-dur", "50ns", "--window", "1us:3.25us"});
    REQUIRE_MESSAGE(selected.exit_code == 0, selected.err);
    // Times count from the first event (1000): the window is [2000, 4250].
    CHECK(column(csv_records(selected.out), "start_ns") == std::vector<std::string>{"2100", "3100", "4100"});
    CHECK(selected.out.find("iteration") == std::string::npos);  // no --per: no column
    const auto filtered = run_cli({"csv", dump, "-o", "-", "--tables", "marks", "--filter", "^fr"});
    REQUIRE(filtered.exit_code == 0);
    CHECK(column(csv_records(filtered.out), "name") == std::vector<std::string>(4, "frame"));
  }
  SUBCASE("usage errors") {
    const auto bad = run_cli({"csv", dump, "--tables", "mark"});
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("did you mean 'marks'") != std::string::npos);
    CHECK(run_cli({"csv", dump, "--tables", "spans,marks", "-o", "-"}).exit_code == 1);
    CHECK(run_cli({"csv", dump, "--focus", "slowest:2", "--per", "frame"}).exit_code == 1);
    const auto missing = run_cli({"csv", dump, "--per", "fram", "-o", "-"});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.find("no span or mark named \"fram\"") != std::string::npos);
  }
}

TEST_CASE("csv --tables allocs: every allocation and free with its pool's and all pools' live bytes") {
  std::string dump;
  REQUIRE(recorded_once("csv-annotations.etr", {"annotations"}, dump));
  const auto r = run_cli({"csv", dump, "-o", "-", "--tables", "allocs", "--per", "layer"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto rows = csv_records(r.out);
  // trace_app's annotations mode: 2 weights allocations in "load"; per
  // layer i (4) scratch of (i + 1) * 100 and 50 bytes, both freed; then a
  // free never allocated, 64 bytes allocated and freed twice, free(NULL).
  REQUIRE(rows.size() == 2 + 4 * 4 + 5);
  CHECK(column(rows, "kind")[0] == "alloc");
  CHECK(rows[1].at("pool") == "weights");
  CHECK(rows[1].at("pool_live_bytes") == "1500");
  CHECK(rows[1].at("iteration").empty());  // in "load", before the first layer
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    const auto* row = &rows[static_cast<std::size_t>(2 + 4 * i)];
    const std::string scratch_bytes = std::to_string((i + 1) * 100);
    CHECK(row[0].at("kind") == "alloc");
    CHECK(row[0].at("bytes") == scratch_bytes);
    CHECK(row[0].at("live_bytes") == std::to_string(1500 + (i + 1) * 100));
    CHECK(row[1].at("pool_live_bytes") == std::to_string((i + 1) * 100 + 50));
    CHECK(row[2].at("kind") == "free");
    CHECK(row[2].at("bytes") == "50");
    CHECK(row[3].at("pool") == "scratch");
    CHECK(row[3].at("pool_live_bytes") == "0");
    CHECK(row[3].at("live_bytes") == "1500");
    for (int k = 0; k < 4; ++k) CHECK(row[k].at("iteration") == std::to_string(i));
  }
  const auto* tail = &rows[18];
  CHECK(tail[0].at("address") == "0xdead0");
  CHECK(tail[0].at("pool").empty());  // never allocated: no pool, nothing changes
  CHECK(tail[0].at("live_bytes").empty());
  CHECK(tail[2].at("live_bytes") == "1500");
  CHECK(tail[3].at("bytes").empty());  // the second free of the same block
  CHECK(tail[4].at("address") == "0x0");
}

}  // namespace csv_test
