// SPDX-License-Identifier: MIT
// The summary as one JSON document: what `edgetrace summary --format json` writes, and the data the HTML report embeds for its scripts.
#pragma once

#include <string>

#include <edgetrace/sinks/summary/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// JSON document: rows, iterations, thread usage and notes.
EDGETRACE_DETAIL_READER_API std::string summary_json(const summary_result& s, const std::string& source);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <cstdio>

#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// Appends one element per item: `element(out, item)` after `first_sep`
/// (first) or `sep` (others).
template <class Items, class Element>
void append_json_list(std::string& out, const Items& items, const char* first_sep, const char* sep, Element&& element) {
  bool first = true;
  for (const auto& item : items) {
    out += first ? first_sep : sep;
    first = false;
    element(out, item);
  }
}

/// The document's fields before "rows": what the summary is over.
inline void append_json_header(std::string& out, const summary_result& s, const std::string& source) {
  out += "{\"source\":";
  append_json_string(out, source);
  out += ",\"group_by\":\"" + std::string(group_name(s.by)) + "\",\"grouping\":";
  append_json_string(out, group_label(s));
  out += ",\"sorted_by\":";
  append_json_string(out, sort_label(s));
  out += ",\"phase\":";
  append_json_string(out, s.phase);
  out += ",\"share_self_ns\":" + std::to_string(s.share_self_ns) + ",\"wait_self_ns\":" + std::to_string(s.wait_self_ns) +
         ",\"rows_waiting\":" + std::to_string(s.rows_waiting) + ",\"wait_rule\":";
  append_json_string(out, s.wait_rule);
  out += ",\"share_text\":";
  append_json_string(out, share_text(s));
  if (!s.per.empty()) {
    out += ",\"per\":{\"name\":";
    append_json_string(out, s.per);
    out += std::string(",\"from\":\"") + (s.per_from_marks ? "marks" : "span") +
           "\",\"count\":" + std::to_string(s.per_count) + ",\"total_ns\":" + std::to_string(s.per_total_ns) +
           ",\"cut_at_pause\":" + std::to_string(s.per_cut_at_pause) +
           ",\"spans_outside\":" + std::to_string(s.spans_outside_per) + "}";
  }
  out += ",\"spans\":" + std::to_string(s.spans_read) + ",\"spans_in_rows\":" + std::to_string(s.spans_in_rows) +
         ",\"spans_warmup\":" + std::to_string(s.spans_warmup) +
         ",\"spans_other_phases\":" + std::to_string(s.spans_other_phases) +
         ",\"spans_filtered\":" + std::to_string(s.spans_filtered) + ",\"dropped\":" + std::to_string(s.dropped) +
         ",\"self_total_ns\":" + std::to_string(s.self_total_ns) + ",\"wall_ns\":" + std::to_string(s.wall_ns) +
         ",\"rows_before_top\":" + std::to_string(s.rows_before_top);
  char text[64];
  std::snprintf(text, sizeof text, "%.6f", log_buckets::relative_error);
  out += ",\"estimate_relative_error\":" + std::string(text);
}

/// One row object.
inline void append_json_row(std::string& out, const summary_result& s, const summary_row& r) {
  char text[64];
  out += "{\"key\":";
  append_json_string(out, r.key);
  out += ",\"category\":";
  append_json_string(out, r.category);
  out += ",\"calls\":" + std::to_string(r.host.count());
  out += ",\"host\":{";
  bool first_field = true;
  for (const auto& c : summary_columns()) {
    if (*c.group == 0) continue;
    std::string name = c.id == summary_column::p999 ? "p999" : c.name;
    out += (first_field ? "\"" : ",\"") + name + "_ns\":" + std::to_string(column_ns(r, c.id));
    first_field = false;
  }
  out += std::string(",\"exact\":") + (r.host.exact() ? "true" : "false") + "}";
  if (r.gpu.count() != 0) {
    const latency_stats& g = r.gpu;
    out += ",\"gpu\":{\"calls\":" + std::to_string(g.count()) + ",\"total_ns\":" + std::to_string(g.total()) +
           ",\"mean_ns\":" + std::to_string(g.mean()) + ",\"min_ns\":" + std::to_string(g.min()) +
           ",\"p50_ns\":" + std::to_string(g.percentile(50)) + ",\"p99_ns\":" + std::to_string(g.percentile(99)) +
           ",\"max_ns\":" + std::to_string(g.max()) + ",\"exact\":" + (g.exact() ? "true" : "false") + "}";
  }
  if (s.memory)
    out += ",\"mem_peak_bytes\":" + std::to_string(r.mem_peak) + ",\"mem_growth_bytes\":" + std::to_string(r.mem_growth);
  out += ",\"wait_self_ns\":" + std::to_string(r.wait_self_ns) + ",\"waiting\":" + (r.waiting() ? "true" : "false") +
         ",\"first_begin_ns\":" + std::to_string(r.first_begin_ns);
  if (!s.per.empty()) {
    std::snprintf(text, sizeof text, ",\"iteration_share\":%.6f", r.iteration_share);
    out += ",\"per_iteration_ns\":" + std::to_string(r.per_iteration_ns) + text;
  }
  std::snprintf(text, sizeof text, ",\"share\":%.6f}", r.share);
  out += text;
}

/// One iteration object.
inline void append_json_iteration(std::string& out, const iteration_row& it) {
  char text[64];
  out += "{\"name\":";
  append_json_string(out, it.name);
  out += std::string(",\"from\":\"") + it.from() + "\"";
  out += ",\"count\":" + std::to_string(it.latency.count()) + ",\"skipped\":" + std::to_string(it.skipped) +
         ",\"cut_at_pause\":" + std::to_string(it.cut_at_pause) + ",\"single_step\":" + std::to_string(it.single_step);
  out += ",\"mean_ns\":" + std::to_string(it.latency.mean()) + ",\"min_ns\":" + std::to_string(it.latency.min()) +
         ",\"p50_ns\":" + std::to_string(it.latency.percentile(50)) +
         ",\"p90_ns\":" + std::to_string(it.latency.percentile(90)) +
         ",\"p99_ns\":" + std::to_string(it.latency.percentile(99)) + ",\"max_ns\":" + std::to_string(it.latency.max());
  std::snprintf(text, sizeof text, ",\"per_second\":%.6f}", it.per_second());
  out += text;
}

/// One thread-usage object.
inline void append_json_thread(std::string& out, const thread_usage& t) {
  out += "{\"thread\":";
  append_json_string(out, t.label);
  out += ",\"busy_ns\":" + std::to_string(t.busy_ns) + ",\"covered_ns\":" + std::to_string(t.covered_ns) +
         ",\"wait_ns\":" + std::to_string(t.wait_ns) + ",\"wall_ns\":" + std::to_string(t.wall_ns) +
         ",\"top_level_spans\":" + std::to_string(t.spans) + "}";
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API std::string summary_json(const summary_result& s, const std::string& source) {
  std::string out;
  detail::append_json_header(out, s, source);
  out += ",\"rows\":[";
  detail::append_json_list(out, s.rows, "\n", ",\n",
                           [&s](std::string& o, const summary_row& r) { detail::append_json_row(o, s, r); });
  out += "],\"iterations\":[";
  detail::append_json_list(out, s.iterations, "\n", ",\n", detail::append_json_iteration);
  out += "],\"threads\":[";
  detail::append_json_list(out, s.threads_usage, "\n", ",\n", detail::append_json_thread);
  out += "],\"notes\":[";
  detail::append_json_list(out, s.notes, "", ",", append_json_string);
  out += "]}\n";
  return out;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
