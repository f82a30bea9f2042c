// SPDX-License-Identifier: MIT
// The hot path's tick source: the CPU counter (rdtsc, cntvct_el0) or
// CLOCK_MONOTONIC, chosen per category by a mode byte. Light on purpose
// (no <x86intrin.h>, no <chrono>): every traced TU includes it.
#pragma once

#include <edgetrace/config.hpp>

#include <cstdint>
#include <time.h>

#if !EDGETRACE_CLOCK_MONOTONIC && (defined(__x86_64__) || defined(__i386__))
#define EDGETRACE_DETAIL_CLOCK_TSC 1
#elif !EDGETRACE_CLOCK_MONOTONIC && defined(__aarch64__)
#define EDGETRACE_DETAIL_CLOCK_CNTVCT 1
#endif

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// The clock a recording category uses, stored in the category's flag so
/// the hot path learns "record?" and "which clock?" from one load.
enum clock_mode : std::uint8_t {
  clock_off = 0,        ///< not recording
  clock_counter = 1,    ///< the CPU's counter: rdtsc, cntvct_el0
  clock_monotonic = 2,  ///< clock_gettime(CLOCK_MONOTONIC), ns
};

inline std::uint64_t clock_ns(clockid_t id) noexcept {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// Is there a CPU counter compiled in at all?
inline constexpr bool has_counter =
#if defined(EDGETRACE_DETAIL_CLOCK_TSC) || defined(EDGETRACE_DETAIL_CLOCK_CNTVCT)
    true;
#else
    false;
#endif

/// The raw CPU counter. x86-64: rdtsc (~25 cycles, not serialising: it may
/// move by a few instructions, below what a span can resolve). aarch64: the
/// virtual counter (cntvct_el0). Elsewhere: CLOCK_MONOTONIC in ns (vDSO).
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t ticks() noexcept {
#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
  return __builtin_ia32_rdtsc();
#elif defined(EDGETRACE_DETAIL_CLOCK_CNTVCT)
  std::uint64_t value;
  asm volatile("mrs %0, cntvct_el0" : "=r"(value));
  return value;
#else
  return clock_ns(CLOCK_MONOTONIC);
#endif
}

/// CLOCK_MONOTONIC as a tick, out of line: its timespec would otherwise
/// cost the counter path a stack frame. A template so it can be noinline
/// in a header without a GCC warning about `inline`.
template <class = void>
EDGETRACE_DETAIL_NOINLINE std::uint64_t monotonic_tick() noexcept {
  return clock_ns(CLOCK_MONOTONIC);
}

/// A tick in the given mode. Cost with the counter: one compare and a
/// predictable branch on top of the counter read.
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t ticks(std::uint8_t mode) noexcept {
  if (EDGETRACE_DETAIL_LIKELY(mode == clock_counter)) return ticks();
  return monotonic_tick();
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
