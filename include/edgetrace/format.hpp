// SPDX-License-Identifier: MIT
// The on-disk dump format shared by the writer and the reader: constants,
// chunk framing, LEB128 varints and CRC-32. docs/FORMAT.md is the spec.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/core/crc32.hpp>
#include <edgetrace/core/kinds.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace format {

/// File header: 8 magic bytes, u16 major, u16 minor, u32 reserved (0).
/// The magic is PNG-style: a high-bit byte and CR/LF/^Z catch text-mode
/// transfers and files that are not edgetrace dumps at all.
inline constexpr unsigned char file_magic[8] = {0x89, 'E', 'T', 'R', '\r', '\n', 0x1A, '\n'};
inline constexpr std::uint16_t version_major = 1;
inline constexpr std::uint16_t version_minor = 16;

/// The process chunk's last byte (1.8): what a full ring did
/// (EDGETRACE_ON_FULL). Absent before 1.8.
inline constexpr unsigned char overload_wait = 0;
inline constexpr unsigned char overload_drop = 1;
inline constexpr std::size_t file_header_size = 16;

/// Chunk framing: sync0 sync1 type flags | u32 payload_size | u32 writer_id |
/// payload | u32 crc32(header + payload). Little-endian throughout.
inline constexpr unsigned char chunk_sync0 = 0xEC;
inline constexpr unsigned char chunk_sync1 = 0x5A;
inline constexpr std::size_t chunk_header_size = 12;
inline constexpr std::size_t chunk_trailer_size = 4;
/// Readers treat a larger payload_size as corruption, so a flipped length
/// bit can never make them allocate or skip gigabytes.
inline constexpr std::uint32_t max_chunk_payload = 4u << 20;
/// Writers keep event chunks near this size (one write() each).
inline constexpr std::uint32_t target_event_payload = 60u << 10;
inline constexpr std::size_t max_string_size = 64u << 10;

enum class chunk_type : std::uint8_t {
  process = 1,      ///< writer metadata: pid, clock source, ring size...
  calibration = 2,  ///< (tick, CLOCK_MONOTONIC ns, CLOCK_REALTIME ns) triples
  definitions = 3,  ///< categories and sites
  thread = 4,       ///< thread id, OS tid, name
  events = 5,       ///< delta-encoded records of one thread
  thread_stats = 6, ///< per-thread written/dropped totals
  end = 7,          ///< clean end of this writer's stream
  gpu = 8,          ///< GPU devices, streams, clock anchors and spans (1.2, cuda.hpp)
  capture = 9,      ///< recording windows (pause/resume) and phases (1.2)
  annotations = 10, ///< span arguments, flow steps, allocations and frees (1.3)
  snapshot = 11,    ///< flight recorder: why and when this dump was written (1.6)
  device_tracks = 12,   ///< the device's sampled quantities, and the sources not found (1.9)
  device_samples = 13,  ///< the device's values, sampled by the flusher (1.9)
};

enum class clock_source : std::uint8_t {
  monotonic_ns = 0,  ///< clock_gettime(CLOCK_MONOTONIC), ticks are ns
  x86_tsc = 1,       ///< rdtsc
  arm_cntvct = 2,    ///< cntvct_el0
};

/// Low two bits of an event code; the rest is the site id (or the subtype
/// of a special event).
enum class event_type : std::uint8_t { span = 0, instant = 1, counter = 2, special = 3 };
enum class special_type : std::uint8_t { loss = 0, rebase = 1 };

enum class definition_tag : std::uint8_t { category = 1, site = 2 };

/// Records of a capture chunk (1.2). Each is `u8 tag, varint size, body`,
/// so a reader steps over tags (and trailing body bytes) it does not know.
enum class capture_record : std::uint8_t {
  recording = 1,  ///< varint tick, u8 on (0/1), u8 reason: recording stopped or started
  phase = 2,      ///< varint tick, string name: a labelled phase begins
};

/// Why recording stopped or started (the reason byte of a recording record).
enum class capture_reason : std::uint8_t {
  api = 0,          ///< edgetrace::pause() / edgetrace::resume()
  start_after = 1,  ///< EDGETRACE_START_AFTER: waiting at start-up, then its time or mark count came
  duration = 2,     ///< EDGETRACE_DURATION ran out
  signal = 3,       ///< EDGETRACE_TOGGLE_SIGNAL: waiting at start-up, then a toggle signal
  max_size = 4,     ///< EDGETRACE_MAX_MB: the dump neared its size bound; off for good (1.13)
  min_free = 5,     ///< EDGETRACE_MIN_FREE_MB: its file system neared the free-space floor; off for good (1.13)
};

/// What made a flight recorder write a snapshot (chunk 11, 1.6).
enum class snapshot_trigger : std::uint8_t {
  call = 0,     ///< edgetrace::snapshot("reason") from the app
  signal = 1,   ///< EDGETRACE_SNAPSHOT_SIGNAL
  latency = 2,  ///< EDGETRACE_TRIGGER: a span or a mark's iteration over its limit
  crash = 3,    ///< SIGSEGV, SIGBUS, SIGABRT or SIGFPE
  exit = 4,     ///< EDGETRACE_FLIGHT_AT_EXIT=1
};

/// The payload of a snapshot chunk (1.6), in field order: varint sequence
/// (1 for OUTPUT.1, ...), u8 trigger, string reason, varint trigger tick,
/// varint window first tick, varint window last tick, varint skipped
/// (snapshots not written since the previous one because of the rate
/// limit), varint after ms (recorded after the trigger: EDGETRACE_FLIGHT_AFTER_MS,
/// less when the run ended first; 0 for crash and exit), varint ring bytes
/// (EDGETRACE_FLIGHT_MB in bytes), varint chunks overwritten (events and
/// annotations chunks the in-memory ring dropped before this window).
struct snapshot_info {
  std::uint64_t sequence = 0;
  snapshot_trigger trigger = snapshot_trigger::call;
  std::uint64_t trigger_tick = 0;
  std::uint64_t window_first_tick = 0;
  std::uint64_t window_last_tick = 0;
  std::uint64_t skipped = 0;
  std::uint64_t after_ms = 0;
  std::uint64_t ring_bytes = 0;
  std::uint64_t chunks_overwritten = 0;
};

/// Records of an annotations chunk (1.3). Each is `u8 tag, varint size,
/// body`; every body starts with varint thread id, varint tick, varint site id.
enum class annotation_record : std::uint8_t {
  arg = 1,       ///< + zigzag varint value
  arg_name = 2,  ///< + varint site id whose name is the value
  flow = 3,      ///< + varint flow id
  alloc = 4,     ///< + varint address, varint bytes
  free = 5,      ///< + varint address
  /// (1.4) consecutive arguments of one thread: the first as `arg`, then
  /// repeated (varint site id, varint tick − previous tick, zigzag value)
  arg_run = 6,
  /// (1.5) consecutive arguments of one thread, of any value type: as
  /// arg_run, with a *typed site* (site id × 4 + arg_type) in place of
  /// each site id; the type decides the value's encoding
  typed_arg_run = 7,
};

/// The value type of a typed argument run's entry (annotations tag 7, 1.5):
/// the low two bits of its typed site.
enum class arg_type : std::uint8_t {
  integer = 0,     ///< zigzag varint value follows
  real = 1,        ///< f64 (IEEE-754 binary64, little-endian) follows
  bool_false = 2,  ///< no value bytes: false
  bool_true = 3,   ///< no value bytes: true
};

/// Records of a gpu chunk (1.2). Each is `u8 tag, varint size, body`, so a
/// reader steps over tags (and trailing body bytes) it does not know.
enum class gpu_record : std::uint8_t {
  runtime = 1,  ///< driver and runtime versions, device count
  device = 2,   ///< device index, name, compute capability
  stream = 3,   ///< dump stream id, device, handle (first use)
  anchor = 4,   ///< GPU event bracketed by host ticks: clock alignment
  span = 5,     ///< one GPU scope: host launch and its resolved GPU time
  stats = 6,    ///< totals so far (the last one wins)
  off = 7,      ///< GPU tracing turned off, with the reason
};

/// Flags of a gpu span record.
enum gpu_span_flag : std::uint8_t {
  gpu_span_resolved = 1,    ///< GPU times follow
  gpu_span_captured = 2,    ///< the stream was capturing a CUDA graph: host span only
  gpu_span_unresolved = 4,  ///< the events never completed (exit, GPU tracing off)
};

/// Records of a device_tracks chunk (1.9), each `u8 tag, varint size, body`.
enum class device_track_record : std::uint8_t {
  track = 1,    ///< one sampled quantity: id, quantity, index, thread, name, source, maximum
  missing = 2,  ///< a source looked for and not found or not readable: name, why
  sampler = 3,  ///< the sampling period and the files read per sample
};

/// Records of a device_samples chunk (1.9), each `u8 tag, varint size, body`.
enum class device_sample_record : std::uint8_t {
  values = 1,  ///< one sample: tick, then (track id, zigzag value) pairs
  stats = 2,   ///< the sampler's totals so far (the last one wins)
};

/// What a device track measures, and so its unit. Levels are values as
/// read; totals only grow (a reader shows their rate between samples).
enum class device_quantity : std::uint8_t {
  cpu_khz = 1,              ///< level: a CPU's clock (cpufreq scaling_cur_freq); maximum: cpuinfo_max_freq
  cpu_busy_permille = 2,    ///< level: a CPU's busy share over the last interval (/proc/stat)
  temperature_mc = 3,       ///< level: a thermal zone, milli-degrees Celsius
  throttle_total = 4,       ///< total: a CPU's thermal throttling events (x86 thermal_throttle)
  cgroup_throttled_total = 5,     ///< total: periods the cgroup's CPU quota throttled (cpu.stat nr_throttled)
  cgroup_throttled_us_total = 6,  ///< total: µs throttled (cpu.stat throttled_usec)
  thread_cpu_ns_total = 7,  ///< total: a traced thread's CPU time (schedstat)
  thread_wait_ns_total = 8, ///< total: its time waiting on a run queue (schedstat)
  thread_involuntary_total = 9,  ///< total: its involuntary context switches (status)
  rss_kb = 10,              ///< level: the process's resident memory
  major_faults_total = 11,  ///< total: the process's major page faults
  mem_available_kb = 12,    ///< level: the system's MemAvailable
  gpu_load_permille = 13,   ///< level: GPU load (Jetson `load`)
  gpu_hz = 14,              ///< level: GPU clock (devfreq cur_freq); maximum: max_freq
  emc_hz = 15,              ///< level: memory-controller clock (devfreq cur_freq)
  power_mw = 16,            ///< level: a power rail (INA3221: mV × mA)
  others_busy_permille = 17,  ///< level: CPU used by other processes over the last interval, 1000 = one CPU
  steal_permille = 18,        ///< level: CPU time the hypervisor took from this machine over the last interval, 1000 = one CPU (1.16)
};

/// Stream handles with a meaning of their own (the CUDA runtime's values).
inline constexpr std::uint64_t gpu_stream_legacy = 0;      ///< 0: the legacy default stream
inline constexpr std::uint64_t gpu_stream_legacy_alias = 1;  ///< cudaStreamLegacy
inline constexpr std::uint64_t gpu_stream_per_thread = 2;  ///< cudaStreamPerThread

/// Zigzag encoding of a signed value as an unsigned varint.
constexpr std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0);
}
constexpr std::int64_t unzigzag(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

// ---------------------------------------------------------------- varints

/// Longest LEB128 encoding of a 64-bit value.
inline constexpr std::size_t max_varint_size = 10;

/// Writes `value` as unsigned LEB128 at `out`; returns the byte after it.
/// Cost: one store per 7 bits of value.
inline unsigned char* put_varint(unsigned char* out, std::uint64_t value) noexcept {
  while (value >= 0x80) {
    *out++ = static_cast<unsigned char>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<unsigned char>(value);
  return out;
}

/// Writes `value` (below 2^21) as an unsigned LEB128 padded to exactly three
/// bytes: room for a size is kept before the body it counts, and filled in
/// after it (readers accept the non-minimal form).
inline void put_varint3(unsigned char* out, std::size_t value) noexcept {
  out[0] = static_cast<unsigned char>(0x80 | (value & 0x7F));
  out[1] = static_cast<unsigned char>(0x80 | ((value >> 7) & 0x7F));
  out[2] = static_cast<unsigned char>((value >> 14) & 0x7F);
}

/// Reads an unsigned LEB128 from [*in, end). Returns false, leaving *in
/// unspecified, on a truncated, overlong (> 10 bytes) or overflowing value.
EDGETRACE_DETAIL_ALWAYS_INLINE bool get_varint(const unsigned char*& in, const unsigned char* end, std::uint64_t& value) noexcept {
  std::uint64_t result = 0;
  unsigned shift = 0;
  for (std::size_t i = 0; i < max_varint_size; ++i) {
    if (in == end) return false;
    const unsigned char byte = *in++;
    if (shift == 63 && (byte & 0x7E) != 0) return false;  // bits past 64
    result |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      value = result;
      return true;
    }
    shift += 7;
  }
  return false;
}

inline void put_u16(unsigned char* out, std::uint16_t v) noexcept {
  out[0] = static_cast<unsigned char>(v);
  out[1] = static_cast<unsigned char>(v >> 8);
}
inline void put_u32(unsigned char* out, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put_u64(unsigned char* out, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint16_t get_u16(const unsigned char* in) noexcept {
  return static_cast<std::uint16_t>(in[0] | (in[1] << 8));
}
inline std::uint32_t get_u32(const unsigned char* in) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | in[i];
  return v;
}
inline std::uint64_t get_u64(const unsigned char* in) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | in[i];
  return v;
}

// ---------------------------------------------------------------- CRC-32

/// CRC-32 (IEEE 802.3, as zlib's crc32) of [data, data + size), continuing
/// from `crc` (pass 0 to start). About a cycle a byte with tables; 16 bytes
/// a cycle where the CPU multiplies carry-less (x86-64) or has CRC32
/// instructions (aarch64): core/crc32.hpp.
inline std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept {
  return ~detail::crc32_update(static_cast<const unsigned char*>(data), size, ~crc);
}

// ---------------------------------------------------------------- framing

/// Writes the 16-byte file header into `out`.
inline void write_file_header(unsigned char* out) noexcept {
  std::memcpy(out, file_magic, sizeof file_magic);
  put_u16(out + 8, version_major);
  put_u16(out + 10, version_minor);
  put_u32(out + 12, 0);
}

/// Frames a chunk in place: `chunk` holds chunk_header_size bytes of room,
/// then `payload_size` payload bytes, then chunk_trailer_size bytes of room.
/// Fills header and CRC; returns the total chunk size.
inline std::size_t seal_chunk(unsigned char* chunk, chunk_type type, std::uint32_t writer_id,
                              std::uint32_t payload_size) noexcept {
  chunk[0] = chunk_sync0;
  chunk[1] = chunk_sync1;
  chunk[2] = static_cast<unsigned char>(type);
  chunk[3] = 0;
  put_u32(chunk + 4, payload_size);
  put_u32(chunk + 8, writer_id);
  const std::size_t body = chunk_header_size + payload_size;
  put_u32(chunk + body, crc32(chunk, body));
  return body + chunk_trailer_size;
}

/// Writes a snapshot chunk's payload (the reason cut to 255 bytes) into
/// `out`, which has room for snapshot_payload_max bytes; returns its end.
/// Async-signal-safe: the crash path calls it.
inline constexpr std::size_t snapshot_reason_max = 255;
inline constexpr std::size_t snapshot_payload_max = 9 * max_varint_size + 1 + snapshot_reason_max;
inline unsigned char* put_snapshot_payload(unsigned char* out, const snapshot_info& info, const char* reason,
                                           std::size_t reason_size) noexcept {
  if (reason_size > snapshot_reason_max) reason_size = snapshot_reason_max;
  out = put_varint(out, info.sequence);
  *out++ = static_cast<unsigned char>(info.trigger);
  out = put_varint(out, reason_size);
  if (reason_size != 0) std::memcpy(out, reason, reason_size);
  out += reason_size;
  out = put_varint(out, info.trigger_tick);
  out = put_varint(out, info.window_first_tick);
  out = put_varint(out, info.window_last_tick);
  out = put_varint(out, info.skipped);
  out = put_varint(out, info.after_ms);
  out = put_varint(out, info.ring_bytes);
  return put_varint(out, info.chunks_overwritten);
}

/// Reads a snapshot chunk's payload; false when it is cut short. Bytes
/// after the known fields are ignored (a later minor may add some).
inline bool get_snapshot_payload(const unsigned char* in, const unsigned char* end, snapshot_info& info,
                                 const unsigned char*& reason, std::size_t& reason_size) noexcept {
  std::uint64_t trigger = 0, size = 0;
  if (!get_varint(in, end, info.sequence) || in == end) return false;
  trigger = *in++;
  info.trigger = static_cast<snapshot_trigger>(trigger);
  if (!get_varint(in, end, size) || size > static_cast<std::uint64_t>(end - in)) return false;
  reason = in;
  reason_size = static_cast<std::size_t>(size);
  in += size;
  return get_varint(in, end, info.trigger_tick) && get_varint(in, end, info.window_first_tick) &&
         get_varint(in, end, info.window_last_tick) && get_varint(in, end, info.skipped) &&
         get_varint(in, end, info.after_ms) && get_varint(in, end, info.ring_bytes) &&
         get_varint(in, end, info.chunks_overwritten);
}

}  // namespace format
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
