// SPDX-License-Identifier: MIT
// Streaming two-pass reader of .etr dumps: metadata first, then resolved events handed to a sink.
//
// This is the driver: it runs the passes over the pieces in detail/
// (chunk_walker: framing and resync; metadata_chunks, annotation_chunks,
// gpu_chunks: pass 1's decoders; events_pass: pass 2). What a dump reads
// as (writer_info, thread_info, event, gpu_span, ...) is in model.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <edgetrace/decode/detail/annotation_chunks.hpp>
#include <edgetrace/decode/detail/chunk_walker.hpp>
#include <edgetrace/decode/detail/diagnostic_log.hpp>
#include <edgetrace/decode/detail/end_order.hpp>
#include <edgetrace/decode/detail/event_codec.hpp>
#include <edgetrace/decode/detail/events_pass.hpp>
#include <edgetrace/decode/detail/device_chunks.hpp>
#include <edgetrace/decode/detail/gpu_chunks.hpp>
#include <edgetrace/decode/detail/metadata_chunks.hpp>
#include <edgetrace/decode/detail/payload_cursor.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/decode/snapshot.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Streaming reader of one dump file. Usage:
///
///     dump_reader r;
///     if (!r.open(path) || !r.read_metadata()) fail(r.error());
///     r.read_events([&](const event& e) { ... });
///     for (auto& d : r.diagnostics()) ...
///
/// Memory: one chunk buffer (<= 4 MiB), a 64 KiB scan window, and the
/// per-writer metadata (sites, threads, calibration pairs); never the file.
/// Errors are return values; nothing throws.
class dump_reader {
 public:
  /// Diagnostics beyond this many are counted, not stored.
  static constexpr std::size_t max_stored_diagnostics = detail::diagnostic_log::max_stored;

  // Out of line, with the passes: building and destroying the per-writer
  // metadata is code too, compiled once in edgetrace::reader.
  dump_reader();
  ~dump_reader();
  dump_reader(const dump_reader&) = delete;
  dump_reader& operator=(const dump_reader&) = delete;

  /// Opens `path` and checks its header. On failure returns false and
  /// error() says why, in words fit for "edgetrace: error: <file>: <what>".
  bool open(const std::string& path);

  /// Pass 1: reads every chunk, keeps metadata, validates the chunk stream
  /// and records layout diagnostics; builds each writer's clock model.
  /// Returns false only on an I/O error (see error()).
  bool read_metadata();

  /// Pass 2: decodes every events chunk and calls `sink(const event&)` for
  /// each span, instant, counter and loss record, in file order (per thread:
  /// the order the thread recorded them; spans by end time). Resets the
  /// per-thread counts and pass-2 diagnostics first, so it may run again.
  /// Returns false only on an I/O error.
  template <class Sink>
  bool read_events(Sink&& sink) {
    return read_events_to(item_sink<event>(sink));
  }

  /// GPU pass: calls `sink(const gpu_span&)` for every GPU span record of
  /// every writer, in file order (per stream: completion order). Host
  /// times use the writer's clock model exactly as read_events does, so a
  /// span's host_begin_ns equals its host span's begin_ns; GPU times go
  /// through the device's fitted gpu_clock. Returns false only on an I/O
  /// error. Memory: one chunk.
  template <class Sink>
  bool read_gpu_spans(Sink&& sink) {
    return read_gpu_spans_to(item_sink<gpu_span>(sink));
  }

  /// Pass 2, backwards: like read_events, but every thread's events arrive
  /// in reverse order (latest end first), so a span's ancestors arrive
  /// before it and its descendants after it. That lets a sink derive
  /// nesting depth and self time with one stack of open ancestors per thread
  /// (memory bounded by nesting depth, not by the dump). Chunks are visited
  /// last to first (offsets kept by pass 1: 8 bytes per events chunk); a
  /// chunk is decoded forward in segments of `backward_segment` events and
  /// each segment is handed over reversed. Costs about one forward pass.
  /// A span recorded out of order (event::out_of_order: EDGETRACE_RECORD,
  /// an import) is handed over where its end puts it, not where the file
  /// holds it (detail::end_order), so nesting follows the times.
  template <class Sink>
  bool read_events_backward(Sink&& sink) {
    return read_events_backward_to(item_sink<event>(sink));
  }

  /// Every annotation of the dump (arguments, flow steps, allocations,
  /// frees), resolved, in file order (per thread: the order recorded), to
  /// `fn(const annotation&)`. Reads the annotations chunks again; memory:
  /// one chunk. False when a chunk no longer reads (the file changed).
  template <class Fn>
  bool for_each_annotation(Fn&& fn) const {
    return for_each_annotation_to(item_sink<annotation>(fn));
  }

  /// The annotations chunks pass 1 accepted, in file order, with the time
  /// range of each (annotation_stream reads them in either direction).
  const std::vector<detail::annotation_chunk_ref>& annotation_chunks() const noexcept { return annotations_.chunks(); }

  /// Decodes annotations chunk `i` of annotation_chunks() into `buffer`,
  /// calling `fn(const annotation&)` for each annotation, resolved. False
  /// when the chunk no longer reads whole (what a malformed record cuts off
  /// pass 1 did not count either).
  template <class Fn>
  bool decode_annotation_chunk(std::size_t i, std::vector<unsigned char>& buffer, Fn&& fn) const {
    return decode_annotation_chunk_to(i, buffer, item_sink<annotation>(fn));
  }

  /// One validated chunk as stored in the file (header, payload and CRC).
  struct raw_chunk {
    std::uint64_t offset = 0;
    format::chunk_type type = format::chunk_type::end;
    std::uint32_t writer = 0;
    const unsigned char* bytes = nullptr;  ///< the whole chunk, valid during the call
    std::size_t size = 0;                  ///< header + payload + CRC
  };

  /// Calls `fn(const raw_chunk&)` for every chunk that validates, in file
  /// order, stepping over damage like the other passes (merge copies whole
  /// validated chunks). Returns false only on an I/O error.
  template <class Fn>
  bool for_each_chunk(Fn&& fn) {
    return for_each_chunk_to(item_sink<raw_chunk>(fn));
  }

  /// Events per segment of read_events_backward (bounds its buffer).
  static constexpr std::size_t backward_segment = detail::backward_segment;

  /// Adds a diagnostic (sinks use it for what they skip, e.g. NaN counters).
  void add_diagnostic(diagnostic::severity level, std::uint64_t offset, std::string message) {
    walker_.log().add(level, offset, std::move(message));
  }

  const std::string& path() const noexcept { return path_; }
  /// True once read_metadata succeeded.
  bool metadata_read() const noexcept { return metadata_read_; }
  /// Why open/read failed (empty if it did not).
  const std::string& error() const noexcept { return walker_.error(); }
  std::uint16_t version_major() const noexcept { return walker_.version_major(); }
  std::uint16_t version_minor() const noexcept { return walker_.version_minor(); }
  const read_stats& stats() const noexcept { return walker_.stats(); }
  /// read_gpu_spans moves a GPU span the alignment put over the previous
  /// span of its stream after it, by any amount (gpu_span::
  /// moved_after_previous_ns); up to this it is rounding, beyond it an
  /// alignment error that `info` says.
  static constexpr std::int64_t gpu_fifo_tolerance_ns = detail::gpu_fifo_tolerance_ns;

  /// True when the dump holds gpu chunks (read_gpu_spans has work to do).
  bool has_gpu() const noexcept { return stats().gpu_chunks != 0; }

  /// Writers by id; iterate writers_in_order() for file order.
  const std::map<std::uint32_t, writer_info>& writers() const noexcept { return writers_; }
  std::vector<const writer_info*> writers_in_order() const {
    std::vector<const writer_info*> out(writers_.size());
    for (const auto& w : writers_) out[w.second.order] = &w.second;
    return out;
  }
  /// Every thread of every writer, in order of first appearance.
  const std::vector<const thread_info*>& threads_in_order() const noexcept { return threads_; }
  /// Looks up a thread; null when unknown.
  const thread_info* find_thread(std::uint32_t writer_id, std::uint64_t thread_id) const {
    const auto w = writers_.find(writer_id);
    if (w == writers_.end()) return nullptr;
    const auto t = w->second.threads.find(thread_id);
    return t == w->second.threads.end() ? nullptr : &t->second;
  }

  const std::vector<diagnostic>& diagnostics() const noexcept { return walker_.log().stored(); }
  /// Diagnostics not stored because of max_stored_diagnostics.
  std::uint64_t diagnostics_dropped() const noexcept { return walker_.log().dropped(); }
  /// Number of damage diagnostics (stored or not).
  std::uint64_t damage_count() const noexcept { return walker_.log().damage_count(); }
  /// True when data was lost: corruption, truncation, undecodable events, or
  /// a writer without an end record.
  bool damaged() const noexcept { return damage_count() != 0; }
  /// The first writer's snapshot chunk (a flight recorder's dump), or
  /// null when no writer wrote one: an ordinary dump.
  const snapshot_record* snapshot() const {
    for (const writer_info* w : writers_in_order())
      if (w->snapshot.present) return &w->snapshot;
    return nullptr;
  }
  /// True when every writer wrote its end record.
  bool complete() const noexcept {
    for (const auto& w : writers_)
      if (!w.second.has_end) return false;
    return true;
  }

  /// Non-empty when a writer's events cannot be timed: its counter's rate
  /// is unknown (fewer than two calibration pairs and no nominal rate; a
  /// writer cut off before it measured the rate). Says why, in words fit
  /// for "edgetrace: error: <file>: <what>". read_events,
  /// read_events_backward and read_gpu_spans then return false with this
  /// as error(): wrong durations (2.6x for a 2.6 GHz TSC read as 1 GHz)
  /// are worse than none. allow_unknown_rate() lifts that for a caller
  /// that shows no times (info: counts, and the reason).
  const std::string& unknown_rate() const noexcept { return unknown_rate_; }
  void allow_unknown_rate(bool allow = true) noexcept { allow_unknown_rate_ = allow; }

  /// Earliest and latest event time over all writers (ns, CLOCK_MONOTONIC);
  /// valid when has_events().
  bool has_events() const noexcept { return has_events_; }
  /// Records read_events will hand over, over all writers (pass 1's count).
  std::uint64_t event_records() const noexcept {
    std::uint64_t n = 0;
    for (const auto& w : writers_) n += w.second.event_records;
    return n;
  }
  std::int64_t first_ns() const noexcept { return first_ns_; }
  std::int64_t last_ns() const noexcept { return last_ns_; }
 private:
  /// Calls `f(const T&)` for a callable `f` the caller keeps alive for the
  /// sink's life (dump_reader's passes take one for the length of the
  /// pass). One indirect call per item: the pass, not the callable, is what
  /// costs (docs/USING.md, "Tools of your own": +0.2 to 1 % instructions).
  template <class T>
  class item_sink {
   public:
    template <class F>
    explicit item_sink(F& f) noexcept : call_(&call<F>) {
      if constexpr (std::is_function_v<F>) {
        callable_.function = reinterpret_cast<void (*)()>(&f);
      } else {
        callable_.object = const_cast<void*>(static_cast<const void*>(std::addressof(f)));
      }
    }
    void operator()(const T& item) const { call_(callable_, item); }

   private:
    union callable {
      void* object;
      void (*function)();
    };

    template <class F>
    static void call(callable c, const T& item) {
      if constexpr (std::is_function_v<F>) {
        reinterpret_cast<F*>(c.function)(item);
      } else {
        (*static_cast<F*>(c.object))(item);
      }
    }

    callable callable_;
    void (*call_)(callable, const T&);
  };

  // The passes the templates above hand their callable to, without its type:
  // compiled once (edgetrace::reader), or inline in the header-only reader.
  bool read_events_to(item_sink<event> sink);
  bool read_gpu_spans_to(item_sink<gpu_span> sink);
  bool read_events_backward_to(item_sink<event> sink);
  bool for_each_annotation_to(item_sink<annotation> fn) const;
  bool decode_annotation_chunk_to(std::size_t i, std::vector<unsigned char>& buffer, item_sink<annotation> fn) const;
  bool for_each_chunk_to(item_sink<raw_chunk> fn);

  /// Pass 1: one chunk's metadata into its writer.
  void read_metadata_chunk(const detail::chunk& c);

  /// Resets per-thread counts and pass-2 diagnostics before an events pass.
  void begin_events_pass();

  /// The events passes' guard (see unknown_rate()).
  bool durations_allowed();

  writer_info& writer(std::uint32_t id);

  /// After pass 1: clock models, names, times; the reader's time range and
  /// thread order; what is missing.
  void finish_metadata();

  /// One writer after pass 1: its clock model (and notes about it), GPU
  /// clocks, snapshot window, category names, capture and annotations.
  void finish_writer(writer_info& w);

  std::string path_;
  detail::chunk_walker walker_;  // the file, its framing, counters and diagnostics
  bool metadata_read_ = false;
  std::vector<std::uint64_t> events_offsets_;  // pass 1: offset of every valid events chunk
  // Pass 1, per events chunk (as events_offsets_): the latest span end tick
  // of its thread's earlier chunks, so a backward pass knows which spans
  // were recorded out of order (event::out_of_order).
  std::vector<std::uint64_t> events_latest_end_before_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> latest_span_end_;  // (writer, thread): pass 1 only

  std::map<std::uint32_t, writer_info> writers_;
  detail::thread_table thread_table_;
  detail::annotation_decoder annotations_;
  std::vector<const thread_info*> threads_;
  bool has_events_ = false;
  std::int64_t first_ns_ = 0;
  std::int64_t last_ns_ = 0;
  std::string unknown_rate_;         ///< see unknown_rate()
  bool allow_unknown_rate_ = false;  ///< see allow_unknown_rate()
  detail::diagnostic_log::mark pass1_mark_;  // where pass 2 rolls the diagnostics back to
};

// ---------------------------------------------------------------- definitions
// Inline in the header-only reader; with EDGETRACE_SEPARATE_READER=1 (CMake:
// link edgetrace::reader) compiled once, in the library.
#if EDGETRACE_DETAIL_READER_BODIES

EDGETRACE_DETAIL_READER_API dump_reader::dump_reader() = default;
EDGETRACE_DETAIL_READER_API dump_reader::~dump_reader() = default;

EDGETRACE_DETAIL_READER_API bool dump_reader::open(const std::string& path) {
  path_ = path;
  metadata_read_ = false;
  writers_.clear();
  threads_.clear();
  annotations_.reset();
  return walker_.open(path);
}

EDGETRACE_DETAIL_READER_API bool dump_reader::read_metadata() {
  if (!walker_.opened()) return walker_.fail("not open");
  writers_.clear();
  threads_.clear();
  thread_table_ = detail::thread_table{};
  annotations_.reset();
  events_offsets_.clear();
  events_latest_end_before_.clear();
  latest_span_end_.clear();
  walker_.begin_layout_pass();
  std::uint64_t pos = walker_.data_start();
  detail::chunk c;
  while (walker_.next_chunk(pos, c)) {
    ++walker_.stats().chunks_read;
    read_metadata_chunk(c);
  }
  if (!walker_.error().empty()) return false;
  finish_metadata();
  pass1_mark_ = walker_.log().current();
  metadata_read_ = true;
  return true;
}

EDGETRACE_DETAIL_READER_API void dump_reader::read_metadata_chunk(const detail::chunk& c) {
  writer_info& w = writer(c.writer);
  detail::diagnostic_log& log = walker_.log();
  detail::payload_cursor in{c.payload, c.payload + c.size};
  switch (c.type) {
    case format::chunk_type::process: detail::read_process(log, w, in, c.offset); break;
    case format::chunk_type::calibration: detail::read_calibration(in, w.calibration); break;
    case format::chunk_type::definitions: detail::read_definitions(log, w, in, c.offset); break;
    case format::chunk_type::thread: detail::read_thread(log, thread_table_, w, in, c.offset); break;
    case format::chunk_type::events: {
      events_offsets_.push_back(c.offset);
      ++walker_.stats().events_chunks;
      const detail::events_chunk_scan scan = detail::scan_event_ticks(w, in);
      std::uint64_t& latest = latest_span_end_[{c.writer, scan.thread_id}];
      events_latest_end_before_.push_back(latest);
      latest = std::max(latest, scan.latest_span_end);
      break;
    }
    case format::chunk_type::thread_stats: detail::read_thread_stats(log, thread_table_, w, in, c.offset); break;
    case format::chunk_type::end: w.has_end = true; break;
    case format::chunk_type::capture: detail::read_capture(log, w, in, c.offset); break;
    case format::chunk_type::gpu:
      ++walker_.stats().gpu_chunks;
      detail::gpu_chunk_reader(w).read(log, in, c.offset);
      break;
    case format::chunk_type::annotations: annotations_.read(log, thread_table_, w, in, c); break;
    case format::chunk_type::device_tracks: detail::read_device_tracks(log, w, in, c.offset); break;
    case format::chunk_type::device_samples: detail::read_device_samples(log, w, in, c.offset); break;
    case format::chunk_type::snapshot:
      if (!detail::read_snapshot_payload(c.payload, c.size, w.snapshot)) log.malformed("snapshot", c.offset, w);
      break;
    default: ++walker_.stats().chunks_unknown; break;  // a newer minor's chunk: skipped silently
  }
}

EDGETRACE_DETAIL_READER_API void dump_reader::begin_events_pass() {
  walker_.log().rollback(pass1_mark_);
  walker_.stats().events_chunks_damaged = 0;
  walker_.stats().events_bytes_undecoded = 0;
  detail::events_pass::reset_threads(writers_);
}

EDGETRACE_DETAIL_READER_API bool dump_reader::durations_allowed() {
  if (unknown_rate_.empty() || allow_unknown_rate_) return true;
  return walker_.fail(unknown_rate_);
}

EDGETRACE_DETAIL_READER_API writer_info& dump_reader::writer(std::uint32_t id) {
  auto it = writers_.find(id);
  if (it == writers_.end()) {
    it = writers_.emplace(id, writer_info{}).first;
    it->second.id = id;
    it->second.order = writers_.size() - 1;
  }
  return it->second;
}

EDGETRACE_DETAIL_READER_API void dump_reader::finish_metadata() {
  has_events_ = false;
  unknown_rate_.clear();
  for (auto& entry : writers_) {
    writer_info& w = entry.second;
    finish_writer(w);
    if (w.has_events) {
      w.first_ns = w.clock.to_ns(w.min_tick);
      w.last_ns = w.clock.to_ns(w.max_tick);
      if (!has_events_ || w.first_ns < first_ns_) first_ns_ = w.first_ns;
      if (!has_events_ || w.last_ns > last_ns_) last_ns_ = w.last_ns;
      has_events_ = true;
    }
  }
  const std::vector<const writer_info*> in_order = writers_in_order();
  // A writer without an end record that a later writer shares its process
  // with (writer_info::same_process): it called exec; one that a later
  // writer shares only its pid with was killed (another pid namespace, a
  // reused pid). One pass from the last writer back, with the later
  // writers' pids and identities in sets: linear in the writers (n log n),
  // however many share a pid.
  std::set<std::uint64_t> later_pids, later_pids_unidentified;
  std::set<std::tuple<std::uint64_t, std::uint64_t, std::array<unsigned char, 16>>> later_processes;
  const auto identity_of = [](const writer_info& w) { return std::make_tuple(w.pid, w.start_ticks, w.boot_id); };
  for (std::size_t i = in_order.size(); i-- > 0;) {
    const writer_info& w = *in_order[i];
    if (!w.has_process) continue;
    if (!w.has_end && later_pids.count(w.pid) != 0) {
      const bool exec = !w.has_identity || later_pids_unidentified.count(w.pid) != 0 ||
                        later_processes.count(identity_of(w)) != 0;
      writers_[w.id].exec_follows = exec;
      writers_[w.id].pid_reused_later = !exec;
    }
    later_pids.insert(w.pid);
    if (w.has_identity) later_processes.insert(identity_of(w));
    else later_pids_unidentified.insert(w.pid);
  }
  for (const writer_info* w : in_order) {
    if (!w->has_process) {
      char text[160];
      std::snprintf(text, sizeof text, "writer 0x%08x has no process record: pid, clock and name unknown",
                    static_cast<unsigned>(w->id));
      add_diagnostic(diagnostic::severity::damage, 0, text);
    }
    if (!w->has_end)
      add_diagnostic(diagnostic::severity::damage, stats().file_size,
                     "incomplete: writer " + w->label() + " has no end record (" +
                         (w->exec_follows ? "the process called exec: a later writer of this dump is the same process"
                          : w->pid_reused_later
                              ? "process killed or crashed? a later writer has its pid but is another process: "
                                "another pid namespace, or the pid reused"
                              : "process killed or crashed?") +
                         "); events after its last flush are missing");
  }
  annotations_.finish_times(writers_);
  threads_.assign(thread_table_.next_order, nullptr);
  for (const auto& w : writers_)
    for (const auto& t : w.second.threads) threads_[t.second.order] = &t.second;
}

EDGETRACE_DETAIL_READER_API void dump_reader::finish_writer(writer_info& w) {
  w.clock.build(w.calibration, w.clock_source, w.nominal_tick_rate);
  detail::build_gpu_clocks(w);
  detail::resolve_snapshot(w.snapshot, w.clock, w.calibration);
  if (!w.clock.warning().empty()) add_diagnostic(diagnostic::severity::note, 0, w.label() + ": " + w.clock.warning());
  if (!w.clock.rate_known() && w.has_events && unknown_rate_.empty()) {
    char text[320];
    std::snprintf(text, sizeof text,
                  "%s: the %s tick rate is unknown (%zu usable calibration pair(s), no nominal rate): durations "
                  "cannot be computed from this dump (its writer was cut off before it measured the rate)",
                  w.label().c_str(), clock_source_name(w.clock_source), w.clock.pairs_used());
    unknown_rate_ = text;
  }
  std::uint64_t rejected = 0;
  for (const auto& t : w.threads) rejected += t.second.stats_rejected;
  if (rejected != 0)
    add_diagnostic(diagnostic::severity::note, 0,
                   w.label() + ": " + std::to_string(rejected) +
                       " EDGETRACE_RECORD span(s) refused by the writer: they lay more than 1 s outside the "
                       "process's trace (see docs/ANALYSIS.md)");
  detail::resolve_categories(w);
  detail::resolve_capture(w);
  detail::annotation_decoder::finish(w);
}

EDGETRACE_DETAIL_READER_API bool dump_reader::read_events_to(item_sink<event> sink) {
  if (!metadata_read_ && !read_metadata()) return false;
  if (!durations_allowed()) return false;
  begin_events_pass();
  walker_.begin_pass();
  detail::events_pass pass(walker_.log(), walker_.stats());
  std::uint64_t pos = walker_.data_start();
  detail::chunk c;
  while (walker_.next_chunk(pos, c)) {
    if (c.type != format::chunk_type::events) continue;
    pass.forward(c, writers_[c.writer], sink);  // the writer exists: pass 1 saw the same chunk
  }
  return walker_.error().empty();
}

EDGETRACE_DETAIL_READER_API bool dump_reader::read_gpu_spans_to(item_sink<gpu_span> sink) {
  if (!metadata_read_ && !read_metadata()) return false;
  if (!durations_allowed()) return false;
  walker_.begin_pass();
  detail::gpu_span_placer placer(writers_);
  std::uint64_t pos = walker_.data_start();
  detail::chunk c;
  while (walker_.next_chunk(pos, c)) {
    if (c.type != format::chunk_type::gpu) continue;
    const writer_info& w = writers_[c.writer];
    detail::payload_cursor in{c.payload, c.payload + c.size};
    detail::for_each_record(in, [&](std::uint8_t tag, detail::payload_cursor& b) {
      if (tag != static_cast<std::uint8_t>(format::gpu_record::span)) return true;
      detail::raw_gpu_span s;
      if (!detail::decode_gpu_span(b, s)) return false;
      gpu_span g;
      if (placer.place(w, s, g)) sink(static_cast<const gpu_span&>(g));
      return true;
    });
  }
  return walker_.error().empty();
}

EDGETRACE_DETAIL_READER_API bool dump_reader::read_events_backward_to(item_sink<event> sink) {
  if (!metadata_read_ && !read_metadata()) return false;
  if (!durations_allowed()) return false;
  begin_events_pass();
  detail::events_pass pass(walker_.log(), walker_.stats());
  detail::end_order<item_sink<event>> ordered(sink);
  for (std::size_t i = events_offsets_.size(); i-- > 0 && walker_.error().empty();) {
    detail::chunk c;
    walker_.begin_pass();  // a known-good chunk from pass 1: no resync budget applies
    if (walker_.probe_at(events_offsets_[i], c) != detail::probe_result::ok) continue;
    pass.backward(c, writers_[c.writer], ordered, events_latest_end_before_[i]);
  }
  ordered.finish();
  return walker_.error().empty();
}

EDGETRACE_DETAIL_READER_API bool dump_reader::for_each_annotation_to(item_sink<annotation> fn) const {
  std::vector<unsigned char> buffer;
  bool ok = true;
  for (std::size_t i = 0; i < annotation_chunks().size(); ++i)
    ok = decode_annotation_chunk_to(i, buffer, fn) && ok;
  return ok;
}

EDGETRACE_DETAIL_READER_API bool dump_reader::decode_annotation_chunk_to(std::size_t i, std::vector<unsigned char>& buffer,
                                                                     item_sink<annotation> fn) const {
  const detail::annotation_chunk_ref& ref = annotations_.chunks()[i];
  const auto w = writers_.find(ref.writer);
  detail::chunk c;
  if (w == writers_.end() || !walker_.reread_chunk(ref.offset, buffer, c)) return false;
  detail::payload_cursor in{c.payload, c.payload + c.size};
  detail::annotation_decoder::decode(in, [&](const annotation& raw, std::uint64_t) {
    annotation a = raw;
    detail::annotation_decoder::resolve(w->second, a);
    fn(static_cast<const annotation&>(a));
  });
  return true;
}

EDGETRACE_DETAIL_READER_API bool dump_reader::for_each_chunk_to(item_sink<raw_chunk> fn) {
  if (!metadata_read_ && !read_metadata()) return false;
  walker_.begin_pass();
  std::uint64_t pos = walker_.data_start();
  detail::chunk c;
  while (walker_.next_chunk(pos, c)) {
    raw_chunk r;
    r.offset = c.offset;
    r.type = c.type;
    r.writer = c.writer;
    r.bytes = c.payload - format::chunk_header_size;
    r.size = format::chunk_header_size + std::size_t{c.size} + format::chunk_trailer_size;
    fn(static_cast<const raw_chunk&>(r));
  }
  return walker_.error().empty();
}

#endif  // EDGETRACE_DETAIL_READER_BODIES

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
