// SPDX-License-Identifier: MIT
// Capture control through real traced runs (tests/support/trace_app):
// pause()/resume(), EDGETRACE_START_AFTER (time and marks),
// EDGETRACE_DURATION, EDGETRACE_TOGGLE_SIGNAL, phases, and the windows in
// the dump, `edgetrace info` and the JSON.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/sanitizers.hpp>
#include <support/test_env.hpp>

#include <edgetrace/config.hpp>
#include <edgetrace/decode/dump_reader.hpp>

#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace capture_test {

using edgetrace::format::capture_reason;
using namespace edgetrace_test;

namespace {

/// The recording changes and phases of a dump's only writer.
struct capture_info {
  std::vector<edgetrace::reader::recording_change> recording;
  std::vector<edgetrace::reader::phase_change> phases;
};

capture_info read_capture(const std::string& path) {
  edgetrace::reader::dump_reader r;
  capture_info out;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, path), r.error());
  REQUIRE(r.writers().size() == 1);
  const edgetrace::reader::writer_info& w = r.writers().begin()->second;
  out.recording = w.recording;
  out.phases = w.phases;
  return out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("capture: pause() and resume() keep exactly the spans that began while recording") {
  const std::string dump_path = fresh("capture-api.etr");
  const auto r = run({app, "capture-api"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  // Paused, a category's mode byte is 0: the runtime-disabled value, so a
  // paused scope costs one load and one branch (bench: BM_span_paused).
  // Resumed, it is the clock again: 1 the CPU's counter, 2 CLOCK_MONOTONIC
  // (forced by EDGETRACE_CLOCK_MONOTONIC=1, or the fallback of a CPU
  // without an invariant counter).
  CAPTURE(app_knobs());
  const bool counter_allowed = contains(app_knobs(), "CLOCK_MONOTONIC=0");
  CHECK((contains(app_knobs(), "CLOCK_MONOTONIC=0") || contains(app_knobs(), "CLOCK_MONOTONIC=1")));
  CHECK((r.out == "paused_mode=0\nresumed_mode=2\n" ||
         (counter_allowed && r.out == "paused_mode=0\nresumed_mode=1\n")));
  const auto dump = edgetrace_test::whole_dump(dump_path);
  CHECK(dump.named("before").size() == 10);
  CHECK(dump.named("straddle_in").size() == 1);  // began before pause(): kept whole
  CHECK(dump.named("paused").empty());
  CHECK(dump.named("paused_instant").empty());
  CHECK(dump.named("paused_counter").empty());
  CHECK(dump.named("straddle_out").empty());  // began while paused: left out
  CHECK(dump.named("inside").size() == 10);
  CHECK(dump.named("after").empty());

  const capture_info capture = read_capture(dump_path);
  REQUIRE(capture.recording.size() == 3);  // the repeated pause() added nothing
  CHECK_FALSE(capture.recording[0].on);
  CHECK(capture.recording[1].on);
  CHECK_FALSE(capture.recording[2].on);
  for (const auto& change : capture.recording) CHECK(change.reason == capture_reason::api);
  // Every recorded span began inside a window.
  for (const auto& e : dump.named("before")) CHECK(e.end_ns <= capture.recording[0].ns);
  CHECK(dump.named("straddle_in")[0].begin_ns <= capture.recording[0].ns);
  CHECK(dump.named("straddle_in")[0].end_ns >= capture.recording[0].ns);
  for (const auto& e : dump.named("inside")) {
    CHECK(e.begin_ns >= capture.recording[1].ns);
    CHECK(e.end_ns <= capture.recording[2].ns);
  }

  // info lists the windows; the JSON has a marker per change.
  const auto info = run({cli, "info", dump_path});
  CHECK(info.exit_code == 0);
  // Capture chunks need 1.2 or later; the writer stamps the current minor.
  CHECK(info.out.find("format 1." + std::to_string(edgetrace::format::version_minor)) != std::string::npos);
  CHECK(edgetrace::format::version_minor >= 2);
  CHECK(info.out.find("recording      off at +") != std::string::npos);
  CHECK(count_of(info.out, "(pause/resume)") == 3);
  const auto json = run({cli, "json", dump_path, "-o", "-"});
  CHECK(json.exit_code == 0);
  CHECK(count_of(json.out, "\"name\":\"edgetrace: recording off\",\"cat\":\"edgetrace\",\"ph\":\"i\",\"s\":\"p\"") == 2);
  CHECK(count_of(json.out, "\"name\":\"edgetrace: recording on\"") == 1);
  CHECK(count_of(json.out, "\"args\":{\"reason\":\"pause/resume\"}") == 3);
}

TEST_CASE("capture: EDGETRACE_START_AFTER=5marks skips the first 5 iterations; mark 6 is the first thing recorded") {
  const std::string dump_path = fresh("capture-marks.etr");
  const auto r = run({app, "capture-marks"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_START_AFTER=5marks"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  for (int i = 0; i < 20; ++i) CHECK(dump.named("iter_" + std::to_string(i)).size() == (i < 5 ? 0u : 1u));
  CHECK(dump.named("frame").size() == 15);
  CHECK(dump.named("tick").size() == 15);
  const capture_info capture = read_capture(dump_path);
  REQUIRE(capture.recording.size() == 2);
  CHECK_FALSE(capture.recording[0].on);  // at start-up
  CHECK(capture.recording[1].on);
  CHECK(capture.recording[0].reason == capture_reason::start_after);
  CHECK(capture.recording[1].reason == capture_reason::start_after);
  CHECK(dump.named("frame")[0].begin_ns >= capture.recording[1].ns);
}

TEST_CASE("capture: EDGETRACE_START_AFTER and EDGETRACE_DURATION in time: spans only inside the window") {
  const std::string dump_path = fresh("capture-timed.etr");
  const auto r = run({app, "capture-timed", "400"},
                     {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_START_AFTER=100ms", "EDGETRACE_DURATION=0.1s"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  const capture_info capture = read_capture(dump_path);
  REQUIRE(capture.recording.size() == 3);
  CHECK_FALSE(capture.recording[0].on);
  CHECK(capture.recording[0].reason == capture_reason::start_after);
  CHECK(capture.recording[1].on);
  CHECK(capture.recording[1].reason == capture_reason::start_after);
  CHECK_FALSE(capture.recording[2].on);
  CHECK(capture.recording[2].reason == capture_reason::duration);
  // The flusher times both ends (it wakes for them): a few ms of slack on
  // a loaded machine.
  const double started_after_ms = (capture.recording[1].ns - capture.recording[0].ns) / 1e6;
  const double window_ms = (capture.recording[2].ns - capture.recording[1].ns) / 1e6;
  CHECK(started_after_ms >= 95.0);  // the "off" is written once the file is open, after the clock starts
  CHECK(started_after_ms <= 130.0);
  CHECK(window_ms >= 99.0);
  CHECK(window_ms <= 130.0);
  const auto spans = dump.named("timed");
  CHECK(spans.size() >= 25);  // one span per ~2 ms
  CHECK(spans.size() <= 66);
  for (const auto& e : spans) {
    CHECK(e.begin_ns >= capture.recording[1].ns);
    CHECK(e.begin_ns <= capture.recording[2].ns);
  }
}

TEST_CASE("capture: EDGETRACE_TOGGLE_SIGNAL=SIGUSR2 (or USR2, as EDGETRACE_SNAPSHOT_SIGNAL takes it) records only between two signals") {
  for (const std::string spelling : {"SIGUSR2", "USR2"}) {
    CAPTURE(spelling);
    const std::string dump_path = fresh("capture-signal.etr");
    const auto r = run({app, "capture-signal"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_TOGGLE_SIGNAL=" + spelling});
    CHECK(r.exit_code == 0);  // the signal's default action (termination) is replaced
    CHECK(r.err.empty());
    const auto dump = load_dump(dump_path);
    REQUIRE(dump.opened);
    CHECK(dump.complete);
    CHECK(dump.named("before").empty());
    CHECK(dump.named("inside").size() == 10);
    CHECK(dump.named("after").empty());
    const capture_info capture = read_capture(dump_path);
    REQUIRE(capture.recording.size() == 3);
    CHECK_FALSE(capture.recording[0].on);
    CHECK(capture.recording[1].on);
    CHECK_FALSE(capture.recording[2].on);
    for (const auto& change : capture.recording) CHECK(change.reason == capture_reason::signal);
  }
}

TEST_CASE("capture: phases are written in-band and shown by info and the JSON") {
  const std::string dump_path = fresh("capture-phases.etr");
  const auto r = run({app, "capture-phases"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  const capture_info capture = read_capture(dump_path);
  REQUIRE(capture.phases.size() == 2);
  CHECK(capture.phases[0].name == "warm up");
  CHECK(capture.phases[1].name == "measure");
  CHECK(capture.phases[1].ns > capture.phases[0].ns);
  CHECK(capture.recording.empty());  // recording from the start, never paused: nothing to say
  const auto info = run({cli, "info", dump_path});
  CHECK(info.out.find("phases         \"warm up\" at ") != std::string::npos);
  CHECK(info.out.find("recording ") == std::string::npos);
  const auto json = run({cli, "json", dump_path, "-o", "-"});
  CHECK(count_of(json.out, "\"name\":\"phase: measure\",\"cat\":\"edgetrace\"") == 1);
  CHECK(count_of(json.out, "\"args\":{\"phase\":\"warm up\"}") == 1);
}

TEST_CASE("capture: malformed window values get one line each and recording runs from the start") {
  struct bad_case {
    const char* variable;
    const char* value;
  };
  const bad_case cases[] = {
      {"EDGETRACE_START_AFTER", "abc"},   {"EDGETRACE_START_AFTER", "-1"},   {"EDGETRACE_START_AFTER", "0"},
      {"EDGETRACE_START_AFTER", "2.5marks"}, {"EDGETRACE_START_AFTER", "10 parsecs"}, {"EDGETRACE_START_AFTER", "99999999"},
      {"EDGETRACE_DURATION", "5marks"},   {"EDGETRACE_DURATION", "1..2"},    {"EDGETRACE_DURATION", ""},
      {"EDGETRACE_TOGGLE_SIGNAL", "SIGKILL"},
  };
  for (const bad_case& c : cases) {
    CAPTURE(c.variable);
    CAPTURE(c.value);
    const std::string dump_path = fresh("capture-bad.etr");
    const auto r = run({app, "capture-marks"}, {"EDGETRACE_OUTPUT=" + dump_path, std::string(c.variable) + "=" + c.value});
    CHECK(r.exit_code == 0);
    CHECK(edgetrace_test::line_count(r.err) == 1);
    CHECK(r.err.find(std::string("edgetrace: ") + c.variable + "='" + c.value + "' is not ") == 0);
    const auto dump = load_dump(dump_path);
    REQUIRE(dump.opened);
    CHECK(dump.complete);
    CHECK(dump.named("frame").size() == 20);  // everything recorded
    CHECK(read_capture(dump_path).recording.empty());
  }
}

TEST_CASE("capture: summary --phase keeps the spans that began in that phase") {
  const std::string dump_path = fresh("capture-summary-phases.etr");
  const auto r = run({app, "capture-phases"}, {"EDGETRACE_OUTPUT=" + dump_path});
  REQUIRE(r.exit_code == 0);
  // trace_app: phase "warm up", 3 "work" spans, phase "measure", 7 more.
  const auto all = run({cli, "summary", dump_path, "--format", "json"});
  CHECK(all.exit_code == 0);
  CHECK(all.out.find("\"key\":\"work\",\"category\":\"app\",\"calls\":10,") != std::string::npos);
  const auto measure = run({cli, "summary", dump_path, "--phase", "measure", "--format", "json"});
  CHECK(measure.exit_code == 0);
  CHECK(measure.out.find("\"key\":\"work\",\"category\":\"app\",\"calls\":7,") != std::string::npos);
  CHECK(measure.out.find("\"spans_other_phases\":3,") != std::string::npos);
  const auto warm_up = run({cli, "summary", dump_path, "--phase", "warm up"});
  CHECK(warm_up.exit_code == 0);
  CHECK(warm_up.out.find("phase \"warm up\": 7 span(s) that began outside it are left out") != std::string::npos);
  const auto missing = run({cli, "summary", dump_path, "--phase", "serve"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("no phase named \"serve\" in the dump (phases: \"measure\", \"warm up\")") != std::string::npos);
  const std::string plain = fresh("capture-summary-nophase.etr");
  REQUIRE(run({app, "capture-api"}, {"EDGETRACE_OUTPUT=" + plain}).exit_code == 0);
  const auto none = run({cli, "summary", plain, "--phase", "measure"});
  CHECK(none.exit_code == 1);
  CHECK(none.err.find("(it has no phases") != std::string::npos);
}

TEST_CASE("EDGETRACE_RECORD: spans measured elsewhere land where they were measured, with their duration") {
  for (const char* clock : {"auto", "monotonic"}) {
    CAPTURE(clock);
    const auto traced = edgetrace_test::run_on_clock("record-measured", clock);
    const auto& r = traced.run;
    const std::string& dump_path = traced.path;
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    std::vector<std::pair<std::int64_t, std::int64_t>> printed;  // start, duration (ns)
    std::istringstream lines(r.out);
    std::string word;
    long long start, duration;
    while (lines >> word >> start >> duration) printed.emplace_back(start, duration);
    REQUIRE(printed.size() == 5);
    const auto dump = load_dump(dump_path);
    REQUIRE(dump.opened);
    const auto measured = dump.named("measured");
    const auto layer = dump.named("layer_3");
    REQUIRE(measured.size() == 5);
    REQUIRE(layer.size() == 5);
    CHECK(dump.named("paused").empty());
    for (std::size_t i = 0; i < 5; ++i) {
      // The reader's timeline is CLOCK_MONOTONIC: the same numbers, to
      // within the counter's rate error over a few ms and the calibration
      // fit's (typically < 1 µs; 5 µs allowed for emulators and load).
      CHECK(std::llabs(measured[i].begin_ns - printed[i].first) <= 5000);
      CHECK(std::llabs((measured[i].end_ns - measured[i].begin_ns) - printed[i].second) <= 1000);
      CHECK(std::llabs(layer[i].begin_ns - (printed[i].first + 100000)) <= 5000);
      CHECK(std::llabs((layer[i].end_ns - layer[i].begin_ns) - 50000) <= 100);
    }
    // EDGETRACE_RECORD_ARG: each argument on its measured span, whatever
    // the order of the calls; the scope's own argument on the scope. An
    // argument takes its span's ticks (the thread's last mapping of that
    // span): mapped apart, the two differed under qemu by more than half
    // the 50 us layer.
    int measured_seen = 0, layers_seen = 0, frames_seen = 0;
    for (const auto& s : edgetrace_test::walked_spans(dump_path)) {
      if (s.name == "measured") {
        CHECK(s.args == std::map<std::string, std::string>{{"iteration", std::to_string(4 - measured_seen++)}});
      } else if (s.name == "layer_3") {
        CHECK(s.arg("bytes") == "4096.5");
        CHECK(s.arg("fused") == ((4 - layers_seen++) % 2 == 0 ? "true" : "false"));
        CHECK(s.args.size() == 2);
      } else if (s.name == "frame") {
        CHECK(s.args == std::map<std::string, std::string>{{"frame", std::to_string(4 - frames_seen++)}});
      }
    }
    CHECK(measured_seen == 5);
    CHECK(layers_seen == 5);
    CHECK(frames_seen == 5);
  }
}

}  // namespace capture_test
