// SPDX-License-Identifier: MIT
// One Chrome JSON document being written: header and track metadata, one trace event per call, trailer (internal to chrome_json/writer.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/chrome_json/flows.hpp>
#include <edgetrace/sinks/chrome_json/options.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// The clock sources of every input's writers, each named once and comma
/// separated ("unknown" when none has a process record), for otherData.
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

/// One line on a dump's damage and completeness, for otherData.
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

/// Writers with GPU streams, over all inputs (to name their processes).
inline std::size_t gpu_writers(const std::vector<chrome_json_input>& inputs) {
  std::size_t n = 0;
  for (const chrome_json_input& in : inputs)
    for (const writer_info* w : in.reader->writers_in_order()) n += w->gpu.streams.empty() ? 0 : 1;
  return n;
}

/// Where each track's first slice begins (ns, shifted), by (pid, tid) as
/// the document shows them: host threads from pass 1 (their smallest span
/// begin), GPU streams from a look at the resolved GPU spans. Meant for a
/// document that holds every slice (no filter, no split).
using track_starts = std::map<std::pair<std::uint64_t, std::uint64_t>, std::int64_t>;
inline track_starts first_slices(const std::vector<chrome_json_input>& inputs) {
  track_starts first;
  auto note = [&first](std::uint64_t pid, std::uint64_t tid, std::int64_t ns) {
    const auto known = first.emplace(std::make_pair(pid, tid), ns).first;
    known->second = std::min(known->second, ns);
  };
  for (const chrome_json_input& in : inputs) {
    for (const thread_info* t : in.reader->threads_in_order()) {
      const auto tick = t->writer->first_span_tick.find(t->thread_id);
      if (tick != t->writer->first_span_tick.end())
        note(in.pid(*t->writer), t->os_tid, t->writer->clock.to_ns(tick->second) + in.shift_ns);
    }
    if (in.reader->has_gpu())
      in.reader->read_gpu_spans([&](const gpu_span& g) {
        if (g.resolved) note(gpu_pid(in.pid(*g.writer)), g.stream->id, g.begin_ns + in.shift_ns);
      });
  }
  return first;
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
    write_head(name, cat, ",\"ph\":\"X\",\"ts\":", begin);
    o_.write(",\"dur\":");
    write_dur(begin, ts(g.end_ns + shift), gpu_process, g.stream->id);
    write_pid_tid(gpu_process, g.stream->id);
    // The GPU's own measure of the span (the dur above is that mapped onto
    // the host clock, to the ns).
    o_.write(",\"args\":{\"gpu_us\":");
    o_.write_us(g.gpu_duration_ns);
    o_.write("}}");
    ++result_.gpu_spans;
    if (!with_flow) return;
    const std::uint64_t id = ++flow_id_;
    write_launch_end(cat, ",\"ph\":\"s\",\"id\":", id, ts(g.host_begin_ns + shift), pid, g.os_tid);
    write_launch_end(cat, ",\"ph\":\"f\",\"bp\":\"e\",\"id\":", id, begin, gpu_process, g.stream->id);
    ++result_.flows;
  }

  /// Writes one event (already filtered). `pid` is the pid to show;
  /// `args`: a span's arguments (EDGETRACE_ARG), in time order; `flow`: the
  /// span's flow fields when it is a flow step.
  void write(const event& e, std::uint64_t pid, std::int64_t shift, dump_reader& r,
             const std::vector<const annotation*>& args = {}, const flow_binding* flow = nullptr) {
    switch (e.kind) {
      case event_kind::span: return write_span(e, pid, shift, args, flow);
      case event_kind::instant:
        write_head(json_site_name(*e.site), e.site->category, ",\"ph\":\"i\",\"s\":\"t\",\"ts\":", ts(e.begin_ns + shift));
        write_pid_tid(pid, e.thread->os_tid);
        o_.put('}');
        ++result_.instants;
        return;
      case event_kind::counter: return write_counter(e, pid, shift, r);
      case event_kind::loss: return write_loss(e, pid, shift);
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

  /// One value of a device track (1.9): a counter track of the process
  /// named after the track ("cpu1 clock (MHz)"), in category "device".
  void write_device_sample(const std::string& label, std::uint64_t pid, std::int64_t ns, double value) {
    begin_event();
    o_.write("{\"name\":");
    o_.write_string(label);
    o_.write(",\"cat\":\"device\",\"ph\":\"C\",\"ts\":");
    o_.write_us(ts(ns));
    write_pid_tid(pid, 0);
    o_.write(",\"args\":{\"value\":");
    o_.write_shortest(value);
    o_.write("}}");
    ++result_.device_samples;
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
    o_.write(",\"dur\":");
    write_dur(ts(ns), ts(ns) + (span_ns >= 1 ? 1 : 0), pid, tid);
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
    if (!options.focus_note.empty()) {  // --focus: what is in full, and what is one slice an iteration
      o_.write(",\"focus\":");
      o_.write_string(options.focus_note);
    }
    if (const snapshot_record* snapshot = r.snapshot()) {  // a flight recorder's window of the run
      o_.write(",\"snapshot\":");
      o_.write_string(snapshot_text(*snapshot));
    }
    o_.write(extra_other_data);
    o_.write("}}\n");
    return o_.flush();
  }

  /// Where each track's first slice begins (first_slices): with it, every
  /// slice's dur is written so that speedscope ends it exactly where a
  /// slice that starts at its end begins (write_dur).
  void set_track_starts(const track_starts& starts) {
    for (const auto& entry : starts) track_start_[entry.first] = ts(entry.second);
  }
  /// For a document that only counts (a split's measure): each dur as long
  /// as it is where a file whose track starts near the slice (a split
  /// file's own first slice) or the whole document needs the exact dur, so
  /// that the count is not much below what the files take.
  void count_local_durs() { local_durs_ = true; }

  chrome_json_result& result() noexcept { return result_; }
  /// Bytes of the document so far.
  std::uint64_t bytes() const noexcept { return o_.bytes(); }

 private:
  /// `{"name":NAME,"cat":CAT` + `phase` (which ends in `"ts":`) + the
  /// time: how every event with a name and a category starts.
  void write_head(std::string_view name, const std::string& cat, const char* phase, std::uint64_t at) {
    begin_event();
    o_.write("{\"name\":");
    o_.write_string(name);
    o_.write(",\"cat\":");
    o_.write_string(cat);
    o_.write(phase);
    o_.write_us(at);
  }
  /// One end of a launch → GPU span arrow ("s" at the launch, "f" at the
  /// GPU span's start).
  void write_launch_end(const std::string& cat, const char* phase_and_id, std::uint64_t id, std::uint64_t at,
                        std::uint64_t pid, std::uint64_t tid) {
    begin_event();
    o_.write("{\"name\":\"launch\",\"cat\":");
    o_.write_string(cat);
    o_.write(phase_and_id);
    o_.write_u64(id);
    o_.write(",\"ts\":");
    o_.write_us(at);
    write_pid_tid(pid, tid);
    o_.put('}');
  }
  void write_span(const event& e, std::uint64_t pid, std::int64_t shift, const std::vector<const annotation*>& args,
                  const flow_binding* flow) {
    write_head(json_site_name(*e.site), e.site->category, ",\"ph\":\"X\",\"ts\":", ts(e.begin_ns + shift));
    o_.write(",\"dur\":");
    write_dur(ts(e.begin_ns + shift), ts(e.end_ns + shift), pid, e.thread->os_tid);
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
  }
  void write_counter(const event& e, std::uint64_t pid, std::int64_t shift, dump_reader& r) {
    if (!std::isfinite(e.value)) {
      // JSON cannot hold NaN or Inf: leave the sample out, say so once.
      if (result_.counters_skipped++ == 0)
        r.add_diagnostic(diagnostic::severity::note, 0,
                         "counter \"" + e.site->name + "\" has NaN or infinite samples; left out of the JSON");
      return;
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
  }
  void write_loss(const event& e, std::uint64_t pid, std::int64_t shift) {
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
  }
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
  /// A slice's dur on track (pid, tid): end - begin (ts units) with three
  /// decimals, unless a viewer that measures each track from its first
  /// slice would then end this one after a slice that starts at its end.
  /// speedscope parses ts and dur as doubles and ends a slice at
  /// (ts - first) + dur, `first` being the track's smallest slice ts: with
  /// ts 3308.960 and dur 0.030 that can land past (3308.990 - first), and
  /// the slice that starts there then seems to begin inside this one. Such
  /// a dur is written as the double that lands exactly on (end - first),
  /// in the shortest text that reads back as it (less than 1e-9 µs from
  /// the three-decimal one). Every slice end is then the same function of
  /// its time as every slice start, so what touches or nests in ns touches
  /// or nests in the viewer too.
  void write_dur(std::uint64_t begin, std::uint64_t end, std::uint64_t pid, std::uint64_t tid) {
    if (local_durs_ && write_local_dur(begin, end)) return;
    if (track_start_.empty()) return o_.write_us(end - begin);
    if (pid != start_pid_ || tid != start_tid_ || start_ == nullptr) {
      const auto found = track_start_.find({pid, tid});
      start_pid_ = pid;
      start_tid_ = tid;
      start_ = found != track_start_.end() ? &found->second : nullptr;
    }
    if (start_ == nullptr || *start_ > begin) return o_.write_us(end - begin);
    // As the viewer computes it (IEEE doubles; ts units / 1000 = µs).
    const double first = static_cast<double>(*start_) / 1000.0;
    const double from = static_cast<double>(begin) / 1000.0 - first;
    const double to = static_cast<double>(end) / 1000.0 - first;
    double dur = static_cast<double>(end - begin) / 1000.0;
    if (from + dur == to) return o_.write_us(end - begin);
    dur = to - from;
    for (int step = 0; step < 4 && from + dur != to; ++step)
      dur = std::nextafter(dur, from + dur < to ? HUGE_VAL : -HUGE_VAL);
    if (from + dur != to || dur < 0) return o_.write_us(end - begin);
    o_.write_shortest(dur);
    ++result_.exact_durs;
  }
  /// count_local_durs(): when a track starting at this slice would need the
  /// exact dur, writes it (as long as a file's own will be) and says so.
  bool write_local_dur(std::uint64_t begin, std::uint64_t end) {
    const double to = static_cast<double>(end) / 1000.0 - static_cast<double>(begin) / 1000.0;
    if (static_cast<double>(end - begin) / 1000.0 == to || to < 0) return false;
    o_.write_shortest(to);
    ++result_.exact_durs;
    return true;
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
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> track_start_;  // ts units
  std::uint64_t start_pid_ = 0, start_tid_ = 0;  // write_dur's last track
  const std::uint64_t* start_ = nullptr;
  bool local_durs_ = false;  // count_local_durs()
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
