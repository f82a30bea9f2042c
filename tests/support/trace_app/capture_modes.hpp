// SPDX-License-Identifier: MIT
// trace_app modes of capture control: pause and resume, starting after
// marks or a time, the toggle signal, phases, spans measured elsewhere
// (tests/writer/capture_test.cpp).
#pragma once

#include <support/trace_app/common.hpp>

namespace trace_app {

inline int capture_api_mode(int, char**) {
  // pause()/resume() around named groups of spans (tests/writer/capture_test.cpp).
  for (int i = 0; i < 10; ++i) { EDGETRACE_SCOPE(app, "before"); }
  {
    EDGETRACE_SCOPE(app, "straddle_in");  // began while recording: kept
    edgetrace::pause();
  }
  edgetrace::pause();  // a second pause changes nothing
  // Paused costs what runtime-disabled does: the one byte a scope loads is 0.
  std::printf("paused_mode=%d\n", int(edgetrace_category_app::state.enabled.load(edgetrace::detail::order_relaxed)));
  for (int i = 0; i < 10; ++i) { EDGETRACE_SCOPE(app, "paused"); }
  EDGETRACE_INSTANT(app, "paused_instant");
  EDGETRACE_COUNTER(app, "paused_counter", 1);
  {
    EDGETRACE_SCOPE(app, "straddle_out");  // began while paused: left out
    edgetrace::resume();
  }
  std::printf("resumed_mode=%d\n", int(edgetrace_category_app::state.enabled.load(edgetrace::detail::order_relaxed)));
  for (int i = 0; i < 10; ++i) { EDGETRACE_SCOPE(app, "inside"); }
  edgetrace::pause();
  for (int i = 0; i < 10; ++i) { EDGETRACE_SCOPE(app, "after"); }
  return 0;
}

inline int capture_marks_mode(int, char**) {
  // 20 iterations, each a mark then a span named iter_<i>: with
  // EDGETRACE_START_AFTER=5marks, iterations 5..19 are recorded.
  std::vector<edgetrace::name_handle> names;
  for (int i = 0; i < 20; ++i) names.push_back(edgetrace::intern("iter_" + std::to_string(i)));
  for (int i = 0; i < 20; ++i) {
    EDGETRACE_MARK(app, "frame");
    EDGETRACE_INSTANT(app, "tick");
    EDGETRACE_SCOPE_NAMED(app, names[static_cast<std::size_t>(i)]);
  }
  return 0;
}

inline int capture_timed_mode(int argc, char** argv) {
  // A span every ~2 ms for argv[2] ms (default 400).
  const std::uint64_t run_ns = static_cast<std::uint64_t>(argc > 2 ? std::atoi(argv[2]) : 400) * 1000000u;
  const std::uint64_t start = now_ns();
  while (now_ns() - start < run_ns) {
    EDGETRACE_SCOPE(app, "timed");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return 0;
}

inline int capture_signal_mode(int, char**) {
  // EDGETRACE_TOGGLE_SIGNAL=SIGUSR2: off until the first toggle.
  for (int i = 0; i < 10; ++i) { EDGETRACE_SCOPE(app, "before"); }
  std::raise(SIGUSR2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the flusher applies it (EDGETRACE_FLUSH_MS)
  for (int i = 0; i < 10; ++i) { EDGETRACE_SCOPE(app, "inside"); }
  std::raise(SIGUSR2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int i = 0; i < 10; ++i) { EDGETRACE_SCOPE(app, "after"); }
  return 0;
}

inline int capture_phases_mode(int, char**) {
  // Phases "warm up" (3 spans) and "measure" (7 spans), 1 ms apart.
  edgetrace::phase("warm up");
  for (int i = 0; i < 10; ++i) {
    if (i == 3) edgetrace::phase(std::string("measure"));
    EDGETRACE_SCOPE(app, "work");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return 0;
}

inline int record_measured_mode(int, char**) {
  // Spans measured elsewhere (CLOCK_MONOTONIC ns, here steady_clock), and
  // a scope measured by the app around a known sleep, for comparison.
  // Prints each recorded span's start and duration.
  const auto steady_ns = [] {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // past the second calibration pair
  const edgetrace::name_handle layer = edgetrace::intern(std::string("layer_3"));
  for (int i = 0; i < 5; ++i) {
    EDGETRACE_SCOPE(app, "frame");
    // The measured span starts well inside the frame: a recorded span is
    // placed to within a few us (more under qemu), and one placed before
    // the frame's begin would not nest in it.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const std::uint64_t start = steady_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const std::uint64_t end = steady_ns();
    // Reported later, as an engine's profiler callback would; arguments of
    // the layer before those of the span that holds it (out of time order).
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EDGETRACE_RECORD(app, "measured", start, end - start);
    EDGETRACE_RECORD_NAMED(app, layer, start + 100000, 50000);
    EDGETRACE_RECORD_ARG(app, "bytes", 4096.5, start + 100000, 50000);
    EDGETRACE_RECORD_ARG(app, "fused", i % 2 == 0, start + 100000, 50000);
    EDGETRACE_RECORD_ARG(app, "iteration", i, start, end - start);
    EDGETRACE_ARG(app, "frame", i);  // the scope's own, recorded now
    std::printf("measured %llu %llu\n", static_cast<unsigned long long>(start),
                static_cast<unsigned long long>(end - start));
  }
  edgetrace::pause();
  EDGETRACE_RECORD(app, "paused", steady_ns(), 1000);
  edgetrace::resume();
  return 0;
}

/// The modes above, by name (trace_app.cpp looks them up).
inline const app_mode capture_modes[] = {
    {"capture-api", capture_api_mode},
    {"capture-marks", capture_marks_mode},
    {"capture-timed", capture_timed_mode},
    {"capture-signal", capture_signal_mode},
    {"capture-phases", capture_phases_mode},
    {"record-measured", record_measured_mode},
};

}  // namespace trace_app
