// SPDX-License-Identifier: MIT
// What every trace_app mode uses: the `app` category, a burst of spans, the
// clock, small /proc and I/O helpers, the allocation counter, and the row
// of a mode table (app_mode). Each tests/support/trace_app/<room>_modes.hpp
// holds a room's modes and their table; tests/support/trace_app.cpp finds a
// mode by name in the tables.
#pragma once

#include <edgetrace/edgetrace.hpp>
#include <support/allocation_count.hpp>
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

namespace trace_app {

/// One mode: `trace_app NAME ARGS...` runs `run(argc, argv)` (argv[1] is NAME).
struct app_mode {
  const char* name;
  int (*run)(int argc, char** argv);
};

/// A mode called without an argument it needs: one line, exit 2.
inline int missing_argument(const char* mode) {
  std::fprintf(stderr, "trace_app: mode %s needs an argument\n", mode);
  return 2;
}

using edgetrace_test::thread_count;

/// Allocations counted while `counting` is on (the "idle" mode: a disabled
/// tracer allocates nothing): support/count_allocations.hpp, which
/// trace_app.cpp includes.
using edgetrace_test::allocations;
using edgetrace_test::counting;

inline void spans(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "app_span");
    EDGETRACE_COUNTER(app, "app_counter", i);
  }
}
/// CLOCK_MONOTONIC now, in ns.
inline std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// "VmRSS"/"VmSize" from /proc/self/status, in kB (0 if not found).
inline long status_kb(const char* key) {
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
inline std::uint64_t next_random(std::uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

inline void write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n <= 0) _exit(3);  // the reader went away: nothing left to do
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace trace_app
