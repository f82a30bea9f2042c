// SPDX-License-Identifier: MIT
// Per-name comparison of two summaries (`edgetrace diff BASE... [--vs] NEW...`): what an optimisation changed, by impact, and whether it beats run-to-run noise.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <edgetrace/sinks/summary/summary.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
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
  /// Repeated runs (add_run_noise): how many runs of each side had this
  /// row, and the larger of the two sides' spreads (max - min) of the
  /// per-run mean. Known only when a side had at least two runs with it.
  std::size_t runs_base = 0, runs_new = 0;
  bool noise_known = false;
  std::uint64_t noise = 0;
  std::int64_t total_delta() const { return static_cast<std::int64_t>(total_new) - static_cast<std::int64_t>(total_base); }
  std::uint64_t mean_change() const { return mean_new > mean_base ? mean_new - mean_base : mean_base - mean_new; }
  /// The mean moved no more than runs of one side move among themselves.
  bool within_noise() const { return noise_known && mean_change() <= noise; }
};

namespace detail {

/// The fields of one side (base or new) of a diff_row.
struct diff_side {
  bool diff_row::*in;
  std::uint64_t diff_row::*calls;
  std::uint64_t diff_row::*mean;
  std::uint64_t diff_row::*p50;
  std::uint64_t diff_row::*p99;
  std::uint64_t diff_row::*total;
};

/// Fills `side`'s fields of the rows from one summary's rows.
inline void add_diff_side(std::map<std::string, diff_row>& rows, const summary_result& summary, const diff_side& side) {
  for (const summary_row& r : summary.rows) {
    diff_row& d = rows[r.key];
    d.key = r.key;
    d.*side.in = true;
    d.*side.calls = r.host.count();
    d.*side.mean = r.host.mean();
    d.*side.p50 = r.host.percentile(50);
    d.*side.p99 = r.host.percentile(99);
    d.*side.total = r.host.total();
  }
}

}  // namespace detail

/// Joins two summaries by row key; sorted by impact (|total change|, then
/// |mean change|, then key).
inline std::vector<diff_row> diff_summaries(const summary_result& base, const summary_result& next) {
  std::map<std::string, diff_row> rows;
  detail::add_diff_side(rows, base,
                        {&diff_row::in_base, &diff_row::calls_base, &diff_row::mean_base, &diff_row::p50_base,
                         &diff_row::p99_base, &diff_row::total_base});
  detail::add_diff_side(rows, next,
                        {&diff_row::in_new, &diff_row::calls_new, &diff_row::mean_new, &diff_row::p50_new,
                         &diff_row::p99_new, &diff_row::total_new});
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

/// Fills each row's run counts and noise from one summary per run of each
/// side (same options as the pooled summaries diff_summaries compared).
/// noise = max(spread(base run means), spread(new run means)), spread =
/// max - min over the runs that have the row; a side with one such run
/// contributes nothing. docs/ANALYSIS.md states why this is the bar.
inline void add_run_noise(std::vector<diff_row>& rows, const std::vector<summary_result>& base_runs,
                          const std::vector<summary_result>& new_runs) {
  auto means_of = [](const std::vector<summary_result>& runs) {
    std::map<std::string, std::vector<std::uint64_t>> means;
    for (const summary_result& run : runs)
      for (const summary_row& r : run.rows)
        if (r.host.count()) means[r.key].push_back(r.host.mean());
    return means;
  };
  const auto base = means_of(base_runs), next = means_of(new_runs);
  auto spread = [](const std::map<std::string, std::vector<std::uint64_t>>& means, const std::string& key,
                   std::size_t& runs, bool& known, std::uint64_t& noise) {
    const auto it = means.find(key);
    if (it == means.end()) return;
    runs = it->second.size();
    if (runs < 2) return;
    const auto [lo, hi] = std::minmax_element(it->second.begin(), it->second.end());
    known = true;
    noise = std::max(noise, *hi - *lo);
  };
  for (diff_row& d : rows) {
    spread(base, d.key, d.runs_base, d.noise_known, d.noise);
    spread(next, d.key, d.runs_new, d.noise_known, d.noise);
  }
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
/// `base` and `next` name the dumps of each side; `key_label` heads the
/// first column ("name", "arg:op", ...). With repeated runs (any row's
/// noise known) two columns say how the mean change compares with noise.
inline std::string diff_table(const std::vector<diff_row>& rows, const std::string& base, const std::string& next,
                              std::size_t top = 0, const std::string& key_label = "name") {
  std::string out = "base: " + base + "\nnew:  " + next + "\n\n";
  const bool with_noise = std::any_of(rows.begin(), rows.end(), [](const diff_row& d) { return d.noise_known; });
  std::vector<std::vector<std::string>> cells = {{key_label, "calls", "change", "mean", "change", "p50", "change",
                                                  "p99", "change", "total", "change", "total %"}};
  if (with_noise) cells[0].insert(cells[0].end(), {"noise", "mean change"});
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
    if (with_noise) {
      cells.back().push_back(d.noise_known ? "±" + detail::readable_time(d.noise) : "-");
      cells.back().push_back(!d.noise_known ? "-" : d.within_noise() ? "within noise" : "beyond noise");
    }
  }
  if (cells.size() == 1) return out + "(no spans in either dump)\n";
  out += detail::render_table(cells, 1) + "\nsorted by impact: the size of the change in total time\n";
  if (with_noise)
    out += "noise: the larger run-to-run spread (max - min) of the per-run mean, over each side's runs;\n"
           "a mean change no bigger than that is within noise\n";
  return out;
}

/// CSV: base and new values and signed deltas, integer ns.
inline std::string diff_csv(const std::vector<diff_row>& rows, std::size_t top = 0) {
  std::string out =
      "name,in_base,in_new,calls_base,calls_new,calls_delta,mean_base_ns,mean_new_ns,mean_delta_ns,p50_base_ns,"
      "p50_new_ns,p50_delta_ns,p99_base_ns,p99_new_ns,p99_delta_ns,total_base_ns,total_new_ns,total_delta_ns,"
      "runs_base,runs_new,noise_ns,within_noise\n";
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
           delta(d.total_base, d.total_new) + "," + std::to_string(d.runs_base) + "," + std::to_string(d.runs_new) +
           "," + (d.noise_known ? std::to_string(d.noise) : "") + "," +
           (d.noise_known ? (d.within_noise() ? "1" : "0") : "") + "\n";
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
           ",\"total_delta_ns\":" + delta(d.total_base, d.total_new);
    out += ",\"runs_base\":" + std::to_string(d.runs_base) + ",\"runs_new\":" + std::to_string(d.runs_new) +
           ",\"noise_ns\":" + (d.noise_known ? std::to_string(d.noise) : "null") +
           ",\"within_noise\":" + (d.noise_known ? (d.within_noise() ? "true" : "false") : "null") + "}";
  }
  return out + "]}\n";
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
