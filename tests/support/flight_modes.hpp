// SPDX-License-Identifier: MIT
// trace_app modes for tests/flight_test.cpp (EDGETRACE_MODE=flight): runs
// that ask for a snapshot by call, by signal, by crash or at exit, a storm
// of requests, and a run long enough to overwrite the in-memory ring.
// Included by tests/support/trace_app.cpp after EDGETRACE_CATEGORY(app).
#pragma once

#include <edgetrace/edgetrace.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace flight_modes {

inline void record(const char* what, int count) {
  for (int i = 0; i < count; ++i) {
    if (std::strcmp(what, "before") == 0) {
      EDGETRACE_SCOPE(app, "before_trigger");
    } else {
      EDGETRACE_SCOPE(app, "after_trigger");
    }
  }
}

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

/// Runs `mode` if it is one of this file's; returns its exit code, or -1.
///  "flight-call N": N spans before_trigger, snapshot("checkpoint"), N
///    spans after_trigger, then 500 ms idle and exit.
///  "flight-idle N": N spans before_trigger and exit: no trigger.
///  "flight-signal N": as flight-call, with SIGUSR2 sent to itself.
///  "flight-crash N KIND": N spans before_trigger on a worker thread that
///    ends, one span last_span on main, then dies: KIND segv (a write
///    through a null pointer), abort, or fpe (raise(SIGFPE)).
///  "flight-crash-locked N": N spans before_trigger on a worker thread that
///    ends, 300 ms for the flusher to encode them, then a write through a
///    null pointer while main holds the lock the flusher's next cycle
///    takes: the flusher cannot answer, so the handler writes the window.
///  "flight-storm N GAP_US": N snapshot() calls GAP_US apart.
///  "flight-overwrite N": span first_span, then N spans ring_span each with
///    a counter seq = i, span last_span, snapshot("end").
inline int run_mode(const char* mode, int argc, char** argv) {
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  if (std::strcmp(mode, "flight-call") == 0 || std::strcmp(mode, "flight-signal") == 0) {
    record("before", n);
    if (mode[7] == 'c')
      edgetrace::snapshot("checkpoint");
    else
      ::kill(::getpid(), SIGUSR2);
    record("after", n);
    sleep_ms(500);
    return 0;
  }
  if (std::strcmp(mode, "flight-idle") == 0) {
    record("before", n);
    return 0;
  }
  if (std::strcmp(mode, "flight-crash") == 0) {
    const char* kind = argc > 3 ? argv[3] : "segv";
    std::thread([n] { record("before", n); }).join();
    { EDGETRACE_SCOPE(app, "last_span"); }
    std::fflush(stdout);
    if (std::strcmp(kind, "abort") == 0) std::abort();
    if (std::strcmp(kind, "fpe") == 0) std::raise(SIGFPE);
    volatile int* nowhere = nullptr;
    *nowhere = 1;
    return 0;
  }
#if !EDGETRACE_SEPARATE_RUNTIME  // the lock is the runtime's own, not declared to a separate-runtime program
  if (std::strcmp(mode, "flight-crash-locked") == 0) {
    std::thread([n] { record("before", n); }).join();
    sleep_ms(300);
    edgetrace::detail::category_mutex.native().lock();  // unannotated: held on purpose until the crash
    volatile int* nowhere = nullptr;
    *nowhere = 1;
    return 0;
  }
#endif
  if (std::strcmp(mode, "flight-storm") == 0) {
    const int gap_us = argc > 3 ? std::atoi(argv[3]) : 0;
    for (int i = 0; i < n; ++i) {
      { EDGETRACE_SCOPE(app, "storm_span"); }
      edgetrace::snapshot("storm");
      if (gap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
    }
    return 0;
  }
  if (std::strcmp(mode, "flight-overwrite") == 0) {
    { EDGETRACE_SCOPE(app, "first_span"); }
    for (int i = 0; i < n; ++i) {
      EDGETRACE_SCOPE(app, "ring_span");
      EDGETRACE_COUNTER(app, "seq", i);
    }
    { EDGETRACE_SCOPE(app, "last_span"); }
    edgetrace::snapshot("end");
    sleep_ms(300);
    return 0;
  }
  return -1;
}

}  // namespace flight_modes
