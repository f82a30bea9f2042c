// SPDX-License-Identifier: MIT
// Bounds-checked reading of a chunk payload: the cursor, tagged-record framing and calibration pairs.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <edgetrace/decode/clock_model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Bounds-checked cursor over a payload; every get fails softly.
struct payload_cursor {
  const unsigned char* pos;
  const unsigned char* end;

  std::size_t left() const noexcept { return static_cast<std::size_t>(end - pos); }
  EDGETRACE_DETAIL_ALWAYS_INLINE bool varint(std::uint64_t& v) noexcept { return format::get_varint(pos, end, v); }
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


/// Calls `fn(tag, body)` for each record of a capture, gpu or annotations
/// chunk (u8 tag, varint size, body); stops and returns false when the
/// framing is broken or `fn` returns false. A newer minor's tags and
/// trailing body bytes are stepped over by `fn` (it ignores what it does
/// not know).
template <class Fn>
bool for_each_record(payload_cursor& in, Fn&& fn) {
  while (in.left() != 0) {
    std::uint8_t tag;
    std::uint64_t size;
    if (!in.u8(tag) || !in.varint(size) || size > in.left()) return false;
    payload_cursor body{in.pos, in.pos + size};
    in.pos += size;
    if (!fn(tag, body)) return false;
  }
  return true;
}


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
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
