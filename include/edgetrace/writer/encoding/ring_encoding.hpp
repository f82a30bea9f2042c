// SPDX-License-Identifier: MIT
// A ring's own encoding state: the events chunk being built for its thread, the payloads handed to the flusher, the cache of its sites' dump ids, and the loop that encodes records whose sites are known, run by the flusher or, when the flusher falls behind, by the ring's own thread.
//
// Whoever consumes a ring's records holds its drain lock: the flusher
// (writer/stream.hpp), or the owning thread helping under overload
// (writer/help.hpp). So the ring has one consumer at any moment, and the
// chunk, the cache and the read position below need no other guard. The
// lock holder only builds payloads; sealing them (header, CRC) and writing
// them is the flusher's, after the definitions they use. Pure: no global,
// no descriptor, no system call but the lock's yield.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/format.hpp>

#include <cstddef>
#include <cstdint>

#include <sched.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// What encoding needs of a site, cached so that its descriptor (which may
/// belong to a library unloaded since) is read once. 16 bytes.
struct site_cache_entry {
  /// The record word: a literal site's address, or a named span's word
  /// (record_word.hpp); 0 = empty (no record word is 0).
  std::uint64_t key;
  std::uint32_t id;             ///< dump site id; 0: unloaded (never cached)
  std::uint32_t category : 24;  ///< 16 bytes an entry keep encoding fast; indexes stay far below 2^24
  format::site_kind kind;
};
static_assert(sizeof(site_cache_entry) == 16, "the site cache is sized for 16-byte entries");

/// Where a mapped ring keeps its ring_encoding: right behind the
/// thread_ring, on a cache line of its own (map_ring lays them out).
inline constexpr std::size_t encoding_offset = (sizeof(thread_ring) + cache_line - 1) & ~(cache_line - 1);

/// One ring's chunk, cache and hand-off. Lives in the ring's mapping, its
/// payload buffers right behind it (map_ring), so nothing here allocates.
class EDGETRACE_DETAIL_CAPABILITY("drain lock") ring_encoding {
 public:
  static constexpr std::size_t cache_entries = 256;
  /// The most bytes one event takes: code, two tick varints, a counter's 8.
  static constexpr std::size_t max_event_size = 1 + 3 * format::max_varint_size + 8;
  /// Payloads in flight to the flusher: one being filled, the rest waiting
  /// to be sealed and written. A helping thread wakes the flusher once
  /// half of them wait, so the flusher writes two per wake-up.
  static constexpr std::size_t buffer_count = 4;

  /// The payload a chunk of a ring of `ring_bytes` is sealed at: a
  /// sixteenth of the ring, at most format::target_event_payload, at least
  /// 2 KiB. The buffers then add at most a quarter to the ring's memory
  /// (a 1 MiB ring: 4 x 60 KiB).
  static constexpr std::size_t payload_for(std::size_t ring_bytes) noexcept {
    const std::size_t share = ring_bytes / 16;
    return share > format::target_event_payload ? format::target_event_payload : share < 2048 ? 2048 : share;
  }
  /// One events chunk: header, a payload up to `payload` plus the event
  /// that crosses it and one more, trailer.
  static constexpr std::size_t buffer_bytes(std::size_t payload) noexcept {
    return (format::chunk_header_size + payload + 2 * max_event_size + format::chunk_trailer_size + 63) &
           ~std::size_t{63};
  }
  /// What map_ring sets aside for this object and its buffers.
  static constexpr std::size_t footprint(std::size_t payload) noexcept {
    return sizeof(ring_encoding) + buffer_count * buffer_bytes(payload);
  }

  explicit ring_encoding(std::size_t payload) noexcept
      : payload_(static_cast<std::uint32_t>(payload)), buffer_bytes_(static_cast<std::uint32_t>(buffer_bytes(payload))) {}
  ring_encoding(const ring_encoding&) = delete;
  ring_encoding& operator=(const ring_encoding&) = delete;

  // ---- the drain lock. Held only while records are encoded (microseconds),
  // never while waiting for anything, so a holder always lets go soon.

  bool try_lock() noexcept EDGETRACE_DETAIL_TRY_ACQUIRE(true) {
    // Look first: a failed exchange would still take the line from the holder.
    return !locked_.load(order_relaxed) && !locked_.exchange(true, order_acquire);
  }
  /// The flusher, when it must drain this ring now (flush, exit, a signal):
  /// the owner holds the lock for one batch at most, so this spins, then
  /// yields. False after `patience` yields (about a second: a thread
  /// stopped by a debugger, or cancelled asynchronously mid-batch): the
  /// ring is left as it is rather than the flusher hanging.
  bool lock(unsigned patience = 100000) noexcept EDGETRACE_DETAIL_TRY_ACQUIRE(true) {
    for (unsigned spins = 0; !try_lock(); ++spins) {
      if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
      } else if (spins - 64 < patience) {
        sched_yield();
      } else {
        return false;
      }
    }
    return true;
  }
  void unlock() noexcept EDGETRACE_DETAIL_RELEASE() { locked_.store(false, order_release); }

  // ---- the site cache (lock holder). Direct-mapped by the record word, so
  // a dense loop of one site costs one compare.

  static std::size_t slot_of(std::uint64_t word) noexcept {
    return static_cast<std::size_t>((word >> 3) ^ (word >> 32)) & (cache_entries - 1);
  }
  site_cache_entry& slot(std::uint64_t word) noexcept EDGETRACE_DETAIL_REQUIRES(this) { return cache_[slot_of(word)]; }
  void clear_cache() noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    for (site_cache_entry& entry : cache_) entry = {};
  }
  /// The flusher's site table generation the cache was filled under, and
  /// the unloaded-library epoch it was checked against (writer/stream.hpp).
  std::uint64_t generation EDGETRACE_DETAIL_GUARDED_BY(this) = 0;
  std::uint64_t unloaded_epoch EDGETRACE_DETAIL_GUARDED_BY(this) = 0;

  // ---- the events chunk being built (lock holder)

  /// A chunk is open: events may be appended.
  bool open() const noexcept EDGETRACE_DETAIL_REQUIRES(this) { return cursor_ != nullptr; }
  /// The open chunk reached its target size: hand it over before more.
  bool full() const noexcept EDGETRACE_DETAIL_REQUIRES(this) { return cursor_ > limit_; }
  /// A buffer is free to open a chunk in (the flusher took the previous).
  bool can_start() const noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    return handed_.load(order_relaxed) - taken_.load(order_acquire) < buffer_count;
  }

  /// Opens a chunk of `thread_id`'s events whose ticks count from `base`.
  /// Requires can_start().
  void start(std::uint32_t thread_id, std::uint64_t base) noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    unsigned char* const chunk = buffer(handed_.load(order_relaxed));
    cursor_ = chunk + format::chunk_header_size;
    limit_ = cursor_ + payload_;
    cursor_ = format::put_varint(cursor_, thread_id);
    cursor_ = format::put_varint(cursor_, base);
    ref_ = base;
  }

  /// Ends the open chunk and hands its payload to the flusher (take()).
  void hand_over() noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    const std::uint32_t n = handed_.load(order_relaxed);
    unsigned char* const chunk = buffer(n);
    payload_size_[n % buffer_count] = static_cast<std::uint32_t>(cursor_ - chunk - format::chunk_header_size);
    cursor_ = nullptr;
    // Release: the flusher's acquire in take() sees the payload complete.
    handed_.store(n + 1, order_release);
  }

  /// The event tick a chunk that starts with `r` counts from: a span's
  /// end, another event's time, a loss's first tick.
  static std::uint64_t reference_tick(const record& r, format::site_kind kind) noexcept {
    if (tag_of(r.word) == tag_loss) return r.t_begin;
    return kind == format::site_kind::span ? r.t_end : r.t_begin;
  }

  /// Appends one event to the open chunk (at most max_event_size bytes):
  /// a span, instant or counter of `entry`'s site, or (entry null) the
  /// in-band loss of a tag_loss record.
  EDGETRACE_DETAIL_ALWAYS_INLINE void put(const record& r, const site_cache_entry* entry) noexcept
      EDGETRACE_DETAIL_REQUIRES(this) {
    if (EDGETRACE_DETAIL_UNLIKELY(entry == nullptr)) return put_loss(r);
    if (EDGETRACE_DETAIL_LIKELY(entry->kind == format::site_kind::span)) {
      advance(r.t_end);
      cursor_ = format::put_varint(cursor_, std::uint64_t{entry->id} << 2);
      cursor_ = format::put_varint(cursor_, r.t_end - ref_);
      cursor_ = format::put_varint(cursor_, r.t_end >= r.t_begin ? r.t_end - r.t_begin : 0);
      ref_ = r.t_end;
      return;
    }
    advance(r.t_begin);
    const auto type =
        entry->kind == format::site_kind::counter ? format::event_type::counter : format::event_type::instant;
    cursor_ = format::put_varint(cursor_, (std::uint64_t{entry->id} << 2) | static_cast<std::uint8_t>(type));
    cursor_ = format::put_varint(cursor_, r.t_begin - ref_);
    ref_ = r.t_begin;
    if (entry->kind == format::site_kind::counter) {
      format::put_u64(cursor_, r.t_end);
      cursor_ += 8;
    }
  }

  /// Encodes records from `r` on for as long as they need nothing but this
  /// object: spans, instants and counters of cached sites, and in-band
  /// losses. Opens a chunk of `thread_id` when none is open and a buffer is
  /// free. Stops at `end`, at the first record it cannot encode alone (a
  /// site not cached, an annotation, an allocation's bytes), when the open
  /// chunk is full, or when no buffer is free; returns where it stopped.
  /// `encoded` counts the events it encoded (losses are not records the
  /// thread issued).
  const record* encode_known(const record* r, const record* end, std::uint32_t thread_id,
                             std::uint64_t& encoded) noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    while (r != end) {
      r = encode_spans(r, end, encoded);
      if (r == end) break;
      // Anything but a plain span of a cached site, or a chunk to open or seal.
      const site_cache_entry* entry = &cache_[slot_of(r->word)];
      if (entry->key != r->word || format::is_annotation(entry->kind)) {
        if (tag_of(r->word) != tag_loss) break;
        entry = nullptr;
      }
      if (cursor_ == nullptr) {
        if (!can_start()) break;
        start(thread_id, reference_tick(*r, entry != nullptr ? entry->kind : format::site_kind::span));
      } else if (cursor_ > limit_) {
        break;
      }
      put(*r, entry);
      encoded += entry != nullptr ? 1 : 0;
      ++r;
    }
    return r;
  }

  /// What a ring's own thread runs when it helps (writer/help.hpp):
  /// encode_known, handing each full chunk over and going on in the other
  /// buffer while one is free. Returns where it stopped; sets `handed` if
  /// it handed a chunk over.
  const record* encode_alone(const record* r, const record* end, std::uint32_t thread_id, std::uint64_t& encoded,
                             bool& handed) noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    for (;;) {
      r = encode_known(r, end, thread_id, encoded);
      if (r == end || !open() || !full()) return r;
      hand_over();
      handed = true;
    }
  }

  // ---- the hand-off (the flusher; no lock: an SPSC pair of counters)

  /// Payloads handed over and not yet taken (a hint; take() decides).
  std::uint32_t waiting() const noexcept { return handed_.load(order_relaxed) - taken_.load(order_relaxed); }
  bool has_handed() const noexcept { return handed_.load(order_relaxed) != taken_.load(order_relaxed); }

  /// Flusher: calls take(chunk, payload_size) for every handed payload,
  /// oldest first, then frees its buffer. `chunk` has chunk_header_size
  /// bytes of room before the payload and chunk_trailer_size after it, for
  /// format::seal_chunk.
  template <class Take>
  void take(Take&& take) noexcept {
    std::uint32_t n = taken_.load(order_relaxed);
    // Acquire pairs with hand_over's release.
    for (const std::uint32_t handed = handed_.load(order_acquire); n != handed; ++n) {
      take(buffer(n), payload_size_[n % buffer_count]);
      // Release: our reads of the buffer happen before the lock holder's
      // next writes to it (its acquire in can_start).
      taken_.store(n + 1, order_release);
    }
  }

  /// Flusher: whether a chunk of `size` bytes and CRC `crc` is the one it
  /// sealed last for this ring (chunk_encoder::take_handed), and noting
  /// the one it sealed.
  bool same_as_last(std::size_t size, std::uint32_t crc) const noexcept {
    return size == last_size_ && crc == last_crc_;
  }
  void sealed(std::size_t size, std::uint32_t crc) noexcept {
    last_size_ = size;
    last_crc_ = crc;
  }
  /// The code (first varint) of a special event of `type`: loss, rebase.
  static constexpr std::uint64_t special_code(format::special_type type) noexcept {
    return (std::uint64_t{static_cast<std::uint8_t>(type)} << 2) | 3;
  }

  /// Tick the next event counts from (the open chunk's last event).
  std::uint64_t ref() const noexcept EDGETRACE_DETAIL_REQUIRES(this) { return ref_; }
  void set_ref(std::uint64_t tick) noexcept EDGETRACE_DETAIL_REQUIRES(this) { ref_ = tick; }
  /// Where the next event byte goes (the flusher rewrites a coalesced loss).
  unsigned char* cursor() const noexcept EDGETRACE_DETAIL_REQUIRES(this) { return cursor_; }
  void set_cursor(unsigned char* at) noexcept EDGETRACE_DETAIL_REQUIRES(this) { cursor_ = at; }

 private:
  /// Buffer of payload number `n` (they alternate).
  unsigned char* buffer(std::uint32_t n) noexcept {
    return reinterpret_cast<unsigned char*>(this + 1) + (n % buffer_count) * buffer_bytes_;
  }

  /// encode_known's loop for what dense code records: spans of a cached
  /// site, in time order, into an open chunk with room. The cursor and the
  /// reference stay in registers (a byte store through the cursor may alias
  /// any member, so members would be reloaded after each). About a dozen
  /// instructions a span; stops at the first record that is anything else.
  EDGETRACE_DETAIL_ALWAYS_INLINE const record* encode_spans(const record* r, const record* end, std::uint64_t& encoded)
      noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    unsigned char* cursor = cursor_;
    if (cursor == nullptr) return r;
    const unsigned char* const limit = limit_;
    std::uint64_t ref = ref_;
    const record* const first = r;
    for (; r != end && cursor <= limit; ++r) {
      __builtin_prefetch(r + 16);
      const std::uint64_t word = r->word, begin = r->t_begin, tick = r->t_end;
      const site_cache_entry& entry = cache_[slot_of(word)];
      if (EDGETRACE_DETAIL_UNLIKELY(entry.key != word || entry.kind != format::site_kind::span || tick < ref)) break;
      cursor = format::put_varint(cursor, std::uint64_t{entry.id} << 2);
      cursor = format::put_varint(cursor, tick - ref);
      cursor = format::put_varint(cursor, tick >= begin ? tick - begin : 0);
      ref = tick;
    }
    cursor_ = cursor;
    ref_ = ref;
    encoded += static_cast<std::uint64_t>(r - first);
    return r;
  }

  /// Makes `t` the new reference, with a rebase event if ticks went back
  /// (another core's clock, a signal handler recording mid-push).
  EDGETRACE_DETAIL_ALWAYS_INLINE void advance(std::uint64_t t) noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    if (EDGETRACE_DETAIL_UNLIKELY(t < ref_)) {
      cursor_ = format::put_varint(cursor_, special_code(format::special_type::rebase));
      cursor_ = format::put_varint(cursor_, t);
      ref_ = t;
    }
  }

  EDGETRACE_DETAIL_NOINLINE void put_loss(const record& r) noexcept EDGETRACE_DETAIL_REQUIRES(this) {
    advance(r.t_begin);
    cursor_ = format::put_varint(cursor_, special_code(format::special_type::loss));
    cursor_ = format::put_varint(cursor_, r.t_begin - ref_);
    cursor_ = format::put_varint(cursor_, r.t_end >= r.t_begin ? r.t_end - r.t_begin : 0);
    cursor_ = format::put_varint(cursor_, loss_count(r.word));
    ref_ = r.t_end >= r.t_begin ? r.t_end : r.t_begin;
  }

  const std::uint32_t payload_;       ///< a chunk is full past this many payload bytes
  const std::uint32_t buffer_bytes_;  ///< buffer_bytes(payload_)
  atomic_cell<bool> locked_{false};
  site_cache_entry cache_[cache_entries] EDGETRACE_DETAIL_GUARDED_BY(this) = {};
  unsigned char* cursor_ EDGETRACE_DETAIL_GUARDED_BY(this) = nullptr;  ///< next payload byte; null: no chunk open
  unsigned char* limit_ EDGETRACE_DETAIL_GUARDED_BY(this) = nullptr;   ///< past it the chunk is full
  std::uint64_t ref_ EDGETRACE_DETAIL_GUARDED_BY(this) = 0;
  /// Payloads handed over (lock holder: release) and taken (flusher:
  /// release); buffer n % buffer_count holds payload n.
  alignas(cache_line) atomic_cell<std::uint32_t> handed_{0};
  std::uint32_t payload_size_[buffer_count] = {};  ///< written before handed_'s release
  alignas(cache_line) atomic_cell<std::uint32_t> taken_{0};
  std::size_t last_size_ = 0;  ///< flusher only: the events chunk it sealed last for this ring
  std::uint32_t last_crc_ = 0;
};

/// The encoding state of a mapped ring (never of sentinel_ring or
/// busy_ring, which the flusher never drains).
inline ring_encoding& encoding_of(thread_ring& ring) noexcept {
  return *reinterpret_cast<ring_encoding*>(reinterpret_cast<unsigned char*>(&ring) + encoding_offset);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
