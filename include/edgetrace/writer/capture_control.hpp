// SPDX-License-Identifier: MIT
// Capture control: every source that holds recording back (pause, EDGETRACE_START_AFTER, EDGETRACE_DURATION, the toggle signal, the dump's room) and the queue of capture records the flusher writes.
//
// Pausing flips the categories' mode bytes, the one thing a scope loads, so
// a paused scope costs what a runtime-disabled one does. This object only
// holds the state and decides; the category registry (writer/registry.hpp)
// turns a decision into mode bytes, and the flusher writes the queue as a
// capture chunk (docs/FORMAT.md, chunk 9). The tick of a change is read
// before recording comes on and after it goes off, so on the thread that
// made the change every recorded span begins inside a window; other threads
// see the flag a few ns later or sooner (a relaxed load), which the
// boundary cannot order.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/writer/clock.hpp>
#include <edgetrace/writer/env.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// The lock of the categories' mode bytes: the category registry
/// (writer/registry.hpp) and capture control. Constant-initialised, so
/// usable from any static initialiser. Taken before unloaded_ranges' lock and the
/// runtime's own locks, never after them.
inline mutex category_mutex;

/// A recording change or a phase, waiting for the flusher to write it.
struct capture_entry {
  format::capture_record type;
  std::uint64_t tick;
  bool on;
  format::capture_reason reason;
  std::string name;  ///< phases
};

/// All capture state, in one place. Guarded by category_mutex except the
/// two counters a signal handler or any thread bumps without it.
class capture_control {
 public:
  /// Recording is on, given that tracing is: no source holds it back.
  bool open_locked() const EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    return !paused_by_api_ && !window_waiting_ && !window_over_ && !signal_paused_ && !out_of_room_;
  }
  /// Still waiting for EDGETRACE_START_AFTER=N marks (mode_count_marks).
  bool counting_marks_locked() const EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    return window_waiting_ && waiting_for_marks_;
  }

  /// Tracing comes on with `config`; the window counts from `now_ns`
  /// (CLOCK_MONOTONIC). Returns why recording is off, if it is.
  format::capture_reason start_locked(const settings& config, std::uint64_t now_ns)
      EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    window_waiting_ = config.start_after_ns != 0 || config.start_after_marks != 0;
    waiting_for_marks_ = config.start_after_marks != 0;
    signal_paused_ = config.toggle_signal != 0;
    started_ns_ = now_ns;
    return window_waiting_ ? format::capture_reason::start_after : format::capture_reason::signal;
  }

  /// A forked child starts a stream of its own (EDGETRACE_FORK=follow):
  /// the parent's queue and times are not its own.
  void restart_locked(std::uint64_t now_ns) EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    pending_.clear();
    started_ns_ = now_ns;
    first_capture_ns_ = 0;
    out_of_room_ = false;  // its own dump, with its own room
    toggles_pending_.store(0, std::memory_order_relaxed);
  }

  /// The dump neared EDGETRACE_MAX_MB or its file system the free-space
  /// floor (writer/output.hpp): recording stops for good. False if it
  /// had already.
  bool stop_for_room_locked() EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    if (out_of_room_) return false;
    out_of_room_ = true;
    return true;
  }

  /// edgetrace::pause()/resume(). False if nothing changed.
  bool set_paused_locked(bool paused) EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    if (paused_by_api_ == paused) return false;
    paused_by_api_ = paused;
    return true;
  }

  /// A mark under EDGETRACE_START_AFTER=N marks; true once it is mark N+1
  /// (the caller then opens the window: mark_window_locked).
  bool count_mark(std::uint64_t marks_to_skip) noexcept {
    return start_marks_seen_.fetch_add(1, std::memory_order_relaxed) >= marks_to_skip;
  }
  /// Opens a window that waits for marks; false if none waits.
  bool mark_window_locked() EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    if (!counting_marks_locked()) return false;
    window_waiting_ = false;
    waiting_for_marks_ = false;
    return true;
  }

  /// The toggle signal's handler: a count, applied by the flusher.
  void toggle_from_signal() noexcept { toggles_pending_.fetch_add(1, std::memory_order_relaxed); }

  /// What only the flusher watches, at `now` (CLOCK_MONOTONIC ns): toggle
  /// signals, EDGETRACE_START_AFTER's and EDGETRACE_DURATION's times. Calls
  /// changed(reason) for each source that changed; returns the ns until the
  /// next deadline (or `longest`), so the flusher wakes up in time for it.
  template <class Changed>
  std::uint64_t check_locked(const settings& config, std::uint64_t now, std::uint64_t longest, Changed&& changed)
      EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    std::uint64_t wait = longest;
    if (toggles_pending_.exchange(0, std::memory_order_relaxed) % 2 != 0) {
      signal_paused_ = !signal_paused_;
      changed(format::capture_reason::signal);
    }
    // True once `deadline` has come; until then the wait shrinks to reach it.
    const auto reached = [&](std::uint64_t deadline) {
      if (now >= deadline) return true;
      wait = std::min(wait, deadline - now);
      return false;
    };
    if (window_waiting_ && !waiting_for_marks_ && config.start_after_ns != 0 &&
        reached(started_ns_ + config.start_after_ns)) {
      window_waiting_ = false;
      changed(format::capture_reason::start_after);
    }
    if (config.duration_ns != 0 && first_capture_ns_ != 0 && !window_over_ &&
        reached(first_capture_ns_ + config.duration_ns)) {
      window_over_ = true;
      changed(format::capture_reason::duration);
    }
    return wait;
  }

  /// Recording is now `on` in a stream this process writes: queues a
  /// recording record if the dump says otherwise. `tick` reads the clock
  /// (before the flags change when it comes on, after when it goes off:
  /// the caller passes apply, which sets the flags).
  template <class Tick, class Apply>
  void log_change_locked(bool on, format::capture_reason reason, Tick&& tick, Apply&& apply)
      EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    if (on && first_capture_ns_ == 0) first_capture_ns_ = clock_ns(CLOCK_MONOTONIC);  // EDGETRACE_DURATION starts
    if (on == logged_on_) {
      apply();
      return;
    }
    std::uint64_t at = on ? tick() : 0;
    apply();
    if (!on) at = tick();
    logged_on_ = on;
    pending_.push_back({format::capture_record::recording, at, on, reason, std::string()});
  }

  /// edgetrace::phase(): queued like a recording change.
  void log_phase_locked(std::uint64_t tick, const char* name, std::size_t size)
      EDGETRACE_DETAIL_REQUIRES(category_mutex) {
    pending_.push_back(
        {format::capture_record::phase, tick, false, format::capture_reason::api, std::string(name, size)});
  }

  /// The flusher takes the queue (swapped with its own, emptied, vector).
  void take_locked(std::vector<capture_entry>& out) EDGETRACE_DETAIL_REQUIRES(category_mutex) { out.swap(pending_); }

 private:
  // Who holds recording back: edgetrace::pause(); EDGETRACE_START_AFTER not
  // reached yet (and whether it counts marks: mode_count_marks);
  // EDGETRACE_DURATION ran out (for good); EDGETRACE_TOGGLE_SIGNAL (off
  // until toggled on); the dump's room ran short (for good).
  bool paused_by_api_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;
  bool window_waiting_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;
  bool waiting_for_marks_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;
  bool window_over_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;
  bool signal_paused_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;
  bool out_of_room_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;
  /// What the dump says now (on at the start).
  bool logged_on_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = true;
  /// CLOCK_MONOTONIC when tracing came on: the origin of
  /// EDGETRACE_START_AFTER's time.
  std::uint64_t started_ns_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = 0;
  /// CLOCK_MONOTONIC when recording first came on, 0 before.
  std::uint64_t first_capture_ns_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = 0;
  /// Written by any thread; the flusher swaps it out (take_locked).
  std::vector<capture_entry> pending_ EDGETRACE_DETAIL_GUARDED_BY(category_mutex);
  /// Marks seen while EDGETRACE_START_AFTER=N marks waits (any mark name).
  std::atomic<std::uint64_t> start_marks_seen_{0};
  /// Toggle signals received and not yet applied (the handler adds, the
  /// flusher takes: relaxed, it is a count and nothing else hangs on it).
  std::atomic<std::uint32_t> toggles_pending_{0};
};

/// The process's one capture control: built on first use in static
/// storage (no heap, never destroyed: threads may pause while static
/// destructors run), since its queue is not constant-initialised and
/// tracing starts from a static initialiser.
inline capture_control& capture() noexcept {
  alignas(capture_control) static unsigned char storage[sizeof(capture_control)];
  static capture_control* const control = new (storage) capture_control;
  return *control;
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
