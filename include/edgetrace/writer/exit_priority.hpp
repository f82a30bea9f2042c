// SPDX-License-Identifier: MIT
// At exit, the flusher's final pass gets a CPU: the process's other threads, still running the app's work, are set to the lowest priority (nice 19) until it ends, then set back.
//
// Exit waits at most 1 s for the final pass (writer/process.hpp). With
// more busy threads than cores, the flusher got a share of 2 cores among
// 130 threads: its final pass of a few milliseconds of work took over a
// second, and exit went on without the dump's end record (128 detached
// threads recording on 2 CPUs: 1.5-3 s, no end record, in 4 of 4 runs).
// Lowering the others' priority needs no privilege (raising a nice value
// never does), but putting it back does: an unprivileged process may lower
// a nice value only down to 20 - RLIMIT_NICE (0 by default: not at all)
// without CAP_SYS_NICE. So a thread is lowered only where its old value can
// be restored, and is restored once the pass is over: a later atexit
// handler finds it at its old priority, and so does the rest of the run
// after a traced plugin's dlclose (this pass also runs then). Before, an
// unprivileged app's threads stayed at nice 19 for good.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE
#include <edgetrace/writer/platform/linux.hpp>

#include <cerrno>
#include <cstddef>

#include <sys/resource.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// The threads lowered, with their nice values before. Used by the exiting
/// thread only.
class exit_priority {
 public:
  static constexpr std::size_t max_threads = 4096;
  static constexpr int lowest = 19;

  /// Lowers every thread of the process but the caller and `keep` (the
  /// flusher's tid) to nice 19. Allocates nothing (os::for_each_thread), as
  /// shutdown also runs from quick_exit(). Cost: a /proc/self/task listing
  /// and two system calls per thread (~2 µs each).
  void lower_others(long keep) noexcept {
    const long self = os::thread_id();
    floor_ = restorable_floor();
    os::for_each_thread([&](long tid) { lower(tid, self, keep); });
  }

  /// Puts each lowered thread back (one that ended meanwhile: nothing).
  void restore() noexcept {
    for (std::size_t i = 0; i < count_; ++i)
      ::setpriority(PRIO_PROCESS, static_cast<id_t>(lowered_[i].tid), lowered_[i].nice);
    count_ = 0;
  }

  std::size_t lowered() const noexcept { return count_; }
  /// Threads left at their priority because it could not be put back
  /// (no CAP_SYS_NICE, and below what RLIMIT_NICE allows).
  std::size_t kept() const noexcept { return kept_; }

  /// The lowest nice value this process may set without privilege: -20
  /// with CAP_SYS_NICE (CapEff bit 23 in /proc/self/status), else
  /// 20 - RLIMIT_NICE's soft limit. No allocation (quick_exit runs this).
  static int restorable_floor() noexcept {
    if (os::has_effective_capability(23)) return -20;  // CAP_SYS_NICE
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_NICE, &limit) != 0) return lowest + 1;
    const rlim_t cur = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > 40 ? 40 : limit.rlim_cur;
    return 20 - static_cast<int>(cur);
  }

 private:
  /// Lowers thread `tid` unless it is `self` or `keep`, is at nice 19
  /// already, or could not be put back.
  void lower(long tid, long self, long keep) noexcept {
    if (tid == self || tid == keep || count_ == max_threads) return;
    errno = 0;
    const int before = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if ((before == -1 && errno != 0) || before >= lowest) return;
    if (before < floor_) {
      ++kept_;
      return;
    }
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), lowest) != 0) return;
    lowered_[count_++] = {tid, before};
  }

  struct entry {
    long tid;
    int nice;
  };
  entry lowered_[max_threads] = {};
  std::size_t count_ = 0;
  std::size_t kept_ = 0;
  int floor_ = -20;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
