// SPDX-License-Identifier: MIT
// The single-producer/single-consumer primitive under both hand-offs from
// an app thread to the flusher: the record ring (face/ring.hpp) and the
// GPU launch queue (gpu/handoff.hpp). Two positions over slots
// [begin, end), each written by one thread, with the memory orders that
// make a slot's contents travel with its position; and the operations on
// them: room (producer), publish, consume (consumer). Light: no standard
// header but <cstddef>.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/core/atomic.hpp>

#include <cstddef>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Cache line size used for padding (fixed on purpose: see STYLE.md).
inline constexpr std::size_t cache_line = 64;

/// The producer's position: the next slot it fills. Written by the
/// producer only; positions are normalised so that `end` means `begin`.
/// Still an atomic_cell: code that needs another order says so explicitly.
template <class Slot>
class write_position : public atomic_cell<Slot*> {
 public:
  using atomic_cell<Slot*>::atomic_cell;
  /// Producer: its own field, so a relaxed load (one plain load).
  EDGETRACE_DETAIL_ALWAYS_INLINE Slot* own() const noexcept { return this->load(order_relaxed); }
  /// Producer, after the stores that filled every slot before `next`:
  /// release, so a consumer that loads `next` sees those slots complete
  /// (a plain store on x86-64, stlr on aarch64).
  EDGETRACE_DETAIL_ALWAYS_INLINE void publish(Slot* next) noexcept { this->store(next, order_release); }
  /// Consumer: acquire pairs with publish(): every slot before the
  /// returned position is complete.
  EDGETRACE_DETAIL_ALWAYS_INLINE Slot* published() const noexcept { return this->load(order_acquire); }
};

/// The consumer's position: the next slot it reads. Written by the
/// consumer only, normalised like write_position.
template <class Slot>
class read_position : public atomic_cell<Slot*> {
 public:
  using atomic_cell<Slot*>::atomic_cell;
  /// Consumer: its own field, so relaxed.
  Slot* own() const noexcept { return this->load(order_relaxed); }
  /// Consumer, once it has copied out every slot before `next`: release,
  /// so its reads of them happen before the producer reuses them.
  void hand_back(Slot* next) noexcept { this->store(next, order_release); }
  /// Producer: acquire pairs with hand_back(): every slot before the
  /// returned position may be overwritten.
  Slot* freed() const noexcept { return this->load(order_acquire); }
};

// An SPSC ring is a struct with these members (thread_ring lays them out
// itself, next to the hot path's other fields; spsc_queue below is the
// plain form):
//   write_position<Slot> write_pos;  Slot* write_limit;  Slot* begin, *end;
//   read_position<Slot> read_pos;
// `write_limit` (producer only) is where the producer may write up to
// without looking at read_pos again. One slot always stays free, so equal
// positions mean "empty", never "full": capacity is (end - begin) - 1.

/// Producer: recomputes write_limit from the consumer's position, wrapping
/// write_pos to begin if it reached end. Returns how many slots are free.
/// Cost: one acquire load (a plain load on x86-64) and a few instructions.
template <class Ring>
std::size_t refresh_room(Ring& ring) noexcept {
  auto* pos = ring.write_pos.own();
  auto* const read = ring.read_pos.freed();
  if (pos == ring.end) {
    pos = ring.begin;  // wrap; for the consumer `end` and `begin` are the same position
    ring.write_pos.publish(pos);
  }
  std::size_t room;
  if (read > pos) {
    ring.write_limit = read - 1;
    room = static_cast<std::size_t>(read - 1 - pos);
  } else {
    ring.write_limit = read == ring.begin ? ring.end - 1 : ring.end;
    room = static_cast<std::size_t>(ring.write_limit - pos) + static_cast<std::size_t>(read - ring.begin) -
           (read == ring.begin ? 0 : 1);
  }
  return room;
}

/// Producer: stores `value` into the next slot, which refresh_room counted
/// as free, and publishes it.
template <class Ring, class Slot>
void publish_one(Ring& ring, const Slot& value) noexcept {
  Slot* pos = ring.write_pos.own();
  if (pos == ring.end) pos = ring.begin;
  *pos = value;
  ring.write_pos.publish(pos + 1);
}

/// A consumer hands slots back at least this often while it drains, so a
/// producer waiting for room (EDGETRACE_ON_FULL=wait) resumes after a
/// batch, not after the whole ring.
inline constexpr std::size_t release_batch = 4096;

/// The consumer's loop, in contiguous runs up to `pos` (a write_pos the
/// caller loaded with published() before): `visit_run(first, last)` takes
/// slots [first, last) and returns where it stopped (`last`, or before it
/// to end the loop there); the slots it took are handed back and
/// `released()` runs, at least every release_batch slots. Returns the
/// number of slots taken.
template <class Ring, class Slot, class VisitRun, class Released>
std::size_t consume_runs_to(Ring& ring, Slot* pos, VisitRun&& visit_run, Released&& released) {
  Slot* read = ring.read_pos.own();
  if (pos == ring.end) pos = ring.begin;
  std::size_t count = 0;
  while (read != pos) {
    Slot* const stop_at = read > pos ? ring.end : pos;
    Slot* const stop = static_cast<std::size_t>(stop_at - read) > release_batch ? read + release_batch : stop_at;
    Slot* const reached = visit_run(read, stop);
    count += static_cast<std::size_t>(reached - read);
    const bool ended = reached != stop;
    read = reached;
    if (read == ring.end) read = ring.begin;
    ring.read_pos.hand_back(read);
    released();
    if (ended) break;
  }
  return count;
}

/// consume(), up to `pos`: a write_pos the caller loaded (published())
/// before. `released()` runs after each batch of slots was handed back.
template <class Ring, class Slot, class Visit, class Released>
std::size_t consume_to(Ring& ring, Slot* pos, Visit&& visit, Released&& released) {
  return consume_runs_to(
      ring, pos,
      [&](Slot* first, Slot* last) EDGETRACE_DETAIL_INLINE_LAMBDA {
        for (; first != last; ++first) {
          // The producer wrote these lines on another core: ask for them ahead.
          __builtin_prefetch(first + 32);
          visit(*first);
        }
        return last;
      },
      released);
}

/// Consumer: calls `visit(const Slot&)` for every published slot in order,
/// then hands their slots back. Returns the number of slots visited.
template <class Ring, class Visit>
std::size_t consume(Ring& ring, Visit&& visit) {
  return consume_to(ring, ring.write_pos.published(), visit, [] {});
}

/// Slots waiting in the ring (consumer's view; for statistics).
template <class Ring>
std::size_t unread(const Ring& ring) noexcept {
  const auto* pos = ring.write_pos.published();
  const auto* read = ring.read_pos.own();
  if (pos == ring.end) pos = ring.begin;
  return read <= pos ? static_cast<std::size_t>(pos - read)
                     : static_cast<std::size_t>(ring.end - read) + static_cast<std::size_t>(pos - ring.begin);
}

/// An SPSC ring over `Capacity` slots of its own (plus the one kept free),
/// the producer's and the consumer's positions on separate cache lines.
/// Not copyable; set up empty.
template <class Slot, std::size_t Capacity>
struct spsc_queue {
  // ---- producer line: written by the producer only (begin/end: never).
  write_position<Slot> write_pos{slots};
  Slot* write_limit = slots;
  Slot* const begin = slots;
  Slot* const end = slots + Capacity + 1;
  // ---- consumer line: written by the consumer only.
  alignas(cache_line) read_position<Slot> read_pos{slots};
  alignas(cache_line) Slot slots[Capacity + 1];
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
