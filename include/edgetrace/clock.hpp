// SPDX-License-Identifier: MIT
// The tick source of the hot path and the calibration pairs that let the
// reader turn ticks into nanoseconds offline.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/format.hpp>

#include <cstdint>
#include <ctime>

#if !EDGETRACE_CLOCK_MONOTONIC && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <x86intrin.h>
#define EDGETRACE_DETAIL_CLOCK_TSC 1
#elif !EDGETRACE_CLOCK_MONOTONIC && defined(__aarch64__)
#define EDGETRACE_DETAIL_CLOCK_CNTVCT 1
#endif

namespace edgetrace {
inline namespace v1 {
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
  return __rdtsc();
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

inline format::clock_source tick_source(std::uint8_t mode) noexcept {
  if (mode != clock_counter) return format::clock_source::monotonic_ns;
#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
  return format::clock_source::x86_tsc;
#elif defined(EDGETRACE_DETAIL_CLOCK_CNTVCT)
  return format::clock_source::arm_cntvct;
#else
  return format::clock_source::monotonic_ns;
#endif
}

/// Does the CPU promise a counter that ticks at a constant rate and keeps
/// ticking in deep C-states (x86: CPUID invariant TSC)? aarch64's generic
/// timer always does.
inline bool counter_invariant() noexcept {
#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) >= 0x80000007u) {
    __cpuid(0x80000007u, a, b, c, d);
    return (d & (1u << 8)) != 0;
  }
  return false;
#elif defined(EDGETRACE_DETAIL_CLOCK_CNTVCT)
  return true;
#else
  return false;
#endif
}

/// Clock flags for the process chunk (docs/FORMAT.md): bit 0 = the CPU
/// reports an invariant counter; bit 1 = the counter was not used because
/// it is not invariant (automatic fallback to CLOCK_MONOTONIC).
inline std::uint8_t tick_flags(bool invariant, bool fell_back) noexcept {
  return static_cast<std::uint8_t>((invariant ? 1 : 0) | (fell_back ? 2 : 0));
}

/// Nominal ticks per second where the hardware says it (0 = unknown; the
/// reader then fits the rate from calibration pairs).
inline std::uint64_t nominal_tick_rate(std::uint8_t mode) noexcept {
  if (mode != clock_counter) return 1000000000u;
#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
  return 0;
#elif defined(EDGETRACE_DETAIL_CLOCK_CNTVCT)
  std::uint64_t value;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(value));
  return value;
#else
  return 1000000000u;
#endif
}


/// One (tick, CLOCK_MONOTONIC, CLOCK_REALTIME) triple taken at one instant.
struct calibration_pair {
  std::uint64_t tick;
  std::uint64_t monotonic_ns;
  std::uint64_t realtime_ns;
};

/// Takes the tightest of `tries` bracketed reads; the tick is the midpoint
/// of the two ticks around the clock reads. Cost: ~tries × 60 ns.
inline calibration_pair calibrate(std::uint8_t mode, int tries = 7) noexcept {
  calibration_pair best{};
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int i = 0; i < tries; ++i) {
    const std::uint64_t before = ticks(mode);
    const std::uint64_t mono = clock_ns(CLOCK_MONOTONIC);
    const std::uint64_t real = clock_ns(CLOCK_REALTIME);
    const std::uint64_t after = ticks(mode);
    if (after >= before && after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, mono, real};
    }
  }
  if (best_width == ~std::uint64_t{0}) best = {ticks(mode), clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)};
  return best;
}

}  // namespace detail
}  // namespace v1
}  // namespace edgetrace
