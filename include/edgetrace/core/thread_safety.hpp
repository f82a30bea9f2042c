// SPDX-License-Identifier: MIT
// The writer's locking rules in code: clang's -Wthread-safety attributes (no-ops elsewhere) and the annotated mutex the writer locks.
//
// A field marked EDGETRACE_DETAIL_GUARDED_BY(m) may only be touched with m
// held; a function marked EDGETRACE_DETAIL_REQUIRES(m) (by convention named
// *_locked) may only be called with m held. clang checks both at compile
// time (-Wthread-safety, set for the project's own targets); g++ ignores
// them. The wrappers cost nothing over std::mutex: every member is inline
// and forwards.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <chrono>
#include <cstddef>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define EDGETRACE_DETAIL_TSA(x) __attribute__((x))
#else
#define EDGETRACE_DETAIL_TSA(x)
#endif

#define EDGETRACE_DETAIL_CAPABILITY(name) EDGETRACE_DETAIL_TSA(capability(name))
#define EDGETRACE_DETAIL_SCOPED_CAPABILITY EDGETRACE_DETAIL_TSA(scoped_lockable)
#define EDGETRACE_DETAIL_GUARDED_BY(m) EDGETRACE_DETAIL_TSA(guarded_by(m))
#define EDGETRACE_DETAIL_PT_GUARDED_BY(m) EDGETRACE_DETAIL_TSA(pt_guarded_by(m))
#define EDGETRACE_DETAIL_REQUIRES(...) EDGETRACE_DETAIL_TSA(requires_capability(__VA_ARGS__))
#define EDGETRACE_DETAIL_ACQUIRE(...) EDGETRACE_DETAIL_TSA(acquire_capability(__VA_ARGS__))
#define EDGETRACE_DETAIL_RELEASE(...) EDGETRACE_DETAIL_TSA(release_capability(__VA_ARGS__))
#define EDGETRACE_DETAIL_TRY_ACQUIRE(...) EDGETRACE_DETAIL_TSA(try_acquire_capability(__VA_ARGS__))
#define EDGETRACE_DETAIL_EXCLUDES(...) EDGETRACE_DETAIL_TSA(locks_excluded(__VA_ARGS__))
#define EDGETRACE_DETAIL_RETURN_CAPABILITY(x) EDGETRACE_DETAIL_TSA(lock_returned(x))
#define EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS EDGETRACE_DETAIL_TSA(no_thread_safety_analysis)

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// std::mutex with the capability attribute, so clang can check who holds
/// it. Constant-initialised like std::mutex (usable from any static
/// initialiser).
class EDGETRACE_DETAIL_CAPABILITY("mutex") mutex {
 public:
  constexpr mutex() noexcept = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() EDGETRACE_DETAIL_ACQUIRE() { native_.lock(); }
  void unlock() EDGETRACE_DETAIL_RELEASE() { native_.unlock(); }
  bool try_lock() EDGETRACE_DETAIL_TRY_ACQUIRE(true) { return native_.try_lock(); }
  /// For std::condition_variable waits (mutex_lock::native).
  std::mutex& native() noexcept { return native_; }

 private:
  std::mutex native_;
};

/// A set of locks taken in one fixed order (the fork handlers', quick_exit's):
/// `count` mutexes from `locks`, first to last; released last to first.
inline void lock_in_order(mutex* const* locks, std::size_t count) noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  for (std::size_t i = 0; i < count; ++i) locks[i]->lock();
}
inline void unlock_in_reverse(mutex* const* locks, std::size_t count) noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  while (count > 0) locks[--count]->unlock();
}
/// All of them in order, or none: false (none held) when one is held.
inline bool try_lock_in_order(mutex* const* locks, std::size_t count) noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  std::size_t taken = 0;
  while (taken < count && locks[taken]->try_lock()) ++taken;
  if (taken == count) return true;
  unlock_in_reverse(locks, taken);
  return false;
}

/// A role a thread plays, checked by clang like a lock it holds: state
/// only that role may touch is GUARDED_BY it, a function only it may call
/// REQUIRES it, and the function where a thread starts playing it says so
/// with a playing_role for its scope. Costs nothing at run time.
class EDGETRACE_DETAIL_CAPABILITY("role") thread_role {};
class EDGETRACE_DETAIL_SCOPED_CAPABILITY playing_role {
 public:
  explicit playing_role(const thread_role& role) EDGETRACE_DETAIL_ACQUIRE(role) { static_cast<void>(role); }
  ~playing_role() EDGETRACE_DETAIL_RELEASE() {}
  playing_role(const playing_role&) = delete;
  playing_role& operator=(const playing_role&) = delete;
};
/// The flusher's: the thread that starts the runtime plays it until it
/// launches the flusher, then the flusher alone.
inline constexpr thread_role flusher_role{};

/// Holds a mutex for a scope (std::lock_guard's job), and can hand a
/// std::unique_lock to a condition variable's wait, which releases and
/// takes the mutex back before it returns (the analysis sees it held
/// throughout, which is what the code after the wait may assume).
class EDGETRACE_DETAIL_SCOPED_CAPABILITY mutex_lock {
 public:
  explicit mutex_lock(mutex& m) EDGETRACE_DETAIL_ACQUIRE(m) : lock_(m.native()) {}
  ~mutex_lock() EDGETRACE_DETAIL_RELEASE() {}
  mutex_lock(const mutex_lock&) = delete;
  mutex_lock& operator=(const mutex_lock&) = delete;

  /// condition.wait_for(lock.native(), ...)
  std::unique_lock<std::mutex>& native() noexcept { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
