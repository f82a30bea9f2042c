// SPDX-License-Identifier: MIT
// The pure chunk encoder: turns a thread's records into dump chunks (events, definitions, annotations, threads, calibration, capture) in memory.
//
// No descriptor, no global, no thread: the flusher (writer/flusher.hpp)
// feeds it drained records and writes what it seals (output()); names and
// whether a site's library is still loaded come through the encoder_host
// it is given (writer/encoding/chunk_writer.hpp). tests/writer/encoder_test.cpp feeds it
// records and reads the chunks back with the reader.
#pragma once

#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/writer/capture_control.hpp>
#include <edgetrace/writer/clock.hpp>
#include <edgetrace/writer/encoding/chunk_writer.hpp>
#include <edgetrace/writer/encoding/ring_encoding.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Records in, chunks out. One per stream, used by one thread at a time
/// (the flusher). A ring's own chunk and site cache are in its
/// ring_encoding, whose drain lock the caller holds while it adds that
/// ring's records: between the flusher's visits the ring's thread may
/// encode into them itself (writer/help.hpp).
class chunk_encoder : public chunk_writer {
 public:
  explicit chunk_encoder(encoder_host& host) noexcept : chunk_writer(host) {}

  /// Starts on `ring`'s records: announces its thread, empties a site
  /// cache filled under older definitions (or checked against an older
  /// `unloaded_epoch`), and emits what its thread handed over meanwhile.
  void begin_ring(thread_ring& ring, ring_encoding& enc, std::uint64_t unloaded_epoch)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    announce_thread(ring, enc);
    follow_generation(enc);
    enc.unloaded_epoch = unloaded_epoch;
    unloaded_loss_.end = nullptr;  // a loss record is only extended within one visit
    take_handed(enc);
  }

  /// Encodes `ring`'s records [first, last) in order: runs of known sites
  /// through the ring's own loop, the rest one by one (add).
  void add_run(thread_ring& ring, ring_encoding& enc, const record* first, const record* last)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    if (watch_ != nullptr) {  // every record is judged: one by one
      for (; first != last; ++first) add(ring, enc, *first);
      return;
    }
    follow_generation(enc);  // again: the stream may have started again during this drain
    std::uint64_t encoded = 0;
    while (first != last) {
      first = enc.encode_known(first, last, ring.thread_id, encoded);
      if (first == last) break;
      add(ring, enc, *first++);  // a new site, an annotation, a full chunk: the long way
    }
    ring.written.store(ring.written.load(order_relaxed) + encoded, order_relaxed);
  }

  /// Encodes one drained record of `ring`. Spans, instants and counters go
  /// to the thread's events chunk, annotations to the annotations chunk;
  /// records of an unloaded library are dropped and counted in-band.
  EDGETRACE_DETAIL_ALWAYS_INLINE void add(thread_ring& ring, ring_encoding& enc, const record& r)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    // One site lookup per record: annotations (and unloaded sites) leave
    // here, spans, instants and counters go on to encode with it.
    const site_cache_entry* slot = nullptr;
    if (EDGETRACE_DETAIL_LIKELY(tag_of(r.word) == tag_site)) {
      slot = &site_entry(enc, r.word);
      if (EDGETRACE_DETAIL_UNLIKELY(format::is_annotation(slot->kind))) return annotation(ring, enc, r, *slot);
    } else if (tag_of(r.word) == tag_named) {
      slot = &named_entry(enc, r.word);
    } else if (EDGETRACE_DETAIL_UNLIKELY(tag_of(r.word) == tag_more)) {
      return allocation_bytes(ring, enc, r);
    }
    make_room(ring, enc, reference_tick(r, slot));
    encode(ring, enc, r, slot);
  }

  /// Seals what add() built for the thread (its events, then annotations).
  void end_ring(ring_encoding& enc) EDGETRACE_DETAIL_REQUIRES(enc) {
    finish_events_chunk(enc);
    emit_annotations();
  }

  /// An in-band loss of the thread in an events chunk of its own: `count`
  /// records lost between ticks `first` and `last`.
  void add_loss(thread_ring& ring, ring_encoding& enc, std::uint64_t count, std::uint64_t first, std::uint64_t last)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    finish_events_chunk(enc);  // a no-op after end_ring, where the flusher calls it
    enc.start(ring.thread_id, first);
    enc.put(record{pack_loss(count), first, last}, nullptr);
    finish_events_chunk(enc);
  }

  /// Seals and emits the payloads `ring`'s thread handed over, after any
  /// pending definitions they use. No lock: the hand-off is its own.
  void take_handed(ring_encoding& enc) {
    if (!enc.has_handed()) return;
    emit_definitions();
    enc.take([this, &enc](unsigned char* chunk, std::uint32_t payload) {
      std::size_t size = format::seal_chunk(chunk, format::chunk_type::events, writer_id_, payload);
      std::uint32_t crc = format::get_u32(chunk + size - format::chunk_trailer_size);
      if (enc.same_as_last(size, crc)) {
        // A reader skips an events chunk identical to the thread's previous
        // one as a duplicated write. The tick moves on between two chunks,
        // except with a coarse counter: there (a 16 ns counter, spans of no
        // length) the same few events can follow at the same tick. A
        // rebase at the end (nothing recorded: the next chunk has its own
        // base) makes the bytes differ; the buffer has room for it.
        unsigned char* end = chunk + format::chunk_header_size + payload;
        *end++ = static_cast<unsigned char>(ring_encoding::special_code(format::special_type::rebase));
        *end++ = 0;  // varint 0
        size = format::seal_chunk(chunk, format::chunk_type::events, writer_id_, payload + 2);
        crc = format::get_u32(chunk + size - format::chunk_trailer_size);
      }
      enc.sealed(size, crc);
      out_.insert(out_.end(), chunk, chunk + size);
      if (out_.size() >= output_batch) host_->output_full();
    });
  }

  /// The generation of the site table: a ring's cache filled under another
  /// is emptied before use. Acquire: a helping thread reads it before it
  /// trusts its cache (writer/help.hpp).
  std::uint64_t generation() const noexcept { return generation_.load(order_acquire); }

  /// Thread ids given so far: threads that recorded in this stream (the reports name it).
  std::uint32_t threads_seen() const noexcept { return next_thread_id_ - 1; }

  /// Whether `ring`'s thread chunk is in the stream as it now stands.
  bool announced(const thread_ring& ring) const noexcept { return ring.announced_in == stream_generation_; }

  /// Writes the thread chunk of `ring`: on first sight, and on the first
  /// sight since the stream started again (forget_definitions) with a new
  /// number, its count from 0 and its open chunk sealed under the old one;
  /// and again after the thread was renamed.
  void announce_thread(thread_ring& ring, ring_encoding& enc) EDGETRACE_DETAIL_REQUIRES(enc) {
    const std::uint32_t version = ring.name_version.load(std::memory_order_acquire);
    if (announced(ring) && version == ring.name_version_seen) return;
    if (!announced(ring)) {
      finish_events_chunk(enc);  // encoded before the stream started again: it lands without definitions
      ring.thread_id = next_thread_id_++;
      ring.written.store(0, order_relaxed);
      ring.helped.store(0, order_relaxed);
    }
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
    ring.announced_in = stream_generation_;
  }

  void write_thread_stats(const thread_ring& ring) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, ring.thread_id);
    put_varint(b, ring.written.load(order_relaxed));
    put_varint(b, dropped_records(ring));
    put_varint(b, ring.rejected.load(std::memory_order_relaxed));  // 1.3: older readers skip it
    put_varint(b, ring.helped.load(order_relaxed));                // 1.7: older readers skip it
    emit_chunk(b, format::chunk_type::thread_stats);
  }

  /// A thread's dropped total: full ring, signal handlers that landed
  /// inside the thread's own push, records of an unloaded library (the
  /// last two as written so far), and records with no room below the
  /// dump's bound.
  static std::uint64_t dropped_records(const thread_ring& ring) noexcept {
    return ring.drop_count.load(std::memory_order_relaxed) + ring.signal_dropped + ring.unloaded_dropped +
           ring.room_dropped;
  }

  /// The process chunk.
  void write_process(std::uint64_t pid, const os::process_identity& identity, const settings& config,
                     const char* comm) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, pid);
    b.push_back(static_cast<unsigned char>(tick_source(config.clock)));
    b.push_back(tick_flags(counter_invariant(), config.clock_fell_back));
    put_varint(b, nominal_tick_rate(config.clock));
    put_varint(b, config.ring_records);
    put_varint(b, std::uint64_t{config.flush_ms} * 1000);
    put_string(b, comm);
    b.push_back(config.drop_when_full ? format::overload_drop : format::overload_wait);  // 1.8
    if (identity.known) {  // 1.15: what exec keeps and no other process shares
      put_varint(b, identity.start_ticks);
      b.insert(b.end(), identity.boot_id, identity.boot_id + sizeof identity.boot_id);
    }
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
    site_cache_entry entry;
    return site_id(site_of(word), entry);
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
    next_generation();
  }

  /// Every site, category and thread name is defined again before its next
  /// use (the file was truncated: it starts again).
  void forget_definitions() noexcept {
    forget_site_cache();
    named_ids_.clear();
    forget_categories();
    ++stream_generation_;
  }

  /// Forgets sites for which unloaded(site) is true (unloaded libraries):
  /// their records must not be read, and a library loaded later may reuse
  /// the addresses. Every ring's cache is emptied before its next use.
  template <class Unloaded>
  void forget_sites_where(Unloaded&& unloaded) {
    for (auto it = site_ids_.begin(); it != site_ids_.end();) it = unloaded(it->first) ? site_ids_.erase(it) : ++it;
    next_generation();
  }

 private:
  /// What site_entry returns for a site in an unloaded library's range.
  static constexpr site_cache_entry unloaded_site{0, 0, 0, static_cast<format::site_kind>(255)};

  void next_generation() noexcept { generation_.store(generation_.load(order_relaxed) + 1, order_release); }

  /// Empties `enc`'s site cache if it was filled under an older generation.
  void follow_generation(ring_encoding& enc) noexcept EDGETRACE_DETAIL_REQUIRES(enc) {
    const std::uint64_t now = generation_.load(order_relaxed);  // ours: the flusher alone bumps it
    if (EDGETRACE_DETAIL_LIKELY(enc.generation == now)) return;
    enc.clear_cache();
    enc.generation = now;
  }

  /// Dump id of a literal site, and its cache entry in `entry`; defines it
  /// on first sight. 0 if the site's library was unloaded before it was
  /// first read.
  EDGETRACE_DETAIL_NOINLINE std::uint32_t site_id(const site* s, site_cache_entry& entry) {
    auto found = site_ids_.find(s);
    if (found != site_ids_.end()) {
      entry = found->second;
      return entry.id;
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
      ctx.entry = {pack_site(ctx.s), self.next_site_id_++, d.category->index, d.kind};
      self.define_category(d.category->index, d.category->name);
      self.define_site(ctx.entry.id, d.kind, d.category->index, d.name, std::strlen(d.name), d.file, d.line);
    };
    if (!host_->read_loaded_site(s, read, &context)) return 0;
    site_ids_.emplace(s, context.entry);
    entry = context.entry;
    return entry.id;
  }

  /// The cache entry (dump id, category, kind) of the literal site in
  /// record word `word`, defining the site on first sight; unloaded_site if
  /// its library is gone. A dense loop of one site costs one compare.
  EDGETRACE_DETAIL_ALWAYS_INLINE const site_cache_entry& site_entry(ring_encoding& enc, std::uint64_t word)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    site_cache_entry& slot = enc.slot(word);
    if (EDGETRACE_DETAIL_UNLIKELY(slot.key != word) && site_id(site_of(word), slot) == 0) return unloaded_site;
    return slot;
  }

  /// Dump id of a (category, interned name) span site.
  std::uint32_t named_site_id(std::uint64_t word) {
    const std::uint64_t key = named_key(word);
    auto found = named_ids_.find(key);
    if (found != named_ids_.end()) return found->second;
    const std::uint32_t id = next_site_id_++;
    named_ids_.emplace(key, id);
    const std::uint32_t category_index = named_category(word);
    host_->category_name(category_index, name_scratch_);
    define_category(category_index, name_scratch_.c_str());
    host_->interned_name(named_id(word), name_scratch_);
    define_site(id, format::site_kind::span, category_index, name_scratch_.data(), name_scratch_.size(), "", 0);
    return id;
  }

  /// The cache entry of a named span's word (a hash lookup per record
  /// would let a fast producer outrun the flusher).
  EDGETRACE_DETAIL_ALWAYS_INLINE const site_cache_entry& named_entry(ring_encoding& enc, std::uint64_t word)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    site_cache_entry& slot = enc.slot(word);
    if (EDGETRACE_DETAIL_UNLIKELY(slot.key != word))
      slot = {word, named_site_id(word), named_category(word), format::site_kind::span};
    return slot;
  }

  /// Drops a record of an unloaded library (cold): counted in the thread's
  /// total and in an in-band loss record at its place in the stream.
  EDGETRACE_DETAIL_NOINLINE void drop_unloaded(thread_ring& ring, ring_encoding& enc, const record& r)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    ++ring.unloaded_dropped;
    // If it was an allocation, its second record (tag_more) goes too.
    pending_alloc_ = {ring.thread_id, 0, 0, 0};
    if (enc.open() && enc.cursor() == unloaded_loss_.end) {  // nothing encoded since the last drop
      enc.set_cursor(unloaded_loss_.at);
      enc.set_ref(unloaded_loss_.ref);
      ++unloaded_loss_.count;
      if (r.t_begin > unloaded_loss_.last) unloaded_loss_.last = r.t_begin;
    } else {
      make_room(ring, enc, r.t_begin);
      unloaded_loss_ = {enc.cursor(), nullptr, enc.ref(), 1, r.t_begin, r.t_begin};
    }
    enc.put(record{pack_loss(unloaded_loss_.count), unloaded_loss_.first, unloaded_loss_.last}, nullptr);
    unloaded_loss_.end = enc.cursor();
  }

  // ---- the events chunk: in the ring's own buffers (ring_encoding).

  /// Opens a chunk counting from tick `base` if none is open, after
  /// sealing a full one.
  void make_room(thread_ring& ring, ring_encoding& enc, std::uint64_t base) EDGETRACE_DETAIL_REQUIRES(enc) {
    if (enc.open() && !enc.full()) return;
    finish_events_chunk(enc);
    enc.start(ring.thread_id, base);
    unloaded_loss_.end = nullptr;
  }

  /// Seals the open chunk (after the definitions it uses) into the output.
  void finish_events_chunk(ring_encoding& enc) EDGETRACE_DETAIL_REQUIRES(enc) {
    if (!enc.open()) return;
    unloaded_loss_.end = nullptr;  // a loss record is only extended in its own chunk
    enc.hand_over();
    take_handed(enc);
  }

  /// An allocation's bytes (tag_more): the pair is complete.
  EDGETRACE_DETAIL_NOINLINE void allocation_bytes(thread_ring& ring, ring_encoding& enc, const record& r)
      EDGETRACE_DETAIL_REQUIRES(enc) {
    if (EDGETRACE_DETAIL_UNLIKELY(pending_alloc_.thread_id == ring.thread_id && pending_alloc_.site_id == 0)) {
      drop_unloaded(ring, enc, r);  // its allocation's library was unloaded
      pending_alloc_.thread_id = 0;
      return;
    }
    count_written(ring);
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
  EDGETRACE_DETAIL_NOINLINE void annotation(thread_ring& ring, ring_encoding& enc, const record& r,
                                            const site_cache_entry& slot) EDGETRACE_DETAIL_REQUIRES(enc) {
    const format::site_kind kind = slot.kind;
    if (EDGETRACE_DETAIL_UNLIKELY(slot.id == 0)) {  // unloaded_site
      drop_unloaded(ring, enc, r);
      return;
    }
    count_written(ring);
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

  /// One more record of `ring` written (the lock holder alone counts).
  static void count_written(thread_ring& ring) noexcept {
    ring.written.store(ring.written.load(order_relaxed) + 1, order_relaxed);
  }

  /// Encodes one record into the open chunk. `slot`: the record's cache
  /// entry (a literal or named site), or null for an in-band loss.
  EDGETRACE_DETAIL_ALWAYS_INLINE void encode(thread_ring& ring, ring_encoding& enc, const record& r,
                                             const site_cache_entry* slot) EDGETRACE_DETAIL_REQUIRES(enc) {
    if (EDGETRACE_DETAIL_LIKELY(slot != nullptr)) {
      count_written(ring);
      // Latency triggers: without any, this branch is all a record pays.
      if (EDGETRACE_DETAIL_UNLIKELY(watch_ != nullptr) && watch_->watches(slot->id))
        host_->watched_record(ring, slot->id, r);
    }
    enc.put(r, slot);
  }

  /// The tick an events chunk starting with `r` takes as its base.
  static std::uint64_t reference_tick(const record& r, const site_cache_entry* slot) noexcept {
    return ring_encoding::reference_tick(r, slot != nullptr ? slot->kind : format::site_kind::span);
  }

  // Scratch space reused. Members rather than locals: a fork() can
  // snapshot the flusher mid-cycle, and memory reachable only from its
  // stack would look leaked in the child.
  std::vector<unsigned char> client_chunk_;  ///< flusher clients' chunk being sealed
  std::vector<unsigned char> scratch_;
  std::string name_scratch_;
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
  /// Bumped each time the stream starts again (forget_definitions): every
  /// thread is announced again under a new number.
  std::uint32_t stream_generation_ = 1;
  /// Bumped (release) whenever sites are forgotten; rings' caches follow.
  atomic_cell<std::uint64_t> generation_{1};
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
