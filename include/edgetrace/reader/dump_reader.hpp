// SPDX-License-Identifier: MIT
// Streaming two-pass reader of .etr dumps: metadata first, then resolved events handed to a sink.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../format.hpp"
#include "clock_model.hpp"
#include "gpu_clock.hpp"
#include "snapshot.hpp"

namespace edgetrace {
inline namespace v1 {
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
  friend class dump_reader;
  std::uint32_t last_events_crc_ = 0;  // duplicate-chunk detection (pass 2)
  std::uint32_t last_events_size_ = 0;
  bool has_last_events_ = false;
};

/// The shortest text that reads back as exactly `v` ("0.75", "1e+300",
/// "-0"); "nan", "inf" or "-inf" when not finite.
inline std::string real_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char text[32];
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

  std::vector<calibration_pair> calibration;
  clock_model clock;
  bool has_end = false;
  /// The flight recorder's snapshot chunk (1.6): present in a dump that
  /// holds one window of the run, with why and when it was written.
  snapshot_record snapshot;

  std::map<std::uint64_t, std::string> categories;
  std::map<std::uint64_t, site_info> sites;
  std::map<std::uint64_t, thread_info> threads;
  writer_gpu gpu;

  /// Capture chunks (1.2), in tick order: recording windows and phases.
  std::vector<recording_change> recording;
  std::vector<phase_change> phases;

  /// Annotations chunks (1.3), in tick order (stable: file order on ties).
  std::vector<annotation> annotations;
  bool has_memory = false;  ///< some annotation is an allocation or a free

  /// Tick and ns range of all events (from pass 1); valid when has_events.
  bool has_events = false;
  std::uint64_t min_tick = 0;
  std::uint64_t max_tick = 0;
  std::int64_t first_ns = 0;
  std::int64_t last_ns = 0;
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

namespace detail {

/// Bounds-checked cursor over a payload; every get fails softly.
struct payload_cursor {
  const unsigned char* pos;
  const unsigned char* end;

  std::size_t left() const noexcept { return static_cast<std::size_t>(end - pos); }
  bool varint(std::uint64_t& v) noexcept { return format::get_varint(pos, end, v); }
  bool u8(std::uint8_t& v) noexcept {
    if (pos == end) return false;
    v = *pos++;
    return true;
  }
  bool u64(std::uint64_t& v) noexcept {
    if (left() < 8) return false;
    v = format::get_u64(pos);
    pos += 8;
    return true;
  }
  bool f64(double& v) noexcept {
    std::uint64_t bits;
    if (!u64(bits)) return false;
    std::memcpy(&v, &bits, sizeof v);
    return true;
  }
  /// A length-prefixed string; the length is checked against both the
  /// format's limit and the bytes left, so garbage never allocates much.
  bool string(std::string& s) {
    std::uint64_t size;
    if (!varint(size) || size > format::max_string_size || size > left()) return false;
    s.assign(reinterpret_cast<const char*>(pos), static_cast<std::size_t>(size));
    pos += size;
    return true;
  }
};

/// An event of an events chunk before resolution.
struct raw_event {
  format::event_type type = format::event_type::span;
  std::uint64_t id = 0;  ///< site id, or special subtype
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  double value = 0;
  std::uint64_t count = 0;
};

enum class decode_error : std::uint8_t { none, bad_varint, truncated, bad_span, bad_loss, unknown_special, rejected };

inline const char* decode_error_text(decode_error e) noexcept {
  switch (e) {
    case decode_error::none: return "no error";
    case decode_error::bad_varint: return "malformed varint";
    case decode_error::truncated: return "record cut by the end of the chunk";
    case decode_error::bad_span: return "span longer than its end tick";
    case decode_error::bad_loss: return "loss record range overflows";
    case decode_error::unknown_special: return "unknown special record";
    case decode_error::rejected: return "rejected";
  }
  return "?";
}

/// Decodes the events after the (thread id, base tick) header, calling
/// `on_event(const raw_event&) -> bool` for each; a false return stops with
/// decode_error::rejected. Rebase records update the reference silently.
/// `cursor.pos` is left at the start of the record that failed.
template <class OnEvent>
decode_error decode_events(payload_cursor& cursor, std::uint64_t base_tick, OnEvent&& on_event) {
  std::uint64_t ref = base_tick;
  while (cursor.pos != cursor.end) {
    const unsigned char* record = cursor.pos;
    std::uint64_t code;
    if (!cursor.varint(code)) {
      cursor.pos = record;
      return decode_error::bad_varint;
    }
    raw_event e;
    e.type = static_cast<format::event_type>(code & 3);
    e.id = code >> 2;
    std::uint64_t a = 0, b = 0;
    decode_error failure = decode_error::none;
    switch (e.type) {
      case format::event_type::span:
        if (!cursor.varint(a) || !cursor.varint(b)) failure = decode_error::bad_varint;
        else if (b > ref + a) failure = decode_error::bad_span;
        else {
          e.end = ref + a;
          e.begin = e.end - b;
          ref = e.end;
        }
        break;
      case format::event_type::instant:
        if (!cursor.varint(a)) failure = decode_error::bad_varint;
        else e.begin = e.end = ref = ref + a;
        break;
      case format::event_type::counter:
        if (!cursor.varint(a)) failure = decode_error::bad_varint;
        else if (!cursor.f64(e.value)) failure = decode_error::truncated;
        else e.begin = e.end = ref = ref + a;
        break;
      case format::event_type::special:
        if (e.id == static_cast<std::uint64_t>(format::special_type::loss)) {
          std::uint64_t count;
          if (!cursor.varint(a) || !cursor.varint(b) || !cursor.varint(count)) failure = decode_error::bad_varint;
          else if (ref + a + b < ref + a) failure = decode_error::bad_loss;
          else {
            e.begin = ref + a;
            e.end = e.begin + b;
            e.count = count;
            ref = e.end;
          }
        } else if (e.id == static_cast<std::uint64_t>(format::special_type::rebase)) {
          if (!cursor.varint(a)) failure = decode_error::bad_varint;
          else ref = a;
          continue;
        } else {
          failure = decode_error::unknown_special;  // its length is unknown: cannot step over it
        }
        break;
    }
    if (failure != decode_error::none) {
      cursor.pos = record;
      return failure;
    }
    if (!on_event(static_cast<const raw_event&>(e))) {
      cursor.pos = record;
      return decode_error::rejected;
    }
  }
  return decode_error::none;
}

/// Owns a file descriptor; closes it on destruction.
class file_handle {
 public:
  file_handle() = default;
  file_handle(const file_handle&) = delete;
  file_handle& operator=(const file_handle&) = delete;
  ~file_handle() { reset(); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int get() const noexcept { return fd_; }

  /// Opens `path` read-only and checks it is a regular (seekable) file.
  /// Returns "" and its size in `size`, or why not in words fit for
  /// "edgetrace: error: <file>: <what>".
  std::string open_regular(const std::string& path, std::uint64_t& size) {
    // O_NONBLOCK: a FIFO would block the open until some process writes
    // to it; opened at once, it is then refused below. A regular file
    // reads as usual.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return std::strerror(errno);
    reset(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return std::strerror(errno);
    if (S_ISDIR(st.st_mode)) return "is a directory";
    if (!S_ISREG(st.st_mode)) return "not a regular file (the reader needs a seekable dump)";
    size = static_cast<std::uint64_t>(st.st_size);
    return {};
  }

  /// pread until `size` bytes or end of file; returns the bytes read. On
  /// an I/O error sets `error` and returns what was read before it.
  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t size, std::string& error) const {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n =
          ::pread(fd_, static_cast<unsigned char*>(dst) + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        error = std::string("read error: ") + std::strerror(errno);
        return done;
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

 private:
  int fd_ = -1;
};

/// The (tick, CLOCK_MONOTONIC, CLOCK_REALTIME) pairs of a calibration
/// chunk, appended to `out`; trailing bytes (a future field, or < 24
/// bytes) are ignored.
inline void read_calibration(payload_cursor& in, std::vector<calibration_pair>& out) {
  while (in.left() >= 24) {
    calibration_pair p;
    in.u64(p.tick);
    in.u64(p.monotonic_ns);
    in.u64(p.realtime_ns);
    out.push_back(p);
  }
}

}  // namespace detail

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
  static constexpr std::size_t max_stored_diagnostics = 200;

  /// Opens `path` and checks its header. On failure returns false and
  /// error() says why, in words fit for "edgetrace: error: <file>: <what>".
  bool open(const std::string& path) {
    path_ = path;
    error_.clear();
    opened_ = metadata_read_ = false;
    writers_.clear();
    threads_.clear();
    last_annotations_.clear();
    annotations_kept_ = 0;
    annotations_dropped_ = 0;
    diagnostics_.clear();
    stats_ = read_stats{};
    const std::string why = file_.open_regular(path, stats_.file_size);
    if (!why.empty()) return fail(why.c_str());
    if (stats_.file_size == 0) return fail("empty file (0 bytes)");
    unsigned char header[format::file_header_size];
    const std::size_t got = read_at(0, header, sizeof header);
    if (!error_.empty()) return false;
    data_start_ = format::file_header_size;
    if (got < sizeof format::file_magic || std::memcmp(header, format::file_magic, sizeof format::file_magic) != 0)
      return open_headerless();
    if (got < sizeof header) {
      char text[96];
      std::snprintf(text, sizeof text, "too short to be an edgetrace dump (%zu bytes; the header alone is %zu)", got,
                    format::file_header_size);
      return fail(text);
    }
    return open_version(header);
  }

  /// Pass 1: reads every chunk, keeps metadata, validates the chunk stream
  /// and records layout diagnostics; builds each writer's clock model.
  /// Returns false only on an I/O error (see error()).
  bool read_metadata() {
    if (!opened_) return fail("not open");
    writers_.clear();
    threads_.clear();
    diagnostics_.clear();
    diagnostics_dropped_ = 0;
    damage_count_ = 0;
    next_thread_order_ = 0;
    const std::uint64_t size = stats_.file_size;
    stats_ = read_stats{};
    stats_.file_size = size;

    report_layout_ = true;
    crc_spent_ = 0;
    events_offsets_.clear();
    headers_seen_ = 0;
    stats_.headerless_start = data_start_ == 0;
    if (stats_.headerless_start)
      add_diagnostic(diagnostic::severity::damage, 0,
                     "no file header at the start: the file was truncated under its writer (log rotation with "
                     "copytruncate?); what it held before is not here, reading what followed");
    std::uint64_t pos = data_start_;
    chunk c;
    while (next_chunk(pos, c)) {
      ++stats_.chunks_read;
      writer_info& w = writer(c.writer);
      detail::payload_cursor in{c.payload, c.payload + c.size};
      switch (c.type) {
        case format::chunk_type::process: read_process(w, in, c.offset); break;
        case format::chunk_type::calibration: detail::read_calibration(in, w.calibration); break;
        case format::chunk_type::definitions: read_definitions(w, in, c.offset); break;
        case format::chunk_type::thread: read_thread(w, in, c.offset); break;
        case format::chunk_type::events:
          events_offsets_.push_back(c.offset);
          scan_event_ticks(w, in);
          break;
        case format::chunk_type::thread_stats: read_thread_stats(w, in, c.offset); break;
        case format::chunk_type::end: w.has_end = true; break;
        case format::chunk_type::capture: read_capture(w, in, c.offset); break;
        case format::chunk_type::gpu: read_gpu(w, in, c.offset); break;
        case format::chunk_type::annotations: read_annotations(w, in, c.offset, c); break;
        case format::chunk_type::snapshot:
          if (!read_snapshot_payload(c.payload, c.size, w.snapshot)) malformed("snapshot", c.offset, w);
          break;
        default: ++stats_.chunks_unknown; break;  // a newer minor's chunk: skipped silently
      }
    }
    if (!error_.empty()) return false;
    finish_metadata();
    pass1_diagnostics_ = diagnostics_.size();
    pass1_dropped_ = diagnostics_dropped_;
    pass1_damage_ = damage_count_;
    metadata_read_ = true;
    return true;
  }

  /// Pass 2: decodes every events chunk and calls `sink(const event&)` for
  /// each span, instant, counter and loss record, in file order (per thread:
  /// the order the thread recorded them; spans by end time). Resets the
  /// per-thread counts and pass-2 diagnostics first, so it may run again.
  /// Returns false only on an I/O error.
  template <class Sink>
  bool read_events(Sink&& sink) {
    if (!metadata_read_ && !read_metadata()) return false;
    if (!durations_allowed()) return false;
    begin_events_pass();
    report_layout_ = false;
    crc_spent_ = 0;
    std::uint64_t pos = data_start_;
    chunk c;
    while (next_chunk(pos, c)) {
      if (c.type != format::chunk_type::events) continue;
      decode_chunk(c, sink);
    }
    return error_.empty();
  }

 private:
  /// Resets per-thread counts and pass-2 diagnostics before an events pass.
  void begin_events_pass() {
    diagnostics_.resize(pass1_diagnostics_);
    diagnostics_dropped_ = pass1_dropped_;
    damage_count_ = pass1_damage_;
    stats_.events_chunks_damaged = 0;
    stats_.events_bytes_undecoded = 0;
    for (auto& w : writers_)
      for (auto& t : w.second.threads) {
        thread_info& ti = t.second;
        ti.spans = ti.instants = ti.counters = ti.loss_records = ti.lost = ti.events_chunks = 0;
        ti.has_last_events_ = false;
      }
  }

 public:

  /// GPU pass: calls `sink(const gpu_span&)` for every GPU span record of
  /// every writer, in file order (per stream: completion order). Host
  /// times use the writer's clock model exactly as read_events does, so a
  /// span's host_begin_ns equals its host span's begin_ns; GPU times go
  /// through the device's fitted gpu_clock. Returns false only on an I/O
  /// error. Memory: one chunk.
  template <class Sink>
  bool read_gpu_spans(Sink&& sink) {
    if (!metadata_read_ && !read_metadata()) return false;
    if (!durations_allowed()) return false;
    report_layout_ = false;
    crc_spent_ = 0;
    std::map<std::pair<std::uint32_t, std::uint64_t>, const thread_info*> by_tid;
    for (const auto& w : writers_)
      for (const auto& t : w.second.threads)
        if (t.second.has_record) by_tid.emplace(std::make_pair(w.first, t.second.os_tid), &t.second);
    // Per stream, the span resolved last (see below).
    std::map<const gpu_stream_info*, std::pair<std::int64_t, std::int64_t>> previous;
    std::uint64_t pos = data_start_;
    chunk c;
    while (next_chunk(pos, c)) {
      if (c.type != format::chunk_type::gpu) continue;
      const writer_info& w = writers_[c.writer];
      detail::payload_cursor in{c.payload, c.payload + c.size};
      for_each_record(in, [&](std::uint8_t tag, detail::payload_cursor& b) {
        if (tag != static_cast<std::uint8_t>(format::gpu_record::span)) return true;
        raw_gpu_span s;
        if (!decode_gpu_span(b, s)) return false;
        const auto stream = w.gpu.streams.find(s.stream);
        if (stream == w.gpu.streams.end()) return true;
        gpu_span g;
        g.writer = &w;
        g.stream = &stream->second;
        const auto device = w.gpu.devices.find(stream->second.device);
        g.device = device != w.gpu.devices.end() ? &device->second : nullptr;
        const auto site = w.sites.find(s.site);
        g.site = site != w.sites.end() ? &site->second : nullptr;
        const auto thread = by_tid.find(std::make_pair(w.id, s.os_tid));
        g.thread = thread != by_tid.end() ? thread->second : nullptr;
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
          // A stream runs its work in order. Two spans timed from different
          // anchors (float ms) can disagree by tens of ns: a span that
          // starts inside the previous one and ends after it, by at most
          // gpu_fifo_tolerance_ns, is moved to start where that one ends.
          // Nested spans (a scope inside a scope) are left alone.
          auto& last = previous[g.stream];
          if (last.second != 0 && g.begin_ns > last.first && g.begin_ns < last.second && g.end_ns > last.second &&
              last.second - g.begin_ns <= gpu_fifo_tolerance_ns) {
            g.end_ns += last.second - g.begin_ns;
            g.begin_ns = last.second;
          }
          // Back-to-back work starts 1 ns after the previous end: viewers
          // that rebuild an end as ts + dur in floating point (speedscope)
          // could otherwise see the next start before it.
          if (last.second != 0 && g.begin_ns == last.second && g.end_ns > g.begin_ns + 1) ++g.begin_ns;
          last = {g.begin_ns, g.end_ns};
        }
        sink(static_cast<const gpu_span&>(g));
        return true;
      });
    }
    return error_.empty();
  }

  /// Pass 2, backwards: like read_events, but every thread's events arrive
  /// in reverse order (latest end first), so a span's ancestors arrive
  /// before it and its descendants after it. That lets a sink derive
  /// nesting depth and self time with one stack of open ancestors per thread
  /// (memory bounded by nesting depth, not by the dump). Chunks are visited
  /// last to first (offsets kept by pass 1: 8 bytes per events chunk); a
  /// chunk is decoded forward in segments of `backward_segment` events and
  /// each segment is handed over reversed. Costs about one forward pass.
  template <class Sink>
  bool read_events_backward(Sink&& sink) {
    if (!metadata_read_ && !read_metadata()) return false;
    if (!durations_allowed()) return false;
    begin_events_pass();
    std::vector<event> segment;
    std::vector<checkpoint> checkpoints;
    for (auto it = events_offsets_.rbegin(); it != events_offsets_.rend() && error_.empty(); ++it) {
      chunk c;
      crc_spent_ = 0;  // a known-good chunk from pass 1: no resync budget applies
      if (probe_at(*it, c) != probe_result::ok) continue;
      decode_chunk_backward(c, sink, segment, checkpoints);
    }
    return error_.empty();
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
    if (!metadata_read_ && !read_metadata()) return false;
    report_layout_ = false;
    crc_spent_ = 0;
    std::uint64_t pos = data_start_;
    chunk c;
    while (next_chunk(pos, c)) {
      raw_chunk r;
      r.offset = c.offset;
      r.type = c.type;
      r.writer = c.writer;
      r.bytes = c.payload - format::chunk_header_size;
      r.size = format::chunk_header_size + std::size_t{c.size} + format::chunk_trailer_size;
      fn(static_cast<const raw_chunk&>(r));
    }
    return error_.empty();
  }

  /// Events per segment of read_events_backward (bounds its buffer).
  static constexpr std::size_t backward_segment = 32768;

  /// Adds a diagnostic (sinks use it for what they skip, e.g. NaN counters).
  void add_diagnostic(diagnostic::severity level, std::uint64_t offset, std::string message) {
    if (level == diagnostic::severity::damage) ++damage_count_;
    if (diagnostics_.size() >= max_stored_diagnostics) {
      ++diagnostics_dropped_;
      return;
    }
    diagnostics_.push_back(diagnostic{level, offset, std::move(message)});
  }

  const std::string& path() const noexcept { return path_; }
  /// True once read_metadata succeeded.
  bool metadata_read() const noexcept { return metadata_read_; }
  /// Why open/read failed (empty if it did not).
  const std::string& error() const noexcept { return error_; }
  std::uint16_t version_major() const noexcept { return major_; }
  std::uint16_t version_minor() const noexcept { return minor_; }
  const read_stats& stats() const noexcept { return stats_; }
  /// How far read_gpu_spans moves a GPU span that starts inside the
  /// previous span of its stream (rounding of float ms, not real overlap).
  static constexpr std::int64_t gpu_fifo_tolerance_ns = 1000;

  /// True when the dump holds gpu chunks (read_gpu_spans has work to do).
  bool has_gpu() const noexcept { return stats_.gpu_chunks != 0; }

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

  const std::vector<diagnostic>& diagnostics() const noexcept { return diagnostics_; }
  /// Diagnostics not stored because of max_stored_diagnostics.
  std::uint64_t diagnostics_dropped() const noexcept { return diagnostics_dropped_; }
  /// Number of damage diagnostics (stored or not).
  std::uint64_t damage_count() const noexcept { return damage_count_; }
  /// True when data was lost: corruption, truncation, undecodable events, or
  /// a writer without an end record.
  bool damaged() const noexcept { return damage_count_ != 0; }
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
  struct chunk {
    std::uint64_t offset = 0;
    format::chunk_type type = format::chunk_type::end;
    std::uint32_t writer = 0;
    const unsigned char* payload = nullptr;
    std::uint32_t size = 0;
    std::uint32_t crc = 0;
  };
  enum class probe_result : std::uint8_t { ok, bad, cut };

  bool fail(const char* what) {
    error_ = what;
    return false;
  }

  /// Accepts the file if the file header `header` (16 bytes) has a major
  /// version this reader knows; else fails saying which version it is.
  bool open_version(const unsigned char* header) {
    major_ = format::get_u16(header + 8);
    minor_ = format::get_u16(header + 10);
    if (major_ != format::version_major) {
      char text[160];
      if (major_ > format::version_major)
        std::snprintf(text, sizeof text, "dump format version %u.%u is newer than this reader (%u.x); update edgetrace",
                      major_, minor_, format::version_major);
      else
        std::snprintf(text, sizeof text, "dump format version %u.%u is not supported by this reader (%u.x)", major_,
                      minor_, format::version_major);
      return fail(text);
    }
    opened_ = true;
    return true;
  }

  /// How far open() looks for a file header or a valid chunk in a file that
  /// does not begin with a file header, before calling it "not a dump".
  static constexpr std::uint64_t max_headerless_search = std::uint64_t{64} << 20;

  /// A file that does not begin with the file header: a file truncated
  /// under its writer (log rotation with copytruncate) begins with the
  /// chunks that writer appended before it noticed and wrote a new header.
  /// Accepted when a file header or a valid chunk lies within the first
  /// max_headerless_search bytes (the passes then start at offset 0 and
  /// step over what does not validate); the version is the first header's.
  bool open_headerless() {
    crc_spent_ = 0;
    chunk c;
    std::uint64_t cut_pos = no_position;
    bool is_header = false;
    const std::uint64_t limit = std::min(stats_.file_size, max_headerless_search);
    const std::uint64_t found = scan(0, c, cut_pos, false, is_header, limit);
    if (!error_.empty()) return false;
    if (found >= limit) return fail("not an edgetrace dump (bad magic)");
    data_start_ = 0;
    if (is_header) {
      unsigned char header[format::file_header_size];
      if (read_at(found, header, sizeof header) != sizeof header) return error_.empty() ? fail("read error") : false;
      return open_version(header);
    }
    // Chunks but no header yet: the version is this reader's until pass 1
    // meets a header.
    major_ = format::version_major;
    minor_ = 0;
    opened_ = true;
    return true;
  }

  enum class header_result : std::uint8_t { none, ok, incompatible };

  /// Checks for a file header at `pos` (after the start: a writer that
  /// found the file truncated under it started again). In pass 1, notes
  /// it and takes the highest minor version seen.
  header_result file_header_at(std::uint64_t pos) {
    unsigned char header[format::file_header_size];
    if (read_at(pos, header, sizeof header) != sizeof header ||
        std::memcmp(header, format::file_magic, sizeof format::file_magic) != 0)
      return header_result::none;
    const std::uint16_t major = format::get_u16(header + 8);
    const std::uint16_t minor = format::get_u16(header + 10);
    if (major != format::version_major) {
      incompatible_major_ = major;
      incompatible_minor_ = minor;
      return header_result::incompatible;
    }
    if (report_layout_) {
      minor_ = headers_seen_++ == 0 && data_start_ == 0 ? minor : std::max(minor_, minor);
      if (pos != 0) {
        ++stats_.restarts;
        char text[200];
        std::snprintf(text, sizeof text,
                      "file header at offset %llu: a writer found the file truncated under it and started again; "
                      "reading on",
                      static_cast<unsigned long long>(pos));
        add_diagnostic(diagnostic::severity::note, pos, text);
      }
    }
    return header_result::ok;
  }

  /// The events passes' guard (see unknown_rate()).
  bool durations_allowed() {
    if (unknown_rate_.empty() || allow_unknown_rate_) return true;
    error_ = unknown_rate_;
    return false;
  }

  /// pread until `size` bytes or end of file; returns the bytes read. Sets
  /// error_ on an I/O error.
  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t size) {
    return file_.read_at(offset, dst, size, error_);
  }

  /// Checks for a whole valid chunk at `pos`; on success `c` points into
  /// buffer_. `cut`: a plausible header whose chunk runs past the end of
  /// the file.
  ///
  /// CRC work is budgeted: at most 64 MiB plus 8 bytes per byte of file
  /// before `pos`. A normal file uses about 1 byte per byte; a file forged
  /// with fake headers claiming 4 MiB every few bytes would otherwise cost
  /// quadratic time. Past the budget a candidate counts as invalid.
  /// `known_header`, when given, holds the 12 bytes at `pos` (saves a read).
  probe_result probe_at(std::uint64_t pos, chunk& c, const unsigned char* known_header = nullptr) {
    const std::uint64_t size = stats_.file_size;
    unsigned char buffer[format::chunk_header_size];
    const std::size_t avail = pos < size ? static_cast<std::size_t>(std::min<std::uint64_t>(size - pos, sizeof buffer)) : 0;
    const unsigned char* header = buffer;
    if (known_header && avail == sizeof buffer) header = known_header;
    else if (read_at(pos, buffer, avail) != avail) return probe_result::bad;
    if (avail < 1 || header[0] != format::chunk_sync0) return probe_result::bad;
    if (avail >= 2 && header[1] != format::chunk_sync1) return probe_result::bad;
    if (avail < sizeof buffer) return probe_result::cut;
    const std::uint32_t payload = format::get_u32(header + 4);
    if (payload > format::max_chunk_payload) return probe_result::bad;
    const std::uint64_t total = format::chunk_header_size + std::uint64_t{payload} + format::chunk_trailer_size;
    if (size - pos < total) return probe_result::cut;
    if (crc_spent_ + total > (std::uint64_t{64} << 20) + 8 * pos) return probe_result::bad;
    crc_spent_ += total;
    if (buffer_.size() < total) buffer_.resize(static_cast<std::size_t>(total));
    if (read_at(pos, buffer_.data(), static_cast<std::size_t>(total)) != total) return probe_result::bad;
    const std::size_t body = format::chunk_header_size + payload;
    const std::uint32_t crc = format::get_u32(buffer_.data() + body);
    if (format::crc32(buffer_.data(), body) != crc) return probe_result::bad;
    c.offset = pos;
    c.type = static_cast<format::chunk_type>(header[2]);
    c.writer = format::get_u32(header + 8);
    c.payload = buffer_.data() + format::chunk_header_size;
    c.size = payload;
    c.crc = crc;
    return probe_result::ok;
  }

  /// Finds the next position from `from` where a whole chunk validates or
  /// a file header starts (`is_header` says which; with `headers_only`,
  /// only a file header); returns the file size if none before `limit`.
  /// `cut_pos` receives the first plausible chunk start that runs past the
  /// end of the file, if any.
  std::uint64_t scan(std::uint64_t from, chunk& c, std::uint64_t& cut_pos, bool headers_only, bool& is_header,
                     std::uint64_t limit = no_position) {
    const std::uint64_t size = stats_.file_size;
    const std::uint64_t end = std::min(size, limit);
    is_header = false;
    // The window starts small (most damage is a few bytes: the next chunk
    // is near) and doubles, so a resync costs about what it skips.
    constexpr std::size_t max_window = 64u << 10;
    if (window_.size() < max_window) window_.resize(max_window);
    std::size_t window_size = 256;
    std::uint64_t base = from;
    std::uint64_t found = size;
    while (base < end && found == size && error_.empty()) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(window_size, size - base));
      if (read_at(base, window_.data(), n) != n) break;
      const bool last_window = base + n == size;
      std::size_t i = 0;
      for (; i < n && base + i < end; ++i) {
        // Leave candidates whose header straddles the window to the next one.
        if (!last_window && i + format::file_header_size > n) break;
        if (window_[i] == format::file_magic[0]) {
          if (i + format::file_header_size <= n &&
              std::memcmp(window_.data() + i, format::file_magic, sizeof format::file_magic) == 0) {
            found = base + i;
            is_header = true;
            break;
          }
          continue;
        }
        if (headers_only || window_[i] != format::chunk_sync0) continue;
        if (i + 1 < n && window_[i + 1] != format::chunk_sync1) continue;
        if (i + 8 <= n && format::get_u32(window_.data() + i + 4) > format::max_chunk_payload) continue;
        const probe_result r =
            probe_at(base + i, c, i + format::chunk_header_size <= n ? window_.data() + i : nullptr);
        if (r == probe_result::ok) {
          found = base + i;
          break;
        }
        if (r == probe_result::cut && cut_pos == no_position) cut_pos = base + i;
      }
      if (found == size) base += i == 0 ? 1 : i;
      window_size = std::min(window_size * 2, max_window);
    }
    return found;
  }

  /// Steps to the next valid chunk from `pos`, stepping over (and, in pass
  /// 1, reporting) corrupt bytes and a truncated tail.
  ///
  /// A file header between chunks (a writer that started the file again)
  /// is stepped over; one of an unknown major version makes everything up
  /// to the next readable file header skipped, since its chunks may be
  /// framed differently.
  bool next_chunk(std::uint64_t& pos, chunk& c) {
    const std::uint64_t size = stats_.file_size;
    std::uint64_t cut_pos = no_position;
    for (;;) {
      if (pos >= size || !error_.empty()) return false;
      const probe_result first = probe_at(pos, c);
      if (first == probe_result::ok) {
        pos += format::chunk_header_size + std::uint64_t{c.size} + format::chunk_trailer_size;
        return true;
      }
      // Only off the normal path: a header costs one more read here.
      const header_result h = first == probe_result::bad ? file_header_at(pos) : header_result::none;
      bool is_header = false;
      cut_pos = no_position;
      if (h == header_result::ok) {
        pos += format::file_header_size;
        continue;
      }
      if (h == header_result::incompatible) {
        const std::uint64_t next = scan(pos + 1, c, cut_pos, true, is_header);
        if (report_layout_) {
          stats_.bytes_skipped += next - pos;
          ++stats_.skipped_regions;
          char text[240];
          std::snprintf(text, sizeof text,
                        "file header at offset %llu has format version %u.%u, which this reader cannot read: "
                        "skipped %llu bytes up to %s",
                        static_cast<unsigned long long>(pos), incompatible_major_, incompatible_minor_,
                        static_cast<unsigned long long>(next - pos),
                        next < size ? "the next readable file header" : "the end of the file");
          add_diagnostic(diagnostic::severity::damage, pos, text);
        }
        pos = next;
        continue;
      }
      if (first == probe_result::cut) cut_pos = pos;
      const std::uint64_t found = scan(pos + 1, c, cut_pos, false, is_header);
      if (found < size && is_header) {
        report_skip(pos, found - pos, false);
        pos = found;
        continue;
      }
      if (found < size) {
        report_skip(pos, found - pos, false);
        pos = found + format::chunk_header_size + std::uint64_t{c.size} + format::chunk_trailer_size;
        return true;
      }
      break;
    }
    if (cut_pos != no_position) {
      if (cut_pos > pos) report_skip(pos, cut_pos - pos, false);
      if (report_layout_) {
        stats_.bytes_truncated += size - cut_pos;
        char text[200];
        std::snprintf(text, sizeof text,
                      "truncated: the last chunk, at offset %llu, is cut by the end of the file (%llu bytes lost)",
                      static_cast<unsigned long long>(cut_pos), static_cast<unsigned long long>(size - cut_pos));
        add_diagnostic(diagnostic::severity::damage, cut_pos, text);
      }
    } else {
      report_skip(pos, size - pos, true);
    }
    pos = size;
    return false;
  }

  void report_skip(std::uint64_t at, std::uint64_t count, bool to_end) {
    if (!report_layout_) return;
    stats_.bytes_skipped += count;
    ++stats_.skipped_regions;
    char text[200];
    std::snprintf(text, sizeof text, "corrupt data: skipped %llu bytes at offset %llu%s",
                  static_cast<unsigned long long>(count), static_cast<unsigned long long>(at),
                  to_end ? " (no valid chunk up to the end of the file)" : " (bad sync, length or CRC)");
    add_diagnostic(diagnostic::severity::damage, at, text);
  }

  void malformed(const char* what, std::uint64_t offset, const writer_info& w) {
    char text[200];
    std::snprintf(text, sizeof text, "malformed %s chunk at offset %llu (%s); ignored", what,
                  static_cast<unsigned long long>(offset), w.label().c_str());
    add_diagnostic(diagnostic::severity::damage, offset, text);
  }

  writer_info& writer(std::uint32_t id) {
    auto it = writers_.find(id);
    if (it == writers_.end()) {
      it = writers_.emplace(id, writer_info{}).first;
      it->second.id = id;
      it->second.order = writers_.size() - 1;
    }
    return it->second;
  }

  thread_info& thread(writer_info& w, std::uint64_t id) {
    auto it = w.threads.find(id);
    if (it == w.threads.end()) {
      it = w.threads.emplace(id, thread_info{}).first;
      it->second.writer = &w;
      it->second.thread_id = id;
      it->second.order = next_thread_order_++;
    }
    return it->second;
  }

  void read_process(writer_info& w, detail::payload_cursor& in, std::uint64_t offset) {
    std::uint64_t pid, rate, ring, flush;
    std::uint8_t source, flags;
    std::string name;
    if (!in.varint(pid) || !in.u8(source) || !in.u8(flags) || !in.varint(rate) || !in.varint(ring) ||
        !in.varint(flush) || !in.string(name))
      return malformed("process", offset, w);
    w.has_process = true;
    w.pid = pid;
    w.clock_source = source;
    w.clock_flags = flags;
    w.nominal_tick_rate = rate;
    w.ring_capacity = ring;
    w.flush_period_us = flush;
    w.process_name = std::move(name);
  }

  void read_definitions(writer_info& w, detail::payload_cursor& in, std::uint64_t offset) {
    while (in.left() != 0) {
      std::uint8_t tag;
      in.u8(tag);
      if (tag == static_cast<std::uint8_t>(format::definition_tag::category)) {
        std::uint64_t id;
        std::string name;
        if (!in.varint(id) || !in.string(name)) return malformed("definitions", offset, w);
        std::string& slot = w.categories[id];
        if (!slot.empty() && slot != name) redefined("category", id, slot, name, offset, w);
        slot = std::move(name);
      } else if (tag == static_cast<std::uint8_t>(format::definition_tag::site)) {
        site_info s;
        std::uint8_t kind;
        if (!in.varint(s.id) || !in.u8(kind) || !in.varint(s.category_id) || !in.string(s.name) ||
            !in.string(s.file) || !in.varint(s.line))
          return malformed("definitions", offset, w);
        s.kind = static_cast<format::site_kind>(kind);
        const std::uint64_t id = s.id;
        // A writer that started the file again sends every definition
        // again: the same content is expected and silent.
        const auto old = w.sites.find(id);
        if (old != w.sites.end() && (old->second.kind != s.kind || old->second.category_id != s.category_id ||
                                     old->second.name != s.name || old->second.file != s.file ||
                                     old->second.line != s.line))
          redefined("site", id, old->second.name, s.name, offset, w);
        w.sites[id] = std::move(s);
      } else {
        // An entry of a newer minor: entries carry no length, so nothing
        // after it can be found. The entries before it are kept.
        return;
      }
    }
  }

  /// A definition that contradicts an earlier one of the same writer: the
  /// writer never does that, so events may be attributed wrongly.
  void redefined(const char* what, std::uint64_t id, const std::string& was, const std::string& now,
                 std::uint64_t offset, const writer_info& w) {
    char text[320];
    std::snprintf(text, sizeof text,
                  "definitions chunk at offset %llu (%s): %s %llu redefined as \"%.60s\" (was \"%.60s\"); the "
                  "later definition is used for all its events",
                  static_cast<unsigned long long>(offset), w.label().c_str(), what, static_cast<unsigned long long>(id),
                  now.c_str(), was.c_str());
    add_diagnostic(diagnostic::severity::damage, offset, text);
  }

  void read_thread(writer_info& w, detail::payload_cursor& in, std::uint64_t offset) {
    std::uint64_t id, tid;
    std::string name;
    if (!in.varint(id) || id == 0 || !in.varint(tid) || !in.string(name)) return malformed("thread", offset, w);
    thread_info& t = thread(w, id);
    t.has_record = true;
    t.os_tid = tid;
    t.name = std::move(name);  // the last one wins (renames)
  }

  void read_thread_stats(writer_info& w, detail::payload_cursor& in, std::uint64_t offset) {
    std::uint64_t id, written, dropped, rejected = 0;
    if (!in.varint(id) || id == 0 || !in.varint(written) || !in.varint(dropped))
      return malformed("thread stats", offset, w);
    if (in.left() != 0 && !in.varint(rejected)) return malformed("thread stats", offset, w);
    thread_info& t = thread(w, id);
    t.has_stats = true;
    t.stats_written = written;
    t.stats_dropped = dropped;
    t.stats_rejected = rejected;
  }

  /// Calls `fn(tag, body)` for each record of a capture or gpu chunk (u8
  /// tag, varint size, body); stops and returns false when the framing is
  /// broken or `fn` returns false. A newer minor's tags and trailing body
  /// bytes are stepped over by `fn` (it ignores what it does not know).
  template <class Fn>
  static bool for_each_record(detail::payload_cursor& in, Fn&& fn) {
    while (in.left() != 0) {
      std::uint8_t tag;
      std::uint64_t size;
      if (!in.u8(tag) || !in.varint(size) || size > in.left()) return false;
      detail::payload_cursor body{in.pos, in.pos + size};
      in.pos += size;
      if (!fn(tag, body)) return false;
    }
    return true;
  }

  /// A capture chunk (1.2): recording windows and phases.
  void read_capture(writer_info& w, detail::payload_cursor& in, std::uint64_t offset) {
    const bool ok = for_each_record(in, [&w](std::uint8_t tag, detail::payload_cursor& body) {
      if (tag == static_cast<std::uint8_t>(format::capture_record::recording)) {
        recording_change change;
        std::uint8_t on, reason;
        if (!body.varint(change.tick) || !body.u8(on) || !body.u8(reason) || on > 1) return false;
        change.on = on == 1;
        change.reason = static_cast<format::capture_reason>(reason);
        w.recording.push_back(change);
      } else if (tag == static_cast<std::uint8_t>(format::capture_record::phase)) {
        phase_change change;
        if (!body.varint(change.tick) || !body.string(change.name)) return false;
        w.phases.push_back(std::move(change));
      }
      return true;
    });
    if (!ok) malformed("capture", offset, w);
  }

  /// Annotations kept per reader; past this they are counted, not stored
  /// (a flipped length cannot make the reader allocate without bound).
  static constexpr std::size_t max_annotations = 16u << 20;

  /// An annotations chunk (1.3). An exact repeat of the writer's previous
  /// annotations chunk (a duplicated chunk) is skipped.
  void read_annotations(writer_info& w, detail::payload_cursor& in, std::uint64_t offset, const chunk& c) {
    const std::uint32_t crc = c.crc;
    auto& last = last_annotations_[w.id];
    if (last.first == crc && last.second == c.size) {
      add_diagnostic(diagnostic::severity::damage, offset,
                     "annotations chunk at offset " + std::to_string(offset) + " (" + w.label() +
                         ") repeats the previous one; skipped");
      return;
    }
    last = {crc, static_cast<std::uint32_t>(c.size)};
    const bool ok = for_each_record(in, [&](std::uint8_t tag, detail::payload_cursor& body) {
      annotation a;
      if (!body.varint(a.thread_id) || a.thread_id == 0 || !body.varint(a.tick) || !body.varint(a.site_id))
        return false;
      std::uint64_t records = 1;
      switch (static_cast<format::annotation_record>(tag)) {
        case format::annotation_record::arg: {
          std::uint64_t zigzagged;
          if (!body.varint(zigzagged)) return false;
          a.value = static_cast<std::uint64_t>(format::unzigzag(zigzagged));
          break;
        }
        case format::annotation_record::arg_run: {  // 1.4: one argument, then (site, tick delta, value)*
          a.type = format::annotation_record::arg;
          std::uint64_t zigzagged, delta;
          if (!body.varint(zigzagged)) return false;
          a.value = static_cast<std::uint64_t>(format::unzigzag(zigzagged));
          keep_annotation(w, a, 1, offset);
          while (body.left() != 0) {
            if (!body.varint(a.site_id) || !body.varint(delta) || !body.varint(zigzagged) || a.tick + delta < a.tick)
              return false;
            a.tick += delta;
            a.value = static_cast<std::uint64_t>(format::unzigzag(zigzagged));
            keep_annotation(w, a, 1, offset);
          }
          return true;
        }
        case format::annotation_record::typed_arg_run: {  // 1.5: as arg_run, each site typed
          a.type = format::annotation_record::arg;
          std::uint64_t delta;
          if (!typed_argument(a, body)) return false;
          keep_annotation(w, a, 1, offset);
          while (body.left() != 0) {
            if (!body.varint(a.site_id) || !body.varint(delta) || a.tick + delta < a.tick) return false;
            a.tick += delta;
            if (!typed_argument(a, body)) return false;
            keep_annotation(w, a, 1, offset);
          }
          return true;
        }
        case format::annotation_record::arg_name:
          if (!body.varint(a.value_site_id)) return false;
          break;
        case format::annotation_record::flow:
        case format::annotation_record::free:
          if (!body.varint(a.value)) return false;
          break;
        case format::annotation_record::alloc:
          if (!body.varint(a.value) || !body.varint(a.bytes)) return false;
          records = 2;
          break;
        default: return true;  // a newer minor's record: stepped over
      }
      a.type = static_cast<format::annotation_record>(tag);
      keep_annotation(w, a, records, offset);
      return true;
    });
    if (!ok) malformed("annotations", offset, w);
  }

  /// Splits a typed site (in a.site_id) into site id and value type and
  /// reads the value that type implies (annotations tag 7).
  static bool typed_argument(annotation& a, detail::payload_cursor& body) {
    a.value_type = static_cast<format::arg_type>(a.site_id & 3);
    a.site_id >>= 2;
    switch (a.value_type) {
      case format::arg_type::integer: {
        std::uint64_t zigzagged;
        if (!body.varint(zigzagged)) return false;
        a.value = static_cast<std::uint64_t>(format::unzigzag(zigzagged));
        return true;
      }
      case format::arg_type::real: return body.u64(a.value);
      case format::arg_type::bool_false: a.value = 0; return true;
      case format::arg_type::bool_true: a.value = 1; return true;
    }
    return false;
  }

  /// Counts one decoded annotation (`records` ring records: 2 for an
  /// allocation) and keeps it, up to max_annotations.
  void keep_annotation(writer_info& w, const annotation& a, std::uint64_t records, std::uint64_t offset) {
    thread(w, a.thread_id).annotation_records += records;
    if (!w.has_events) {
      w.has_events = true;
      w.min_tick = w.max_tick = a.tick;
    }
    w.min_tick = std::min(w.min_tick, a.tick);
    w.max_tick = std::max(w.max_tick, a.tick);
    if (annotations_kept_ < max_annotations) {
      ++annotations_kept_;
      w.annotations.push_back(a);
    } else if (annotations_dropped_++ == 0) {
      add_diagnostic(diagnostic::severity::note, offset,
                     "more than " + std::to_string(max_annotations) + " annotations; the rest are not analysed");
    }
  }

  /// Resolves a writer's annotations (after its sites and clock are known).
  static void finish_annotations(writer_info& w) {
    std::stable_sort(w.annotations.begin(), w.annotations.end(),
                     [](const annotation& a, const annotation& b) { return a.tick < b.tick; });
    for (annotation& a : w.annotations) {
      a.ns = w.clock.to_ns(a.tick);
      const auto t = w.threads.find(a.thread_id);
      a.thread = t != w.threads.end() ? &t->second : nullptr;
      const auto site = w.sites.find(a.site_id);
      a.site = site != w.sites.end() ? &site->second : nullptr;
      if (a.type == format::annotation_record::arg_name) {
        const auto value = w.sites.find(a.value_site_id);
        a.value_site = value != w.sites.end() ? &value->second : nullptr;
      }
      if (a.type == format::annotation_record::alloc || a.type == format::annotation_record::free) w.has_memory = true;
    }
  }

  /// A gpu span record's fields.
  struct raw_gpu_span {
    std::uint64_t flags = 0, stream = 0, site = 0, os_tid = 0, begin = 0, length = 0;
    std::uint64_t anchor = 0, duration = 0;
    std::int64_t offset = 0;
  };
  static bool decode_gpu_span(detail::payload_cursor& b, raw_gpu_span& s) {
    if (!b.varint(s.flags) || !b.varint(s.stream) || !b.varint(s.site) || !b.varint(s.os_tid) ||
        !b.varint(s.begin) || !b.varint(s.length) || s.begin + s.length < s.begin)
      return false;
    if ((s.flags & format::gpu_span_resolved) == 0) return true;
    std::uint64_t offset;
    if (!b.varint(s.anchor) || !b.varint(offset) || !b.varint(s.duration)) return false;
    s.offset = format::unzigzag(offset);
    return true;
  }

  /// Pass 1: a gpu chunk's devices, streams, anchors, totals; span records
  /// are only counted (and captured launches remembered, to flag them).
  void read_gpu(writer_info& w, detail::payload_cursor& in, std::uint64_t offset) {
    ++stats_.gpu_chunks;
    writer_gpu& g = w.gpu;
    g.present = true;
    std::uint64_t unknown_streams = 0;
    const bool ok = for_each_record(in, [&](std::uint8_t tag, detail::payload_cursor& b) {
      switch (static_cast<format::gpu_record>(tag)) {
        case format::gpu_record::runtime:
          if (!b.varint(g.driver_version) || !b.varint(g.runtime_version) || !b.varint(g.device_count) ||
              !b.string(g.backend))
            return false;
          g.has_runtime = true;
          return true;
        case format::gpu_record::device: {
          std::uint64_t index;
          std::string name;
          std::uint64_t major, minor;
          if (!b.varint(index) || !b.string(name) || !b.varint(major) || !b.varint(minor)) return false;
          gpu_device_info& d = g.devices[index];
          d.index = index;
          d.name = std::move(name);
          d.cc_major = major;
          d.cc_minor = minor;
          return true;
        }
        case format::gpu_record::stream: {
          gpu_stream_info s;
          if (!b.varint(s.id) || s.id == 0 || !b.varint(s.device) || !b.u64(s.handle) || !b.varint(s.owner_tid))
            return false;
          auto found = g.streams.find(s.id);
          if (found == g.streams.end()) {
            s.order = g.streams.size();
            g.streams.emplace(s.id, s);
          }
          g.devices[s.device].index = s.device;
          return true;
        }
        case format::gpu_record::anchor: {
          std::uint64_t device, before, after, since;
          gpu_clock::anchor a;
          if (!b.varint(device) || !b.varint(a.seq) || !b.u64(before) || !b.u64(after) || !b.varint(a.link) ||
              !b.varint(since))
            return false;
          a.since_previous_ns = format::unzigzag(since);
          gpu_device_info& d = g.devices[device];
          d.index = device;
          d.anchors.push_back(a);
          d.anchor_ticks.emplace_back(before, after);
          return true;
        }
        case format::gpu_record::span: {
          raw_gpu_span s;
          if (!decode_gpu_span(b, s)) return false;
          const auto stream = g.streams.find(s.stream);
          if (stream == g.streams.end()) {
            ++unknown_streams;
            return true;
          }
          // The launch is a host span: it belongs to the writer's time range.
          if (!w.has_events) {
            w.has_events = true;
            w.min_tick = s.begin;
            w.max_tick = s.begin + s.length;
          }
          w.min_tick = std::min(w.min_tick, s.begin);
          w.max_tick = std::max(w.max_tick, s.begin + s.length);
          if (s.flags & format::gpu_span_resolved) {
            ++stream->second.resolved;
          } else if (s.flags & format::gpu_span_captured) {
            ++stream->second.captured;
            if (g.captured_spans.size() < writer_gpu::max_captured_keys)
              g.captured_spans.emplace(s.os_tid, s.begin + s.length);
          } else {
            ++stream->second.unresolved;
          }
          return true;
        }
        case format::gpu_record::stats:
          if (!b.varint(g.launches) || !b.varint(g.resolved) || !b.varint(g.captured) || !b.varint(g.unresolved) ||
              !b.varint(g.skipped) || !b.varint(g.event_pairs))
            return false;
          g.has_stats = true;
          return true;
        case format::gpu_record::off: return b.string(g.off_reason);
      }
      return true;  // a record of a newer minor: its size lets us step over it
    });
    if (!ok) malformed("gpu", offset, w);
    if (unknown_streams != 0) {
      char text[200];
      std::snprintf(text, sizeof text, "gpu chunk at offset %llu (%s): %llu GPU span(s) of an undefined stream ignored",
                    static_cast<unsigned long long>(offset), w.label().c_str(),
                    static_cast<unsigned long long>(unknown_streams));
      add_diagnostic(diagnostic::severity::damage, offset, text);
    }
  }

  /// After the writer's clock model: anchors to host ns, one fit per device.
  void build_gpu_clocks(writer_info& w) {
    for (auto& entry : w.gpu.devices) {
      gpu_device_info& d = entry.second;
      for (std::size_t i = 0; i < d.anchors.size(); ++i) {
        d.anchors[i].host_before_ns = w.clock.to_ns(d.anchor_ticks[i].first);
        d.anchors[i].host_after_ns = w.clock.to_ns(d.anchor_ticks[i].second);
      }
      d.clock.build(d.anchors);
    }
  }

  /// Pass 1 look at an events chunk: only the tick range (for the output's
  /// time origin and `info`); sites are not needed to walk the records.
  void scan_event_ticks(writer_info& w, detail::payload_cursor& in) {
    ++stats_.events_chunks;
    std::uint64_t thread_id, base;
    if (!in.varint(thread_id) || !in.varint(base)) return;  // reported in pass 2
    detail::decode_events(in, base, [&w](const detail::raw_event& e) {
      ++w.event_records;
      if (!w.has_events) {
        w.has_events = true;
        w.min_tick = e.begin;
        w.max_tick = e.end;
      }
      if (e.begin < w.min_tick) w.min_tick = e.begin;
      if (e.end > w.max_tick) w.max_tick = e.end;
      return true;
    });
  }

  void finish_metadata() {
    has_events_ = false;
    unknown_rate_.clear();
    for (auto& entry : writers_) {
      writer_info& w = entry.second;
      w.clock.build(w.calibration, w.clock_source, w.nominal_tick_rate);
      build_gpu_clocks(w);
      resolve_snapshot(w.snapshot, w.clock, w.calibration);
      if (!w.clock.warning().empty())
        add_diagnostic(diagnostic::severity::note, 0, w.label() + ": " + w.clock.warning());
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
      for (auto& s : w.sites) {
        const auto cat = w.categories.find(s.second.category_id);
        if (cat != w.categories.end()) {
          s.second.category = cat->second;
        } else {
          char text[48];
          std::snprintf(text, sizeof text, "category %llu", static_cast<unsigned long long>(s.second.category_id));
          s.second.category = text;
        }
      }
      auto by_tick = [](const auto& a, const auto& b) { return a.tick < b.tick; };
      std::stable_sort(w.recording.begin(), w.recording.end(), by_tick);
      std::stable_sort(w.phases.begin(), w.phases.end(), by_tick);
      for (recording_change& change : w.recording) change.ns = w.clock.to_ns(change.tick);
      for (phase_change& change : w.phases) change.ns = w.clock.to_ns(change.tick);
      finish_annotations(w);
      if (w.has_events) {
        w.first_ns = w.clock.to_ns(w.min_tick);
        w.last_ns = w.clock.to_ns(w.max_tick);
        if (!has_events_ || w.first_ns < first_ns_) first_ns_ = w.first_ns;
        if (!has_events_ || w.last_ns > last_ns_) last_ns_ = w.last_ns;
        has_events_ = true;
      }
    }
    for (const writer_info* w : writers_in_order()) {
      if (!w->has_process) {
        char text[160];
        std::snprintf(text, sizeof text, "writer 0x%08x has no process record: pid, clock and name unknown",
                      static_cast<unsigned>(w->id));
        add_diagnostic(diagnostic::severity::damage, 0, text);
      }
      if (!w->has_end)
        add_diagnostic(diagnostic::severity::damage, stats_.file_size,
                       "incomplete: writer " + w->label() +
                           " has no end record (process killed or crashed?); events after its last flush are missing");
    }
    threads_.assign(next_thread_order_, nullptr);
    for (const auto& w : writers_)
      for (const auto& t : w.second.threads) threads_[t.second.order] = &t.second;
  }

  /// Where a segment of an events chunk starts (read_events_backward).
  struct checkpoint {
    const unsigned char* pos;
    std::uint64_t ref;
  };

  /// Checks an events chunk's header and thread; null (with a diagnostic)
  /// when its events cannot be used.
  thread_info* events_chunk_thread(const chunk& c, writer_info& w, detail::payload_cursor& in, std::uint64_t& base) {
    std::uint64_t thread_id;
    char text[320];
    if (!in.varint(thread_id) || !in.varint(base)) {
      std::snprintf(text, sizeof text, "events chunk at offset %llu (%s): malformed header; %u bytes of events lost",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(), static_cast<unsigned>(c.size));
      events_damage(c.offset, c.size, text);
      return nullptr;
    }
    const auto found = w.threads.find(thread_id);
    if (found == w.threads.end() || !found->second.has_record) {
      std::snprintf(text, sizeof text,
                    "events chunk at offset %llu (%s): unknown thread id %llu (no thread record); %u bytes of "
                    "events lost",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(),
                    static_cast<unsigned long long>(thread_id), static_cast<unsigned>(c.size));
      events_damage(c.offset, c.size, text);
      return nullptr;
    }
    thread_info& t = found->second;
    if (t.has_last_events_ && t.last_events_crc_ == c.crc && t.last_events_size_ == c.size) {
      // Identical bytes twice in a row for one thread cannot happen (the base
      // tick moves on); it is a duplicated write. Counting it twice would lie.
      std::snprintf(text, sizeof text, "duplicate events chunk at offset %llu (%s, tid %llu) skipped",
                    static_cast<unsigned long long>(c.offset), w.label().c_str(),
                    static_cast<unsigned long long>(t.os_tid));
      add_diagnostic(diagnostic::severity::damage, c.offset, text);
      return nullptr;
    }
    t.has_last_events_ = true;
    t.last_events_crc_ = c.crc;
    t.last_events_size_ = c.size;
    ++t.events_chunks;
    return &t;
  }

  template <class Sink>
  void decode_chunk(const chunk& c, Sink& sink) {
    writer_info& w = writers_[c.writer];  // exists: pass 1 saw the same chunk
    detail::payload_cursor in{c.payload, c.payload + c.size};
    std::uint64_t base = 0;
    thread_info* tp = events_chunk_thread(c, w, in, base);
    if (tp == nullptr) return;
    std::uint64_t unknown_site = 0;
    const detail::decode_error err = decode_resolved(w, *tp, in, base, unknown_site, sink);
    if (err != detail::decode_error::none) report_decode_error(c, w, *tp, in, err, unknown_site);
  }

  /// Decodes and resolves events from `in` (reference tick `ref`), calling
  /// `sink(const event&)`; counts them on the thread.
  template <class Sink>
  detail::decode_error decode_resolved(writer_info& w, thread_info& t, detail::payload_cursor& in, std::uint64_t ref,
                                       std::uint64_t& unknown_site, Sink& sink) {
    event e;
    e.writer = &w;
    e.thread = &t;
    return detail::decode_events(in, ref, [&](const detail::raw_event& r) {
      e.begin_tick = r.begin;
      e.end_tick = r.end;
      e.begin_ns = w.clock.to_ns(r.begin);
      e.end_ns = r.end == r.begin ? e.begin_ns : w.clock.to_ns(r.end);
      e.value = r.value;
      e.count = r.count;
      if (r.type == format::event_type::special) {
        e.kind = event_kind::loss;
        e.site = nullptr;
        ++t.loss_records;
        t.lost += r.count;
      } else {
        const auto s = w.sites.find(r.id);
        if (s == w.sites.end()) {
          unknown_site = r.id;
          return false;
        }
        e.site = &s->second;
        switch (r.type) {
          case format::event_type::span: e.kind = event_kind::span; ++t.spans; break;
          case format::event_type::instant: e.kind = event_kind::instant; ++t.instants; break;
          default: e.kind = event_kind::counter; ++t.counters; break;
        }
      }
      sink(static_cast<const event&>(e));
      return true;
    });
  }

  /// Decodes a chunk forward in segments and hands each segment's events
  /// to `sink` last first, the last segment first. Events after a decoding
  /// error are lost exactly as in the forward pass.
  template <class Sink>
  void decode_chunk_backward(const chunk& c, Sink& sink, std::vector<event>& segment,
                             std::vector<checkpoint>& checkpoints) {
    writer_info& w = writers_[c.writer];
    detail::payload_cursor in{c.payload, c.payload + c.size};
    std::uint64_t base = 0;
    thread_info* tp = events_chunk_thread(c, w, in, base);
    if (tp == nullptr) return;
    thread_info& t = *tp;
    // Forward scan: keep the last segment's events, and a checkpoint at
    // the start of every segment so earlier ones can be decoded again.
    checkpoints.clear();
    segment.clear();
    checkpoints.push_back(checkpoint{in.pos, base});
    std::uint64_t unknown_site = 0;
    std::size_t in_segment = 0;
    auto collect = [&](const event& e) {
      if (in_segment == backward_segment) {
        in_segment = 0;
        segment.clear();
      }
      segment.push_back(e);
      if (++in_segment == backward_segment) checkpoints.push_back(checkpoint{in.pos, e.end_tick});
    };
    const detail::decode_error err = decode_resolved(w, t, in, base, unknown_site, collect);
    const unsigned char* stop = in.pos;
    if (in_segment == backward_segment) {  // the last segment is exactly full
      checkpoints.pop_back();
    }
    // checkpoints.back() now starts the segment held in `segment`.
    for (auto it = segment.rbegin(); it != segment.rend(); ++it) sink(static_cast<const event&>(*it));
    const std::uint64_t spans = t.spans, instants = t.instants, counters = t.counters, losses = t.loss_records,
                        lost = t.lost;
    for (std::size_t k = checkpoints.size() - 1; k-- > 0;) {
      segment.clear();
      detail::payload_cursor part{checkpoints[k].pos, checkpoints[k + 1].pos};
      std::uint64_t ignored = 0;
      auto keep = [&segment](const event& e) { segment.push_back(e); };
      decode_resolved(w, t, part, checkpoints[k].ref, ignored, keep);
      for (auto it = segment.rbegin(); it != segment.rend(); ++it) sink(static_cast<const event&>(*it));
    }
    // The re-decoded segments were counted in the forward scan already.
    t.spans = spans;
    t.instants = instants;
    t.counters = counters;
    t.loss_records = losses;
    t.lost = lost;
    in.pos = stop;
    if (err != detail::decode_error::none) report_decode_error(c, w, t, in, err, unknown_site);
  }

  void report_decode_error(const chunk& c, const writer_info& w, const thread_info& t, const detail::payload_cursor& in,
                           detail::decode_error err, std::uint64_t unknown_site) {
    char text[320];
    const auto at = static_cast<unsigned long long>(in.pos - c.payload);
    const auto lost = static_cast<unsigned>(in.left());
    if (err == detail::decode_error::rejected)
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
                    static_cast<unsigned long long>(t.os_tid), detail::decode_error_text(err), at, lost);
    events_damage(c.offset, lost, text);
  }

  void events_damage(std::uint64_t offset, std::uint64_t bytes, const char* text) {
    ++stats_.events_chunks_damaged;
    stats_.events_bytes_undecoded += bytes;
    add_diagnostic(diagnostic::severity::damage, offset, text);
  }

  static constexpr std::uint64_t no_position = ~std::uint64_t{0};

  std::string path_;
  std::string error_;
  detail::file_handle file_;
  bool opened_ = false;
  bool metadata_read_ = false;
  std::uint16_t major_ = 0;
  std::uint16_t minor_ = 0;
  read_stats stats_;

  std::vector<unsigned char> buffer_;  // one chunk, reused; grows to <= 4 MiB + 16
  std::vector<unsigned char> window_;  // resync scan window
  std::vector<std::uint64_t> events_offsets_;  // pass 1: offset of every valid events chunk
  std::uint64_t crc_spent_ = 0;  // CRC bytes computed in this pass (see probe_at)
  std::uint64_t data_start_ = format::file_header_size;  // where the passes begin (0: no header at the start)
  std::uint64_t headers_seen_ = 0;  // file headers met by pass 1 (minor version bookkeeping)
  unsigned incompatible_major_ = 0, incompatible_minor_ = 0;  // the last unreadable file header's version
  bool report_layout_ = true;

  std::map<std::uint32_t, writer_info> writers_;
  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> last_annotations_;  ///< writer -> (crc, size)
  std::size_t annotations_kept_ = 0;
  std::uint64_t annotations_dropped_ = 0;
  std::vector<const thread_info*> threads_;
  std::size_t next_thread_order_ = 0;
  bool has_events_ = false;
  std::int64_t first_ns_ = 0;
  std::int64_t last_ns_ = 0;
  std::string unknown_rate_;         ///< see unknown_rate()
  bool allow_unknown_rate_ = false;  ///< see allow_unknown_rate()

  std::vector<diagnostic> diagnostics_;
  std::uint64_t diagnostics_dropped_ = 0;
  std::uint64_t damage_count_ = 0;
  std::size_t pass1_diagnostics_ = 0;
  std::uint64_t pass1_dropped_ = 0;
  std::uint64_t pass1_damage_ = 0;
};

}  // namespace reader
}  // namespace v1
}  // namespace edgetrace
