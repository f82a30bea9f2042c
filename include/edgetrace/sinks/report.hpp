// SPDX-License-Identifier: MIT
// One self-contained HTML report (`edgetrace report`): summary table, latency histograms, thread utilisation; no network.
#pragma once

#include <cstddef>
#include <string>

#include <edgetrace/sinks/summary/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

struct report_options {
  std::string title = "edgetrace report";
  std::string source;             ///< dump name(s) shown in the header
  std::size_t histograms = 8;     ///< latency histograms for this many rows (the table's first)
  std::size_t bins = 24;          ///< bins per histogram, log-spaced from min to max
  /// Sections put after the thread utilisation (report_device_html's).
  std::string sections;
};

/// The whole report as one HTML document: inline CSS and SVG, the data also
/// embedded as JSON in <script type="application/json" id="edgetrace-data">;
/// no script runs and nothing is fetched.
EDGETRACE_DETAIL_READER_API std::string report_html(const summary_result& s, const report_options& options);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <edgetrace/sinks/summary/json.hpp>
#include <edgetrace/sinks/summary/summary.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// JSON text made safe inside <script>: no "</" can close the element.
inline std::string script_safe(const std::string& json) {
  std::string out;
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

/// Log-spaced bin edges from lo to hi (integers, strictly increasing).
inline std::vector<std::uint64_t> log_edges(std::uint64_t lo, std::uint64_t hi, std::size_t bins) {
  std::vector<std::uint64_t> edges;
  if (hi <= lo) return {lo, lo + 1};
  const double a = std::log(static_cast<double>(std::max<std::uint64_t>(lo, 1)));
  const double b = std::log(static_cast<double>(hi) + 1);
  for (std::size_t i = 0; i <= bins; ++i) {
    auto e = static_cast<std::uint64_t>(std::exp(a + (b - a) * static_cast<double>(i) / static_cast<double>(bins)));
    if (i == 0) e = lo;
    if (i == bins) e = hi + 1;
    if (!edges.empty() && e <= edges.back()) continue;
    edges.push_back(e);
  }
  if (edges.size() < 2) edges.push_back(edges.back() + 1);
  return edges;
}

inline std::string histogram_svg(const summary_row& row, const std::vector<std::uint64_t>& edges,
                                 const std::vector<std::uint64_t>& counts) {
  const double width = 420, height = 156, left = 44, bottom = 30, top = 18;
  const double plot_w = width - left - 8, plot_h = height - bottom - top;
  std::uint64_t peak = 1;
  for (std::uint64_t c : counts) peak = std::max(peak, c);
  std::string svg;
  char text[512];
  std::snprintf(text, sizeof text,
                "<svg class=\"hist\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">", width,
                height, width, height);
  svg += text;
  const double bar = plot_w / static_cast<double>(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double h = counts[i] ? std::max(1.0, plot_h * static_cast<double>(counts[i]) / static_cast<double>(peak)) : 0;
    std::snprintf(text, sizeof text,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s - %s: %llu</title></rect>",
                  left + bar * static_cast<double>(i) + 0.5, top + plot_h - h, std::max(bar - 1, 0.5), h,
                  readable_time(edges[i]).c_str(), readable_time(edges[i + 1] - 1).c_str(),
                  static_cast<unsigned long long>(counts[i]));
    svg += text;
  }
  std::snprintf(text, sizeof text,
                "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"axis\"/>"
                "<text x=\"%.0f\" y=\"%.0f\" class=\"lbl\">%s</text>"
                "<text x=\"%.0f\" y=\"%.0f\" class=\"lbl\" text-anchor=\"end\">%s</text>"
                "<text x=\"%.0f\" y=\"%.0f\" class=\"lbl\" text-anchor=\"end\">%llu</text>"
                "<text x=\"%.0f\" y=\"%.0f\" class=\"lbl\" text-anchor=\"end\">0</text>",
                left, top + plot_h, width - 8, top + plot_h, left, height - 10, readable_time(row.host.min()).c_str(),
                width - 8, height - 10, readable_time(row.host.max()).c_str(), left - 4, top + 8,
                static_cast<unsigned long long>(peak), left - 4, top + plot_h);
  svg += text;
  // p50 and p99 markers on the log axis.
  const double la = std::log(static_cast<double>(std::max<std::uint64_t>(edges.front(), 1)));
  const double lb = std::log(static_cast<double>(edges.back()));
  for (double p : {50.0, 99.0}) {
    const std::uint64_t v = row.host.percentile(p);
    const double f = lb > la ? (std::log(static_cast<double>(std::max<std::uint64_t>(v, 1))) - la) / (lb - la) : 0;
    const double x = left + plot_w * std::min(std::max(f, 0.0), 1.0);
    // Labels stay inside the plot: anchored at the end near the right
    // edge, at the start near the left; p99 above the plot, p50 below.
    const char* anchor = x > width - 70 ? "end" : x < left + 40 ? "start" : "middle";
    std::snprintf(text, sizeof text,
                  "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" class=\"mark\"/>"
                  "<text x=\"%.1f\" y=\"%.0f\" class=\"lbl mk\" text-anchor=\"%s\">p%.0f %s</text>",
                  x, top, x, top + plot_h, x, p > 90 ? top - 3 : height - 20, anchor, p, readable_time(v).c_str());
    svg += text;
  }
  return svg + "</svg>";
}

}  // namespace detail

namespace detail {

/// The document's head: title and the inline style sheet.
inline std::string report_head(const report_options& options) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + html_escape(options.title) +
       "</title>\n<style>\n"
       "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d2330;background:#fff}\n"
       "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d7dbe3;padding-bottom:4px}\n"
       ".sub{color:#5b6475;margin:0 0 12px}\n"
       "table{border-collapse:collapse;font-variant-numeric:tabular-nums}\n"
       "th,td{padding:3px 10px;border-bottom:1px solid #eceef2;white-space:nowrap}\n"
       "th{background:#f3f5f8;text-align:right;font-weight:600}th.l,td.l{text-align:left}td{text-align:right}\n"
       "tr:hover td{background:#f8fafc}\n"
       ".grid{display:flex;flex-wrap:wrap;gap:16px}.card{border:1px solid #e1e4ea;border-radius:6px;padding:8px 10px}\n"
       ".card h3{font-size:14px;margin:0 0 4px;font-weight:600}\n"
       "svg.hist rect{fill:#4f7cc9}svg .axis{stroke:#8a93a3}svg .mark{stroke:#d9534f;stroke-dasharray:3 2}\n"
       "svg .lbl{font-size:10px;fill:#5b6475}svg .mk{fill:#b52b27}\n"
       ".bar{display:flex;align-items:center;gap:10px;margin:4px 0}.bar .name{width:260px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}\n"
       ".bar .track{width:520px;height:16px;background:#eceef2;border-radius:3px;overflow:hidden}\n"
       ".bar .fill{height:16px;background:#3f9b62}.note{color:#5b6475;font-size:12px}\n"
       "svg.plot{display:block;margin:2px 0}svg.plot .series{fill:none;stroke:#4f7cc9;stroke-width:1.2}\n"
       "pre{font-size:12px;white-space:pre-wrap}\n"
       "</style></head><body>\n";
  return h;
}

/// The summary table (the summary's columns, avg/iter and % iter with --per).
inline std::string report_table(const summary_result& s, const std::string& label) {
  std::string h;
  h += "<h2>Summary by " + html_escape(label) + "</h2>\n<table id=\"summary\"><thead><tr>";
  for (const auto& c : summary_columns()) {
    const bool key = c.id == summary_column::key;
    h += key ? "<th class=\"l\">" + html_escape(label) + "</th>" : "<th>" + std::string(c.header) + "</th>";
    if (key && s.by == group_by::name) h += "<th class=\"l\">category</th>";
  }
  if (!s.per.empty()) h += "<th>avg/iter</th><th>% iter</th>";
  h += "</tr></thead><tbody>\n";
  for (const summary_row& r : s.rows) {
    h += "<tr>";
    for (const auto& c : summary_columns()) {
      if (c.id == summary_column::key) {
        h += "<td class=\"l\">" + html_escape(r.key) + "</td>";
        if (s.by == group_by::name) h += "<td class=\"l\">" + html_escape(r.category) + "</td>";
      } else if (c.id == summary_column::calls) {
        h += "<td>" + std::to_string(r.host.count()) + "</td>";
      } else if (c.id == summary_column::share) {
        h += "<td>" + (r.waiting() ? std::string("wait") : detail::percent_text(r.share)) + "</td>";
      } else {
        h += "<td>" + readable_time(detail::column_ns(r, c.id)) + "</td>";
      }
    }
    if (!s.per.empty())
      h += "<td>" + readable_time(r.per_iteration_ns) + "</td><td>" + detail::percent_text(r.iteration_share) + "</td>";
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";
  if (s.rows_before_top > s.rows.size())
    h += "<p class=\"note\">" + std::to_string(s.rows.size()) + " of " + std::to_string(s.rows_before_top) +
         " rows shown (--top " + std::to_string(s.rows_before_top) + " shows them all).</p>\n";

  return h;
}

/// The iterations table (marks, spans and flows); "" without iterations.
inline std::string report_iterations(const summary_result& s) {
  char text[512];
  std::string h;
  if (!s.iterations.empty()) {
    // "from" tells a "frame" mark row from a "frame" flow row.
    h += "<h2>Iterations</h2>\n<table id=\"iterations\"><thead><tr><th class=\"l\">iteration</th>"
         "<th class=\"l\">from</th><th>count</th>"
         "<th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>per second</th></tr></thead><tbody>\n";
    for (const iteration_row& it : s.iterations) {
      if (it.latency.count() == 0) {  // as the table: flows whose ids all had one step have no latency
        h += "<tr><td class=\"l\">" + html_escape(it.name) + "</td><td class=\"l\">" + it.from() +
             "</td><td>0</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td></tr>\n";
        continue;
      }
      std::snprintf(text, sizeof text, "<td>%.2f</td>", it.per_second());
      h += "<tr><td class=\"l\">" + html_escape(it.name) + "</td><td class=\"l\">" + it.from() + "</td><td>" +
           std::to_string(it.latency.count()) +
           "</td><td>" + readable_time(it.latency.mean()) + "</td><td>" + readable_time(it.latency.percentile(50)) +
           "</td><td>" + readable_time(it.latency.percentile(90)) + "</td><td>" +
           readable_time(it.latency.percentile(99)) + "</td><td>" + readable_time(it.latency.max()) + "</td>" + text +
           "</tr>\n";
    }
    h += "</tbody></table>\n";
  }

  return h;
}

/// A latency histogram per row (the first options.histograms rows), and
/// the same data as JSON in `histograms_json`.
inline std::string report_histograms(const summary_result& s, const report_options& options, std::string& histograms_json) {
  std::string h;
  histograms_json = "[";
  h += "<h2>Latency histograms</h2>\n<div class=\"grid\">\n";
  for (std::size_t i = 0; i < s.rows.size() && i < options.histograms; ++i) {
    const summary_row& r = s.rows[i];
    const auto edges = detail::log_edges(r.host.min(), r.host.max(), options.bins);
    const auto counts = r.host.histogram(edges);
    h += "<div class=\"card\"><h3>" + html_escape(r.key) + "</h3>" + detail::histogram_svg(r, edges, counts) + "</div>\n";
    histograms_json += i ? ",{\"key\":" : "{\"key\":";
    append_json_string(histograms_json, r.key);
    histograms_json += ",\"edges_ns\":[";
    for (std::size_t k = 0; k < edges.size(); ++k) histograms_json += (k ? "," : "") + std::to_string(edges[k]);
    histograms_json += "],\"counts\":[";
    for (std::size_t k = 0; k < counts.size(); ++k) histograms_json += (k ? "," : "") + std::to_string(counts[k]);
    histograms_json += "]}";
  }
  histograms_json += "]";
  h += "</div>\n<p class=\"note\">Log-spaced bins from min to max; dashed lines: p50 and p99.</p>\n";

  return h;
}

/// A busy bar per thread, and what busy means.
inline std::string report_threads(const summary_result& s) {
  char text[512];
  std::string h;
  h += "<h2>Thread utilisation</h2>\n<div id=\"threads\">\n";
  for (const thread_usage& t : s.threads_usage) {
    const double u = std::min(t.utilisation(), 1.0);
    const double waited = t.wall_ns ? std::min(static_cast<double>(t.wait_ns) / static_cast<double>(t.wall_ns), 1.0) : 0;
    std::snprintf(text, sizeof text,
                  "<div class=\"track\"><div class=\"fill\" style=\"width:%.1f%%\"></div></div><span>%.1f %% busy"
                  "%s</span>",
                  u * 100, u * 100, waited > 0 ? (", " + detail::percent_text(waited) + " waiting").c_str() : "");
    h += "<div class=\"bar\"><span class=\"name\" title=\"" + html_escape(t.label) + "\">" + html_escape(t.label) +
         "</span>" + text + "</div>\n";
  }
  h += "</div>\n<p class=\"note\">Busy = time inside top-level spans (spans no other span on the thread encloses) "
       "minus the self time of waiting spans (" + html_escape(s.wait_rule.empty() ? "none" : s.wait_rule) +
       "), over the dump's duration.</p>\n";
  return h;
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API std::string report_html(const summary_result& s, const report_options& options) {
  using detail::html_escape;
  using detail::readable_time;
  std::string h = detail::report_head(options);
  char text[512];
  h += "<h1>" + html_escape(options.title) + "</h1>\n";
  std::snprintf(text, sizeof text, "%llu spans on %zu thread(s) over %s", static_cast<unsigned long long>(s.spans_read),
                s.threads, readable_time(s.wall_ns).c_str());
  h += "<p class=\"sub\">" + html_escape(options.source) + " &middot; " + text + "</p>\n";
  // What the numbers are over: grouping, sort, phase, and each denominator.
  const std::string label = detail::group_label(s);
  h += "<p class=\"sub\" id=\"scope\">by " + html_escape(label) + " &middot; sorted by " +
       html_escape(detail::sort_label(s)) + " &middot; phase: " + (s.phase.empty() ? "all" : html_escape(s.phase)) +
       "</p>\n<p class=\"note\" id=\"share\">" + html_escape(detail::share_text(s)) + "</p>\n";
  if (!s.per.empty()) h += "<p class=\"note\" id=\"per\">" + html_escape(detail::per_text(s)) + "</p>\n";
  h += detail::report_table(s, label);
  h += detail::report_iterations(s);
  std::string histograms_json;
  h += detail::report_histograms(s, options, histograms_json);
  h += detail::report_threads(s);
  h += options.sections;
  for (const std::string& n : s.notes) h += "<p class=\"note\">" + html_escape(n) + "</p>\n";

  std::string data = summary_json(s, options.source);
  if (!data.empty() && data.back() == '\n') data.pop_back();
  if (!data.empty() && data.back() == '}') data.pop_back();
  data += ",\"histograms\":" + histograms_json + "}";
  h += "<script type=\"application/json\" id=\"edgetrace-data\">" + detail::script_safe(data) + "</script>\n";
  h += "</body></html>\n";
  return h;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
