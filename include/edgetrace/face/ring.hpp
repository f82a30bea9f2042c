// SPDX-License-Identifier: MIT
// The per-thread single-producer/single-consumer ring of fixed 24-byte
// records: the owning app thread pushes, the flusher thread drains.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/core/atomic.hpp>
#include <edgetrace/face/spsc.hpp>

#include <cstddef>
#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// What a record's `word` holds, told apart by its low two bits. Site
/// descriptors are 8-byte aligned, so a pointer has both bits clear.
enum record_tag : std::uint64_t {
  tag_site = 0,   ///< word = const site*; t_begin/t_end (span) or t/value
  tag_named = 1,  ///< word = name_id << 32 | category index << 2 | 1; a span
  tag_loss = 2,   ///< word = count << 2 | 2; t_begin/t_end = first/last tick
  tag_more = 3,   ///< word = 3; t_begin = the previous record's second value (an allocation's bytes)
};

/// One complete event as the hot path stores it (24 bytes, one burst of
/// three stores). Spans: begin and end tick; instants: t, 0; counters: t,
/// bit pattern of the double value.
struct record {
  std::uint64_t word;
  std::uint64_t t_begin;
  std::uint64_t t_end;
};
static_assert(sizeof(record) == 24, "a record must stay 24 bytes");

/// A thread's ring over the slots [begin, end): an SPSC ring (face/spsc.hpp;
/// refresh_room, consume and unread work on it). Positions are pointers, so
/// the fast path needs no index arithmetic. The producer publishes its write
/// position, the consumer its read position; both are normalised so that
/// `end` means `begin`. One slot always stays free, so equal positions mean
/// "empty", never "full": usable capacity is (end - begin) - 1.
///
/// Fields are grouped by the thread that writes them, so producer and
/// consumer never write the same cache line.
struct thread_ring {
  // ---- producer line: written by the owning thread only.
  /// Where the next record goes. Owner: own() (relaxed: it wrote it),
  /// publish() (release) after the record's stores, so the flusher's
  /// published() (acquire) sees complete records. May equal `end` until the
  /// slow path wraps it.
  write_position<record> write_pos{nullptr};
  /// Owner only: the fast path writes while write_pos != write_limit. Set
  /// by the slow path from the consumer's position (or to write_pos itself
  /// while a loss is pending, to route every push to the slow path).
  record* write_limit = nullptr;
  record* begin = nullptr;  ///< immutable while in use
  record* end = nullptr;    ///< immutable while in use
  /// Loss not yet written in-band (owner only until the ring is retired;
  /// after `retired` the flusher reads them, ordered by that flag).
  std::uint64_t pending_loss = 0;
  std::uint64_t loss_first = 0;
  std::uint64_t loss_last = 0;
  /// Records dropped because the ring was full. Owner: relaxed load + store
  /// (one writer, so no read-modify-write). Flusher: relaxed load.
  atomic_cell<std::uint64_t> drop_count{0};
  /// EDGETRACE_RECORD spans refused as absurd (record_measured). Same
  /// discipline as drop_count.
  atomic_cell<std::uint64_t> rejected{0};
  /// Owner only (EDGETRACE_ON_FULL=wait): set when this thread last gave
  /// up waiting for room (the flusher made no progress for
  /// max_wait_without_progress_ns), with the flusher's progress word then
  /// (flusher_wake::room_word). While that word has not moved, a full ring
  /// drops at once instead of waiting again; once the flusher does anything,
  /// the thread waits again (a stall that ended costs nothing more).
  bool gave_up = false;
  std::uint32_t gave_up_word = 0;
  /// Records dropped after such a give-up (part of drop_count; same
  /// discipline): the exit report's "while the output stalled".
  atomic_cell<std::uint64_t> stall_dropped{0};
  /// Owner only (EDGETRACE_ON_FULL=wait, writer/help.hpp): how long its
  /// last help window was, and when it ended (CLOCK_MONOTONIC ns; 0: none).
  std::uint64_t help_window_ns = 0;
  std::uint64_t help_ended_ns = 0;

  // ---- consumer line: written by the consumer: whoever holds the ring's
  // drain lock (writer/encoding/ring_encoding.hpp), the flusher or, helping under
  // overload, the owning thread itself (writer/help.hpp).
  /// Next record to read (normalised). Consumer: hand_back() (release)
  /// after it has copied records out; owner: freed() (acquire, slow path)
  /// before reusing them.
  alignas(cache_line) read_position<record> read_pos{nullptr};
  std::uint32_t thread_id = 0;          ///< id in the dump: the flusher sets it under the drain lock
  std::uint32_t name_version_seen = 0;  ///< flusher only
  /// Records encoded: the drain lock's holder adds (relaxed load + store),
  /// the flusher reads it any time for the totals (relaxed).
  atomic_cell<std::uint64_t> written{0};
  /// Of those, the ones the owning thread encoded itself (writer/help.hpp):
  /// added by it under the drain lock, read by the flusher (relaxed).
  atomic_cell<std::uint64_t> helped{0};
  std::uint64_t unloaded_dropped = 0;   ///< flusher only: records of unloaded libraries dropped
  /// Flusher only: records dropped after recording stopped near the dump's
  /// bound, for want of room below it (stream::records_below_bound).
  std::uint64_t room_dropped = 0;
  /// The stream generation (chunk_encoder) its thread chunk was written
  /// in; 0: never. Flusher only, under the drain lock.
  std::uint32_t announced_in = 0;
  std::uint64_t signal_dropped = 0;     ///< flusher only: signal_drops written so far
  /// Flusher only: the dropped total (chunk_encoder::dropped_records) the
  /// last thread stats chunk stated: a drop is in the file within one
  /// cycle, though its in-band loss record waits for the thread's next push.
  std::uint64_t dropped_stated = 0;
  /// Flusher only: the write position its last cycle saw on a ring whose
  /// thread encodes its own records: unchanged a cycle later, the thread
  /// has stopped recording and the flusher takes what it left.
  record* help_write_seen = nullptr;
  /// Flusher only: a complete sweep found the lock held and comes back to
  /// this ring after the others (runtime::drain_later).
  bool drain_later = false;

  // ---- rarely written, shared.
  alignas(cache_line) spin_lock name_mutex;  ///< short copies only: the name below
  char name[64] = {};                          ///< guarded by name_mutex
  atomic_cell<std::uint32_t> name_version{0};  ///< bumped under name_mutex
  std::uint64_t os_tid = 0;                    ///< set before the ring is published
  /// Set (release) by the owning thread's exit hook; once the flusher sees
  /// it (acquire) the owner never touches the ring again.
  atomic_cell<bool> retired{false};
  /// Records a signal handler issued on the owning thread while the thread
  /// itself was inside push (they cannot be stored: the slot is in use).
  /// The handler adds (an atomic add: it may interrupt the owner anywhere);
  /// the owner's slow path, or the flusher once `retired`, takes them with
  /// an exchange and counts them as dropped, in-band.
  atomic_cell<std::uint64_t> signal_drops{0};
  /// Next attached ring (the runtime's lock-free list): set by the
  /// attaching thread before the ring is published, changed later only by
  /// the flusher when it unlinks a neighbour.
  atomic_cell<thread_ring*> next_attached{nullptr};
  std::size_t mapping_size = 0;  ///< for munmap
  /// EDGETRACE_ON_FULL=wait: until when (CLOCK_MONOTONIC ns) the owning
  /// thread encodes its own records (writer/help.hpp), so the flusher
  /// leaves them to it. The owner stores, the flusher loads (relaxed: a
  /// hint; the drain lock decides who encodes).
  atomic_cell<std::uint64_t> help_until_ns{0};

  std::size_t slot_count() const noexcept { return static_cast<std::size_t>(end - begin); }

  /// edgetrace::set_thread_name, on the owning thread: the name (cut to 63
  /// bytes) and a new version, which the flusher compares with the one it
  /// announced (chunk_encoder::announce_thread).
  void set_name(const char* text) noexcept {
    name_mutex.lock();
    std::size_t i = 0;
    for (; i + 1 < sizeof name && text[i] != '\0'; ++i) name[i] = text[i];
    for (; i < sizeof name; ++i) name[i] = '\0';
    name_version.store(name_version.load(order_relaxed) + 1, order_release);
    name_mutex.unlock();
  }

  /// Makes the ring empty and ready for a (new) owner. Not concurrent.
  void reset(record* slots, std::size_t count) noexcept {
    begin = slots;
    end = slots + count;
    write_pos.store(slots, order_relaxed);
    read_pos.store(slots, order_relaxed);
    write_limit = end - 1;
  }
};

/// The ring every thread starts with: write_pos == write_limit (both null),
/// so the first push takes the slow path, which installs a real ring. Never
/// written.
inline thread_ring sentinel_ring;
/// Where push parks current_ring while it writes a record: like the
/// sentinel, it sends a push to the slow path, which then knows that it
/// interrupted this thread's own push (a signal handler) and counts the
/// record as dropped. Never written.
inline thread_ring busy_ring;

/// The one thread_local the hot path touches. Constant-initialised and
/// trivially destructible, so access is a plain TLS load (no wrapper call).
inline thread_local thread_ring* current_ring EDGETRACE_DETAIL_TLS_MODEL = &sentinel_ring;

/// Slow path of push: first use on a thread, ring wrap, ring full, or a
/// pending loss. Defined in writer/runtime.hpp. A template (not `inline`) so
/// it can be noinline without a GCC warning.
template <class = void>
EDGETRACE_DETAIL_NOINLINE void push_slow(thread_ring* ring, std::uint64_t word, std::uint64_t a,
                                         std::uint64_t b) noexcept;
#if EDGETRACE_SEPARATE_RUNTIME
extern template void push_slow<void>(thread_ring* ring, std::uint64_t word, std::uint64_t a, std::uint64_t b) noexcept;
#endif

/// Appends one record to the calling thread's ring.
/// Cost (fast path, x86-64): TLS pointer (2 instructions), load write_pos,
/// compare with write_limit and branch, 2 TLS stores (the signal guard
/// below), 3 stores (the compiler often pairs two into one 16-byte store),
/// lea + plain store to publish (release is free on x86-64; a stlr on
/// aarch64). No RMW, no lock, no call.
///
/// Async-signal-safe: from before it reads write_pos until it has published,
/// the thread's ring pointer is busy_ring, so a signal handler that records
/// on this thread in that window takes push_slow, which counts the
/// handler's record as dropped instead of touching the slot this push is
/// filling (docs/TRUST.md, "Signal handlers"). A handler that runs
/// before the busy store finishes its push first, so this one reads the
/// position it left. The signal fences only keep the compiler from moving
/// or merging those TLS stores; they emit no instruction.
EDGETRACE_DETAIL_ALWAYS_INLINE void push(std::uint64_t word, std::uint64_t a, std::uint64_t b) noexcept {
  thread_ring* ring = current_ring;
  current_ring = &busy_ring;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  record* slot = ring->write_pos.own();
  if (EDGETRACE_DETAIL_UNLIKELY(slot == ring->write_limit)) {
    push_slow(ring, word, a, b);  // restores current_ring
    return;
  }
  slot->word = word;
  slot->t_begin = a;
  slot->t_end = b;
  ring->write_pos.publish(slot + 1);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  current_ring = ring;
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
