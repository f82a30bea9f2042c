// SPDX-License-Identifier: MIT
// The threads' events on packet sequences of their own, as Perfetto's SDK writes them: incremental timestamps, the thread's track as the sequence default (internal to perfetto/writer.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <edgetrace/decode/model.hpp>
#include <edgetrace/sinks/perfetto/proto.hpp>
#include <edgetrace/sinks/perfetto/protobuf.hpp>
#include <edgetrace/sinks/perfetto/stream.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// The events of thread tracks (slices, instants, loss markers), written
/// the way Perfetto's own SDK writes a thread's events: on a packet
/// sequence of their own, whose defaults name the thread's track (no
/// track_uuid per event) and the sequence's incremental clock (each
/// timestamp is the time since the previous packet's), with names and
/// categories interned on the sequence. A begin then costs 14 bytes and an
/// end 10 (with deltas under 128 ns), where one sequence for everything
/// with absolute times took 24 and 20.
///
/// Such a sequence must go forward in time, and the backward pass hands
/// events over latest first. So each thread's events are buffered (encoded:
/// 16 bytes of index and the event's own bytes); when `segment_events`
/// events or `segment_bytes` bytes are buffered over all threads, and at
/// the end, each thread's buffer is sorted by time, stable (events at the
/// same ns keep the order they came in, which is the order their slices
/// need, as before), and written as a segment of the thread's sequence: a
/// first packet that clears the sequence's incremental state and holds its
/// defaults, every name and category the segment uses, and a ClockSnapshot
/// that sets the incremental clock (64) to the segment's first time on
/// BOOTTIME (the clock the other packets' absolute times are read on); then
/// one packet per event. One sequence id per thread, counting up from 2 (1
/// is perfetto_stream's): one byte in every packet for up to 126 threads,
/// however many segments.
class perfetto_thread_sequences {
 public:
  static constexpr std::size_t default_segment_events = std::size_t{1} << 20;
  static constexpr std::size_t default_segment_bytes = std::size_t{8} << 20;

  /// `segment_events`: how many events are buffered over all threads
  /// before each thread's are written as a sequence (0: the default).
  perfetto_thread_sequences(perfetto_stream& s, perfetto_result& result, std::size_t segment_events = 0,
                            std::size_t segment_bytes = 0)
      : s_(s),
        result_(result),
        segment_events_(segment_events != 0 ? segment_events : default_segment_events),
        segment_bytes_(segment_bytes != 0 ? segment_bytes : default_segment_bytes) {}

  /// One event on thread track `track` (`name`/`category` null: none, for
  /// slice ends); flow ids and arguments go on slice begins.
  void event(std::uint64_t track, std::int64_t ns, std::uint64_t type, const std::string* name,
             const std::string* category, const std::vector<std::uint64_t>& flows = {},
             const std::vector<const annotation*>& args = {}) {
    namespace p = perfetto_proto;
    segment& seg = segment_of(track);
    pb_.clear();
    pb_.add_varint(p::event_type, type);
    if (name != nullptr) pb_.add_varint(p::event_name_iid, intern(seg.names, seg.name_list, *name));
    if (category != nullptr) pb_.add_varint(p::event_category_iids, intern(seg.categories, seg.category_list, *category));
    for (std::uint64_t id : flows) pb_.add_fixed64(p::event_flow_ids, id);
    s_.add_args(pb_, args);
    const std::string_view body = pb_.bytes();
    seg.records.push_back(record{ns > 0 ? ns : 0, static_cast<std::uint32_t>(seg.bytes.size()),
                                 static_cast<std::uint32_t>(body.size())});
    seg.bytes.append(body.data(), body.size());
    buffered_bytes_ += body.size() + sizeof(record);
    if (++buffered_events_ >= segment_events_ || buffered_bytes_ >= segment_bytes_) flush();
  }

  /// Writes every thread's buffered events as a sequence of its own.
  void flush() {
    for (auto& entry : segments_) write_segment(entry.first, entry.second);
    buffered_events_ = 0;
    buffered_bytes_ = 0;
  }

 private:
  struct record {
    std::int64_t ns;
    std::uint32_t offset, size;  // the TrackEvent's bytes in segment::bytes
  };
  struct segment {
    std::vector<record> records;
    std::string bytes;
    std::unordered_map<std::string, std::uint64_t> names, categories;  // iids on this sequence
    std::vector<const std::string*> name_list, category_list;         // by iid - 1
  };

  segment& segment_of(std::uint64_t track) {
    if (last_ != nullptr && track == last_track_) return *last_;
    last_track_ = track;
    last_ = &segments_[track];
    return *last_;
  }
  static std::uint64_t intern(std::unordered_map<std::string, std::uint64_t>& table,
                              std::vector<const std::string*>& list, const std::string& s) {
    const auto found = table.find(s);
    if (found != table.end()) return found->second;
    const auto added = table.emplace(s, list.size() + 1).first;
    list.push_back(&added->first);  // node-based map: the key's address is stable
    return added->second;
  }

  void write_segment(std::uint64_t track, segment& seg) {
    namespace p = perfetto_proto;
    if (seg.records.empty()) return;
    std::stable_sort(seg.records.begin(), seg.records.end(), [](const record& a, const record& b) { return a.ns < b.ns; });
    // One sequence per thread, its incremental state cleared by each
    // segment's first packet (as the SDK clears it periodically): ids stay
    // under 128, one byte in every packet, however many segments.
    const auto known = sequence_of_track_.emplace(track, next_sequence_);
    if (known.second) ++next_sequence_;
    const std::uint64_t sequence = known.first->second;
    const auto first = static_cast<std::uint64_t>(seg.records.front().ns);
    pb_.clear();
    pb_.add_varint(p::packet_trusted_packet_sequence_id, sequence);
    pb_.add_varint(p::packet_sequence_flags, p::seq_incremental_state_cleared);
    pb_.begin_message(p::packet_trace_packet_defaults);
    pb_.add_varint(p::defaults_timestamp_clock_id, p::clock_sequence_incremental);
    pb_.begin_message(p::defaults_track_event_defaults);
    pb_.add_varint(p::event_defaults_track_uuid, track);
    pb_.end_message();
    pb_.end_message();
    pb_.begin_message(p::packet_interned_data);
    add_interned(p::interned_event_categories, seg.category_list);
    add_interned(p::interned_event_names, seg.name_list);
    pb_.end_message();
    pb_.begin_message(p::packet_clock_snapshot);
    pb_.begin_message(p::snapshot_clocks);
    pb_.add_varint(p::clock_id, p::clock_boottime);
    pb_.add_varint(p::clock_timestamp, first);
    pb_.end_message();
    pb_.begin_message(p::snapshot_clocks);
    pb_.add_varint(p::clock_id, p::clock_sequence_incremental);
    pb_.add_varint(p::clock_timestamp, first);
    pb_.add_bool(p::clock_is_incremental, true);
    pb_.end_message();
    pb_.end_message();
    s_.write_packet(pb_.bytes());
    std::uint64_t previous = first;
    for (const record& r : seg.records) {
      const auto ns = static_cast<std::uint64_t>(r.ns);
      packet_.clear();
      append_key(p::packet_trusted_packet_sequence_id, protobuf_writer::wire_varint);
      protobuf_writer::append_varint(packet_, sequence);
      append_key(p::packet_timestamp, protobuf_writer::wire_varint);
      protobuf_writer::append_varint(packet_, ns - previous);
      append_key(p::packet_track_event, protobuf_writer::wire_length);
      protobuf_writer::append_varint(packet_, r.size);
      packet_.append(seg.bytes, r.offset, r.size);
      s_.write_packet(packet_);
      previous = ns;
    }
    ++result_.thread_sequences;
    seg = segment{};  // the next segment clears the sequence again: its own interning
  }
  void append_key(std::uint32_t field, protobuf_writer::wire_type type) {
    protobuf_writer::append_varint(packet_, (static_cast<std::uint64_t>(field) << 3) | type);
  }
  void add_interned(std::uint32_t field, const std::vector<const std::string*>& entries) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      pb_.begin_message(field);
      pb_.add_varint(perfetto_proto::interned_iid, i + 1);
      pb_.add_string(perfetto_proto::interned_name, *entries[i]);
      pb_.end_message();
    }
  }

  perfetto_stream& s_;
  perfetto_result& result_;
  const std::size_t segment_events_;
  const std::size_t segment_bytes_;
  std::map<std::uint64_t, segment> segments_;  // by track uuid
  std::uint64_t last_track_ = 0;
  segment* last_ = nullptr;
  std::size_t buffered_events_ = 0, buffered_bytes_ = 0;
  std::uint64_t next_sequence_ = 2;
  std::unordered_map<std::uint64_t, std::uint64_t> sequence_of_track_;  ///< a thread's track -> its sequence
  protobuf_writer pb_;
  std::string packet_;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
