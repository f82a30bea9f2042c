// SPDX-License-Identifier: MIT
// GPU chunks (format 1.2): pass 1 reads devices, streams, clock anchors and totals; the GPU pass places each span on the host timeline.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include <edgetrace/decode/detail/diagnostic_log.hpp>
#include <edgetrace/decode/detail/metadata_chunks.hpp>
#include <edgetrace/decode/detail/payload_cursor.hpp>
#include <edgetrace/decode/gpu_clock.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// A GPU span the alignment put over the previous span of its stream is
/// moved after it by any amount (a stream runs in order); a move up to this
/// is rounding of float ms between anchors of one chain, a larger one an
/// error of the alignment that `edgetrace info` says.
inline constexpr std::int64_t gpu_fifo_tolerance_ns = 1000;

/// A gpu span record's fields.
struct raw_gpu_span {
  std::uint64_t flags = 0, stream = 0, site = 0, os_tid = 0, begin = 0, length = 0;
  std::uint64_t anchor = 0, duration = 0;
  std::int64_t offset = 0;
};

inline bool decode_gpu_span(payload_cursor& b, raw_gpu_span& s) {
  if (!b.varint(s.flags) || !b.varint(s.stream) || !b.varint(s.site) || !b.varint(s.os_tid) || !b.varint(s.begin) ||
      !b.varint(s.length) || s.begin + s.length < s.begin)
    return false;
  if ((s.flags & format::gpu_span_resolved) == 0) return true;
  std::uint64_t offset;
  if (!b.varint(s.anchor) || !b.varint(offset) || !b.varint(s.duration)) return false;
  s.offset = format::unzigzag(offset);
  return true;
}

/// Pass 1's reading of one gpu chunk's records into the writer's `gpu`.
class gpu_chunk_reader {
 public:
  explicit gpu_chunk_reader(writer_info& w) : w_(w), g_(w.gpu) {}

  /// Reads a gpu chunk: devices, streams, anchors, totals; span records
  /// are only counted (and captured launches remembered, to flag them).
  void read(diagnostic_log& log, payload_cursor& in, std::uint64_t offset) {
    g_.present = true;
    const bool ok = for_each_record(in, [this](std::uint8_t tag, payload_cursor& b) { return record(tag, b); });
    if (!ok) log.malformed("gpu", offset, w_);
    if (unknown_streams_ != 0) {
      char text[200];
      std::snprintf(text, sizeof text, "gpu chunk at offset %llu (%s): %llu GPU span(s) of an undefined stream ignored",
                    static_cast<unsigned long long>(offset), w_.label().c_str(),
                    static_cast<unsigned long long>(unknown_streams_));
      log.add(diagnostic::severity::damage, offset, text);
    }
  }

 private:
  /// One record; false when malformed. A record of a newer minor is
  /// stepped over (its size is known).
  bool record(std::uint8_t tag, payload_cursor& b) {
    switch (static_cast<format::gpu_record>(tag)) {
      case format::gpu_record::runtime:
        if (!b.varint(g_.driver_version) || !b.varint(g_.runtime_version) || !b.varint(g_.device_count) ||
            !b.string(g_.backend))
          return false;
        g_.has_runtime = true;
        return true;
      case format::gpu_record::device: return device(b);
      case format::gpu_record::stream: return stream(b);
      case format::gpu_record::anchor: return anchor(b);
      case format::gpu_record::span: return span(b);
      case format::gpu_record::stats:
        if (!b.varint(g_.launches) || !b.varint(g_.resolved) || !b.varint(g_.captured) || !b.varint(g_.unresolved) ||
            !b.varint(g_.skipped) || !b.varint(g_.event_pairs))
          return false;
        g_.has_stats = true;
        // 1.10: of the skipped, those for want of an event pair.
        g_.has_skip_reasons = b.left() != 0 && b.varint(g_.skipped_no_pair) && g_.skipped_no_pair <= g_.skipped;
        return true;
      case format::gpu_record::off: return b.string(g_.off_reason);
    }
    return true;
  }

  bool device(payload_cursor& b) {
    std::uint64_t index;
    std::string name;
    std::uint64_t major, minor;
    if (!b.varint(index) || !b.string(name) || !b.varint(major) || !b.varint(minor)) return false;
    gpu_device_info& d = g_.devices[index];
    d.index = index;
    d.name = std::move(name);
    d.cc_major = major;
    d.cc_minor = minor;
    return true;
  }

  bool stream(payload_cursor& b) {
    gpu_stream_info s;
    if (!b.varint(s.id) || s.id == 0 || !b.varint(s.device) || !b.u64(s.handle) || !b.varint(s.owner_tid))
      return false;
    auto found = g_.streams.find(s.id);
    if (found == g_.streams.end()) {
      s.order = g_.streams.size();
      g_.streams.emplace(s.id, s);
    }
    g_.devices[s.device].index = s.device;
    return true;
  }

  bool anchor(payload_cursor& b) {
    std::uint64_t device, before, after, since;
    gpu_clock::anchor a;
    if (!b.varint(device) || !b.varint(a.seq) || !b.u64(before) || !b.u64(after) || !b.varint(a.link) ||
        !b.varint(since))
      return false;
    a.since_previous_ns = format::unzigzag(since);
    gpu_device_info& d = g_.devices[device];
    d.index = device;
    d.anchors.push_back(a);
    d.anchor_ticks.emplace_back(before, after);
    return true;
  }

  bool span(payload_cursor& b) {
    raw_gpu_span s;
    if (!decode_gpu_span(b, s)) return false;
    const auto stream = g_.streams.find(s.stream);
    if (stream == g_.streams.end()) {
      ++unknown_streams_;
      return true;
    }
    // The launch is a host span: it belongs to the writer's time range.
    include_ticks(w_, s.begin, s.begin + s.length);
    if (s.flags & format::gpu_span_resolved) {
      ++stream->second.resolved;
    } else if (s.flags & format::gpu_span_captured) {
      ++stream->second.captured;
      if (g_.captured_spans.size() < writer_gpu::max_captured_keys)
        g_.captured_spans.emplace(s.os_tid, s.begin + s.length);
    } else {
      ++stream->second.unresolved;
    }
    return true;
  }

  writer_info& w_;
  writer_gpu& g_;
  std::uint64_t unknown_streams_ = 0;
};

/// After the writer's clock model: anchors to host ns, one fit per device.
inline void build_gpu_clocks(writer_info& w) {
  for (auto& entry : w.gpu.devices) {
    gpu_device_info& d = entry.second;
    for (std::size_t i = 0; i < d.anchors.size(); ++i) {
      d.anchors[i].host_before_ns = w.clock.to_ns(d.anchor_ticks[i].first);
      d.anchors[i].host_after_ns = w.clock.to_ns(d.anchor_ticks[i].second);
    }
    d.clock.build(d.anchors);
  }
}

/// The GPU pass's placing of span records: finds each span's stream,
/// device, site and launching thread, takes host times from the writer's
/// clock model (exactly as the events pass) and GPU times from the
/// device's fitted clock, kept in order per stream.
class gpu_span_placer {
 public:
  explicit gpu_span_placer(const std::map<std::uint32_t, writer_info>& writers) {
    for (const auto& w : writers)
      for (const auto& t : w.second.threads)
        if (t.second.has_record) by_tid_.emplace(std::make_pair(w.first, t.second.os_tid), &t.second);
  }

  /// Fills `g` from `s`; false when the span's stream is undefined (it was
  /// reported by pass 1).
  bool place(const writer_info& w, const raw_gpu_span& s, gpu_span& g) {
    const auto stream = w.gpu.streams.find(s.stream);
    if (stream == w.gpu.streams.end()) return false;
    g.writer = &w;
    g.stream = &stream->second;
    const auto device = w.gpu.devices.find(stream->second.device);
    g.device = device != w.gpu.devices.end() ? &device->second : nullptr;
    const auto site = w.sites.find(s.site);
    g.site = site != w.sites.end() ? &site->second : nullptr;
    const auto thread = by_tid_.find(std::make_pair(w.id, s.os_tid));
    g.thread = thread != by_tid_.end() ? thread->second : nullptr;
    g.os_tid = s.os_tid;
    g.flags = static_cast<std::uint32_t>(s.flags);
    g.host_begin_tick = s.begin;
    g.host_end_tick = s.begin + s.length;
    g.host_begin_ns = w.clock.to_ns(g.host_begin_tick);
    g.host_end_ns = s.length == 0 ? g.host_begin_ns : w.clock.to_ns(g.host_end_tick);
    if ((s.flags & format::gpu_span_resolved) != 0 && g.device != nullptr &&
        g.device->clock.to_host_ns(s.anchor, static_cast<long double>(s.offset), g.begin_ns) &&
        g.device->clock.to_host_ns(s.anchor, static_cast<long double>(s.offset) + static_cast<long double>(s.duration),
                                   g.end_ns)) {
      g.resolved = true;
      g.gpu_duration_ns = s.duration;
      g.aligned_begin_ns = g.begin_ns;
      keep_in_order(g);
    }
    return true;
  }

 private:
  /// Adjusts a resolved span's GPU times: never before its launch, and in
  /// order after the stream's previous span.
  void keep_in_order(gpu_span& g) {
    if (g.end_ns < g.begin_ns) g.end_ns = g.begin_ns;
    if (g.begin_ns < g.host_begin_ns) {
      // The GPU cannot start work before the host enqueued it: the
      // alignment is off here. Keep the measured length (both ends
      // are within +-2^61 and host times within +-2^62: no overflow).
      const std::int64_t length = std::min(g.end_ns - g.begin_ns, std::int64_t{1} << 61);
      g.begin_ns = g.host_begin_ns;
      g.end_ns = g.begin_ns + length;
      g.placed_at_launch = true;
    }
    // A stream runs its work in order, so a span never overlaps the one
    // before it. Two spans timed from anchors of one chain disagree by tens
    // of ns (float ms); from two chains (each fitted on its own), by the
    // fits' errors: microseconds when the host was slow to see anchors
    // complete. A span the alignment put over the previous one (starting
    // inside it, or before it, and ending after its start) is moved to
    // start where that one ends, keeping its length; moved_after_previous_ns
    // says how far. Nested spans (a scope inside a scope, or around it:
    // the outer one completes, and is written, after the inner) are left
    // alone.
    auto& last = previous_[g.stream];
    const bool inside = g.begin_ns >= last.first && g.end_ns <= last.second;
    const bool around = g.begin_ns <= last.first && g.end_ns >= last.second;
    if (last.second != 0 && g.begin_ns < last.second && !inside && !around) {
      const std::int64_t move = last.second - g.begin_ns;
      g.end_ns += move;
      g.begin_ns = last.second;
      g.moved_after_previous_ns = move;
    }
    // Back-to-back work starts 1 ns after the previous end: viewers
    // that rebuild an end as ts + dur in floating point (speedscope)
    // could otherwise see the next start before it.
    if (last.second != 0 && g.begin_ns == last.second && g.end_ns > g.begin_ns + 1) ++g.begin_ns;
    last = {g.begin_ns, g.end_ns};
  }

  std::map<std::pair<std::uint32_t, std::uint64_t>, const thread_info*> by_tid_;
  // Per stream, the (begin, end) of the span placed last.
  std::map<const gpu_stream_info*, std::pair<std::int64_t, std::int64_t>> previous_;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
