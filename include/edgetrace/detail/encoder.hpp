// SPDX-License-Identifier: MIT
// The pure chunk encoder: turns a thread's records into dump chunks (events, definitions, annotations, threads, calibration, capture) in memory.
//
// No descriptor, no global, no thread: the flusher (detail/flusher.hpp)
// feeds it drained records and writes what it seals (output()); names and
// whether a site's library is still loaded come through the encoder_host
// it is given (detail/chunk_writer.hpp). tests/encoder_test.cpp feeds it
// records and reads the chunks back with the reader.
#pragma once

#include <edgetrace/detail/capture_control.hpp>
#include <edgetrace/detail/chunk_writer.hpp>
#include <edgetrace/detail/clock.hpp>
#include <edgetrace/detail/record_word.hpp>
#include <edgetrace/detail/ring.hpp>
#include <edgetrace/format.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Records in, chunks out. One per stream, used by one thread at a time.
class chunk_encoder : public chunk_writer {
 public:
  explicit chunk_encoder(encoder_host& host) noexcept : chunk_writer(host) {}

  /// Encodes one drained record of `ring` (its thread announced first:
  /// announce_thread). Spans, instants and counters go to the thread's
  /// events chunk, annotations to the annotations chunk; records of an
  /// unloaded library are dropped and counted in-band.
  EDGETRACE_DETAIL_ALWAYS_INLINE void add(thread_ring& ring, const record& r) {
    // One site lookup per record: annotations (and unloaded sites) leave
    // here, spans, instants and counters go on to encode with it.
    const site_cache_entry* slot = nullptr;
    if (EDGETRACE_DETAIL_LIKELY(tag_of(r.word) == tag_site)) {
      slot = &site_entry(r.word);
      if (EDGETRACE_DETAIL_UNLIKELY(format::is_annotation(slot->kind))) return annotation(ring, r, *slot);
    } else if (EDGETRACE_DETAIL_UNLIKELY(tag_of(r.word) == tag_more)) {
      return allocation_bytes(ring, r);
    }
    if (cursor_ == nullptr) {
      start_events_chunk(ring, reference_tick(r, slot));
    } else if (EDGETRACE_DETAIL_UNLIKELY(static_cast<std::size_t>(cursor_ - chunk_.data()) >
                                         format::chunk_header_size + format::target_event_payload)) {
      finish_events_chunk();
      start_events_chunk(ring, reference_tick(r, slot));
    }
    encode(ring, r, slot);
  }

  /// Seals what add() built for the thread (its events, then annotations).
  void end_thread() {
    finish_events_chunk();
    emit_annotations();
  }

  /// An in-band loss of the thread in an events chunk of its own: `count`
  /// records lost between ticks `first` and `last`.
  void add_loss(thread_ring& ring, std::uint64_t count, std::uint64_t first, std::uint64_t last) {
    finish_events_chunk();  // a no-op after end_thread, where the flusher calls it
    start_events_chunk(ring, first);
    encode(ring, record{pack_loss(count), first, last}, nullptr);
    finish_events_chunk();
  }

  /// Writes the thread chunk of `ring` (numbering it on first sight), and
  /// again after the thread was renamed.
  void announce_thread(thread_ring& ring) {
    const std::uint32_t version = ring.name_version.load(std::memory_order_acquire);
    if (ring.announced && version == ring.name_version_seen) return;
    if (!ring.announced) ring.thread_id = next_thread_id_++;
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, ring.thread_id);
    put_varint(b, ring.os_tid);
    {
      std::lock_guard<spin_lock> lock(ring.name_mutex);
      put_string(b, ring.name, strnlen(ring.name, sizeof ring.name));
      ring.name_version_seen = ring.name_version.load(std::memory_order_relaxed);
    }
    emit_chunk(b, format::chunk_type::thread);
    ring.announced = true;
  }

  void write_thread_stats(const thread_ring& ring) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, ring.thread_id);
    put_varint(b, ring.written);
    put_varint(b, dropped_records(ring));
    put_varint(b, ring.rejected.load(std::memory_order_relaxed));  // 1.3: older readers skip it
    emit_chunk(b, format::chunk_type::thread_stats);
  }

  /// A thread's dropped total: full ring, signal handlers that landed
  /// inside the thread's own push, and records of an unloaded library
  /// (the last two as written so far).
  static std::uint64_t dropped_records(const thread_ring& ring) noexcept {
    return ring.drop_count.load(std::memory_order_relaxed) + ring.signal_dropped + ring.unloaded_dropped;
  }

  /// The process chunk.
  void write_process(std::uint64_t pid, const settings& config, const char* comm) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, pid);
    b.push_back(static_cast<unsigned char>(tick_source(config.clock)));
    b.push_back(tick_flags(counter_invariant(), config.clock_fell_back));
    put_varint(b, nominal_tick_rate(config.clock));
    put_varint(b, config.ring_records);
    put_varint(b, std::uint64_t{config.flush_ms} * 1000);
    put_string(b, comm);
    emit_chunk(b, format::chunk_type::process);
  }

  /// A calibration chunk.
  void write_calibration(const calibration_pair& pair) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    b.resize(b.size() + 24);
    format::put_u64(b.data() + format::chunk_header_size, pair.tick);
    format::put_u64(b.data() + format::chunk_header_size + 8, pair.monotonic_ns);
    format::put_u64(b.data() + format::chunk_header_size + 16, pair.realtime_ns);
    emit_chunk(b, format::chunk_type::calibration);
  }

  /// The capture chunk of `entries` (records: u8 tag, varint size, body).
  void write_capture(const std::vector<capture_entry>& entries) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    std::vector<unsigned char> body;
    for (const capture_entry& e : entries) {
      body.clear();
      put_varint(body, e.tick);
      if (e.type == format::capture_record::recording) {
        body.push_back(e.on ? 1 : 0);
        body.push_back(static_cast<unsigned char>(e.reason));
      } else {
        put_string(body, e.name.data(), e.name.size());
      }
      b.push_back(static_cast<unsigned char>(e.type));
      put_varint(b, body.size());
      b.insert(b.end(), body.begin(), body.end());
    }
    emit_chunk(b, format::chunk_type::capture);
  }

  /// The end chunk: nothing of this stream follows it.
  void write_end() {
    begin_chunk(scratch_);
    emit_chunk(scratch_, format::chunk_type::end);
  }

  /// Dump site id of a record word (a site pointer or a named-span word),
  /// defined on first sight like the rings' own records.
  std::uint32_t word_site_id(std::uint64_t word) {
    if (tag_of(word) == tag_named) return named_site_id(word);
    return site_id(site_of(word));
  }

  /// Seals a client's payload as a chunk, after any pending definitions it
  /// may refer to.
  void emit_client_chunk(format::chunk_type type, const unsigned char* payload, std::size_t size) {
    if (size > format::max_chunk_payload) return;
    emit_definitions();
    begin_chunk(client_chunk_);
    client_chunk_.insert(client_chunk_.end(), payload, payload + size);
    emit_chunk(client_chunk_, type);
  }

  /// Literal sites are looked up (and defined) again on next sight.
  void forget_site_cache() noexcept {
    site_ids_.clear();
    for (site_cache_entry& entry : site_cache_) entry = {};
  }

  /// Every site, category and thread name is defined again before its next
  /// use (the file was truncated: it starts again).
  void forget_definitions() noexcept {
    forget_site_cache();
    named_ids_.clear();
    for (named_cache_entry& entry : named_cache_) entry = {};
    forget_categories();
  }

  /// Forgets cached sites for which unloaded(site) is true (unloaded
  /// libraries): their records must not be read, and a library loaded
  /// later may reuse the addresses.
  template <class Unloaded>
  void forget_sites_where(Unloaded&& unloaded) {
    for (site_cache_entry& entry : site_cache_)
      if (entry.key != nullptr && unloaded(entry.key)) entry = {};
    for (auto it = site_ids_.begin(); it != site_ids_.end();) it = unloaded(it->first) ? site_ids_.erase(it) : ++it;
  }

 private:
  struct site_cache_entry {
    const site* key;
    std::uint32_t id;  ///< 0: the site's library was unloaded (the record is dropped)
    std::uint32_t category : 24;  ///< 16 bytes an entry keep encoding fast; indexes stay far below 2^24
    format::site_kind kind;
  };
  static_assert(sizeof(site_cache_entry) == 16, "the site cache is sized for 16-byte entries");
  struct named_cache_entry {
    std::uint64_t key;
    std::uint32_t id;  ///< 0 = empty (site ids start at 1)
  };
  /// What site_entry returns for a site in an unloaded library's range.
  static constexpr site_cache_entry unloaded_site{nullptr, 0, 0, static_cast<format::site_kind>(255)};
  static constexpr std::size_t max_event_size = 1 + 3 * format::max_varint_size + 8;

  /// Dump id of a literal site; defines it on first sight. A direct-mapped
  /// cache in front of the hash map keeps dense loops cheap to encode.
  /// 0 if the site's library was unloaded before it was first read.
  EDGETRACE_DETAIL_NOINLINE std::uint32_t site_id(const site* s) {
    site_cache_entry& slot = site_cache_[(reinterpret_cast<std::uintptr_t>(s) >> 3) & 255];
    if (slot.key == s) return slot.id;
    auto found = site_ids_.find(s);
    if (found != site_ids_.end()) {
      slot = found->second;
      return slot.id;
    }
    // The only read of a descriptor, while its library cannot be marked
    // unloaded (and so cannot be unmapped).
    struct reading {
      chunk_encoder* self;
      const site* s;
      site_cache_entry entry;
    } context{this, s, {}};
    const auto read = [](const site& d, void* c) {
      reading& ctx = *static_cast<reading*>(c);
      chunk_encoder& self = *ctx.self;
      ctx.entry = {ctx.s, self.next_site_id_++, d.category->index, d.kind};
      self.define_category(d.category->index, d.category->name);
      self.define_site(ctx.entry.id, d.kind, d.category->index, d.name, std::strlen(d.name), d.file, d.line);
    };
    if (!host_->read_loaded_site(s, read, &context)) return 0;
    site_ids_.emplace(s, context.entry);
    slot = context.entry;
    return context.entry.id;
  }

  /// The cache entry (dump id, category, kind) of the literal site in
  /// record word `word`, defining the site on first sight; unloaded_site if
  /// its library is gone. Direct-mapped: a dense loop of one site costs one
  /// compare.
  EDGETRACE_DETAIL_ALWAYS_INLINE const site_cache_entry& site_entry(std::uint64_t word) {
    const site* s = site_of(word);
    const site_cache_entry& slot = site_cache_[(word >> 3) & 255];
    if (EDGETRACE_DETAIL_UNLIKELY(slot.key != s) && site_id(s) == 0) return unloaded_site;  // else fills the slot
    return slot;
  }

  /// Drops a record of an unloaded library (cold): counted in the thread's
  /// total and in an in-band loss record at its place in the stream.
  EDGETRACE_DETAIL_NOINLINE void drop_unloaded(thread_ring& ring, const record& r) {
    ++ring.unloaded_dropped;
    // If it was an allocation, its second record (tag_more) goes too.
    pending_alloc_ = {ring.thread_id, 0, 0, 0};
    if (cursor_ != nullptr && cursor_ == unloaded_loss_.end) {  // nothing encoded since the last drop
      cursor_ = unloaded_loss_.at;
      ref_ = unloaded_loss_.ref;
      ++unloaded_loss_.count;
      if (r.t_begin > unloaded_loss_.last) unloaded_loss_.last = r.t_begin;
    } else {
      if (cursor_ == nullptr) {
        start_events_chunk(ring, r.t_begin);
      } else if (static_cast<std::size_t>(cursor_ - chunk_.data()) >
                 format::chunk_header_size + format::target_event_payload) {
        finish_events_chunk();
        start_events_chunk(ring, r.t_begin);
      }
      unloaded_loss_ = {cursor_, nullptr, ref_, 1, r.t_begin, r.t_begin};
    }
    encode(ring, record{pack_loss(unloaded_loss_.count), unloaded_loss_.first, unloaded_loss_.last}, nullptr);
    unloaded_loss_.end = cursor_;
  }

  /// Dump id of a (category, interned name) span site.
  std::uint32_t named_site_id(std::uint64_t word) {
    const std::uint64_t key = named_key(word);
    // Same direct-mapped cache as for literal sites: a hash lookup per
    // record would let a fast producer outrun the flusher.
    named_cache_entry& slot = named_cache_[(key ^ (key >> 30)) & 255];
    if (slot.key == key && slot.id != 0) return slot.id;
    auto found = named_ids_.find(key);
    if (found != named_ids_.end()) {
      slot = {key, found->second};
      return found->second;
    }
    const std::uint32_t id = next_site_id_++;
    named_ids_.emplace(key, id);
    slot = {key, id};
    const std::uint32_t category_index = named_category(word);
    host_->category_name(category_index, name_scratch_);
    define_category(category_index, name_scratch_.c_str());
    host_->interned_name(named_id(word), name_scratch_);
    define_site(id, format::site_kind::span, category_index, name_scratch_.data(), name_scratch_.size(), "", 0);
    return id;
  }

  // ---- events chunk being built. The buffer is sized once to hold a full
  // chunk plus one worst-case event, so encoding writes through a raw
  // cursor with no per-byte capacity checks.

  void start_events_chunk(const thread_ring& ring, std::uint64_t base) {
    if (chunk_.size() != format::chunk_header_size + format::target_event_payload + 2 * max_event_size +
                             format::chunk_trailer_size)
      chunk_.assign(format::chunk_header_size + format::target_event_payload + 2 * max_event_size +
                        format::chunk_trailer_size,
                    0);
    cursor_ = chunk_.data() + format::chunk_header_size;
    unloaded_loss_.end = nullptr;  // a loss record is only extended in its own chunk
    cursor_ = format::put_varint(cursor_, ring.thread_id);
    cursor_ = format::put_varint(cursor_, base);
    ref_ = base;
  }

  void finish_events_chunk() {
    if (cursor_ == nullptr) return;
    const auto payload = static_cast<std::uint32_t>(cursor_ - chunk_.data() - format::chunk_header_size);
    cursor_ = nullptr;
    emit_definitions();  // a reader meets every site before its first use
    const std::size_t size = format::seal_chunk(chunk_.data(), format::chunk_type::events, writer_id_, payload);
    out_.insert(out_.end(), chunk_.data(), chunk_.data() + size);
    if (out_.size() >= output_batch) host_->output_full();
  }

  /// An allocation's bytes (tag_more): the pair is complete.
  EDGETRACE_DETAIL_NOINLINE void allocation_bytes(thread_ring& ring, const record& r) {
    if (EDGETRACE_DETAIL_UNLIKELY(pending_alloc_.thread_id == ring.thread_id && pending_alloc_.site_id == 0)) {
      drop_unloaded(ring, r);  // its allocation's library was unloaded
      pending_alloc_.thread_id = 0;
      return;
    }
    ++ring.written;
    if (pending_alloc_.thread_id == ring.thread_id) {
      unsigned char body[5 * format::max_varint_size];
      unsigned char* p = annotation_head(body, pending_alloc_.thread_id, pending_alloc_.tick, pending_alloc_.site_id);
      p = format::put_varint(p, pending_alloc_.address);
      p = format::put_varint(p, r.t_begin);
      put_annotation(format::annotation_record::alloc, body, p);
    }
    pending_alloc_.thread_id = 0;
  }

  /// A literal-site record whose kind is an annotation (or whose library
  /// was unloaded: unloaded_site's kind counts as one, so it comes here).
  EDGETRACE_DETAIL_NOINLINE void annotation(thread_ring& ring, const record& r, const site_cache_entry& slot) {
    const format::site_kind kind = slot.kind;
    if (EDGETRACE_DETAIL_UNLIKELY(slot.id == 0)) {  // unloaded_site
      drop_unloaded(ring, r);
      return;
    }
    ++ring.written;
    const std::uint32_t id = slot.id;
    if (kind == format::site_kind::alloc) {
      pending_alloc_ = {ring.thread_id, id, r.t_begin, r.t_end};
      return;
    }
    if (kind == format::site_kind::arg) {
      put_argument(ring.thread_id, r.t_begin, id, format::arg_type::integer, r.t_end);
      return;
    }
    if (kind == format::site_kind::arg_float || kind == format::site_kind::arg_bool) {
      const format::arg_type type = kind == format::site_kind::arg_float ? format::arg_type::real
                                    : r.t_end != 0                       ? format::arg_type::bool_true
                                                                         : format::arg_type::bool_false;
      put_argument(ring.thread_id, r.t_begin, id, type, r.t_end);
      return;
    }
    unsigned char body[4 * format::max_varint_size];
    unsigned char* p = annotation_head(body, ring.thread_id, r.t_begin, id);
    format::annotation_record type = format::annotation_record::free;
    switch (kind) {
      case format::site_kind::arg_name:
        type = format::annotation_record::arg_name;
        p = format::put_varint(p, named_site_id(pack_named(static_cast<std::uint32_t>(r.t_end), slot.category)));
        break;
      case format::site_kind::flow:
        type = format::annotation_record::flow;
        p = format::put_varint(p, r.t_end);
        break;
      default:  // free
        p = format::put_varint(p, r.t_end);
        break;
    }
    put_annotation(type, body, p);
  }
  static constexpr std::uint64_t special_code(format::special_type type) noexcept {
    return (std::uint64_t{static_cast<std::uint8_t>(type)} << 2) | 3;
  }

  /// Makes `t` the new reference, with a rebase event if ticks went back
  /// (another core's clock, a signal handler recording mid-push).
  EDGETRACE_DETAIL_ALWAYS_INLINE void advance(std::uint64_t t) {
    if (EDGETRACE_DETAIL_UNLIKELY(t < ref_)) {
      cursor_ = format::put_varint(cursor_, special_code(format::special_type::rebase));
      cursor_ = format::put_varint(cursor_, t);
      ref_ = t;
    }
  }

  /// Encodes one record at cursor_ (at most max_event_size bytes). `slot`:
  /// the record's site_entry for a literal site (tag_site), else null.
  EDGETRACE_DETAIL_ALWAYS_INLINE void encode(thread_ring& ring, const record& r, const site_cache_entry* slot) {
    const record_tag tag = tag_of(r.word);
    std::uint32_t id;
    format::site_kind kind = format::site_kind::span;
    if (EDGETRACE_DETAIL_LIKELY(slot != nullptr)) {
      id = slot->id;
      kind = slot->kind;
    } else if (tag == tag_named) {
      id = named_site_id(r.word);
    } else {
      advance(r.t_begin);
      cursor_ = format::put_varint(cursor_, special_code(format::special_type::loss));
      cursor_ = format::put_varint(cursor_, r.t_begin - ref_);
      cursor_ = format::put_varint(cursor_, r.t_end >= r.t_begin ? r.t_end - r.t_begin : 0);
      cursor_ = format::put_varint(cursor_, loss_count(r.word));
      ref_ = r.t_end >= r.t_begin ? r.t_end : r.t_begin;
      return;
    }
    ++ring.written;
    // Latency triggers: without any, this branch is all a record pays.
    if (EDGETRACE_DETAIL_UNLIKELY(triggers_ != nullptr) && triggers_->watches(id)) host_->watched_record(ring, id, r);
    if (EDGETRACE_DETAIL_LIKELY(kind == format::site_kind::span)) {
      advance(r.t_end);
      cursor_ = format::put_varint(cursor_, std::uint64_t{id} << 2);
      cursor_ = format::put_varint(cursor_, r.t_end - ref_);
      cursor_ = format::put_varint(cursor_, r.t_end >= r.t_begin ? r.t_end - r.t_begin : 0);
      ref_ = r.t_end;
    } else {
      advance(r.t_begin);
      const auto type = kind == format::site_kind::counter ? format::event_type::counter : format::event_type::instant;
      cursor_ = format::put_varint(cursor_, (std::uint64_t{id} << 2) | static_cast<std::uint8_t>(type));
      cursor_ = format::put_varint(cursor_, r.t_begin - ref_);
      ref_ = r.t_begin;
      if (kind == format::site_kind::counter) {
        format::put_u64(cursor_, r.t_end);
        cursor_ += 8;
      }
    }
  }

  /// The tick an events chunk starting with `r` takes as its base.
  static std::uint64_t reference_tick(const record& r, const site_cache_entry* slot) noexcept {
    if (tag_of(r.word) == tag_loss) return r.t_begin;
    if (tag_of(r.word) == tag_named) return r.t_end;
    return slot->kind == format::site_kind::span ? r.t_end : r.t_begin;
  }

  std::vector<unsigned char> chunk_;         ///< events chunk being built
  std::vector<unsigned char> client_chunk_;  ///< flusher clients' chunk being sealed
  // Scratch space reused. Members rather than locals: a fork() can
  // snapshot the flusher mid-cycle, and memory reachable only from its
  // stack would look leaked in the child.
  std::vector<unsigned char> scratch_;
  std::string name_scratch_;
  std::uint64_t ref_ = 0;
  unsigned char* cursor_ = nullptr;  ///< next byte of the events payload; null = no chunk open
  /// An allocation record whose bytes (the next record, tag_more) have not
  /// been read yet; thread_id 0 = none.
  struct pending_alloc {
    std::uint32_t thread_id;
    std::uint32_t site_id;
    std::uint64_t tick;
    std::uint64_t address;
  } pending_alloc_ = {};
  /// Literal sites seen, with what encoding needs, so that the descriptor
  /// is read only once (it may belong to a library unloaded since).
  std::unordered_map<const site*, site_cache_entry> site_ids_;
  std::unordered_map<std::uint64_t, std::uint32_t> named_ids_;
  std::uint32_t next_site_id_ = 1;
  std::uint32_t next_thread_id_ = 1;
  site_cache_entry site_cache_[256] = {};
  named_cache_entry named_cache_[256] = {};
  /// The in-band loss record of the last records of unloaded libraries
  /// dropped in a row: where it starts and ends in the events chunk, the
  /// reference tick before it, and what it says (ticks: the records' first
  /// values). A drop right after it rewrites it, one more; so coalescing
  /// costs the drain loop nothing.
  struct {
    unsigned char* at;
    unsigned char* end;  ///< null: nothing to extend
    std::uint64_t ref, count, first, last;
  } unloaded_loss_ = {};
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
