// SPDX-License-Identifier: MIT
// trace_app modes for tests/writer/writer_trust_test.cpp: what production does to a
// traced app (signal handlers that record, thread churn, outputs that block,
// fds closed under the tracer, files truncated or shared).
#pragma once

#include <support/trace_app/common.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <thread>
#include <time.h>
#include <unistd.h>

namespace trace_app {

/// Records every handler issues (lock-free: counted inside the handler).
inline std::atomic<std::uint64_t> handler_records{0};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the handler counts with a lock-free atomic");

inline void recording_handler(int) {
  const int saved_errno = errno;
  {
    EDGETRACE_SCOPE(app, "in_handler");
    EDGETRACE_INSTANT(app, "handler_instant");
  }
  handler_records.fetch_add(2, std::memory_order_relaxed);
  errno = saved_errno;
}

/// "signal-spans SECONDS": SIGALRM every 20 us, whose handler records a span
/// and an instant, while main records nested scopes in a dense loop and
/// short-lived threads start (a signal may be a thread's first record).
/// Prints "issued N": every record anyone tried to make.
inline int signal_spans_mode(double seconds) {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = &recording_handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGALRM, &action, nullptr);
  itimerval timer{};
  timer.it_interval.tv_usec = 20;
  timer.it_value.tv_usec = 20;
  setitimer(ITIMER_REAL, &timer, nullptr);
  std::atomic<std::uint64_t> issued{0};
  const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  std::uint64_t loops = 0;
  while (now_ns() < end) {
    for (int i = 0; i < 1000; ++i) {
      EDGETRACE_SCOPE(app, "outer");
      { EDGETRACE_SCOPE(app, "inner"); }
    }
    issued.fetch_add(2000, std::memory_order_relaxed);
    if (++loops % 16 == 0) {
      std::thread([&] {
        for (int i = 0; i < 100; ++i) {
          EDGETRACE_SCOPE(app, "worker");
        }
        issued.fetch_add(100, std::memory_order_relaxed);
      }).join();
    }
  }
  timer = itimerval{};
  setitimer(ITIMER_REAL, &timer, nullptr);
  std::printf("issued %llu handler %llu\n",
              static_cast<unsigned long long>(issued.load() + handler_records.load()),
              static_cast<unsigned long long>(handler_records.load()));
  return 0;
}

/// Peak resident set (VmHWM) in kB.
inline long peak_rss_kb() {
  long value = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr)
      if (std::strncmp(line, "VmHWM:", 6) == 0) value = std::atol(line + 6);
    std::fclose(f);
  }
  return value;
}

/// "churn N": N threads started one after another, one alive at a time,
/// each recording one span. Prints the peak RSS and the time per thread.
inline int churn_mode(int count) {
  { EDGETRACE_SCOPE(app, "churn_start"); }
  const std::uint64_t start = now_ns();
  for (int i = 0; i < count; ++i) {
    std::thread([] { EDGETRACE_SCOPE(app, "churn_span"); }).join();
  }
  const double per_thread_us = static_cast<double>(now_ns() - start) / 1e3 / count;
  std::printf("peak_rss_kb=%ld per_thread_us=%.2f\n", peak_rss_kb(), per_thread_us);
  return 0;
}

inline void named_spans(const char* name, int count) {
  const edgetrace::name_handle handle = edgetrace::intern(name);
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE_NAMED(app, handle);
  }
}

/// "dense-exit N": N spans, then exit 7 (an output that blocks must not
/// hold the exit or change its code). Prints how long main took.
inline int dense_exit_mode(int count) {
  const std::uint64_t start = now_ns();
  named_spans("dense", count);
  std::printf("main_ms=%.1f\n", static_cast<double>(now_ns() - start) / 1e6);
  std::fflush(stdout);
  return 7;
}

/// "closefrom FILE": traces, then closes every descriptor from 3 up (as a
/// daemon does at start-up), opens FILE (which gets the dump's old number),
/// traces on, writes "app data\n" to FILE and checks it holds just that.
inline int closefrom_mode(const char* file) {
  named_spans("before_close", 100);
  edgetrace::flush();
  // The dump's number (the lowest free one usually, but not always: the
  // file must land on it for the test to mean something).
  int dump_fd = -1;
  const char* dump = std::getenv("EDGETRACE_OUTPUT");
  for (int fd = 3; fd < 1024 && dump != nullptr && dump_fd < 0; ++fd) {
    char link[64], target[4096];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = ::readlink(link, target, sizeof target - 1);
    if (n > 0 && static_cast<std::size_t>(n) == std::strlen(dump) && std::strncmp(target, dump, n) == 0) dump_fd = fd;
  }
  for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  int own = ::open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (dump_fd >= 0 && own != dump_fd) {
    ::dup3(own, dump_fd, O_CLOEXEC);
    ::close(own);
    own = dump_fd;
  }
  named_spans("after_close", 1000);
  edgetrace::flush();
  const char data[] = "app data\n";
  const ssize_t written = ::write(own, data, sizeof data - 1);
  ::close(own);
  std::printf("own_fd=%d written=%zd\n", own, written);
  return 0;
}

/// "truncate-output DUMP": traces, flushes, truncates its own dump as
/// copytruncate log rotation does, traces on. The flush after the
/// truncation makes a whole flusher cycle begin after it, so the spans
/// after it are recorded once the stream has started again: records that a
/// cycle already under way drains are lost with their definitions
/// (docs/TRUST.md, "A file truncated under its writer"), and a cycle
/// can be under way when truncate() is slow or this thread is preempted
/// after the first flush.
inline int truncate_output_mode(const char* dump) {
  named_spans("before_truncate", 1000);
  edgetrace::flush();
  if (::truncate(dump, 0) != 0) return 3;
  edgetrace::flush();
  named_spans("after_truncate", 1000);
  edgetrace::flush();
  named_spans("at_exit", 10);
  return 0;
}

/// "stagger NAME MS": 100 spans named NAME, "ready", MS ms of sleep, 100
/// more (several processes writing one path at staggered times).
inline int stagger_mode(const char* name, int ms) {
  named_spans(name, 100);
  edgetrace::flush();
  std::printf("ready\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  named_spans(name, 100);
  return 0;
}

/// "fill BATCHES SPANS [IDLE_MS]": BATCHES batches of SPANS spans named "fill", each
/// flushed, 1 ms apart (a dump that grows toward EDGETRACE_MAX_MB or a
/// small file system's floor). Prints the spans issued; with IDLE_MS, then
/// idles that long and prints how much the dump grew meanwhile.
inline int fill_mode(int batches, int spans_per_batch, int idle_ms) {
  long issued = 0;
  for (int b = 0; b < batches; ++b) {
    named_spans("fill", spans_per_batch);
    issued += spans_per_batch;
    edgetrace::flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("issued=%ld\n", issued);
  if (idle_ms > 0) {
    // How much the dump grows while nothing is recorded (EDGETRACE_OUTPUT
    // as given: no %p in it).
    const auto size = [] {
      struct stat st {};
      const char* path = std::getenv("EDGETRACE_OUTPUT");
      return path != nullptr && ::stat(path, &st) == 0 ? static_cast<long long>(st.st_size) : -1LL;
    };
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const long long before = size();
    std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
    std::printf("idle_growth=%lld\n", size() - before);
  }
  return 0;
}

/// "exec-self": 100 spans "before_exec", written out 40 ms after start,
/// then this program again in its place (execv) as "exec-self after":
/// 100 spans "after_exec" into the same EDGETRACE_OUTPUT.
inline int exec_self_mode(bool after) {
  if (after) {
    named_spans("after_exec", 100);
    return 0;
  }
  named_spans("before_exec", 100);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  edgetrace::flush();
  // TRACE_APP_MTIME_BACK_S=N: the dump's time set N s back, as a wall
  // clock stepped forward between the writes and the exec (NTP's first
  // sync) leaves it.
  if (const char* back = std::getenv("TRACE_APP_MTIME_BACK_S"); back != nullptr && std::getenv("EDGETRACE_OUTPUT")) {
    timespec times[2];
    ::clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= std::atol(back);
    times[1] = times[0];
    if (::utimensat(AT_FDCWD, std::getenv("EDGETRACE_OUTPUT"), times, 0) != 0) return 4;
  }
  // The path, not /proc/self/exe: under qemu-user that names qemu.
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 3;
  self[n] = '\0';
  char name[] = "trace_app", mode[] = "exec-self", after_arg[] = "after";
  char* const argv[] = {name, mode, after_arg, nullptr};
  ::execv(self, argv);
  return 3;
}

/// The modes above, by name (trace_app.cpp looks them up).
/// "nice-after-exit": a worker thread busy recording when main returns; an
/// exit handler that runs after the runtime's (registered before any
/// static initialiser, when TRACE_APP_NICE_CHECK is set) prints the
/// worker's nice value: the exit pass must leave it as it was.
inline std::atomic<long> nice_worker_tid{0};
inline void print_worker_nice() {
  const long tid = nice_worker_tid.load();
  if (tid == 0) return;
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  std::printf("worker_nice %d\n", errno == 0 ? nice : 1000);
  std::fflush(stdout);
}
__attribute__((constructor(101))) inline void register_nice_check() {
  if (std::getenv("TRACE_APP_NICE_CHECK") != nullptr) std::atexit(print_worker_nice);
}
inline int nice_after_exit_mode() {
  std::atomic<bool> started{false};
  std::thread([&started] {
    nice_worker_tid.store(static_cast<long>(::syscall(SYS_gettid)));
    started.store(true);
    for (;;) {
      EDGETRACE_SCOPE(app, "worker_step");
      for (volatile int i = 0; i < 1000; ++i) {
      }
    }
  }).detach();
  while (!started.load()) std::this_thread::yield();
  for (int i = 0; i < 1000; ++i) EDGETRACE_SCOPE(app, "main_step");
  return 0;
}

/// "intern-many COUNT": COUNT distinct names interned at run time, each
/// named by one span ("request-N": what an app that names spans by request
/// id does).
inline int intern_many_mode(int count) {
  char name[32];
  for (int i = 0; i < count; ++i) {
    std::snprintf(name, sizeof name, "request-%d", i);
    EDGETRACE_SCOPE_NAMED(app, edgetrace::intern(name));
  }
  return 0;
}

inline const app_mode trust_modes[] = {
    {"intern-many", [](int argc, char** argv) { return intern_many_mode(argc > 2 ? std::atoi(argv[2]) : 1000000); }},
    {"nice-after-exit", [](int, char**) { return nice_after_exit_mode(); }},
    {"signal-spans", [](int argc, char** argv) { return signal_spans_mode(argc > 2 ? std::atof(argv[2]) : 1.0); }},
    {"churn", [](int argc, char** argv) { return churn_mode(argc > 2 ? std::atoi(argv[2]) : 20000); }},
    {"dense-exit", [](int argc, char** argv) { return dense_exit_mode(argc > 2 ? std::atoi(argv[2]) : 1000000); }},
    {"closefrom", [](int argc, char** argv) { return argc > 2 ? closefrom_mode(argv[2]) : missing_argument("closefrom"); }},
    {"truncate-output",
     [](int argc, char** argv) { return argc > 2 ? truncate_output_mode(argv[2]) : missing_argument("truncate-output"); }},
    {"stagger",
     [](int argc, char** argv) { return argc > 3 ? stagger_mode(argv[2], std::atoi(argv[3])) : missing_argument("stagger"); }},
    {"exec-self", [](int argc, char**) { return exec_self_mode(argc > 2); }},
    {"fill",
     [](int argc, char** argv) {
       return argc > 3 ? fill_mode(std::atoi(argv[2]), std::atoi(argv[3]), argc > 4 ? std::atoi(argv[4]) : 0)
                       : missing_argument("fill");
     }},
};

}  // namespace trace_app
