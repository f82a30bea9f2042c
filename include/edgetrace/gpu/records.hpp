// SPDX-License-Identifier: MIT
// The GPU tracker's encoder: one function per gpu-chunk record (runtime,
// off, stats, stream, device, anchor, span; FORMAT.md, "gpu chunk"),
// gathered into chunks of about 60 KiB and handed to the flusher. Flusher
// thread only; it decides nothing, gpu/tracker.hpp does.
#pragma once

#include <edgetrace/format.hpp>
#include <edgetrace/gpu/backend.hpp>
#include <edgetrace/gpu/handoff.hpp>
#include <edgetrace/writer/flusher_client.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Gpu chunks are sealed near this payload size.
inline constexpr std::size_t gpu_chunk_target = 60u << 10;

/// A launch the flusher took from a thread and waits on (or writes at once).
struct gpu_in_flight {
  gpu_event_pair* pair;
  gpu_thread* owner;
  std::uint32_t site;
  std::uint64_t os_tid;
  std::uint64_t begin_tick;
  std::uint64_t end_tick;
};

/// The counters of the stats record.
struct gpu_totals {
  std::uint64_t launches = 0, resolved = 0, captured = 0, unresolved = 0;
};

/// Encodes gpu records (u8 tag, varint body size, body) into the chunk
/// being filled. Each record costs a few vector appends; no CUDA call.
class gpu_chunk_writer {
 public:
  void runtime(flusher_output& out, int driver_version, int runtime_version, int device_count, const char* backend) {
    auto& b = begin_record();
    put_varint(b, static_cast<std::uint64_t>(driver_version));
    put_varint(b, static_cast<std::uint64_t>(runtime_version));
    put_varint(b, static_cast<std::uint64_t>(device_count));
    put_string(b, backend);
    end_record(out, format::gpu_record::runtime);
  }

  void off(flusher_output& out, const char* reason) {
    put_string(begin_record(), reason);
    end_record(out, format::gpu_record::off);
  }

  void stats(flusher_output& out, const gpu_totals& totals, std::uint64_t skipped, std::uint64_t pairs,
             std::uint64_t skipped_no_pair) {
    auto& b = begin_record();
    put_varint(b, totals.launches);
    put_varint(b, totals.resolved);
    put_varint(b, totals.captured);
    put_varint(b, totals.unresolved);
    put_varint(b, skipped);
    put_varint(b, pairs);
    put_varint(b, skipped_no_pair);  // 1.10
    end_record(out, format::gpu_record::stats);
  }

  /// A span: resolved ones carry their anchor, offset and duration.
  void span(flusher_output& out, std::uint32_t flags, std::uint32_t stream, const gpu_in_flight& f,
            std::uint64_t anchor_seq = 0, std::int64_t offset_ns = 0, std::uint64_t duration_ns = 0) {
    auto& b = begin_record();
    put_varint(b, flags);
    put_varint(b, stream);
    put_varint(b, f.site);
    put_varint(b, f.os_tid);
    put_varint(b, f.begin_tick);
    put_varint(b, f.end_tick >= f.begin_tick ? f.end_tick - f.begin_tick : 0);
    if (flags & format::gpu_span_resolved) {
      put_varint(b, anchor_seq);
      put_varint(b, format::zigzag(offset_ns));
      put_varint(b, duration_ns);
    }
    end_record(out, format::gpu_record::span);
  }

  void stream(flusher_output& out, std::uint32_t id, int device, std::uintptr_t handle, std::uint64_t owner_tid) {
    auto& b = begin_record();
    put_varint(b, id);
    put_varint(b, static_cast<std::uint64_t>(device));
    put_u64(b, handle);
    put_varint(b, owner_tid);
    end_record(out, format::gpu_record::stream);
  }

  void device(flusher_output& out, int device, const gpu_device_properties& properties) {
    auto& b = begin_record();
    put_varint(b, static_cast<std::uint64_t>(device));
    put_string(b, properties.name);
    put_varint(b, static_cast<std::uint64_t>(properties.major));
    put_varint(b, static_cast<std::uint64_t>(properties.minor));
    end_record(out, format::gpu_record::device);
  }

  /// An anchor bracketed by host ticks `before`/`after`; `link` is the
  /// previous anchor's sequence + 1 (0: none), `since_previous` the GPU ns
  /// from it.
  void anchor(flusher_output& out, int device, std::uint64_t seq, std::uint64_t before, std::uint64_t after,
              std::uint64_t link, std::int64_t since_previous) {
    auto& b = begin_record();
    put_varint(b, static_cast<std::uint64_t>(device));
    put_varint(b, seq);
    put_u64(b, before);
    put_u64(b, after);
    put_varint(b, link);
    put_varint(b, format::zigzag(since_previous));
    end_record(out, format::gpu_record::anchor);
  }

  /// Hands the records gathered so far to the flusher as one chunk.
  void seal(flusher_output& out) {
    if (!chunk_.empty()) out.emit(format::chunk_type::gpu, chunk_.data(), chunk_.size());
    chunk_.clear();
  }

 private:
  std::vector<unsigned char> chunk_;   ///< gpu records not yet sealed
  std::vector<unsigned char> record_;  ///< one record's body

  static void put_varint(std::vector<unsigned char>& b, std::uint64_t v) {
    unsigned char bytes[format::max_varint_size];
    b.insert(b.end(), bytes, format::put_varint(bytes, v));
  }
  static void put_u64(std::vector<unsigned char>& b, std::uint64_t v) {
    unsigned char bytes[8];
    format::put_u64(bytes, v);
    b.insert(b.end(), bytes, bytes + 8);
  }
  /// A NUL-terminated string (every caller's buffer is).
  static void put_string(std::vector<unsigned char>& b, const char* text) {
    const std::size_t size = std::strlen(text);
    put_varint(b, size);
    b.insert(b.end(), text, text + size);
  }
  std::vector<unsigned char>& begin_record() {
    record_.clear();
    return record_;
  }
  void end_record(flusher_output& out, format::gpu_record tag) {
    chunk_.push_back(static_cast<unsigned char>(tag));
    put_varint(chunk_, record_.size());
    chunk_.insert(chunk_.end(), record_.begin(), record_.end());
    if (chunk_.size() >= gpu_chunk_target) seal(out);
  }
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
