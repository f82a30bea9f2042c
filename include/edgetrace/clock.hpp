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

/// Raw tick. x86-64: rdtsc (~25 cycles, not serialising: it may move by a
/// few instructions, which is below what a span can resolve). aarch64: the
/// virtual counter (cntvct_el0). Elsewhere: CLOCK_MONOTONIC in ns (vDSO).
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t ticks() noexcept {
#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
  return __rdtsc();
#elif defined(EDGETRACE_DETAIL_CLOCK_CNTVCT)
  std::uint64_t value;
  asm volatile("mrs %0, cntvct_el0" : "=r"(value));
  return value;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
#endif
}

inline format::clock_source tick_source() noexcept {
#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
  return format::clock_source::x86_tsc;
#elif defined(EDGETRACE_DETAIL_CLOCK_CNTVCT)
  return format::clock_source::arm_cntvct;
#else
  return format::clock_source::monotonic_ns;
#endif
}

/// Clock flags for the process chunk: bit 0 = CPUID reports invariant TSC.
inline std::uint8_t tick_flags() noexcept {
#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) >= 0x80000007u) {
    __cpuid(0x80000007u, a, b, c, d);
    return (d & (1u << 8)) ? 1 : 0;
  }
#endif
  return 0;
}

/// Nominal ticks per second where the hardware says it (0 = unknown; the
/// reader then fits the rate from calibration pairs).
inline std::uint64_t nominal_tick_rate() noexcept {
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

inline std::uint64_t clock_ns(clockid_t id) noexcept {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// One (tick, CLOCK_MONOTONIC, CLOCK_REALTIME) triple taken at one instant.
struct calibration_pair {
  std::uint64_t tick;
  std::uint64_t monotonic_ns;
  std::uint64_t realtime_ns;
};

/// Takes the tightest of `tries` bracketed reads; the tick is the midpoint
/// of the two ticks around the clock reads. Cost: ~tries × 60 ns.
inline calibration_pair calibrate(int tries = 7) noexcept {
  calibration_pair best{};
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int i = 0; i < tries; ++i) {
    const std::uint64_t before = ticks();
    const std::uint64_t mono = clock_ns(CLOCK_MONOTONIC);
    const std::uint64_t real = clock_ns(CLOCK_REALTIME);
    const std::uint64_t after = ticks();
    if (after >= before && after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, mono, real};
    }
  }
  if (best_width == ~std::uint64_t{0}) best = {ticks(), clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME)};
  return best;
}

}  // namespace detail
}  // namespace v1
}  // namespace edgetrace
