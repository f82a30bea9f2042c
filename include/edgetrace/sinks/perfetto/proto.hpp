// SPDX-License-Identifier: MIT
// The numbers of Perfetto's trace schema that write_perfetto uses, and what it reports back (perfetto_result).
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <cstddef>
#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Field numbers and enum values of Perfetto's trace schema (protos/perfetto/
/// trace/perfetto_trace.proto in google/perfetto), only those written here.
namespace perfetto_proto {
// message Trace
inline constexpr std::uint32_t trace_packet = 1;
// message TracePacket
inline constexpr std::uint32_t packet_clock_snapshot = 6;
inline constexpr std::uint32_t packet_timestamp = 8;
inline constexpr std::uint32_t packet_trusted_packet_sequence_id = 10;
inline constexpr std::uint32_t packet_track_event = 11;
inline constexpr std::uint32_t packet_interned_data = 12;
inline constexpr std::uint32_t packet_sequence_flags = 13;
inline constexpr std::uint32_t packet_compressed_packets = 50;
inline constexpr std::uint32_t packet_trace_packet_defaults = 59;
inline constexpr std::uint32_t packet_track_descriptor = 60;
// message TracePacketDefaults
inline constexpr std::uint32_t defaults_timestamp_clock_id = 58;
inline constexpr std::uint32_t defaults_track_event_defaults = 11;
// message TrackEventDefaults
inline constexpr std::uint32_t event_defaults_track_uuid = 11;
// message ClockSnapshot, and its Clock
inline constexpr std::uint32_t snapshot_clocks = 1;
inline constexpr std::uint32_t clock_id = 1;
inline constexpr std::uint32_t clock_timestamp = 2;
inline constexpr std::uint32_t clock_is_incremental = 3;
// enum BuiltinClock, and the first of the sequence-scoped clock ids (64..127)
inline constexpr std::uint64_t clock_boottime = 6;
inline constexpr std::uint64_t clock_sequence_incremental = 64;
// enum TracePacket.SequenceFlags
inline constexpr std::uint64_t seq_incremental_state_cleared = 1;
inline constexpr std::uint64_t seq_needs_incremental_state = 2;
// message TrackDescriptor
inline constexpr std::uint32_t track_uuid = 1;
inline constexpr std::uint32_t track_name = 2;
inline constexpr std::uint32_t track_process = 3;
inline constexpr std::uint32_t track_thread = 4;
inline constexpr std::uint32_t track_parent_uuid = 5;
inline constexpr std::uint32_t track_counter = 8;
// message ProcessDescriptor
inline constexpr std::uint32_t process_pid = 1;
inline constexpr std::uint32_t process_name = 6;
// message ThreadDescriptor
inline constexpr std::uint32_t thread_pid = 1;
inline constexpr std::uint32_t thread_tid = 2;
inline constexpr std::uint32_t thread_name = 5;
// message TrackEvent
inline constexpr std::uint32_t event_category_iids = 3;
inline constexpr std::uint32_t event_debug_annotations = 4;
inline constexpr std::uint32_t event_type = 9;
inline constexpr std::uint32_t event_name_iid = 10;
inline constexpr std::uint32_t event_track_uuid = 11;
inline constexpr std::uint32_t event_counter_value = 30;  // int64
inline constexpr std::uint32_t event_double_counter_value = 44;
inline constexpr std::uint32_t event_flow_ids = 47;             // fixed64
inline constexpr std::uint32_t event_terminating_flow_ids = 48;  // fixed64
// enum TrackEvent.Type
inline constexpr std::uint64_t type_slice_begin = 1;
inline constexpr std::uint64_t type_slice_end = 2;
inline constexpr std::uint64_t type_instant = 3;
inline constexpr std::uint64_t type_counter = 4;
// message InternedData
inline constexpr std::uint32_t interned_event_categories = 1;
inline constexpr std::uint32_t interned_event_names = 2;
// messages EventCategory and EventName
inline constexpr std::uint32_t interned_iid = 1;
inline constexpr std::uint32_t interned_name = 2;
// message DebugAnnotation
inline constexpr std::uint32_t annotation_bool_value = 2;
inline constexpr std::uint32_t annotation_int_value = 4;
inline constexpr std::uint32_t annotation_double_value = 5;
inline constexpr std::uint32_t annotation_string_value = 6;
inline constexpr std::uint32_t annotation_name = 10;
}  // namespace perfetto_proto

/// What write_perfetto wrote.
struct perfetto_result {
  std::uint64_t packets = 0;
  std::uint64_t slices = 0;           ///< host spans (a begin and an end each)
  std::uint64_t instants = 0;         ///< instants and marks
  std::uint64_t counters = 0;         ///< counter samples
  std::uint64_t memory_samples = 0;   ///< live-bytes samples on memory pool tracks
  std::uint64_t device_samples = 0;   ///< values on the device's counter tracks (1.9)
  std::uint64_t loss_markers = 0;     ///< "edgetrace: N records lost" instants
  std::uint64_t capture_markers = 0;  ///< recording on/off and phase instants
  std::uint64_t gpu_slices = 0;
  std::uint64_t flow_steps = 0;       ///< EDGETRACE_FLOW ids attached to slices
  std::uint64_t launch_flows = 0;     ///< launch -> GPU flows (on the GPU side)
  std::uint64_t span_args = 0;        ///< debug annotations written
  std::size_t max_pending = 0;        ///< most slice begins held back on one thread at once
  std::uint64_t thread_sequences = 0;  ///< packet sequences of thread events (one per thread and segment)
  std::uint64_t compressed_packets = 0;  ///< TracePackets holding compressed packets (with a compressor)
  std::uint64_t plain_bytes = 0;         ///< the packets' bytes before compression (with a compressor)
  std::uint64_t filtered = 0;         ///< events left out by the selection (min_dur_ns, filter, window)
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
