// SPDX-License-Identifier: MIT
// `--focus slowest:N --per NAME` in json and perfetto: the slowest iterations and their neighbours in full, every other iteration as its one slice, and what was left out said on stderr and in the metadata.
#include <doctest/doctest.h>

#include <edgetrace/reader.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/files.hpp>
#include <support/json_lite.hpp>

namespace focus_test {

using namespace edgetrace_test;
namespace fmt = edgetrace::format;

namespace {

constexpr int iterations = 40;
/// Iteration i of "frame" lasts 1000 ns, except these, the slow ones.
const std::map<int, std::uint64_t> slow = {{7, 9000}, {20, 7000}, {33, 8000}};

/// A "run" span holding 40 "frame" iterations on the main thread, each with
/// two layers inside; a worker thread's "io" span inside every iteration;
/// one counter sample per iteration. Then the dump's path.
std::string focus_dump() {
  dump_builder d;
  d.process(1, process_fields{});
  d.calibration(1, {{0, 1000000}, {1000000000, 1001000000}});
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "frame").site(2, fmt::site_kind::span, 1, "layer");
  defs.site(3, fmt::site_kind::span, 1, "run").site(4, fmt::site_kind::span, 1, "io");
  defs.site(5, fmt::site_kind::counter, 1, "depth");
  d.defs(1, defs).thread(1, 1, 10, "main").thread(1, 2, 11, "worker");
  events main(1, 1000), worker(2, 1000);
  std::uint64_t t = 1000;
  for (int i = 0; i < iterations; ++i) {
    const auto found = slow.find(i);
    const std::uint64_t length = found != slow.end() ? found->second : 1000;
    main.span(2, t + 10, t + length / 2).span(2, t + length / 2, t + length - 10).counter(5, t + length - 5, i);
    main.span(1, t, t + length);
    worker.span(4, t + 100, t + 200);
    t += length + 50;
  }
  main.span(3, 1000, t);
  d.event_chunk(1, main).event_chunk(1, worker).end(1);
  return edgetrace_test::saved_dump(d, "focus.etr");
}

}  // namespace

TEST_CASE("focus: the slowest iterations and one either side in full, every other as its one slice") {
  const std::string dump = focus_dump();
  const std::string out = scratch("focus.json");
  const auto r = run_cli({"json", dump, "-o", out, "--focus", "slowest:2", "--per", "frame"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // The two slowest are 7 (9 us) and 33 (8 us): with 6, 8, 32 and 34, six in full.
  CHECK(r.err.find("edgetrace: --focus: the 2 slowest of 40 iterations of \"frame\" (8.000 us or longer) and one "
                   "either side of each, 6 in all, in full; the other 34 as one slice each") != std::string::npos);
  json_lite::value doc;
  std::string error;
  REQUIRE(json_lite::parse(read_file(out), doc, error));
  CHECK(doc["otherData"]["focus"].str().find("the other 34 as one slice each") != std::string::npos);
  std::map<std::string, int> count;
  for (const auto& e : doc["traceEvents"].items)
    if (e["ph"].str() != "M") ++count[e["ph"].str() + " " + e["name"].str()];
  CHECK(count["X frame"] == iterations);  // every iteration, as its slice
  CHECK(count["X run"] == 1);             // around them all: overlaps the kept ones
  CHECK(count["X layer"] == 2 * 6);       // inside the six kept in full only
  CHECK(count["X io"] == 6);              // another thread, inside them too
  CHECK(count["C depth"] == 6);

  // perfetto keeps the same.
  const std::string pf = scratch("focus.pftrace");
  const auto p = run_cli({"perfetto", dump, "-o", pf, "--compress", "none", "--focus", "slowest:2", "--per", "frame"});
  REQUIRE_MESSAGE(p.exit_code == 0, p.err);
  CHECK(p.err.find("6 in all, in full") != std::string::npos);
  const std::string bytes = read_file(pf);
  CHECK(bytes.find("layer") != std::string::npos);  // interned once per sequence
  // Without --focus everything is there (the counts above are not all there is).
  const std::string all = scratch("focus_all.json");
  REQUIRE(run_cli({"json", dump, "-o", all}).exit_code == 0);
  json_lite::value whole;
  REQUIRE(json_lite::parse(read_file(all), whole, error));
  int layers = 0;
  for (const auto& e : whole["traceEvents"].items) layers += e["name"].str() == "layer";
  CHECK(layers == 2 * iterations);
  CHECK_FALSE(whole["otherData"].has("focus"));
}

TEST_CASE("focus: a mark as the iteration (EDGETRACE_MARK frames): the time between marks, slowest in full") {
  // The same 40 iterations, each begun by a "frame" mark instead of a span
  // (what the README recommends for frames), and one mark after the last.
  dump_builder d;
  d.process(1, process_fields{});
  d.calibration(1, {{0, 1000000}, {1000000000, 1001000000}});
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::mark, 1, "frame").site(2, fmt::site_kind::span, 1, "layer");
  d.defs(1, defs).thread(1, 1, 10, "main");
  events main(1, 1000);
  std::uint64_t t = 1000;
  for (int i = 0; i < iterations; ++i) {
    const auto found = slow.find(i);
    const std::uint64_t length = found != slow.end() ? found->second : 1000;
    main.instant(1, t).span(2, t + 10, t + length / 2).span(2, t + length / 2, t + length - 10);
    t += length;
  }
  main.instant(1, t);
  d.event_chunk(1, main).end(1);
  const std::string dump = saved_dump(d, "focus_marks.etr");
  const std::string out = scratch("focus_marks.json");
  const auto counted = [&](const std::string& file) {
    json_lite::value doc;
    std::string error;
    REQUIRE(json_lite::parse(read_file(file), doc, error));
    std::map<std::string, int> count;
    for (const auto& e : doc["traceEvents"].items)
      if (e["ph"].str() != "M") ++count[e["ph"].str() + " " + e["name"].str()];
    return count;
  };
  // By default the other iterations' marks stay out: a million iterations
  // are a million marks a viewer has to load.
  const auto r = run_cli({"json", dump, "-o", out, "--focus", "slowest:2", "--per", "frame"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("edgetrace: --focus: the 2 slowest of 40 iterations of \"frame\" (8.000 us or longer) and one "
                   "either side of each, 6 in all, in full; the other 34 left out, their marks too (--other-marks "
                   "keep keeps them)") != std::string::npos);
  std::map<std::string, int> count = counted(out);
  CHECK(count["X layer"] == 2 * 6);  // inside the six kept in full only
  // The marks that bound the kept iterations: two runs of three (the
  // slowest and one either side) take four marks each, or seven when they touch.
  const int marks = count["i frame"] + count["I frame"] + count["R frame"];
  CHECK(marks >= 7);
  CHECK(marks <= 8);
  // Asked for, every mark.
  const auto kept = run_cli({"json", dump, "-o", out, "--focus", "slowest:2", "--per", "frame", "--other-marks", "keep"});
  REQUIRE_MESSAGE(kept.exit_code == 0, kept.err);
  CHECK(kept.err.find("the other 34 as their marks alone") != std::string::npos);
  count = counted(out);
  CHECK(count["X layer"] == 2 * 6);
  CHECK(count["i frame"] + count["I frame"] + count["R frame"] == iterations + 1);  // every mark
}

TEST_CASE("focus: a bad --focus or --per is a usage error, a name that no span has says so") {
  const std::string dump = focus_dump();
  const std::string out = scratch("focus_bad.json");
  struct bad {
    std::vector<std::string> flags;
    const char* says;
  };
  const bad cases[] = {
      {{"--focus", "slowest:2"}, "--focus slowest:N needs --per NAME"},
      {{"--focus", "fastest:2", "--per", "frame"}, "--focus needs slowest:N"},
      {{"--focus", "slowest:0", "--per", "frame"}, "--focus needs slowest:N"},
      {{"--focus", "slowest:x", "--per", "frame"}, "--focus needs slowest:N"},
      {{"--per", "frame"}, "--per NAME goes with --focus slowest:N"},
      {{"--focus", "slowest:2", "--per", "fram"}, "--focus: no span or mark named \"fram\""},
      {{"--focus", "slowest:2", "--per", "frame", "--other-marks", "some"}, "--other-marks needs keep or drop"},
      {{"--other-marks", "keep"}, "--other-marks goes with --focus slowest:N --per MARK"},
  };
  for (const bad& b : cases) {
    for (const char* command : {"json", "perfetto"}) {
      std::vector<std::string> argv{command, dump, "-o", out};
      argv.insert(argv.end(), b.flags.begin(), b.flags.end());
      const auto r = run_cli(argv);
      CAPTURE(command);
      CAPTURE(b.says);
      CHECK(r.exit_code == 1);
      CHECK(r.err.find(b.says) != std::string::npos);
      CHECK(!file_exists(out));
    }
  }
}

}  // namespace focus_test
