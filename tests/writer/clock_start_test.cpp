// SPDX-License-Identifier: MIT
// Times a reader can trust from the first millisecond: a process
// that dies at start-up still gets true durations (the flusher measures the
// counter's rate before it writes any event), a dump whose rate is really
// unknown gets no durations at all, and EDGETRACE_RECORD refuses and counts
// spans that no measurement could give.
#include <doctest/doctest.h>

#include <support/dump_builder.hpp>
#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/dump_reader.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace clock_start_test {

using edgetrace_test::app;
using edgetrace_test::cli;
using edgetrace_test::fresh;
using edgetrace_test::tmp;
using namespace edgetrace_test;

namespace {

using edgetrace_test::contains;

/// "early <inner ns> <outer ns>" lines of trace_app's die-early mode.
struct measured_span {
  std::int64_t inner;
  std::int64_t outer;
};
std::vector<measured_span> early_lines(const std::string& out) {
  std::vector<measured_span> spans;
  std::istringstream lines(out);
  std::string word;
  long long inner, outer;
  while (lines >> word >> inner >> outer)
    if (word == "early") spans.push_back({inner, outer});
  return spans;
}
}  // namespace

TEST_CASE("a process that dies 12 ms after start: its spans have their true durations") {
  // Before: one calibration pair until 20 ms, and the reader assumed 1 GHz
  // for the TSC (2.6x too long on a 2.6 GHz CPU). Now the flusher takes the
  // second pair ~1 ms after the first, before it writes any event.
  int runs = 0;
  for (const std::string death : {"exit", "kill", "exit", "kill", "exit", "kill"}) {
    CAPTURE(death);
    CAPTURE(runs);
    const std::string dump_path = fresh("die-early-" + std::to_string(runs++) + ".etr");
    const auto r = run({app, "die-early", death}, {"EDGETRACE_OUTPUT=" + dump_path});
    CHECK(r.exit_code == (death == "kill" ? 128 + 9 : 0));
    const std::vector<measured_span> printed = early_lines(r.out);
    REQUIRE(printed.size() >= 2);
    const auto dump = load_dump(dump_path);
    REQUIRE(dump.opened);
    REQUIRE(dump.error.empty());
    CHECK_FALSE(dump.complete);  // no end record: the case the tools must still get right
    const auto early = dump.named("early");
    // The flusher drained the first two spans (the app's flush()) and
    // maybe more (its cycles: 1, 3, 7 ms after start); spans after its last
    // drain are lost with the process. Spans are recorded in order, so the
    // first ones match.
    REQUIRE(early.size() >= 2);
    REQUIRE(early.size() <= printed.size());
    for (std::size_t i = 0; i < early.size(); ++i) {
      CAPTURE(i);
      const std::int64_t duration = early[i].end_ns - early[i].begin_ns;
      CAPTURE(duration);
      CAPTURE(printed[i].inner);
      CAPTURE(printed[i].outer);
      // The scope lies between the app's outer and inner steady_clock
      // readings; 1 % + 3 us for the rate and the calibration fit.
      CHECK(duration >= printed[i].inner - printed[i].inner / 100 - 3000);
      CHECK(duration <= printed[i].outer + printed[i].outer / 100 + 3000);
    }
  }
}

TEST_CASE("a dying process's dump holds two calibration pairs before its first events chunk") {
  const std::string dump_path = fresh("die-early-pairs.etr");
  const auto r = run({app, "die-early", "kill"}, {"EDGETRACE_OUTPUT=" + dump_path});
  REQUIRE(r.exit_code == 128 + 9);
  edgetrace::reader::dump_reader reader;
  REQUIRE_MESSAGE(edgetrace_test::opened(reader, dump_path), reader.error());
  std::size_t pairs_before_events = 0;
  bool events_seen = false;
  REQUIRE(reader.for_each_chunk([&](const edgetrace::reader::dump_reader::raw_chunk& c) {
    if (c.type == fmt::chunk_type::events) events_seen = true;
    if (c.type == fmt::chunk_type::calibration && !events_seen) ++pairs_before_events;
  }));
  CHECK(events_seen);
  CHECK(pairs_before_events >= 2);
  CHECK(reader.unknown_rate().empty());
  REQUIRE(reader.writers().size() == 1);
  const auto& w = reader.writers().begin()->second;
  CHECK(w.clock.rate_known());
  CHECK(w.clock.kind() == edgetrace::reader::clock_model::fit::calibrated);
  // With the CPU counter the two pairs are at least 1 ms apart.
  if (w.clock_source != static_cast<std::uint8_t>(fmt::clock_source::monotonic_ns)) {
    REQUIRE(w.calibration.size() >= 2);
    CHECK(w.calibration[1].monotonic_ns - w.calibration[0].monotonic_ns >= 1000000u);
  }
}

namespace {
/// A TSC dump with one calibration pair and no nominal rate: the rate is
/// unknown (what a writer cut off before its second pair left, before the
/// flusher took that pair first).
bytes unknown_rate_dump(bool with_events, std::uint64_t nominal_rate = 0) {
  dump_builder d;
  process_fields pf;
  pf.source = fmt::clock_source::x86_tsc;
  pf.clock_flags = 1;
  pf.nominal_rate = nominal_rate;
  d.process(1, pf);
  d.calibration(1, {{5000000, 1000000000}});
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "s");
  d.defs(1, defs).thread(1, 1, 9, "t");
  if (with_events) {
    events e(1, 6000000);
    e.span(1, 6000000, 8600000);  // 2.6 M ticks: 1 ms at 2.6 GHz, "2.6 ms" at a guessed 1 GHz
    d.event_chunk(1, e);
  }
  d.thread_stats(1, 1, with_events ? 1 : 0, 0).end(1);
  return d.build();
}
}  // namespace

TEST_CASE("one calibration pair and no nominal rate: every tool refuses durations with a clear error") {
  const std::string path = fresh("unknown-rate.etr");
  REQUIRE(write_file(path, unknown_rate_dump(true)));
  const std::string why = "tick rate is unknown";

  edgetrace::reader::dump_reader reader;
  REQUIRE_MESSAGE(edgetrace_test::opened(reader, path), reader.error());
  CHECK(contains(reader.unknown_rate(), why));
  CHECK(contains(reader.unknown_rate(), "pid 1234"));
  std::size_t seen = 0;
  CHECK_FALSE(reader.read_events([&](const edgetrace::reader::event&) { ++seen; }));
  CHECK_FALSE(reader.read_events_backward([&](const edgetrace::reader::event&) { ++seen; }));
  CHECK(seen == 0);
  CHECK(contains(reader.error(), why));

  const std::string out = fresh("unknown-rate.out");
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"json", path, "-o", out}, {"csv", path, "-o", out}, {"summary", path},
        {"summary", path, "--format", "json"}, {"report", path, "-o", out}, {"diff", path, path},
        {"merge", path, path, "-o", out + ".json"}}) {
    CAPTURE(command[0]);
    std::vector<std::string> argv = {cli};
    argv.insert(argv.end(), command.begin(), command.end());
    const auto r = run(argv);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "edgetrace: error: " + path + ": pid 1234: the x86 TSC tick rate is unknown"));
    CHECK(contains(r.err, "durations cannot be computed"));
    CHECK_FALSE(contains(r.out, "2.600 ms"));
  }
  // info still describes the dump, and says why there are no times.
  const auto info = run({cli, "info", path});
  CHECK(info.exit_code == 0);
  CHECK(contains(info.out, "x86 TSC (invariant), rate UNKNOWN (1 calibration pair(s), no nominal rate): no durations"));
  CHECK(contains(info.out, "duration       unknown (tick rate unknown)"));
  CHECK(contains(info.out, "tick rate unknown: one calibration pair and no nominal tick rate"));
  // A .etr merge copies chunks and needs no times.
  CHECK(run({cli, "merge", path, path, "-o", fresh("unknown-rate-merged.etr")}).exit_code == 0);
}

TEST_CASE("the refusal is only where a rate is missing: a nominal rate, or no events, read normally") {
  SUBCASE("one pair and a nominal rate: durations from the nominal rate") {
    const std::string path = fresh("nominal-rate.etr");
    REQUIRE(write_file(path, unknown_rate_dump(true, 2600000000u)));
    const auto dump = load_dump(path);
    REQUIRE(dump.error.empty());
    const auto spans = dump.named("s");
    REQUIRE(spans.size() == 1);
    CHECK(spans[0].end_ns - spans[0].begin_ns == 1000000);
    CHECK(run({cli, "json", path, "-o", fresh("nominal-rate.json")}).exit_code == 0);
  }
  SUBCASE("one pair, no rate, no events: nothing to time, nothing refused") {
    const std::string path = fresh("unknown-rate-empty.etr");
    REQUIRE(write_file(path, unknown_rate_dump(false)));
    edgetrace::reader::dump_reader reader;
    REQUIRE_MESSAGE(edgetrace_test::opened(reader, path), reader.error());
    CHECK(reader.unknown_rate().empty());
    CHECK(reader.read_events([](const edgetrace::reader::event&) {}));
    CHECK(run({cli, "json", path, "-o", fresh("unknown-rate-empty.json")}).exit_code == 0);
  }
}

TEST_CASE("EDGETRACE_RECORD: absurd starts and durations are refused, counted, and said once") {
  for (const char* clock : {"auto", "monotonic"}) {
    CAPTURE(clock);
    const auto traced = edgetrace_test::run_on_clock("record-absurd", clock);
    const auto& r = traced.run;
    const std::string& dump_path = traced.path;
    CHECK(r.exit_code == 0);
    std::istringstream out(r.out);
    std::string word;
    std::uint64_t absurd = 0;
    REQUIRE((out >> word >> absurd));
    REQUIRE(absurd == 17);
    // One stderr line for the process, however many were refused.
    CHECK(contains(r.err, "edgetrace: EDGETRACE_RECORD: a span starting at "));
    CHECK(r.err.find("EDGETRACE_RECORD") == r.err.rfind("EDGETRACE_RECORD"));

    const auto dump = load_dump(dump_path);
    REQUIRE(dump.opened);
    REQUIRE(dump.error.empty());
    CHECK(dump.complete);
    CHECK(dump.named("absurd").empty());
    CHECK(dump.named("good").size() == 2);
    // Nothing stretches the trace: every event within the run's few ms.
    std::int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& e : dump.events) {
      first = std::min(first, e.begin_ns);
      last = std::max(last, e.end_ns);
    }
    CHECK(last - first < 2000000000);
    std::uint64_t rejected = 0;
    for (const auto& t : dump.threads) rejected += t.stats_rejected;
    CHECK(rejected == absurd);
    CHECK(std::any_of(dump.diagnostics.begin(), dump.diagnostics.end(), [](const std::string& d) {
      return contains(d, "17 EDGETRACE_RECORD span(s) refused by the writer");
    }));
    const auto info = run({cli, "info", dump_path});
    CHECK(info.exit_code == 0);
    CHECK(contains(info.out, "refused        17 EDGETRACE_RECORD span(s) more than 1 s outside the trace"));
    const auto json = run({cli, "json", dump_path, "-o", fresh(std::string("record-absurd-") + clock + ".json")});
    CHECK(json.exit_code == 0);
    CHECK(contains(json.err, "note: " + dump_path + ": pid "));
  }
}

}  // namespace clock_start_test
