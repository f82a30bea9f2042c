// SPDX-License-Identifier: MIT
// Test helper: a tiny strict JSON (RFC 8259) parser into a value tree, with lookup helpers for checking outputs.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace json_lite {

/// A parsed JSON value. Objects keep their members in document order
/// (duplicate keys are kept; find() returns the first).
struct value {
  enum class type { null, boolean, number, string, array, object };
  type kind = type::null;
  bool boolean = false;
  double number = 0;
  std::string text;  ///< string contents, or a number's source text (e.g. "1.000")
  std::vector<value> items;
  std::vector<std::pair<std::string, value>> members;

  bool is_null() const noexcept { return kind == type::null; }
  bool is_bool() const noexcept { return kind == type::boolean; }
  bool is_number() const noexcept { return kind == type::number; }
  bool is_string() const noexcept { return kind == type::string; }
  bool is_array() const noexcept { return kind == type::array; }
  bool is_object() const noexcept { return kind == type::object; }

  /// Member `key` of an object; null when absent or not an object.
  const value* find(std::string_view key) const noexcept {
    if (kind != type::object) return nullptr;
    for (const auto& m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
  bool has(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// Member `key`, or a shared null value when absent (chains safely).
  const value& operator[](std::string_view key) const noexcept {
    const value* v = find(key);
    return v ? *v : null_value();
  }
  /// Element `i` of an array, or a shared null value.
  const value& operator[](std::size_t i) const noexcept {
    return kind == type::array && i < items.size() ? items[i] : null_value();
  }
  std::size_t size() const noexcept { return kind == type::array ? items.size() : members.size(); }
  /// The string contents, or `fallback` for non-strings.
  std::string str(std::string fallback = "") const { return kind == type::string ? text : fallback; }
  double num(double fallback = 0) const noexcept { return kind == type::number ? number : fallback; }

  static const value& null_value() noexcept {
    static const value v;
    return v;
  }
};

namespace detail {

class parser {
 public:
  explicit parser(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  bool document(value& out, std::string& error) {
    ws();
    if (!parse(out, 0)) {
      error = error_ + " at byte " + std::to_string(static_cast<std::size_t>(p_ - begin_()));
      return false;
    }
    ws();
    if (p_ != end_) {
      error = "trailing characters at byte " + std::to_string(static_cast<std::size_t>(p_ - begin_()));
      return false;
    }
    return true;
  }

 private:
  const char* begin_() const { return end_ - total_; }

  bool fail(const char* what) {
    error_ = what;
    return false;
  }
  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      return fail("invalid literal");
    p_ += word.size();
    return true;
  }

  bool parse(value& v, int depth) {
    if (depth > 256) return fail("nesting too deep");
    if (p_ == end_) return fail("unexpected end");
    switch (*p_) {
      case '{': return object(v, depth);
      case '[': return array(v, depth);
      case '"': v.kind = value::type::string; return string(v.text);
      case 't': v.kind = value::type::boolean; v.boolean = true; return literal("true");
      case 'f': v.kind = value::type::boolean; v.boolean = false; return literal("false");
      case 'n': v.kind = value::type::null; return literal("null");
      default: return number(v);
    }
  }

  bool object(value& v, int depth) {
    v.kind = value::type::object;
    return elements('}', "unterminated object", "expected ',' or '}'", [&] {
      if (p_ == end_ || *p_ != '"') return fail("expected a member name");
      std::string key;
      if (!string(key)) return false;
      ws();
      if (p_ == end_ || *p_ != ':') return fail("expected ':'");
      ++p_;
      ws();
      value member;
      if (!parse(member, depth + 1)) return false;
      v.members.emplace_back(std::move(key), std::move(member));
      return true;
    });
  }

  bool array(value& v, int depth) {
    v.kind = value::type::array;
    return elements(']', "unterminated array", "expected ',' or ']'", [&] {
      value item;
      if (!parse(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      return true;
    });
  }

  // An object's members or an array's items, from its opening bracket:
  // each read by `element()` (at its first character), then ',' (more
  // follow) or `close` (the end); anything else is an error.
  template <class Element>
  bool elements(char close, const char* unterminated, const char* expected, Element&& element) {
    ++p_;
    ws();
    if (p_ != end_ && *p_ == close) return ++p_, true;
    for (;;) {
      ws();
      if (!element()) return false;
      ws();
      if (p_ == end_) return fail(unterminated);
      const bool more = *p_ == ',';
      if (!more && *p_ != close) return fail(expected);
      ++p_;
      if (!more) return true;
    }
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(unsigned& out) {
    if (end_ - p_ < 4) return fail("short \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(*p_++);
      if (h < 0) return fail("bad \\u escape");
      out = out << 4 | static_cast<unsigned>(h);
    }
    return true;
  }
  static void utf8(std::string& s, unsigned cp) {
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s.push_back(static_cast<char>(0xC0 | cp >> 6));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(static_cast<char>(0xE0 | cp >> 12));
      s.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(static_cast<char>(0xF0 | cp >> 18));
      s.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  /// A string literal; raw control characters and bad escapes are errors.
  /// (Byte sequences are not checked for valid UTF-8 here: use is_utf8.)
  bool string(std::string& out) {
    ++p_;
    for (;;) {
      if (p_ == end_) return fail("unterminated string");
      const auto c = static_cast<unsigned char>(*p_++);
      if (c == '"') return true;
      if (c < 0x20) return fail("raw control character in string");
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        continue;
      }
      if (p_ == end_) return fail("unterminated escape");
      switch (*p_++) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          unsigned cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned low;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return fail("lone high surrogate");
            p_ += 2;
            if (!hex4(low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("lone low surrogate");
          }
          utf8(out, cp);
          break;
        }
        default: return fail("bad escape");
      }
    }
  }

  /// RFC 8259 number grammar, strictly (no leading zeros, no '+', no '.5').
  bool number(value& v) {
    const char* start = p_;
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return fail("bad number");
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    } else {
      return fail("unexpected character");
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("bad fraction");
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("bad exponent");
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    v.kind = value::type::number;
    v.text.assign(start, p_);
    v.number = std::strtod(v.text.c_str(), nullptr);
    return true;
  }

  const char* p_;
  const char* end_;
  std::size_t total_ = static_cast<std::size_t>(end_ - p_);
  std::string error_;
};

}  // namespace detail

/// Parses `text` as one JSON document. On failure returns false and sets
/// `error` (what and where).
inline bool parse(std::string_view text, value& out, std::string& error) {
  out = value{};
  return detail::parser(text).document(out, error);
}

/// True when `s` is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF).
inline bool is_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char b = *p;
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b < 0x80) len = 1;
    else if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b == 0xE0) len = 3, lo = 0xA0;
    else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) len = 3;
    else if (b == 0xED) len = 3, hi = 0x9F;
    else if (b == 0xF0) len = 4, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) len = 4;
    else if (b == 0xF4) len = 4, hi = 0x8F;
    else return false;
    if (static_cast<std::size_t>(end - p) < len) return false;
    if (len > 1 && (p[1] < lo || p[1] > hi)) return false;
    for (std::size_t k = 2; k < len; ++k)
      if (p[k] < 0x80 || p[k] > 0xBF) return false;
    p += len;
  }
  return true;
}

}  // namespace json_lite
