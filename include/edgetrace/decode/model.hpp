// SPDX-License-Identifier: MIT
// What a dump reads as: writers, threads, sites, events, annotations, GPU devices, streams and spans, and the reader's diagnostics.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/clock_model.hpp>
#include <edgetrace/decode/device_model.hpp>
#include <edgetrace/decode/gpu_clock.hpp>
#include <edgetrace/decode/snapshot.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Version of the edgetrace tools, printed by `--version` and in outputs.
inline constexpr char tool_version[] = "0.1.0";

/// One thing the reader noticed about the input.
struct diagnostic {
  enum class severity : std::uint8_t {
    note,    ///< worth saying, nothing lost (clock guesses, skipped NaN counters)
    damage,  ///< data was lost: corrupt bytes, truncation, undecodable events, missing end
  };
  severity level = severity::damage;
  std::uint64_t offset = 0;  ///< byte offset in the file the message is about
  std::string message;       ///< one line, no trailing newline
};

struct writer_info;
namespace detail {
class events_pass;
}

/// Recording stopped or started (capture chunk, 1.2): edgetrace::pause(),
/// EDGETRACE_START_AFTER, EDGETRACE_DURATION or EDGETRACE_TOGGLE_SIGNAL.
/// Spans are absent on purpose between an "off" and the next "on".
struct recording_change {
  std::uint64_t tick = 0;
  std::int64_t ns = 0;  ///< resolved after pass 1
  bool on = false;
  format::capture_reason reason = format::capture_reason::api;
};

/// A labelled phase begins (edgetrace::phase(), capture chunk, 1.2); it
/// lasts until the writer's next phase.
struct phase_change {
  std::uint64_t tick = 0;
  std::int64_t ns = 0;  ///< resolved after pass 1
  std::string name;
};

/// What a recording change's reason is called in outputs.
inline const char* capture_reason_name(format::capture_reason reason) noexcept {
  switch (reason) {
    case format::capture_reason::api: return "pause/resume";
    case format::capture_reason::start_after: return "EDGETRACE_START_AFTER";
    case format::capture_reason::duration: return "EDGETRACE_DURATION";
    case format::capture_reason::signal: return "EDGETRACE_TOGGLE_SIGNAL";
    case format::capture_reason::max_size: return "EDGETRACE_MAX_MB: the dump's size bound";
    case format::capture_reason::min_free: return "EDGETRACE_MIN_FREE_MB: free space on the dump's file system";
  }
  return "unknown reason";
}

/// A call site (or interned runtime name) of one writer.
struct site_info {
  std::uint64_t id = 0;
  format::site_kind kind = format::site_kind::span;
  std::uint64_t category_id = 0;
  std::string category;  ///< resolved after pass 1 ("category <id>" when undefined)
  std::string name;
  std::string file;
  std::uint64_t line = 0;
};

/// One traced thread of one writer, and what was decoded for it.
struct thread_info {
  const writer_info* writer = nullptr;
  std::uint64_t thread_id = 0;  ///< writer-scoped id (>= 1)
  std::uint64_t os_tid = 0;
  std::string name;             ///< may be empty
  bool has_record = false;      ///< a thread chunk was seen (else only stats)
  std::size_t order = 0;        ///< order of first appearance in the file, over all writers

  bool has_stats = false;  ///< thread_stats seen (last one wins)
  std::uint64_t stats_written = 0;
  std::uint64_t stats_dropped = 0;
  std::uint64_t stats_rejected = 0;  ///< EDGETRACE_RECORD spans the writer refused (optional field)
  /// Of stats_written, those the thread encoded itself because the flusher
  /// fell behind or every CPU was busy (1.7, optional field).
  std::uint64_t stats_helped = 0;

  // Filled by read_events (pass 2).
  std::uint64_t spans = 0;
  std::uint64_t instants = 0;
  std::uint64_t counters = 0;
  std::uint64_t loss_records = 0;
  std::uint64_t lost = 0;  ///< sum of loss record counts
  std::uint64_t events_chunks = 0;
  /// Annotation records (pass 1, 1.3): arguments, flow steps, frees, and
  /// allocations (2 records each, as the writer counts them).
  std::uint64_t annotation_records = 0;

  /// Records decoded (spans, instants, counters, annotations), comparable
  /// to stats_written.
  std::uint64_t decoded() const noexcept { return spans + instants + counters + annotation_records; }
  /// Best known drop count: loss records, or thread_stats if larger.
  std::uint64_t dropped() const noexcept { return stats_dropped > lost ? stats_dropped : lost; }
  /// Records the writer counted (stats_written) that were not decoded.
  std::uint64_t undecoded() const noexcept { return stats_written > decoded() ? stats_written - decoded() : 0; }
  /// Of undecoded(), those lost: all of them, except in a flight
  /// recorder's snapshot, whose records before its window were left out on
  /// purpose (snapshot.hpp). Defined after writer_info.
  std::uint64_t missing() const noexcept;

 private:
  friend class detail::events_pass;
  std::uint32_t last_events_crc_ = 0;  // duplicate-chunk detection (pass 2)
  std::uint32_t last_events_size_ = 0;
  bool has_last_events_ = false;
  std::uint64_t latest_span_end_ = 0;  // forward pass 2: the latest span end tick so far (event::out_of_order)
};

/// The shortest text that reads back as exactly `v` ("0.75", "1e+300",
/// "-0"); "nan", "inf" or "-inf" when not finite. A float argument is kept
/// as the double it converts to, so a `v` that is exactly a float gets the
/// shortest text that reads back as that float: 1.f/255 is "0.003921569",
/// not "0.003921568859368563" (a double computed in double arithmetic is
/// almost never exactly a float: that takes 29 low zero bits).
inline std::string real_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char text[32];
  if (std::fabs(v) <= static_cast<double>(std::numeric_limits<float>::max())) {
    const float f = static_cast<float>(v);
    if (static_cast<double>(f) == v) return std::string(text, std::to_chars(text, text + sizeof text, f).ptr);
  }
  const auto done = std::to_chars(text, text + sizeof text, v);
  return std::string(text, done.ptr);
}

/// One annotation (annotations chunk, 1.3): an argument or a flow step of
/// the span open on its thread, an allocation or a free. Resolved after
/// pass 1; pointers stay valid as long as the dump_reader lives.
struct annotation {
  format::annotation_record type = format::annotation_record::arg;
  const thread_info* thread = nullptr;    ///< null when the thread id is unknown
  const site_info* site = nullptr;        ///< key, flow name, pool, or the free site (null if undefined)
  const site_info* value_site = nullptr;  ///< arg_name: the site whose name is the value
  std::uint64_t tick = 0;
  std::int64_t ns = 0;
  /// arg: the int64's bits, the double's bits (real) or 0/1 (bool); flow:
  /// the id; alloc, free: the address
  std::uint64_t value = 0;
  std::uint64_t bytes = 0;  ///< alloc
  std::uint64_t thread_id = 0, site_id = 0, value_site_id = 0;  ///< as in the file
  /// arg: how `value` is to be read (1.5; integer before)
  format::arg_type value_type = format::arg_type::integer;

  std::int64_t int_value() const noexcept { return static_cast<std::int64_t>(value); }
  bool is_real() const noexcept { return value_type == format::arg_type::real; }
  bool is_bool() const noexcept {
    return value_type == format::arg_type::bool_false || value_type == format::arg_type::bool_true;
  }
  double real_value() const noexcept {
    double v;
    std::memcpy(&v, &value, sizeof v);
    return v;
  }
  /// The key or name as shown ("(unknown site N)" when undefined).
  std::string name() const { return site != nullptr ? site->name : "(unknown site " + std::to_string(site_id) + ")"; }
  /// name() == `n`, without building the name.
  bool has_name(const std::string& n) const { return site != nullptr ? site->name == n : name() == n; }
  /// An argument's value as text: the integer, the double's shortest
  /// round-trip text ("nan", "inf", "-inf" when not finite), true/false,
  /// or the interned name.
  std::string value_text() const {
    if (type == format::annotation_record::arg_name)
      return value_site != nullptr ? value_site->name : "(unknown name " + std::to_string(value_site_id) + ")";
    if (is_real()) return real_text(real_value());
    if (is_bool()) return value != 0 ? "true" : "false";
    return std::to_string(int_value());
  }
};

/// What one writer's annotations chunks hold, counted by pass 1.
struct annotation_counts {
  std::uint64_t args = 0;   ///< arguments, every value type
  std::uint64_t reals = 0;  ///< of which floating
  std::uint64_t bools = 0;  ///< of which bool
  std::uint64_t names = 0;  ///< of which named (EDGETRACE_ARG_NAME)
  std::uint64_t flows = 0, allocs = 0, frees = 0;
  /// Argument keys and flow names recorded (not just defined), resolved
  /// after pass 1; the site ids they come from during it.
  std::set<std::string> keys, flow_names;
  std::set<std::uint64_t> key_sites, flow_sites;
  /// Arguments and flow steps: what span_annotations hands to spans.
  std::uint64_t span_notes() const noexcept { return args + flows; }
  bool empty() const noexcept { return args + flows + allocs + frees == 0; }
};

/// One GPU of one writer (gpu chunks, format 1.2).
struct gpu_device_info {
  std::uint64_t index = 0;  ///< CUDA device ordinal
  std::string name;         ///< empty when no device record was read
  std::uint64_t cc_major = 0;
  std::uint64_t cc_minor = 0;
  std::vector<gpu_clock::anchor> anchors;  ///< host times filled in after pass 1
  std::vector<std::pair<std::uint64_t, std::uint64_t>> anchor_ticks;  ///< (before, after) host ticks, as read
  gpu_clock clock;          ///< GPU time on the host timeline
};

/// One GPU stream of one writer, as the dump numbers it.
struct gpu_stream_info {
  std::uint64_t id = 0;
  std::uint64_t device = 0;
  std::uint64_t handle = 0;     ///< cudaStream_t value (0: legacy default stream)
  std::uint64_t owner_tid = 0;  ///< the thread of a per-thread default stream, else 0
  std::size_t order = 0;        ///< order of first appearance
  // Counts of span records (pass 1).
  std::uint64_t resolved = 0;
  std::uint64_t captured = 0;
  std::uint64_t unresolved = 0;

  /// "stream 0x7f3a2c000b20", "default stream", "per-thread stream (tid 1234)".
  std::string label() const {
    char text[64];
    if (handle == format::gpu_stream_legacy || handle == format::gpu_stream_legacy_alias)
      return "default stream";
    if (handle == format::gpu_stream_per_thread) {
      std::snprintf(text, sizeof text, "per-thread stream (tid %llu)", static_cast<unsigned long long>(owner_tid));
      return text;
    }
    std::snprintf(text, sizeof text, "stream 0x%llx", static_cast<unsigned long long>(handle));
    return text;
  }
};

/// The GPU side of one writer.
struct writer_gpu {
  bool present = false;  ///< at least one gpu chunk
  bool has_runtime = false;
  std::uint64_t driver_version = 0;   ///< CUDA's encoding: 1000 * major + 10 * minor
  std::uint64_t runtime_version = 0;
  std::uint64_t device_count = 0;
  std::string backend;                ///< "cudart", "fake"
  std::string off_reason;             ///< why GPU spans went off (empty: they did not)
  std::map<std::uint64_t, gpu_device_info> devices;
  std::map<std::uint64_t, gpu_stream_info> streams;
  /// The writer's totals (last stats record), when has_stats.
  bool has_stats = false;
  std::uint64_t launches = 0, resolved = 0, captured = 0, unresolved = 0, skipped = 0, event_pairs = 0;
  /// Of `skipped`, the scopes that found every event pair of their thread
  /// in flight (the rest found the hand-off queue full); when
  /// has_skip_reasons (format 1.10 and later).
  bool has_skip_reasons = false;
  std::uint64_t skipped_no_pair = 0;
  /// (OS tid, host end tick) of launches recorded while their stream was
  /// capturing a CUDA graph, to flag those host spans; at most
  /// max_captured_keys are kept.
  std::set<std::pair<std::uint64_t, std::uint64_t>> captured_spans;
  static constexpr std::size_t max_captured_keys = 65536;

  /// Streams by device, then in order of first use.
  std::vector<const gpu_stream_info*> sorted_streams() const {
    std::vector<const gpu_stream_info*> out;
    for (const auto& s : streams) out.push_back(&s.second);
    std::sort(out.begin(), out.end(), [](const gpu_stream_info* a, const gpu_stream_info* b) {
      return a->device != b->device ? a->device < b->device : a->order < b->order;
    });
    return out;
  }

  bool captured_span(std::uint64_t os_tid, std::uint64_t end_tick) const {
    return !captured_spans.empty() && captured_spans.count({os_tid, end_tick}) != 0;
  }
};

/// Everything known about one writer (a process, or one copy of the library).
/// What a writer's full rings did (EDGETRACE_ON_FULL; the process chunk
/// says since format 1.8): the advice about dropped records depends on it.
enum class overload_policy { unknown, wait, drop };

struct writer_info {
  std::uint32_t id = 0;
  std::size_t order = 0;  ///< order of first appearance in the file

  bool has_process = false;
  std::uint64_t pid = 0;
  std::uint8_t clock_source = 0;  ///< format::clock_source value
  std::uint8_t clock_flags = 0;
  std::uint64_t nominal_tick_rate = 0;  ///< Hz, 0 when unknown
  std::uint64_t ring_capacity = 0;
  std::uint64_t flush_period_us = 0;
  std::string process_name;
  overload_policy overload = overload_policy::unknown;  ///< unknown before 1.8
  /// The process's identity (1.15): its start time in clock ticks after
  /// boot, which exec keeps, and the boot's id. Two writers of one pid are
  /// one process only when both match (another pid namespace, a reused pid).
  bool has_identity = false;
  std::uint64_t start_ticks = 0;
  std::array<unsigned char, 16> boot_id{};
  /// Whether `o` is the same process (same pid; same identity when both
  /// carry one).
  bool same_process(const writer_info& o) const noexcept {
    if (!has_process || !o.has_process || pid != o.pid) return false;
    return !has_identity || !o.has_identity || (start_ticks == o.start_ticks && boot_id == o.boot_id);
  }

  std::vector<calibration_pair> calibration;
  clock_model clock;
  bool has_end = false;
  /// No end record, and a later writer of this file is the same process
  /// (same_process): it replaced its image (exec), whose writer appended
  /// to this dump.
  bool exec_follows = false;
  /// No end record, and a later writer has the same pid but is another
  /// process (another pid namespace: two containers' pid 1; a reused pid).
  bool pid_reused_later = false;
  /// The flight recorder's snapshot chunk (1.6): present in a dump that
  /// holds one window of the run, with why and when it was written.
  snapshot_record snapshot;

  std::map<std::uint64_t, std::string> categories;
  std::map<std::uint64_t, site_info> sites;
  std::map<std::uint64_t, thread_info> threads;
  writer_gpu gpu;
  /// Device chunks (1.9): the sampler's tracks and samples.
  writer_device device;

  /// Capture chunks (1.2), in tick order: recording windows and phases.
  std::vector<recording_change> recording;
  std::vector<phase_change> phases;

  /// Annotations chunks (1.3): what pass 1 counted. Arguments and flow
  /// steps are not kept in memory (a dump may hold tens of millions): they
  /// are read again where they are used (dump_reader::for_each_annotation,
  /// annotation_stream, span_annotations).
  annotation_counts annotations_read;
  /// Allocations and frees (the memory records), in tick order (stable:
  /// file order on ties): memory_timeline replays them.
  std::vector<annotation> memory_records;
  bool has_memory = false;  ///< some annotation is an allocation or a free

  /// Tick and ns range of all events (from pass 1); valid when has_events.
  bool has_events = false;
  std::uint64_t min_tick = 0;
  std::uint64_t max_tick = 0;
  std::int64_t first_ns = 0;
  std::int64_t last_ns = 0;
  /// Per thread (writer-scoped id), the smallest begin tick of its span
  /// records (pass 1): where a viewer that measures each track from its
  /// first slice (speedscope) puts that track's zero.
  std::map<std::uint64_t, std::uint64_t> first_span_tick;
  /// Records (spans, instants, counters, loss records) in the intact events
  /// chunks, counted by pass 1: what read_events will hand over, known up
  /// front (for size estimates and progress).
  std::uint64_t event_records = 0;

  /// "pid 1234", or "writer 0x1a2b3c4d" when the process chunk is missing.
  std::string label() const {
    char text[48];
    if (has_process)
      std::snprintf(text, sizeof text, "pid %llu", static_cast<unsigned long long>(pid));
    else
      std::snprintf(text, sizeof text, "writer 0x%08x", static_cast<unsigned>(id));
    return text;
  }
};

inline std::uint64_t thread_info::missing() const noexcept {
  return writer != nullptr && writer->snapshot.present ? 0 : undecoded();
}

enum class event_kind : std::uint8_t { span, instant, counter, loss };

/// One decoded, resolved event handed to a sink. Pointers stay valid as long
/// as the dump_reader lives.
struct event {
  event_kind kind = event_kind::span;
  /// A span its thread recorded after a span of the thread that ends later
  /// (EDGETRACE_RECORD, a span imported or measured elsewhere): it takes its
  /// place by its times, not by its place in the file. read_events_backward
  /// hands it over where its end puts it.
  bool out_of_order = false;
  const writer_info* writer = nullptr;
  const thread_info* thread = nullptr;
  const site_info* site = nullptr;  ///< null for loss records
  std::int64_t begin_ns = 0;  ///< span begin; instant/counter time; first lost record
  std::int64_t end_ns = 0;    ///< span end; == begin_ns for instants/counters; last lost record
  std::uint64_t begin_tick = 0;
  std::uint64_t end_tick = 0;
  double value = 0;         ///< counters
  std::uint64_t count = 0;  ///< loss records: records dropped
};

/// A span placed on the timeline: its writer, thread, site and times.
/// Derived records (span_walker's span_record, a flow's steps) start from it.
struct span_place {
  const writer_info* writer = nullptr;
  const thread_info* thread = nullptr;
  const site_info* site = nullptr;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};

/// One GPU scope as read_gpu_spans() hands it to a sink: the host span
/// that launched the work and, when resolved, where the GPU ran it on the
/// host timeline. Pointers stay valid as long as the dump_reader lives.
struct gpu_span {
  const writer_info* writer = nullptr;
  const gpu_stream_info* stream = nullptr;
  const gpu_device_info* device = nullptr;
  const site_info* site = nullptr;      ///< the host span's site (null if undefined)
  const thread_info* thread = nullptr;  ///< the launching thread (null if unknown)
  std::uint64_t os_tid = 0;             ///< the launching thread's OS tid
  std::uint32_t flags = 0;              ///< format::gpu_span_flag
  std::uint64_t host_begin_tick = 0;    ///< exactly the host span's ticks
  std::uint64_t host_end_tick = 0;
  std::int64_t host_begin_ns = 0;
  std::int64_t host_end_ns = 0;
  bool resolved = false;  ///< GPU times below are valid
  std::int64_t begin_ns = 0;  ///< GPU start on the host timeline (never before host_begin_ns)
  std::int64_t end_ns = 0;
  std::uint64_t gpu_duration_ns = 0;  ///< as measured by the GPU's events
  /// The aligned start fell before the launch (alignment error) and was
  /// moved to the launch's start.
  bool placed_at_launch = false;
  /// How far the start was moved to follow the previous span of its stream
  /// (the alignment put it over that span; 0: not moved).
  std::int64_t moved_after_previous_ns = 0;
  /// The start as the clock alignment put it, before any move (to the
  /// launch, or past the stream's previous span): the alignment's own
  /// error shows here (tools/gpu_check.sh measures it).
  std::int64_t aligned_begin_ns = 0;
};

/// Counters about the file as a whole (pass 1).
struct read_stats {
  std::uint64_t file_size = 0;
  std::uint64_t chunks_read = 0;      ///< chunks that validated
  std::uint64_t chunks_unknown = 0;   ///< of which of an unknown type (skipped)
  std::uint64_t bytes_skipped = 0;    ///< corrupt bytes stepped over
  std::uint64_t skipped_regions = 0;
  std::uint64_t bytes_truncated = 0;  ///< bytes of a partial last chunk
  std::uint64_t events_chunks = 0;
  std::uint64_t events_chunks_damaged = 0;  ///< pass 2: events chunks not fully decoded
  std::uint64_t events_bytes_undecoded = 0;
  std::uint64_t gpu_chunks = 0;
  /// The file does not begin with a file header: it was truncated under a
  /// writer (log rotation with copytruncate) and starts with what that
  /// writer appended before it noticed. Reported as damage.
  bool headerless_start = false;
  /// File headers after the first: a writer found the file truncated under
  /// it and started again (FORMAT.md, "Restarts"). Not damage.
  std::uint64_t restarts = 0;
};

/// Allocation records that do not add up. None is attributed to a pool's
/// live bytes; each is counted.
struct memory_mismatches {
  memory_mismatches& operator+=(const memory_mismatches& o) noexcept {
    double_frees += o.double_frees;
    unknown_frees += o.unknown_frees;
    live_reallocs += o.live_reallocs;
    null_allocs += o.null_allocs;
    return *this;
  }
  std::uint64_t double_frees = 0;    ///< a free of an address already freed
  std::uint64_t unknown_frees = 0;   ///< a free of an address never allocated in the dump
  std::uint64_t live_reallocs = 0;   ///< an allocation at an address still live (its free was never recorded)
  std::uint64_t null_allocs = 0;     ///< an allocation at address 0
  std::uint64_t total() const noexcept { return double_frees + unknown_frees + live_reallocs + null_allocs; }
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
