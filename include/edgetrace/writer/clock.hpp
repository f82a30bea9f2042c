// SPDX-License-Identifier: MIT
// The tick source of the hot path and the calibration pairs that let the
// reader turn ticks into nanoseconds offline.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/face/tick.hpp>
#include <edgetrace/format.hpp>

#include <cstdint>
#include <ctime>

#if defined(EDGETRACE_DETAIL_CLOCK_TSC)
#include <cpuid.h>
#endif

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

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
/// reader then needs two calibration pairs, which the flusher writes before
/// any timed chunk: runtime.hpp, take_rate_pair).
///
/// x86-64 says 0 on purpose. A stated TSC rate exists only on some parts
/// (CPUID leaf 0x15 on recent Intel, leaf 0x40000010 under VMware or a KVM
/// configured to offer it; not on AMD, not in the KVM guests of CI), and
/// CPUID is a VM exit: 12-30 us per call measured in such a guest, on the
/// app's start-up path. The second calibration pair gives the rate
/// everywhere, ~1 ms after start and before any event is written.
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
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
