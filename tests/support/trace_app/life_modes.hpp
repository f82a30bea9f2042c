// SPDX-License-Identifier: MIT
// trace_app modes of the process's life: tracing off, exits, signals,
// crashes, forks and execs, a vanishing or full output, clock start
// (tests/writer/lifecycle_test.cpp, process_life_test.cpp, reliability_test.cpp,
// clock_start_test.cpp).
#pragma once

#include <support/trace_app/common.hpp>

namespace trace_app {

/// This program run again in a child (fork + execve) in `mode`, with the
/// environment minus the variables starting with `drop` plus `extra` (if
/// not empty). Everything the child needs is prepared before fork (exec only
/// after it).
struct self_exec {
  std::vector<std::string> environment;
  std::vector<char*> envp;
  char self[4096] = {};
  std::string mode;

  self_exec(const char* child_mode, const char* drop, const std::string& extra) : mode(child_mode) {
    for (char** e = environ; *e != nullptr; ++e)
      if (std::strncmp(*e, drop, std::strlen(drop)) != 0) environment.emplace_back(*e);
    if (!extra.empty()) environment.push_back(extra);
    for (auto& e : environment) envp.push_back(&e[0]);
    envp.push_back(nullptr);
    if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) self[0] = '\0';
  }
  bool ok() const { return self[0] != '\0'; }
  /// Runs the child and returns its exit code (128 + signal if killed).
  int run() {
    char* child_argv[] = {self, &mode[0], nullptr};
    const pid_t child = fork();
    if (child == 0) {
      execve(self, child_argv, envp.data());
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

/// "fork-exec CHILD_DUMP": forks while another thread traces; the child
/// execs this program ("exit-code") with EDGETRACE_OUTPUT=CHILD_DUMP.
inline int fork_exec_mode(const char* child_dump) {
  self_exec child("exit-code", "EDGETRACE_OUTPUT=", std::string("EDGETRACE_OUTPUT=") + child_dump);
  if (!child.ok()) return 2;
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    EDGETRACE_THREAD_NAME("busy");
    while (!stop.load()) spans(100);
  });
  spans(100);
  int codes[3] = {-1, -1, -1};
  for (int& code : codes) code = child.run();
  stop = true;
  busy.join();
  std::printf("child=%d,%d,%d\n", codes[0], codes[1], codes[2]);
  return 0;
}

/// "fork-storm FORKS": four threads trace while main forks FORKS times; each
/// child records spans and exits 7 (exit() under EDGETRACE_FORK=follow, so
/// its own dump is completed; _exit() otherwise).
inline int fork_storm_mode(int forks) {
  const char* fork_env = std::getenv("EDGETRACE_FORK");
  const bool follow = fork_env != nullptr && std::strcmp(fork_env, "follow") == 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int t = 0; t < 4; ++t)
    busy.emplace_back([&] {
      while (!stop.load()) spans(50);
    });
  int ok = 0;
  for (int i = 0; i < forks; ++i) {
    spans(10);
    const pid_t child = fork();
    if (child == 0) {
      for (int k = 0; k < 50; ++k) {
        EDGETRACE_SCOPE(app, "storm_child_span");
      }
      if (follow) std::exit(7);
      _exit(edgetrace::tracing_active() ? 10 : 7);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ok += WIFEXITED(status) && WEXITSTATUS(status) == 7;
  }
  stop = true;
  for (auto& t : busy) t.join();
  std::printf("forks=%d ok=%d\n", forks, ok);
  return 0;
}

// ---- modes for tests/writer/process_life_test.cpp (signals, exit, fork):
// "sig-ign", "sig-ign-child", "quick-exit", "fork-names", "dense" ----------

/// "SIG_IGN" or "other": the disposition of `signo` now.
inline const char* disposition(int signo) {
  struct sigaction current;
  if (sigaction(signo, nullptr, &current) != 0) return "error";
  return (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN ? "SIG_IGN" : "other";
}

/// "sig-ign": started with SIGINT, SIGTERM and SIGUSR2 ignored (and
/// EDGETRACE_SIGNAL_FLUSH=1, EDGETRACE_TOGGLE_SIGNAL=SIGUSR2): raises all
/// three, prints their dispositions, then execs itself untraced
/// ("sig-ign-child", which raises SIGINT and SIGTERM) and prints its status.
inline int sig_ign_mode() {
  spans(100);
  std::raise(SIGINT);
  std::raise(SIGTERM);
  std::raise(SIGUSR2);
  spans(100);
  std::printf("SIGINT=%s SIGTERM=%s SIGUSR2=%s\n", disposition(SIGINT), disposition(SIGTERM), disposition(SIGUSR2));
  self_exec child("sig-ign-child", "EDGETRACE_", "");
  if (!child.ok()) return 2;
  std::fflush(stdout);
  std::printf("child=%d\n", child.run());
  return 0;
}

/// "quick-exit": main records 1000 app_span, then keeps tracing while a
/// worker records 500 quick_exit_span and calls std::quick_exit(9).
[[noreturn]] inline void quick_exit_mode() {
  spans(1000);
  std::thread worker([] {
    for (int i = 0; i < 500; ++i) {
      EDGETRACE_SCOPE(app, "quick_exit_span");
    }
    std::quick_exit(9);
  });
  worker.detach();
  for (;;) {
    EDGETRACE_SCOPE(app, "main_still_tracing");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

/// "quick-exit-locked": std::quick_exit(9) on a thread that holds the
/// runtime's category lock, as a signal handler calling quick_exit() can
/// find it: the exit must not wait for that lock.
#if !EDGETRACE_SEPARATE_RUNTIME  // the lock is the runtime's own, not declared to a separate-runtime program
[[noreturn]] inline void quick_exit_locked_mode() {
  spans(100);
  edgetrace::detail::category_mutex.native().lock();  // unannotated: held on purpose until the exit
  std::quick_exit(9);
}
#endif

/// "fork-names": the parent interns "parent_name" and records 5 spans with
/// it, then forks; the child interns "child_name" and records 30 spans with
/// the parent's handle and 20 with its own.
inline int fork_names_mode() {
  const edgetrace::name_handle parent_name = edgetrace::intern("parent_name");
  for (int i = 0; i < 5; ++i) { EDGETRACE_SCOPE_NAMED(app, parent_name); }
  const pid_t child = fork();
  if (child == 0) {
    const edgetrace::name_handle child_name = edgetrace::intern("child_name");
    for (int i = 0; i < 30; ++i) { EDGETRACE_SCOPE_NAMED(app, parent_name); }
    for (int i = 0; i < 20; ++i) { EDGETRACE_SCOPE_NAMED(app, child_name); }
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child=%ld status=%d\n", static_cast<long>(child), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

inline int idle_mode(int, char**) {
  // Scopes, instants, counters, names: with tracing off nothing may
  // allocate or start a thread.
  counting = true;
  spans(1000);
  EDGETRACE_INSTANT(app, "app_instant");
  EDGETRACE_THREAD_NAME("idle-main");
  const auto handle = edgetrace::intern("runtime_name");
  { EDGETRACE_SCOPE_NAMED(app, handle); }
  counting = false;
  std::printf("threads=%d allocations=%ld active=%d\n", thread_count(), allocations.load(),
              edgetrace::tracing_active() ? 1 : 0);
  return 0;
}

inline int worker_exit_mode(int, char**) {
  // A worker records spans and exits; the process then dies without
  // running exit handlers. The worker's spans must be in the dump anyway.
  std::thread worker([] {
    EDGETRACE_THREAD_NAME("short-worker");
    spans(5000);
  });
  worker.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::fflush(stdout);
  _exit(0);
}

inline int fork_mode(int, char**) {
  // Fork while another thread is tracing; the child traces nothing, never
  // deadlocks, and exits with its own code; the parent's dump stays whole.
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) spans(100);
  });
  spans(100);
  int child_status = 0;
  for (int i = 0; i < 20; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      spans(100);
      edgetrace::flush();
      (void)edgetrace::intern("child_name");
#if !EDGETRACE_TEST_SANITIZED  // see tests/support/sanitizers.hpp
      std::thread t([] { spans(10); });
      t.join();
#endif
      std::exit(edgetrace::tracing_active() ? 10 : 7);
    }
    waitpid(child, &child_status, 0);
    if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 7) break;
  }
  stop = true;
  busy.join();
  std::printf("child=%d\n", WIFEXITED(child_status) ? WEXITSTATUS(child_status) : -1);
  return 0;
}

inline int signal_term_mode(int, char**) {
  // SIGTERM with its default action: with EDGETRACE_SIGNAL_FLUSH=1 the
  // dump is complete although no exit handler runs.
  spans(1000);
  std::raise(SIGTERM);
  for (;;) pause();
}

inline int signal_chain_mode(int, char**) {
  spans(1000);
  std::raise(SIGTERM);
  std::printf("app_handler=%d installed=%d\n", static_cast<int>(app_handler_calls), app_handler_installed ? 1 : 0);
  return 0;
}

inline int signal_int_mode(int, char**) {
  // SIGINT with its default action (Ctrl-C), as signal-term for SIGTERM.
  spans(1000);
  std::raise(SIGINT);
  for (;;) pause();
}

inline int crash_mode(int argc, char** argv) {
  // Spans, then well over one flush period of quiet, a few late spans,
  // and a crash: SIGSEGV (argv[2] = segv) or abort() (argv[2] = abort).
  spans(1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int i = 0; i < 10; ++i) {
    EDGETRACE_SCOPE(app, "late_span");
  }
  std::fflush(stdout);
  if (argc > 2 && std::strcmp(argv[2], "segv") == 0) {
    volatile std::uintptr_t address = 16;  // volatile: no compile-time bounds warning
    *reinterpret_cast<int*>(address) = 1;
  }
  std::abort();
}

inline int exit_code_mode(int, char**) {
  spans(10);
  return 42;
}

inline int busy_exit_code_mode(int, char**) {
  // Traces and flushes for about 300 ms, then exits 42 (output-failure tests).
  for (int i = 0; i < 100; ++i) {
    spans(1000);
    edgetrace::flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  std::printf("active=%d\n", edgetrace::tracing_active() ? 1 : 0);
  return 42;
}

inline int fork_follow_mode(int, char**) {
  // With EDGETRACE_FORK=follow the child writes its own dump.
  spans(100);
  const pid_t child = fork();
  if (child == 0) {
    EDGETRACE_THREAD_NAME("child-main");
    for (int i = 0; i < 300; ++i) {
      EDGETRACE_SCOPE(app, "child_span");
    }
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  spans(100);
  std::printf("child=%ld status=%d\n", static_cast<long>(child), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

inline int delete_output_mode(int, char**) {
  // The dump disappears under the app: one line, then the app goes on.
  spans(100);
  edgetrace::flush();
  if (const char* path = std::getenv("EDGETRACE_OUTPUT")) unlink(path);
  for (int i = 0; i < 50; ++i) {
    spans(100);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::printf("active=%d\n", edgetrace::tracing_active() ? 1 : 0);
  return 0;
}

inline int file_size_limit_mode(int, char**) {
  // A 64 KiB file-size limit: writes fail with EFBIG (SIGXFSZ is blocked
  // on the flusher), one line, and the app finishes normally.
  rlimit limit{65536, 65536};
  setrlimit(RLIMIT_FSIZE, &limit);
  for (int i = 0; i < 100; ++i) {
    spans(1000);
    edgetrace::flush();
  }
  std::printf("active=%d\n", edgetrace::tracing_active() ? 1 : 0);
  return 0;
}

inline int sig_ign_child_mode(int, char**) {
  std::raise(SIGINT);
  std::raise(SIGTERM);
  return 0;
}

/// ---- tests/writer/clock_start_test.cpp: "die-early", "record-absurd".
inline int die_early_mode(int argc, char** argv) {
  // Spans of 0.5-1.5 ms from the start of main; at 12 ms the process dies
  // without an end record: _exit ("exit") or SIGKILL ("kill"). Prints per
  // span "early <inner ns> <outer ns>": steady_clock inside the scope
  // (the span is at least this long) and around it (at most this long).
  // After the first two spans a flush(), so that the dump holds events
  // even when a busy machine delays the flusher's own cycles.
  const bool kill_self = argc > 2 && std::strcmp(argv[2], "kill") == 0;
  const std::uint64_t die_at = now_ns() + 12000000u;
  for (int i = 0; i < 2 || now_ns() + 1500000u < die_at; ++i) {
    const std::uint64_t length = 500000u * static_cast<std::uint64_t>(1 + i % 3);
    std::uint64_t inner_begin, inner_end;
    const std::uint64_t outer_begin = now_ns();
    {
      EDGETRACE_SCOPE(app, "early");
      inner_begin = now_ns();
      do {
        inner_end = now_ns();
      } while (inner_end - inner_begin < length);
    }
    const std::uint64_t outer_end = now_ns();
    std::printf("early %llu %llu\n", static_cast<unsigned long long>(inner_end - inner_begin),
                static_cast<unsigned long long>(outer_end - outer_begin));
    if (i == 1) edgetrace::flush();
  }
  while (now_ns() < die_at) {
  }
  std::fflush(stdout);
  if (kill_self) raise(SIGKILL);
  _exit(0);
}

inline int record_absurd_mode(int, char**) {
  // EDGETRACE_RECORD with values no measurement can give, between two good
  // spans; prints the number of absurd calls ("absurd N").
  const std::uint64_t now = now_ns();
  EDGETRACE_RECORD(app, "good", now - 1000000u, 500000u);
  const std::uint64_t bad[][2] = {
      {UINT64_MAX, 1000},                    // start near UINT64_MAX
      {UINT64_MAX - 500, 1000},              // start + duration wraps
      {now - 1000000u, UINT64_MAX},          // duration near UINT64_MAX
      {now - 1000000u, UINT64_MAX / 2},      // 146 years
      {now + 3600000000000ull, 1000},        // an hour in the future
      {now - 1000000u, 10000000000ull},      // ends 9 s from now
      {0, 1000},                             // at boot, long before the process
      {now > 7200000000000ull ? now - 7200000000000ull : 1, 1000},  // two hours ago (or at boot)
  };
  for (const auto& b : bad) EDGETRACE_RECORD(app, "absurd", b[0], b[1]);
  std::thread([&] {
    for (const auto& b : bad) EDGETRACE_RECORD(app, "absurd", b[0], b[1]);
    EDGETRACE_RECORD(app, "absurd", now, now);  // a time passed as a duration
  }).join();
  EDGETRACE_RECORD(app, "good", now_ns() - 200000u, 100000u);
  std::printf("absurd %zu\n", 2 * (sizeof bad / sizeof bad[0]) + 1);
  return 0;
}

/// The modes above, by name (trace_app.cpp looks them up).
inline const app_mode life_modes[] = {
    {"idle", idle_mode},
    {"knobs", [](int, char**) {
       // The build knobs this trace_app was compiled with, for a test that
       // runs whichever trace_app its configuration gives it.
       std::printf("ENABLED=%d COMPACT_SCOPES=%d CLOCK_MONOTONIC=%d SEPARATE_RUNTIME=%d TLS_INITIAL_EXEC=%d\n",
                   EDGETRACE_ENABLED, EDGETRACE_COMPACT_SCOPES, EDGETRACE_CLOCK_MONOTONIC, EDGETRACE_SEPARATE_RUNTIME,
                   EDGETRACE_TLS_INITIAL_EXEC);
       return 0;
     }},
    {"worker-exit", worker_exit_mode},
    {"fork", fork_mode},
    {"signal-term", signal_term_mode},
    {"signal-chain", signal_chain_mode},
    {"signal-int", signal_int_mode},
    {"crash", crash_mode},
    {"exit-code", exit_code_mode},
    {"busy-exit-code", busy_exit_code_mode},
    {"fork-follow", fork_follow_mode},
    {"fork-exec", [](int argc, char** argv) { return argc > 2 ? fork_exec_mode(argv[2]) : missing_argument("fork-exec"); }},
    {"fork-storm", [](int argc, char** argv) { return fork_storm_mode(argc > 2 ? std::atoi(argv[2]) : 200); }},
    {"fork-names", [](int, char**) { return fork_names_mode(); }},
    {"delete-output", delete_output_mode},
    {"file-size-limit", file_size_limit_mode},
    // process life (tests/writer/process_life_test.cpp)
    {"sig-ign", [](int, char**) { return sig_ign_mode(); }},
    {"sig-ign-child", sig_ign_child_mode},
    {"quick-exit", [](int, char**) -> int { quick_exit_mode(); }},
#if !EDGETRACE_SEPARATE_RUNTIME
    {"quick-exit-locked", [](int, char**) -> int { quick_exit_locked_mode(); }},
#endif
    {"die-early", die_early_mode},
    {"record-absurd", record_absurd_mode},
};

}  // namespace trace_app
