// SPDX-License-Identifier: MIT
// Instruction counts per span under callgrind: each probe_* function runs
// the same loop with one kind of span; bench/callgrind.sh divides each
// function's inclusive instruction count by the iterations.
#include <edgetrace/edgetrace.hpp>

#include <cstdint>
#include <cstdlib>

EDGETRACE_CATEGORY(probe_on);
EDGETRACE_CATEGORY(probe_off);           // EDGETRACE_CATEGORIES=*,-probe_off
EDGETRACE_CATEGORY(probe_compiled_out);  // EDGETRACE_EXCLUDED_CATEGORIES (CMake)

namespace {
struct floor_record {
  std::uint64_t word, t_begin, t_end;
};
thread_local floor_record floor_buffer[4096];
thread_local std::size_t floor_index = 0;
volatile int sink = 0;

/// Tells the compiler the record is read (no instruction), so the floor's
/// stores cannot be removed as dead.
inline void keep(const floor_record& r) { asm volatile("" : : "m"(r)); }
}  // namespace

#define EDGETRACE_PROBE extern "C" __attribute__((noinline))

/// The loop alone (an opaque store per iteration keeps it a loop).
EDGETRACE_PROBE void probe_empty(int n) {
  for (int i = 0; i < n; ++i) sink = i;
}
/// Two ticks and a 24-byte store to a thread-local array.
EDGETRACE_PROBE void probe_floor(int n) {
  for (int i = 0; i < n; ++i) {
    const std::uint64_t begin = edgetrace::detail::ticks();
    const std::uint64_t end = edgetrace::detail::ticks();
    floor_record& r = floor_buffer[floor_index++ & 4095];
    r.word = 0x1000;
    r.t_begin = begin;
    r.t_end = end;
    keep(r);
    sink = i;
  }
}
EDGETRACE_PROBE void probe_enabled(int n) {
  for (int i = 0; i < n; ++i) {
    EDGETRACE_SCOPE(probe_on, "probe_span");
    sink = i;
  }
}
EDGETRACE_PROBE void probe_runtime_disabled(int n) {
  for (int i = 0; i < n; ++i) {
    EDGETRACE_SCOPE(probe_off, "probe_off_span");
    sink = i;
  }
}
EDGETRACE_PROBE void probe_compile_disabled(int n) {
  for (int i = 0; i < n; ++i) {
    EDGETRACE_SCOPE(probe_compiled_out, "probe_gone");
    sink = i;
  }
}

/// A span with one argument of each value type (format 1.5): the integer
/// case must cost what it did before typed arguments; bench/callgrind.sh
/// prints each, and the float and bool cases' difference to it.
EDGETRACE_PROBE void probe_arg_int(int n) {
  for (int i = 0; i < n; ++i) {
    EDGETRACE_SCOPE(probe_on, "probe_arg_span");
    EDGETRACE_ARG(probe_on, "i", i);
    sink = i;
  }
}
EDGETRACE_PROBE void probe_arg_float(int n) {
  for (int i = 0; i < n; ++i) {
    EDGETRACE_SCOPE(probe_on, "probe_arg_span");
    EDGETRACE_ARG(probe_on, "x", i * 0.5);
    sink = i;
  }
}
EDGETRACE_PROBE void probe_arg_bool(int n) {
  for (int i = 0; i < n; ++i) {
    EDGETRACE_SCOPE(probe_on, "probe_arg_span");
    EDGETRACE_ARG(probe_on, "odd", (i & 1) != 0);
    sink = i;
  }
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  // Warm up: attach the ring and define the sites before counting.
  probe_enabled(10);
  probe_empty(n);
  probe_floor(n);
  probe_enabled(n);
  probe_runtime_disabled(n);
  probe_compile_disabled(n);
  probe_arg_int(10);  // defines the argument sites before counting
  probe_arg_float(10);
  probe_arg_bool(10);
  probe_arg_int(n);
  probe_arg_float(n);
  probe_arg_bool(n);
  return 0;
}
