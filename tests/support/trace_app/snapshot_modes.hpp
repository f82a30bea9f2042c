// SPDX-License-Identifier: MIT
// trace_app modes for tests/flight/flight_test.cpp (EDGETRACE_MODE=flight): runs
// that ask for a snapshot by call, by signal, by crash or at exit, a storm
// of requests, and a run long enough to overwrite the in-memory ring.
#pragma once

#include <support/trace_app/common.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <thread>
#include <sys/mman.h>
#include <unistd.h>

namespace trace_app {

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

/// "segv-repair [crash]": an app that handles its
/// own SIGSEGVs, installed before edgetrace starts (as a runtime loaded
/// first would: here a constructor that runs before static initialisation,
/// when TRACE_APP_EARLY_SEGV is set). Its handler maps a PROT_NONE page in
/// on first touch and returns; a fault elsewhere puts the default action
/// back and returns, so that the fault repeats and kills (a real crash).
inline unsigned char* lazy_region = nullptr;
inline constexpr std::size_t lazy_pages = 4;
inline std::atomic<int> lazy_repaired{0};

inline void lazy_segv_handler(int, siginfo_t* info, void*) {
  auto* address = static_cast<unsigned char*>(info->si_addr);
  if (lazy_region != nullptr && address >= lazy_region && address < lazy_region + lazy_pages * 4096) {
    unsigned char* page = lazy_region + static_cast<std::size_t>(address - lazy_region) / 4096 * 4096;
    ::mprotect(page, 4096, PROT_READ | PROT_WRITE);
    lazy_repaired.fetch_add(1);
    return;
  }
  ::signal(SIGSEGV, SIG_DFL);
}

__attribute__((constructor(101), used)) static void install_early_segv_handler() {
  if (std::getenv("TRACE_APP_EARLY_SEGV") == nullptr) return;
  struct sigaction action {};
  action.sa_sigaction = lazy_segv_handler;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSEGV, &action, nullptr);
}

inline int segv_repair_mode(bool then_crash) {
  lazy_region = static_cast<unsigned char*>(
      ::mmap(nullptr, lazy_pages * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (lazy_region == MAP_FAILED) return 2;
  for (std::size_t page = 0; page < lazy_pages; ++page) {
    { EDGETRACE_SCOPE(app, "before_fault"); }
    static_cast<volatile unsigned char*>(lazy_region)[page * 4096] = 1;  // faults once, repaired
  }
  { EDGETRACE_SCOPE(app, "after_faults"); }
  std::printf("repaired %d\n", lazy_repaired.load());
  std::fflush(stdout);
  if (then_crash) {
    EDGETRACE_SCOPE(app, "last_span");
    volatile std::uintptr_t address = 16;  // not the app's memory: a crash
    *reinterpret_cast<int*>(address) = 1;
  }
  return 0;
}

/// "flight-call N" and "flight-signal N": N spans before_trigger, a
/// snapshot (snapshot("checkpoint"), or SIGUSR2 sent to itself), N spans
/// after_trigger, then 500 ms idle and exit.
inline int flight_call_mode(int argc, char** argv) {
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  record("before", n);
  if (argv[1][7] == 'c')
    edgetrace::snapshot("checkpoint");
  else
    ::kill(::getpid(), SIGUSR2);
  record("after", n);
  sleep_ms(500);
  return 0;
}

/// "flight-open-layer": a span "before", then a span "layer" with one
/// argument (batch = 8) that calls snapshot("open") and lasts 400 ms,
/// longer than the test's after-window: the snapshot's window closes while
/// the layer is open.
inline int flight_open_layer_mode(int, char**) {
  { EDGETRACE_SCOPE(app, "before"); }
  {
    EDGETRACE_SCOPE(app, "layer");
    EDGETRACE_ARG(app, "batch", 8);
    edgetrace::snapshot("open");
    sleep_ms(400);
  }
  sleep_ms(100);
  return 0;
}

/// "flight-idle N": N spans before_trigger and exit: no trigger.
inline int flight_idle_mode(int argc, char** argv) {
  record("before", argc > 2 ? std::atoi(argv[2]) : 1000);
  return 0;
}

/// "flight-crash N KIND": N spans before_trigger on a worker thread that
/// ends, one span last_span on main, then dies: KIND segv (a write through
/// a null pointer), abort, or fpe (raise(SIGFPE)).
inline int flight_crash_mode(int argc, char** argv) {
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
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
/// "flight-crash-locked N": N spans before_trigger on a worker thread that
/// ends, 300 ms for the flusher to encode them, then a write through a
/// null pointer while main holds the lock the flusher's next cycle takes:
/// the flusher cannot answer, so the handler writes the window.
inline int flight_crash_locked_mode(int argc, char** argv) {
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  std::thread([n] { record("before", n); }).join();
  sleep_ms(300);
  edgetrace::detail::category_mutex.native().lock();  // unannotated: held on purpose until the crash
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return 0;
}
#endif

/// "flight-storm N GAP_US": N snapshot() calls GAP_US apart.
inline int flight_storm_mode(int argc, char** argv) {
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int gap_us = argc > 3 ? std::atoi(argv[3]) : 0;
  for (int i = 0; i < n; ++i) {
    { EDGETRACE_SCOPE(app, "storm_span"); }
    edgetrace::snapshot("storm");
    if (gap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
  return 0;
}

/// "flight-overwrite N": span first_span, then N spans ring_span each with
/// a counter seq = i, span last_span, snapshot("end").
inline int flight_overwrite_mode(int argc, char** argv) {
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
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

/// The modes above, by name (trace_app.cpp looks them up).
inline const app_mode snapshot_modes[] = {
    {"segv-repair", [](int argc, char** argv) { return segv_repair_mode(argc > 2 && std::strcmp(argv[2], "crash") == 0); }},
    {"flight-call", flight_call_mode},
    {"flight-signal", flight_call_mode},
    {"flight-idle", flight_idle_mode},
    {"flight-open-layer", flight_open_layer_mode},
    {"flight-crash", flight_crash_mode},
#if !EDGETRACE_SEPARATE_RUNTIME
    {"flight-crash-locked", flight_crash_locked_mode},
#endif
    {"flight-storm", flight_storm_mode},
    {"flight-overwrite", flight_overwrite_mode},
};

}  // namespace trace_app
