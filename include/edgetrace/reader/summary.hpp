// SPDX-License-Identifier: MIT
// Per-name (category, thread) span statistics and per-iteration latency from one or more dumps (`edgetrace summary`).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <regex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <edgetrace/detail/text.hpp>

#include "annotations.hpp"
#include "chrome_json.hpp"
#include "dump_reader.hpp"
#include "info.hpp"
#include "latency.hpp"
#include "span_walker.hpp"
#include "summary_iterations.hpp"

namespace edgetrace {
inline namespace v1 {
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

inline const std::vector<summary_column_info>& summary_columns() {
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
  std::shared_ptr<const std::regex> filter;  ///< span name filter (regex_search), compiled once
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
  /// beginning with "wait", any case; null = none). Their self time is left
  /// out of the share denominator and of each thread's busy time.
  std::shared_ptr<const std::regex> wait = default_wait_regex();
  std::string wait_pattern = default_wait_pattern();  ///< the text of `wait`, for the header
  std::vector<std::string> wait_categories;  ///< --wait-category LIST: categories whose spans are waiting

  static const char* default_wait_pattern() { return "^wait"; }
  static std::shared_ptr<const std::regex> default_wait_regex() {
    static const auto compiled = std::make_shared<const std::regex>(
        default_wait_pattern(), std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    return compiled;
  }
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
  std::uint64_t per_cut_at_pause = 0;
  std::uint64_t spans_outside_per = 0;  ///< spans outside every iteration (left out of the rows)
};

// ----------------------------------------------------------------------------
// Option parsing helpers shared by the CLI and tests.

/// Parses "250us", "1.5ms", "2s", "800ns" (a unit is required). False on error.
inline bool parse_duration(const std::string& text, std::uint64_t& ns) {
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

/// Parses a --sort-by value: a column name, '+' prefix for ascending, '-'
/// for descending (the default, except for the name column).
inline bool parse_sort_column(std::string text, summary_column& column, bool& ascending) {
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

/// Names accepted by --sort-by (for messages).
inline std::string summary_column_names() {
  std::string out;
  for (const auto& c : summary_columns()) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out + ", order";
}

/// The items of a comma list, spaces around each trimmed, empty ones left
/// out (the writer's tokenizer: detail/text.hpp).
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  edgetrace::detail::for_each_list_item(text.c_str(), [&](edgetrace::detail::list_item item) {
    out.emplace_back(item.begin, item.end);
  });
  return out;
}

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
inline std::string dropped_records_text(const dropped_records& d) {
  return std::to_string(d.count) + (d.count == 1 ? " record was" : " records were") +
         " dropped by the tracer (ring buffer full) on " + d.where;
}

// ----------------------------------------------------------------------------

/// Builds a summary over one or more dumps, streaming each (memory: rows,
/// threads, and the exact-sample budget; not the dump size).
class summary_builder {
 public:
  explicit summary_builder(summary_options options) : options_(std::move(options)) {}

  /// Adds one opened dump (metadata read or not). Returns false with `error`
  /// set on an I/O error or an option the dump cannot satisfy (an unknown
  /// --iteration name, --skip-warmup without iterations).
  bool add(dump_reader& r, std::string& error) {
    if (!r.metadata_read() && !r.read_metadata()) return fail(error, r.error());
    if (!prepare_iterations(r, error)) return false;
    std::int64_t cutoff = std::numeric_limits<std::int64_t>::min();
    if (options_.skip_warmup > 0 && !find_warmup_cutoff(r, cutoff, error)) return false;
    if (!prepare_phase(r, error)) return false;
    if (!check_arg_keys(r, error)) return false;
    if (!prepare_per(r, cutoff, error)) return false;
    const std::uint64_t other_phases_before = result_.spans_other_phases;
    if (r.has_events()) result_.wall_ns += static_cast<std::uint64_t>(r.last_ns() - r.first_ns());
    prepare_sites(r);

    struct thread_slot {
      bool selected = true;
      int row = -1;  // by-thread row
      std::size_t usage = 0;
    };
    std::unordered_map<const thread_info*, thread_slot> thread_slots;
    for (const thread_info* t : r.threads_in_order()) {
      thread_slot slot;
      slot.selected = thread_selected(*t, r);
      if (slot.selected && options_.by == group_by::thread) slot.row = row_for(thread_label(*t, r), "");
      slot.usage = result_.threads_usage.size();
      thread_usage u;
      u.label = thread_label(*t, r);
      u.wall_ns = r.has_events() ? static_cast<std::uint64_t>(r.last_ns() - r.first_ns()) : 0;
      result_.threads_usage.push_back(u);
      thread_slots.emplace(t, slot);
      ++result_.threads;
    }
    // Iteration marks per (thread, mark name): the later mark's time
    // (the walk is backwards).
    std::map<std::pair<const thread_info*, std::string>, std::int64_t> later_mark;
    std::map<std::string, std::size_t> iteration_index;
    for (std::size_t i = 0; i < result_.iterations.size(); ++i) iteration_index[result_.iterations[i].name] = i;
    struct time_range {
      bool set = false;
      std::int64_t first = 0, last = 0;
      void extend(std::int64_t a, std::int64_t b) {
        if (!set || a < first) first = a;
        if (!set || b > last) last = b;
        set = true;
      }
    };
    std::map<std::size_t, time_range> iteration_range;  // this dump's first start / last end
    // Intervals between marks cut at a pause: not iterations, so not part of
    // the time the per-second rate divides by either.
    std::map<std::size_t, std::vector<std::pair<std::int64_t, std::int64_t>>> cut_ranges;

    const thread_info* last_thread = nullptr;
    thread_slot* slot = nullptr;
    const site_info* cache_site[64] = {};
    const site_slot* cache_slot[64] = {};
    // Annotations (1.3): arguments and flow steps go to their span (every
    // span claims, filtered or not); memory peaks per span.
    span_annotations notes(r);
    flow_collector flows;
    const memory_timelines memory(r);
    const writer_info* memory_writer = nullptr;
    const memory_timeline* timeline = nullptr;
    std::vector<const annotation*> args;
    const bool ok = walk_spans(
        r,
        [&](const span_record& s) {
          ++result_.spans_read;
          notes.collect(s.thread, s.site, s.begin_ns, s.end_ns, &args, &flows);
          if (s.thread != last_thread) {
            last_thread = s.thread;
            slot = &thread_slots[s.thread];
          }
          if (!slot->selected) {
            ++result_.spans_filtered;
            return;
          }
          if (s.end_ns < cutoff) {
            ++result_.spans_warmup;
            return;
          }
          if (!in_phase(s.thread->writer, s.begin_ns)) {
            ++result_.spans_other_phases;
            return;
          }
          result_.self_total_ns += s.self_ns;
          const std::uint64_t duration = s.duration();
          thread_usage& usage = result_.threads_usage[slot->usage];
          if (s.depth == 0) {
            usage.covered_ns += duration;
            ++usage.spans;
          }
          const std::size_t h = (reinterpret_cast<std::uintptr_t>(s.site) >> 4) & 63;
          const site_slot* site;
          if (cache_site[h] == s.site) {
            site = cache_slot[h];
          } else {
            site = &sites_[s.site];
            cache_site[h] = s.site;
            cache_slot[h] = site;
          }
          if (site->iteration >= 0) {
            iteration_row& it = result_.iterations[static_cast<std::size_t>(site->iteration)];
            it.latency.add(duration);
            iteration_range[static_cast<std::size_t>(site->iteration)].extend(s.begin_ns, s.end_ns);
          }
          if (site->waiting) usage.wait_ns += s.self_ns;
          int row = options_.by == group_by::thread ? (site->selected ? slot->row : -1) : site->row;
          if (row < 0 || duration < options_.min_time_ns || duration > options_.max_time_ns) {
            ++result_.spans_filtered;
            return;
          }
          if (per_active_ && !per_.contains(s.thread, s.begin_ns, s.end_ns)) {
            ++result_.spans_outside_per;
            return;
          }
          if (!options_.by_args.empty() && !args.empty()) row = arg_row(*s.site, args, row);
          summary_row& out = rows_[static_cast<std::size_t>(row)];
          const bool was_exact = out.host.exact();
          out.host.add(duration);
          out.self_ns += s.self_ns;
          if (site->waiting) out.wait_self_ns += s.self_ns;
          const std::int64_t since_start = s.begin_ns - r.first_ns();
          if (since_start < out.first_begin_ns || (since_start == out.first_begin_ns && s.depth < out.first_depth)) {
            out.first_begin_ns = since_start;
            out.first_depth = s.depth;
          }
          if (!memory.empty()) {
            if (s.writer != memory_writer) {
              memory_writer = s.writer;
              timeline = memory.find(s.writer);
            }
            if (timeline != nullptr) {
              const std::uint64_t peak = timeline->peak_during(s.begin_ns, s.end_ns);
              out.mem_peak = std::max(out.mem_peak, peak);
              out.mem_growth = std::max(out.mem_growth, timeline->growth_during(s.thread, s.begin_ns, s.end_ns));
              result_.memory = true;
            }
          }
          ++result_.spans_in_rows;
          if (was_exact && ++exact_added_ > options_.exact_budget) enforce_budget();
        },
        [&](const event& e) {
          if (e.kind != event_kind::instant || e.site->kind != format::site_kind::mark) return;
          const auto found = iteration_index.find(e.site->name);
          if (found == iteration_index.end() || !result_.iterations[found->second].from_marks) return;
          iteration_row& it = result_.iterations[found->second];
          auto key = std::make_pair(e.thread, e.site->name);
          const auto later = later_mark.find(key);
          if (later != later_mark.end()) {
            if (crosses_pause(*e.writer, e.begin_ns, later->second)) {
              ++it.cut_at_pause;
              cut_ranges[found->second].emplace_back(e.begin_ns, later->second);
            } else if (e.begin_ns >= cutoff && in_phase(e.writer, e.begin_ns)) {
              it.latency.add(static_cast<std::uint64_t>(later->second - e.begin_ns));
              iteration_range[found->second].extend(e.begin_ns, later->second);
            } else {
              ++it.skipped;
            }
            later->second = e.begin_ns;
          } else {
            later_mark.emplace(key, e.begin_ns);
          }
        });
    if (!ok) return fail(error, r.error());
    add_flows(flows, cutoff);
    add_annotation_notes(r, notes, memory);
    // GPU time per row: a GPU scope's span goes to the row of its host
    // span (same site, same thread), under the same filters.
    if (r.has_gpu() &&
        !r.read_gpu_spans([&](const gpu_span& g) {
          if (!g.resolved || g.site == nullptr || g.host_end_ns < cutoff) return;
          const auto found = sites_.find(g.site);
          if (found == sites_.end()) return;
          const auto thread = g.thread != nullptr ? thread_slots.find(g.thread) : thread_slots.end();
          if (thread != thread_slots.end() && !thread->second.selected) return;
          int row = found->second.row;
          if (options_.by == group_by::thread) row = found->second.selected && thread != thread_slots.end() ? thread->second.row : -1;
          const std::uint64_t host = static_cast<std::uint64_t>(g.host_end_ns - g.host_begin_ns);
          if (row < 0 || host < options_.min_time_ns || host > options_.max_time_ns) return;
          rows_[static_cast<std::size_t>(row)].gpu.add(g.gpu_duration_ns);
          ++result_.gpu_spans;
        }))
      return fail(error, r.error());
    // Lost records are part of the answer: say how many and where.
    const dropped_records dropped = count_dropped(r, [&](const thread_info& t) { return thread_label(t, r); });
    if (dropped.count != 0) {
      result_.dropped += dropped.count;
      result_.notes.push_back(r.path() + ": " + dropped_records_text(dropped) +
                              "; the rows count recorded spans only (EDGETRACE_ON_FULL=wait, the default, keeps them)");
    }
    // A snapshot's missing past is not a loss: say what the dump holds.
    for (const writer_info* w : r.writers_in_order())
      if (w->snapshot.present) result_.notes.push_back(r.path() + ": " + snapshot_text(w->snapshot));
    for (const auto& range : iteration_range) {
      iteration_row& it = result_.iterations[range.first];
      const time_range& t = range.second;
      std::int64_t wall = t.last - t.first;
      for (const auto& cut : cut_ranges[range.first])
        if (cut.first >= t.first && cut.second <= t.last) wall -= cut.second - cut.first;
      if (wall > 0) it.wall_seconds += static_cast<double>(wall) / 1e9;
      if (it.first_ns == 0 && it.last_ns == 0) {
        it.first_ns = t.first;
        it.last_ns = t.last;
      }
    }
    if (!options_.phase.empty())
      result_.notes.push_back(r.path() + ": phase \"" + options_.phase + "\": " +
                              std::to_string(result_.spans_other_phases - other_phases_before) +
                              " span(s) that began outside it are left out of every table");
    if (cutoff != std::numeric_limits<std::int64_t>::min()) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "%s: skipped %llu warm-up iteration(s): %llu span(s) that ended before %s after the first "
                    "event are left out of every table",
                    r.path().c_str(), static_cast<unsigned long long>(options_.skip_warmup),
                    static_cast<unsigned long long>(result_.spans_warmup),
                    detail::format_duration(static_cast<std::uint64_t>(cutoff - r.first_ns())).c_str());
      result_.notes.push_back(text);
    }
    return true;
  }

  /// Sorts, computes shares, applies --top and returns the result.
  summary_result finish() {
    summary_result out = std::move(result_);
    out.by = options_.by;
    out.by_args = options_.by_args;
    out.by_args_only = options_.by_args_only;
    out.sort_by = options_.sort_by;
    out.ascending = options_.ascending;
    out.phase = options_.phase;
    out.wait_rule = wait_rule();
    for (thread_usage& t : out.threads_usage) t.busy_ns = t.covered_ns - std::min(t.wait_ns, t.covered_ns);
    for (summary_row& row : rows_) {
      if (row.host.count() == 0) continue;
      out.share_self_ns += row.self_ns - row.wait_self_ns;
      out.wait_self_ns += row.wait_self_ns;
      out.rows_waiting += row.waiting() ? 1 : 0;
      out.rows.push_back(std::move(row));
    }
    rows_.clear();
    for (summary_row& row : out.rows) {
      row.share = out.share_self_ns ? static_cast<double>(row.self_ns - row.wait_self_ns) / static_cast<double>(out.share_self_ns) : 0;
      if (out.per_count != 0) row.per_iteration_ns = (row.host.total() + out.per_count / 2) / out.per_count;
      if (out.per_total_ns != 0) row.iteration_share = static_cast<double>(row.host.total()) / static_cast<double>(out.per_total_ns);
    }
    const summary_column column = options_.sort_by;
    const bool ascending = options_.ascending;
    std::stable_sort(out.rows.begin(), out.rows.end(), [&](const summary_row& a, const summary_row& b) {
      if (column == summary_column::key) return ascending ? natural_less(a.key, b.key) : natural_less(b.key, a.key);
      if (column == summary_column::order) {
        if (a.first_begin_ns != b.first_begin_ns) return ascending == (a.first_begin_ns < b.first_begin_ns);
        if (a.first_depth != b.first_depth) return ascending == (a.first_depth < b.first_depth);
        return natural_less(a.key, b.key);
      }
      const double va = sort_value(a, column), vb = sort_value(b, column);
      if (va != vb) return ascending ? va < vb : va > vb;
      return natural_less(a.key, b.key);
    });
    out.rows_before_top = out.rows.size();
    if (options_.top != 0 && out.rows.size() > options_.top) out.rows.resize(options_.top);
    for (const summary_row& row : out.rows) out.rows_estimated += row.host.exact() ? 0 : 1;
    if (out.rows_estimated != 0) {
      char text[240];
      std::snprintf(text, sizeof text,
                    "percentiles of %zu row(s) with more than %zu spans are estimated from log buckets "
                    "(relative error <= %.2f %%); counts, totals, self, mean, min and max are exact",
                    out.rows_estimated, options_.exact_limit, log_buckets::relative_error * 100);
      out.notes.push_back(text);
    }
    for (const iteration_row& it : out.iterations)
      if (!it.latency.exact()) {
        out.notes.push_back("iteration percentiles of \"" + it.name + "\" are estimated from log buckets");
        break;
      }
    return out;
  }

  static double sort_value(const summary_row& r, summary_column c) {
    switch (c) {
      case summary_column::calls: return static_cast<double>(r.host.count());
      case summary_column::total: return static_cast<double>(r.host.total());
      case summary_column::self: return static_cast<double>(r.self_ns);
      case summary_column::mean: return static_cast<double>(r.host.mean());
      case summary_column::min: return static_cast<double>(r.host.min());
      case summary_column::max: return static_cast<double>(r.host.max());
      case summary_column::share: return r.share;
      case summary_column::p50: return static_cast<double>(r.host.percentile(50));
      case summary_column::p90: return static_cast<double>(r.host.percentile(90));
      case summary_column::p95: return static_cast<double>(r.host.percentile(95));
      case summary_column::p99: return static_cast<double>(r.host.percentile(99));
      case summary_column::p999: return static_cast<double>(r.host.percentile(99.9));
      case summary_column::key: break;
      case summary_column::order: return static_cast<double>(r.first_begin_ns);
    }
    return 0;
  }

 private:
  struct site_slot {
    int row = -1;        // -1: filtered out by name/category
    bool selected = false;
    bool waiting = false;  // --wait / --wait-category: self time is waiting, not work
    int iteration = -1;  // iteration row when this span delimits iterations
  };

  static bool fail(std::string& error, const std::string& what) {
    error = what;
    return false;
  }

  int row_for(const std::string& key, const std::string& category) {
    const auto found = row_index_.find(key);
    if (found != row_index_.end()) {
      summary_row& row = rows_[static_cast<std::size_t>(found->second)];
      if (row.category != category) row.category = "(several)";
      return found->second;
    }
    rows_.emplace_back(options_.exact_limit);
    rows_.back().key = key;
    rows_.back().category = category;
    const int index = static_cast<int>(rows_.size() - 1);
    row_index_.emplace(key, index);
    return index;
  }

  static std::string thread_label(const thread_info& t, const dump_reader& r) {
    std::string name = t.name.empty() ? "thread" : t.name;
    char text[96];
    if (r.writers().size() > 1 || multi_dump_labels_)
      std::snprintf(text, sizeof text, " (pid %llu, tid %llu)", static_cast<unsigned long long>(t.writer->pid),
                    static_cast<unsigned long long>(t.os_tid));
    else
      std::snprintf(text, sizeof text, " (tid %llu)", static_cast<unsigned long long>(t.os_tid));
    return name + text;
  }

  bool thread_selected(const thread_info& t, const dump_reader&) const {
    if (options_.threads.empty()) return true;
    const std::string tid = std::to_string(t.os_tid);
    for (const std::string& wanted : options_.threads)
      if (wanted == t.name || wanted == tid) return true;
    return false;
  }

  void prepare_sites(const dump_reader& r) {
    sites_.clear();
    for (const auto& w : r.writers())
      for (const auto& entry : w.second.sites) {
        const site_info& s = entry.second;
        if (s.kind != format::site_kind::span) continue;
        site_slot slot;
        bool keep = true;
        if (!options_.categories.empty())
          keep = std::find(options_.categories.begin(), options_.categories.end(), s.category) !=
                 options_.categories.end();
        if (keep && options_.filter) keep = std::regex_search(s.name, *options_.filter);
        slot.selected = keep;
        slot.waiting = (options_.wait && std::regex_search(s.name, *options_.wait)) ||
                       std::find(options_.wait_categories.begin(), options_.wait_categories.end(), s.category) !=
                           options_.wait_categories.end();
        if (keep && options_.by != group_by::thread)
          slot.row = options_.by == group_by::name ? row_for(s.name.empty() ? "(unnamed)" : s.name, s.category)
                                                   : row_for(s.category, "");
        if (!options_.iteration.empty() && iterations_are_spans_ && s.name == options_.iteration)
          slot.iteration = iteration_row_for(s.name, false);
        sites_[&s] = slot;
      }
  }

  /// The row of a span named by `site` with arguments `args` (time order):
  /// "name [key=value, ...]" over the --by arg: keys it has, the last
  /// value of each ("key=value, ..." with by_args_only); `plain` when it
  /// has none of them.
  int arg_row(const site_info& site, const std::vector<const annotation*>& args, int plain) {
    std::string suffix;
    for (const std::string& key : options_.by_args) {
      const annotation* last = last_with_key(args, key);
      if (last == nullptr) continue;
      suffix += (suffix.empty() ? " [" : ", ") + key + "=" + last->value_text();
    }
    if (suffix.empty()) return plain;
    if (options_.by_args_only) return row_for(suffix.substr(2), site.category);
    return row_for((site.name.empty() ? "(unnamed)" : site.name) + suffix + "]", site.category);
  }

  /// --by arg:KEY: every key must name some span argument of the dump.
  bool check_arg_keys(const dump_reader& r, std::string& error) const {
    if (options_.by_args.empty()) return true;
    std::set<std::string> keys;
    for (const auto& w : r.writers())
      for (const auto& site : w.second.sites)
        if (format::is_argument(site.second.kind))
          keys.insert(site.second.name);
    for (const std::string& key : options_.by_args) {
      if (keys.count(key) != 0) continue;
      std::string known;
      for (const std::string& k : keys) known += (known.empty() ? "" : ", ") + ("\"" + k + "\"");
      return fail(error, "no span argument named \"" + key + "\" in the dump" +
                             (known.empty() ? std::string(" (it has none: see EDGETRACE_ARG)") : " (arguments: " + known + ")"));
    }
    return true;
  }

  /// Per flow name, one end-to-end latency per id: first step's begin to
  /// last step's end. A flow counts when its first step passes the warm-up
  /// and phase filters.
  void add_flows(flow_collector& flows, std::int64_t cutoff) {
    for (auto& flow : flows.sorted()) {
      const std::vector<flow_step>& steps = flow.second;
      std::int64_t end = steps.front().end_ns;
      for (const flow_step& step : steps) end = std::max(end, step.end_ns);
      std::size_t index = result_.iterations.size();
      for (std::size_t i = 0; i < result_.iterations.size(); ++i)
        if (result_.iterations[i].from_flow && result_.iterations[i].name == flow.first.name) index = i;
      if (index == result_.iterations.size()) {
        iteration_row it;
        it.name = flow.first.name;
        it.from_marks = false;
        it.from_flow = true;
        result_.iterations.push_back(std::move(it));
      }
      iteration_row& it = result_.iterations[index];
      if (steps.size() == 1) {  // one step has no latency from one step to another: not a sample
        ++it.single_step;
        continue;
      }
      if (steps.front().end_ns < cutoff || !in_phase(steps.front().writer, steps.front().begin_ns)) {
        ++it.skipped;
        continue;
      }
      it.latency.add(static_cast<std::uint64_t>(end - steps.front().begin_ns));
      if (it.first_ns == 0 && it.last_ns == 0) it.first_ns = it.last_ns = steps.front().begin_ns;
      it.first_ns = std::min(it.first_ns, steps.front().begin_ns);
      it.last_ns = std::max(it.last_ns, end);
    }
    for (iteration_row& it : result_.iterations)
      if (it.from_flow && it.last_ns > it.first_ns) it.wall_seconds = static_cast<double>(it.last_ns - it.first_ns) / 1e9;
  }

  /// Notes on annotations that were not used: arguments and flow steps
  /// outside every span, and allocation records that do not add up.
  void add_annotation_notes(const dump_reader& r, const span_annotations& notes, const memory_timelines& memory) {
    if (notes.unclaimed() != 0)
      result_.notes.push_back(r.path() + ": " + std::to_string(notes.unclaimed()) +
                              " argument(s) or flow step(s) recorded outside every span; not attached");
    memory_mismatches m;
    for (const auto& entry : memory.all()) m += entry.second.mismatches();
    if (m.total() == 0) return;
    result_.mismatches += m;
    result_.notes.push_back(r.path() + ": " + memory_mismatch_text(m));
  }

  int iteration_row_for(const std::string& name, bool marks) {
    for (std::size_t i = 0; i < result_.iterations.size(); ++i)
      if (!result_.iterations[i].from_flow && result_.iterations[i].name == name) return static_cast<int>(i);
    iteration_row it;
    it.name = name;
    it.from_marks = marks;
    result_.iterations.push_back(std::move(it));
    return static_cast<int>(result_.iterations.size() - 1);
  }

  /// Decides what delimits iterations in this dump: the named mark or span,
  /// or every mark name.
  bool prepare_iterations(const dump_reader& r, std::string& error) {
    std::set<std::string> marks, spans;
    for (const auto& w : r.writers())
      for (const auto& s : w.second.sites) {
        if (s.second.kind == format::site_kind::mark) marks.insert(s.second.name);
        if (s.second.kind == format::site_kind::span) spans.insert(s.second.name);
      }
    iterations_are_spans_ = false;
    warmup_marks_.clear();
    if (!options_.iteration.empty()) {
      if (marks.count(options_.iteration)) {
        iteration_row_for(options_.iteration, true);
        warmup_marks_ = options_.iteration;
      } else if (spans.count(options_.iteration)) {
        iterations_are_spans_ = true;
        iteration_row_for(options_.iteration, false);
      } else {
        std::string known;
        for (const auto& m : marks) known += (known.empty() ? "" : ", ") + ("mark \"" + m + "\"");
        return fail(error, "no mark or span named \"" + options_.iteration + "\" in the dump" +
                               (known.empty() ? std::string(" (it has no marks)") : " (marks: " + known + ")"));
      }
      return true;
    }
    for (const auto& m : marks) iteration_row_for(m, true);
    if (options_.skip_warmup > 0) {
      if (marks.empty())
        return fail(error, "--skip-warmup needs iterations: EDGETRACE_MARK marks in the dump, or --iteration "
                           "NAME naming a top-level span");
      if (marks.size() > 1)
        return fail(error, "--skip-warmup: the dump has several mark names; choose one with --iteration NAME");
      warmup_marks_ = *marks.begin();
    }
    return true;
  }

  /// --per: reads the dump's iterations (a forward pre-pass) under the
  /// thread, warm-up and phase filters, and adds them to the totals.
  bool prepare_per(dump_reader& r, std::int64_t cutoff, std::string& error) {
    per_active_ = !options_.per.empty();
    if (!per_active_) return true;
    per_ = iteration_windows();
    const bool ok = per_.collect(
        r, options_.per,
        [&](const thread_info* t, std::int64_t begin, std::int64_t end) {
          return thread_selected(*t, r) && end >= cutoff && in_phase(t->writer, begin);
        },
        error);
    if (!ok) return false;
    result_.per = options_.per;
    result_.per_from_marks = per_.from_marks();
    result_.per_count += per_.count();
    result_.per_total_ns += per_.total_ns();
    result_.per_cut_at_pause += per_.cut_at_pause();
    return true;
  }

  /// What counts as waiting, in words, for the header ("" = nothing).
  std::string wait_rule() const {
    std::string rule;
    if (options_.wait) rule = "names matching /" + options_.wait_pattern + "/";
    if (options_.wait && options_.wait_pattern == summary_options::default_wait_pattern()) rule += "i";
    if (!options_.wait_categories.empty()) {
      std::string list;
      for (const std::string& c : options_.wait_categories) list += (list.empty() ? "" : ",") + c;
      rule += (rule.empty() ? "" : " or ") + std::string("category ") + list;
    }
    return rule;
  }

  /// --phase: the [begin, end) ranges of that phase per writer (a phase
  /// lasts until the writer's next one). Fails when no writer has it.
  bool prepare_phase(const dump_reader& r, std::string& error) {
    phase_ranges_.clear();
    if (options_.phase.empty()) return true;
    std::set<std::string> known;
    for (const auto& w : r.writers()) {
      const std::vector<phase_change>& phases = w.second.phases;
      for (std::size_t i = 0; i < phases.size(); ++i) {
        known.insert(phases[i].name);
        if (phases[i].name != options_.phase) continue;
        const std::int64_t end = i + 1 < phases.size() ? phases[i + 1].ns : std::numeric_limits<std::int64_t>::max();
        phase_ranges_[&w.second].emplace_back(phases[i].ns, end);
      }
    }
    if (!phase_ranges_.empty()) return true;
    std::string names;
    for (const auto& name : known) names += (names.empty() ? "" : ", ") + ("\"" + name + "\"");
    return fail(error, "no phase named \"" + options_.phase + "\" in the dump" +
                           (names.empty() ? std::string(" (it has no phases: see edgetrace::phase)")
                                          : " (phases: " + names + ")"));
  }

  /// Whether time `ns` of writer `w` falls in the --phase (always without it).
  bool in_phase(const writer_info* w, std::int64_t ns) const {
    if (options_.phase.empty()) return true;
    const auto found = phase_ranges_.find(w);
    if (found == phase_ranges_.end()) return false;
    for (const auto& range : found->second)
      if (ns >= range.first && ns < range.second) return true;
    return false;
  }

  /// Forward pre-pass: the time before which spans belong to the first K
  /// iterations (the (K+1)-th mark, or the end of the K-th iteration span).
  bool find_warmup_cutoff(dump_reader& r, std::int64_t& cutoff, std::string& error) {
    const std::uint64_t k = options_.skip_warmup;
    const bool spans = iterations_are_spans_;
    const std::size_t keep = static_cast<std::size_t>(spans ? k : k + 1);
    std::priority_queue<std::int64_t> smallest;  // max-heap of the `keep` smallest times
    const std::string& name = spans ? options_.iteration : warmup_marks_;
    const bool ok = r.read_events([&](const event& e) {
      if (e.site == nullptr || e.site->name != name) return;
      std::int64_t t;
      if (spans && e.kind == event_kind::span) t = e.end_ns + 1;
      else if (!spans && e.kind == event_kind::instant && e.site->kind == format::site_kind::mark) t = e.begin_ns;
      else return;
      if (smallest.size() < keep) smallest.push(t);
      else if (t < smallest.top()) {
        smallest.pop();
        smallest.push(t);
      }
    });
    if (!ok) return fail(error, r.error());
    if (smallest.size() < keep) {
      cutoff = std::numeric_limits<std::int64_t>::max();
      result_.notes.push_back(r.path() + ": only " + std::to_string(smallest.size()) + " \"" + name +
                              "\" boundaries, fewer than --skip-warmup needs: everything was skipped");
    } else {
      cutoff = smallest.top();
    }
    return true;
  }

  /// Converts the rows holding the most exact samples to buckets until the
  /// total is back under half the budget.
  void enforce_budget() {
    std::size_t total = 0;
    for (const summary_row& row : rows_) total += row.host.exact_samples();
    for (const iteration_row& it : result_.iterations) total += it.latency.exact_samples();
    while (total > options_.exact_budget / 2) {
      summary_row* largest = nullptr;
      for (summary_row& row : rows_)
        if (row.host.exact() && (!largest || row.host.exact_samples() > largest->host.exact_samples())) largest = &row;
      if (!largest || largest->host.exact_samples() == 0) break;
      total -= largest->host.exact_samples();
      largest->host.to_buckets();
    }
    exact_added_ = total;
  }

  summary_options options_;
  summary_result result_;
  std::vector<summary_row> rows_;
  std::unordered_map<std::string, int> row_index_;
  std::unordered_map<const site_info*, site_slot> sites_;
  bool iterations_are_spans_ = false;
  std::string warmup_marks_;
  std::map<const writer_info*, std::vector<std::pair<std::int64_t, std::int64_t>>> phase_ranges_;
  std::size_t exact_added_ = 0;
  bool per_active_ = false;
  iteration_windows per_;
  static constexpr bool multi_dump_labels_ = false;
};

}  // namespace reader
}  // namespace v1
}  // namespace edgetrace

// The output functions (summary_table, summary_csv, summary_json) live in
// their own header; including summary.hpp keeps giving them.
#include "summary_format.hpp"
