// SPDX-License-Identifier: MIT
// The flusher's control: how the app's threads and the flusher hand each other the start, flush requests, the stop, wake-ups and a signal's flush; its state is private.
//
// Two parts. flusher_wake: the futexes (async-signal-safe: a ring that
// fills up inside a signal handler wakes the flusher). flusher_control:
// the rest, under one lock, each method saying who calls it: the flusher
// reports how opening the output went, serves flush tickets cycle by cycle
// and says when it is done; any thread asks for a flush (bounded waits:
// the app never hangs on the tracer); shutdown stops it and waits, at
// most 1 s. Nothing else touches this state.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include <pthread.h>
#include <signal.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// The futexes between the app's threads and the flusher: the flusher
/// sleeps on one (wake), threads whose ring is full on the other (room).
/// Futexes, not condition variables: waking must be async-signal-safe (a
/// ring that fills up inside a signal handler wakes the flusher).
class flusher_wake {
 public:
  /// Wakes the flusher now rather than at its next period. Async-signal-
  /// safe: an atomic add and, if the flusher sleeps, one futex system call.
  void wake_flusher() noexcept {
    wake_word_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst))
      os::futex_wake(wake_word_, 1);
  }

  /// Tells threads waiting for room (wait_for_room) that a ring was
  /// drained. The bump comes after the drain published its read position,
  /// and a waiter counts itself before it reads the word, so either the
  /// waiter sees the new word (and does not sleep) or we see the waiter.
  void wake_room_waiters() noexcept {
    room_word_.fetch_add(1, std::memory_order_seq_cst);
    if (room_waiters_.load(std::memory_order_seq_cst) != 0)
      os::futex_wake(room_word_, INT_MAX);
  }

  /// Sleeps until wake_flusher() is called after `seen` was read, or for
  /// `ns`. Either the waker sees sleeping_ and wakes us, or the
  /// kernel sees the word changed and does not put us to sleep.
  void sleep_until_woken(std::uint32_t seen, std::uint64_t ns) noexcept {
    sleeping_.store(true, std::memory_order_seq_cst);
    os::futex_wait(wake_word_, seen, ns);
    sleeping_.store(false, std::memory_order_relaxed);
  }

  /// EDGETRACE_ON_FULL=wait: sleeps until wake_room_waiters() or for `ns`
  /// unless the room word moved from `seen`; counts itself a waiter first.
  void wait_for_room(std::uint32_t seen, std::uint64_t ns) noexcept {
    os::futex_wait(room_word_, seen, ns);
  }
  std::uint32_t room_word() const noexcept { return room_word_.load(std::memory_order_seq_cst); }
  /// Read before looking for work: a wake-up after this read makes the
  /// sleep return at once.
  std::uint32_t wake_word_seq_cst() const noexcept { return wake_word_.load(std::memory_order_seq_cst); }
  void add_room_waiter() noexcept { room_waiters_.fetch_add(1, std::memory_order_seq_cst); }
  void remove_room_waiter() noexcept { room_waiters_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  /// The flusher sleeps on this word; wake_flusher() bumps it.
  std::atomic<std::uint32_t> wake_word_{0};
  std::atomic<bool> sleeping_{false};
  /// Threads whose ring is full sleep on room_word_, which the flusher
  /// bumps after each ring it drained, waking them if room_waiters_ says
  /// someone sleeps.
  std::atomic<std::uint32_t> room_word_{0};
  std::atomic<std::uint32_t> room_waiters_{0};
};

/// The flusher's control. The flusher calls the `flusher:` methods, and
/// only it; every other method is for any thread.
class flusher_control {
 public:
  /// How opening the output went (the flusher stores with release; the
  /// starting thread waits for anything but `open_pending`, at most open_wait).
  enum open_state : int { open_pending, open_done, open_waiting_for_reader, open_failed };
  static constexpr std::chrono::milliseconds open_wait{1000};

  // ---- wake-ups (flusher_wake)
  void wake_flusher() noexcept { wake_.wake_flusher(); }
  void wake_room_waiters() noexcept { wake_.wake_room_waiters(); }
  /// The flusher's progress: bumped after every ring it drained.
  std::uint32_t room_word() const noexcept { return wake_.room_word(); }
  /// EDGETRACE_ON_FULL=wait, one look (any thread but the flusher): counted
  /// as a room waiter, reads `room()`; below `needed`, wakes the flusher and
  /// sleeps until a ring was drained after the count, or `ns`, and reads
  /// room() again. Returns the room last read. The count comes before the
  /// word is read, and the flusher bumps the word before it looks for
  /// waiters: a drain is never missed.
  template <class Room>
  std::size_t wait_for_drain(std::size_t needed, std::uint64_t ns, Room&& room) noexcept {
    wake_.add_room_waiter();
    const std::uint32_t seen = wake_.room_word();
    std::size_t free = room();
    if (free < needed) {
      wake_.wake_flusher();
      wake_.wait_for_room(seen, ns);
      free = room();
    }
    wake_.remove_room_waiter();
    return free;
  }

  // ---- the flusher's side
  /// flusher: opening the output went `state`; wakes the starting thread.
  void set_open_state(open_state state) noexcept {
    {
      mutex_lock lock(mutex_);
      open_state_.store(state, std::memory_order_release);
    }
    opened_.notify_all();
  }
  /// flusher: sleeps up to `ns` unless a stop or a flush is waiting; a
  /// wake-up after `seen` (wake_word(), read before looking for work) ends
  /// the sleep at once.
  void sleep_if_idle(std::uint32_t seen, std::uint64_t ns) noexcept {
    bool idle;
    {
      mutex_lock lock(mutex_);
      idle = !stop_ && requested_ == completed_;
    }
    if (idle) wake_.sleep_until_woken(seen, ns);
  }
  std::uint32_t wake_word() const noexcept { return wake_.wake_word_seq_cst(); }
  /// flusher, at the start of a cycle: false when told to stop; else the
  /// flush ticket this cycle answers (`serving`) and whether one waits.
  bool next_cycle(std::uint64_t& serving, bool& flushing) noexcept {
    mutex_lock lock(mutex_);
    if (stop_) return false;
    serving = requested_;
    flushing = serving != completed_;
    return true;
  }
  /// flusher, after a cycle: the flushes up to ticket `served` are done.
  void cycle_done(std::uint64_t served) noexcept {
    {
      mutex_lock lock(mutex_);
      completed_ = served;
    }
    flushed_.notify_all();
  }
  /// flusher, at its very end: every flush is answered, shutdown may go on.
  void finished() noexcept {
    {
      mutex_lock lock(mutex_);
      done_ = true;
      completed_ = requested_;
    }
    flushed_.notify_all();
  }

  // ---- any thread
  open_state open_result() const noexcept { return static_cast<open_state>(open_state_.load(std::memory_order_acquire)); }
  bool opened() const noexcept { return open_result() == open_done; }
  /// Set by shutdown before the flusher's final pass (relaxed: a hint).
  bool stopping() const noexcept { return stopping_.load(std::memory_order_relaxed); }
  const std::atomic<bool>& stopping_flag() const noexcept { return stopping_; }

  /// The starting thread: waits (at most open_wait) for the flusher's word
  /// on the output. True when opening failed: the flusher is then told to
  /// stop and woken (it only ends).
  bool wait_open_failed() noexcept {
    {
      mutex_lock lock(mutex_);
      opened_.wait_for(lock.native(), open_wait, [&] { return open_result() != open_pending; });
      if (open_result() != open_failed) return false;
      stop_ = true;
    }
    wake_.wake_flusher();
    return true;
  }
  /// Asks the flusher for a flush (everything pushed before now encoded
  /// and written) and waits at most `bound` for it, or not at all when
  /// `only_if_open` and the output has not opened (nothing could be
  /// written). True when it was done, or the flusher has ended.
  bool request_flush(std::chrono::milliseconds bound, bool only_if_open) noexcept {
    mutex_lock lock(mutex_);
    if (done_) return true;
    const std::uint64_t ticket = ++requested_;
    wake_.wake_flusher();
    if (only_if_open && !opened()) return false;
    return flushed_.wait_for(lock.native(), bound, [&]() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
      return completed_ >= ticket || done_;
    });
  }
  /// EDGETRACE_ON_FULL=wait: a thread gave up waiting for room from a
  /// flusher that did nothing (wait_for_room); the flusher reports the
  /// stall once it ends, and at exit. Any thread (relaxed: a count).
  void note_gave_up() noexcept {
    gave_up_.fetch_add(1, std::memory_order_relaxed);
    wake_.wake_flusher();
  }
  std::uint64_t gave_up_count() const noexcept { return gave_up_.load(std::memory_order_relaxed); }
  /// A wait for the flusher ran out (a library unloading at exit, before
  /// shutdown): shutdown then waits only briefly, so exit stays ~1 s.
  void gave_up_waiting() noexcept { gave_up_waiting_.store(true, std::memory_order_relaxed); }

  /// Shutdown: tells the flusher to stop after its final pass. False when
  /// it was told already (shutdown runs once).
  bool stop() noexcept {
    {
      mutex_lock lock(mutex_);
      if (stop_) return false;
      stop_ = true;
      stopping_.store(true);
    }
    wake_.wake_flusher();
    return true;
  }
  /// Shutdown: waits for the flusher's end, at most 1 s (100 ms when a
  /// wait gave up already). True when it ended.
  bool wait_finished() noexcept {
    mutex_lock lock(mutex_);
    const auto bound = gave_up_waiting_.load(std::memory_order_relaxed) ? std::chrono::milliseconds(100)
                                                                        : std::chrono::milliseconds(1000);
    return flushed_.wait_for(lock.native(), bound, [&]() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { return done_; });
  }
  /// quick_exit: the lock, tried with the runtime's others before exiting.
  mutex& lock_for_exit() noexcept EDGETRACE_DETAIL_RETURN_CAPABILITY(mutex_) { return mutex_; }

 private:
  flusher_wake wake_;
  mutex mutex_;
  std::condition_variable flushed_;  ///< completed_ or done_ changed (mutex_)
  std::condition_variable opened_;   ///< open_state_ changed (mutex_)
  bool stop_ EDGETRACE_DETAIL_GUARDED_BY(mutex_) = false;
  bool done_ EDGETRACE_DETAIL_GUARDED_BY(mutex_) = false;
  std::uint64_t requested_ EDGETRACE_DETAIL_GUARDED_BY(mutex_) = 0;
  std::uint64_t completed_ EDGETRACE_DETAIL_GUARDED_BY(mutex_) = 0;
  std::atomic<int> open_state_{open_pending};
  std::atomic<bool> gave_up_waiting_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> gave_up_{0};
};

/// EDGETRACE_SIGNAL_FLUSH: a SIGINT/SIGTERM handler hands its signal to the
/// flusher and waits for the answer (writer/signals.hpp). Only atomics: the
/// handler may not lock.
class signal_handoff {
 public:
  /// handler: asks the flusher to write everything (`terminates`: the
  /// process ends next, so the stream is ended too) and waits for the
  /// answer at most `max_ms` (polling every millisecond; the flusher looks
  /// at least every EDGETRACE_FLUSH_MS). Async-signal-safe.
  void hand_and_wait(int signo, bool terminates, int max_ms) noexcept {
    done_.store(false, std::memory_order_relaxed);
    terminates_.store(terminates, std::memory_order_relaxed);
    pending_.store(signo, std::memory_order_release);
    os::wait_ms_while(max_ms, [this] { return !done_.load(std::memory_order_acquire); });
  }
  /// flusher: a handler waits for an answer.
  bool pending() const noexcept { return pending_.load(std::memory_order_acquire) != 0; }
  /// flusher: the waiting handler's signal ends the process.
  bool terminates() const noexcept { return terminates_.load(std::memory_order_relaxed); }
  /// flusher: answered; the handler goes on.
  void answered() noexcept {
    pending_.store(0, std::memory_order_relaxed);
    done_.store(true, std::memory_order_release);
  }

 private:
  std::atomic<int> pending_{0};
  std::atomic<bool> terminates_{false};
  std::atomic<bool> done_{false};
};

/// The flusher's thread: started once by start-up (with every signal
/// blocked: the flusher takes none), joined once by shutdown; whether it
/// runs for good, and its ids, for the others.
class flusher_thread {
 public:
  /// Start-up: runs `main(arg)` on a new thread named `name`. 0, or the
  /// pthread_create error.
  int start(void* (*main)(void*), void* arg, const char* name) noexcept {
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    const int error = pthread_create(&thread_, nullptr, main, arg);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
#if defined(__linux__)
    if (error == 0) os::name_thread(thread_, name);
#else
    (void)name;
#endif
    return error;
  }
  /// Start-up, after the output opened: shutdown will join it, signal
  /// handlers may hand it work. Written before the runtime is published.
  void running_for_good() noexcept { running_ = true; }
  bool running() const noexcept { return running_; }
  /// Start-up (a failed open) or shutdown, once: waits for its end.
  void join() noexcept { pthread_join(thread_, nullptr); }
  /// Whether the calling thread is the flusher.
  bool is_current() const noexcept { return pthread_equal(pthread_self(), thread_) != 0; }
  /// flusher, at its start: its kernel thread id (exit leaves its priority alone).
  void set_tid(long tid) noexcept { tid_.store(tid, std::memory_order_release); }
  long tid() const noexcept { return tid_.load(std::memory_order_acquire); }
  /// Its CPU-time clock (what the flusher cost, for benchmarks); false
  /// while it does not run.
  bool cpu_clock(clockid_t& id) const noexcept { return running_ && pthread_getcpuclockid(thread_, &id) == 0; }

 private:
  pthread_t thread_{};
  bool running_ = false;
  std::atomic<long> tid_{0};
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
