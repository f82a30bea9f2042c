// SPDX-License-Identifier: MIT
// A small JSON reader for profiles written by other tools: a top-level array of events (or an object's "traceEvents"), one event in memory at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/config.hpp>
#include <edgetrace/core/text.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// One JSON value. Numbers keep their text (a 64-bit id or a nanosecond
/// time would lose digits as a double); objects keep their members in file
/// order.
struct json_value {
  enum class type : std::uint8_t { null, boolean, number, string, array, object };
  type kind = type::null;
  bool boolean = false;
  std::string text;  ///< string: the decoded text; number: as written
  std::vector<json_value> items;
  /// An object's members: keys[i] names values[i] (two vectors: a vector of
  /// pairs holding this still incomplete type does not compile in C++20).
  std::vector<std::string> keys;
  std::vector<json_value> values;

  /// The member named `key`, or null.
  const json_value* find(const char* key) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return &values[i];
    return nullptr;
  }
  /// A number (or a string holding one) as a signed integer: false when it
  /// is neither, has a fraction or exponent, or does not fit.
  bool integer(std::int64_t& out) const {
    if (kind != type::number && kind != type::string) return false;
    const std::string& s = text;
    std::size_t i = 0;
    const bool negative = !s.empty() && s[0] == '-';
    if (negative) i = 1;
    if (i >= s.size() || s.size() - i > 19) return false;
    std::uint64_t v = 0;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
    }
    if (v > (negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1)) return false;
    out = negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
    return true;
  }
  /// Compact JSON text of the value (strings quoted and escaped).
  std::string dump() const {
    std::string out;
    append(out);
    return out;
  }

 private:
  void append(std::string& out) const {
    switch (kind) {
      case type::null: out += "null"; break;
      case type::boolean: out += boolean ? "true" : "false"; break;
      case type::number: out += text; break;
      case type::string: quote(out, text); break;
      case type::array:
        out += '[';
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (i) out += ',';
          items[i].append(out);
        }
        out += ']';
        break;
      case type::object:
        out += '{';
        for (std::size_t i = 0; i < keys.size(); ++i) {
          if (i) out += ',';
          quote(out, keys[i]);
          out += ':';
          values[i].append(out);
        }
        out += '}';
        break;
    }
  }
  static void quote(std::string& out, const std::string& s) {
    out += '"';
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
        out += esc;
      } else {
        out += c;
      }
    }
    out += '"';
  }
};

/// Reads the events of a JSON trace file one at a time: a top-level array
/// of values, or an object whose "traceEvents" member is one (the Trace
/// Event Format's two forms). Memory: one event, and a 64 KiB buffer; a
/// value nested deeper than max_depth or a string longer than
/// max_string is refused as malformed (a forged file cannot exhaust the
/// stack or memory).
class json_event_reader {
 public:
  static constexpr int max_depth = 64;
  static constexpr std::size_t max_string = std::size_t{1} << 24;

  explicit json_event_reader(std::FILE* in) : in_(in) {}

  /// Moves to the first event. False with error() when the file is not a
  /// JSON array of events (or an object holding one as "traceEvents").
  bool start() {
    skip_space();
    const int c = peek();
    if (c == '[') {
      get();
      return true;
    }
    if (c != '{') return fail(c < 0 ? "the file is empty" : "expected a JSON array of trace events ('[')");
    get();
    // Members before "traceEvents" are read and dropped.
    for (bool first = true;; first = false) {
      skip_space();
      if (peek() == '}') return fail("a JSON object without a \"traceEvents\" array");
      if (!first && !expect(',')) return false;
      skip_space();
      std::string key;
      if (!read_string(key) || !(skip_space(), expect(':'))) return false;
      skip_space();
      if (key == "traceEvents") {
        if (peek() != '[') return fail("\"traceEvents\" is not an array");
        get();
        return true;
      }
      json_value ignored;
      if (!read_value(ignored, 0)) return false;
    }
  }

  /// Reads the next event into `out`. False at the end of the array (error()
  /// empty) or on malformed input (error() says where and what). What
  /// follows the array is not read.
  bool next(json_value& out) {
    skip_space();
    if (peek() == ']') {
      get();
      done_ = true;
      return false;
    }
    if (count_ != 0 && !expect(',')) return false;
    skip_space();
    if (count_ == 0 && peek() == ',') return fail("expected a value");
    out = json_value{};
    if (!read_value(out, 0)) return false;
    ++count_;
    return true;
  }

  /// True when the array's closing bracket was read.
  bool finished() const noexcept { return done_; }
  /// Empty, or what was wrong and at which byte offset.
  const std::string& error() const noexcept { return error_; }
  std::uint64_t offset() const noexcept { return offset_; }

 private:
  int peek() {
    if (pos_ == size_) {
      if (eof_) return -1;
      size_ = std::fread(buffer_, 1, sizeof buffer_, in_);
      pos_ = 0;
      if (size_ == 0) {
        eof_ = true;
        return -1;
      }
    }
    return static_cast<unsigned char>(buffer_[pos_]);
  }
  int get() {
    const int c = peek();
    if (c >= 0) {
      ++pos_;
      ++offset_;
    }
    return c;
  }
  void skip_space() {
    for (int c = peek(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = peek()) get();
  }
  bool fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at byte " + std::to_string(offset_);
    return false;
  }
  bool expect(char want) {
    const int c = get();
    if (c == want) return true;
    return fail(std::string("expected '") + want + "', found " + (c < 0 ? std::string("the end of the file") : "'" + std::string(1, static_cast<char>(c)) + "'"));
  }

  /// The elements of an object or an array after its opening bracket, each
  /// read by `element()`, separated by ',' up to `close`.
  template <class Element>
  bool read_elements(char close, const char* what, Element&& element) {
    skip_space();
    if (peek() == close) {
      get();
      return true;
    }
    for (;;) {
      if (!element()) return false;
      skip_space();
      const int d = get();
      if (d == close) return true;
      if (d != ',') return fail(std::string("expected ',' or '") + close + "' in " + what);
    }
  }

  bool read_value(json_value& v, int depth) {
    if (depth >= max_depth) return fail("values nested deeper than " + std::to_string(max_depth));
    skip_space();
    const int c = peek();
    if (c == '{') {
      get();
      v.kind = json_value::type::object;
      return read_elements('}', "an object", [&] {
        skip_space();
        v.keys.emplace_back();
        if (!read_string(v.keys.back())) return false;
        skip_space();
        v.values.emplace_back();
        return expect(':') && read_value(v.values.back(), depth + 1);
      });
    }
    if (c == '[') {
      get();
      v.kind = json_value::type::array;
      return read_elements(']', "an array", [&] {
        v.items.emplace_back();
        return read_value(v.items.back(), depth + 1);
      });
    }
    if (c == '"') {
      v.kind = json_value::type::string;
      return read_string(v.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = json_value::type::number;
      return read_number(v.text);
    }
    if (c == 't' || c == 'f' || c == 'n') {
      const char* word = c == 't' ? "true" : c == 'f' ? "false" : "null";
      for (const char* p = word; *p; ++p)
        if (get() != *p) return fail(std::string("expected '") + word + "'");
      v.kind = c == 'n' ? json_value::type::null : json_value::type::boolean;
      v.boolean = c == 't';
      return true;
    }
    return fail(c < 0 ? "the file ends inside a value" : "expected a value");
  }

  bool read_number(std::string& out) {
    // JSON's grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    const auto digits = [&]() {
      std::size_t n = 0;
      for (int c = peek(); c >= '0' && c <= '9' && out.size() < 400; c = peek(), ++n) out += static_cast<char>(get());
      return n;
    };
    if (peek() == '-') out += static_cast<char>(get());
    if (peek() == '0') {
      out += static_cast<char>(get());
    } else if (digits() == 0) {
      return fail("a malformed number");
    }
    if (peek() == '.') {
      out += static_cast<char>(get());
      if (digits() == 0) return fail("a malformed number");
    }
    if (peek() == 'e' || peek() == 'E') {
      out += static_cast<char>(get());
      if (peek() == '+' || peek() == '-') out += static_cast<char>(get());
      if (digits() == 0) return fail("a malformed number");
    }
    if (out.size() >= 400) return fail("a number longer than 400 characters");
    return true;
  }

  bool hex4(std::uint32_t& v) {
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const int c = get();
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else return fail("a malformed \\u escape");
    }
    return true;
  }

  bool read_string(std::string& out) {
    if (get() != '"') return fail("expected a string");
    for (;;) {
      if (out.size() > max_string) return fail("a string longer than " + std::to_string(max_string) + " bytes");
      const int c = get();
      if (c < 0) return fail("the file ends inside a string");
      if (c == '"') return true;
      if (c < 0x20) return fail("a control character inside a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      const int e = get();
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair's high half
            std::uint32_t low;
            if (get() != '\\' || get() != 'u' || !hex4(low) || low < 0xdc00 || low > 0xdfff)
              return fail("an unpaired UTF-16 surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            return fail("an unpaired UTF-16 surrogate");
          }
          char bytes[4];
          out.append(bytes, ::edgetrace::detail::encode_utf8(cp, bytes));
          break;
        }
        default: return fail("a malformed escape in a string");
      }
    }
  }

  std::FILE* in_;
  char buffer_[1 << 16];
  std::size_t pos_ = 0, size_ = 0;
  bool eof_ = false;
  bool done_ = false;
  std::uint64_t offset_ = 0;
  std::uint64_t count_ = 0;
  std::string error_;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
