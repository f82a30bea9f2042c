// SPDX-License-Identifier: MIT
// The Perfetto packet stream: framing, and the sequence of everything but the threads' events, with its interning (internal to perfetto/writer.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/perfetto/proto.hpp>
#include <edgetrace/sinks/perfetto/protobuf.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// Flow id of EDGETRACE_FLOW(name, id) in writer `writer`: a 64-bit FNV-1a
/// hash (top bit clear), so no table of flows is kept.
inline std::uint64_t perfetto_flow_id(std::uint32_t writer, const std::string& name, std::uint64_t id) {
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 1099511628211ull;
  };
  mix(writer, 4);
  for (char c : name) mix(static_cast<unsigned char>(c), 1);
  mix(0xFF, 1);
  mix(id, 8);
  return h >> 1;
}

/// Flow id from a host launch span to its GPU work (top bit set): both ends
/// know the writer, the launching thread and the span's begin tick.
inline std::uint64_t perfetto_launch_id(std::uint32_t writer, std::uint64_t os_tid, std::uint64_t begin_tick) {
  std::uint64_t h = perfetto_flow_id(writer, "launch", os_tid);
  h = (h ^ begin_tick) * 0x9E3779B97F4A7C15ull;
  return (h ^ (h >> 29)) | (std::uint64_t{1} << 63);
}

/// The packet stream of one trace: framing of each TracePacket, and the one
/// packet sequence with its interning tables. Each packet is built in a
/// reused buffer, then copied once to the output buffer.
class perfetto_stream {
 public:
  explicit perfetto_stream(std::FILE* out, std::size_t buffer = std::size_t{1} << 20) : o_(out, buffer) {}

  /// A track descriptor packet: a process, a thread, a counter or a named
  /// track. `pid`/`tid` < 0: not that kind.
  void descriptor(std::uint64_t uuid, std::uint64_t parent, std::int64_t pid, std::int64_t tid,
                  const std::string& name, bool counter) {
    namespace p = perfetto_proto;
    start_packet();
    pb_.begin_message(p::packet_track_descriptor);
    pb_.add_varint(p::track_uuid, uuid);
    if (parent != 0) pb_.add_varint(p::track_parent_uuid, parent);
    if (pid >= 0 && tid < 0) {
      pb_.begin_message(p::track_process);
      pb_.add_int(p::process_pid, pid);
      if (!name.empty()) pb_.add_string(p::process_name, name);
      pb_.end_message();
    } else if (pid >= 0) {
      pb_.begin_message(p::track_thread);
      pb_.add_int(p::thread_pid, pid);
      pb_.add_int(p::thread_tid, tid);
      if (!name.empty()) pb_.add_string(p::thread_name, name);
      pb_.end_message();
    } else {
      pb_.add_string(p::track_name, name);
      if (counter) {
        pb_.begin_message(p::track_counter);
        pb_.end_message();
      }
    }
    pb_.end_message();
    end_packet();
  }

  /// One TrackEvent. `name`/`category` are interned (null: none, for slice
  /// ends). Flow ids and arguments go on slice begins.
  void event(std::int64_t ns, std::uint64_t track, std::uint64_t type, const std::string* name,
             const std::string* category, const std::vector<std::uint64_t>& flows = {},
             const std::vector<std::uint64_t>& terminating = {}, const std::vector<const annotation*>& args = {}) {
    begin_event(ns, track, type, name, category);
    for (std::uint64_t id : flows) pb_.add_fixed64(perfetto_proto::event_flow_ids, id);
    for (std::uint64_t id : terminating) pb_.add_fixed64(perfetto_proto::event_terminating_flow_ids, id);
    add_args(pb_, args);
    end_event();
  }
  /// One counter sample: a double (EDGETRACE_COUNTER), or an integer (live
  /// bytes: a varint is 3 to 5 bytes where a double takes 9).
  void counter(std::int64_t ns, std::uint64_t track, double value) {
    begin_event(ns, track, perfetto_proto::type_counter, nullptr, nullptr);
    pb_.add_double(perfetto_proto::event_double_counter_value, value);
    end_event();
  }
  void counter(std::int64_t ns, std::uint64_t track, std::int64_t value) {
    begin_event(ns, track, perfetto_proto::type_counter, nullptr, nullptr);
    pb_.add_int(perfetto_proto::event_counter_value, value);
    end_event();
  }

  /// Compresses `plain` (framed packets: a Trace fragment) into
  /// `compressed` as zlib deflate, what TracePacket.compressed_packets holds;
  /// false on failure.
  using compressor = std::function<bool(std::string_view plain, std::string& compressed)>;
  /// Input per compressed packet: Perfetto wants each such TracePacket
  /// under 512 KB, and deflate never grows data by more than 0.1 %.
  static constexpr std::size_t compress_chunk = 384 * 1024;

  /// From now on, packets go out in compressed_packets TracePackets of
  /// about compress_chunk packet bytes each.
  void compress_with(compressor c) { compress_ = std::move(c); }

  /// Frames and writes one packet built elsewhere (another sequence's).
  void write_packet(std::string_view packet) {
    frame_.clear();
    frame_.push_back(static_cast<char>((perfetto_proto::trace_packet << 3) | protobuf_writer::wire_length));
    protobuf_writer::append_varint(frame_, packet.size());
    ++packets_;
    if (!compress_) {
      o_.write(frame_);
      o_.write(packet);
      return;
    }
    plain_.append(frame_);
    plain_.append(packet.data(), packet.size());
    if (plain_.size() >= compress_chunk) write_compressed();
  }
  /// One debug annotation per key into `pb`: the last value recorded for
  /// it (walking back from the last argument, a key already written is
  /// skipped).
  void add_args(protobuf_writer& pb, const std::vector<const annotation*>& args) {
    namespace p = perfetto_proto;
    keys_.clear();
    for (auto a = args.rbegin(); a != args.rend(); ++a) {
      std::string key = (*a)->name();
      if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) continue;
      pb.begin_message(p::event_debug_annotations);
      pb.add_string(p::annotation_name, key);
      if ((*a)->type == format::annotation_record::arg_name) pb.add_string(p::annotation_string_value, (*a)->value_text());
      else if ((*a)->is_bool()) pb.add_bool(p::annotation_bool_value, (*a)->value != 0);
      else if ((*a)->is_real()) pb.add_double(p::annotation_double_value, (*a)->real_value());
      else pb.add_int(p::annotation_int_value, (*a)->int_value());
      pb.end_message();
      keys_.push_back(std::move(key));
      ++args_written_;
    }
  }

  /// Writes what is pending; false on a write (or compression) error.
  bool flush() {
    if (!plain_.empty()) write_compressed();
    return o_.flush() && !compress_failed_;
  }
  std::uint64_t packets() const noexcept { return packets_; }
  std::uint64_t compressed_packets() const noexcept { return compressed_packets_; }
  std::uint64_t plain_bytes() const noexcept { return plain_bytes_; }
  std::uint64_t args_written() const noexcept { return args_written_; }

 private:
  /// Opens a TrackEvent packet (interning what it names first); the
  /// caller adds the event's own fields, then calls end_event().
  void begin_event(std::int64_t ns, std::uint64_t track, std::uint64_t type, const std::string* name,
                   const std::string* category) {
    namespace p = perfetto_proto;
    const std::uint64_t name_iid = name ? intern(names_, *name, new_names_) : 0;
    const std::uint64_t category_iid = category ? intern(categories_, *category, new_categories_) : 0;
    start_packet();
    pb_.add_varint(p::packet_timestamp, ns > 0 ? static_cast<std::uint64_t>(ns) : 0);
    if (!new_names_.empty() || !new_categories_.empty()) {
      pb_.begin_message(p::packet_interned_data);
      add_interned(p::interned_event_categories, new_categories_);
      add_interned(p::interned_event_names, new_names_);
      pb_.end_message();
    }
    pb_.begin_message(p::packet_track_event);
    pb_.add_varint(p::event_type, type);
    pb_.add_varint(p::event_track_uuid, track);
    if (name_iid != 0) pb_.add_varint(p::event_name_iid, name_iid);
    if (category_iid != 0) pb_.add_varint(p::event_category_iids, category_iid);
  }
  void end_event() {
    pb_.end_message();
    end_packet();
  }

  using table = std::unordered_map<std::string, std::uint64_t>;
  using fresh = std::vector<std::pair<std::uint64_t, const std::string*>>;

  /// Every packet is on sequence 1; the first clears its incremental state
  /// (the interning tables), the others depend on it.
  void start_packet() {
    namespace p = perfetto_proto;
    pb_.clear();
    pb_.add_varint(p::packet_trusted_packet_sequence_id, 1);
    pb_.add_varint(p::packet_sequence_flags,
                   packets_ == 0 ? p::seq_incremental_state_cleared : p::seq_needs_incremental_state);
  }
  /// Frames the packet as one `repeated TracePacket packet = 1` of Trace.
  void end_packet() { write_packet(pb_.bytes()); }
  /// The iid of `s` (>= 1); a new string is queued for the packet's
  /// interned_data.
  static std::uint64_t intern(table& t, const std::string& s, fresh& out) {
    const auto found = t.find(s);
    if (found != t.end()) return found->second;
    const auto added = t.emplace(s, t.size() + 1).first;
    out.emplace_back(added->second, &added->first);  // node-based map: the key's address is stable
    return added->second;
  }
  void add_interned(std::uint32_t field, fresh& entries) {
    for (const auto& e : entries) {
      pb_.begin_message(field);
      pb_.add_varint(perfetto_proto::interned_iid, e.first);
      pb_.add_string(perfetto_proto::interned_name, *e.second);
      pb_.end_message();
    }
    entries.clear();
  }
  /// The pending packets as one TracePacket { compressed_packets: deflate }.
  void write_compressed() {
    compressed_.clear();
    plain_bytes_ += plain_.size();
    if (!compress_failed_ && !compress_(plain_, compressed_)) compress_failed_ = true;
    plain_.clear();
    if (compress_failed_) return;
    std::string& head = frame_;
    head.clear();
    protobuf_writer::append_varint(head, (std::uint64_t{perfetto_proto::packet_compressed_packets} << 3) |
                                             protobuf_writer::wire_length);
    protobuf_writer::append_varint(head, compressed_.size());
    std::string outer;
    outer.push_back(static_cast<char>((perfetto_proto::trace_packet << 3) | protobuf_writer::wire_length));
    protobuf_writer::append_varint(outer, head.size() + compressed_.size());
    o_.write(outer);
    o_.write(head);
    o_.write(compressed_);
    ++compressed_packets_;
  }

  buffered_output o_;
  compressor compress_;
  std::string plain_, compressed_;  // packets waiting to be compressed; the last compressed chunk
  bool compress_failed_ = false;
  std::uint64_t compressed_packets_ = 0, plain_bytes_ = 0;
  protobuf_writer pb_;
  std::string frame_;
  std::vector<std::string> keys_;  // add_args' scratch: keys written for this event
  table names_, categories_;
  fresh new_names_, new_categories_;
  std::uint64_t packets_ = 0;
  std::uint64_t args_written_ = 0;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
