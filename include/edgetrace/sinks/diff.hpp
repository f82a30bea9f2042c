// SPDX-License-Identifier: MIT
// Per-name comparison of two summaries (`edgetrace diff BASE... [--vs] NEW...`): what an optimisation changed, by impact, and whether it beats run-to-run noise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <edgetrace/sinks/summary/model.hpp>

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
  std::uint64_t max_base = 0, max_new = 0;
  std::uint64_t total_base = 0, total_new = 0;
  /// With --per: the row's total over the iterations' summed duration.
  double iter_share_base = 0, iter_share_new = 0;
  /// Repeated runs (add_run_noise): how many runs of each side had this
  /// row, and the larger of the two sides' spreads (max - min) of the
  /// per-run mean. Known only when a side had at least two runs with it.
  std::size_t runs_base = 0, runs_new = 0;
  bool noise_known = false;
  std::uint64_t noise = 0;
  /// The row is the --per iteration itself (diff_iteration): its verdict
  /// compares the p50, not the mean.
  bool iteration = false;
  /// A waiting span on either side (summary's --wait, ^wait by default): it
  /// grows when what it waits for slows, so it ranks after the work.
  bool waiting = false;
  std::int64_t total_delta() const { return static_cast<std::int64_t>(total_new) - static_cast<std::int64_t>(total_base); }
  std::uint64_t mean_change() const { return mean_new > mean_base ? mean_new - mean_base : mean_base - mean_new; }
  std::uint64_t p50_change() const { return p50_new > p50_base ? p50_new - p50_base : p50_base - p50_new; }
  /// The mean (the iteration: the p50) moved no more than runs of one side
  /// move among themselves.
  bool within_noise() const { return noise_known && (iteration ? p50_change() : mean_change()) <= noise; }
};

/// Joins two summaries by row key; sorted by impact (|total change|, then
/// |mean change|, then key), the work rows before the waiting ones.
EDGETRACE_DETAIL_READER_API std::vector<diff_row> diff_summaries(const summary_result& base,
                                                                 const summary_result& next);

/// Fills each row's run counts and noise from one summary per run of each
/// side (same options as the pooled summaries diff_summaries compared).
/// noise = max(spread(base run means), spread(new run means)), spread =
/// max - min over the runs that have the row; a side with one such run
/// contributes nothing. docs/ANALYSIS.md states why this is the bar.
EDGETRACE_DETAIL_READER_API void add_run_noise(std::vector<diff_row>& rows,
                                               const std::vector<summary_result>& base_runs,
                                               const std::vector<summary_result>& new_runs);

/// --per NAME: the iteration itself on each side, as a row (key NAME,
/// calls = iterations, total = their summed duration, every latency
/// figure from the iteration's own durations; iteration = true). Its noise
/// verdict compares the p50: add_iteration_noise. An empty key when the
/// summaries were built without --per.
EDGETRACE_DETAIL_READER_API diff_row diff_iteration(const summary_result& base, const summary_result& next);

/// The iteration's noise: the larger spread of the per-run p50 of its
/// durations over each side's runs (the rows use the mean; an iteration's
/// p50 is what a latency budget is written against, and one slow outlier
/// moves its mean).
EDGETRACE_DETAIL_READER_API void add_iteration_noise(diff_row& iteration,
                                                     const std::vector<summary_result>& base_runs,
                                                     const std::vector<summary_result>& new_runs);

/// Aligned table: new values with their change from base.
/// `base` and `next` name the dumps of each side; `key_label` heads the
/// first column ("name", "arg:op", ...). With repeated runs (any row's
/// noise known) two columns say how the mean change compares with noise.
/// With `iteration` (diff_iteration of summaries built with --per) the
/// iteration's own latency comes first, and each row gains its % iter.
EDGETRACE_DETAIL_READER_API std::string diff_table(const std::vector<diff_row>& rows, const std::string& base,
                                                   const std::string& next, std::size_t top = 0,
                                                   const std::string& key_label = "name",
                                                   const diff_row* iteration = nullptr,
                                                   bool iteration_from_marks = false);

/// CSV: base and new values and signed deltas, integer ns. With
/// `iteration` (--per), its row comes first (kind "iteration", verdict on
/// the p50) and every row has its iter_share on each side.
EDGETRACE_DETAIL_READER_API std::string diff_csv(const std::vector<diff_row>& rows, std::size_t top = 0,
                                                 const diff_row* iteration = nullptr);

/// JSON: {"base":..., "new":..., ["iteration":{...},] "rows":[{...}]}
/// with the CSV's fields.
EDGETRACE_DETAIL_READER_API std::string diff_json(const std::vector<diff_row>& rows, const std::string& base,
                                                  const std::string& next, std::size_t top = 0,
                                                  const diff_row* iteration = nullptr);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <edgetrace/sinks/summary/summary.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// The fields of one side (base or new) of a diff_row.
struct diff_side {
  bool diff_row::*in;
  std::uint64_t diff_row::*calls;
  std::uint64_t diff_row::*mean;
  std::uint64_t diff_row::*p50;
  std::uint64_t diff_row::*p99;
  std::uint64_t diff_row::*max;
  std::uint64_t diff_row::*total;
  double diff_row::*iter_share;
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
    d.*side.max = r.host.max();
    d.*side.total = r.host.total();
    d.*side.iter_share = r.iteration_share;
    d.waiting = d.waiting || r.waiting();
  }
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API std::vector<diff_row> diff_summaries(const summary_result& base,
                                                                 const summary_result& next) {
  std::map<std::string, diff_row> rows;
  detail::add_diff_side(rows, base,
                        {&diff_row::in_base, &diff_row::calls_base, &diff_row::mean_base, &diff_row::p50_base,
                         &diff_row::p99_base, &diff_row::max_base, &diff_row::total_base, &diff_row::iter_share_base});
  detail::add_diff_side(rows, next,
                        {&diff_row::in_new, &diff_row::calls_new, &diff_row::mean_new, &diff_row::p50_new,
                         &diff_row::p99_new, &diff_row::max_new, &diff_row::total_new, &diff_row::iter_share_new});
  std::vector<diff_row> out;
  for (auto& entry : rows) out.push_back(entry.second);
  auto magnitude = [](std::int64_t v) { return v < 0 ? -v : v; };
  std::stable_sort(out.begin(), out.end(), [&](const diff_row& a, const diff_row& b) {
    if (a.waiting != b.waiting) return b.waiting;
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

/// One value per run that has the row (its key), over one side's runs.
template <class Value>
std::map<std::string, std::vector<std::uint64_t>> per_run_values(const std::vector<summary_result>& runs, Value&& value) {
  std::map<std::string, std::vector<std::uint64_t>> values;
  for (const summary_result& run : runs)
    for (const summary_row& r : run.rows)
      if (r.host.count()) values[r.key].push_back(value(r.host));
  return values;
}

/// Adds one side's runs of `key` to d: their number, and their spread
/// (max - min) to d's noise when there are at least two.
inline void add_spread(const std::map<std::string, std::vector<std::uint64_t>>& values, const std::string& key,
                       std::size_t& runs, diff_row& d) {
  const auto it = values.find(key);
  if (it == values.end()) return;
  runs = it->second.size();
  if (runs < 2) return;
  const auto [lo, hi] = std::minmax_element(it->second.begin(), it->second.end());
  d.noise_known = true;
  d.noise = std::max(d.noise, *hi - *lo);
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API void add_run_noise(std::vector<diff_row>& rows,
                                               const std::vector<summary_result>& base_runs,
                                               const std::vector<summary_result>& new_runs) {
  auto mean = [](const latency_stats& l) { return l.mean(); };
  const auto base = detail::per_run_values(base_runs, mean), next = detail::per_run_values(new_runs, mean);
  for (diff_row& d : rows) {
    detail::add_spread(base, d.key, d.runs_base, d);
    detail::add_spread(next, d.key, d.runs_new, d);
  }
}

EDGETRACE_DETAIL_READER_API diff_row diff_iteration(const summary_result& base, const summary_result& next) {
  diff_row d;
  if (base.per.empty()) return d;
  d.key = base.per;
  d.iteration = true;
  auto side = [](const summary_result& s, bool& in, std::uint64_t& calls, std::uint64_t& mean, std::uint64_t& p50,
                 std::uint64_t& p99, std::uint64_t& max, std::uint64_t& total) {
    const latency_stats& l = s.per_latency;
    in = l.count() != 0;
    calls = l.count();
    mean = l.mean();
    p50 = l.percentile(50);
    p99 = l.percentile(99);
    max = l.max();
    total = l.total();
  };
  side(base, d.in_base, d.calls_base, d.mean_base, d.p50_base, d.p99_base, d.max_base, d.total_base);
  side(next, d.in_new, d.calls_new, d.mean_new, d.p50_new, d.p99_new, d.max_new, d.total_new);
  d.iter_share_base = d.in_base ? 1 : 0;
  d.iter_share_new = d.in_new ? 1 : 0;
  return d;
}

EDGETRACE_DETAIL_READER_API void add_iteration_noise(diff_row& iteration,
                                                     const std::vector<summary_result>& base_runs,
                                                     const std::vector<summary_result>& new_runs) {
  auto p50s = [&](const std::vector<summary_result>& runs) {
    std::map<std::string, std::vector<std::uint64_t>> values;
    for (const summary_result& run : runs)
      if (run.per_latency.count()) values[iteration.key].push_back(run.per_latency.percentile(50));
    return values;
  };
  detail::add_spread(p50s(base_runs), iteration.key, iteration.runs_base, iteration);
  detail::add_spread(p50s(new_runs), iteration.key, iteration.runs_new, iteration);
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

/// A share (0..1) as "12.3 %", and a change of share in percentage points.
inline std::string share_text(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", share * 100.0);
  return text;
}
inline std::string point_change(double base, double next) {
  const double points = (next - base) * 100.0;
  if (std::fabs(points) < 0.05) return "0.0 pt";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f pt", points);
  return text;
}

/// The cells the table shows of one row: calls, mean, p50, p99 (and max
/// for the iteration), each new value with its change.
inline std::vector<std::string> figure_cells(const diff_row& d, bool with_max) {
  std::vector<std::string> cells = {std::to_string(d.calls_new),          signed_count(d.calls_base, d.calls_new),
                                    readable_time(d.mean_new),            signed_time(d.mean_base, d.mean_new),
                                    readable_time(d.p50_new),             signed_time(d.p50_base, d.p50_new),
                                    readable_time(d.p99_new),             signed_time(d.p99_base, d.p99_new)};
  if (with_max) cells.insert(cells.end(), {readable_time(d.max_new), signed_time(d.max_base, d.max_new)});
  return cells;
}

inline void noise_cells(const diff_row& d, std::vector<std::string>& cells) {
  cells.push_back(d.noise_known ? "±" + readable_time(d.noise) : "-");
  cells.push_back(!d.noise_known ? "-" : d.within_noise() ? "within noise" : "beyond noise");
}

/// The --per iteration's own table: count, mean, p50, p99, max, and the
/// p50's verdict against run-to-run noise when there are repeated runs.
inline std::string iteration_table(const diff_row& it, bool from_marks) {
  std::vector<std::vector<std::string>> cells = {
      {"iteration", "count", "change", "mean", "change", "p50", "change", "p99", "change", "max", "change"}};
  if (it.noise_known) cells[0].insert(cells[0].end(), {"noise", "p50 change"});
  std::vector<std::string> row = {it.key};
  for (std::string& cell : figure_cells(it, true)) row.push_back(std::move(cell));
  if (it.noise_known) noise_cells(it, row);
  cells.push_back(std::move(row));
  return std::string("per iteration (--per ") + it.key + "): " +
         (from_marks ? "the time between consecutive marks" : "each outermost instance of the span") +
         (it.in_base && it.in_new ? "" : it.in_base ? "; none kept in new" : "; none kept in base") + "\n" +
         render_table(cells, 1);
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API std::string diff_table(const std::vector<diff_row>& rows, const std::string& base,
                                                   const std::string& next, std::size_t top,
                                                   const std::string& key_label, const diff_row* iteration,
                                                   bool iteration_from_marks) {
  std::string out = "base: " + base + "\nnew:  " + next + "\n\n";
  const bool per = iteration != nullptr && !iteration->key.empty();
  if (per) out += detail::iteration_table(*iteration, iteration_from_marks) + "\n";
  const bool with_noise = std::any_of(rows.begin(), rows.end(), [](const diff_row& d) { return d.noise_known; });
  std::vector<std::vector<std::string>> cells = {{key_label, "calls", "change", "mean", "change", "p50", "change",
                                                  "p99", "change", "total", "change", "total %"}};
  if (per) cells[0].insert(cells[0].end(), {"% iter", "change"});
  if (with_noise) cells[0].insert(cells[0].end(), {"noise", "mean change"});
  std::size_t n = 0;
  for (const diff_row& d : rows) {
    if (top && n++ == top) break;
    std::string key = d.key.size() > 48 ? d.key.substr(0, 45) + "..." : d.key;
    if (!d.in_base) key += " (new)";
    if (!d.in_new) key += " (gone)";
    if (d.waiting) key += " (wait)";
    std::vector<std::string> row = {key};
    for (std::string& cell : detail::figure_cells(d, false)) row.push_back(std::move(cell));
    row.insert(row.end(), {detail::readable_time(d.total_new), detail::signed_time(d.total_base, d.total_new),
                           detail::percent_change(d.total_base, d.total_new)});
    if (per)
      row.insert(row.end(), {detail::share_text(d.iter_share_new), detail::point_change(d.iter_share_base, d.iter_share_new)});
    if (with_noise) detail::noise_cells(d, row);
    cells.push_back(std::move(row));
  }
  if (cells.size() == 1) return out + "(no spans in either dump)\n";
  out += detail::render_table(cells, 1) + "\nsorted by impact: the size of the change in total time";
  const bool waits = std::any_of(rows.begin(), rows.end(), [](const diff_row& d) { return d.waiting; });
  out += waits ? "; waiting rows (wait) after the work: a wait grows when what it waits for slows\n" : "\n";
  if (!with_noise && !per)
    out += "one run each: no noise figure; a change of a few % may be run-to-run noise (give each side's runs, "
           "BASE... --vs NEW..., for a noise column)\n";
  if (per)
    out += "% iter = the row's total / the iterations' summed duration; its change is in percentage points (pt)\n";
  if (with_noise)
    out += "noise: the larger run-to-run spread (max - min) of the per-run mean, over each side's runs;\n"
           "a mean change no bigger than that is within noise\n";
  if (per && iteration->noise_known)
    out += "the iteration's noise is the spread of the per-run p50, and its verdict is on the p50\n";
  return out;
}

namespace detail {

inline std::string signed_delta(std::uint64_t a, std::uint64_t b) {
  return std::to_string(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(a));
}

/// A share as CSV/JSON text: 6 decimals, "" (CSV) or null (JSON) without --per.
inline std::string share_number(double share, bool per, const char* none) {
  if (!per) return none;
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", share);
  return text;
}

inline std::string csv_line(const diff_row& d, bool per) {
  return csv_field(d.key) + "," + (d.in_base ? "1" : "0") + "," + (d.in_new ? "1" : "0") + "," +
         std::to_string(d.calls_base) + "," + std::to_string(d.calls_new) + "," + signed_delta(d.calls_base, d.calls_new) +
         "," + std::to_string(d.mean_base) + "," + std::to_string(d.mean_new) + "," + signed_delta(d.mean_base, d.mean_new) +
         "," + std::to_string(d.p50_base) + "," + std::to_string(d.p50_new) + "," + signed_delta(d.p50_base, d.p50_new) +
         "," + std::to_string(d.p99_base) + "," + std::to_string(d.p99_new) + "," + signed_delta(d.p99_base, d.p99_new) +
         "," + std::to_string(d.total_base) + "," + std::to_string(d.total_new) + "," +
         signed_delta(d.total_base, d.total_new) + "," + std::to_string(d.runs_base) + "," + std::to_string(d.runs_new) +
         "," + (d.noise_known ? std::to_string(d.noise) : "") + "," +
         (d.noise_known ? (d.within_noise() ? "1" : "0") : "") + "," + std::to_string(d.max_base) + "," +
         std::to_string(d.max_new) + "," + signed_delta(d.max_base, d.max_new) + "," +
         share_number(d.iter_share_base, per, "") + "," + share_number(d.iter_share_new, per, "") + "," +
         (d.iteration ? "iteration" : "row") + "\n";
}

inline std::string json_object(const diff_row& d, bool per) {
  std::string out = "{\"name\":";
  append_json_string(out, d.key);
  out += std::string(",\"in_base\":") + (d.in_base ? "true" : "false") + ",\"in_new\":" + (d.in_new ? "true" : "false");
  auto triple = [&](const char* field, std::uint64_t base, std::uint64_t next, const char* unit) {
    out += std::string(",\"") + field + "_base" + unit + "\":" + std::to_string(base) + ",\"" + field + "_new" + unit +
           "\":" + std::to_string(next) + ",\"" + field + "_delta" + unit + "\":" + signed_delta(base, next);
  };
  triple("calls", d.calls_base, d.calls_new, "");
  triple("mean", d.mean_base, d.mean_new, "_ns");
  triple("p50", d.p50_base, d.p50_new, "_ns");
  triple("p99", d.p99_base, d.p99_new, "_ns");
  triple("max", d.max_base, d.max_new, "_ns");
  triple("total", d.total_base, d.total_new, "_ns");
  out += ",\"runs_base\":" + std::to_string(d.runs_base) + ",\"runs_new\":" + std::to_string(d.runs_new) +
         ",\"noise_ns\":" + (d.noise_known ? std::to_string(d.noise) : "null") +
         ",\"within_noise\":" + (d.noise_known ? (d.within_noise() ? "true" : "false") : "null");
  if (!d.iteration)
    out += ",\"iter_share_base\":" + share_number(d.iter_share_base, per, "null") +
           ",\"iter_share_new\":" + share_number(d.iter_share_new, per, "null");
  return out + "}";
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API std::string diff_csv(const std::vector<diff_row>& rows, std::size_t top,
                                                 const diff_row* iteration) {
  std::string out =
      "name,in_base,in_new,calls_base,calls_new,calls_delta,mean_base_ns,mean_new_ns,mean_delta_ns,p50_base_ns,"
      "p50_new_ns,p50_delta_ns,p99_base_ns,p99_new_ns,p99_delta_ns,total_base_ns,total_new_ns,total_delta_ns,"
      "runs_base,runs_new,noise_ns,within_noise,max_base_ns,max_new_ns,max_delta_ns,iter_share_base,iter_share_new,"
      "kind\n";
  const bool per = iteration != nullptr && !iteration->key.empty();
  if (per) out += detail::csv_line(*iteration, per);
  std::size_t n = 0;
  for (const diff_row& d : rows) {
    if (top && n++ == top) break;
    out += detail::csv_line(d, per);
  }
  return out;
}

EDGETRACE_DETAIL_READER_API std::string diff_json(const std::vector<diff_row>& rows, const std::string& base,
                                                  const std::string& next, std::size_t top,
                                                  const diff_row* iteration) {
  std::string out = "{\"base\":";
  append_json_string(out, base);
  out += ",\"new\":";
  append_json_string(out, next);
  const bool per = iteration != nullptr && !iteration->key.empty();
  if (per) out += ",\"iteration\":" + detail::json_object(*iteration, per);
  out += ",\"rows\":[";
  std::size_t n = 0;
  for (const diff_row& d : rows) {
    if (top && n == top) break;
    out += n++ ? ",\n" : "\n";
    out += detail::json_object(d, per);
  }
  return out + "]}\n";
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
