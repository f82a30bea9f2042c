// SPDX-License-Identifier: MIT
// Output of `edgetrace summary`: the aligned table and the CSV, with the header lines that say what each number is over (the JSON: summary/json.hpp).
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <string>
#include <vector>

#include <edgetrace/sinks/summary/summary.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {
/// A column header as --columns spells it: lower case, without spaces,
/// '_', '-' or '.' ("p99.9" is "p999", "% iter" is "%iter", "+peak mem" is
/// "+peakmem").
EDGETRACE_DETAIL_READER_API std::string summary_column_key(const std::string& header);
/// Every column --columns may name (those of data the dump lacks, gpu and
/// memory, are simply absent from its table).
EDGETRACE_DETAIL_READER_API const std::vector<std::string>& summary_column_keys();
}  // namespace detail

/// The aligned terminal table (rows, then iterations, then notes).
EDGETRACE_DETAIL_READER_API std::string summary_table(const summary_result& s, const std::string& source);

/// CSV: one line per row, times in integer ns (see docs/ANALYSIS.md).
EDGETRACE_DETAIL_READER_API std::string summary_csv(const summary_result& s);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

EDGETRACE_DETAIL_READER_API std::string summary_column_key(const std::string& header) {
  std::string key;
  for (char ch : header)
    if (ch != ' ' && ch != '_' && ch != '-' && ch != '.') key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return key;
}

EDGETRACE_DETAIL_READER_API const std::vector<std::string>& summary_column_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& c : summary_columns())
      if (c.id != summary_column::key) k.push_back(summary_column_key(c.header));
    for (const char* h : {"avg/iter", "% iter", "gpu calls", "gpu total", "gpu mean", "gpu p50", "gpu p99", "gpu max",
                          "peak mem", "+peak mem"})
      k.push_back(summary_column_key(h));
    return k;
  }();
  return keys;
}

/// Keeps the leading `fixed` columns and those --columns names, in the
/// table's own order.
inline void keep_columns(std::vector<std::vector<std::string>>& cells, std::size_t fixed,
                         const std::vector<std::string>& columns) {
  if (columns.empty() || cells.empty()) return;
  std::vector<bool> keep(cells.front().size(), false);
  for (std::size_t i = 0; i < keep.size(); ++i)
    keep[i] = i < fixed || std::find(columns.begin(), columns.end(), summary_column_key(cells.front()[i])) != columns.end();
  for (std::vector<std::string>& line : cells) {
    std::size_t out = 0;
    for (std::size_t i = 0; i < line.size() && i < keep.size(); ++i)
      if (keep[i]) {
        if (out != i) line[out] = std::move(line[i]);
        ++out;
      }
    line.resize(out);
  }
}

/// The rows of the table: one line per row, the host columns, then
/// avg/iter and % iter (--per), the gpu and the memory columns.
inline std::string rows_table(const summary_result& s) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header;
  for (const auto& c : summary_columns())
    header.push_back(c.id == summary_column::key ? group_label(s) : c.header);
  if (s.by == group_by::name) header.insert(header.begin() + 1, "category");
  const bool per = !s.per.empty();
  if (per) header.insert(header.end(), {"avg/iter", "% iter"});
  const bool gpu = s.gpu_spans != 0;
  if (gpu)
    for (const char* h : {"gpu calls", "gpu total", "gpu mean", "gpu p50", "gpu p99", "gpu max"}) header.push_back(h);
  if (s.memory) header.insert(header.end(), {"peak mem", "+peak mem"});
  cells.push_back(header);
  for (const summary_row& r : s.rows) {
    std::vector<std::string> line;
    for (const auto& c : summary_columns()) {
      if (c.id == summary_column::key) {
        line.push_back(r.key.size() > 48 ? r.key.substr(0, 45) + "..." : r.key);
        if (s.by == group_by::name) line.push_back(r.category);
      } else if (c.id == summary_column::calls) {
        line.push_back(std::to_string(r.host.count()));
      } else if (c.id == summary_column::share) {
        line.push_back(r.waiting() ? "wait" : percent_text(r.share));
      } else {
        line.push_back((r.host.exact() || c.percentile == 0 ? "" : "~") +
                       readable_time(column_ns(r, c.id)));
      }
    }
    if (per) line.insert(line.end(), {readable_time(r.per_iteration_ns), percent_text(r.iteration_share)});
    if (gpu) {
      const latency_stats& g = r.gpu;
      const std::string mark = g.exact() ? "" : "~";
      if (g.count() == 0)
        line.insert(line.end(), {"-", "-", "-", "-", "-", "-"});
      else
        line.insert(line.end(), {std::to_string(g.count()), readable_time(g.total()),
                                 readable_time(g.mean()), mark + readable_time(g.percentile(50)),
                                 mark + readable_time(g.percentile(99)), readable_time(g.max())});
    }
    if (s.memory) line.insert(line.end(), {readable_bytes(r.mem_peak), readable_bytes(r.mem_growth)});
    cells.push_back(line);
  }
  keep_columns(cells, s.by == group_by::name ? 2 : 1, s.columns);
  return render_table(cells, s.by == group_by::name ? 2 : 1);
}

/// The iterations (and flows) table.
inline std::string iterations_table(const summary_result& s) {
  std::string out;
  const bool flows = std::any_of(s.iterations.begin(), s.iterations.end(), [](const iteration_row& it) { return it.from_flow; });
  const bool others = std::any_of(s.iterations.begin(), s.iterations.end(), [](const iteration_row& it) { return !it.from_flow; });
  out += flows ? (others ? "\niterations and flows\n" : "\nflows\n") : "\niterations\n";
  std::vector<std::vector<std::string>> cells = {
      {"iteration", "from", "count", "mean", "p50", "p90", "p99", "max", "per second"}};
  for (const iteration_row& it : s.iterations) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.2f", it.per_second());
    if (it.latency.count() == 0) {  // e.g. flows whose ids all had one step: no latency to show
      cells.push_back({it.name, it.from(), "0", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    cells.push_back({it.name, it.from(), std::to_string(it.latency.count()),
                     readable_time(it.latency.mean()), readable_time(it.latency.percentile(50)),
                     readable_time(it.latency.percentile(90)),
                     readable_time(it.latency.percentile(99)), readable_time(it.latency.max()),
                     rate});
  }
  out += render_table(cells, 2);
  return out;
}

/// The lines under the tables: what self, gpu and mem mean, flow rows,
/// cut and single-step iterations, then the notes.
inline std::string table_footer(const summary_result& s) {
  std::string out;
  out += "\nself = duration minus direct children on the same thread; share: see the header (all self time: " +
         readable_time(s.self_total_ns) + ")\n";
  if (s.gpu_spans != 0)
    out += "gpu = time the GPU spent between the start and end events of the row's CUDA scopes (as the GPU measured it)\n";
  if (s.memory)
    out += "peak mem = most bytes live (all pools of the process) while a span of the row ran; +peak mem = the most "
           "a span's own thread allocated (net of its frees) while that span ran\n";
  for (const iteration_row& it : s.iterations)
    if (it.from_flow) {
      out += "flow rows: one sample per id, from its first step's begin to its last step's end (EDGETRACE_FLOW)\n";
      break;
    }
  for (const iteration_row& it : s.iterations) {
    if (it.cut_at_pause != 0)
      out += "\"" + it.name + "\": " + std::to_string(it.cut_at_pause) +
             " interval(s) between marks contain a pause (recording off); cut there, not counted\n";
    if (it.single_step != 0)
      out += "\"" + it.name + "\": " + std::to_string(it.single_step) +
             " flow id(s) with a single recorded step; not latency samples\n";
  }
  for (const std::string& n : s.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API std::string summary_table(const summary_result& s, const std::string& source) {
  std::string out;
  char head[512];
  std::snprintf(head, sizeof head, "%s: %llu spans on %zu thread(s) over %s; by %s, sorted by %s; %zu of %zu rows%s%s\n",
                source.c_str(), static_cast<unsigned long long>(s.spans_read), s.threads,
                detail::readable_time(s.wall_ns).c_str(), detail::group_label(s).c_str(), detail::sort_label(s).c_str(),
                s.rows.size(), s.rows_before_top, s.phase.empty() ? "" : "; phase ", s.phase.c_str());
  out += head;
  out += detail::share_text(s) + "\n";
  if (!s.per.empty()) out += detail::per_text(s) + "\n";
  out += "\n";
  out += s.rows.empty() ? std::string("(no spans match)\n") : detail::rows_table(s);
  if (!s.iterations.empty()) out += detail::iterations_table(s);
  out += detail::table_footer(s);
  return out;
}

EDGETRACE_DETAIL_READER_API std::string summary_csv(const summary_result& s) {
  std::string out = detail::group_name(s.by);
  if (s.by == group_by::name) out += ",category";
  for (const auto& c : summary_columns()) {
    if (c.id == summary_column::key) continue;
    std::string name = c.name;
    if (c.id == summary_column::p999) name = "p999";
    out += "," + name + (*c.group ? "_ns" : "");
  }
  const bool gpu = s.gpu_spans != 0;
  if (gpu) out += ",gpu_calls,gpu_total_ns,gpu_mean_ns,gpu_p50_ns,gpu_p99_ns,gpu_max_ns";
  if (s.memory) out += ",mem_peak_bytes,mem_growth_bytes";
  out += ",exact";
  const bool per = !s.per.empty();
  if (per) out += ",per_iteration_ns,iteration_share";
  const bool waits = s.wait_self_ns != 0;
  if (waits) out += ",wait_self_ns";
  out += "\n";
  for (const summary_row& r : s.rows) {
    out += detail::csv_field(r.key);
    if (s.by == group_by::name) out += "," + detail::csv_field(r.category);
    for (const auto& c : summary_columns()) {
      if (c.id == summary_column::key) continue;
      if (c.id == summary_column::calls) out += "," + std::to_string(r.host.count());
      else if (c.id == summary_column::share) {
        char text[32];
        std::snprintf(text, sizeof text, ",%.6f", r.share);
        out += text;
      } else out += "," + std::to_string(detail::column_ns(r, c.id));
    }
    if (gpu)
      for (std::uint64_t v : {r.gpu.count(), r.gpu.total(), r.gpu.mean(), r.gpu.percentile(50), r.gpu.percentile(99),
                              r.gpu.max()})
        out += "," + std::to_string(v);
    if (s.memory) out += "," + std::to_string(r.mem_peak) + "," + std::to_string(r.mem_growth);
    out += r.host.exact() ? ",1" : ",0";
    if (per) {
      char text[64];
      std::snprintf(text, sizeof text, ",%llu,%.6f", static_cast<unsigned long long>(r.per_iteration_ns), r.iteration_share);
      out += text;
    }
    if (waits) out += "," + std::to_string(r.wait_self_ns);
    out += "\n";
  }
  return out;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
