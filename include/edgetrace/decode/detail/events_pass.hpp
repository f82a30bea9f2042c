// SPDX-License-Identifier: MIT
// Pass 2 over one events chunk: checks its thread, resolves its events for a sink (forward, or backward in segments) and reports what it could not decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>

#include <edgetrace/decode/detail/chunk_walker.hpp>
#include <edgetrace/decode/detail/diagnostic_log.hpp>
#include <edgetrace/decode/detail/event_codec.hpp>
#include <edgetrace/decode/detail/payload_cursor.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Events per segment of a backward pass (bounds its buffer).
inline constexpr std::size_t backward_segment = 32768;

/// One events pass (forward or backward) of a reader; refers to the
/// reader's diagnostics and counters for the length of the pass.
class events_pass {
 public:
  events_pass(diagnostic_log& log, read_stats& stats) : log_(log), stats_(stats) {}

  /// Before a pass: every thread's pass-2 counts at zero, and no previous
  /// chunk to compare with (duplicate detection).
  static void reset_threads(std::map<std::uint32_t, writer_info>& writers) noexcept {
    for (auto& w : writers)
      for (auto& t : w.second.threads) {
        thread_info& ti = t.second;
        ti.spans = ti.instants = ti.counters = ti.loss_records = ti.lost = ti.events_chunks = 0;
        ti.has_last_events_ = false;
        ti.latest_span_end_ = 0;
      }
  }

  /// Decodes chunk `c` of writer `w` and calls `sink(const event&)` for
  /// each event, in the order the thread recorded them.
  template <class Sink>
  void forward(const chunk& c, writer_info& w, Sink& sink) {
    chunk_events events = start(c, w);
    if (events.thread == nullptr) return;
    std::uint64_t unknown_site = 0;
    const decode_error err = decode_resolved<true>(w, *events.thread, events.in, events.base,
                                                   events.thread->latest_span_end_, unknown_site, sink);
    if (err != decode_error::none) report_decode_error(c, w, *events.thread, events.in, err, unknown_site);
  }

  /// Decodes a chunk forward in segments and hands each segment's events
  /// to `sink` last first, the last segment first. Events after a decoding
  /// error are lost exactly as in the forward pass. `latest_end_before`:
  /// the latest span end tick of the thread's earlier chunks (pass 1), from
  /// which each span's out_of_order is derived as in the forward pass.
  template <class Sink>
  void backward(const chunk& c, writer_info& w, Sink& sink, std::uint64_t latest_end_before) {
    chunk_events events = start(c, w);
    if (events.thread == nullptr) return;
    thread_info& t = *events.thread;
    payload_cursor& in = events.in;
    const std::uint64_t base = events.base;
    // Forward scan: keep the last segment's events, and a checkpoint at
    // the start of every segment so earlier ones can be decoded again.
    checkpoints_.clear();
    segment_.clear();
    std::uint64_t latest_end = latest_end_before;
    checkpoints_.push_back(checkpoint{in.pos, base, latest_end});
    std::uint64_t unknown_site = 0;
    std::size_t in_segment = 0;
    auto collect = [&](const event& e) {
      if (in_segment == backward_segment) {
        in_segment = 0;
        segment_.clear();
      }
      segment_.push_back(e);
      if (++in_segment == backward_segment) checkpoints_.push_back(checkpoint{in.pos, e.end_tick, latest_end});
    };
    const decode_error err = decode_resolved<true>(w, t, in, base, latest_end, unknown_site, collect);
    const unsigned char* stop = in.pos;
    if (in_segment == backward_segment) {  // the last segment is exactly full
      checkpoints_.pop_back();
    }
    // checkpoints_.back() now starts the segment held in segment_.
    for (auto it = segment_.rbegin(); it != segment_.rend(); ++it) sink(static_cast<const event&>(*it));
    // The earlier segments again, last first; their events were counted
    // by the forward scan already.
    for (std::size_t k = checkpoints_.size() - 1; k-- > 0;) {
      segment_.clear();
      payload_cursor part{checkpoints_[k].pos, checkpoints_[k + 1].pos};
      std::uint64_t ignored = 0;
      std::uint64_t segment_latest_end = checkpoints_[k].latest_end;
      auto keep = [this](const event& e) { segment_.push_back(e); };
      decode_resolved<false>(w, t, part, checkpoints_[k].ref, segment_latest_end, ignored, keep);
      for (auto it = segment_.rbegin(); it != segment_.rend(); ++it) sink(static_cast<const event&>(*it));
    }
    in.pos = stop;
    if (err != decode_error::none) report_decode_error(c, w, t, in, err, unknown_site);
  }

 private:
  /// Where a segment of an events chunk starts (backward()).
  struct checkpoint {
    const unsigned char* pos;
    std::uint64_t ref;
    std::uint64_t latest_end;  ///< the latest span end tick before it
  };

  /// An events chunk's records after its header, and their thread.
  struct chunk_events {
    payload_cursor in{nullptr, nullptr};
    std::uint64_t base = 0;        ///< the reference tick of the first record
    thread_info* thread = nullptr;  ///< null: the chunk's events cannot be used
  };

  chunk_events start(const chunk& c, writer_info& w) {
    chunk_events events;
    events.in = payload_cursor{c.payload, c.payload + c.size};
    events.thread = chunk_thread(c, w, events.in, events.base);
    return events;
  }

  /// Checks an events chunk's header and thread; null (with a diagnostic)
  /// when its events cannot be used.
  thread_info* chunk_thread(const chunk& c, writer_info& w, payload_cursor& in, std::uint64_t& base) {
    std::uint64_t thread_id;
    char text[320];
    if (!in.varint(thread_id) || !in.varint(base)) {
      std::snprintf(text, sizeof text, "events chunk at offset %llu (%s): malformed header; %u bytes of events lost",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(), static_cast<unsigned>(c.size));
      damage(c.offset, c.size, text);
      return nullptr;
    }
    const auto found = w.threads.find(thread_id);
    if (found == w.threads.end() || !found->second.has_record) {
      std::snprintf(text, sizeof text,
                    "events chunk at offset %llu (%s): unknown thread id %llu (no thread record); %u bytes of "
                    "events lost",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(),
                    static_cast<unsigned long long>(thread_id), static_cast<unsigned>(c.size));
      damage(c.offset, c.size, text);
      return nullptr;
    }
    thread_info& t = found->second;
    if (t.has_last_events_ && t.last_events_crc_ == c.crc && t.last_events_size_ == c.size) {
      // Identical bytes twice in a row for one thread cannot happen (the base
      // tick moves on); it is a duplicated write. Counting it twice would lie.
      std::snprintf(text, sizeof text, "duplicate events chunk at offset %llu (%s, tid %llu) skipped",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(),
                    static_cast<unsigned long long>(t.os_tid));
      log_.add(diagnostic::severity::damage, c.offset, text);
      return nullptr;
    }
    t.has_last_events_ = true;
    t.last_events_crc_ = c.crc;
    t.last_events_size_ = c.size;
    ++t.events_chunks;
    return &t;
  }

  /// Decodes and resolves events from `in` (reference tick `ref`), calling
  /// `sink(const event&)`; with `count`, counts them on the thread.
  /// `latest_end`: the thread's latest span end tick before `in`, kept up
  /// to date; a span that ends before it is out_of_order.
  template <bool count, class Sink>
  decode_error decode_resolved(writer_info& w, thread_info& t, payload_cursor& in, std::uint64_t ref,
                               std::uint64_t& latest_end, std::uint64_t& unknown_site, Sink& sink) {
    event e;
    e.writer = &w;
    e.thread = &t;
    return decode_events(in, ref, [&](const raw_event& r) {
      e.begin_tick = r.begin;
      e.end_tick = r.end;
      e.begin_ns = w.clock.to_ns(r.begin);
      e.end_ns = r.end == r.begin ? e.begin_ns : w.clock.to_ns(r.end);
      e.value = r.value;
      e.count = r.count;
      if (r.type == format::event_type::special) {
        e.kind = event_kind::loss;
        e.site = nullptr;
      } else {
        const auto s = w.sites.find(r.id);
        if (s == w.sites.end()) {
          unknown_site = r.id;
          return false;
        }
        e.site = &s->second;
        e.kind = r.type == format::event_type::span      ? event_kind::span
                 : r.type == format::event_type::instant ? event_kind::instant
                                                         : event_kind::counter;
      }
      e.out_of_order = e.kind == event_kind::span && r.end < latest_end;
      if (e.kind == event_kind::span && r.end > latest_end) latest_end = r.end;
      if constexpr (count) count_event(t, e);
      sink(static_cast<const event&>(e));
      return true;
    });
  }

  static void count_event(thread_info& t, const event& e) noexcept {
    switch (e.kind) {
      case event_kind::span: ++t.spans; break;
      case event_kind::instant: ++t.instants; break;
      case event_kind::counter: ++t.counters; break;
      case event_kind::loss:
        ++t.loss_records;
        t.lost += e.count;
        break;
    }
  }

  void report_decode_error(const chunk& c, const writer_info& w, const thread_info& t, const payload_cursor& in,
                           decode_error err, std::uint64_t unknown_site) {
    char text[320];
    const auto at = static_cast<unsigned long long>(in.pos - c.payload);
    const auto lost = static_cast<unsigned>(in.left());
    if (err == decode_error::rejected)
      std::snprintf(text, sizeof text,
                    "events chunk at offset %llu (%s, tid %llu): unknown site id %llu at payload byte %llu; the "
                    "remaining %u bytes of events lost",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(),
                    static_cast<unsigned long long>(t.os_tid), static_cast<unsigned long long>(unknown_site), at,
                    lost);
    else
      std::snprintf(text, sizeof text,
                    "events chunk at offset %llu (%s, tid %llu): %s at payload byte %llu; the remaining %u bytes of "
                    "events lost",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(),
                    static_cast<unsigned long long>(t.os_tid), decode_error_text(err), at, lost);
    damage(c.offset, lost, text);
  }

  void damage(std::uint64_t offset, std::uint64_t bytes, const char* text) {
    ++stats_.events_chunks_damaged;
    stats_.events_bytes_undecoded += bytes;
    log_.add(diagnostic::severity::damage, offset, text);
  }

  diagnostic_log& log_;
  read_stats& stats_;
  std::vector<event> segment_;
  std::vector<checkpoint> checkpoints_;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
