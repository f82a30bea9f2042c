// SPDX-License-Identifier: MIT
// What every sink writes with: a buffered FILE* output that remembers its first error and counts bytes, JSON string escaping, number and duration text, CSV fields, aligned tables, the GPU process pid, and the one "write error" line.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Appends `s` as a JSON string literal (with quotes) to `out`. Quotes,
/// backslashes and control characters are escaped; bytes that are not valid
/// UTF-8 (stray continuation bytes, overlong forms, surrogates, > U+10FFFF)
/// become U+FFFD, so the output is always valid JSON whatever the dump holds.
/// Cost: one pass over `s`, appends only.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char b = *p;
    if (b < 0x80) {
      if (b == '"' || b == '\\') {
        out.push_back('\\');
        out.push_back(static_cast<char>(b));
      } else if (b < 0x20) {
        out += "\\u00";
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
      } else {
        out.push_back(static_cast<char>(b));
      }
      ++p;
      continue;
    }
    // Length and the allowed range of the second byte (Unicode table 3-7).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b == 0xE0) len = 3, lo = 0xA0;
    else if (b >= 0xE1 && b <= 0xEC) len = 3;
    else if (b == 0xED) len = 3, hi = 0x9F;
    else if (b >= 0xEE && b <= 0xEF) len = 3;
    else if (b == 0xF0) len = 4, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) len = 4;
    else if (b == 0xF4) len = 4, hi = 0x8F;
    bool valid = len != 0 && static_cast<std::size_t>(end - p) >= len && p[1] >= lo && p[1] <= hi;
    for (std::size_t k = 2; valid && k < len; ++k) valid = p[k] >= 0x80 && p[k] <= 0xBF;
    if (valid) {
      out.append(reinterpret_cast<const char*>(p), len);
      p += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for this one byte; resynchronise on the next
      ++p;
    }
  }
  out.push_back('"');
}

namespace detail {

/// The reader's error convention in one place: stores `why` in `error`
/// (when given) and returns false, so an entry point ends with
/// `return detail::fail_with(error, r.error());`.
inline bool fail_with(std::string* error, const std::string& why) {
  if (error) *error = why;
  return false;
}

/// A failed write, said one way: "WHAT: strerror(errno)" in `error` (when
/// given); returns false. `what` is "write error" unless the caller names
/// the file or the purpose. Reads errno first, before anything can change it.
inline bool fail_write(std::string* error, const std::string& what = "write error") {
  const int code = errno;
  if (error) *error = what + ": " + std::strerror(code);
  return false;
}

/// Writes `text` to `out` and flushes it; false (with `error`) on failure.
/// For sinks that build their whole output in memory (info, summary, diff).
inline bool write_text(std::FILE* out, std::string_view text, std::string* error = nullptr) {
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0)
    return fail_write(error);
  return true;
}

/// Buffered writer over a FILE*: one fwrite per megabyte, so the document is
/// never held in memory. Remembers the first write error. Counts the bytes
/// it was given; with a null FILE* it only counts (the split's sizing pass).
class buffered_output {
 public:
  explicit buffered_output(std::FILE* out, std::size_t capacity = 1u << 20) : out_(out) { buffer_.reserve(capacity); }
  buffered_output(const buffered_output&) = delete;
  buffered_output& operator=(const buffered_output&) = delete;
  ~buffered_output() { flush(); }

  void put(char c) {
    if (buffer_.size() == buffer_.capacity()) flush();
    buffer_.push_back(c);
    ++bytes_;
  }
  void write(std::string_view s) {
    bytes_ += s.size();
    if (buffer_.size() + s.size() > buffer_.capacity()) flush();
    if (s.size() > buffer_.capacity()) {
      raw_write(s.data(), s.size());
      return;
    }
    buffer_.insert(buffer_.end(), s.begin(), s.end());
  }
  void write_u64(std::uint64_t v) {
    char text[24];
    const auto r = std::to_chars(text, text + sizeof text, v);
    write(std::string_view(text, static_cast<std::size_t>(r.ptr - text)));
  }
  void write_i64(std::int64_t v) {
    char text[24];
    const auto r = std::to_chars(text, text + sizeof text, v);
    write(std::string_view(text, static_cast<std::size_t>(r.ptr - text)));
  }
  /// Nanoseconds as microseconds with exactly three decimals, by integer
  /// division: no floating point, so no rounding and no drift.
  void write_us(std::uint64_t ns) {
    write_u64(ns / 1000);
    const auto frac = static_cast<unsigned>(ns % 1000);
    const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                            static_cast<char>('0' + frac % 10)};
    write(std::string_view(digits, 4));
  }
  /// A finite double: integers exactly, otherwise %.17g (round-trips).
  void write_double(double v) {
    if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
      if (v == 0 && std::signbit(v)) return write("0");
      return write_i64(static_cast<std::int64_t>(v));
    }
    char text[40];
    const int n = std::snprintf(text, sizeof text, "%.17g", v);
    write(std::string_view(text, n > 0 ? static_cast<std::size_t>(n) : 0));
  }
  /// A finite double in the shortest fixed-point text that reads back as
  /// the same double.
  void write_shortest(double v) {
    char text[400];
    const auto done = std::to_chars(text, text + sizeof text, v, std::chars_format::fixed);
    write(std::string_view(text, done.ec == std::errc() ? static_cast<std::size_t>(done.ptr - text) : 0));
  }
  /// A JSON string literal, quotes included; see append_json_string.
  void write_string(std::string_view s) {
    quoted_.clear();
    append_json_string(quoted_, s);
    write(quoted_);
  }

  bool flush() {
    if (!buffer_.empty()) raw_write(buffer_.data(), buffer_.size());
    buffer_.clear();
    if (!failed_ && out_ != nullptr && std::fflush(out_) != 0) failed_ = true;
    return !failed_;
  }
  bool failed() const noexcept { return failed_; }
  /// Bytes of the document so far (written or still buffered).
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  void raw_write(const char* data, std::size_t size) {
    if (!failed_ && out_ != nullptr && std::fwrite(data, 1, size, out_) != size) failed_ = true;
  }
  std::FILE* out_;
  std::vector<char> buffer_;
  std::string quoted_;  // write_string's scratch, reused
  std::uint64_t bytes_ = 0;
  bool failed_ = false;
};

/// Pid of the "GPU" process that shows a writer's streams, the same in the
/// JSON and in the Perfetto trace: numeric (every viewer needs that) and
/// clear of real pids (Linux caps them at 2^22).
inline std::uint64_t gpu_pid(std::uint64_t host_pid) noexcept { return 1000000000u + host_pid; }

/// printf into a std::string (at most 511 characters).
inline std::string format_text(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format_text(const char* fmt, ...) {
  char text[512];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  return std::string(text, n < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(n), sizeof text - 1));
}

/// "1.234567 s", "12.345 ms", "250 ns": exact digits, truncated (info,
/// notes). For tables see readable_time.
inline std::string format_duration(std::uint64_t ns) {
  using ull = unsigned long long;
  if (ns >= 1000000000ull) return format_text("%llu.%06llu s", ull(ns / 1000000000ull), ull(ns % 1000000000ull / 1000));
  if (ns >= 1000000ull) return format_text("%llu.%03llu ms", ull(ns / 1000000ull), ull(ns % 1000000ull / 1000));
  if (ns >= 1000ull) return format_text("%llu.%03llu us", ull(ns / 1000ull), ull(ns % 1000ull));
  return format_text("%llu ns", ull(ns));
}

/// A duration with about four significant digits and a readable unit:
/// "850 ns", "12.35 us", "1.234 ms", "2.500 s" (tables).
inline std::string readable_time(std::uint64_t ns) {
  char text[32];
  auto scaled = [&](double v, const char* unit) {
    if (v < 10) std::snprintf(text, sizeof text, "%.3f %s", v, unit);
    else if (v < 100) std::snprintf(text, sizeof text, "%.2f %s", v, unit);
    else std::snprintf(text, sizeof text, "%.1f %s", v, unit);
  };
  if (ns < 1000) std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  else if (ns < 1000000) scaled(static_cast<double>(ns) / 1e3, "us");
  else if (ns < 1000000000) scaled(static_cast<double>(ns) / 1e6, "ms");
  else if (ns < 1000000000000ull) scaled(static_cast<double>(ns) / 1e9, "s");
  else std::snprintf(text, sizeof text, "%.0f s", static_cast<double>(ns) / 1e9);
  return text;
}

/// "12.3 %" for 0.123.
inline std::string percent_text(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", fraction * 100);
  return text;
}

/// Bytes with a binary unit: "512 B", "1.50 KiB", "12.3 MiB", "2.00 GiB".
inline std::string readable_bytes(std::uint64_t bytes) {
  char text[32];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (v >= 1024 && unit + 1 < sizeof units / sizeof units[0]) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(text, sizeof text, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[unit]);
  return text;
}

/// One CSV field (RFC 4180): quoted when it holds a comma, a quote, a line
/// break or spaces at either end; quotes doubled.
/// Text for HTML (element content and quoted attribute values).
inline std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    const char* entity = c == '&'    ? "&amp;"
                         : c == '<'  ? "&lt;"
                         : c == '>'  ? "&gt;"
                         : c == '"'  ? "&quot;"
                         : c == '\'' ? "&#39;"
                                     : nullptr;
    if (entity != nullptr)
      out += entity;
    else
      out += c;
  }
  return out;
}

inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos && (s.empty() || (s.front() != ' ' && s.back() != ' ')))
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

/// Text table: the first `left_columns` columns left-aligned, the others
/// right-aligned, widths from the content, two spaces between columns, a
/// dashed line under the first row (the header).
inline std::string render_table(const std::vector<std::vector<std::string>>& cells, std::size_t left_columns) {
  std::vector<std::size_t> width;
  for (const auto& row : cells)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (std::size_t r = 0; r < cells.size(); ++r) {
    std::string line;
    for (std::size_t i = 0; i < cells[r].size(); ++i) {
      const std::string& cell = cells[r][i];
      const std::string pad(width[i] - cell.size(), ' ');
      if (i) line += "  ";
      line += i < left_columns ? cell + pad : pad + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r == 0) {
      std::size_t total = 0;
      for (std::size_t i = 0; i < width.size(); ++i) total += width[i] + (i ? 2 : 0);
      out += std::string(total, '-') + "\n";
    }
  }
  return out;
}

/// Path of part `index` (1-based) of a split output: "run.json" ->
/// "run-001.json", "trace" -> "trace-001".
inline std::string numbered_path(const std::string& path, std::size_t index) {
  char number[32];
  std::snprintf(number, sizeof number, "-%03zu", index);
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + number;
  return path.substr(0, dot) + number + path.substr(dot);
}

/// Counts records read over all passes of a conversion and reports whole
/// percents to `callback` (one call per change: at most 101).
class progress_meter {
 public:
  progress_meter(std::function<void(unsigned)> callback, std::uint64_t total_records)
      : callback_(std::move(callback)), total_(total_records) {}
  /// One record read; cheap (a decrement and a branch) between reports.
  void tick() {
    if (!callback_ || --countdown_ != 0) return;
    countdown_ = 1u << 16;
    done_ += countdown_;
    report(total_ == 0 ? 100 : static_cast<unsigned>(std::min<std::uint64_t>(99, done_ * 100 / total_)));
  }
  /// The work is done: 100 %.
  void finish() {
    if (callback_) report(100);
  }

 private:
  void report(unsigned percent) {
    if (percent == last_) return;
    last_ = percent;
    callback_(percent);
  }
  std::function<void(unsigned)> callback_;
  std::uint64_t total_ = 0;
  std::uint64_t done_ = 0;
  std::uint32_t countdown_ = 1u << 16;
  unsigned last_ = ~0u;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
