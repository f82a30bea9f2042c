// SPDX-License-Identifier: MIT
// What the app's threads and the flusher share around the rings: mapping, the pool of spare rings and the list of attached rings.
//
// Attaching a thread takes no lock and allocates nothing, so a thread's
// first record may come from a signal handler (writer/slow_path.hpp); the
// flusher (writer/flusher.hpp) refills the pool, walks the list and
// recycles the rings of exited threads.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/writer/encoding/ring_encoding.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Builds an empty ring and its ring_encoding at `memory` (a mapping of
/// `bytes`) over the `count` slots at `slots`: a new mapping, or a drained
/// ring recycled (destroy_ring first).
inline thread_ring* build_ring(void* memory, std::size_t bytes, record* slots, std::size_t count) noexcept {
  auto* ring = new (memory) thread_ring;
  new (&encoding_of(*ring)) ring_encoding(ring_encoding::payload_for(count * sizeof(record)));
  ring->reset(slots, count);
  ring->mapping_size = bytes;
  return ring;
}

inline void destroy_ring(thread_ring* ring) noexcept {
  encoding_of(*ring).~ring_encoding();
  ring->~thread_ring();
}

/// The page-aligned head of a ring of `records` slots: the thread_ring,
/// its ring_encoding and chunk buffers (encoding_of).
inline std::size_t ring_header_bytes(std::uint64_t records) noexcept {
  const std::size_t payload = ring_encoding::payload_for(static_cast<std::size_t>(records) * sizeof(record));
  return (encoding_offset + ring_encoding::footprint(payload) + 4095) & ~std::size_t{4095};
}

/// What a ring of `records` slots maps: its head, then the slots.
inline std::size_t ring_mapping_bytes(std::uint64_t records) noexcept {
  return ring_header_bytes(records) + static_cast<std::size_t>(records) * sizeof(record);
}

/// Maps a ring of `records` slots: the thread_ring, its ring_encoding and
/// chunk buffers (encoding_of), then the slots, page-aligned.
inline thread_ring* map_ring(std::uint64_t records) noexcept {
  const std::size_t slots = static_cast<std::size_t>(records) * sizeof(record);
  const std::size_t header = ring_header_bytes(records);
  const std::size_t bytes = header + slots;
  // Every page is faulted in here, off the hot path: one page at a time,
  // not with MAP_POPULATE, which holds the process's memory map lock for
  // the whole ring. A hundred threads starting at once each populated
  // their ring so, one after the other, and every page fault of the
  // process (the flusher's included) queued behind them: with those
  // threads preempted mid-populate, the flusher's final pass missed the
  // exit bound. A page fault holds the lock only for itself.
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  for (std::size_t at = 0; at < bytes; at += 4096) static_cast<volatile unsigned char*>(memory)[at] = 0;
  return build_ring(memory, bytes, reinterpret_cast<record*>(static_cast<unsigned char*>(memory) + header),
                    static_cast<std::size_t>(records));
}

inline void unmap_ring(thread_ring* ring) noexcept {
  const std::size_t bytes = ring->mapping_size;
  destroy_ring(ring);
  ::munmap(ring, bytes);
}

/// The pool of pre-faulted spare rings and the list of attached rings.
class ring_pool {
 public:
  /// Pre-faulted spares, one per slot.
  static constexpr std::size_t pool_slots = 2;
  /// An exiting thread waits a little while more than this many rings of
  /// exited threads wait for the flusher.
  static constexpr std::uint32_t retiring_limit = 2;

  explicit ring_pool(std::uint64_t records) noexcept : records_(records) {}

  /// No room said: rings of the size asked for.
  static constexpr std::uint64_t unlimited = ~std::uint64_t{0};
  /// A new ring maps at most this share of the room (1/16): rings shrink
  /// as the room does, and never take all of it.
  static constexpr std::uint64_t room_share = 16;
  /// The smallest ring (6 KiB of slots, 22 KiB mapped with its chunk
  /// buffers): 2,000 threads in 44 MiB. A thread that records faster than
  /// it drains drops, counted.
  static constexpr std::uint64_t min_records = 256;

  /// The bytes rings may still map (a quarter of what the process may
  /// still use, memory_room: read when the runtime starts and by the
  /// flusher every second), less what was mapped since.
  void set_room(std::uint64_t bytes) noexcept { room_.store(bytes, std::memory_order_relaxed); }
  /// set_room from what the process may still use (`free`, unlimited when
  /// nothing says): a quarter of it. The app needs the rest to grow (a
  /// flight ring takes half of what is left when it starts), and a thread
  /// the app starts costs it memory too (2,000 threads: 68 MiB untraced).
  void set_room_from_free(std::uint64_t free) noexcept { set_room(free == unlimited ? unlimited : free / 4); }
  /// The slots a new ring gets in `room`: the size asked for while a
  /// sixteenth of the room holds it, else as many as fit in that sixteenth
  /// (at least min_records, at most the size asked for).
  std::uint64_t records_for(std::uint64_t room) const noexcept {
    const std::uint64_t full = ring_mapping_bytes(records_);
    if (room == unlimited || room / room_share >= full) return records_;
    const std::uint64_t records =
        static_cast<std::uint64_t>(static_cast<double>(records_) * static_cast<double>(room / room_share) /
                                   static_cast<double>(full));
    return records < min_records ? std::min(min_records, records_) : records;
  }
  /// The size asked for (EDGETRACE_BUFFER_KB), in slots.
  std::uint64_t records_asked() const noexcept { return records_; }
  /// The fewest slots a ring was mapped with (records_asked() while none
  /// was smaller).
  std::uint64_t smallest_mapped() const noexcept { return smallest_.load(std::memory_order_relaxed); }

  /// Takes a pre-faulted ring from the pool, or maps one if the pool ran
  /// dry. Lock-free and async-signal-safe (mmap is a system call).
  thread_ring* take() noexcept {
    for (std::atomic<thread_ring*>& slot : pool_) {
      if (slot.load(std::memory_order_relaxed) == nullptr) continue;
      // Acquire pairs with offer's release.
      if (thread_ring* ring = slot.exchange(nullptr, std::memory_order_acquire)) return ring;
    }
    return map_within_room();
  }

  /// Maps spares into empty pool slots, unless exited threads' rings are
  /// about to come back (thread churn would otherwise map and unmap a ring
  /// per thread) or `stopping` (exit must not wait on page faults).
  void refill(const std::atomic<bool>& stopping) noexcept {
    for (std::atomic<thread_ring*>& slot : pool_) {
      if (stopping.load(std::memory_order_relaxed)) return;
      if (retiring_.load(std::memory_order_relaxed) != 0) return;
      if (slot.load(std::memory_order_relaxed) != nullptr) continue;
      thread_ring* ring = map_within_room();
      if (ring == nullptr) return;
      if (!offer(ring)) {
        unmap_ring(ring);
        return;
      }
    }
  }

  /// Puts a drained ring back in the pool (empty, ready for a new thread),
  /// or unmaps it if the pool is full.
  void recycle(thread_ring* ring) noexcept {
    const std::size_t bytes = ring->mapping_size;
    record* slots = ring->begin;
    const std::size_t count = ring->slot_count();
    destroy_ring(ring);
    ring = build_ring(ring, bytes, slots, count);
    if (!offer(ring)) unmap_ring(ring);
  }

  bool offer(thread_ring* ring) noexcept {
    for (std::atomic<thread_ring*>& slot : pool_) {
      thread_ring* empty = nullptr;
      // Release: a thread that takes the ring sees it fully reset.
      if (slot.compare_exchange_strong(empty, ring, std::memory_order_release, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  /// Pushes a thread's new ring onto the attached list (CAS on the head,
  /// acq_rel: a walker that reaches the ring sees its fields).
  void attach(thread_ring* ring) noexcept {
    thread_ring* head = attached_.load(std::memory_order_relaxed);
    do ring->next_attached.store(head, std::memory_order_relaxed);
    while (!attached_.compare_exchange_weak(head, ring, std::memory_order_acq_rel, std::memory_order_relaxed));
  }

  /// The newest attached ring; follow next_attached (acquire) from it.
  thread_ring* first() const noexcept { return attached_.load(std::memory_order_acquire); }

  /// Removes `ring` from the attached list; `previous` is the ring before
  /// it in the flusher's walk (null: it was the head then). Returns the
  /// ring now before the next one. Flusher only, under mutex().
  thread_ring* unlink(thread_ring* previous, thread_ring* ring) noexcept EDGETRACE_DETAIL_REQUIRES(mutex_) {
    thread_ring* next = ring->next_attached.load(std::memory_order_relaxed);
    if (previous == nullptr) {
      thread_ring* head = ring;
      if (attached_.compare_exchange_strong(head, next, std::memory_order_acq_rel)) return nullptr;
      // Threads attached since the walk began: `ring` is further down now.
      previous = head;
      while (previous->next_attached.load(std::memory_order_acquire) != ring)
        previous = previous->next_attached.load(std::memory_order_acquire);
    }
    previous->next_attached.store(next, std::memory_order_release);
    return previous;
  }

  /// Held by every walker of the list but the flusher (which alone unlinks).
  mutex& list_mutex() noexcept EDGETRACE_DETAIL_RETURN_CAPABILITY(mutex_) { return mutex_; }

  /// Records waiting in the attached rings, published and not yet read
  /// (any thread but the flusher: a walk under list_mutex()).
  std::size_t unread_records() noexcept EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    std::size_t count = 0;
    for (const thread_ring* ring = first(); ring != nullptr; ring = ring->next_attached.load(std::memory_order_acquire))
      count += unread(*ring);
    return count;
  }

  /// A thread exited and its ring waits for the flusher (retiring()).
  void retire_one() noexcept { retiring_.fetch_add(1, std::memory_order_relaxed); }
  void retired_one() noexcept { retiring_.fetch_sub(1, std::memory_order_release); }
  std::uint32_t retiring() const noexcept { return retiring_.load(std::memory_order_acquire); }

 private:
  /// A ring of records_for(the room) slots; its bytes leave the room.
  thread_ring* map_within_room() noexcept {
    // The bytes leave the room before the mapping: threads that start
    // together each see the room the others left (taken after mapping,
    // 2,000 threads all saw the first room and mapped full rings).
    std::uint64_t room = room_.load(std::memory_order_relaxed), records = records_for(room);
    while (room != unlimited) {
      const std::uint64_t bytes = ring_mapping_bytes(records);
      if (room_.compare_exchange_weak(room, room > bytes ? room - bytes : 0, std::memory_order_relaxed)) break;
      records = records_for(room);
    }
    thread_ring* ring = map_ring(records);
    if (ring == nullptr) return nullptr;
    std::uint64_t smallest = smallest_.load(std::memory_order_relaxed);
    while (records < smallest && !smallest_.compare_exchange_weak(smallest, records, std::memory_order_relaxed)) {
    }
    return ring;
  }

  std::uint64_t records_;
  std::atomic<std::uint64_t> room_{unlimited};
  std::atomic<std::uint64_t> smallest_{records_};
  /// Attached rings, newest first. attach pushes with a CAS on the head;
  /// only the flusher unlinks, holding mutex_, which every other walker
  /// holds.
  std::atomic<thread_ring*> attached_{nullptr};
  mutex mutex_;
  /// Pre-faulted spares, one per slot (null = empty). take exchanges a slot
  /// with null; the flusher refills and recycles with a CAS null->ring.
  /// Lock-free both ways and free of ABA (a slot is never popped twice).
  std::atomic<thread_ring*> pool_[pool_slots] = {};
  /// Rings whose thread exited and that the flusher has not recycled yet
  /// (exit hook adds, flusher subtracts).
  std::atomic<std::uint32_t> retiring_{0};
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
