// SPDX-License-Identifier: MIT
// Per-name comparison of two summaries (`edgetrace diff BASE NEW`): what an optimisation changed, by impact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "summary.hpp"

namespace edgetrace {
inline namespace v1 {
namespace reader {

/// One name in either run. Missing on one side: that side's fields are 0
/// and `in_base`/`in_new` say so.
struct diff_row {
  std::string key;
  bool in_base = false, in_new = false;
  std::uint64_t calls_base = 0, calls_new = 0;
  std::uint64_t mean_base = 0, mean_new = 0;
  std::uint64_t p50_base = 0, p50_new = 0;
  std::uint64_t p99_base = 0, p99_new = 0;
  std::uint64_t total_base = 0, total_new = 0;
  std::int64_t total_delta() const { return static_cast<std::int64_t>(total_new) - static_cast<std::int64_t>(total_base); }
};

/// Joins two summaries by row key; sorted by impact (|total change|, then
/// |mean change|, then key).
inline std::vector<diff_row> diff_summaries(const summary_result& base, const summary_result& next) {
  std::map<std::string, diff_row> rows;
  for (const summary_row& r : base.rows) {
    diff_row& d = rows[r.key];
    d.key = r.key;
    d.in_base = true;
    d.calls_base = r.host.count();
    d.mean_base = r.host.mean();
    d.p50_base = r.host.percentile(50);
    d.p99_base = r.host.percentile(99);
    d.total_base = r.host.total();
  }
  for (const summary_row& r : next.rows) {
    diff_row& d = rows[r.key];
    d.key = r.key;
    d.in_new = true;
    d.calls_new = r.host.count();
    d.mean_new = r.host.mean();
    d.p50_new = r.host.percentile(50);
    d.p99_new = r.host.percentile(99);
    d.total_new = r.host.total();
  }
  std::vector<diff_row> out;
  for (auto& entry : rows) out.push_back(entry.second);
  auto magnitude = [](std::int64_t v) { return v < 0 ? -v : v; };
  std::stable_sort(out.begin(), out.end(), [&](const diff_row& a, const diff_row& b) {
    const std::int64_t ta = magnitude(a.total_delta()), tb = magnitude(b.total_delta());
    if (ta != tb) return ta > tb;
    const std::int64_t ma = magnitude(static_cast<std::int64_t>(a.mean_new) - static_cast<std::int64_t>(a.mean_base));
    const std::int64_t mb = magnitude(static_cast<std::int64_t>(b.mean_new) - static_cast<std::int64_t>(b.mean_base));
    if (ma != mb) return ma > mb;
    return a.key < b.key;
  });
  return out;
}

namespace detail {

inline std::string signed_time(std::uint64_t base, std::uint64_t next) {
  if (next == base) return "0";
  return (next > base ? "+" : "-") + readable_time(next > base ? next - base : base - next);
}

inline std::string percent_change(std::uint64_t base, std::uint64_t next) {
  if (base == next) return "0.0 %";
  if (base == 0) return "new";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", (static_cast<double>(next) - static_cast<double>(base)) * 100.0 /
                                                   static_cast<double>(base));
  return text;
}

inline std::string signed_count(std::uint64_t base, std::uint64_t next) {
  if (next == base) return "0";
  return (next > base ? "+" : "-") + std::to_string(next > base ? next - base : base - next);
}

}  // namespace detail

/// Aligned table: new values with their change from base.
inline std::string diff_table(const std::vector<diff_row>& rows, const std::string& base, const std::string& next,
                              std::size_t top = 0) {
  std::string out = "base: " + base + "\nnew:  " + next + "\n\n";
  std::vector<std::vector<std::string>> cells = {{"name", "calls", "change", "mean", "change", "p50", "change",
                                                  "p99", "change", "total", "change", "total %"}};
  std::size_t n = 0;
  for (const diff_row& d : rows) {
    if (top && n++ == top) break;
    std::string key = d.key.size() > 48 ? d.key.substr(0, 45) + "..." : d.key;
    if (!d.in_base) key += " (new)";
    if (!d.in_new) key += " (gone)";
    cells.push_back({key, std::to_string(d.calls_new), detail::signed_count(d.calls_base, d.calls_new),
                     detail::readable_time(d.mean_new), detail::signed_time(d.mean_base, d.mean_new),
                     detail::readable_time(d.p50_new), detail::signed_time(d.p50_base, d.p50_new),
                     detail::readable_time(d.p99_new), detail::signed_time(d.p99_base, d.p99_new),
                     detail::readable_time(d.total_new), detail::signed_time(d.total_base, d.total_new),
                     detail::percent_change(d.total_base, d.total_new)});
  }
  if (cells.size() == 1) return out + "(no spans in either dump)\n";
  return out + detail::render_table(cells, 1) + "\nsorted by impact: the size of the change in total time\n";
}

/// CSV: base and new values and signed deltas, integer ns.
inline std::string diff_csv(const std::vector<diff_row>& rows, std::size_t top = 0) {
  std::string out =
      "name,in_base,in_new,calls_base,calls_new,calls_delta,mean_base_ns,mean_new_ns,mean_delta_ns,p50_base_ns,"
      "p50_new_ns,p50_delta_ns,p99_base_ns,p99_new_ns,p99_delta_ns,total_base_ns,total_new_ns,total_delta_ns\n";
  auto delta = [](std::uint64_t a, std::uint64_t b) {
    return std::to_string(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(a));
  };
  std::size_t n = 0;
  for (const diff_row& d : rows) {
    if (top && n++ == top) break;
    out += detail::csv_field(d.key) + "," + (d.in_base ? "1" : "0") + "," + (d.in_new ? "1" : "0") + "," +
           std::to_string(d.calls_base) + "," + std::to_string(d.calls_new) + "," + delta(d.calls_base, d.calls_new) +
           "," + std::to_string(d.mean_base) + "," + std::to_string(d.mean_new) + "," + delta(d.mean_base, d.mean_new) +
           "," + std::to_string(d.p50_base) + "," + std::to_string(d.p50_new) + "," + delta(d.p50_base, d.p50_new) +
           "," + std::to_string(d.p99_base) + "," + std::to_string(d.p99_new) + "," + delta(d.p99_base, d.p99_new) +
           "," + std::to_string(d.total_base) + "," + std::to_string(d.total_new) + "," +
           delta(d.total_base, d.total_new) + "\n";
  }
  return out;
}

/// JSON: {"base":..., "new":..., "rows":[{...}]} with the CSV's fields.
inline std::string diff_json(const std::vector<diff_row>& rows, const std::string& base, const std::string& next,
                             std::size_t top = 0) {
  std::string out = "{\"base\":";
  append_json_string(out, base);
  out += ",\"new\":";
  append_json_string(out, next);
  out += ",\"rows\":[";
  auto delta = [](std::uint64_t a, std::uint64_t b) {
    return std::to_string(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(a));
  };
  std::size_t n = 0;
  for (const diff_row& d : rows) {
    if (top && n == top) break;
    out += n++ ? ",\n{\"name\":" : "\n{\"name\":";
    append_json_string(out, d.key);
    out += std::string(",\"in_base\":") + (d.in_base ? "true" : "false") + ",\"in_new\":" + (d.in_new ? "true" : "false");
    out += ",\"calls_base\":" + std::to_string(d.calls_base) + ",\"calls_new\":" + std::to_string(d.calls_new) +
           ",\"calls_delta\":" + delta(d.calls_base, d.calls_new);
    out += ",\"mean_base_ns\":" + std::to_string(d.mean_base) + ",\"mean_new_ns\":" + std::to_string(d.mean_new) +
           ",\"mean_delta_ns\":" + delta(d.mean_base, d.mean_new);
    out += ",\"p50_base_ns\":" + std::to_string(d.p50_base) + ",\"p50_new_ns\":" + std::to_string(d.p50_new) +
           ",\"p50_delta_ns\":" + delta(d.p50_base, d.p50_new);
    out += ",\"p99_base_ns\":" + std::to_string(d.p99_base) + ",\"p99_new_ns\":" + std::to_string(d.p99_new) +
           ",\"p99_delta_ns\":" + delta(d.p99_base, d.p99_new);
    out += ",\"total_base_ns\":" + std::to_string(d.total_base) + ",\"total_new_ns\":" + std::to_string(d.total_new) +
           ",\"total_delta_ns\":" + delta(d.total_base, d.total_new) + "}";
  }
  return out + "]}\n";
}

}  // namespace reader
}  // namespace v1
}  // namespace edgetrace
