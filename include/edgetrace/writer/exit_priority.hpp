// SPDX-License-Identifier: MIT
// At exit, the flusher's final pass gets a CPU: the process's other threads, still running the app's work, are set to the lowest priority (nice 19) until it ends, then set back.
//
// Exit waits at most 1 s for the final pass (writer/process.hpp). With
// more busy threads than cores, the flusher got a share of 2 cores among
// 130 threads: its final pass of a few milliseconds of work took over a
// second, and exit went on without the dump's end record (128 detached
// threads recording on 2 CPUs: 1.5-3 s, no end record, in 4 of 4 runs).
// Lowering the others' priority needs no privilege (raising a nice value
// never does), costs them nothing they would keep (the process is
// exiting), and is undone once the pass is over: a later atexit handler
// that waits for one of them finds it at its old priority.
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
    os::for_each_thread([&](long tid) { lower(tid, self, keep); });
  }

  /// Puts each lowered thread back (one that ended meanwhile: nothing).
  void restore() noexcept {
    for (std::size_t i = 0; i < count_; ++i)
      ::setpriority(PRIO_PROCESS, static_cast<id_t>(lowered_[i].tid), lowered_[i].nice);
    count_ = 0;
  }

  std::size_t lowered() const noexcept { return count_; }

 private:
  /// Lowers thread `tid` unless it is `self` or `keep`, or is at nice 19
  /// already.
  void lower(long tid, long self, long keep) noexcept {
    if (tid == self || tid == keep || count_ == max_threads) return;
    errno = 0;
    const int before = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if ((before == -1 && errno != 0) || before >= lowest) return;
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), lowest) != 0) return;
    lowered_[count_++] = {tid, before};
  }

  struct entry {
    long tid;
    int nice;
  };
  entry lowered_[max_threads] = {};
  std::size_t count_ = 0;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
