// SPDX-License-Identifier: MIT
// The runtime's flight-recorder part (EDGETRACE_MODE=flight): the flusher's snapshot scheduling and writing, the hand-offs from other threads, and the snapshot and crash signal handlers.
//
// The memory, the rate limit and the writer that need no runtime are in
// writer/flight/store.hpp; this room holds the runtime's members declared in
// writer/flusher.hpp and writer/stream.hpp.
#pragma once

#include <edgetrace/writer/flight/store.hpp>
#include <edgetrace/writer/flusher.hpp>
#include <edgetrace/writer/memory_room.hpp>
#include <edgetrace/writer/signals.hpp>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>

#include <pthread.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
/// Flight mode's start, instead of open_output (flusher): maps the ring
/// here, so the app never waits on its page faults, and opens nothing.
inline void runtime::start_flight() noexcept {
  file_.disown();  // no dump is open: nothing to check before writes
  schedule_.max = config_.flight_max;
  schedule_.gap_ns = std::uint64_t{config_.flight_gap_ms} * 1000000u;
  schedule_.after_ns = std::uint64_t{config_.flight_after_ms} * 1000000u;
  flight_.keep_at_most(config_.flight_keep);
  // The app's start goes on now: it does not wait for the ring's page
  // faults (its records wait in the threads' rings meanwhile).
  control_.set_open_state(flusher_control::open_done);
  // Never fault in more than the process may use: in a memory-limited
  // container that gets the app OOM-killed, unannounced.
  const memory_room room = read_memory_room();
  const std::uint64_t bytes = fitting_bytes(config_.flight_bytes, room);
  if (bytes < config_.flight_bytes) {
    char where[160];
    describe_room(room, where, sizeof where);
    if (bytes == 0) {
      char message[400];
      std::snprintf(message, sizeof message,
                    "EDGETRACE_MODE=flight: not even a 1 MiB ring fits in this process's memory (%s); tracing is off",
                    where);
      file_.fail_with(message);
      return;
    }
    report("EDGETRACE_FLIGHT_MB=%llu does not fit in this process's memory (%s); the flight ring gets %llu MiB "
           "instead, half of what is left",
           static_cast<unsigned long long>(config_.flight_bytes >> 20), where,
           static_cast<unsigned long long>(bytes >> 20));
  }
  if (!flight_.start(static_cast<std::size_t>(bytes), file_.path(), encoder_.writer_id())) {
    char message[200];
    std::snprintf(message, sizeof message,
                  "EDGETRACE_MODE=flight: cannot map a %llu MiB ring (EDGETRACE_FLIGHT_MB); tracing is off",
                  static_cast<unsigned long long>(bytes >> 20));
    file_.fail_with(message);
    return;
  }
  if (const char* why = flight_.unwritable_reason(); *why != '\0')
    report("EDGETRACE_OUTPUT '%s': %s, so no snapshot can be written (not even a crash's) until that changes; "
           "the app runs on",
           file_.path(), why);
  // This thread blocks every signal (open_and_launch); a fault of its
  // own must still reach the crash handler, not kill the process unseen.
  sigset_t crash;
  sigemptyset(&crash);
  for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT}) sigaddset(&crash, signo);
  pthread_sigmask(SIG_UNBLOCK, &crash, nullptr);
  flush_output();  // the process chunk and first calibration: the first sticky chunks
}

/// How long the flusher may sleep: no later than a pending snapshot's due time.
inline std::uint64_t runtime::flight_wait(std::uint64_t wait) const noexcept {
  if (!schedule_.pending) return wait;
  const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
  const std::uint64_t left = schedule_.due_ns > now ? schedule_.due_ns - now : 0;
  return left < wait ? left : wait;
}

/// Takes the requests other threads handed over (crash first: it is
/// written at once), then writes the pending snapshot if its post-trigger
/// window is over, or at once with `now` (exit). Flusher only.
inline void runtime::serve_flight(bool now) {
  if (!flight_.ready() || file_.failed()) return;
  watch_flight_room();
  if (!flight_.ready()) return;
  if (const int signo = handoffs_.crash_signal(); signo != 0) {
    if (handoffs_.claim_crash_snapshot()) {
      const char* name = crash_signal_name(signo);
      request_snapshot(format::snapshot_trigger::crash, name, std::strlen(name), handoffs_.crash_tick());
      write_snapshot();
      handoffs_.crash_snapshot_written();
    }
    return;
  }
  if (const std::uint64_t coalesced = handoffs_.take_coalesced()) {
    schedule_.skip(coalesced);
    handoffs_.set_skipped(schedule_.skipped);
  }
  // The call is taken here, on the flusher (the lambda runs before take_call returns).
  handoffs_.take_call([this](const char* reason, std::size_t size, std::uint64_t tick)
                          EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    request_snapshot(format::snapshot_trigger::call, reason, size, tick);
  });
  std::uint64_t signal_tick = 0;
  if (const std::uint32_t signals = handoffs_.take_signals(signal_tick)) {
    const char* name = config_.snapshot_signal == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
    request_snapshot(format::snapshot_trigger::signal, name, std::strlen(name), signal_tick);
    if (signals > 1) schedule_.skip(signals - 1);
  }
  if (schedule_.pending && (now || clock_ns(CLOCK_MONOTONIC) >= schedule_.due_ns)) write_snapshot();
}

/// The room under the flight ring, read every 10 ms (~15 us a read: 0.15 %
/// of one core). The ring was sized by the room when it started; an app
/// that grows later (a 160 MiB model loaded into a 256 MiB container
/// whose ring took 127 MiB) was OOM-killed, no snapshot, no line. Now,
/// once what the process may still use falls below half the ring, the
/// ring's memory goes back to the app and flight recording stops, with one
/// line. An app that grows faster than half the ring in 10 ms can still
/// outrun it. Flusher only.
inline void runtime::watch_flight_room() {
  const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
  if (last_flight_room_ns_ != 0 && now - last_flight_room_ns_ < 10000000u) return;
  last_flight_room_ns_ = now;
  const memory_room room = read_memory_room();
  if (room.free == memory_room::unlimited || room.free >= flight_.capacity() / 2) return;
  flight_.give_back_ring();
  char where[160];
  describe_room(room, where, sizeof where);
  report("memory is short (%s): the flight ring's %llu MiB go back to the app and flight recording stops, so no "
         "snapshot will be written (a smaller EDGETRACE_FLIGHT_MB leaves the app more room)",
         where, static_cast<unsigned long long>(flight_.capacity() >> 20));
}

/// Writes the pending snapshot (flusher): everything recorded so far is
/// encoded into the ring first, then the dump is the ring plus a tail of
/// thread totals and an end chunk. One stderr line if it cannot be written.
inline void runtime::write_snapshot() {
  write_capture();
  drain_all(sweep::everything);
  poll_clients(poll_reason::flush);
  flush_output();
  collecting_tail_ = true;
  for (thread_ring* ring = rings_.first(); ring != nullptr;
       ring = ring->next_attached.load(std::memory_order_acquire))
    if (encoder_.announced(*ring)) encoder_.write_thread_stats(*ring);
  encoder_.write_end();
  collecting_tail_ = false;
  format::snapshot_info info;
  info.sequence = flight_.next_sequence();
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
  std::vector<unsigned char>& out = encoder_.output();
  const int error = flight_.write(info, schedule_.reason, schedule_.reason_size, out.data(), out.size());
  out.clear();
  schedule_.wrote(!immediate);
  handoffs_.set_skipped(0);
  if (error == EEXIST && !schedule_.names_used_up) {
    schedule_.names_used_up = true;  // said once a run
    char path[dump_file::path_capacity + 128];
    flight_.snapshot_path(config_.flight_keep, path);
    report("no snapshot written: '%s' and every snapshot before it exist already (EDGETRACE_FLIGHT_KEEP=%u); move "
           "or remove them to record more",
           path, config_.flight_keep);
  } else if (error != 0 && error != EEXIST) {
    char path[dump_file::path_capacity + 128];
    flight_.snapshot_path(info.sequence, path);
    report("cannot write the snapshot '%s': %s", path, std::strerror(error));
  }
}

/// At exit (flusher, before the stream's end): requests made just before
/// are taken, a pending snapshot is written now (its window cut short),
/// then the exit snapshot (EDGETRACE_FLIGHT_AT_EXIT=1), and skipped
/// requests are reported.
inline void runtime::finish_flight() {
  take_rate_pair(false);  // a run that ends before the flusher's first cycle: its snapshot still has a rate
  write_capture();
  drain_all(sweep::everything);
  serve_flight(true);
  if (config_.flight_at_exit && flight_.ready() && !file_.failed()) {
    request_snapshot(format::snapshot_trigger::exit, "exit", 4, ticks(config_.clock));
    write_snapshot();
  }
  // A trigger whose name no span or mark had could never fire: a typo
  // should not pass for a quiet run.
  for (std::size_t i = 0; triggers_set() && i < triggers_.size(); ++i) {
    const char* closest = nullptr;
    if (!triggers_.never_matched(i, closest)) continue;
    if (closest != nullptr)
      report("EDGETRACE_TRIGGER '%s' never fired: no span or mark named '%s' was recorded (did you mean '%s'?)",
             triggers_.text(i), triggers_.name(i), closest);
    else
      report("EDGETRACE_TRIGGER '%s' never fired: no span or mark named '%s' was recorded", triggers_.text(i),
             triggers_.name(i));
  }
  if (schedule_.skipped_total != 0)
    report("%llu snapshot requests were skipped: covered by a snapshot already waiting for its window, or over "
           "the rate limit (EDGETRACE_FLIGHT_MAX=%u, EDGETRACE_FLIGHT_GAP_MS=%u), %llu of them after the last "
           "snapshot written",
           static_cast<unsigned long long>(schedule_.skipped_total), config_.flight_max, config_.flight_gap_ms,
           static_cast<unsigned long long>(schedule_.skipped));
}

/// edgetrace::snapshot() on any thread: hands the request to the
/// flusher. Async-signal-safe (atomics, a memcpy, a futex wake).
inline void runtime::hand_snapshot_call(const char* reason, std::size_t size) noexcept {
  handoffs_.hand_call(reason, size, ticks(config_.clock));
  control_.wake_flusher();
}

/// A crash handler's part (any thread, async-signal-safe): hands the
/// snapshot to the flusher and waits for it, bounded; when the flusher is
/// the thread that crashed, or does not answer within 1 s, writes the
/// window from here: what the ring holds, without the records not yet
/// encoded, thread stats or end chunk.
inline void runtime::snapshot_on_crash(int signo) noexcept {
  if (!config_.flight) return;
  // A crash in the run's first milliseconds may come while the flusher
  // still maps the ring: give it up to 1 s (it cannot be the flusher).
  os::wait_ms_while(1000, [this] { return !flight_.ready() && !file_.failed() && !flusher_.is_current(); });
  if (!flight_.ready()) return;
  handoffs_.crashed(signo, ticks(config_.clock));
  if (!flusher_.is_current()) {
    control_.wake_flusher();
    handoffs_.wait_for_crash_snapshot();
  }
  if (!handoffs_.claim_crash_snapshot()) return;
  format::snapshot_info info;
  info.sequence = flight_.next_sequence();
  info.trigger = format::snapshot_trigger::crash;
  info.trigger_tick = handoffs_.crash_tick();
  info.window_last_tick = ticks(config_.clock);
  info.skipped = handoffs_.skipped();
  const char* name = crash_signal_name(handoffs_.crash_signal());
  flight_.write(info, name, std::strlen(name), nullptr, 0);
  handoffs_.crash_snapshot_written();
}

inline const char* runtime::crash_signal_name(int signo) noexcept {
  switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

// ------------------------------------------------------------ flight recorder signals

/// The snapshot signal's disposition before its handler (restore_flight_handlers).
inline struct sigaction previous_snapshot_action;

/// EDGETRACE_SNAPSHOT_SIGNAL's handler (runtime_stream::snapshot_signal_received).
inline void snapshot_signal_handler(int, siginfo_t*, void*) noexcept {
  const int saved_errno = errno;
  if (runtime* rt = owned_runtime()) rt->snapshot_signal_received();
  errno = saved_errno;
}

/// Installs the snapshot signal's handler; false (and one stderr line) when
/// the signal is ignored (SIG_IGN inherited: left alone, as for
/// EDGETRACE_TOGGLE_SIGNAL) or already toggles recording.
inline bool install_snapshot_signal(const settings& config) noexcept {
  const char* name = config.snapshot_signal == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
  if (config.snapshot_signal == config.toggle_signal) {
    report("EDGETRACE_SNAPSHOT_SIGNAL: %s already toggles recording (EDGETRACE_TOGGLE_SIGNAL); no snapshot signal",
           name);
    return false;
  }
  if (signal_ignored(config.snapshot_signal)) {
    report("EDGETRACE_SNAPSHOT_SIGNAL: %s is ignored in this process (SIG_IGN inherited); no snapshot signal", name);
    return false;
  }
  install_handler(config.snapshot_signal, &snapshot_signal_handler, SA_RESTART, &previous_snapshot_action);
  return true;
}

/// The signals a flight recorder writes a crash snapshot on, and the
/// dispositions that were there before (written once at start-up, before
/// the handler can run).
inline constexpr int crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE};
inline struct sigaction previous_crash_actions[std::size(crash_signals)];

/// Whether `action` is a handler of the app's (not the default, not ignored).
inline bool app_handles(const struct sigaction& action) noexcept {
  if ((action.sa_flags & SA_SIGINFO) != 0) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

/// Runs the app's handler `action` as the kernel would have, with its mask.
inline void call_previous(const struct sigaction& action, int signo, siginfo_t* info, void* context) noexcept {
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &action.sa_mask, &before);
  if ((action.sa_flags & SA_SIGINFO) != 0)
    action.sa_sigaction(signo, info, context);
  else
    action.sa_handler(signo);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

/// Crash handler (flight mode): the snapshot (runtime::snapshot_on_crash),
/// then the previous disposition is put back and the signal takes its
/// course: a fault returns to the faulting instruction, which faults again
/// under the old disposition (a core dump, or the app's or a sanitizer's
/// handler); a sent signal (kill, raise, abort) is raised again, pending
/// until this handler returns. So the process dies as it would have.
/// A fault (SIGSEGV, SIGBUS) with a handler the app installed before
/// edgetrace goes to that handler first: see the body.
/// Async-signal-safe: atomics, nanosleep, open/write/close, sigaction, raise.
inline void crash_handler(int signo, siginfo_t* info, void* context) noexcept {
  const int saved_errno = errno;
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  std::size_t slot = 0;
  while (slot + 1 < std::size(crash_signals) && crash_signals[slot] != signo) ++slot;
  const struct sigaction& previous = previous_crash_actions[slot];
  if (info != nullptr && info->si_code > 0 && (signo == SIGSEGV || signo == SIGBUS) && app_handles(previous)) {
    // A fault, and the app had a handler of its own before edgetrace
    // started: it goes first, for it may repair the fault (memory mapped
    // lazily, a garbage collector's barrier, a JIT's guard page) and
    // return, and then nothing crashed. Still installed after it: handled
    // (the instruction runs again; a real crash comes back here). It put
    // the default action back to die of the fault: a crash, snapshot now.
    call_previous(previous, signo, info, context);
    struct sigaction now;
    const bool still_ours = sigaction(signo, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 &&
                            now.sa_sigaction == &crash_handler;
    if (!still_ours && owns_runtime(rt) && rt->flusher_running()) rt->snapshot_on_crash(signo);
    errno = saved_errno;
    return;
  }
  if (owns_runtime(rt) && rt->flusher_running()) rt->snapshot_on_crash(signo);
  sigaction(signo, &previous, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(signo);  // sent, not a fault: send it again
  errno = saved_errno;
}

/// The stream's end: the crash and snapshot handlers go where they are
/// still installed (signals.hpp, restore_handler).
inline void restore_flight_handlers(int snapshot_signal) noexcept {
  for (std::size_t i = 0; i < std::size(crash_signals); ++i)
    restore_handler(crash_signals[i], &crash_handler, previous_crash_actions[i]);
  if (snapshot_signal != 0) restore_handler(snapshot_signal, &snapshot_signal_handler, previous_snapshot_action);
}

/// Installs the crash handler on its own stack if the thread has one
/// (sigaltstack: a stack overflow needs it), leaving ignored signals alone.
inline void install_crash_handlers() noexcept {
  for (std::size_t i = 0; i < std::size(crash_signals); ++i)
    if (!signal_ignored(crash_signals[i]))
      install_handler(crash_signals[i], &crash_handler, SA_ONSTACK, &previous_crash_actions[i]);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
