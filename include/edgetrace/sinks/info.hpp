// SPDX-License-Identifier: MIT
// Human-readable description of a dump (`edgetrace info`): writers, clocks, threads, counts, damage.
#pragma once

#include <cstdio>
#include <string>

#include <edgetrace/decode/dump_reader.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Options of write_info.
struct info_options {
  /// Name shown on the "file" line (defaults to the reader's path).
  std::string display_name;
};

/// Writes the `info` report of an opened dump to `out`. Runs pass 2 to
/// count events (so the numbers are what a conversion would produce).
/// Returns false when reading or writing failed; `error` says why.
EDGETRACE_DETAIL_READER_API bool write_info(dump_reader& r, std::FILE* out, const info_options& options = {},
                                            std::string* error = nullptr);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/device.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// Time of `ns` relative to the writer's first event: "+1.250 ms", "-3.000 us".
inline std::string relative_time(const writer_info& w, std::int64_t ns) {
  const std::int64_t origin = w.has_events ? w.first_ns : ns;
  return ns >= origin ? "+" + format_duration(static_cast<std::uint64_t>(ns - origin))
                      : "-" + format_duration(static_cast<std::uint64_t>(origin - ns));
}

/// The "recording" and "phases" lines of a writer (capture chunks, 1.2):
/// every change with its time from the writer's first event and its cause.
template <class Field>
void write_capture_info(const writer_info& w, Field& field) {
  if (!w.recording.empty()) {
    std::string text;
    for (const recording_change& change : w.recording) {
      if (!text.empty()) text += ", ";
      text += format_text("%s at %s (%s)", change.on ? "on" : "off", relative_time(w, change.ns).c_str(),
                          capture_reason_name(change.reason));
    }
    field("  ", "recording", text);
  }
  if (!w.phases.empty()) {
    std::string text;
    for (const phase_change& change : w.phases) {
      if (!text.empty()) text += ", ";
      text += "\"" + change.name + "\" at " + relative_time(w, change.ns);
    }
    field("  ", "phases", text);
  }
}

/// The "annotations" and "memory" lines of a writer (annotations chunks,
/// 1.3): what was recorded, each pool's totals and peak, and allocation
/// records that do not add up.
template <class Field>
void write_annotation_info(const writer_info& w, Field& field) {
  const annotation_counts& n = w.annotations_read;
  if (n.empty()) return;
  auto list = [](const std::set<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
    return text;
  };
  using ull = unsigned long long;
  // The counts keep their places of before (bench/run.sh reads them);
  // argument value types follow.
  std::string text = format_text("%llu arguments, %llu flow steps, %llu allocations, %llu frees", ull(n.args),
                                 ull(n.flows), ull(n.allocs), ull(n.frees));
  if (n.args != 0)
    text += format_text("; argument values: %llu integer, %llu floating, %llu bool, %llu named",
                        ull(n.args - n.reals - n.bools - n.names), ull(n.reals), ull(n.bools), ull(n.names));
  if (!n.keys.empty()) text += "; keys: " + list(n.keys);
  if (!n.flow_names.empty()) text += "; flows: " + list(n.flow_names);
  field("  ", "annotations", text);
  if (!w.has_memory) return;
  const memory_timeline m(w);
  for (const memory_pool& p : m.pools())
    field("  ", "memory pool",
          format_text("\"%s\": %llu allocations (%llu bytes), %llu frees, peak %llu bytes live, %llu bytes live at the end",
                      p.name.c_str(), ull(p.allocs), ull(p.bytes_allocated), ull(p.frees), ull(p.peak), ull(p.live)));
  field("  ", "memory peak", format_text("%llu bytes live in all pools", ull(m.peak())));
  if (m.mismatches().total() != 0) field("  ", "memory issues", memory_mismatch_text(m.mismatches()));
}

/// The snapshot lines of a writer whose dump a flight recorder wrote
/// (chunk 11, 1.6): what triggered it and why, when (in the window and on
/// the wall clock), which window it holds, and the recorder's figures.
template <class Field>
void write_snapshot_info(const writer_info& w, Field& field) {
  const snapshot_record& s = w.snapshot;
  if (!s.present) return;
  using ull = unsigned long long;
  field("  ", "snapshot", format_text("#%llu, trigger %s", ull(s.info.sequence),
                                      snapshot_trigger_name(s.info.trigger).c_str()));
  field("  ", "reason", s.reason.empty() ? std::string("(none given)") : "\"" + s.reason + "\"");
  const std::string wall = snapshot_wall_clock(s, s.trigger_ns);
  const std::int64_t into = s.trigger_ns - s.window_first_ns;
  std::string when = (into >= 0 ? "+" : "-") +
                     format_duration(static_cast<std::uint64_t>(into >= 0 ? into : -into)) +
                     " from the window start";
  field("  ", "trigger time", when + (wall.empty() ? std::string() : ", " + wall));
  const std::string first = snapshot_wall_clock(s, s.window_first_ns);
  const std::string last = snapshot_wall_clock(s, s.window_last_ns);
  field("  ", "window",
        (first.empty() ? std::string("ticks ") + std::to_string(s.info.window_first_tick) + " to " +
                             std::to_string(s.info.window_last_tick)
                       : first + " to " + last) +
            " (" + format_duration(s.window_ns()) + ")" +
            (s.info.chunks_overwritten != 0 ? "; the run's records before it were not kept (not lost)"
                                            : "; the whole run so far: nothing was overwritten"));
  field("  ", "skipped",
        format_text("%llu snapshot(s) not written since the previous one (rate limit)", ull(s.info.skipped)));
  field("  ", "flight ring",
        format_text("%llu bytes, %llu chunk(s) overwritten before the window, %llu ms recorded after the trigger",
                    ull(s.info.ring_bytes), ull(s.info.chunks_overwritten), ull(s.info.after_ms)));
}

/// The "device" lines of a writer (device chunks, 1.9): what the sampler
/// read, what it cost, and each source it did not find (once).
template <class Field>
void write_device_info(const writer_info& w, Field& field) {
  using ull = unsigned long long;
  const writer_device& d = w.device;
  if (!d.present) return;
  std::map<std::string, std::size_t> kinds;
  for (const device_track& t : d.tracks) ++kinds[display_of(t.quantity).what];
  std::string tracks;
  for (const auto& k : kinds) tracks += (tracks.empty() ? "" : ", ") + k.first + (k.second > 1 ? " x" + std::to_string(k.second) : "");
  const double per = d.samples_taken != 0 ? static_cast<double>(d.cpu_ns) / static_cast<double>(d.samples_taken) : 0;
  field("  ", "device",
        format_text("sampled every %s (EDGETRACE_SAMPLE_MS): %llu samples of %zu tracks (%s); %llu files read in the "
                    "last, %.1f us of the flusher's CPU each",
                    format_duration(d.period_us * 1000).c_str(), ull(d.samples_taken), d.tracks.size(),
                    tracks.c_str(), ull(d.files_last), per / 1000.0));
  if (d.longest_ns != 0)
    field("  ", "device timing",
          format_text("a sample's values were read at most %s after its time (the longest sample)",
                      format_duration(d.longest_ns).c_str()));
  if (d.ignored != 0 || d.failed != 0 || d.undefined != 0)
    field("  ", "device values",
          format_text("%llu ignored (not a number: garbage, empty, huge or negative), %llu reads failed, %llu of "
                      "undefined tracks",
                      ull(d.ignored), ull(d.failed), ull(d.undefined)));
  for (const device_missing& m : d.missing) field("  ", "not sampled", m.name + ": " + m.why);
}

}  // namespace detail

namespace detail {

/// CUDA's version encoding (1000 * major + 10 * minor) as "13.0".
inline std::string cuda_version_text(std::uint64_t v) {
  if (v == 0) return "none";
  return format_text("%llu.%llu", static_cast<unsigned long long>(v / 1000), static_cast<unsigned long long>(v % 1000 / 10));
}

/// GPU spans the reader moved, per writer (read_gpu_spans).
struct gpu_moves {
  std::uint64_t placed_at_launch = 0;  ///< aligned before their launch
  std::uint64_t after_previous = 0;    ///< overlapped their stream's previous span by more than rounding
  std::int64_t after_previous_max_ns = 0;
};

/// The GPU lines of one writer: runtime, status, totals (with the spans
/// the reader moved), devices with their clock alignment, and a stream table.
inline std::string gpu_text(const writer_info& w, const gpu_moves& moves) {
  using ull = unsigned long long;
  const writer_gpu& g = w.gpu;
  std::string text;
  auto field = [&text](const std::string& label, const std::string& value) {
    std::string padded = "  " + label;
    padded.resize(std::max<std::size_t>(padded.size() + 1, 17), ' ');
    text += padded + value + '\n';
  };
  if (g.has_runtime)
    field("gpu", format_text("%s backend, driver %s, runtime %s, %llu device(s)", g.backend.c_str(),
                             cuda_version_text(g.driver_version).c_str(), cuda_version_text(g.runtime_version).c_str(),
                             ull(g.device_count)));
  field("gpu status", g.off_reason.empty() ? std::string("on") : "off: " + g.off_reason);
  std::uint64_t resolved = 0, captured = 0, unresolved = 0;
  for (const auto& s : g.streams) {
    resolved += s.second.resolved;
    captured += s.second.captured;
    unresolved += s.second.unresolved;
  }
  std::string spans = format_text("%llu resolved, %llu captured (CUDA graph capture: host span only), %llu unresolved",
                                  ull(resolved), ull(captured), ull(unresolved));
  if (g.has_stats) {
    // Why scopes were skipped: a full hand-off queue (the flusher came
    // back late) or every pair in flight (the GPU is far behind); a writer
    // before format 1.10 did not say.
    std::string why = " (no slot or event pair free)";
    if (g.has_skip_reasons)
      why = g.skipped == 0 ? "" : format_text(" (%llu hand-off queue full, %llu every event pair in flight)",
                                              ull(g.skipped - g.skipped_no_pair), ull(g.skipped_no_pair));
    spans += format_text("; %llu launches, %llu skipped%s, %llu event pairs created", ull(g.launches),
                         ull(g.skipped), why.c_str(), ull(g.event_pairs));
  }
  field("gpu spans", spans);
  if (moves.placed_at_launch != 0)
    field("", format_text("%llu GPU span(s) aligned before their launch: moved to it (alignment error)",
                          ull(moves.placed_at_launch)));
  if (moves.after_previous != 0)
    field("", format_text("%llu GPU span(s) aligned over the previous span of their stream (by up to %.3f us: "
                          "two anchor chains disagreed): moved after it, a stream runs in order",
                          ull(moves.after_previous), static_cast<double>(moves.after_previous_max_ns) / 1000.0));
  for (const auto& entry : g.devices) {
    const gpu_device_info& d = entry.second;
    std::string line = d.name.empty() ? std::string("(no device record)")
                                      : format_text("%s, compute %llu.%llu", d.name.c_str(), ull(d.cc_major),
                                                    ull(d.cc_minor));
    if (d.clock.empty()) {
      line += "; no clock anchor: its GPU spans cannot be placed";
    } else {
      line += format_text("; alignment: %zu anchor(s)", d.clock.anchors_used());
      if (d.clock.anchors_rejected() != 0) line += format_text(" (%zu rejected)", d.clock.anchors_rejected());
      if (d.clock.chains() > 1) line += format_text(" in %zu chains", d.clock.chains());
      line += format_text(", drift %+.2f ppm, residual rms %s, max %s, anchor bracket +-%s", d.clock.drift_ppm(),
                          format_duration(static_cast<std::uint64_t>(d.clock.residual_rms_ns())).c_str(),
                          format_duration(static_cast<std::uint64_t>(d.clock.residual_max_ns())).c_str(),
                          format_duration(static_cast<std::uint64_t>(d.clock.median_half_window_ns())).c_str());
    }
    field("device " + std::to_string(d.index), line);
  }
  if (!g.streams.empty()) {
    text += "\n";
    std::vector<std::array<std::string, 5>> rows;
    rows.push_back({"device", "stream", "resolved", "captured", "unresolved"});
    for (const gpu_stream_info* s : g.sorted_streams())
      rows.push_back({std::to_string(s->device), s->label(), std::to_string(s->resolved), std::to_string(s->captured),
                      std::to_string(s->unresolved)});
    std::array<std::size_t, 5> width{};
    for (const auto& row : rows)
      for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    for (const auto& row : rows) {
      std::string line = "  ";
      for (std::size_t c = 0; c < row.size(); ++c) {
        const std::size_t pad = width[c] - row[c].size();
        if (c >= 2) line.append(pad, ' ');
        line += row[c];
        if (c < 2) line.append(pad, ' ');
        if (c + 1 < row.size()) line += "  ";
      }
      text += line + '\n';
    }
  }
  return text;
}

/// The "clock" line of a writer: source, invariance, fitted or nominal
/// rate, pairs ignored.
inline std::string clock_text(const writer_info& w) {
  std::string clock = clock_source_name(w.clock_source);
  if (w.clock_source == static_cast<std::uint8_t>(format::clock_source::x86_tsc))
    clock += (w.clock_flags & 1) ? " (invariant)" : " (not reported invariant)";
  if ((w.clock_flags & 2) != 0) clock += " (fallback: the CPU's counter is not invariant)";
  const double mhz = w.clock.ticks_per_second() / 1e6;
  if (!w.clock.rate_known())
    clock += format_text(", rate UNKNOWN (%zu calibration pair(s), no nominal rate): no durations",
                         w.clock.pairs_used());
  else
    switch (w.clock.kind()) {
      case clock_model::fit::calibrated:
        clock += format_text(", %.3f MHz fitted from %zu calibration pairs", mhz, w.clock.pairs_used());
        break;
      case clock_model::fit::single_pair: clock += format_text(", %.3f MHz nominal (1 calibration pair)", mhz); break;
      case clock_model::fit::nominal: clock += format_text(", %.3f MHz nominal (no calibration pair)", mhz); break;
    }
  if (w.clock.pairs_given() != w.clock.pairs_used())
    clock += format_text("; %zu pairs out of order or repeated, ignored", w.clock.pairs_given() - w.clock.pairs_used());
  return clock;
}

/// Event totals over every thread of the dump (the "totals" line).
struct info_totals {
  std::uint64_t spans = 0, instants = 0, counters = 0, dropped = 0, threads = 0;
};

/// The thread table of a writer, columns sized to their content (text
/// columns left, numbers right); adds each thread to `totals`. "" when the
/// writer has no threads.
inline std::string threads_text(const writer_info& w, info_totals& totals) {
  using ull = unsigned long long;
  using row = std::array<std::string, 8>;
  std::vector<row> rows;
  rows.push_back(row{"tid", "name", "spans", "instants", "counters", "dropped", "written", "check"});
  for (const auto& entry : w.threads) {
    const thread_info& t = entry.second;
    ++totals.threads;
    totals.spans += t.spans;
    totals.instants += t.instants;
    totals.counters += t.counters;
    totals.dropped += t.dropped();
    std::string check;
    if (!t.has_stats) check = "no stats record";
    else if (t.stats_written == t.decoded()) check = "ok";
    else if (t.missing() != 0) check = format_text("missing %llu", ull(t.missing()));
    else if (t.undecoded() != 0) check = format_text("ok (%llu before the snapshot's window)", ull(t.undecoded()));
    else check = format_text("%llu more than written (stats older than the data)", ull(t.decoded() - t.stats_written));
    rows.push_back(row{t.has_record ? std::to_string(t.os_tid) : "?",
                       t.has_record ? (t.name.empty() ? "(unnamed)" : t.name) : "(no thread record)",
                       std::to_string(t.spans), std::to_string(t.instants), std::to_string(t.counters),
                       std::to_string(t.dropped()), t.has_stats ? std::to_string(t.stats_written) : "-", check});
  }
  if (rows.size() == 1) return "";
  std::array<std::size_t, 8> width{};
  for (const row& rw : rows)
    for (std::size_t c = 0; c < rw.size(); ++c) width[c] = std::max(width[c], rw[c].size());
  std::string text = "\n";
  for (const row& rw : rows) {
    std::string line = "  ";
    for (std::size_t c = 0; c < rw.size(); ++c) {
      const std::size_t pad = width[c] - rw[c].size();
      const bool left = c <= 1 || c == 7;  // text columns left, numbers right
      if (!left) line.append(pad, ' ');
      line += rw[c];
      if (left && c != 7) line.append(pad, ' ');
      if (c != 7) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + '\n';
  }
  return text;
}

/// The lines of one writer: process, clock, duration, end record,
/// snapshot, capture and annotation lines, then its GPU part (with
/// the GPU spans the reader moved) and its thread table.
template <class Field>
void writer_text(const writer_info& w, const gpu_moves& moves, std::string& text, Field&& field,
                 info_totals& totals) {
  using ull = unsigned long long;
  text += format_text("\nwriter 0x%08x\n", static_cast<unsigned>(w.id));
  if (w.has_process) {
    field("  ", "process", format_text("%s (pid %llu)", w.process_name.c_str(), ull(w.pid)));
    field("  ", "clock", clock_text(w));
    field("  ", "ring capacity", format_text("%llu records per thread", ull(w.ring_capacity)));
    field("  ", "flush period", format_text("%llu us", ull(w.flush_period_us)));
  } else {
    field("  ", "process", "unknown (no process record)");
  }
  field("  ", "duration",
        !w.has_events            ? std::string("no events")
        : !w.clock.rate_known() ? std::string("unknown (tick rate unknown)")
                                : format_duration(static_cast<std::uint64_t>(w.last_ns - w.first_ns)));
  std::uint64_t rejected = 0;
  for (const auto& t : w.threads) rejected += t.second.stats_rejected;
  if (rejected != 0)
    field("  ", "refused",
          format_text("%llu EDGETRACE_RECORD span(s) more than 1 s outside the trace (not recorded)", ull(rejected)));
  field("  ", "end record",
        w.has_end              ? "yes (clean shutdown)"
        : w.exec_follows       ? "missing (the process called exec: a later writer is the same process)"
        : w.pid_reused_later   ? "missing (killed or crashed? a later writer has its pid but is another process: "
                                 "another pid namespace, or the pid reused)"
                               : "missing (killed or crashed?)");
  std::uint64_t helped = 0, written = 0;
  for (const auto& t : w.threads) {
    helped += t.second.stats_helped;
    written += t.second.stats_written;
  }
  if (helped != 0)
    field("  ", "own encoding",
          format_text("%llu of %llu records (%.1f%%) encoded by the threads that recorded them (the flusher fell "
                      "behind, or every CPU was busy: EDGETRACE_ON_FULL=wait)",
                      ull(helped), ull(written), 100.0 * static_cast<double>(helped) / static_cast<double>(written)));
  write_snapshot_info(w, field);
  write_capture_info(w, field);
  write_annotation_info(w, field);
  write_device_info(w, field);
  const std::string table = threads_text(w, totals);
  if (w.gpu.present) text += gpu_text(w, moves);
  text += table.empty() ? std::string("  (no threads)\n") : table;
}

/// The dump's own lines: file, size, chunks, status, writers, contents.
template <class Field>
void dump_text(const dump_reader& r, const info_options& options, Field&& field) {
  using ull = unsigned long long;
  const read_stats& s = r.stats();
  field("", "file", options.display_name.empty() ? r.path() : options.display_name);
  field("", "size", format_text("%llu bytes, format %u.%u", ull(s.file_size), r.version_major(), r.version_minor()));
  field("", "chunks",
        format_text("%llu read (%llu of unknown type skipped), %llu bytes skipped, %llu bytes truncated",
                    ull(s.chunks_read), ull(s.chunks_unknown), ull(s.bytes_skipped), ull(s.bytes_truncated)));
  field("", "status",
        r.complete() && !r.damaged()
            ? std::string("complete")
            : format_text("%s, %llu problem(s) (see diagnostics)", r.complete() ? "damaged" : "incomplete",
                          ull(r.damage_count())));
  field("", "writers", std::to_string(r.writers().size()));
  if (r.snapshot() != nullptr)
    field("", "contents", "a flight recorder's snapshot: one window of the run (see its writer's snapshot lines)");
}

/// The "diagnostics" section.
inline std::string diagnostics_text(const dump_reader& r) {
  using ull = unsigned long long;
  const auto& diags = r.diagnostics();
  std::string text = format_text("\ndiagnostics (%llu)\n", ull(diags.size() + r.diagnostics_dropped()));
  if (diags.empty()) text += "  none\n";
  for (const diagnostic& d : diags)
    text += std::string(d.level == diagnostic::severity::damage ? "  warning: " : "  note: ") + d.message + '\n';
  if (r.diagnostics_dropped() != 0) text += format_text("  ... and %llu more\n", ull(r.diagnostics_dropped()));
  return text;
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool write_info(dump_reader& r, std::FILE* out, const info_options& options,
                                            std::string* error) {
  using detail::format_text;
  using ull = unsigned long long;
  if (!r.metadata_read() && !r.read_metadata()) return detail::fail_with(error, r.error());
  r.allow_unknown_rate();  // counts only; the clock line says the rate is unknown
  span_annotations notes(r, span_order::read_events);
  // What NVTX capture (libedgetrace-nvtx.so) could not record: the counter
  // samples it writes at exit, told apart by their sites' file.
  std::string nvtx_capture;
  if (!r.read_events([&notes, &nvtx_capture](const event& e) {
        if (e.kind == event_kind::span) notes.collect(e.thread, e.site, e.begin_ns, e.end_ns, nullptr, nullptr);
        if (e.kind == event_kind::counter && e.site != nullptr && e.site->file == "edgetrace-nvtx")
          nvtx_capture += (nvtx_capture.empty() ? "" : ", ") + format_text("%.0f ", e.value) + e.site->name;
      }))
    return detail::fail_with(error, r.error());
  // GPU spans the alignment placed before their launch, or over their
  // stream's previous span, per writer.
  std::map<const writer_info*, detail::gpu_moves> moves;
  if (r.has_gpu() && !r.read_gpu_spans([&](const gpu_span& g) {
        detail::gpu_moves& m = moves[g.writer];
        m.placed_at_launch += g.placed_at_launch ? 1 : 0;
        if (g.moved_after_previous_ns > dump_reader::gpu_fifo_tolerance_ns) {
          ++m.after_previous;
          m.after_previous_max_ns = std::max(m.after_previous_max_ns, g.moved_after_previous_ns);
        }
      }))
    return detail::fail_with(error, r.error());
  std::string text;
  auto field = [&text](const char* indent, const char* label, const std::string& value) {
    std::string padded = label;
    padded.resize(std::max<std::size_t>(padded.size() + 1, 15), ' ');
    text += indent + padded + value + '\n';
  };
  detail::dump_text(r, options, field);
  detail::info_totals totals;
  for (const writer_info* w : r.writers_in_order()) detail::writer_text(*w, moves[w], text, field, totals);
  text += '\n';
  field("", "totals",
        format_text("%llu spans, %llu instants, %llu counters, %llu dropped in %llu threads", ull(totals.spans),
                    ull(totals.instants), ull(totals.counters), ull(totals.dropped), ull(totals.threads)));
  if (!notes.empty() && notes.unclaimed() != 0) {
    const unattached_notes u = unattached(r, notes);
    if (u.outside != 0)
      field("", "unattached", format_text("%llu argument(s) or flow step(s) recorded outside every span", ull(u.outside)));
    if (u.open != 0) field("", "in open spans", std::to_string(u.open) + " argument(s) or flow step(s) " + u.open_text());
  }
  if (!nvtx_capture.empty()) field("", "NVTX capture", nvtx_capture);
  text += detail::diagnostics_text(r);
  return detail::write_text(out, text, error);
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
