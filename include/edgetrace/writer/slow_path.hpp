// SPDX-License-Identifier: MIT
// The slow path: attaching a thread to a ring, the thread-exit hook, room in a full ring (wait or drop), and the pushes that do not fit the inline fast path.
//
// Everything here runs on the app's threads, possibly in a signal handler:
// no lock, no allocation, only async-signal-safe system calls. The fast
// path itself is in face/ring.hpp; the flusher that drains and recycles
// the rings in writer/flusher.hpp.
#pragma once

#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/face/tick.hpp>
#include <edgetrace/writer/flusher.hpp>
#include <edgetrace/writer/help.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>

#include <pthread.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

// ------------------------------------------------------------ fork follow

/// A forked child under EDGETRACE_FORK=follow: its fork handler
/// (writer/process.hpp) stores the restart here, and the child's next
/// traced event, intern() or flush() runs it (once: it clears this). Null
/// otherwise. Injected rather than called by name: the process room sits
/// above this one.
inline std::atomic<void (*)()> pending_restart{nullptr};

inline void restart_if_forked() noexcept {
  if (EDGETRACE_DETAIL_UNLIKELY(pending_restart.load(std::memory_order_acquire) != nullptr)) {
    if (void (*restart)() = pending_restart.load(std::memory_order_acquire)) restart();
  }
}

// ------------------------------------------------------------ threads

/// The ring this thread attached (null before, and after its exit hook).
/// Slow path only: the hot path knows nothing but current_ring.
inline thread_local thread_ring* attached_ring = nullptr;
/// True while this thread attaches: a signal handler's record in that
/// window is counted here and moved to the ring once it is attached.
inline thread_local bool attaching = false;
inline thread_local atomic_cell<std::uint64_t> attach_signal_drops{0};

/// Hands the calling thread's ring to the flusher for good: its last
/// records, its pending loss and its totals get written, then the ring is
/// recycled. A later record on the thread attaches a new ring.
/// `and_exit_hook`: the thread-exit hook is called off first (a thread
/// that retires its ring before it exits).
inline void retire_ring(runtime* rt, thread_ring* ring, bool and_exit_hook) noexcept {
  current_ring = &sentinel_ring;
  attached_ring = nullptr;
  rt->retire(ring, and_exit_hook);
}

inline void on_thread_exit(void* ring_pointer) noexcept {
  // No signal handler may record on this thread from here on: it would
  // attach a new ring and re-arm this hook, round after round of the
  // thread's key destructors. A signal sent to the process goes to another
  // thread; one sent to this thread while it ends waits for nothing.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  runtime* rt = owned_runtime();
  if (rt == nullptr) {  // a forked child's copy: never drained here
    current_ring = &sentinel_ring;
    attached_ring = nullptr;
    return;
  }
  retire_ring(rt, static_cast<thread_ring*>(ring_pointer), false);
  rt->let_retire();
}


/// Set on a thread whose ring could not be mapped: its events are ignored
/// without another attempt (slow path only, so a plain thread_local).
inline thread_local bool attach_failed = false;

/// Attaches a ring to the calling thread. No lock, no allocation, only
/// async-signal-safe system calls (mmap when the pool is empty, prctl for
/// the name, gettid), so it may run inside a signal handler: the pool and
/// the attached list are lock-free. pthread_setspecific (the exit hook) is
/// a plain store in glibc for the low key numbers edgetrace gets at start.
inline thread_ring* attach_thread() noexcept {
  if (attach_failed) return nullptr;
  restart_if_forked();
  runtime* rt = owned_runtime();
  if (rt == nullptr || !rt->active())  // shutting down: the flusher would never drain it
    return nullptr;
  attaching = true;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  thread_ring* ring = rt->take_ring();
  if (ring == nullptr) {
    // Out of memory (or address space): this thread goes untraced. Say it
    // once per process, and never retry on this thread (a failing mmap per
    // event would be a system call on the hot path).
    attach_failed = true;
    attaching = false;
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true))
      report("cannot map a %llu KiB ring for thread %ld: %s; that thread (and any other that fails) is not traced",
             static_cast<unsigned long long>(rt->config().ring_records * sizeof(record) / 1024),
             os::thread_id(), std::strerror(errno));
    return nullptr;
  }
  ring->os_tid = static_cast<std::uint64_t>(os::thread_id());
  os::thread_name(ring->name, sizeof ring->name);
  rt->attach(ring);
  attached_ring = ring;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  attaching = false;
  ring->signal_drops.fetch_add(attach_signal_drops.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
  return ring;
}

/// attach_thread outside a push (start-up, naming a thread): current_ring
/// then points at the new ring.
inline thread_ring* attach_current_thread() noexcept {
  thread_ring* ring = attach_thread();
  if (ring != nullptr) current_ring = ring;
  return ring;
}

// ------------------------------------------------------------ a full ring


/// How much of one look's wait counts toward max_wait_without_progress_ns:
/// a look is due every millisecond, so one that took longer was not
/// waiting on the flusher. The whole process was stopped (SIGSTOP, Ctrl-Z,
/// a debugger, `docker pause`) or the thread did not get a CPU (more
/// threads than cores): neither is the output's stall, and neither may
/// make the thread give up on its first look after it.
inline constexpr std::uint64_t max_wait_step_ns = 10000000u;

/// EDGETRACE_ON_FULL=wait: the calling thread's ring has fewer than
/// `needed` free slots. Encodes its own records if it can (writer/help.hpp);
/// else wakes the flusher and sleeps (a futex, so a signal handler may
/// wait too) until it has drained this ring, handing the flusher the
/// thread's time slice when every core is busy producing. Returns the
/// room then; less than `needed` when waiting cannot help: drop mode, the
/// flusher itself, no flusher draining (output not open yet, shutting
/// down), or a flusher that did nothing at all (its progress word, bumped
/// for every ring it drains and every hand-over it takes, did not move)
/// for max_wait_without_progress_ns of this thread's waiting. A flusher
/// that drains other rings first, or that gets a core only now and then
/// (hundreds of threads on two cores), is progress: the thread waits on.
/// After a give-up the thread drops at once while the word stays where it
/// was, and waits again as soon as it moves: one stall costs the app one
/// bounded wait per thread, and nothing once the output takes data again.
inline std::size_t wait_for_room(thread_ring& ring, std::size_t needed) noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (rt == nullptr || rt->config().drop_when_full || on_flusher_thread || !owns_runtime(rt)) return 0;
  std::uint32_t progress = rt->progress_word();
  if (ring.gave_up) {
    if (progress == ring.gave_up_word) return 0;  // gave up, and the flusher has done nothing since
    ring.gave_up = false;
  }
  record* read = ring.read_pos.load(std::memory_order_relaxed);
  std::uint64_t looked_ns = clock_ns(CLOCK_MONOTONIC);
  std::uint64_t waited_ns = 0;
  std::size_t room = 0;
  for (;;) {
    if (rt->stopping() || !rt->opened()) return room;
    if (rt->may_help()) {
      room = help_when_full(*rt, ring);
      if (room >= needed) return room;
    }
    // 1 ms at most: then the conditions above are looked at again.
    room = rt->wait_for_drain(needed, 1000000, [&] { return refresh_room(ring); });
    if (room >= needed) return room;
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    const std::uint64_t step = now - looked_ns;
    looked_ns = now;
    record* const moved = ring.read_pos.load(std::memory_order_relaxed);
    const std::uint32_t word = rt->progress_word();
    if (moved != read || word != progress) {
      read = moved;
      progress = word;
      waited_ns = 0;
    } else if ((waited_ns += step < max_wait_step_ns ? step : max_wait_step_ns) >= max_wait_without_progress_ns) {
      ring.gave_up = true;
      ring.gave_up_word = progress;
      rt->note_gave_up();
      return room;
    }
  }
}

/// Counts `count` records dropped at `tick`: in-band (the loss record the
/// next successful push writes first) and in the thread's total.
inline void note_drops(thread_ring& ring, std::uint64_t tick, std::uint64_t count) noexcept {
  if (ring.pending_loss == 0) {
    ring.loss_first = tick;
    // The ring just filled up: wake the flusher now rather than at its next
    // period (one wake per overflow episode, not per dropped record).
    if (runtime* rt = owned_runtime()) rt->wake_flusher();
  }
  ring.loss_last = tick;
  ring.pending_loss += count;
  ring.drop_count.store(ring.drop_count.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
  if (ring.gave_up)
    ring.stall_dropped.store(ring.stall_dropped.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
}

/// The slow path's common part. `ring` is what the push found in
/// current_ring before parking it on busy_ring (so a signal handler that
/// records meanwhile lands here with busy_ring). Returns the slot for the
/// first of `count` records, after the pending loss record if there is one
/// (written, not yet published), and sets `ring` to the ring to publish
/// in. Null when they cannot be stored: counted as dropped at `tick`, and
/// `ring` says where current_ring must point again (null: leave it alone,
/// the interrupted push of this thread restores it).
inline record* reserve_slots(thread_ring*& ring, std::size_t count, std::uint64_t tick) noexcept {
  if (ring == &busy_ring) {
    // A signal handler inside this thread's own push: the slot is in use.
    // The flusher writes the count in-band (runtime::drain).
    (attached_ring != nullptr ? attached_ring->signal_drops : attach_signal_drops)
        .fetch_add(count, std::memory_order_relaxed);
    ring = nullptr;
    return nullptr;
  }
  if (ring == &sentinel_ring) {
    // First use; or a signal handler attached this thread after the push
    // read the sentinel and before it parked on busy_ring (the handler has
    // finished: use its ring).
    ring = attached_ring != nullptr ? attached_ring : attach_thread();
    if (ring == nullptr) {
      ring = &sentinel_ring;
      return nullptr;
    }
  }
  const std::size_t needed = count + (ring->pending_loss != 0 ? 1 : 0);
  std::size_t room = refresh_room(*ring);
  if (room < needed) room = wait_for_room(*ring, needed);
  record* pos = ring->write_pos.load(std::memory_order_relaxed);
  if (room < needed) {
    note_drops(*ring, tick, count);
    ring->write_limit = pos;  // keep taking the slow path until there is room
    return nullptr;
  }
  if (ring->pending_loss != 0) {
    *pos = record{pack_loss(ring->pending_loss), ring->loss_first, ring->loss_last};
    ring->pending_loss = 0;
    if (++pos == ring->end) pos = ring->begin;
  }
  return pos;
}

/// Ends a slow path: the thread's ring pointer back from the sentinel.
inline void leave_slow_path(thread_ring* ring) noexcept {
  if (ring == nullptr) return;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  current_ring = ring;
}

/// Publishes everything written before `next` (one release store), and
/// sets the next slow path no later than the ring's half-way mark: a ring
/// that fills past half wakes the flusher then, while half of it is still
/// free, instead of at the flusher's next period, when it may be full.
/// Costs the fast path nothing (only write_limit moves).
/// In help mode (a ring that filled up under EDGETRACE_ON_FULL=wait,
/// writer/help.hpp) the thread encodes its records here instead, every
/// help_batch records (keep_helping).
inline void publish_slots(thread_ring& ring, record* next) noexcept {
  ring.write_pos.store(next, std::memory_order_release);
  const std::size_t room = refresh_room(ring);
  const std::size_t half = ring.slot_count() / 2;
  runtime* const rt = the_runtime.load(std::memory_order_acquire);
  const bool ours = owns_runtime(rt);
  if (ours && keep_helping(*rt, ring)) return;
  if (room > half) {
    record* pos = ring.write_pos.load(std::memory_order_relaxed);
    if (room - half < static_cast<std::size_t>(ring.write_limit - pos)) ring.write_limit = pos + (room - half);
  } else if (ours) {
    rt->wake_flusher();
  }
}

template <class>
EDGETRACE_DETAIL_NOINLINE void push_slow(thread_ring* ring, std::uint64_t word, std::uint64_t a,
                                         std::uint64_t b) noexcept {
  const bool is_span = tag_of(word) == tag_named ||
                       (tag_of(word) == tag_site && site_of(word)->kind == format::site_kind::span);
  if (record* pos = reserve_slots(ring, 1, is_span ? b : a)) {
    *pos = record{word, a, b};
    publish_slots(*ring, pos + 1);
  }
  leave_slow_path(ring);
}

/// Pushes an allocation and its bytes as two adjacent records, published
/// together: the flusher never sees one without the other, and a full ring
/// drops both (counted as two).
inline void push_alloc_pair(std::uint64_t word, std::uint64_t tick, std::uint64_t address, std::uint64_t bytes) noexcept {
  thread_ring* ring = current_ring;
  current_ring = &busy_ring;  // as push does: a signal handler's record meanwhile is counted, not written
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (record* pos = reserve_slots(ring, 2, tick)) {
    *pos = record{word, tick, address};
    if (++pos == ring->end) pos = ring->begin;
    *pos = record{tag_more, bytes, 0};
    publish_slots(*ring, pos + 1);
  }
  leave_slow_path(ring);
}

// ------------------------------------------------------------ spans measured elsewhere

/// How far outside the stream's time a recorded span may lie: it must
/// start no earlier than this before tracing started in the process (the
/// stream's first calibration pair) and end no later than this after the
/// EDGETRACE_RECORD call. A span is recorded after it was measured, so
/// anything else is a wrong value (another clock's time, a duration that
/// wrapped, an uninitialised field), which would otherwise stretch the
/// trace over years. docs/ANALYSIS.md, "Spans measured elsewhere".
inline constexpr std::uint64_t record_slack_ns = 1000000000u;


/// Counts a refused EDGETRACE_RECORD on the calling thread (thread stats,
/// written at thread exit and at the end) and says so once per process.
inline void reject_measured(std::uint64_t start_ns, std::uint64_t duration_ns, std::uint64_t now_ns) noexcept {
  thread_ring* ring = current_ring;
  if (ring == &sentinel_ring) ring = attach_current_thread();
  if (ring != nullptr && ring != &busy_ring)  // busy: a signal handler inside a push (not counted)
    ring->rejected.store(ring->rejected.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true, std::memory_order_relaxed))
    report("EDGETRACE_RECORD: a span starting at %llu ns and lasting %llu ns (CLOCK_MONOTONIC, now %llu ns) "
           "lies outside this process's trace by more than 1 s; it is not recorded (this and later ones are "
           "counted in the dump's thread stats)",
           static_cast<unsigned long long>(start_ns), static_cast<unsigned long long>(duration_ns),
           static_cast<unsigned long long>(now_ns));
}

/// EDGETRACE_RECORD's ticks of a span timed elsewhere (false: refused or
/// nothing sound to record). Its CLOCK_MONOTONIC ns become ticks of the
/// recording clock: with CLOCK_MONOTONIC as the clock
/// they are ticks already; with the CPU counter, the tick rate is measured
/// between the stream's first calibration pair and a (tick, ns) pair read
/// now, and the start is placed that many ticks before now. The reader maps
/// ticks back through its own fit of the calibration pairs, so a recorded
/// span lands within about a microsecond of where it was measured (the
/// rate's error times the distance from now; tests/writer/capture_test.cpp).
/// A span that starts more than record_slack_ns before tracing started, or
/// ends more than that after now, is refused and counted (reject_measured).
/// `clock`: the category's recording clock (not clock_off).
inline bool measured_ticks(std::uint64_t start_ns, std::uint64_t duration_ns, std::uint8_t clock, std::uint64_t& begin,
                           std::uint64_t& end) noexcept {
  const runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (rt == nullptr) return false;
  const calibration_pair& first = rt->first_calibration();
  // (tick, ns) now: the tightest of three bracketed reads (a preemption
  // between the two clock reads would otherwise shift the span).
  std::uint64_t tick_now = 0, ns_now = 0, width = ~std::uint64_t{0};
  if (clock != clock_counter) {
    ns_now = clock_ns(CLOCK_MONOTONIC);
  } else {
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t before = ticks();
      const std::uint64_t ns = clock_ns(CLOCK_MONOTONIC);
      const std::uint64_t after = ticks();
      if (after >= before && after - before < width) {
        width = after - before;
        tick_now = before + (after - before) / 2;
        ns_now = ns;
      }
    }
  }
  if (ns_now == 0) return false;  // no bracketed read held: nothing sound to compare with
  // No sum here can wrap: a start near 0 fails the first test, one near
  // UINT64_MAX the second, a huge (or wrapped) duration the third.
  const std::uint64_t earliest = first.monotonic_ns > record_slack_ns ? first.monotonic_ns - record_slack_ns : 0;
  if (start_ns < earliest || start_ns > ns_now + record_slack_ns ||
      duration_ns > ns_now + record_slack_ns - start_ns) {
    reject_measured(start_ns, duration_ns, ns_now);
    return false;
  }
  if (clock != clock_counter) {
    begin = start_ns;
    end = start_ns + duration_ns;
    return true;
  }
  if (tick_now <= first.tick || ns_now <= first.monotonic_ns) return false;  // a clock went back: nothing sound to record
  const double per_ns = static_cast<double>(tick_now - first.tick) / static_cast<double>(ns_now - first.monotonic_ns);
  // Signed: a start "in the future" (less than record_slack_ns) lands
  // after now rather than wrapping.
  const double back = (static_cast<double>(ns_now) - static_cast<double>(start_ns)) * per_ns;
  if (back >= static_cast<double>(tick_now)) return false;  // before the counter's zero: not a CLOCK_MONOTONIC time
  begin = tick_now - static_cast<std::uint64_t>(static_cast<std::int64_t>(back));
  end = begin + static_cast<std::uint64_t>(static_cast<double>(duration_ns) * per_ns + 0.5);
  return true;
}

/// EDGETRACE_RECORD: pushes a span timed elsewhere (measured_ticks).
/// The last span this thread mapped from ns to ticks (EDGETRACE_RECORD or
/// EDGETRACE_RECORD_ARG): a call for the same start and duration takes the
/// same ticks, so a span's arguments land at its own middle whatever the
/// order of the calls. Mapped apart, each by its own bracketed read, the
/// two differed by the brackets' width, and under qemu by more than half a
/// 50 us span. A signal handler's call in between only makes the next call
/// map again (`valid` is cleared first, set last).
struct measured_mapping {
  std::uint64_t start_ns, duration_ns, begin, end;
  std::uint8_t clock;
  bool valid;
};
inline measured_mapping& last_measured() noexcept {
  static thread_local measured_mapping mapping{0, 0, 0, 0, 0, false};
  return mapping;
}

/// measured_ticks(), or the ticks this thread last mapped the same span to.
inline bool measured_ticks_again(std::uint64_t start_ns, std::uint64_t duration_ns, std::uint8_t clock,
                                 std::uint64_t& begin, std::uint64_t& end) noexcept {
  measured_mapping& m = last_measured();
  if (m.valid && m.start_ns == start_ns && m.duration_ns == duration_ns && m.clock == clock) {
    begin = m.begin;
    end = m.end;
    return true;
  }
  if (!measured_ticks(start_ns, duration_ns, clock, begin, end)) return false;
  m.valid = false;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  m.start_ns = start_ns;
  m.duration_ns = duration_ns;
  m.begin = begin;
  m.end = end;
  m.clock = clock;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  m.valid = true;
  return true;
}

inline void push_measured(std::uint64_t word, std::uint64_t start_ns, std::uint64_t duration_ns,
                          std::uint8_t clock) noexcept {
  std::uint64_t begin, end;
  if (measured_ticks_again(start_ns, duration_ns, clock, begin, end)) push(word, begin, end);
}

/// EDGETRACE_RECORD_ARG: argument record `word` = `value` of the span
/// measured from `start_ns` for `duration_ns`, pushed at the span's middle,
/// with the span's own ticks when this thread just mapped it
/// (measured_ticks_again); else mapped apart, its bracket some 30-150 ticks
/// wide, which the middle stays clear of. Refused and counted as
/// push_measured refuses the span.
inline void push_measured_arg(std::uint64_t word, std::uint64_t value, std::uint64_t start_ns,
                              std::uint64_t duration_ns, std::uint8_t clock) noexcept {
  std::uint64_t begin, end;
  if (measured_ticks_again(start_ns, duration_ns, clock, begin, end)) push(word, begin + (end - begin) / 2, value);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
