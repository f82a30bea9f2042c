// SPDX-License-Identifier: MIT
// The per-thread single-producer/single-consumer ring of fixed 24-byte
// records: the owning app thread pushes, the flusher thread drains.
#pragma once

#include <edgetrace/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace edgetrace {
inline namespace v1 {
namespace detail {

/// What a record's `word` holds, told apart by its low two bits. Site
/// descriptors are 8-byte aligned, so a pointer has both bits clear.
enum record_tag : std::uint64_t {
  tag_site = 0,   ///< word = const site*; t_begin/t_end (span) or t/value
  tag_named = 1,  ///< word = name_id << 32 | category index << 2 | 1; a span
  tag_loss = 2,   ///< word = count << 2 | 2; t_begin/t_end = first/last tick
};

/// One complete event as the hot path stores it (24 bytes, one burst of
/// three stores). For spans: begin and end tick; instants: t, 0; counters:
/// t, bit pattern of the double value.
struct record {
  std::uint64_t word;
  std::uint64_t t_begin;
  std::uint64_t t_end;
};
static_assert(sizeof(record) == 24, "a record must stay 24 bytes");

/// Cache line size used for padding (fixed on purpose: see STYLE.md).
inline constexpr std::size_t cache_line = 64;

/// A thread's ring. Lives in its own pre-faulted mapping, followed by the
/// record slots. Fields are grouped by the thread that writes them so the
/// producer and the consumer never write the same cache line.
struct thread_ring {
  // ---- producer line: written by the owning thread only.
  /// Next slot to write. Owner: load relaxed (it wrote it), store release so
  /// the flusher's acquire load sees the record stores before the index.
  std::atomic<std::uint64_t> head{0};
  /// Owner only: head value at which the fast path must stop (cached tail +
  /// capacity, or head itself while a loss is pending).
  std::uint64_t limit = 0;
  record* slots = nullptr;  ///< immutable while the ring is in use
  std::uint64_t mask = 0;   ///< capacity - 1, immutable
  /// Loss not yet written in-band (owner only until the ring is retired;
  /// after `retired` the flusher reads them, ordered by that flag).
  std::uint64_t pending_loss = 0;
  std::uint64_t loss_first = 0;
  std::uint64_t loss_last = 0;
  /// Records dropped because the ring was full. Owner: relaxed load + store
  /// (no read-modify-write needed: one writer). Flusher: relaxed load, only
  /// reported as a statistic.
  std::atomic<std::uint64_t> drop_count{0};

  // ---- consumer line: written by the flusher only.
  /// Next slot to read. Flusher stores release after copying records out,
  /// so the owner's acquire load (slow path) may reuse the slots.
  alignas(cache_line) std::atomic<std::uint64_t> tail{0};
  std::uint32_t thread_id = 0;          ///< flusher only: id in the dump
  std::uint32_t name_version_seen = 0;  ///< flusher only
  std::uint64_t written = 0;            ///< flusher only: records encoded
  bool announced = false;               ///< flusher only: thread chunk written

  // ---- rarely written, shared.
  alignas(cache_line) std::mutex name_mutex;
  char name[64] = {};                           ///< guarded by name_mutex
  std::atomic<std::uint32_t> name_version{0};   ///< bumped under name_mutex
  std::uint64_t os_tid = 0;                     ///< set before publication
  /// Set (release) by the owning thread's exit hook; after the flusher sees
  /// it (acquire) the owner never touches the ring again.
  std::atomic<bool> retired{false};
  std::size_t mapping_size = 0;                 ///< for munmap
  thread_ring* next_free = nullptr;             ///< pool link, pool mutex

  std::uint64_t capacity() const noexcept { return mask + 1; }
};

/// The ring every thread starts with: full (head == limit == 0), so the
/// first push takes the slow path, which installs a real ring. Never written.
inline thread_ring sentinel_ring;

/// The one thread_local the hot path touches. Constant-initialised and
/// trivially destructible, so access is a plain TLS load (no wrapper call).
inline thread_local thread_ring* current_ring EDGETRACE_DETAIL_TLS_MODEL = &sentinel_ring;

/// Slow path of push: first use on a thread, ring full, or a pending loss.
/// Defined in detail/runtime.hpp.
// A template (not `inline`) so it can be noinline without a GCC warning.
template <class = void>
EDGETRACE_DETAIL_NOINLINE void push_slow(std::uint64_t word, std::uint64_t a, std::uint64_t b) noexcept;

/// Appends one record to the calling thread's ring.
/// Cost (fast path): 1 TLS load, 3 loads (head, limit, slots/mask), 1
/// compare-and-branch, 3 stores of the record, 1 release store of head (a
/// plain store on x86-64 and a stlr on aarch64). No RMW, no lock, no call.
EDGETRACE_DETAIL_ALWAYS_INLINE void push(std::uint64_t word, std::uint64_t a, std::uint64_t b) noexcept {
  thread_ring* ring = current_ring;
  const std::uint64_t head = ring->head.load(std::memory_order_relaxed);
  if (EDGETRACE_DETAIL_UNLIKELY(head == ring->limit)) {
    push_slow(word, a, b);
    return;
  }
  record& slot = ring->slots[head & ring->mask];
  slot.word = word;
  slot.t_begin = a;
  slot.t_end = b;
  ring->head.store(head + 1, std::memory_order_release);
}

}  // namespace detail
}  // namespace v1
}  // namespace edgetrace
