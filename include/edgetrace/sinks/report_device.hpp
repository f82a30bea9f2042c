// SPDX-License-Identifier: MIT
// The report's device section (`edgetrace report`): each device track plotted over the run, under the iteration latency (--per NAME), and the slowest iterations with what differed in them.
//
// Plots are inline SVG polylines on one time axis (the run's first to last
// sample or iteration), so a slow stretch of iterations lines up with the
// clock, the wait or the temperature under it. A series longer than the
// plot is wide keeps each pixel's lowest and highest value.
#pragma once

#include <cstddef>
#include <string>

#include <edgetrace/decode/dump_reader.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// The device section of a report for dump `r`: with `per` (an iteration
/// span or mark), the iteration latency over the run and its slowest
/// iterations explained (`slowest` of them; 0: those at or above p99, at
/// most 10); then every device track over the same time axis. Empty when
/// the dump has no device samples. False with `error` set when `per` names
/// nothing in the dump or reading fails.
EDGETRACE_DETAIL_READER_API bool report_device_html(dump_reader& r, const std::string& per, std::size_t slowest,
                                                    std::string& html, std::string& error);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include <edgetrace/decode/device.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/slow_iterations.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// A plot's size and margins (SVG units).
struct plot_geometry {
  static constexpr double width = 760, height = 78, left = 64, right = 8, top = 16, bottom = 14;
  static constexpr double plot_w = width - left - right, plot_h = height - top - bottom;
  /// The pixel column of time `ns` on an axis from t0 to t1.
  static std::size_t column(std::int64_t ns, std::int64_t t0, std::int64_t t1) {
    const double span = t1 > t0 ? static_cast<double>(t1) - static_cast<double>(t0) : 1;
    const double x = plot_w * std::min(std::max((static_cast<double>(ns) - static_cast<double>(t0)) / span, 0.0), 1.0);
    return static_cast<std::size_t>(x);
  }
};

/// One line plot: `points` (ns, value) over [t0, t1], labelled, with its
/// range and the axis's ends.
inline std::string line_plot_svg(const std::string& label, const std::vector<device_series::point>& points,
                                 std::int64_t t0, std::int64_t t1) {
  using g = plot_geometry;
  constexpr double width = g::width, height = g::height, left = g::left, right = g::right, top = g::top;
  const double plot_w = g::plot_w, plot_h = g::plot_h;
  double low = 0, high = 0;
  for (const device_series::point& p : points) {
    low = std::min(low, p.value);
    high = std::max(high, p.value);
  }
  if (high <= low) high = low + 1;
  const auto y_of = [&](double v) { return top + plot_h * (1 - (v - low) / (high - low)); };
  // Each pixel column keeps its lowest and highest value, in time order.
  std::vector<std::pair<double, double>> drawn;
  std::vector<double> lo(static_cast<std::size_t>(plot_w) + 1, std::numeric_limits<double>::quiet_NaN()), hi = lo;
  for (const device_series::point& p : points) {
    const std::size_t column = g::column(p.ns, t0, t1);
    if (std::isnan(lo[column]) || p.value < lo[column]) lo[column] = p.value;
    if (std::isnan(hi[column]) || p.value > hi[column]) hi[column] = p.value;
  }
  std::string line;
  char text[512];
  for (std::size_t c = 0; c < lo.size(); ++c) {
    if (std::isnan(lo[c])) continue;
    for (double v : {lo[c], hi[c]}) {
      std::snprintf(text, sizeof text, "%.1f,%.1f ", left + static_cast<double>(c), y_of(v));
      line += text;
      if (lo[c] == hi[c]) break;
    }
  }
  std::string svg;
  std::snprintf(text, sizeof text, "<svg class=\"plot\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">",
                width, height, width, height);
  svg += text;
  svg += "<text class=\"lbl\" x=\"" + std::to_string(static_cast<int>(left)) + "\" y=\"11\">" + html_escape(label) + "</text>";
  const auto number = [](double v) {
    char n[32];
    std::snprintf(n, sizeof n, std::fabs(v) >= 1000 ? "%.0f" : "%.4g", v);
    return std::string(n);
  };
  std::snprintf(text, sizeof text,
                "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
                "<text class=\"lbl\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>"
                "<text class=\"lbl\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>",
                left, top + plot_h, width - right, top + plot_h, left - 4, top + 8, number(high).c_str(), left - 4,
                top + plot_h, number(low).c_str());
  svg += text;
  svg += "<polyline class=\"series\" points=\"" + line + "\"/></svg>";
  return svg;
}

/// Where a quantity's plot goes in the report (lower first).
inline int plot_rank(format::device_quantity q) noexcept {
  using Q = format::device_quantity;
  switch (q) {
    case Q::thread_wait_ns_total: return 0;
    case Q::thread_cpu_ns_total: return 1;
    case Q::thread_involuntary_total: return 2;
    case Q::others_busy_permille: case Q::steal_permille: return 3;
    case Q::cpu_khz: return 4;
    case Q::cpu_busy_permille: return 5;
    case Q::throttle_total: case Q::cgroup_throttled_total: case Q::cgroup_throttled_us_total: return 6;
    case Q::temperature_mc: return 7;
    case Q::gpu_hz: case Q::gpu_load_permille: case Q::emc_hz: return 8;
    case Q::power_mw: return 9;
    default: return 10;
  }
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool report_device_html(dump_reader& r, const std::string& per, std::size_t slowest,
                                                    std::string& html, std::string& error) {
  using detail::html_escape;
  html.clear();
  if (!r.metadata_read() && !r.read_metadata()) {
    error = r.error();
    return false;
  }
  std::vector<std::pair<const writer_info*, std::vector<device_series>>> all;
  std::int64_t t0 = std::numeric_limits<std::int64_t>::max(), t1 = std::numeric_limits<std::int64_t>::min();
  for (const writer_info* w : r.writers_in_order()) {
    std::vector<device_series> series = device_series_of(*w);
    // What most often explains a slow stretch first: the threads' waits,
    // other processes, clocks, temperatures; memory and power last.
    std::stable_sort(series.begin(), series.end(), [](const device_series& a, const device_series& b) {
      return detail::plot_rank(a.track->quantity) < detail::plot_rank(b.track->quantity);
    });
    for (const device_series& s : series)
      for (const device_series::point& p : s.points) {
        t0 = std::min(t0, p.ns);
        t1 = std::max(t1, p.ns);
      }
    if (!series.empty()) all.emplace_back(w, std::move(series));
  }
  if (all.empty()) return true;
  html += "<h2>Device</h2>\n";
  if (!per.empty()) {
    iteration_windows windows;
    if (!windows.collect(r, per, [](const thread_info*, std::int64_t, std::int64_t) { return true; }, error)) return false;
    {
      // Each pixel column keeps its shortest and longest iteration only (the
      // plot draws no more): memory by the plot's width, not the run's.
      windows.for_each([&](const thread_info*, const iteration_windows::window& w) {
        t0 = std::min(t0, w.first);
        t1 = std::max(t1, w.first);
      });
      std::vector<device_series::point> lo(static_cast<std::size_t>(detail::plot_geometry::plot_w) + 1,
                                           device_series::point{0, std::numeric_limits<double>::quiet_NaN()});
      std::vector<device_series::point> hi = lo;
      windows.for_each([&](const thread_info*, const iteration_windows::window& w) {
        const double ms = static_cast<double>(w.second - w.first) / 1e6;
        const std::size_t c = detail::plot_geometry::column(w.first, t0, t1);
        if (std::isnan(lo[c].value) || ms < lo[c].value) lo[c] = {w.first, ms};
        if (std::isnan(hi[c].value) || ms > hi[c].value) hi[c] = {w.first, ms};
      });
      std::vector<device_series::point> latency;
      for (std::size_t c = 0; c < lo.size(); ++c)
        if (!std::isnan(lo[c].value)) {
          latency.push_back(lo[c]);
          if (hi[c].ns != lo[c].ns || hi[c].value != lo[c].value) latency.push_back(hi[c]);
        }
      std::sort(latency.begin(), latency.end(), [](const auto& a, const auto& b) { return a.ns < b.ns; });
      html += "<div class=\"plots\">" + detail::line_plot_svg("iteration \"" + per + "\" (ms)", latency, t0, t1) + "</div>\n";
    }
    slow_iterations_result slow;
    if (!explain_slow_iterations(r, windows, per, slowest, slow, error)) return false;
    html += "<pre id=\"slowest\">" + html_escape(slow_iterations_text(slow)) + "</pre>\n";
  }
  for (const auto& entry : all) {
    if (all.size() > 1) html += "<h3>" + html_escape(entry.first->label()) + "</h3>\n";
    html += "<div class=\"plots\">";
    for (const device_series& s : entry.second) html += detail::line_plot_svg(s.label, s.points, t0, t1);
    html += "</div>\n";
  }
  html += "<p class=\"note\">Sampled by the flusher every " +
          html_escape(detail::format_duration(all.front().first->device.period_us * 1000)) +
          " (EDGETRACE_SAMPLE_MS); totals are shown as their rate between samples (docs/ANALYSIS.md, \"Why was it "
          "slow?\").</p>\n";
  return true;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
