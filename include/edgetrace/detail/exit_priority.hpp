// SPDX-License-Identifier: MIT
// At exit, the flusher's final pass gets a CPU: the process's other threads, still running the app's work, are set to the lowest priority (nice 19) until it ends, then set back.
//
// Exit waits at most 1 s for the final pass (detail/process.hpp). With
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

#include <cerrno>
#include <cstddef>
#include <cstdlib>

#include <dirent.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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
  /// flusher's tid) to nice 19. Cost: a /proc/self/task listing and two
  /// system calls per thread (~2 µs each).
  void lower_others(long keep) noexcept {
    DIR* tasks = ::opendir("/proc/self/task");
    if (tasks == nullptr) return;
    const long self = ::syscall(SYS_gettid);
    while (const dirent* entry = ::readdir(tasks)) {
      char* end = nullptr;
      const long tid = std::strtol(entry->d_name, &end, 10);
      if (end == entry->d_name || *end != '\0' || tid == self || tid == keep || count_ == max_threads) continue;
      errno = 0;
      const int before = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
      if ((before == -1 && errno != 0) || before >= lowest) continue;
      if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), lowest) != 0) continue;
      lowered_[count_++] = {tid, before};
    }
    ::closedir(tasks);
  }

  /// Puts each lowered thread back (one that ended meanwhile: nothing).
  void restore() noexcept {
    for (std::size_t i = 0; i < count_; ++i)
      ::setpriority(PRIO_PROCESS, static_cast<id_t>(lowered_[i].tid), lowered_[i].nice);
    count_ = 0;
  }

  std::size_t lowered() const noexcept { return count_; }

 private:
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
