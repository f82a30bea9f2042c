// SPDX-License-Identifier: MIT
// A small protobuf wire-format encoder (varints, fixed64, doubles, strings, nested messages), no library needed.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Builds one protobuf message in memory, nested messages included.
///
/// A nested message's length prefix comes before its bytes, so each open
/// nesting level is built in a buffer of its own and copied into its
/// parent when it closes (begin_message / end_message). Buffers are kept
/// between messages: after the first few messages, encoding allocates
/// nothing. Memory: the largest message built, per nesting level.
///
/// Encoding follows https://protobuf.dev/programming-guides/encoding/:
/// a field is a varint key (field number << 3 | wire type) then its value.
class protobuf_writer {
 public:
  /// Wire types (encoding.md, "Message Structure").
  enum wire_type : std::uint32_t { wire_varint = 0, wire_fixed64 = 1, wire_length = 2, wire_fixed32 = 5 };

  protobuf_writer() : levels_(1) {}

  /// Starts a new top-level message; what was built is dropped.
  void clear() {
    depth_ = 0;
    levels_[0].clear();
  }

  /// The bytes of the top-level message (valid until the next change).
  std::string_view bytes() const noexcept {
    return std::string_view(levels_[0].data(), levels_[0].size());
  }

  /// An unsigned varint field (uint32, uint64, enum, bool). Up to 11 bytes.
  void add_varint(std::uint32_t field, std::uint64_t value) {
    key(field, wire_varint);
    varint(value);
  }
  /// An int32/int64 field: two's complement as a 64-bit varint (a negative
  /// number takes 10 bytes, as the protobuf spec says for int64).
  void add_int(std::uint32_t field, std::int64_t value) { add_varint(field, static_cast<std::uint64_t>(value)); }
  void add_bool(std::uint32_t field, bool value) { add_varint(field, value ? 1 : 0); }
  /// A fixed64 field: 8 bytes, little endian.
  void add_fixed64(std::uint32_t field, std::uint64_t value) {
    key(field, wire_fixed64);
    little_endian(value);
  }
  /// A double field: its IEEE-754 bits as fixed64.
  void add_double(std::uint32_t field, double value) {
    std::uint64_t bits = 0;
    static_assert(sizeof bits == sizeof value, "double must be 64 bits");
    std::memcpy(&bits, &value, sizeof bits);
    add_fixed64(field, bits);
  }
  /// A string or bytes field: length, then the bytes as they are.
  void add_string(std::uint32_t field, std::string_view value) {
    key(field, wire_length);
    varint(value.size());
    current().insert(current().end(), value.begin(), value.end());
  }

  /// Opens a nested message in `field`; fields added until the matching
  /// end_message() belong to it.
  void begin_message(std::uint32_t field) {
    key(field, wire_length);
    ++depth_;
    if (levels_.size() <= depth_) levels_.emplace_back();
    levels_[depth_].clear();
  }
  /// Closes the innermost nested message: its length, then its bytes, go
  /// to its parent. One copy of the nested bytes per level.
  void end_message() {
    if (depth_ == 0) return;  // unbalanced: ignore rather than corrupt the parent
    std::vector<char>& inner = levels_[depth_];
    --depth_;
    varint(inner.size());
    current().insert(current().end(), inner.begin(), inner.end());
  }

  /// Open nesting levels (0 once every begin_message was closed).
  std::size_t depth() const noexcept { return depth_; }

  /// Appends `value` as a varint (7 bits a byte, low first; the high bit
  /// says more follow) to `out`, a std::string or std::vector<char>.
  template <class Bytes>
  static void append_varint(Bytes& out, std::uint64_t value) {
    while (value >= 0x80) {
      out.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    out.push_back(static_cast<char>(value));
  }

 private:
  std::vector<char>& current() { return levels_[depth_]; }
  void key(std::uint32_t field, wire_type type) { varint((static_cast<std::uint64_t>(field) << 3) | type); }
  void varint(std::uint64_t value) { append_varint(current(), value); }
  void little_endian(std::uint64_t value) {
    std::vector<char>& out = current();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }

  std::vector<std::vector<char>> levels_;  // [0]: the top-level message; [d]: open nested message at depth d
  std::size_t depth_ = 0;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
