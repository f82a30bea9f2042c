// SPDX-License-Identifier: MIT
// Writes a dump as Chrome Trace Event Format JSON (Perfetto UI, chrome://tracing, speedscope, DevTools), streamed.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "annotations.hpp"
#include "chrome_json_flows.hpp"
#include "dump_reader.hpp"

namespace edgetrace {
inline namespace v1 {
namespace reader {

namespace detail {

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
  /// A JSON string literal, quotes included; see append_json_string.
  void write_string(std::string_view s);

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
  std::uint64_t bytes_ = 0;
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
  /// Spans shorter than this are left out (instants, counters and loss
  /// markers are kept).
  std::uint64_t min_dur_ns = 0;
  /// When set, only spans, instants and counters whose name matches
  /// (std::regex_search) are written; loss markers are always kept.
  std::shared_ptr<const std::regex> filter;
  /// When set, called with the percentage done (0..100) each time it
  /// changes, and with 100 at the end of a successful conversion.
  std::function<void(unsigned percent)> progress;
};

/// What write_chrome_json wrote.
struct chrome_json_result {
  std::uint64_t events = 0;  ///< trace events written, metadata included
  std::uint64_t spans = 0;
  std::uint64_t instants = 0;
  std::uint64_t counters = 0;
  std::uint64_t loss_markers = 0;
  std::uint64_t capture_markers = 0;   ///< recording on/off and phase markers (1.2)
  std::uint64_t gpu_spans = 0;         ///< GPU X events (on the "GPU" processes)
  std::uint64_t flows = 0;             ///< launch → GPU arrows
  std::uint64_t flow_steps = 0;        ///< spans written with flow fields (bind_id, flow_in/out) (1.3)
  std::uint64_t flow_events = 0;       ///< s/t/f events of EDGETRACE_FLOW steps (for DevTools)
  std::uint64_t flow_markers = 0;      ///< 1 ns "flow" slices DevTools binds cross-category flows to
  std::uint64_t span_args = 0;         ///< EDGETRACE_ARG arguments written into span args (1.3)
  std::uint64_t memory_samples = 0;    ///< live-bytes samples on memory pool tracks (1.3)
  std::uint64_t counters_skipped = 0;  ///< NaN/Inf samples left out
  std::uint64_t filtered = 0;          ///< events left out by min_dur_ns / filter
  std::int64_t origin_ns = 0;          ///< CLOCK_MONOTONIC ns that ts 0 stands for
};

/// One dump among the inputs of a (merged) JSON document.
struct chrome_json_input {
  dump_reader* reader = nullptr;
  /// Added to every time of this dump (ns), to put several dumps on one
  /// timeline (see merge.hpp).
  std::int64_t shift_ns = 0;
  /// Pid to show per writer id, when it must differ from the recorded one
  /// (two dumps with the same pid). Writers not listed keep theirs.
  std::map<std::uint32_t, std::uint64_t> pid_override;

  std::uint64_t pid(const writer_info& w) const {
    const auto it = pid_override.find(w.id);
    return it == pid_override.end() ? w.pid : it->second;
  }
};

namespace detail {

inline const char* clock_sources_text(const std::vector<chrome_json_input>& inputs, std::string& out) {
  out.clear();
  for (const chrome_json_input& in : inputs)
    for (const writer_info* w : in.reader->writers_in_order()) {
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

/// Viewers mishandle empty names (speedscope leaves such frames open).
inline std::string_view json_site_name(const site_info& s) {
  if (s.name.empty()) return "(unnamed)";
  return s.name;
}

/// Earliest event time over the inputs, shifted.
inline std::int64_t earliest_ns(const std::vector<chrome_json_input>& inputs) {
  bool any = false;
  std::int64_t first = 0;
  for (const chrome_json_input& in : inputs)
    if (in.reader->has_events() && (!any || in.reader->first_ns() + in.shift_ns < first)) {
      first = in.reader->first_ns() + in.shift_ns;
      any = true;
    }
  return first;
}

/// Pid of the "GPU" process that shows a writer's streams: numeric (every
/// viewer needs that) and clear of real pids (Linux caps them at 2^22).
inline std::uint64_t gpu_pid(std::uint64_t host_pid) noexcept { return 1000000000u + host_pid; }

/// Writers with GPU streams, over all inputs (to name their processes).
inline std::size_t gpu_writers(const std::vector<chrome_json_input>& inputs) {
  std::size_t n = 0;
  for (const chrome_json_input& in : inputs)
    for (const writer_info* w : in.reader->writers_in_order()) n += w->gpu.streams.empty() ? 0 : 1;
  return n;
}

/// One JSON document being written: header and metadata, events, trailer.
class chrome_json_document {
 public:
  chrome_json_document(std::FILE* out, std::int64_t origin, std::size_t buffer = 1u << 20)
      : o_(out, buffer), origin_(origin) {
    result_.origin_ns = origin;
  }

  void begin(const std::vector<chrome_json_input>& inputs) {
    o_.write("{\"traceEvents\":[");
    // Metadata first: pass 1 already knows every process and thread.
    // The process name alone: every viewer already shows the pid next to it.
    std::set<std::uint64_t> named_processes;
    for (const chrome_json_input& in : inputs)
      for (const writer_info* w : in.reader->writers_in_order()) {
        if (!named_processes.insert(in.pid(*w)).second) continue;
        write_process_name(in.pid(*w), w->process_name.empty() ? std::string("process") : w->process_name);
      }
    std::set<std::pair<std::uint64_t, std::uint64_t>> named_threads;
    std::uint64_t sort_index = 0;
    for (const chrome_json_input& in : inputs)
      for (const thread_info* t : in.reader->threads_in_order()) {
        const std::uint64_t pid = in.pid(*t->writer);
        if (!t->has_record || !named_threads.insert({pid, t->os_tid}).second) continue;
        write_thread_name(pid, t->os_tid, t->name.empty() ? "thread " + std::to_string(t->os_tid) : t->name,
                          sort_index++);
      }
    // One "GPU" process per writer with GPU spans, one track per stream
    // (tid = the dump's stream id), ordered by device then first use.
    const bool several = gpu_writers(inputs) > 1;
    for (const chrome_json_input& in : inputs)
      for (const writer_info* w : in.reader->writers_in_order()) {
        if (w->gpu.streams.empty()) continue;
        const std::uint64_t pid = gpu_pid(in.pid(*w));
        write_process_name(pid, several ? "GPU (pid " + std::to_string(in.pid(*w)) + ")" : std::string("GPU"));
        std::uint64_t index = 0;
        for (const gpu_stream_info* s : w->gpu.sorted_streams()) {
          std::string name = "GPU " + std::to_string(s->device);
          const auto device = w->gpu.devices.find(s->device);
          if (device != w->gpu.devices.end() && !device->second.name.empty()) name += " (" + device->second.name + ")";
          write_thread_name(pid, s->id, name + " " + s->label(), index++);
        }
      }
    write_capture_markers(inputs);
  }

  /// Recording windows and phases (capture chunks, 1.2) as process-wide
  /// instants in category "edgetrace". One before the first event is shown
  /// at the start of the timeline.
  void write_capture_markers(const std::vector<chrome_json_input>& inputs) {
    for (const chrome_json_input& in : inputs)
      for (const writer_info* w : in.reader->writers_in_order()) {
        for (const recording_change& change : w->recording) {
          begin_event();
          o_.write(change.on ? "{\"name\":\"edgetrace: recording on\"" : "{\"name\":\"edgetrace: recording off\"");
          o_.write(",\"cat\":\"edgetrace\",\"ph\":\"i\",\"s\":\"p\",\"ts\":");
          o_.write_us(ts(std::max(change.ns + in.shift_ns, origin_ + 1000)));
          write_pid_tid(in.pid(*w), 0);
          o_.write(",\"args\":{\"reason\":");
          o_.write_string(capture_reason_name(change.reason));
          o_.write("}}");
          ++result_.capture_markers;
        }
        for (const phase_change& change : w->phases) {
          begin_event();
          o_.write("{\"name\":");
          o_.write_string("phase: " + change.name);
          o_.write(",\"cat\":\"edgetrace\",\"ph\":\"i\",\"s\":\"p\",\"ts\":");
          o_.write_us(ts(std::max(change.ns + in.shift_ns, origin_ + 1000)));
          write_pid_tid(in.pid(*w), 0);
          o_.write(",\"args\":{\"phase\":");
          o_.write_string(change.name);
          o_.write("}}");
          ++result_.capture_markers;
        }
      }
  }

  /// Writes one resolved GPU span on its stream's track, and the arrow from
  /// its launch (when `with_flow`: the launching host span was written).
  /// DevTools and Perfetto draw a flow when both ends sit at the exact
  /// start of a slice of the same cat on their track, written after it.
  void write_gpu(const gpu_span& g, std::uint64_t pid, std::int64_t shift, bool with_flow) {
    const std::string_view name = g.site != nullptr ? json_site_name(*g.site) : std::string_view("(unknown site)");
    const std::string& cat = g.site != nullptr ? g.site->category : unknown_category_;
    const std::uint64_t gpu_process = gpu_pid(pid);
    const std::uint64_t begin = ts(g.begin_ns + shift);
    begin_event();
    o_.write("{\"name\":");
    o_.write_string(name);
    o_.write(",\"cat\":");
    o_.write_string(cat);
    o_.write(",\"ph\":\"X\",\"ts\":");
    o_.write_us(begin);
    o_.write(",\"dur\":");
    o_.write_us(ts(g.end_ns + shift) - begin);
    write_pid_tid(gpu_process, g.stream->id);
    // The GPU's own measure of the span (the dur above is that mapped onto
    // the host clock, to the ns).
    o_.write(",\"args\":{\"gpu_us\":");
    o_.write_us(g.gpu_duration_ns);
    o_.write("}}");
    ++result_.gpu_spans;
    if (!with_flow) return;
    const std::uint64_t id = ++flow_id_;
    begin_event();
    o_.write("{\"name\":\"launch\",\"cat\":");
    o_.write_string(cat);
    o_.write(",\"ph\":\"s\",\"id\":");
    o_.write_u64(id);
    o_.write(",\"ts\":");
    o_.write_us(ts(g.host_begin_ns + shift));
    write_pid_tid(pid, g.os_tid);
    o_.put('}');
    begin_event();
    o_.write("{\"name\":\"launch\",\"cat\":");
    o_.write_string(cat);
    o_.write(",\"ph\":\"f\",\"bp\":\"e\",\"id\":");
    o_.write_u64(id);
    o_.write(",\"ts\":");
    o_.write_us(begin);
    write_pid_tid(gpu_process, g.stream->id);
    o_.put('}');
    ++result_.flows;
  }

  /// Writes one event (already filtered). `pid` is the pid to show;
  /// `args`: a span's arguments (EDGETRACE_ARG), in time order; `flow`: the
  /// span's flow fields when it is a flow step.
  void write(const event& e, std::uint64_t pid, std::int64_t shift, dump_reader& r,
             const std::vector<const annotation*>& args = {}, const flow_binding* flow = nullptr) {
    switch (e.kind) {
      case event_kind::span: {
        begin_event();
        o_.write("{\"name\":");
        o_.write_string(json_site_name(*e.site));
        o_.write(",\"cat\":");
        o_.write_string(e.site->category);
        o_.write(",\"ph\":\"X\",\"ts\":");
        o_.write_us(ts(e.begin_ns + shift));
        o_.write(",\"dur\":");
        o_.write_us(ts(e.end_ns + shift) - ts(e.begin_ns + shift));
        write_pid_tid(pid, e.thread->os_tid);
        if (flow != nullptr && flow->id != 0) write_flow_binding(*flow);
        // The same constant for every such span: viewers that make a frame
        // per distinct args (speedscope) still merge them.
        const bool captured = e.writer->gpu.captured_span(e.thread->os_tid, e.end_tick);
        if (captured || !args.empty()) {
          o_.write(",\"args\":{");
          if (captured) o_.write("\"cuda_graph\":\"captured\"");
          write_span_args(args, captured);
          o_.put('}');
        }
        o_.put('}');
        ++result_.spans;
        break;
      }
      case event_kind::instant: {
        begin_event();
        o_.write("{\"name\":");
        o_.write_string(json_site_name(*e.site));
        o_.write(",\"cat\":");
        o_.write_string(e.site->category);
        o_.write(",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        o_.write_us(ts(e.begin_ns + shift));
        write_pid_tid(pid, e.thread->os_tid);
        o_.put('}');
        ++result_.instants;
        break;
      }
      case event_kind::counter: {
        if (!std::isfinite(e.value)) {
          // JSON cannot hold NaN or Inf: leave the sample out, say so once.
          if (result_.counters_skipped++ == 0)
            r.add_diagnostic(diagnostic::severity::note, 0,
                             "counter \"" + e.site->name + "\" has NaN or infinite samples; left out of the JSON");
          break;
        }
        begin_event();
        name_json_.clear();
        append_json_string(name_json_, json_site_name(*e.site));
        o_.write("{\"name\":");
        o_.write(name_json_);
        o_.write(",\"cat\":");
        o_.write_string(e.site->category);
        o_.write(",\"ph\":\"C\",\"ts\":");
        o_.write_us(ts(e.begin_ns + shift));
        write_pid_tid(pid, e.thread->os_tid);
        o_.write(",\"args\":{");
        o_.write(name_json_);
        o_.put(':');
        o_.write_double(e.value);
        o_.write("}}");
        ++result_.counters;
        break;
      }
      case event_kind::loss: {
        begin_event();
        o_.write("{\"name\":\"edgetrace: ");
        o_.write_u64(e.count);
        o_.write(" records lost\",\"cat\":\"edgetrace\",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        o_.write_us(ts(e.begin_ns + shift));
        write_pid_tid(pid, e.thread->os_tid);
        o_.write(",\"args\":{\"lost\":");
        o_.write_u64(e.count);
        o_.write(",\"first_us\":");
        o_.write_us(ts(e.begin_ns + shift));
        o_.write(",\"last_us\":");
        o_.write_us(ts(e.end_ns + shift));
        o_.write("}}");
        ++result_.loss_markers;
        break;
      }
    }
  }

  /// One live-bytes sample of a memory pool (EDGETRACE_ALLOC/FREE): a
  /// counter track "memory: POOL" of the process.
  void write_memory_sample(const std::string& pool, std::uint64_t pid, std::int64_t ns, std::uint64_t live) {
    begin_event();
    o_.write("{\"name\":");
    o_.write_string("memory: " + pool);
    o_.write(",\"cat\":\"edgetrace\",\"ph\":\"C\",\"ts\":");
    o_.write_us(ts(ns));
    write_pid_tid(pid, 0);
    o_.write(",\"args\":{\"live bytes\":");
    o_.write_u64(live);
    o_.write("}}");
    ++result_.memory_samples;
  }

  /// A 1 ns slice (shorter when the step's span is: `span_ns`) named after
  /// flow `name` at the start of one of its steps (`ns`), in category
  /// "flow", with the flow's id in args: the slice DevTools binds a
  /// cross-category flow's s/t/f events to (it binds one only to a slice of
  /// the event's category, and all events of a flow share one). Not zero
  /// long: speedscope mis-nests zero-length slices that start with their
  /// parent.
  void write_flow_marker(const std::string& name, std::uint64_t flow_id, std::uint64_t pid, std::uint64_t tid,
                         std::int64_t ns, std::int64_t span_ns) {
    begin_event();
    o_.write("{\"name\":");
    o_.write_string(name);
    o_.write(",\"cat\":\"flow\",\"ph\":\"X\",\"ts\":");
    o_.write_us(ts(ns));
    o_.write(span_ns >= 1 ? ",\"dur\":0.001" : ",\"dur\":0.000");
    write_pid_tid(pid, tid);
    o_.write(",\"args\":{\"id\":");
    o_.write_u64(flow_id);
    o_.write("}}");
    ++result_.flow_markers;
  }

  /// One step of flow `name` (EDGETRACE_FLOW): phase "s" (first step), "t"
  /// or "f" (last), bound to the step's span, which starts at `ns`.
  void write_flow_step(const std::string& name, const std::string& cat, std::uint64_t id, char phase,
                       std::uint64_t pid, std::uint64_t tid, std::int64_t ns) {
    begin_event();
    o_.write("{\"name\":");
    o_.write_string(name);
    o_.write(",\"cat\":");
    o_.write_string(cat);
    const char ph[] = {',', '"', 'p', 'h', '"', ':', '"', phase, '"', '\0'};
    o_.write(ph);
    if (phase == 'f') o_.write(",\"bp\":\"e\"");
    o_.write(",\"id\":");
    o_.write_u64(id);
    o_.write(",\"ts\":");
    o_.write_us(ts(ns));
    write_pid_tid(pid, tid);
    o_.put('}');
    ++result_.flow_events;
  }

  /// Writes the trailer; returns false on a write error.
  bool end(const std::vector<chrome_json_input>& inputs, const chrome_json_options& options,
           const std::string& extra_other_data = {}) {
    std::string clocks;
    o_.write("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"edgetrace_version\":");
    o_.write_string(tool_version);
    o_.write(",\"source\":");
    o_.write_string(options.source_name);
    const dump_reader& r = *inputs.front().reader;
    o_.write(",\"format_version\":");
    o_.write_string(std::to_string(r.version_major()) + "." + std::to_string(r.version_minor()));
    o_.write(",\"clock_source\":");
    o_.write_string(clock_sources_text(inputs, clocks));
    bool complete = true;
    std::string diagnostics;
    for (const chrome_json_input& in : inputs) {
      complete = complete && in.reader->complete();
      if (!diagnostics.empty()) diagnostics += " | ";
      diagnostics += diagnostics_summary(*in.reader);
    }
    o_.write(",\"complete\":");
    o_.write(complete ? "true" : "false");
    o_.write(",\"diagnostics\":");
    o_.write_string(diagnostics);
    if (const snapshot_record* snapshot = r.snapshot()) {  // a flight recorder's window of the run
      o_.write(",\"snapshot\":");
      o_.write_string(snapshot_text(*snapshot));
    }
    o_.write(extra_other_data);
    o_.write("}}\n");
    return o_.flush();
  }

  chrome_json_result& result() noexcept { return result_; }
  /// Bytes of the document so far.
  std::uint64_t bytes() const noexcept { return o_.bytes(); }

 private:
  void begin_event() {
    o_.write(first_ ? "\n" : ",\n");
    first_ = false;
    ++result_.events;
  }
  void write_process_name(std::uint64_t pid, const std::string& name) {
    begin_event();
    o_.write("{\"name\":\"process_name\",\"ph\":\"M\"");
    write_pid_tid(pid, 0);
    o_.write(",\"args\":{\"name\":");
    o_.write_string(name);
    o_.write("}}");
  }
  /// A track's name and its place among its process's tracks.
  void write_thread_name(std::uint64_t pid, std::uint64_t tid, const std::string& name, std::uint64_t sort_index) {
    begin_event();
    o_.write("{\"name\":\"thread_name\",\"ph\":\"M\"");
    write_pid_tid(pid, tid);
    o_.write(",\"args\":{\"name\":");
    o_.write_string(name);
    o_.write("}}");
    begin_event();
    o_.write("{\"name\":\"thread_sort_index\",\"ph\":\"M\"");
    write_pid_tid(pid, tid);
    o_.write(",\"args\":{\"sort_index\":");
    o_.write_u64(sort_index);
    o_.write("}}");
  }
  /// The members of a span's args object: one per key, the last value
  /// recorded for it, keys in the order first recorded.
  void write_span_args(const std::vector<const annotation*>& args, bool comma) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string key = args[i]->name();
      bool seen = false;
      for (std::size_t j = 0; j < i && !seen; ++j) seen = args[j]->has_name(key);
      if (seen) continue;
      const annotation* last = last_with_key(args, key);
      if (comma) o_.put(',');
      comma = true;
      o_.write_string(key);
      o_.put(':');
      write_arg_value(*last);
      ++result_.span_args;
    }
  }

  /// An argument's value: a JSON number (an integer, or a double's
  /// shortest round-trip text), true/false, or a string (a named value;
  /// "nan", "inf", "-inf", which JSON numbers cannot be).
  void write_arg_value(const annotation& a) {
    if (a.is_bool()) o_.write(a.value != 0 ? "true" : "false");
    else if (a.is_real() && std::isfinite(a.real_value())) o_.write(a.value_text());
    else if (a.is_real() || a.type == format::annotation_record::arg_name) o_.write_string(a.value_text());
    else o_.write_i64(a.int_value());
  }

  void write_flow_binding(const flow_binding& flow) {
    o_.write(",\"bind_id\":");
    o_.write_u64(flow.id);
    if (flow.in) o_.write(",\"flow_in\":true");
    if (flow.out) o_.write(",\"flow_out\":true");
    ++result_.flow_steps;
  }
  void write_pid_tid(std::uint64_t pid, std::uint64_t tid) {
    o_.write(",\"pid\":");
    o_.write_u64(pid);
    o_.write(",\"tid\":");
    o_.write_u64(tid);
  }
  std::uint64_t ts(std::int64_t ns) const {
    // ns >= origin by construction; unsigned difference cannot overflow.
    return static_cast<std::uint64_t>(ns) - static_cast<std::uint64_t>(origin_);
  }

  buffered_output o_;
  std::int64_t origin_;
  bool first_ = true;
  std::uint64_t flow_id_ = 0;
  const std::string unknown_category_ = "unknown";
  chrome_json_result result_;
  std::string name_json_;
};

/// Applies chrome_json_options' filters; caches the regex verdict per site.
class json_event_filter {
 public:
  explicit json_event_filter(const chrome_json_options& options) : options_(options) {}
  bool keep(const event& e) {
    if (e.kind == event_kind::loss) return true;
    if (e.kind == event_kind::span && options_.min_dur_ns != 0 &&
        static_cast<std::uint64_t>(e.end_ns - e.begin_ns) < options_.min_dur_ns)
      return false;
    if (!options_.filter) return true;
    if (e.site == last_site_) return last_verdict_;
    auto it = verdicts_.find(e.site);
    if (it == verdicts_.end()) it = verdicts_.emplace(e.site, std::regex_search(e.site->name, *options_.filter)).first;
    last_site_ = e.site;
    last_verdict_ = it->second;
    return it->second;
  }
  /// Is the host span that launched `g` in the output?
  bool keep_launch(const gpu_span& g) { return keep_span(g.site, g.host_begin_ns, g.host_end_ns); }
  /// Is `g` itself (resolved) in the output? Same rules as for host spans.
  bool keep_gpu(const gpu_span& g) { return keep_span(g.site, g.begin_ns, g.end_ns); }

 private:
  bool keep_span(const site_info* site, std::int64_t begin_ns, std::int64_t end_ns) {
    if (site == nullptr) return !options_.filter;
    event e;
    e.kind = event_kind::span;
    e.site = site;
    e.begin_ns = begin_ns;
    e.end_ns = end_ns;
    return keep(e);
  }

  const chrome_json_options& options_;
  std::map<const site_info*, bool> verdicts_;
  const site_info* last_site_ = nullptr;
  bool last_verdict_ = true;
};

/// Counts records read over all passes and reports whole percents to
/// chrome_json_options::progress (one call per change: at most 101).
class progress_meter {
 public:
  progress_meter(const chrome_json_options& options, const std::vector<chrome_json_input>& inputs, unsigned passes)
      : callback_(options.progress) {
    for (const chrome_json_input& in : inputs) total_ += in.reader->event_records();
    total_ *= passes;
  }
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

/// Converts one input's events, annotations and GPU spans into the
/// document(s) `doc_for(ns)` picks for each (shifted) time. Runs the
/// reader's pass 2. Returns false on a read error (`error` says why).
template <class DocFor>
bool convert_input(const chrome_json_input& in, json_event_filter& filter, DocFor&& doc_for, std::uint64_t& flow_id,
                   progress_meter& progress, std::string* error) {
  dump_reader& r = *in.reader;
  const writer_info* last_writer = nullptr;
  std::uint64_t pid = 0;
  json_annotations notes(r);
  const bool ok = r.read_events([&](const event& e) {
    progress.tick();
    const bool keep = filter.keep(e);
    const std::vector<const annotation*>& args = e.kind == event_kind::span ? notes.on_span(e, keep) : notes.none();
    chrome_json_document& doc = doc_for(e.begin_ns + in.shift_ns);
    if (!keep) {
      ++doc.result().filtered;
      return;
    }
    if (e.writer != last_writer) {
      last_writer = e.writer;
      pid = in.pid(*e.writer);
    }
    if (e.kind == event_kind::span && notes.hold(e, pid)) return;  // written by finish(), with its flow fields
    doc.write(e, pid, in.shift_ns, r, args);
  });
  if (!ok) {
    if (error) *error = r.error();
    return false;
  }
  notes.finish(in, r, doc_for, flow_id);
  // A GPU span goes with its launch: to the document of the host span.
  if (r.has_gpu())
    r.read_gpu_spans([&](const gpu_span& g) {
      if (!g.resolved) return;
      chrome_json_document& doc = doc_for(g.host_begin_ns + in.shift_ns);
      if (!filter.keep_gpu(g)) {
        ++doc.result().filtered;
        return;
      }
      doc.write_gpu(g, in.pid(*g.writer), in.shift_ns, g.thread != nullptr && filter.keep_launch(g));
    });
  return true;
}

/// Reads every input's metadata (pass 1) when not done yet.
inline bool read_all_metadata(const std::vector<chrome_json_input>& inputs, std::string* error) {
  for (const chrome_json_input& in : inputs)
    if (!in.reader->metadata_read() && !in.reader->read_metadata()) {
      if (error) *error = in.reader->error();
      return false;
    }
  return true;
}

}  // namespace detail

/// Converts several opened dumps into one Chrome JSON document on `out`
/// (each shifted by its input's shift_ns), streaming: memory does not
/// depend on the number of events (flow-step spans are held until the end
/// of their input: one entry per EDGETRACE_FLOW step). Runs each reader's
/// pass 2. Returns false when reading or writing failed; then `error` says
/// why.
inline bool write_chrome_json(const std::vector<chrome_json_input>& inputs, std::FILE* out,
                              const chrome_json_options& options, chrome_json_result* result = nullptr,
                              std::string* error = nullptr, const std::string& extra_other_data = {}) {
  if (!detail::read_all_metadata(inputs, error)) return false;
  detail::chrome_json_document doc(out, detail::earliest_ns(inputs) - 1000);
  doc.begin(inputs);
  detail::json_event_filter filter(options);
  detail::progress_meter progress(options, inputs, 1);
  std::uint64_t flow_id = 0;
  bool read_ok = true;
  for (const chrome_json_input& in : inputs) {
    const bool ok = detail::convert_input(
        in, filter, [&](std::int64_t) -> detail::chrome_json_document& { return doc; }, flow_id, progress, error);
    if (doc.result().counters_skipped > 1)
      in.reader->add_diagnostic(diagnostic::severity::note, 0,
                                std::to_string(doc.result().counters_skipped) +
                                    " NaN or infinite counter samples left out in all");
    if (!ok) {
      read_ok = false;
      break;
    }
  }
  const bool write_ok = doc.end(inputs, options, extra_other_data);
  if (result) *result = doc.result();
  if (!read_ok) return false;
  progress.finish();
  if (!write_ok) {
    if (error) *error = std::string("write error: ") + std::strerror(errno);
    return false;
  }
  return true;
}

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
  chrome_json_input in;
  in.reader = &r;
  return write_chrome_json(std::vector<chrome_json_input>{in}, out, options, result, error);
}

}  // namespace reader
}  // namespace v1
}  // namespace edgetrace

#include "chrome_json_split.hpp"  // IWYU pragma: export
