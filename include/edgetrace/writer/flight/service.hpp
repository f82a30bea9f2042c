// SPDX-License-Identifier: MIT
// The flight recorder as one service of the runtime (EDGETRACE_MODE=flight): it owns the ring, the snapshot schedule and the hand-offs from other threads, and does their work; the runtime answers its few questions through flight_host.
//
// The memory, the rate limit and the snapshot writer, which need no
// runtime, are in writer/flight/store.hpp; the hand-offs in
// writer/flight/handoffs.hpp; the signal handlers in writer/signals.hpp.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/writer/clock.hpp>
#include <edgetrace/writer/env.hpp>
#include <edgetrace/writer/flight/handoffs.hpp>
#include <edgetrace/writer/flight/store.hpp>
#include <edgetrace/writer/memory_room.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// What the flight service asks of the runtime, on the flusher thread.
class flight_host {
 public:
  /// Everything recorded so far encoded and handed to the ring: the
  /// capture queue, every thread's ring, the flusher clients.
  virtual void encode_everything() = 0;
  /// A snapshot's tail encoded (every announced thread's totals and the end
  /// chunk): its bytes, which the service writes and clears.
  virtual std::vector<unsigned char>& encode_tail() = 0;
  /// CLOCK_MONOTONIC ns of tick `tick` (runtime_stream::trigger_ns).
  virtual std::uint64_t tick_ns(std::uint64_t tick) const = 0;

 protected:
  ~flight_host() = default;
};

/// EDGETRACE_MODE=flight. Any thread: the hand-offs (a snapshot() call, the
/// snapshot signal, a crash) and what the exit report reads; the flusher:
/// the rest (flusher_role).
class flight_service {
 public:
  static constexpr std::size_t path_capacity = flight_recorder::path_capacity;

  explicit flight_service(const settings& config) noexcept : config_(config) {}

  // ------------------------------------------------------------ any thread

  /// The ring is mapped (the flusher maps it at its start).
  bool ready() const noexcept { return recorder_.ready(); }
  /// Before ready(): the ring being faulted in (0: not begun), and how much of it is so far.
  std::size_t faulting_bytes() const noexcept { return recorder_.faulting_bytes(); }
  std::size_t faulted_bytes() const noexcept { return recorder_.faulted_bytes(); }
  /// The name of snapshot `sequence` (the output with ".N" before its extension).
  void snapshot_path(std::uint64_t sequence, char* path) const noexcept { recorder_.snapshot_path(sequence, path); }
  /// edgetrace::snapshot(): handed to the flusher. Async-signal-safe.
  void hand_call(const char* reason, std::size_t size) noexcept { handoffs_.hand_call(reason, size, ticks(config_.clock)); }
  /// EDGETRACE_SNAPSHOT_SIGNAL arrived: counted for the flusher. Async-signal-safe.
  void signal_received() noexcept { handoffs_.signal_received(ticks(config_.clock)); }

  /// A crash handler's part (any thread, async-signal-safe): hands the
  /// snapshot to the flusher and waits for it, bounded; when the flusher
  /// is the crashing thread (`on_flusher`), or does not answer within 1 s,
  /// writes the window from here: what the ring holds, without the records
  /// not yet encoded, thread stats or end chunk. A crash in the run's first
  /// milliseconds may come while the flusher still maps the ring: it gets
  /// up to 1 s while `may_wait()` (the output works).
  template <class MayWait, class Wake>
  void crashed(int signo, bool on_flusher, MayWait&& may_wait, Wake&& wake_flusher) noexcept {
    os::wait_ms_while(1000, [&] { return !recorder_.ready() && !on_flusher && may_wait(); });
    if (!recorder_.ready()) return;
    handoffs_.crashed(signo, ticks(config_.clock));
    if (!on_flusher) {
      wake_flusher();
      handoffs_.wait_for_crash_snapshot();
    }
    if (!handoffs_.claim_crash_snapshot()) return;
    format::snapshot_info info;
    info.sequence = recorder_.next_sequence();
    info.trigger = format::snapshot_trigger::crash;
    info.trigger_tick = handoffs_.crash_tick();
    info.window_last_tick = ticks(config_.clock);
    info.skipped = handoffs_.skipped();
    const char* name = crash_signal_name(handoffs_.crash_signal());
    recorder_.write(info, name, std::strlen(name), nullptr, 0);
    handoffs_.crash_snapshot_written();
  }

  static const char* crash_signal_name(int signo) noexcept {
    switch (signo) {
      case SIGSEGV: return "SIGSEGV";
      case SIGBUS: return "SIGBUS";
      case SIGFPE: return "SIGFPE";
      case SIGABRT: return "SIGABRT";
      default: return "signal";
    }
  }

  // ------------------------------------------------------------ the flusher

  /// Flight mode's start, instead of opening a dump: the rate limit from
  /// the settings, then the ring mapped here, so the app never waits on
  /// its page faults, never larger than the process may still use (in a
  /// memory-limited container that would get the app OOM-killed,
  /// unannounced). False, with `error` saying why: tracing is off.
  bool start(const char* output_path, std::uint32_t writer_id, char* error, std::size_t error_size) noexcept
      EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    schedule_.max = config_.flight_max;
    schedule_.gap_ns = std::uint64_t{config_.flight_gap_ms} * 1000000u;
    schedule_.after_ns = std::uint64_t{config_.flight_after_ms} * 1000000u;
    recorder_.keep_at_most(config_.flight_keep);
    const memory_room room = read_memory_room();
    const std::uint64_t bytes = fitting_bytes(config_.flight_bytes, room);
    if (bytes < config_.flight_bytes) {
      char where[160];
      describe_room(room, where, sizeof where);
      if (bytes == 0) {
        std::snprintf(error, error_size,
                      "EDGETRACE_MODE=flight: not even a 1 MiB ring fits in this process's memory (%s); tracing is off",
                      where);
        return false;
      }
      report("EDGETRACE_FLIGHT_MB=%llu does not fit in this process's memory (%s); the flight ring gets %llu MiB "
             "instead, half of what is left",
             static_cast<unsigned long long>(config_.flight_bytes >> 20), where,
             static_cast<unsigned long long>(bytes >> 20));
    }
    if (!recorder_.start(static_cast<std::size_t>(bytes), output_path, writer_id)) {
      std::snprintf(error, error_size,
                    "EDGETRACE_MODE=flight: cannot map a %llu MiB ring (EDGETRACE_FLIGHT_MB); tracing is off",
                    static_cast<unsigned long long>(bytes >> 20));
      return false;
    }
    if (const char* why = recorder_.unwritable_reason(); *why != '\0')
      report("EDGETRACE_OUTPUT '%s': %s, so no snapshot can be written (not even a crash's) until that changes; "
             "the app runs on",
             output_path, why);
    return true;
  }

  /// How long the flusher may sleep: no later than a pending snapshot's due time.
  std::uint64_t wait(std::uint64_t wait) const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!schedule_.pending) return wait;
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    const std::uint64_t left = schedule_.due_ns > now ? schedule_.due_ns - now : 0;
    return left < wait ? left : wait;
  }

  /// Sealed chunks of the stream (flush_output): into the ring (`out` is
  /// emptied), unless they are a snapshot's tail (left in `out`:
  /// write_snapshot writes them).
  void take(std::vector<unsigned char>& out) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (collecting_tail_) return;
    recorder_.take(out.data(), out.size());
    out.clear();
    if (recorder_.sticky_just_filled())
      report("EDGETRACE_MODE=flight: the definitions and threads of this run passed %zu MiB; snapshots lack the "
             "later ones",
             flight_recorder::sticky_reserve >> 20);
  }

  /// Schedules a snapshot: applies the rate limit (EDGETRACE_FLIGHT_MAX,
  /// EDGETRACE_FLIGHT_GAP_MS; a skipped request is counted in the next
  /// snapshot written), and the snapshot is written
  /// EDGETRACE_FLIGHT_AFTER_MS after `trigger_ns` (crash and exit: at once,
  /// outside the limit). A no-op before the ring is mapped. Cost: a few
  /// compares; the reason (cut to 255 bytes) is copied.
  void request(format::snapshot_trigger why, const char* reason, std::size_t reason_size, std::uint64_t trigger_tick,
               std::uint64_t trigger_ns) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!recorder_.ready()) return;
    const bool immediate = why == format::snapshot_trigger::crash || why == format::snapshot_trigger::exit;
    schedule_.request(why, reason, reason_size, trigger_tick, trigger_ns, immediate);
    handoffs_.set_skipped(schedule_.skipped);
  }

  /// Takes the requests other threads handed over (crash first: it is
  /// written at once), then writes the pending snapshot if its post-trigger
  /// window is over, or at once with `now` (exit).
  void serve(bool now, flight_host& host) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!recorder_.ready()) return;
    watch_room();
    if (!recorder_.ready()) return;
    if (const int signo = handoffs_.crash_signal(); signo != 0) {
      if (handoffs_.claim_crash_snapshot()) {
        const char* name = crash_signal_name(signo);
        const std::uint64_t tick = handoffs_.crash_tick();
        request(format::snapshot_trigger::crash, name, std::strlen(name), tick, host.tick_ns(tick));
        write_snapshot(host);
        handoffs_.crash_snapshot_written();
      }
      return;
    }
    if (const std::uint64_t coalesced = handoffs_.take_coalesced()) {
      schedule_.skip(coalesced);
      handoffs_.set_skipped(schedule_.skipped);
    }
    // The call is taken here, on the flusher (the lambda runs before take_call returns).
    handoffs_.take_call([&](const char* reason, std::size_t size, std::uint64_t tick)
                            EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
      request(format::snapshot_trigger::call, reason, size, tick, host.tick_ns(tick));
    });
    std::uint64_t signal_tick = 0;
    if (const std::uint32_t signals = handoffs_.take_signals(signal_tick)) {
      const char* name = config_.snapshot_signal == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
      request(format::snapshot_trigger::signal, name, std::strlen(name), signal_tick, host.tick_ns(signal_tick));
      if (signals > 1) schedule_.skip(signals - 1);
    }
    if (schedule_.pending && (now || clock_ns(CLOCK_MONOTONIC) >= schedule_.due_ns)) write_snapshot(host);
  }

  /// Writes the pending snapshot: everything recorded so far is encoded
  /// into the ring first, then the dump is the ring plus a tail of thread
  /// totals and an end chunk. One stderr line if it cannot be written.
  void write_snapshot(flight_host& host) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    host.encode_everything();
    collecting_tail_ = true;
    std::vector<unsigned char>& out = host.encode_tail();
    collecting_tail_ = false;
    format::snapshot_info info;
    info.sequence = recorder_.next_sequence();
    info.trigger = schedule_.trigger;
    info.trigger_tick = schedule_.trigger_tick;
    info.window_last_tick = ticks(config_.clock);
    info.skipped = schedule_.skipped;
    const bool immediate =
        schedule_.trigger == format::snapshot_trigger::crash || schedule_.trigger == format::snapshot_trigger::exit;
    // What was recorded after the trigger: the configured window, or less
    // when the run ended first (a pending snapshot written at exit).
    const std::uint64_t requested_ns = schedule_.due_ns - schedule_.after_ns;
    const std::uint64_t recorded_ms = (clock_ns(CLOCK_MONOTONIC) - requested_ns) / 1000000u;
    info.after_ms = immediate ? 0 : (recorded_ms < config_.flight_after_ms ? recorded_ms : config_.flight_after_ms);
    const int error = recorder_.write(info, schedule_.reason, schedule_.reason_size, out.data(), out.size());
    out.clear();
    schedule_.wrote(!immediate);
    handoffs_.set_skipped(0);
    if (error == EEXIST && !schedule_.names_used_up) {
      schedule_.names_used_up = true;  // said once a run
      char path[path_capacity + 128];
      recorder_.snapshot_path(config_.flight_keep, path);
      report("no snapshot written: '%s' and every snapshot before it exist already (EDGETRACE_FLIGHT_KEEP=%u); move "
             "or remove them to record more",
             path, config_.flight_keep);
    } else if (error != 0 && error != EEXIST) {
      char path[path_capacity + 128];
      recorder_.snapshot_path(info.sequence, path);
      report("cannot write the snapshot '%s': %s", path, std::strerror(error));
    }
  }

  /// At exit, once everything recorded was encoded (and the output works):
  /// requests made just before are taken, a pending snapshot is written
  /// now (its window cut short), then the exit snapshot
  /// (EDGETRACE_FLIGHT_AT_EXIT=1).
  void finish(flight_host& host) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    serve(true, host);
    if (config_.flight_at_exit && recorder_.ready()) {
      const std::uint64_t tick = ticks(config_.clock);
      request(format::snapshot_trigger::exit, "exit", 4, tick, host.tick_ns(tick));
      write_snapshot(host);
    }
  }

  /// At exit, the last line: the requests skipped over the run, if any.
  void report_skipped() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (schedule_.skipped_total != 0)
      report("%llu snapshot requests were skipped: covered by a snapshot already waiting for its window, or over "
             "the rate limit (EDGETRACE_FLIGHT_MAX=%u, EDGETRACE_FLIGHT_GAP_MS=%u), %llu of them after the last "
             "snapshot written",
             static_cast<unsigned long long>(schedule_.skipped_total), config_.flight_max, config_.flight_gap_ms,
             static_cast<unsigned long long>(schedule_.skipped));
  }

 private:
  /// The room under the ring, read every 10 ms (~15 us a read: 0.15 % of
  /// one core). The ring was sized by the room when it started; an app
  /// that grows later (a 160 MiB model loaded into a 256 MiB container
  /// whose ring took 127 MiB) was OOM-killed, no snapshot, no line. Now,
  /// once what the process may still use falls below half the ring, the
  /// ring's memory goes back to the app and flight recording stops, with
  /// one line. An app that grows faster than half the ring in 10 ms can
  /// still outrun it.
  void watch_room() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (last_room_ns_ != 0 && now - last_room_ns_ < 10000000u) return;
    last_room_ns_ = now;
    const memory_room room = read_memory_room();
    if (room.free == memory_room::unlimited || room.free >= recorder_.capacity() / 2) return;
    recorder_.give_back_ring();
    char where[160];
    describe_room(room, where, sizeof where);
    report("memory is short (%s): the flight ring's %llu MiB go back to the app and flight recording stops, so no "
           "snapshot will be written (a smaller EDGETRACE_FLIGHT_MB leaves the app more room)",
           where, static_cast<unsigned long long>(recorder_.capacity() >> 20));
  }

  const settings& config_;
  /// The memory and the snapshot writer (writer/flight/store.hpp).
  flight_recorder recorder_;
  /// The rate limit and the snapshot waiting for its window.
  flight_schedule schedule_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role);
  /// snapshot() calls, the snapshot signal and a crash, handed to the
  /// flusher (writer/flight/handoffs.hpp).
  flight_handoffs handoffs_;
  /// Chunks emitted now are a snapshot's tail, not the ring's.
  bool collecting_tail_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = false;
  /// When watch_room last read the room.
  std::uint64_t last_room_ns_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
