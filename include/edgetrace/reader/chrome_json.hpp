// SPDX-License-Identifier: MIT
// Writes a dump as Chrome Trace Event Format JSON (Perfetto UI, chrome://tracing, speedscope, DevTools), streamed.
#pragma once

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dump_reader.hpp"

namespace edgetrace {
inline namespace v1 {
namespace reader {

namespace detail {

/// Buffered writer over a FILE*: one fwrite per megabyte, so the document is
/// never held in memory. Remembers the first write error.
class buffered_output {
 public:
  explicit buffered_output(std::FILE* out, std::size_t capacity = 1u << 20) : out_(out) { buffer_.reserve(capacity); }
  buffered_output(const buffered_output&) = delete;
  buffered_output& operator=(const buffered_output&) = delete;
  ~buffered_output() { flush(); }

  void put(char c) {
    if (buffer_.size() == buffer_.capacity()) flush();
    buffer_.push_back(c);
  }
  void write(std::string_view s) {
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
  /// A JSON string literal, quotes included; see append_json_string.
  void write_string(std::string_view s);

  bool flush() {
    if (!buffer_.empty()) raw_write(buffer_.data(), buffer_.size());
    buffer_.clear();
    if (!failed_ && std::fflush(out_) != 0) failed_ = true;
    return !failed_;
  }
  bool failed() const noexcept { return failed_; }

 private:
  void raw_write(const char* data, std::size_t size) {
    if (!failed_ && std::fwrite(data, 1, size, out_) != size) failed_ = true;
  }
  std::FILE* out_;
  std::vector<char> buffer_;
  bool failed_ = false;
};

}  // namespace detail

/// Appends `s` as a JSON string literal (with quotes) to `out`. Quotes,
/// backslashes and control characters are escaped; bytes that are not valid
/// UTF-8 (stray continuation bytes, overlong forms, surrogates, > U+10FFFF)
/// become U+FFFD, so the output is always valid JSON whatever the dump holds.
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

inline void detail::buffered_output::write_string(std::string_view s) {
  std::string quoted;
  quoted.reserve(s.size() + 2);
  append_json_string(quoted, s);
  write(quoted);
}

/// Options of write_chrome_json.
struct chrome_json_options {
  /// Shown in otherData.source (usually the dump's file name).
  std::string source_name;
};

/// What write_chrome_json wrote.
struct chrome_json_result {
  std::uint64_t events = 0;  ///< trace events written, metadata included
  std::uint64_t spans = 0;
  std::uint64_t instants = 0;
  std::uint64_t counters = 0;
  std::uint64_t loss_markers = 0;
  std::uint64_t counters_skipped = 0;  ///< NaN/Inf samples left out
  std::int64_t origin_ns = 0;          ///< CLOCK_MONOTONIC ns that ts 0 stands for
};

namespace detail {

inline const char* clock_sources_text(const dump_reader& r, std::string& out) {
  out.clear();
  for (const writer_info* w : r.writers_in_order()) {
    if (!w->has_process) continue;
    const char* name = clock_source_name(w->clock_source);
    if (out.find(name) != std::string::npos) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  if (out.empty()) out = "unknown";
  return out.c_str();
}

inline std::string diagnostics_summary(const dump_reader& r) {
  const read_stats& s = r.stats();
  char text[256];
  std::snprintf(text, sizeof text,
                "%llu problem(s); %llu bytes skipped, %llu bytes truncated, %llu events chunk(s) not fully decoded; %s",
                static_cast<unsigned long long>(r.damage_count()), static_cast<unsigned long long>(s.bytes_skipped),
                static_cast<unsigned long long>(s.bytes_truncated),
                static_cast<unsigned long long>(s.events_chunks_damaged),
                r.complete() ? "complete" : "incomplete (a writer has no end record)");
  return text;
}

}  // namespace detail

/// Converts an opened dump (read_metadata done or not) to Chrome JSON on
/// `out`, streaming: memory does not depend on the number of events. Runs
/// the reader's pass 2. Returns false when reading or writing failed; then
/// `error` says why. Damage in the dump is not a failure: see r.damaged().
///
/// Timestamps: integer ns from the clock model, minus an origin chosen so
/// the earliest event is at ts 1.000 (DevTools drops ts 0), printed as µs
/// with three decimals. A span's dur is end - begin of those integers, so
/// a child that nests in ticks nests in the output.
inline bool write_chrome_json(dump_reader& r, std::FILE* out, const chrome_json_options& options,
                              chrome_json_result* result = nullptr, std::string* error = nullptr) {
  chrome_json_result res;
  if (!r.metadata_read() && !r.read_metadata()) {
    if (error) *error = r.error();
    return false;
  }
  res.origin_ns = (r.has_events() ? r.first_ns() : 0) - 1000;
  const std::int64_t origin = res.origin_ns;
  detail::buffered_output o(out);
  bool first = true;
  auto begin_event = [&]() {
    o.write(first ? "\n" : ",\n");
    first = false;
    ++res.events;
  };
  auto write_pid_tid = [&](std::uint64_t pid, std::uint64_t tid) {
    o.write(",\"pid\":");
    o.write_u64(pid);
    o.write(",\"tid\":");
    o.write_u64(tid);
  };

  o.write("{\"traceEvents\":[");
  // Metadata first: pass 1 already knows every process and thread.
  // The process name alone: every viewer already shows the pid next to it.
  std::set<std::uint64_t> named_processes;
  for (const writer_info* w : r.writers_in_order()) {
    if (!named_processes.insert(w->pid).second) continue;
    begin_event();
    o.write("{\"name\":\"process_name\",\"ph\":\"M\"");
    write_pid_tid(w->pid, 0);
    o.write(",\"args\":{\"name\":");
    o.write_string(w->process_name.empty() ? std::string("process") : w->process_name);
    o.write("}}");
  }
  std::set<std::pair<std::uint64_t, std::uint64_t>> named_threads;
  std::uint64_t sort_index = 0;
  for (const thread_info* t : r.threads_in_order()) {
    if (!t->has_record || !named_threads.insert({t->writer->pid, t->os_tid}).second) continue;
    begin_event();
    o.write("{\"name\":\"thread_name\",\"ph\":\"M\"");
    write_pid_tid(t->writer->pid, t->os_tid);
    o.write(",\"args\":{\"name\":");
    o.write_string(t->name.empty() ? "thread " + std::to_string(t->os_tid) : t->name);
    o.write("}}");
    begin_event();
    o.write("{\"name\":\"thread_sort_index\",\"ph\":\"M\"");
    write_pid_tid(t->writer->pid, t->os_tid);
    o.write(",\"args\":{\"sort_index\":");
    o.write_u64(sort_index++);
    o.write("}}");
  }

  auto ts = [origin](std::int64_t ns) {
    // ns >= origin by construction; unsigned difference cannot overflow.
    return static_cast<std::uint64_t>(ns) - static_cast<std::uint64_t>(origin);
  };
  // Viewers mishandle empty names (speedscope leaves such frames open).
  auto site_name = [](const site_info& s) -> std::string_view {
    if (s.name.empty()) return "(unnamed)";
    return s.name;
  };
  std::string name_json;
  const bool read_ok = r.read_events([&](const event& e) {
    switch (e.kind) {
      case event_kind::span: {
        begin_event();
        o.write("{\"name\":");
        o.write_string(site_name(*e.site));
        o.write(",\"cat\":");
        o.write_string(e.site->category);
        o.write(",\"ph\":\"X\",\"ts\":");
        o.write_us(ts(e.begin_ns));
        o.write(",\"dur\":");
        o.write_us(ts(e.end_ns) - ts(e.begin_ns));
        write_pid_tid(e.writer->pid, e.thread->os_tid);
        o.put('}');
        ++res.spans;
        break;
      }
      case event_kind::instant: {
        begin_event();
        o.write("{\"name\":");
        o.write_string(site_name(*e.site));
        o.write(",\"cat\":");
        o.write_string(e.site->category);
        o.write(",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        o.write_us(ts(e.begin_ns));
        write_pid_tid(e.writer->pid, e.thread->os_tid);
        o.put('}');
        ++res.instants;
        break;
      }
      case event_kind::counter: {
        if (!std::isfinite(e.value)) {
          // JSON cannot hold NaN or Inf: leave the sample out, say so once.
          if (res.counters_skipped++ == 0)
            r.add_diagnostic(diagnostic::severity::note, 0,
                             "counter \"" + e.site->name + "\" has NaN or infinite samples; left out of the JSON");
          break;
        }
        begin_event();
        name_json.clear();
        append_json_string(name_json, site_name(*e.site));
        o.write("{\"name\":");
        o.write(name_json);
        o.write(",\"cat\":");
        o.write_string(e.site->category);
        o.write(",\"ph\":\"C\",\"ts\":");
        o.write_us(ts(e.begin_ns));
        write_pid_tid(e.writer->pid, e.thread->os_tid);
        o.write(",\"args\":{");
        o.write(name_json);
        o.put(':');
        o.write_double(e.value);
        o.write("}}");
        ++res.counters;
        break;
      }
      case event_kind::loss: {
        begin_event();
        o.write("{\"name\":\"edgetrace: ");
        o.write_u64(e.count);
        o.write(" records lost\",\"cat\":\"edgetrace\",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        o.write_us(ts(e.begin_ns));
        write_pid_tid(e.writer->pid, e.thread->os_tid);
        o.write(",\"args\":{\"lost\":");
        o.write_u64(e.count);
        o.write(",\"first_us\":");
        o.write_us(ts(e.begin_ns));
        o.write(",\"last_us\":");
        o.write_us(ts(e.end_ns));
        o.write("}}");
        ++res.loss_markers;
        break;
      }
    }
  });
  if (res.counters_skipped > 1)
    r.add_diagnostic(diagnostic::severity::note, 0,
                     std::to_string(res.counters_skipped) + " NaN or infinite counter samples left out in all");

  std::string clocks;
  o.write("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"edgetrace_version\":");
  o.write_string(tool_version);
  o.write(",\"source\":");
  o.write_string(options.source_name);
  o.write(",\"format_version\":");
  o.write_string(std::to_string(r.version_major()) + "." + std::to_string(r.version_minor()));
  o.write(",\"clock_source\":");
  o.write_string(detail::clock_sources_text(r, clocks));
  o.write(",\"complete\":");
  o.write(r.complete() ? "true" : "false");
  o.write(",\"diagnostics\":");
  o.write_string(detail::diagnostics_summary(r));
  o.write("}}\n");
  const bool write_ok = o.flush();
  if (result) *result = res;
  if (!read_ok) {
    if (error) *error = r.error();
    return false;
  }
  if (!write_ok) {
    if (error) *error = std::string("write error: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace reader
}  // namespace v1
}  // namespace edgetrace
