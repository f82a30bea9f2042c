// SPDX-License-Identifier: MIT
// A small traced program the lifecycle tests run as a child process, one
// behaviour per mode (argv[1]); see tests/writer/lifecycle_test.cpp.
#include <csignal>
#include <cstdlib>

// "signal-chain" needs an app handler installed before edgetrace starts (in
// static initialisation, which runs in order of appearance in this file), to
// check that EDGETRACE_SIGNAL_FLUSH chains to it.
namespace {
volatile std::sig_atomic_t app_handler_calls = 0;
void app_handler(int) { app_handler_calls = app_handler_calls + 1; }
const bool app_handler_installed = std::getenv("TRACE_APP_HANDLER") != nullptr &&
                                   std::signal(SIGTERM, app_handler) != SIG_ERR;
}  // namespace

#include <edgetrace/edgetrace.hpp>
#include <support/sanitizers.hpp>
#include <support/threads.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <new>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <string>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

EDGETRACE_CATEGORY(app);

#include <support/writer_trust_modes.hpp>
#include <support/flight_modes.hpp>

using edgetrace_test::thread_count;

namespace {
std::atomic<long> allocations{0};
std::atomic<bool> counting{false};

void spans(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "app_span");
    EDGETRACE_COUNTER(app, "app_counter", i);
  }
}
std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// "VmRSS"/"VmSize" from /proc/self/status, in kB (0 if not found).
long status_kb(const char* key) {
  long value = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    const std::size_t n = std::strlen(key);
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, key, n) == 0 && line[n] == ':') value = std::atol(line + n + 1);
    std::fclose(f);
  }
  return value;
}

/// xorshift64: cheap per-thread randomness without allocation.
std::uint64_t next_random(std::uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

void write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n <= 0) _exit(3);  // the reader went away: nothing left to do
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

// ---- modes added for tests/writer/reliability_test.cpp (issue 7) ----------------

/// "stress SECONDS THREADS": THREADS threads issue random bursts of spans
/// (some nested) until SECONDS pass; each prints how many it issued.
int stress_mode(double seconds, int thread_total) {
  std::vector<std::uint64_t> issued(static_cast<std::size_t>(thread_total), 0);
  const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_total; ++t)
    threads.emplace_back([&, t] {
      const std::string name = "stress-" + std::to_string(t);
      EDGETRACE_THREAD_NAME(name.c_str());
      std::uint64_t state = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(t + 1);
      std::uint64_t count = 0;
      while (now_ns() < deadline) {
        const std::uint64_t burst = 1 + next_random(state) % 3000;
        for (std::uint64_t i = 0; i < burst; ++i) {
          EDGETRACE_SCOPE(app, "stress_outer");
          if ((i & 3) == 0) {
            EDGETRACE_SCOPE(app, "stress_inner");
            ++count;
          }
          ++count;
        }
        const std::uint64_t pause_us = next_random(state) % 2000;
        if (pause_us < 1000) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
      }
      issued[static_cast<std::size_t>(t)] = count;
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < thread_total; ++t)
    std::printf("stress-%d %llu\n", t, static_cast<unsigned long long>(issued[static_cast<std::size_t>(t)]));
  return 0;
}

/// "kill-feed": forever: a span around a ~100 us sleep, then a counter whose
/// value is the sequence number; after each, (seq, CLOCK_MONOTONIC ns) goes
/// to stdout as two raw u64, so whoever kills us knows what was completed.
[[noreturn]] void kill_feed_mode() {
  for (std::uint64_t seq = 1;; ++seq) {
    {
      EDGETRACE_SCOPE(app, "feed_span");
      timespec pause{0, 100000};
      nanosleep(&pause, nullptr);
    }
    EDGETRACE_COUNTER(app, "feed_seq", static_cast<double>(seq));
    const std::uint64_t entry[2] = {seq, now_ns()};
    write_all(1, entry, sizeof entry);
  }
}

/// "many-threads N PER": N short-lived threads (4 at a time), PER spans each;
/// prints memory before (after a warm-up) and after.
int many_threads_mode(int thread_total, int per_thread) {
  auto batch = [&](int count) {
    for (int done = 0; done < count;) {
      std::thread group[4];
      int n = 0;
      for (; n < 4 && done < count; ++n, ++done)
        group[n] = std::thread([per_thread] {
          for (int i = 0; i < per_thread; ++i) {
            EDGETRACE_SCOPE(app, "short_thread_span");
          }
        });
      for (int i = 0; i < n; ++i) group[i].join();
    }
  };
  const int warm_up = 64;
  batch(warm_up);
  edgetrace::flush();
  edgetrace::flush();  // retired rings are recycled on the cycle after the exit
  const long rss_before = status_kb("VmRSS"), vm_before = status_kb("VmSize");
  batch(thread_total);
  for (int i = 0; i < 3; ++i) {
    edgetrace::flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const long rss_after = status_kb("VmRSS"), vm_after = status_kb("VmSize");
  std::printf("threads=%d rss_before_kb=%ld rss_after_kb=%ld vm_before_kb=%ld vm_after_kb=%ld live_threads=%d\n",
              warm_up + thread_total, rss_before, rss_after, vm_before, vm_after, thread_count());
  return 0;
}

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
int fork_exec_mode(const char* child_dump) {
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
int fork_storm_mode(int forks) {
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

// ---- modes for tests/writer/process_life_test.cpp (issue 13: signals, exit, fork):
// "sig-ign", "sig-ign-child", "quick-exit", "fork-names", "dense" ----------

/// "SIG_IGN" or "other": the disposition of `signo` now.
const char* disposition(int signo) {
  struct sigaction current;
  if (sigaction(signo, nullptr, &current) != 0) return "error";
  return (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN ? "SIG_IGN" : "other";
}

/// "sig-ign": started with SIGINT, SIGTERM and SIGUSR2 ignored (and
/// EDGETRACE_SIGNAL_FLUSH=1, EDGETRACE_TOGGLE_SIGNAL=SIGUSR2): raises all
/// three, prints their dispositions, then execs itself untraced
/// ("sig-ign-child", which raises SIGINT and SIGTERM) and prints its status.
int sig_ign_mode() {
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
[[noreturn]] void quick_exit_mode() {
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
[[noreturn]] void quick_exit_locked_mode() {
  spans(100);
  edgetrace::detail::category_mutex.native().lock();  // unannotated: held on purpose until the exit
  std::quick_exit(9);
}
#endif

/// "fork-names": the parent interns "parent_name" and records 5 spans with
/// it, then forks; the child interns "child_name" and records 30 spans with
/// the parent's handle and 20 with its own.
int fork_names_mode() {
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

/// "dense N": N spans in a tight loop on the main thread.
int dense_mode(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "dense_span");
  }
  return 0;
}
}  // namespace

// ---- mode for tests/sinks/top_test.cpp and tests/reader/snapshot_reader_test.cpp --------
// "paced SECONDS RATE": RATE iterations a second for SECONDS; each iteration
// is a span "paced_outer" (about 200 us) holding a span "paced_inner" (about
// 100 us), both sleeping, so the dump grows steadily while the program
// runs. Prints "iterations N" at the end.
namespace {
int paced_mode(double seconds, int rate) {
  const std::uint64_t start = now_ns();
  const std::uint64_t period = rate > 0 ? 1000000000u / static_cast<std::uint64_t>(rate) : 1000000000u;
  const std::uint64_t end = start + static_cast<std::uint64_t>(seconds * 1e9);
  std::uint64_t iterations = 0;
  for (std::uint64_t next = start; next < end; next += period) {
    {
      EDGETRACE_SCOPE(app, "paced_outer");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      EDGETRACE_SCOPE(app, "paced_inner");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ++iterations;
    const std::uint64_t now = now_ns();
    if (next + period > now) std::this_thread::sleep_for(std::chrono::nanoseconds(next + period - now));
  }
  std::printf("iterations %llu\n", static_cast<unsigned long long>(iterations));
  return 0;
}
}  // namespace

// ---- modes for tests/writer/overload_test.cpp ------------------------------------
namespace {
/// THREADS threads named dense-0, dense-1, ..., each running body(index)
/// once all of them have started (released together, as the peer
/// harness's w1_2t is). Returns them running.
template <class Body>
std::vector<std::thread> start_dense_threads(int threads, Body body) {
  std::atomic<int> ready{0}, released{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&ready, &released, &go, body, t] {
      char name[16];
      std::snprintf(name, sizeof name, "dense-%d", t);
      edgetrace::set_thread_name(name);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      released.fetch_add(1);  // the last use of this function's locals
      body(t);
    });
  }
  while (ready.load() != threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  while (released.load() != threads) std::this_thread::yield();
  return pool;
}

/// Joins the threads and prints "issued N".
int join_dense_threads(std::vector<std::thread>& pool, long long issued) {
  for (auto& thread : pool) thread.join();
  std::printf("issued %lld\n", issued);
  return 0;
}

// "dense-threads THREADS COUNT": each thread records COUNT empty spans as fast
// as it can; prints "issued N" (all threads).
int dense_threads_mode(int threads, int count) {
  auto pool = start_dense_threads(threads, [count](int) {
    for (int i = 0; i < count; ++i) {
      EDGETRACE_SCOPE(app, "dense_span");
    }
  });
  return join_dense_threads(pool, static_cast<long long>(threads) * count);
}

/// Records empty spans as fast as it can until CLOCK_MONOTONIC `end` (the
/// clock read every 4096 spans); returns how many.
long long dense_until(std::uint64_t end) {
  long long count = 0;
  do {
    for (int i = 0; i < 4096; ++i) {
      EDGETRACE_SCOPE(app, "dense_span");
    }
    count += 4096;
  } while (now_ns() < end);
  return count;
}

// "dense-for THREADS SECONDS": each thread records empty spans as fast as it
// can for SECONDS; prints "issued N" (all threads): a load that lasts as
// long on a slow build as on a fast one.
int dense_for_mode(int threads, double seconds) {
  std::atomic<long long> issued{0};
  const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  auto pool = start_dense_threads(threads, [&issued, end](int) { issued.fetch_add(dense_until(end)); });
  for (auto& thread : pool) thread.join();
  std::printf("issued %lld\n", issued.load());
  return 0;
}

// "dense-idle THREADS SECONDS": each thread records empty spans as fast as it
// can for SECONDS, then all go idle: prints "issued dense-I N" per thread
// and "idle", then sleeps for a minute (the test kills it: kill -9 of a
// process whose threads stopped recording a moment ago).
int dense_idle_mode(int threads, double seconds) {
  std::vector<long long> issued(static_cast<std::size_t>(threads), 0);
  std::atomic<int> finished{0};
  const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  auto pool = start_dense_threads(threads, [&issued, &finished, end](int t) {
    issued[static_cast<std::size_t>(t)] = dense_until(end);
    finished.fetch_add(1, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::seconds(60));
  });
  while (finished.load(std::memory_order_acquire) != threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int t = 0; t < threads; ++t) std::printf("issued dense-%d %lld\n", t, issued[static_cast<std::size_t>(t)]);
  std::printf("idle\n");
  std::fflush(stdout);
  for (auto& thread : pool) thread.join();
  return 0;
}

// "exit-busy THREADS": THREADS detached threads record dense spans without
// end; once every one has recorded, main returns 300 ms later while they
// still do (the exit bound with busy threads). Prints "exiting".
int exit_busy_mode(int threads) {
  static std::atomic<int> recording{0};  // static: the detached threads outlive main's frame
  for (int t = 0; t < threads; ++t) {
    std::thread([t] {
      char name[16];
      std::snprintf(name, sizeof name, "dense-%d", t);
      edgetrace::set_thread_name(name);
      {
        EDGETRACE_SCOPE(app, "dense_span");
      }
      recording.fetch_add(1);
      for (;;) {
        EDGETRACE_SCOPE(app, "dense_span");
      }
    }).detach();
  }
  while (recording.load() != threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::printf("exiting\n");
  std::fflush(stdout);
  return 0;
}

// "dense-mixed THREADS COUNT": dense-threads with what a thread that encodes
// its own records under overload cannot encode alone: an argument on every
// 1000th span, and from the middle of the loop on a second span site,
// "late_span", inside each span, that nobody recorded before. Prints
// "issued N" (dense_span spans, all threads).
int dense_mixed_mode(int threads, int count) {
  auto pool = start_dense_threads(threads, [count](int) {
    for (int i = 0; i < count; ++i) {
      EDGETRACE_SCOPE(app, "dense_span");
      if (i % 1000 == 0) EDGETRACE_ARG(app, "i", i);
      if (i >= count / 2) {
        EDGETRACE_SCOPE(app, "late_span");
      }
    }
  });
  return join_dense_threads(pool, static_cast<long long>(threads) * count);
}

// "dense-term THREADS": the threads record back-to-back spans until, after
// 300 ms, the first of them gets SIGTERM (pthread_kill: the handler runs on
// a thread that may be encoding its own records). Its default action ends
// the process.
int dense_term_mode(int threads) {
  auto pool = start_dense_threads(threads, [](int) {
    for (;;) {
      EDGETRACE_SCOPE(app, "dense_span");
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  pthread_kill(pool[0].native_handle(), SIGTERM);
  for (;;) pause();
}
}  // namespace

// ---- modes for tests/reader/annotations_test.cpp: "arg-dense COUNT", "arg-loose COUNT"
// COUNT spans "argued", each with two arguments recorded back to back:
// i = index % 100 and neg = -(index % 7). The arguments go to the dump as
// runs (format 1.4).
namespace {
int arg_dense_mode(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "argued");
    EDGETRACE_ARG(app, "i", i % 100);
    EDGETRACE_ARG(app, "neg", -(i % 7));
  }
  return 0;
}

// "arg-loose COUNT": COUNT arguments recorded outside every span, with an
// empty span "between" after every 16th (what no span can claim).
int arg_loose_mode(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_ARG(app, "loose", i);
    if (i % 16 == 15) {
      EDGETRACE_SCOPE(app, "between");
    }
  }
  return 0;
}
}  // namespace

// ---- modes for tests/reader/typed_args_test.cpp (format 1.5) ---------------------
// "typed-args": phase "warm up", then span "typed" with one argument of
// each kind (typed_arg_values below), then phase "measure" and COUNT spans
// "step" (depth 0) each holding a "child" span; step k records x = k / 8.0
// - 3 (a double), i = k (an int) and even = (k % 2 == 0) (a bool), and
// every step with k % 5 == 0 is a step of flow "request" with id k / 5.
// "float-dense COUNT": COUNT spans "f" with one double argument v = k * 0.25.
namespace {
int typed_args_mode(int count) {
  const edgetrace::name_handle shape = edgetrace::intern("1x3x224x224");
  edgetrace::phase("warm up");
  {
    EDGETRACE_SCOPE(app, "typed");
    EDGETRACE_ARG(app, "ratio", 0.75);
    EDGETRACE_ARG(app, "neg", -2.5f);
    EDGETRACE_ARG(app, "huge", 1.7976931348623157e308);
    EDGETRACE_ARG(app, "tiny", 4.9406564584124654e-324);
    EDGETRACE_ARG(app, "third", 1.0 / 3.0);
    EDGETRACE_ARG(app, "nan", __builtin_nan(""));
    EDGETRACE_ARG(app, "ninf", -__builtin_inf());
    EDGETRACE_ARG(app, "cached", true);
    EDGETRACE_ARG(app, "fused", 1 > 2);
    EDGETRACE_ARG(app, "batch", 8);
    EDGETRACE_ARG(app, "min", INT64_MIN);
    EDGETRACE_ARG_NAMED(app, "shape", shape);
  }
  edgetrace::phase("measure");
  for (int k = 0; k < count; ++k) {
    EDGETRACE_SCOPE(app, "step");
    // The same before the arguments: with a coarse counter the previous
    // step may end in the tick this one begins in, and an argument of that
    // tick belongs to either by time alone (docs/FORMAT.md).
    const auto settle = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
    while (std::chrono::steady_clock::now() < settle) {
    }
    EDGETRACE_ARG(app, "x", k / 8.0 - 3);
    EDGETRACE_ARG(app, "i", k);
    EDGETRACE_ARG(app, "even", k % 2 == 0);
    if (k % 5 == 0) EDGETRACE_FLOW(app, "request", k / 5);
    // A few microseconds before the child, so a coarse counter (aarch64)
    // never puts the step's annotations in the child's first tick.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
    while (std::chrono::steady_clock::now() < until) {
    }
    EDGETRACE_SCOPE(app, "child");
  }
  return 0;
}
int float_dense_mode(int count) {
  for (int k = 0; k < count; ++k) {
    EDGETRACE_SCOPE(app, "f");
    EDGETRACE_ARG(app, "v", k * 0.25);
  }
  return 0;
}
}  // namespace

// Counts every allocation while `counting` is on (the "idle" mode checks that
// a disabled tracer allocates nothing).
#if EDGETRACE_TEST_SANITIZED
// Sanitizer runtimes bring their own operator new (TSan's cannot be
// replaced: duplicate symbols at link time). Their allocation hook counts
// instead; it sees operator new and malloc alike.
#include <sanitizer/allocator_interface.h>
namespace {
void count_allocation(const volatile void*, std::size_t) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
}
void ignore_free(const volatile void*) {}
[[maybe_unused]] const bool allocation_hook_installed =
    __sanitizer_install_malloc_and_free_hooks(&count_allocation, &ignore_free) != 0;
}  // namespace
#else
void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// GCC flags free() of memory from a replaced operator new; here both are ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#if EDGETRACE_TEST_ADDRESS_SANITIZED
#include <sanitizer/lsan_interface.h>
// LeakSanitizer's exit-time check locks the whole ASan allocator. The ASan
// runtimes of clang 14 and GCC 12 do not take those locks around fork(), so
// a child forked while another thread was inside malloc/free inherits one
// held, and its check at exit() waits forever (seen in "fork" mode: the
// child stuck in __lsan::LockAllocator, the test hanging). The check means
// nothing in such a child anyway (the parent's other threads, and the memory
// only they reach, do not exist there), so it is off in forked children
// only; every trace_app parent is still leak-checked.
namespace {
const pid_t leak_checked_pid = getpid();
}  // namespace
extern "C" __attribute__((used)) int __lsan_is_turned_off() { return getpid() != leak_checked_pid ? 1 : 0; }
#endif

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "idle";
  if (const int code = writer_trust::run_mode(mode, argc, argv); code >= 0) return code;
  if (const int code = flight_modes::run_mode(mode, argc, argv); code >= 0) return code;
  if (std::strcmp(mode, "idle") == 0) {
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
  if (std::strcmp(mode, "worker-exit") == 0) {
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
  if (std::strcmp(mode, "fork") == 0) {
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
  if (std::strcmp(mode, "signal-term") == 0) {
    // SIGTERM with its default action: with EDGETRACE_SIGNAL_FLUSH=1 the
    // dump is complete although no exit handler runs.
    spans(1000);
    std::raise(SIGTERM);
    for (;;) pause();
  }
  if (std::strcmp(mode, "signal-chain") == 0) {
    spans(1000);
    std::raise(SIGTERM);
    std::printf("app_handler=%d installed=%d\n", static_cast<int>(app_handler_calls), app_handler_installed ? 1 : 0);
    return 0;
  }
  if (std::strcmp(mode, "fork-follow") == 0) {
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
  if (std::strcmp(mode, "delete-output") == 0) {
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
  if (std::strcmp(mode, "file-size-limit") == 0) {
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
  if (std::strcmp(mode, "exit-code") == 0) {
    spans(10);
    return 42;
  }
  if (std::strcmp(mode, "signal-int") == 0) {
    // SIGINT with its default action (Ctrl-C), as signal-term for SIGTERM.
    spans(1000);
    std::raise(SIGINT);
    for (;;) pause();
  }
  if (std::strcmp(mode, "crash") == 0) {
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
  if (std::strcmp(mode, "stress") == 0)
    return stress_mode(argc > 2 ? std::atof(argv[2]) : 2.0, argc > 3 ? std::atoi(argv[3]) : 8);
  if (std::strcmp(mode, "kill-feed") == 0) kill_feed_mode();
  if (std::strcmp(mode, "many-threads") == 0)
    return many_threads_mode(argc > 2 ? std::atoi(argv[2]) : 10000, argc > 3 ? std::atoi(argv[3]) : 3);
  if (std::strcmp(mode, "fork-exec") == 0 && argc > 2) return fork_exec_mode(argv[2]);
  if (std::strcmp(mode, "fork-storm") == 0) return fork_storm_mode(argc > 2 ? std::atoi(argv[2]) : 200);
  if (std::strcmp(mode, "busy-exit-code") == 0) {
    // Traces and flushes for about 300 ms, then exits 42 (output-failure tests).
    for (int i = 0; i < 100; ++i) {
      spans(1000);
      edgetrace::flush();
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    std::printf("active=%d\n", edgetrace::tracing_active() ? 1 : 0);
    return 42;
  }
  if (std::strcmp(mode, "capture-api") == 0) {
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
  if (std::strcmp(mode, "capture-marks") == 0) {
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
  if (std::strcmp(mode, "capture-timed") == 0) {
    // A span every ~2 ms for argv[2] ms (default 400).
    const std::uint64_t run_ns = static_cast<std::uint64_t>(argc > 2 ? std::atoi(argv[2]) : 400) * 1000000u;
    const std::uint64_t start = now_ns();
    while (now_ns() - start < run_ns) {
      EDGETRACE_SCOPE(app, "timed");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return 0;
  }
  if (std::strcmp(mode, "capture-signal") == 0) {
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
  if (std::strcmp(mode, "capture-phases") == 0) {
    // Phases "warm up" (3 spans) and "measure" (7 spans), 1 ms apart.
    edgetrace::phase("warm up");
    for (int i = 0; i < 10; ++i) {
      if (i == 3) edgetrace::phase(std::string("measure"));
      EDGETRACE_SCOPE(app, "work");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
  }
  if (std::strcmp(mode, "record-measured") == 0) {
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
      const std::uint64_t start = steady_ns();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const std::uint64_t end = steady_ns();
      // Reported later, as an engine's profiler callback would.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EDGETRACE_RECORD(app, "measured", start, end - start);
      EDGETRACE_RECORD_NAMED(app, layer, start + 100000, 50000);
      std::printf("measured %llu %llu\n", static_cast<unsigned long long>(start),
                  static_cast<unsigned long long>(end - start));
    }
    edgetrace::pause();
    EDGETRACE_RECORD(app, "paused", steady_ns(), 1000);
    edgetrace::resume();
    return 0;
  }
  if (std::strcmp(mode, "typed-args") == 0) return typed_args_mode(argc > 2 ? std::atoi(argv[2]) : 100);
  if (std::strcmp(mode, "float-dense") == 0) return float_dense_mode(argc > 2 ? std::atoi(argv[2]) : 10000);
  if (std::strcmp(mode, "annotations") == 0) {
    // Arguments, memory pools and flows, with values tests/reader/annotations_test.cpp
    // recomputes. "weights" stays live (1500 bytes); each layer i adds
    // (i + 1) * 100 bytes of scratch and its gemm 50 more.
    // gap(): a few microseconds of work between every span boundary and
    // the records next to it, as real layers have. Without it, on a coarse
    // counter (cntvct_el0 ticks every 16-32 ns) an argument recorded in the
    // tick a child span begins cannot be told from one inside it (see
    // docs/ANALYSIS.md, "Arguments and flow steps belong to spans").
    const auto gap = [] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
      while (std::chrono::steady_clock::now() < until) {
      }
    };
    alignas(16) static unsigned char arena[4096];
    const edgetrace::name_handle fp16 = edgetrace::intern("fp16"), int8 = edgetrace::intern(std::string("int8"));
    {
      EDGETRACE_SCOPE(app, "load");
      gap();
      EDGETRACE_ALLOC(app, arena + 0, 1000, "weights");
      EDGETRACE_ALLOC(app, arena + 1024, 500, "weights");
      gap();
    }
    for (int i = 0; i < 4; ++i) {
      gap();
      EDGETRACE_SCOPE(app, "layer");
      gap();
      EDGETRACE_ARG(app, "batch", 1 << i);
      EDGETRACE_ARG_NAMED(app, "dtype", i % 2 == 0 ? fp16 : int8);
      EDGETRACE_ALLOC(app, arena + 2048, (i + 1) * 100, "scratch");
      gap();
      {
        EDGETRACE_SCOPE(app, "gemm");
        gap();
        EDGETRACE_ARG(app, "k", -64 * (i + 1));
        EDGETRACE_ALLOC(app, arena + 3072, 50, "scratch");
        EDGETRACE_FREE(app, arena + 3072);
        gap();
      }
      gap();
      EDGETRACE_FREE(app, arena + 2048);
      gap();
    }
    gap();
    // Mismatches: a free of an address never allocated, a double free, and
    // free(NULL) (ignored); an argument outside every span (not attached).
    EDGETRACE_FREE(app, reinterpret_cast<void*>(0xdead0));
    EDGETRACE_ALLOC(app, arena + 3584, 64, "scratch");
    EDGETRACE_FREE(app, arena + 3584);
    EDGETRACE_FREE(app, arena + 3584);
    EDGETRACE_FREE(app, nullptr);
    EDGETRACE_ARG(app, "orphan", 1);
    // Requests 1..3: enqueued on this thread, processed on another.
    for (std::uint64_t id = 1; id <= 3; ++id) {
      {
        EDGETRACE_SCOPE(app, "enqueue");
        EDGETRACE_FLOW(app, "request", id);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::thread([id] {
        EDGETRACE_SCOPE(app, "process");
        EDGETRACE_FLOW(app, "request", id);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }).join();
    }
    return 0;
  }
  if (std::strcmp(mode, "alloc-flood") == 0) {
    // More allocations than a 16 KiB ring holds, without pause: pairs drop
    // whole. Address 0x100000 + 16 i always carries i + 1 bytes.
    const int count = argc > 2 ? std::atoi(argv[2]) : 100000;
    for (int i = 0; i < count; ++i) {
      const std::uint64_t address = 0x100000u + 16u * static_cast<std::uint64_t>(i);
      EDGETRACE_ALLOC(app, address, i + 1, "flood");
      EDGETRACE_FREE(app, address);
    }
    std::printf("issued %d\n", count * 3);
    return 0;
  }
  // issue 13, process life (tests/writer/process_life_test.cpp)
  if (std::strcmp(mode, "sig-ign") == 0) return sig_ign_mode();
  if (std::strcmp(mode, "sig-ign-child") == 0) {
    std::raise(SIGINT);
    std::raise(SIGTERM);
    return 0;
  }
  if (std::strcmp(mode, "quick-exit") == 0) quick_exit_mode();
#if !EDGETRACE_SEPARATE_RUNTIME
  if (std::strcmp(mode, "quick-exit-locked") == 0) quick_exit_locked_mode();
#endif
  if (std::strcmp(mode, "fork-names") == 0) return fork_names_mode();
  if (std::strcmp(mode, "dense") == 0) return dense_mode(argc > 2 ? std::atoi(argv[2]) : 1000000);
  if (std::strcmp(mode, "arg-dense") == 0) return arg_dense_mode(argc > 2 ? std::atoi(argv[2]) : 10000);
  if (std::strcmp(mode, "arg-loose") == 0) return arg_loose_mode(argc > 2 ? std::atoi(argv[2]) : 10000);
  if (std::strcmp(mode, "dense-threads") == 0)
    return dense_threads_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atoi(argv[3]) : 1000000);
  if (std::strcmp(mode, "dense-idle") == 0)
    return dense_idle_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atof(argv[3]) : 0.5);
  if (std::strcmp(mode, "exit-busy") == 0) return exit_busy_mode(argc > 2 ? std::atoi(argv[2]) : 64);
  if (std::strcmp(mode, "dense-for") == 0)
    return dense_for_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atof(argv[3]) : 1.0);
  if (std::strcmp(mode, "dense-mixed") == 0)
    return dense_mixed_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atoi(argv[3]) : 1000000);
  if (std::strcmp(mode, "dense-term") == 0) return dense_term_mode(argc > 2 ? std::atoi(argv[2]) : 2);
  // ---- tests/writer/clock_start_test.cpp: "die-early", "record-absurd".
  if (std::strcmp(mode, "die-early") == 0) {
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
  if (std::strcmp(mode, "paced") == 0)
    return paced_mode(argc > 2 ? std::atof(argv[2]) : 2.0, argc > 3 ? std::atoi(argv[3]) : 200);
  if (std::strcmp(mode, "record-absurd") == 0) {
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
  // ---- Latency triggers in flight mode (tests/flight/flight_triggers_test.cpp).
  if (std::strcmp(mode, "flight-iterations") == 0) {
    // argv: COUNT SLOW_FIRST SLOW_EVERY SLOW_MS [TAIL_MS [named]]. COUNT
    // iterations, each a "frame" mark then an "infer" span of ~1 ms (its
    // name interned at run time with "named"); iteration
    // SLOW_FIRST (and every SLOW_EVERY-th after it, 0 = none more) lasts
    // SLOW_MS instead; SLOW_FIRST < 0: none. A last mark closes the last
    // iteration, then the app idles TAIL_MS (default 400) so that a
    // snapshot's after-window ends before exit.
    const int count = argc > 2 ? std::atoi(argv[2]) : 80;
    const int slow_first = argc > 3 ? std::atoi(argv[3]) : -1;
    const int slow_every = argc > 4 ? std::atoi(argv[4]) : 0;
    const int slow_ms = argc > 5 ? std::atoi(argv[5]) : 30;
    const int tail_ms = argc > 6 ? std::atoi(argv[6]) : 400;
    const bool named = argc > 7 && std::strcmp(argv[7], "named") == 0;
    const edgetrace::name_handle infer = edgetrace::intern(std::string("infer"));
    for (int i = 0; i < count; ++i) {
      const bool slow = slow_first >= 0 && (i == slow_first || (slow_every > 0 && i > slow_first &&
                                                                (i - slow_first) % slow_every == 0));
      const auto work = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(slow ? slow_ms : 1)); };
      EDGETRACE_MARK(app, "frame");
      if (named) {
        EDGETRACE_SCOPE_NAMED(app, infer);
        work();
      } else {
        EDGETRACE_SCOPE(app, "infer");
        work();
      }
    }
    EDGETRACE_MARK(app, "frame");
    std::this_thread::sleep_for(std::chrono::milliseconds(tail_ms));
    return 0;
  }
  if (std::strcmp(mode, "flight-paused") == 0) {
    // 1 ms "frame" iterations with a 60 ms pause of recording between two
    // marks: that interval is no iteration (it must not fire frame>20ms).
    for (int i = 0; i < 20; ++i) {
      if (i == 10) {
        edgetrace::pause();
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        edgetrace::resume();
      }
      EDGETRACE_MARK(app, "frame");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return 0;
  }
  // ---- end of the latency trigger modes
  // ---- modes for tests/flight/flight_hostile_test.cpp (the recorder under hostile use).
  //  "map-stalls SECONDS": records a span, then maps, touches and unmaps
  //    1 MiB in a loop for SECONDS, and prints "first_span_ms=N
  //    longest_us=M": N the time from the process's start (exec) to the
  //    end of its first span (its thread's ring is mapped for it), M the
  //    longest map-touch-unmap; both wait when something holds the
  //    process's memory map lock (the flight ring's pre-faulting).
  if (std::strcmp(mode, "map-stalls") == 0) {
    { EDGETRACE_SCOPE(app, "map_loop"); }
    long long first_span_ms = -1;
    {
      timespec boot{};
      ::clock_gettime(CLOCK_BOOTTIME, &boot);
      unsigned long long start_ticks = 0;
      if (std::FILE* stat = std::fopen("/proc/self/stat", "r")) {
        char line[1024] = {};
        if (std::fgets(line, sizeof line, stat) != nullptr) {
          const char* after = std::strrchr(line, ')');
          // Fields after the name: state is the 3rd, starttime the 22nd.
          for (int field = 2; after != nullptr && field < 22; ++field) after = std::strchr(after + 1, ' ');
          if (after != nullptr) start_ticks = std::strtoull(after + 1, nullptr, 10);
        }
        std::fclose(stat);
      }
      const long hz = ::sysconf(_SC_CLK_TCK);
      if (start_ticks != 0 && hz > 0)
        first_span_ms = static_cast<long long>(boot.tv_sec) * 1000 + boot.tv_nsec / 1000000 -
                        static_cast<long long>(start_ticks * 1000 / static_cast<unsigned long long>(hz));
    }
    const std::uint64_t start = now_ns();
    const auto duration = static_cast<std::uint64_t>((argc > 2 ? std::atof(argv[2]) : 1.0) * 1e9);
    std::uint64_t longest = 0;
    while (now_ns() - start < duration) {
      const std::uint64_t before = now_ns();
      void* block = ::mmap(nullptr, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (block == MAP_FAILED) return 3;
      static_cast<volatile char*>(block)[0] = 1;
      ::munmap(block, 1u << 20);
      const std::uint64_t took = now_ns() - before;
      if (took > longest) longest = took;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::printf("first_span_ms=%lld longest_us=%llu\n", first_span_ms, static_cast<unsigned long long>(longest / 1000));
    return 0;
  }
  // ---- end of the flight_hostile_test modes
  std::fprintf(stderr, "trace_app: unknown mode %s\n", mode);
  return 2;
}
