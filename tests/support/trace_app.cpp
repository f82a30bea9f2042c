// SPDX-License-Identifier: MIT
// A small traced program the lifecycle tests run as a child process, one
// behaviour per mode (argv[1]); see tests/lifecycle_test.cpp.
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

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <new>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

EDGETRACE_CATEGORY(app);

namespace {
std::atomic<long> allocations{0};
std::atomic<bool> counting{false};

int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

void spans(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "app_span");
    EDGETRACE_COUNTER(app, "app_counter", i);
  }
}
}  // namespace

// Counts every allocation while `counting` is on (the "idle" mode checks that
// a disabled tracer allocates nothing).
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

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "idle";
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
  std::fprintf(stderr, "trace_app: unknown mode %s\n", mode);
  return 2;
}
