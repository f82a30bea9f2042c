// SPDX-License-Identifier: MIT
// Output of `edgetrace summary`: the aligned table, CSV and JSON.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "summary.hpp"

namespace edgetrace {
inline namespace v1 {
namespace reader {


namespace detail {

/// A duration with about four significant digits and a readable unit:
/// "850 ns", "12.35 us", "1.234 ms", "2.500 s".
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

inline std::uint64_t column_ns(const summary_row& r, summary_column c) {
  switch (c) {
    case summary_column::total: return r.host.total();
    case summary_column::self: return r.self_ns;
    case summary_column::mean: return r.host.mean();
    case summary_column::min: return r.host.min();
    case summary_column::max: return r.host.max();
    default: break;
  }
  for (const auto& info : summary_columns())
    if (info.id == c) return r.host.percentile(info.percentile);
  return 0;
}

inline const char* group_name(group_by by) {
  return by == group_by::name ? "name" : by == group_by::category ? "category" : "thread";
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

/// Left- or right-aligned text table; widths from the content.
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

}  // namespace detail

/// The aligned terminal table (rows, then iterations, then notes).
inline std::string summary_table(const summary_result& s, const std::string& source) {
  std::string out;
  char head[512];
  std::snprintf(head, sizeof head, "%s: %llu spans on %zu thread(s) over %s; by %s, sorted by %s%s; %zu of %zu rows\n\n",
                source.c_str(), static_cast<unsigned long long>(s.spans_read), s.threads,
                detail::readable_time(s.wall_ns).c_str(), detail::group_name(s.by),
                s.ascending ? "+" : "", [&] {
                  for (const auto& c : summary_columns())
                    if (c.id == s.sort_by) return c.id == summary_column::key ? detail::group_name(s.by) : c.name;
                  return "total";
                }(),
                s.rows.size(), s.rows_before_top);
  out += head;
  if (s.rows.empty()) {
    out += "(no spans match)\n";
  } else {
    std::vector<std::vector<std::string>> cells;
    std::vector<std::string> header;
    for (const auto& c : summary_columns())
      header.push_back(c.id == summary_column::key ? detail::group_name(s.by) : c.header);
    if (s.by == group_by::name) header.insert(header.begin() + 1, "category");
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
          char text[32];
          std::snprintf(text, sizeof text, "%.1f %%", r.share * 100);
          line.push_back(text);
        } else {
          line.push_back((r.host.exact() || c.percentile == 0 ? "" : "~") +
                         detail::readable_time(detail::column_ns(r, c.id)));
        }
      }
      if (gpu) {
        const latency_stats& g = r.gpu;
        const std::string mark = g.exact() ? "" : "~";
        if (g.count() == 0)
          line.insert(line.end(), {"-", "-", "-", "-", "-", "-"});
        else
          line.insert(line.end(), {std::to_string(g.count()), detail::readable_time(g.total()),
                                   detail::readable_time(g.mean()), mark + detail::readable_time(g.percentile(50)),
                                   mark + detail::readable_time(g.percentile(99)), detail::readable_time(g.max())});
      }
      if (s.memory) line.insert(line.end(), {detail::readable_bytes(r.mem_peak), detail::readable_bytes(r.mem_growth)});
      cells.push_back(line);
    }
    out += detail::render_table(cells, s.by == group_by::name ? 2 : 1);
  }
  if (!s.iterations.empty()) {
    const bool flows = std::any_of(s.iterations.begin(), s.iterations.end(), [](const iteration_row& it) { return it.from_flow; });
    const bool others = std::any_of(s.iterations.begin(), s.iterations.end(), [](const iteration_row& it) { return !it.from_flow; });
    out += flows ? (others ? "\niterations and flows\n" : "\nflows\n") : "\niterations\n";
    std::vector<std::vector<std::string>> cells = {
        {"iteration", "from", "count", "mean", "p50", "p90", "p99", "max", "per second"}};
    for (const iteration_row& it : s.iterations) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "%.2f", it.per_second());
      cells.push_back({it.name, it.from(), std::to_string(it.latency.count()),
                       detail::readable_time(it.latency.mean()), detail::readable_time(it.latency.percentile(50)),
                       detail::readable_time(it.latency.percentile(90)),
                       detail::readable_time(it.latency.percentile(99)), detail::readable_time(it.latency.max()),
                       rate});
    }
    out += detail::render_table(cells, 2);
  }
  char foot[256];
  std::snprintf(foot, sizeof foot,
                "\nself = duration minus direct children on the same thread; share = self / all self time "
                "(%s)\n",
                detail::readable_time(s.self_total_ns).c_str());
  out += foot;
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
  for (const std::string& n : s.notes) out += "note: " + n + "\n";
  return out;
}

/// CSV: one line per row, times in integer ns (see docs/ANALYSIS.md).
inline std::string summary_csv(const summary_result& s) {
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
  out += ",exact\n";
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
    out += r.host.exact() ? ",1\n" : ",0\n";
  }
  return out;
}

/// JSON document: rows, iterations, thread usage and notes.
inline std::string summary_json(const summary_result& s, const std::string& source) {
  std::string out = "{\"source\":";
  append_json_string(out, source);
  out += ",\"group_by\":\"" + std::string(detail::group_name(s.by)) + "\"";
  out += ",\"spans\":" + std::to_string(s.spans_read) + ",\"spans_in_rows\":" + std::to_string(s.spans_in_rows) +
         ",\"spans_warmup\":" + std::to_string(s.spans_warmup) +
         ",\"spans_other_phases\":" + std::to_string(s.spans_other_phases) +
         ",\"spans_filtered\":" + std::to_string(s.spans_filtered) + ",\"dropped\":" + std::to_string(s.dropped) +
         ",\"self_total_ns\":" + std::to_string(s.self_total_ns) + ",\"wall_ns\":" + std::to_string(s.wall_ns) +
         ",\"rows_before_top\":" + std::to_string(s.rows_before_top);
  char text[64];
  std::snprintf(text, sizeof text, "%.6f", log_buckets::relative_error);
  out += ",\"estimate_relative_error\":" + std::string(text);
  out += ",\"rows\":[";
  bool first = true;
  for (const summary_row& r : s.rows) {
    out += first ? "\n" : ",\n";
    first = false;
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
      out += (first_field ? "\"" : ",\"") + name + "_ns\":" + std::to_string(detail::column_ns(r, c.id));
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
    std::snprintf(text, sizeof text, ",\"share\":%.6f}", r.share);
    out += text;
  }
  out += "],\"iterations\":[";
  first = true;
  for (const iteration_row& it : s.iterations) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "{\"name\":";
    append_json_string(out, it.name);
    out += std::string(",\"from\":\"") + it.from() + "\"";
    out += ",\"count\":" + std::to_string(it.latency.count()) + ",\"skipped\":" + std::to_string(it.skipped);
    out += ",\"mean_ns\":" + std::to_string(it.latency.mean()) +
           ",\"min_ns\":" + std::to_string(it.latency.min()) +
           ",\"p50_ns\":" + std::to_string(it.latency.percentile(50)) +
           ",\"p90_ns\":" + std::to_string(it.latency.percentile(90)) +
           ",\"p99_ns\":" + std::to_string(it.latency.percentile(99)) +
           ",\"max_ns\":" + std::to_string(it.latency.max());
    std::snprintf(text, sizeof text, ",\"per_second\":%.6f}", it.per_second());
    out += text;
  }
  out += "],\"threads\":[";
  first = true;
  for (const thread_usage& t : s.threads_usage) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "{\"thread\":";
    append_json_string(out, t.label);
    out += ",\"busy_ns\":" + std::to_string(t.busy_ns) + ",\"wall_ns\":" + std::to_string(t.wall_ns) +
           ",\"top_level_spans\":" + std::to_string(t.spans) + "}";
  }
  out += "],\"notes\":[";
  first = true;
  for (const std::string& n : s.notes) {
    out += first ? "" : ",";
    first = false;
    append_json_string(out, n);
  }
  out += "]}\n";
  return out;
}

}  // namespace reader
}  // namespace v1
}  // namespace edgetrace
