// SPDX-License-Identifier: MIT
// Per-name (category, thread) span statistics and per-iteration latency from one or more dumps (`edgetrace summary`).
#pragma once

#include <memory>
#include <string>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/summary/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {
class summary_engine;
}  // namespace detail

/// Builds a summary over one or more dumps, streaming each (memory: rows,
/// threads, and the exact-sample budget; not the dump size).
class summary_builder {
 public:
  EDGETRACE_DETAIL_READER_API explicit summary_builder(summary_options options);
  EDGETRACE_DETAIL_READER_API summary_builder(summary_builder&&) noexcept;
  EDGETRACE_DETAIL_READER_API summary_builder& operator=(summary_builder&&) noexcept;
  EDGETRACE_DETAIL_READER_API ~summary_builder();

  /// Adds one opened dump (metadata read or not). Returns false with `error`
  /// set on an I/O error or an option the dump cannot satisfy (an unknown
  /// --iteration name, --skip-warmup without iterations). Stages: the
  /// selection's pre-passes, sites and threads, one backward walk (spans
  /// and marks), flows, annotations, GPU spans, notes.
  EDGETRACE_DETAIL_READER_API bool add(dump_reader& r, std::string& error);
  /// Sorts, computes shares, applies --top and returns the result.
  EDGETRACE_DETAIL_READER_API summary_result finish();

 private:
  std::unique_ptr<detail::summary_engine> engine_;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/span_walker.hpp>
#include <edgetrace/sinks/latency.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>
#include <edgetrace/sinks/summary/selection.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// What summary_builder does (its one member).
class summary_engine : private summary_selection {
 public:
  explicit summary_engine(summary_options options) : summary_selection(std::move(options)) {}

  /// Adds one opened dump (metadata read or not). Returns false with `error`
  /// set on an I/O error or an option the dump cannot satisfy (an unknown
  /// --iteration name, --skip-warmup without iterations). Stages: the
  /// selection's pre-passes, sites and threads, one backward walk (spans
  /// and marks), flows, annotations, GPU spans, notes.
  bool add(dump_reader& r, std::string& error) {
    if (!r.metadata_read() && !r.read_metadata()) return fail(error, r.error());
    std::int64_t cutoff = std::numeric_limits<std::int64_t>::min();
    if (!prepare(r, cutoff, error)) return false;
    const std::uint64_t other_phases_before = result_.spans_other_phases;
    if (r.has_events()) result_.wall_ns += static_cast<std::uint64_t>(r.last_ns() - r.first_ns());
    prepare_sites(r);
    dump_pass pass(r, cutoff);
    if (!pass.prefilter.read(r)) return fail(error, "an annotations chunk no longer reads (the file changed?)");
    pass.flows.use(&pass.prefilter);
    prepare_threads(r, pass);
    const bool ok = walk_spans(
        r, [&](const span_record& s) { add_span(pass, s); }, [&](const event& e) { add_mark(pass, e); });
    if (!ok) return fail(error, r.error());
    add_flows(pass.flows, cutoff);
    add_annotation_notes(r, pass.notes, pass.memory);
    if (r.has_gpu() && !add_gpu_spans(r, pass)) return fail(error, r.error());
    add_dump_notes(r, pass, other_phases_before);
    return true;
  }

  /// Sorts, computes shares, applies --top and returns the result.
  summary_result finish() {
    summary_result out = std::move(result_);
    out.by = options_.by;
    out.columns = options_.columns;
    out.by_args = options_.by_args;
    out.by_args_only = options_.by_args_only;
    out.sort_by = options_.sort_by;
    out.ascending = options_.ascending;
    out.phase = options_.phase;
    out.wait_rule = wait_rule();
    for (thread_usage& t : out.threads_usage) t.busy_ns = t.covered_ns - std::min(t.wait_ns, t.covered_ns);
    // One row array at a time: a dump of a million distinct names holds a
    // million rows (reserve, then free the builder's).
    std::size_t kept = 0;
    for (const summary_row& row : rows_) kept += row.host.count() != 0 ? 1 : 0;
    out.rows.reserve(kept);
    for (summary_row& row : rows_) {
      if (row.host.count() == 0) continue;
      out.share_self_ns += row.self_ns - row.wait_self_ns;
      out.wait_self_ns += row.wait_self_ns;
      out.rows_waiting += row.waiting() ? 1 : 0;
      out.rows.push_back(std::move(row));
    }
    std::vector<summary_row>().swap(rows_);
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
  struct thread_slot {
    bool selected = true;
    int row = -1;  // by-thread row
    std::size_t usage = 0;
  };
  struct time_range {
    bool set = false;
    std::int64_t first = 0, last = 0;
    void extend(std::int64_t a, std::int64_t b) {
      if (!set || a < first) first = a;
      if (!set || b > last) last = b;
      set = true;
    }
  };

  /// What one add() keeps while it walks a dump: per-thread slots, the
  /// iteration marks and ranges, a site cache, the annotations.
  struct dump_pass {
    dump_pass(const dump_reader& r, std::int64_t cut) : reader(r), cutoff(cut), notes(r, span_order::walk_spans), memory(r) {}
    const dump_reader& reader;
    const std::int64_t cutoff;  ///< spans that end before it are warm-up
    std::unordered_map<const thread_info*, thread_slot> thread_slots;
    // Iteration marks per (thread, mark name): the later mark's time
    // (the walk is backwards).
    std::map<std::pair<const thread_info*, std::string>, std::int64_t> later_mark;
    std::map<std::string, std::size_t> iteration_index;
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
    span_annotations notes;
    flow_prefilter prefilter;  ///< single-step flows are counted, not kept
    flow_collector flows;
    const memory_timelines memory;
    const writer_info* memory_writer = nullptr;
    const memory_timeline* timeline = nullptr;
    std::vector<const annotation*> args;
  };

  /// The site's slot, through a 64-entry cache (spans of one site come in runs).
  const site_slot& slot_of(dump_pass& p, const site_info* s) {
    const std::size_t h = (reinterpret_cast<std::uintptr_t>(s) >> 4) & 63;
    if (p.cache_site[h] == s) return *p.cache_slot[h];
    const site_slot* slot = &sites_[s];
    p.cache_site[h] = s;
    p.cache_slot[h] = slot;
    return *slot;
  }

  /// One slot and one usage entry per thread of the dump.
  void prepare_threads(const dump_reader& r, dump_pass& p) {
    for (const thread_info* t : r.threads_in_order()) {
      thread_slot slot;
      slot.selected = thread_selected(*t, r);
      if (slot.selected && options_.by == group_by::thread) slot.row = row_for(thread_label(*t, r), "");
      slot.usage = result_.threads_usage.size();
      thread_usage u;
      u.label = thread_label(*t, r);
      u.wall_ns = r.has_events() ? static_cast<std::uint64_t>(r.last_ns() - r.first_ns()) : 0;
      result_.threads_usage.push_back(u);
      p.thread_slots.emplace(t, slot);
      ++result_.threads;
    }
    for (std::size_t i = 0; i < result_.iterations.size(); ++i) p.iteration_index[result_.iterations[i].name] = i;
  }

  /// One span of the walk: the filters (thread, warm-up, phase, name,
  /// time, --per), in that order, each counting what it leaves out; then
  /// thread usage, iteration latency and the span's row.
  void add_span(dump_pass& p, const span_record& s) {
    ++result_.spans_read;
    p.notes.collect(s.thread, s.site, s.begin_ns, s.end_ns, &p.args, &p.flows, s.depth == 0);
    if (s.thread != p.last_thread) {
      p.last_thread = s.thread;
      p.slot = &p.thread_slots[s.thread];
    }
    if (!p.slot->selected) {
      ++result_.spans_filtered;
      return;
    }
    if (s.end_ns < p.cutoff) {
      ++result_.spans_warmup;
      return;
    }
    if (!in_phase(s.thread->writer, s.begin_ns)) {
      ++result_.spans_other_phases;
      return;
    }
    result_.self_total_ns += s.self_ns;
    const std::uint64_t duration = s.duration();
    thread_usage& usage = result_.threads_usage[p.slot->usage];
    if (s.depth == 0) {
      usage.covered_ns += duration;
      ++usage.spans;
    }
    const site_slot& site = slot_of(p, s.site);
    if (site.iteration >= 0) {
      iteration_row& it = result_.iterations[static_cast<std::size_t>(site.iteration)];
      it.latency.add(duration);
      p.iteration_range[static_cast<std::size_t>(site.iteration)].extend(s.begin_ns, s.end_ns);
    }
    if (site.waiting) usage.wait_ns += s.self_ns;
    int row = options_.by == group_by::thread ? (site.selected ? p.slot->row : -1) : site.row;
    if (row < 0 || duration < options_.min_time_ns || duration > options_.max_time_ns) {
      ++result_.spans_filtered;
      return;
    }
    if (per_active_ && !per_.contains(s.thread, s.begin_ns, s.end_ns)) {
      ++result_.spans_outside_per;
      return;
    }
    if (!options_.by_args.empty() && !p.args.empty()) row = arg_row(*s.site, p.args, row);
    summary_row& out = rows_[static_cast<std::size_t>(row)];
    const bool was_exact = out.host.exact();
    add_to_row(p, out, s, site.waiting);
    ++result_.spans_in_rows;
    if (was_exact && ++exact_added_ > options_.exact_budget) enforce_budget();
  }

  /// A counted span into its row: duration, self (and waiting) time, first
  /// begin, memory peaks.
  void add_to_row(dump_pass& p, summary_row& out, const span_record& s, bool waiting) {
    out.host.add(s.duration());
    out.self_ns += s.self_ns;
    if (waiting) out.wait_self_ns += s.self_ns;
    const std::int64_t since_start = s.begin_ns - p.reader.first_ns();
    if (since_start < out.first_begin_ns || (since_start == out.first_begin_ns && s.depth < out.first_depth)) {
      out.first_begin_ns = since_start;
      out.first_depth = s.depth;
    }
    if (p.memory.empty()) return;
    if (s.writer != p.memory_writer) {
      p.memory_writer = s.writer;
      p.timeline = p.memory.find(s.writer);
    }
    if (p.timeline == nullptr) return;
    const std::uint64_t peak = p.timeline->peak_during(s.begin_ns, s.end_ns);
    out.mem_peak = std::max(out.mem_peak, peak);
    out.mem_growth = std::max(out.mem_growth, p.timeline->growth_during(s.thread, s.begin_ns, s.end_ns));
    result_.memory = true;
  }

  /// One event of the walk: a mark that delimits iterations closes the
  /// interval to the same thread's later mark of that name.
  void add_mark(dump_pass& p, const event& e) {
    if (e.kind != event_kind::instant || e.site->kind != format::site_kind::mark) return;
    const auto found = p.iteration_index.find(e.site->name);
    if (found == p.iteration_index.end() || !result_.iterations[found->second].from_marks) return;
    iteration_row& it = result_.iterations[found->second];
    auto key = std::make_pair(e.thread, e.site->name);
    const auto later = p.later_mark.find(key);
    if (later == p.later_mark.end()) {
      p.later_mark.emplace(key, e.begin_ns);
      return;
    }
    if (crosses_pause(*e.writer, e.begin_ns, later->second)) {
      ++it.cut_at_pause;
      p.cut_ranges[found->second].emplace_back(e.begin_ns, later->second);
    } else if (e.begin_ns >= p.cutoff && in_phase(e.writer, e.begin_ns)) {
      it.latency.add(static_cast<std::uint64_t>(later->second - e.begin_ns));
      p.iteration_range[found->second].extend(e.begin_ns, later->second);
    } else {
      ++it.skipped;
    }
    later->second = e.begin_ns;
  }

  /// GPU time per row: a GPU scope's span goes to the row of its host
  /// span (same site, same thread), under the same filters. False on a
  /// read error.
  bool add_gpu_spans(dump_reader& r, dump_pass& p) {
    return r.read_gpu_spans([&](const gpu_span& g) {
      if (!g.resolved || g.site == nullptr || g.host_end_ns < p.cutoff) return;
      const auto found = sites_.find(g.site);
      if (found == sites_.end()) return;
      const auto thread = g.thread != nullptr ? p.thread_slots.find(g.thread) : p.thread_slots.end();
      if (thread != p.thread_slots.end() && !thread->second.selected) return;
      int row = found->second.row;
      if (options_.by == group_by::thread)
        row = found->second.selected && thread != p.thread_slots.end() ? thread->second.row : -1;
      const std::uint64_t host = static_cast<std::uint64_t>(g.host_end_ns - g.host_begin_ns);
      if (row < 0 || host < options_.min_time_ns || host > options_.max_time_ns) return;
      rows_[static_cast<std::size_t>(row)].gpu.add(g.gpu_duration_ns);
      ++result_.gpu_spans;
    });
  }

  /// This dump's iteration ranges into each iteration's wall time (less
  /// the intervals cut at a pause) and first/last times.
  void close_iteration_ranges(dump_pass& p) {
    for (const auto& range : p.iteration_range) {
      iteration_row& it = result_.iterations[range.first];
      const time_range& t = range.second;
      std::int64_t wall = t.last - t.first;
      for (const auto& cut : p.cut_ranges[range.first])
        if (cut.first >= t.first && cut.second <= t.last) wall -= cut.second - cut.first;
      if (wall > 0) it.wall_seconds += static_cast<double>(wall) / 1e9;
      if (it.first_ns == 0 && it.last_ns == 0) {
        it.first_ns = t.first;
        it.last_ns = t.last;
      }
    }
  }

  /// The notes a dump adds: records lost, a snapshot's window, the
  /// iteration ranges closed, spans left out by --phase and the warm-up.
  void add_dump_notes(const dump_reader& r, dump_pass& p, std::uint64_t other_phases_before) {
    // Lost records are part of the answer: say how many and where.
    const dropped_records dropped = count_dropped(r, [&](const thread_info& t) { return thread_label(t, r); });
    if (dropped.count != 0) {
      result_.dropped += dropped.count;
      result_.notes.push_back(r.path() + ": " + dropped_records_text(dropped) +
                              "; the rows count recorded spans only (" + keep_dropped_advice(r) + ")");
    }
    // A snapshot's missing past is not a loss: say what the dump holds.
    for (const writer_info* w : r.writers_in_order())
      if (w->snapshot.present) result_.notes.push_back(r.path() + ": " + snapshot_text(w->snapshot));
    close_iteration_ranges(p);
    if (!options_.phase.empty())
      result_.notes.push_back(r.path() + ": phase \"" + options_.phase + "\": " +
                              std::to_string(result_.spans_other_phases - other_phases_before) +
                              " span(s) that began outside it are left out of every table");
    if (p.cutoff != std::numeric_limits<std::int64_t>::min()) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "%s: skipped %llu warm-up iteration(s): %llu span(s) that ended before %s after the first "
                    "event are left out of every table",
                    r.path().c_str(), static_cast<unsigned long long>(options_.skip_warmup),
                    static_cast<unsigned long long>(result_.spans_warmup),
                    detail::format_duration(static_cast<std::uint64_t>(p.cutoff - r.first_ns())).c_str());
      result_.notes.push_back(text);
    }
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

  void prepare_sites(const dump_reader& r) {
    sites_.clear();
    std::size_t span_sites = 0;
    for (const auto& w : r.writers()) span_sites += w.second.sites.size();
    sites_.reserve(span_sites);
    rows_.reserve(rows_.size() + span_sites);
    for (const auto& w : r.writers())
      for (const auto& entry : w.second.sites) {
        const site_info& s = entry.second;
        if (s.kind != format::site_kind::span) continue;
        site_slot slot;
        bool keep = true;
        if (!options_.categories.empty())
          keep = std::find(options_.categories.begin(), options_.categories.end(), s.category) !=
                 options_.categories.end();
        if (keep && options_.filter) keep = options_.filter.matches(s.name);
        slot.selected = keep;
        slot.waiting = (options_.wait && options_.wait.matches(s.name)) ||
                       std::find(options_.wait_categories.begin(), options_.wait_categories.end(), s.category) !=
                           options_.wait_categories.end();
        if (keep && options_.by != group_by::thread)
          slot.row = options_.by == group_by::name ? row_for(s.name.empty() ? "(unnamed)" : s.name, s.category)
                                                   : row_for(s.category, "");
        if (!iteration_name_.empty() && iterations_are_spans_ && s.name == iteration_name_)
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

  /// The iteration row of flow `name`, made when new.
  iteration_row& flow_row(const std::string& name) {
    for (iteration_row& it : result_.iterations)
      if (it.from_flow && it.name == name) return it;
    iteration_row it;
    it.name = name;
    it.from_marks = false;
    it.from_flow = true;
    result_.iterations.push_back(std::move(it));
    return result_.iterations.back();
  }

  /// Per flow name, one end-to-end latency per id: first step's begin to
  /// last step's end. A flow counts when its first step passes the warm-up
  /// and phase filters.
  void add_flows(flow_collector& flows, std::int64_t cutoff) {
    // Rows in name order; one step has no latency from one step to
    // another: not a sample.
    std::set<std::string> names;
    for (const auto& single : flows.singles()) names.insert(single.first);
    names.insert(flows.names().begin(), flows.names().end());
    for (const std::string& name : names) flow_row(name);
    for (const auto& single : flows.singles()) flow_row(single.first).single_step += single.second;
    const bool read = flows.for_each_flow([&](const std::vector<flow_collector::step>& steps) {
      std::int64_t end = steps.front().end_ns;
      for (const flow_collector::step& step : steps) end = std::max(end, step.end_ns);
      iteration_row& it = flow_row(flows.names()[steps.front().name]);
      if (steps.size() == 1) {
        ++it.single_step;
        return;
      }
      if (steps.front().end_ns < cutoff || !in_phase(steps.front().writer, steps.front().begin_ns)) {
        ++it.skipped;
        return;
      }
      it.latency.add(static_cast<std::uint64_t>(end - steps.front().begin_ns));
      if (it.first_ns == 0 && it.last_ns == 0) it.first_ns = it.last_ns = steps.front().begin_ns;
      it.first_ns = std::min(it.first_ns, steps.front().begin_ns);
      it.last_ns = std::max(it.last_ns, end);
    });
    if (!read) result_.notes.push_back("flow latencies left incomplete: a temporary file could not be read back");
    for (iteration_row& it : result_.iterations)
      if (it.from_flow && it.last_ns > it.first_ns) it.wall_seconds = static_cast<double>(it.last_ns - it.first_ns) / 1e9;
  }

  /// Notes on annotations that were not used: arguments and flow steps
  /// outside every span, and allocation records that do not add up.
  void add_annotation_notes(const dump_reader& r, span_annotations& notes, const memory_timelines& memory) {
    if (notes.unclaimed() != 0) {
      const unattached_notes u = unattached(r, notes);
      if (u.outside != 0)
        result_.notes.push_back(r.path() + ": " + std::to_string(u.outside) +
                                " argument(s) or flow step(s) recorded outside every span; not attached");
      if (u.open != 0)
        result_.notes.push_back(r.path() + ": " + std::to_string(u.open) + " argument(s) or flow step(s) " +
                                u.open_text() + "; not attached");
    }
    memory_mismatches m;
    for (const auto& entry : memory.all()) m += entry.second.mismatches();
    if (m.total() == 0) return;
    result_.mismatches += m;
    result_.notes.push_back(r.path() + ": " + memory_mismatch_text(m));
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

  std::vector<summary_row> rows_;
  std::unordered_map<std::string, int> row_index_;
  std::unordered_map<const site_info*, site_slot> sites_;
  std::size_t exact_added_ = 0;
};

}  // namespace detail

EDGETRACE_DETAIL_READER_API summary_builder::summary_builder(summary_options options)
    : engine_(new detail::summary_engine(std::move(options))) {}
EDGETRACE_DETAIL_READER_API summary_builder::summary_builder(summary_builder&&) noexcept = default;
EDGETRACE_DETAIL_READER_API summary_builder& summary_builder::operator=(summary_builder&&) noexcept = default;
EDGETRACE_DETAIL_READER_API summary_builder::~summary_builder() = default;
EDGETRACE_DETAIL_READER_API bool summary_builder::add(dump_reader& r, std::string& error) {
  return engine_->add(r, error);
}
EDGETRACE_DETAIL_READER_API summary_result summary_builder::finish() { return engine_->finish(); }

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
