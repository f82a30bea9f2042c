// SPDX-License-Identifier: MIT
// What a summary is: its options (the CLI flags map one to one), its rows and result, and the parsers of the option values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/sinks/latency.hpp>
#include <edgetrace/sinks/name_pattern.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// What one row of the summary stands for.
enum class group_by : std::uint8_t { name, category, thread };

/// Columns of the summary table. Time columns belong to the group "host";
/// when the dumps hold GPU spans, a "gpu" group (calls, total, mean, p50,
/// p99, max of the GPU time of each row's GPU scopes) follows, side by
/// side, without changing the host columns. `order` is no column: it sorts
/// rows by their first begin (network order).
enum class summary_column : std::uint8_t { key, calls, total, self, mean, min, p50, p90, p95, p99, p999, max, share, order };

struct summary_column_info {
  summary_column id;
  const char* name;    ///< for --sort-by and CSV/JSON field names (time fields get "_ns")
  const char* header;  ///< table header
  const char* group;   ///< column group: "" (key, calls, share) or "host"
  double percentile;   ///< for p* columns
};

/// Every column, in table order.
EDGETRACE_DETAIL_READER_API const std::vector<summary_column_info>& summary_columns();

/// Options of the summary (the CLI flags map one to one).
struct summary_options {
  group_by by = group_by::name;
  /// --by name,arg:KEY...: with group_by::name, split each name's row by
  /// the values of these span arguments (EDGETRACE_ARG).
  std::vector<std::string> by_args;
  /// --by arg:KEY... alone: a span with any of the keys goes to the row of
  /// its values only ("op=conv"), whatever its name; others keep their name.
  bool by_args_only = false;
  std::size_t top = 0;                  ///< rows to keep after sorting; 0 = all
  /// --columns: the text table's columns besides the name (and category),
  /// as summary_column_key() spells them (empty = all); CSV and JSON keep
  /// every field.
  std::vector<std::string> columns;
  name_pattern filter;  ///< span name filter (searched in the name), compiled once
  std::vector<std::string> categories;  ///< keep spans of these categories (empty = all)
  std::vector<std::string> threads;     ///< keep these threads, by name or OS tid (empty = all)
  summary_column sort_by = summary_column::total;
  bool ascending = false;
  std::uint64_t min_time_ns = 0;  ///< spans shorter than this are left out of the rows
  std::uint64_t max_time_ns = std::numeric_limits<std::uint64_t>::max();  ///< and longer than this
  std::string iteration;          ///< mark or span name that delimits iterations ("" = every mark name)
  std::uint64_t skip_warmup = 0;  ///< iterations to skip at the start of each dump
  std::string phase;              ///< keep spans that began in this phase (edgetrace::phase; "" = all)
  std::size_t exact_limit = latency_stats::default_exact_limit;  ///< exact samples per row
  std::size_t exact_budget = 2000000;  ///< exact samples over all rows (16 MiB); past it the largest rows switch
  /// --per NAME: an enclosing span or a mark name; each instance (or the
  /// time between two marks) is one iteration, rows count only spans inside
  /// iterations and gain avg/iter and % of iteration ("" = off).
  std::string per;
  /// --wait REGEX: span names that are waiting, not work (default: names
  /// beginning with "wait", any case; empty = none). Their self time is left
  /// out of the share denominator and of each thread's busy time.
  name_pattern wait = default_wait();
  std::vector<std::string> wait_categories;  ///< --wait-category LIST: categories whose spans are waiting

  /// "^wait", ignoring case (compiled once, shared by copies).
  static EDGETRACE_DETAIL_READER_API name_pattern default_wait();
};

struct summary_row {
  std::string key;
  std::string category;  ///< by name: the category ("(several)" when names repeat across categories)
  latency_stats host;
  latency_stats gpu;  ///< GPU time of the row's GPU scopes (resolved ones; empty without)
  std::uint64_t self_ns = 0;
  std::uint64_t wait_self_ns = 0;  ///< self time of the row's waiting spans (--wait, --wait-category)
  /// (self_ns - wait_self_ns) / summary_result::share_self_ns: the row's
  /// part of the busy self time of every row left after the filters.
  double share = 0;
  bool waiting() const noexcept { return self_ns != 0 && wait_self_ns == self_ns; }
  /// Earliest begin of a span of the row, from its dump's first event, and
  /// that span's depth (a parent before a child that begins with it).
  std::int64_t first_begin_ns = std::numeric_limits<std::int64_t>::max();
  std::uint32_t first_depth = 0;
  /// With --per: host total / iterations, and host total / the iterations'
  /// summed duration (0 without --per).
  std::uint64_t per_iteration_ns = 0;
  double iteration_share = 0;
  /// Memory pools (EDGETRACE_ALLOC/FREE), all pools of the span's process:
  /// the highest live bytes while one of the row's spans ran, and the most
  /// one span's thread allocated (net of its frees) while the span ran.
  std::uint64_t mem_peak = 0;
  std::uint64_t mem_growth = 0;
  explicit summary_row(std::size_t exact_limit = latency_stats::default_exact_limit)
      : host(exact_limit), gpu(exact_limit) {}
};

/// End-to-end latency of one kind of iteration.
struct iteration_row {
  std::string name;
  bool from_marks = true;  ///< marks (time between consecutive marks) or spans (their durations)
  /// A flow (EDGETRACE_FLOW): one sample per id, from its first step's
  /// begin to its last step's end (from_marks is false).
  bool from_flow = false;
  const char* from() const noexcept { return from_flow ? "flow" : from_marks ? "marks" : "span"; }
  latency_stats latency;
  std::int64_t first_ns = 0;  ///< first iteration start (per-dump clock of the first dump)
  std::int64_t last_ns = 0;   ///< last iteration end
  std::uint64_t skipped = 0;  ///< warm-up iterations left out
  std::uint64_t cut_at_pause = 0;  ///< marks: intervals across a pause (recording off), not samples
  std::uint64_t single_step = 0;   ///< flows: ids with one recorded step, not samples
  double wall_seconds = 0;    ///< sum over dumps of (last end - first start)
  double per_second() const { return wall_seconds > 0 ? static_cast<double>(latency.count()) / wall_seconds : 0; }
};

/// Busy time of one thread: time inside spans of depth 0 (nothing encloses
/// them), less the self time of its waiting spans (--wait).
struct thread_usage {
  std::string label;
  std::uint64_t covered_ns = 0;  ///< inside top-level spans
  std::uint64_t wait_ns = 0;     ///< self time of waiting spans
  std::uint64_t busy_ns = 0;     ///< covered_ns - wait_ns (set by summary_builder::finish)
  std::uint64_t spans = 0;
  std::uint64_t wall_ns = 0;  ///< its dump's duration (first to last event)
  double utilisation() const { return wall_ns ? static_cast<double>(busy_ns) / static_cast<double>(wall_ns) : 0; }
};

struct summary_result {
  std::vector<summary_row> rows;  ///< sorted, at most `top`
  std::vector<std::string> columns;  ///< summary_options::columns
  std::size_t rows_before_top = 0;
  std::uint64_t spans_read = 0;       ///< spans decoded
  std::uint64_t spans_in_rows = 0;    ///< spans counted in some row (before --top)
  std::uint64_t spans_warmup = 0;     ///< spans that ended during warm-up
  std::uint64_t spans_other_phases = 0;  ///< spans that began outside --phase
  std::uint64_t spans_filtered = 0;   ///< left out by thread/name/category/time filters
  std::uint64_t dropped = 0;          ///< records the writers dropped (ring full), per thread_info::dropped()
  std::uint64_t self_total_ns = 0;    ///< self time of all spans after thread and warm-up filters
  std::uint64_t wall_ns = 0;          ///< sum over dumps of first-to-last event
  std::size_t threads = 0;
  std::size_t rows_estimated = 0;     ///< rows whose percentiles come from buckets
  std::vector<iteration_row> iterations;
  std::vector<thread_usage> threads_usage;
  std::vector<std::string> notes;     ///< lines worth saying under the table
  std::uint64_t gpu_spans = 0;        ///< resolved GPU spans counted in rows
  bool memory = false;                ///< some dump recorded allocations: mem_* columns mean something
  memory_mismatches mismatches;       ///< allocation records that do not add up, over all dumps
  group_by by = group_by::name;
  std::vector<std::string> by_args;  ///< --by arg:KEY keys
  bool by_args_only = false;
  summary_column sort_by = summary_column::total;
  bool ascending = false;
  std::string phase;                  ///< --phase ("" = all)
  /// The share denominator: busy self time (self minus waiting self) of the
  /// rows left after the filters, before --top; and the waiting part.
  std::uint64_t share_self_ns = 0;
  std::uint64_t wait_self_ns = 0;
  std::size_t rows_waiting = 0;       ///< rows made only of waiting spans
  std::string wait_rule;              ///< what counts as waiting, in words ("" = nothing)
  /// --per: what an iteration is, how many were kept, their summed duration.
  std::string per;
  bool per_from_marks = false;
  std::uint64_t per_count = 0;
  std::uint64_t per_total_ns = 0;
  latency_stats per_latency;  ///< the kept iterations' durations (diff --per compares them)
  std::uint64_t per_cut_at_pause = 0;
  std::uint64_t spans_outside_per = 0;  ///< spans outside every iteration (left out of the rows)
};

namespace detail {
/// What a row stands for, as --by said it: "name", "thread", "arg:op",
/// "name,arg:batch".
EDGETRACE_DETAIL_READER_API std::string group_label(const summary_result& s);
}  // namespace detail

// ----------------------------------------------------------------------------
// Option parsing helpers shared by the CLI and tests.

/// Parses "250us", "1.5ms", "2s", "800ns" (a unit is required). False on error.
EDGETRACE_DETAIL_READER_API bool parse_duration(const std::string& text, std::uint64_t& ns);

/// Parses a --sort-by value: a column name, '+' prefix for ascending, '-'
/// for descending (the default, except for the name column).
EDGETRACE_DETAIL_READER_API bool parse_sort_column(std::string text, summary_column& column, bool& ascending);

/// Names accepted by --sort-by (for messages).
EDGETRACE_DETAIL_READER_API std::string summary_column_names();

/// The items of a comma list, spaces around each trimmed, empty ones left
/// out (the writer's tokenizer: core/text.hpp).
EDGETRACE_DETAIL_READER_API std::vector<std::string> split_list(const std::string& text);

// ----------------------------------------------------------------------------
// Lost records, said the same way by the summary's notes and the CLI.

/// Records the writers of one dump dropped because a ring was full: the
/// total, and where ("worker (tid 12) 5, main (tid 11) 2", cut near 300
/// characters). Counts per thread_info::dropped(): the writers' own
/// thread_stats always, the loss records once read_events ran.
struct dropped_records {
  std::uint64_t count = 0;
  std::string where;
};

/// Tallies `r`'s dropped records; `label(thread_info)` names a thread.
template <class Label>
dropped_records count_dropped(const dump_reader& r, Label&& label) {
  dropped_records d;
  for (const thread_info* t : r.threads_in_order()) {
    if (t->dropped() == 0) continue;
    d.count += t->dropped();
    if (d.where.size() < 300) d.where += (d.where.empty() ? "" : ", ") + label(*t) + " " + std::to_string(t->dropped());
  }
  return d;
}

/// "N records were dropped by the tracer (ring buffer full) on WHERE"; the
/// caller adds the file and what the loss means for its output.
EDGETRACE_DETAIL_READER_API std::string dropped_records_text(const dropped_records& d);

/// What keeps the dropped records next time, for the policy the run used
/// (its process chunk, 1.8): never the setting already in force.
EDGETRACE_DETAIL_READER_API std::string keep_dropped_advice(const dump_reader& r);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <cmath>
#include <cstdlib>

#include <edgetrace/core/text.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

EDGETRACE_DETAIL_READER_API const std::vector<summary_column_info>& summary_columns() {
  static const std::vector<summary_column_info> columns = {
      {summary_column::key, "name", "name", "", 0},      {summary_column::calls, "calls", "calls", "", 0},
      {summary_column::total, "total", "total", "host", 0}, {summary_column::self, "self", "self", "host", 0},
      {summary_column::mean, "mean", "mean", "host", 0},  {summary_column::min, "min", "min", "host", 0},
      {summary_column::p50, "p50", "p50", "host", 50},    {summary_column::p90, "p90", "p90", "host", 90},
      {summary_column::p95, "p95", "p95", "host", 95},    {summary_column::p99, "p99", "p99", "host", 99},
      {summary_column::p999, "p99.9", "p99.9", "host", 99.9}, {summary_column::max, "max", "max", "host", 0},
      {summary_column::share, "share", "share", "", 0},
  };
  return columns;
}

EDGETRACE_DETAIL_READER_API name_pattern summary_options::default_wait() {
  static const name_pattern compiled = [] {
    name_pattern p;
    p.compile("^wait", true);
    return p;
  }();
  return compiled;
}

EDGETRACE_DETAIL_READER_API bool parse_duration(const std::string& text, std::uint64_t& ns) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v < 0) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us" || unit == "\xC2\xB5s") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else return false;
  const double result = v * scale;
  if (result >= 1.8e19) return false;
  ns = static_cast<std::uint64_t>(std::llround(result));
  return true;
}

EDGETRACE_DETAIL_READER_API bool parse_sort_column(std::string text, summary_column& column, bool& ascending) {
  int direction = 0;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    direction = text[0] == '+' ? 1 : -1;
    text.erase(0, 1);
  }
  if (text == "category" || text == "thread" || text == "key") text = "name";
  if (text == "p999") text = "p99.9";
  if (text == "order") {  // first begin; earliest first unless '-'
    column = summary_column::order;
    ascending = direction >= 0;
    return true;
  }
  for (const auto& c : summary_columns())
    if (text == c.name) {
      column = c.id;
      ascending = direction == 0 ? c.id == summary_column::key : direction > 0;
      return true;
    }
  return false;
}

EDGETRACE_DETAIL_READER_API std::string summary_column_names() {
  std::string out;
  for (const auto& c : summary_columns()) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out + ", order";
}

EDGETRACE_DETAIL_READER_API std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  edgetrace::detail::for_each_list_item(text.c_str(), [&](edgetrace::detail::list_item item) {
    out.emplace_back(item.begin, item.end);
  });
  return out;
}

EDGETRACE_DETAIL_READER_API std::string dropped_records_text(const dropped_records& d) {
  return std::to_string(d.count) + (d.count == 1 ? " record was" : " records were") +
         " dropped by the tracer (ring buffer full) on " + d.where;
}

EDGETRACE_DETAIL_READER_API std::string keep_dropped_advice(const dump_reader& r) {
  bool wait = false, drop = false, unknown = false;
  for (const thread_info* t : r.threads_in_order()) {
    if (t->dropped() == 0 || t->writer == nullptr) continue;
    const overload_policy p = t->writer->overload;
    (p == overload_policy::wait ? wait : p == overload_policy::drop ? drop : unknown) = true;
  }
  if (drop && !wait && !unknown)
    return "the run used EDGETRACE_ON_FULL=drop: EDGETRACE_ON_FULL=wait (the default) or a larger "
           "EDGETRACE_BUFFER_KB keeps them";
  if (wait && !drop && !unknown)
    return "the run used EDGETRACE_ON_FULL=wait, which drops only what waiting cannot keep (an output that took no "
           "data for 250 ms, records before the output opened, signal handlers inside their thread's own record); "
           "the run's stderr line names the cause";
  return "under EDGETRACE_ON_FULL=drop, EDGETRACE_ON_FULL=wait (the default) or a larger EDGETRACE_BUFFER_KB keeps "
         "them; under wait the run's stderr line names the cause";
}

// ----------------------------------------------------------------------------

namespace detail {

/// A row's value in time column `c` (ns).
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

EDGETRACE_DETAIL_READER_API std::string group_label(const summary_result& s) {
  std::string label = s.by_args_only ? "" : group_name(s.by);
  for (const std::string& key : s.by_args) label += (label.empty() ? "arg:" : ",arg:") + key;
  return label;
}

/// The sort key as the header says it.
inline std::string sort_label(const summary_result& s) {
  std::string name = "total";
  if (s.sort_by == summary_column::order) name = "order";
  for (const auto& c : summary_columns())
    if (c.id == s.sort_by) name = c.id == summary_column::key ? group_label(s) : c.name;
  const bool default_ascending = s.sort_by == summary_column::key || s.sort_by == summary_column::order;
  return (s.ascending == default_ascending ? "" : s.ascending ? "+" : "-") + name;
}

/// "share = self / 12.3 ms busy self time of the 14 rows left after the
/// filters (5 shown); waiting (names matching /^wait/i): 2 rows, 40.1 ms
/// self, left out of it". One line, no newline.
inline std::string share_text(const summary_result& s) {
  std::string out = "share = self / " + readable_time(s.share_self_ns) + (s.wait_rule.empty() ? "" : " busy") +
                    " self time of the " + std::to_string(s.rows_before_top) + " row(s) left after the filters";
  if (s.rows.size() < s.rows_before_top) out += " (" + std::to_string(s.rows.size()) + " shown)";
  if (s.wait_self_ns != 0)
    out += "; waiting spans (" + s.wait_rule + ", " + std::to_string(s.rows_waiting) + " row(s) marked wait): " +
           readable_time(s.wait_self_ns) + " self, left out of it";
  else if (!s.wait_rule.empty())
    out += "; no waiting spans (" + s.wait_rule + ")";
  return out;
}

/// "per iteration: 30 instances of span \"iteration\" (12.3 ms in all);
/// avg/iter = total / 30, % iter = total / 12.3 ms". "" without --per.
inline std::string per_text(const summary_result& s) {
  if (s.per.empty()) return "";
  std::string out = "per iteration: " + std::to_string(s.per_count) + " " +
                    (s.per_from_marks ? "intervals between \"" + s.per + "\" marks"
                                      : "instances of span \"" + s.per + "\"") +
                    " (" + readable_time(s.per_total_ns) + " in all";
  if (s.per_cut_at_pause != 0) out += "; " + std::to_string(s.per_cut_at_pause) + " cut at a pause, left out";
  out += "); rows count only spans " + std::string(s.per_from_marks ? "that begin inside one" : "inside one") +
         "; avg/iter = total / " + std::to_string(s.per_count) + ", % iter = total / " + readable_time(s.per_total_ns);
  return out;
}
}  // namespace detail

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
