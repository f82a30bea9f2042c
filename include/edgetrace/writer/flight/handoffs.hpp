// SPDX-License-Identifier: MIT
// What other threads and signal handlers hand the flusher in flight mode: snapshot() calls, the snapshot signal, a crash; each side's methods, the state private.
//
// Every method for the handing side is async-signal-safe (atomics, a
// memcpy, nanosleep): edgetrace::snapshot() may be called from a signal
// handler, and a crash is one. The flusher takes what was handed over in
// flight_service::serve (writer/flight/service.hpp).
#pragma once

#include <edgetrace/format.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

class flight_handoffs {
 public:
  // ---- edgetrace::snapshot(): one slot. A caller claims it (0 -> 1,
  // acquire), fills reason and tick, publishes it (2, release); the flusher
  // reads them after its acquire of 2, then frees the slot (0, release).
  // Calls that find it taken only count: the one in the slot covers them,
  // and they are reported as skipped.

  /// Any thread: hands a call (its reason is cut to snapshot_reason_max).
  void hand_call(const char* reason, std::size_t size, std::uint64_t tick) noexcept {
    int free_slot = 0;
    if (!call_slot_.compare_exchange_strong(free_slot, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      calls_coalesced_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (size > sizeof call_reason_) size = sizeof call_reason_;
    if (size != 0) std::memcpy(call_reason_, reason, size);
    call_reason_size_ = size;
    call_tick_ = tick;
    call_slot_.store(2, std::memory_order_release);
  }
  /// Flusher: the calls that found the slot taken since it last asked.
  std::uint64_t take_coalesced() noexcept { return calls_coalesced_.exchange(0, std::memory_order_relaxed); }
  /// Flusher: hands the call waiting in the slot, if any, to
  /// `take(reason, size, tick)`, then frees the slot.
  template <class Take>
  void take_call(Take&& take) noexcept {
    if (call_slot_.load(std::memory_order_acquire) != 2) return;
    take(call_reason_, call_reason_size_, call_tick_);
    call_slot_.store(0, std::memory_order_release);
  }

  // ---- EDGETRACE_SNAPSHOT_SIGNAL: a count (the handler adds, the flusher
  // takes; relaxed) and the tick of the latest.

  /// The signal handler.
  void signal_received(std::uint64_t tick) noexcept {
    signal_tick_.store(tick, std::memory_order_relaxed);
    signals_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Flusher: the signals since it last asked, and the latest one's tick.
  std::uint32_t take_signals(std::uint64_t& tick) noexcept {
    const std::uint32_t n = signals_.exchange(0, std::memory_order_relaxed);
    tick = signal_tick_.load(std::memory_order_relaxed);
    return n;
  }

  // ---- a crash: the first crashing thread's signal (stored after its
  // tick). Whoever claims the snapshot (0 -> 1: the flusher when it
  // answers, else the handler) writes it, then says so (2, release).

  /// The crashing thread: its signal and tick (the first signal stays).
  void crashed(int signo, std::uint64_t tick) noexcept {
    crash_tick_.store(tick, std::memory_order_relaxed);
    int none = 0;
    crash_signal_.compare_exchange_strong(none, signo, std::memory_order_acq_rel);
  }
  int crash_signal() const noexcept { return crash_signal_.load(std::memory_order_acquire); }
  std::uint64_t crash_tick() const noexcept { return crash_tick_.load(std::memory_order_relaxed); }
  /// Whoever writes the crash snapshot: false when another claimed it.
  bool claim_crash_snapshot() noexcept {
    int free_state = 0;
    return crash_state_.compare_exchange_strong(free_state, 1, std::memory_order_acq_rel);
  }
  void crash_snapshot_written() noexcept { crash_state_.store(2, std::memory_order_release); }
  /// The crashing thread, when it is not the flusher: waits up to 1 s for
  /// the flusher to claim the snapshot, then up to 5 s for it to be written.
  void wait_for_crash_snapshot() const noexcept {
    os::wait_ms_while(1000, [this] { return crash_state_.load(std::memory_order_acquire) == 0; });
    os::wait_ms_while(5000, [this] { return crash_state_.load(std::memory_order_acquire) == 1; });
  }
  /// The flusher's count of skipped requests, for a snapshot written by a
  /// crash handler (which may not read the flusher's schedule).
  void set_skipped(std::uint64_t skipped) noexcept { crash_skipped_.store(skipped, std::memory_order_relaxed); }
  std::uint64_t skipped() const noexcept { return crash_skipped_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int> call_slot_{0};
  char call_reason_[format::snapshot_reason_max] = {};
  std::size_t call_reason_size_ = 0;
  std::uint64_t call_tick_ = 0;
  std::atomic<std::uint64_t> calls_coalesced_{0};
  std::atomic<std::uint32_t> signals_{0};
  std::atomic<std::uint64_t> signal_tick_{0};
  std::atomic<int> crash_signal_{0};
  std::atomic<std::uint64_t> crash_tick_{0};
  std::atomic<int> crash_state_{0};
  std::atomic<std::uint64_t> crash_skipped_{0};
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
