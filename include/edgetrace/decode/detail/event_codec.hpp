// SPDX-License-Identifier: MIT
// Decoding of an events chunk's records (spans, instants, counters, loss and rebase records) into raw ticks.
#pragma once

#include <cstdint>

#include <edgetrace/decode/detail/payload_cursor.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

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

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
