// SPDX-License-Identifier: MIT
// A flight recorder's snapshot chunk (type 11, format 1.6) as the reader keeps it: why, when, and which window of the run the dump holds.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include <edgetrace/decode/clock_model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// What one writer's snapshot chunk says (docs/FORMAT.md, "11 snapshot").
/// A dump with one is a flight recorder's window of a run: the records the
/// writer counted before the window were left out on purpose, not lost.
struct snapshot_record {
  bool present = false;  ///< a snapshot chunk was read for this writer
  format::snapshot_info info;
  std::string reason;  ///< as written (at most format::snapshot_reason_max bytes)

  // Resolved after pass 1 with the writer's clock model.
  std::int64_t trigger_ns = 0;       ///< CLOCK_MONOTONIC
  std::int64_t window_first_ns = 0;  ///< CLOCK_MONOTONIC
  std::int64_t window_last_ns = 0;   ///< CLOCK_MONOTONIC
  /// CLOCK_REALTIME minus CLOCK_MONOTONIC at the calibration pair nearest
  /// the trigger; valid when has_wall_clock.
  bool has_wall_clock = false;
  std::int64_t realtime_offset_ns = 0;

  /// Length of the window in ns (0 when it is empty or reversed).
  std::uint64_t window_ns() const noexcept {
    return window_last_ns > window_first_ns ? static_cast<std::uint64_t>(window_last_ns - window_first_ns) : 0;
  }
};

/// The trigger's name in outputs ("latency", "crash"; "trigger N" for a
/// value a later minor may add).
inline std::string snapshot_trigger_name(format::snapshot_trigger trigger) {
  switch (trigger) {
    case format::snapshot_trigger::call: return "call";
    case format::snapshot_trigger::signal: return "signal";
    case format::snapshot_trigger::latency: return "latency";
    case format::snapshot_trigger::crash: return "crash";
    case format::snapshot_trigger::exit: return "exit";
  }
  return "trigger " + std::to_string(static_cast<unsigned>(trigger));
}

namespace detail {

/// Decodes a snapshot chunk's payload into `out`; false when it is cut
/// short or its window ends before it starts (the caller reports the chunk
/// as malformed and keeps nothing). Cost: a few varints and one string copy
/// of at most 255 bytes, whatever the payload claims.
inline bool read_snapshot_payload(const unsigned char* payload, std::size_t size, snapshot_record& out) {
  snapshot_record s;
  const unsigned char* reason = nullptr;
  std::size_t reason_size = 0;
  if (!format::get_snapshot_payload(payload, payload + size, s.info, reason, reason_size)) return false;
  if (s.info.window_last_tick < s.info.window_first_tick) return false;
  if (reason_size > format::snapshot_reason_max) reason_size = format::snapshot_reason_max;
  s.reason.assign(reinterpret_cast<const char*>(reason), reason_size);
  s.present = true;
  out = std::move(s);
  return true;
}

/// Converts the snapshot's ticks with the writer's clock, and picks the
/// wall-clock offset from the calibration pair nearest the trigger.
inline void resolve_snapshot(snapshot_record& s, const clock_model& clock, const std::vector<calibration_pair>& pairs) {
  if (!s.present) return;
  s.trigger_ns = clock.to_ns(s.info.trigger_tick);
  s.window_first_ns = clock.to_ns(s.info.window_first_tick);
  s.window_last_ns = clock.to_ns(s.info.window_last_tick);
  const calibration_pair* nearest = nullptr;
  std::uint64_t best = 0;
  for (const calibration_pair& p : pairs) {
    const std::uint64_t d = p.tick > s.info.trigger_tick ? p.tick - s.info.trigger_tick : s.info.trigger_tick - p.tick;
    if (p.realtime_ns == 0 || (nearest != nullptr && d >= best)) continue;
    nearest = &p;
    best = d;
  }
  s.has_wall_clock = nearest != nullptr;
  if (nearest != nullptr)
    s.realtime_offset_ns = static_cast<std::int64_t>(nearest->realtime_ns - nearest->monotonic_ns);
}

}  // namespace detail

/// "2026-11-25 12:03:04.123456 UTC" for a CLOCK_MONOTONIC time of the
/// snapshot's writer; "" without a calibration pair.
inline std::string snapshot_wall_clock(const snapshot_record& s, std::int64_t monotonic_ns) {
  if (!s.has_wall_clock) return {};
  const std::int64_t wall = monotonic_ns + s.realtime_offset_ns;
  const std::int64_t seconds = wall >= 0 ? wall / 1000000000 : (wall - 999999999) / 1000000000;
  const std::int64_t micros = (wall - seconds * 1000000000) / 1000;
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  if (::gmtime_r(&t, &tm) == nullptr) return {};
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%02d.%06lld UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros));
  return text;
}

/// "1.234 s", "12.345 ms", "250 us": a window length or an offset in it.
inline std::string snapshot_duration_text(std::uint64_t ns) {
  char text[32];
  if (ns >= 1000000000u) std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 1000000u) std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  else std::snprintf(text, sizeof text, "%.3f us", static_cast<double>(ns) / 1e3);
  return text;
}

/// One line for notes and warnings: "a flight-recorder snapshot (#2,
/// latency: infer>20ms: ...) holding the window [START, END] (1.234 s):
/// the run's records before it were left out on purpose, not lost"; START
/// and END are wall-clock times when known, else times from the window
/// start.
inline std::string snapshot_text(const snapshot_record& s) {
  const std::string first = snapshot_wall_clock(s, s.window_first_ns);
  const std::string last = snapshot_wall_clock(s, s.window_last_ns);
  std::string text = "a flight-recorder snapshot (#" + std::to_string(s.info.sequence) + ", " +
                     snapshot_trigger_name(s.info.trigger) + (s.reason.empty() ? "" : ": " + s.reason) +
                     ") holding the window [";
  text += first.empty() ? "+0 us, +" + snapshot_duration_text(s.window_ns()) : first + ", " + last;
  return text + "] (" + snapshot_duration_text(s.window_ns()) +
         "): the run's records before it were left out on purpose, not lost";
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
