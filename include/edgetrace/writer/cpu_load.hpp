// SPDX-License-Identifier: MIT
// Whether the app's threads leave the flusher no CPU of its own: then the flusher's encoding would be taken from them, so they encode their own records instead (writer/help.hpp).
//
// The flusher samples the process's CPU time less its own (getrusage and
// the thread's CPU clock: two system calls) at most every sample_ns, and
// compares that rate with the CPUs in its affinity mask. Its own share is
// left out so that its bursts of catching up do not look like a busy app.
// Other processes on the same CPUs are not seen here; when they crowd the
// flusher out, the rings fill up, which starts helping too
// (help_when_full).
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE
#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <atomic>
#include <cstdint>

#include <sched.h>
#include <time.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

class cpu_load {
 public:
  /// How often the flusher samples (at its next cycle after this).
  static constexpr std::uint64_t sample_ns = 10000000u;

  /// Saturated from when the app's threads use more than `cpus - on_margin`
  /// CPUs until they use less than `cpus - off_margin`: one busy thread on
  /// two CPUs (1.0) stays off, two (about 1.65 while the flusher takes its
  /// share, 1.9 once they help) turn it on and keep it on.
  static constexpr double on_margin = 0.5;
  static constexpr double off_margin = 0.75;

  cpu_load() noexcept {
    cpu_set_t set;
    if (os::process_cpus(set)) cpus_ = CPU_COUNT(&set);
  }

  /// Flusher: takes a sample if sample_ns passed since the last one (the
  /// first at its start: the next decides).
  void sample(std::uint64_t now_ns) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (now_ns - last_ns_ < sample_ns && last_ns_ != 0) return;
    timespec process, own;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &process) != 0 || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &own) != 0)
      return;
    const std::uint64_t process_ns = to_ns(process), own_ns = to_ns(own);
    const std::uint64_t cpu_ns = process_ns > own_ns ? process_ns - own_ns : 0;
    if (last_ns_ != 0 && now_ns > last_ns_) {
      const double used = cpu_ns > last_cpu_ns_ ? static_cast<double>(cpu_ns - last_cpu_ns_) / static_cast<double>(now_ns - last_ns_) : 0;
      const bool was = saturated_.load(std::memory_order_relaxed);
      const bool is = was ? used >= cpus_ - off_margin : used > cpus_ - on_margin;
      if (is != was) saturated_.store(is, std::memory_order_relaxed);
    }
    last_ns_ = now_ns;
    last_cpu_ns_ = cpu_ns;
  }

  /// Any thread: the last sample found every CPU busy (relaxed: a hint).
  bool saturated() const noexcept { return saturated_.load(std::memory_order_relaxed); }
  /// CPUs this process may run on (os::process_cpus at start; the reports name it).
  int cpus() const noexcept { return static_cast<int>(cpus_); }

 private:
  static std::uint64_t to_ns(const timespec& t) noexcept {
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
  }

  double cpus_ = 1;  ///< CPUs this process may run on (set once)
  std::uint64_t last_ns_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  std::uint64_t last_cpu_ns_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  std::atomic<bool> saturated_{false};
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
