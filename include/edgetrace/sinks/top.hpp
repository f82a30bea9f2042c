// SPDX-License-Identifier: MIT
// The `edgetrace top` table: calls, rate and latency per span name over the last seconds of a trace, in bounded memory.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Options of top_window.
struct top_options {
  std::uint64_t window_ns = 5000000000u;  ///< the table covers spans that ended in the last window_ns
  std::size_t rows = 20;                  ///< rows shown (0: all), the most total time first
  /// Spans kept at most (24 bytes each: 24 MiB). Past it the oldest go
  /// first, and the table says its window is shorter than asked.
  std::size_t max_samples = std::size_t{1} << 20;
  /// Iterations kept at most (16 bytes each: 4 MiB; 52,000 a second over
  /// the 5 s window). Past it the oldest go first, and the iteration's line
  /// says it covers the latest ones only.
  std::size_t max_iterations = std::size_t{1} << 18;
  /// --per NAME: also the iteration's rate and latency over the window
  /// (every span NAME, or the time between two marks NAME of one thread).
  std::string per;
};

/// The iteration's line of the table (with top_options::per).
struct top_iteration {
  bool from_marks = false;     ///< marks seen under that name (else spans)
  std::uint64_t count = 0;     ///< iterations that ended in the window
  double per_second = 0;       ///< count / the window's covered length
  std::uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
  bool capped = false;  ///< max_iterations cut its window short: count and rate cover the latest ones
};

/// One row of the table: spans of one name that ended in the window.
struct top_row {
  std::string name;
  std::uint64_t calls = 0;
  double per_second = 0;  ///< calls / the window's covered length
  std::uint64_t total_ns = 0, mean_ns = 0, p50_ns = 0, p99_ns = 0, max_ns = 0;
};

struct top_result {
  std::vector<top_row> rows;     ///< the most total time first, at most options.rows
  std::size_t rows_before_top = 0;
  std::uint64_t spans = 0;       ///< spans in the window
  bool has_spans = false;        ///< some span was seen (latest_ns is valid)
  std::int64_t latest_ns = 0;    ///< the latest span end seen: the window ends there
  std::uint64_t window_ns = 0;   ///< the window's covered length (shorter while the trace is)
  bool capped = false;           ///< max_samples cut the window short
  top_iteration iteration;       ///< with top_options::per
};

/// The spans of the last window_ns of a trace, by name. Feed spans in
/// roughly end order (per thread they are; threads' chunks interleave)
/// with add(), then ask for table(). The window ends at the latest span
/// end seen, so a finished dump and a live one are read alike.
///
/// Memory: 24 bytes per span in the window (at most max_samples) and one
/// entry per name. Cost: add() is a hash lookup and a push; table() sorts
/// each row's durations (the exact nearest-rank percentiles `summary`
/// gives).
class top_window {
 public:
  explicit top_window(top_options options = {}) : options_(options) {}

  /// Adds a span that ended at `end_ns` and lasted `duration_ns`; `key`
  /// identifies its site (one per name is best; equal names share a row
  /// anyway), `name` is read only the first time a key is seen.
  EDGETRACE_DETAIL_READER_API void add(const void* key, const std::string& name, std::int64_t end_ns,
                                       std::uint64_t duration_ns);

  /// With top_options::per: a span named `per` is one iteration (call
  /// after add()). Memory: 16 bytes per iteration in the window (at most
  /// max_iterations).
  void add_iteration_span(std::int64_t end_ns, std::uint64_t duration_ns) { add_iteration(end_ns, duration_ns); }
  /// With top_options::per: a mark named `per` at `ns` on `thread` (any
  /// key that tells threads apart); the time since that thread's previous
  /// one is an iteration.
  EDGETRACE_DETAIL_READER_API void add_iteration_mark(std::uint64_t thread, std::int64_t ns);

  /// The table of the spans that ended in [latest - window_ns, latest].
  EDGETRACE_DETAIL_READER_API top_result table() const;

  const top_options& options() const noexcept { return options_; }

 private:
  struct sample {
    std::int64_t end_ns;
    std::uint64_t duration_ns;
    std::uint32_t row;
  };
  struct iteration {
    std::int64_t end_ns;
    std::uint64_t duration_ns;
  };
  EDGETRACE_DETAIL_READER_API void add_iteration(std::int64_t end_ns, std::uint64_t duration_ns);
  std::int64_t cutoff_ns() const noexcept {
    return latest_ns_ - static_cast<std::int64_t>(std::min<std::uint64_t>(options_.window_ns, std::uint64_t{1} << 62));
  }

  top_options options_;
  std::deque<sample> samples_;
  std::deque<iteration> iterations_;
  std::unordered_map<std::uint64_t, std::int64_t> last_mark_;  // per thread: its latest mark
  bool from_marks_ = false;
  bool iterations_capped_ = false;
  std::unordered_map<const void*, std::uint32_t> keys_;
  std::unordered_map<std::string, std::uint32_t> rows_by_name_;
  std::vector<std::string> names_;
  bool has_spans_ = false;
  bool capped_ = false;
  std::int64_t latest_ns_ = 0;
  std::int64_t first_ns_ = 0;
};

/// One line of a writer's device as last sampled (1.9): the slowest CPU
/// clock, the CPUs' mean busy share, other processes' load, the hottest
/// zone, MemAvailable, the GPU's clock and load, each rail's power, and
/// the traced thread that waited longest on a run queue. "" when none.
EDGETRACE_DETAIL_READER_API std::string device_line(const writer_info& w);

/// The table as text: a line saying what it covers, then name, calls,
/// calls/s, mean, p50, p99, max (durations as `summary` prints them).
EDGETRACE_DETAIL_READER_API std::string top_table(const top_result& t, const top_options& options);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>

#include <edgetrace/decode/device.hpp>
#include <edgetrace/sinks/latency.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

EDGETRACE_DETAIL_READER_API std::string device_line(const writer_info& w) {
  std::string out;
  const auto add = [&out](const std::string& part) { out += (out.empty() ? "device: " : ", ") + part; };
  const std::vector<device_series> all = device_series_of(w);
  const device_series* slowest_clock = nullptr;
  const device_series* hottest = nullptr;
  const device_series* longest_wait = nullptr;
  double busy = 0;
  int cpus = 0;
  const auto last = [](const device_series* s) { return s->points.back().value; };
  for (const device_series& s : all) {
    switch (s.track->quantity) {
      case format::device_quantity::cpu_khz:
        if (slowest_clock == nullptr || last(&s) < last(slowest_clock)) slowest_clock = &s;
        break;
      case format::device_quantity::cpu_busy_permille:
        busy += last(&s);
        ++cpus;
        break;
      case format::device_quantity::temperature_mc:
        if (hottest == nullptr || last(&s) > last(hottest)) hottest = &s;
        break;
      case format::device_quantity::thread_wait_ns_total:
        if (longest_wait == nullptr || last(&s) > last(longest_wait)) longest_wait = &s;
        break;
      default: break;
    }
  }
  if (slowest_clock != nullptr) add(detail::format_text("%s %.0f MHz (the slowest)", slowest_clock->track->name.c_str(), last(slowest_clock)));
  if (cpus != 0) add(detail::format_text("CPUs %.0f%% busy", busy / cpus));
  for (const device_series& s : all) {
    const double v = last(&s);
    switch (s.track->quantity) {
      case format::device_quantity::others_busy_permille: add(detail::format_text("others %.0f%% of a CPU", v)); break;
      case format::device_quantity::steal_permille:
        if (v > 0) add(detail::format_text("hypervisor took %.0f%% of a CPU", v));
        break;
      case format::device_quantity::mem_available_kb: add(detail::format_text("MemAvailable %.0f MB", v)); break;
      case format::device_quantity::gpu_hz: add(detail::format_text("GPU %.0f MHz", v)); break;
      case format::device_quantity::gpu_load_permille: add(detail::format_text("GPU load %.0f%%", v)); break;
      case format::device_quantity::power_mw: add(detail::format_text("%s %.1f W", s.track->name.c_str(), v)); break;
      default: break;
    }
  }
  if (hottest != nullptr) add(detail::format_text("%s %.1f C", hottest->track->name.c_str(), last(hottest)));
  if (longest_wait != nullptr && last(longest_wait) >= 1) {
    const std::string label = longest_wait->label;  // "thread NAME (TID) run-queue wait (%)"
    add(detail::format_text("%s waited %.0f%% on the run queue", label.substr(0, label.find(" run-queue")).c_str(),
                            last(longest_wait)));
  }
  return out.empty() ? out : out + "\n";
}

EDGETRACE_DETAIL_READER_API std::string top_table(const top_result& t, const top_options& options) {
  std::string out;
  if (!t.has_spans) return "no spans yet\n";
  char line[200];
  std::snprintf(line, sizeof line, "last %s of the trace: %llu span(s) in %zu name(s)%s\n",
                detail::readable_time(t.window_ns).c_str(), static_cast<unsigned long long>(t.spans),
                t.rows_before_top,
                t.capped ? " (the window holds the latest spans only: memory limit)"
                : t.window_ns < options.window_ns ? " (the trace is shorter than the window)"
                                                  : "");
  out += line;
  if (!options.per.empty()) {
    const top_iteration& it = t.iteration;
    if (it.count == 0) {
      std::snprintf(line, sizeof line, "iteration \"%.60s\": none ended in the window\n", options.per.c_str());
    } else {
      std::snprintf(line, sizeof line, "iteration \"%.60s\" (%s): %llu, %.1f/s, p50 %s, p99 %s, max %s%s\n",
                    options.per.c_str(), it.from_marks ? "between marks" : "span",
                    static_cast<unsigned long long>(it.count), it.per_second, detail::readable_time(it.p50_ns).c_str(),
                    detail::readable_time(it.p99_ns).c_str(), detail::readable_time(it.max_ns).c_str(),
                    it.capped ? " (the latest iterations only: memory limit)" : "");
    }
    out += line;
  }
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"name", "calls", "calls/s", "mean", "p50", "p99", "max"});
  for (const top_row& r : t.rows) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f", r.per_second);
    cells.push_back({r.name, std::to_string(r.calls), rate, detail::readable_time(r.mean_ns),
                     detail::readable_time(r.p50_ns), detail::readable_time(r.p99_ns), detail::readable_time(r.max_ns)});
  }
  out += detail::render_table(cells, 1);
  if (t.rows.size() < t.rows_before_top)
    out += "(" + std::to_string(t.rows_before_top - t.rows.size()) + " more name(s); --top N shows more)\n";
  return out;
}

EDGETRACE_DETAIL_READER_API void top_window::add(const void* key, const std::string& name, std::int64_t end_ns,
                                                 std::uint64_t duration_ns) {
  auto found = keys_.find(key);
  if (found == keys_.end()) {
    auto row = rows_by_name_.emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (row.second) names_.push_back(name);
    found = keys_.emplace(key, row.first->second).first;
  }
  if (!has_spans_ || end_ns > latest_ns_) latest_ns_ = end_ns;
  if (!has_spans_) first_ns_ = end_ns - static_cast<std::int64_t>(duration_ns);
  has_spans_ = true;
  first_ns_ = std::min(first_ns_, end_ns - static_cast<std::int64_t>(duration_ns));
  samples_.push_back(sample{end_ns, duration_ns, found->second});
  if (samples_.size() > options_.max_samples) {
    samples_.pop_front();
    capped_ = true;
  }
  // Spans that left the window go now (memory stays the window's).
  const std::int64_t cutoff = cutoff_ns();
  while (!samples_.empty() && samples_.front().end_ns < cutoff) samples_.pop_front();
}

EDGETRACE_DETAIL_READER_API void top_window::add_iteration_mark(std::uint64_t thread, std::int64_t ns) {
  from_marks_ = true;
  const auto previous = last_mark_.find(thread);
  if (previous != last_mark_.end() && ns >= previous->second)
    add_iteration(ns, static_cast<std::uint64_t>(ns - previous->second));
  last_mark_[thread] = ns;
  if (!has_spans_ || ns > latest_ns_) latest_ns_ = ns;
  first_ns_ = has_spans_ ? std::min(first_ns_, ns) : ns;
  has_spans_ = true;
}

EDGETRACE_DETAIL_READER_API top_result top_window::table() const {
  top_result out;
  out.has_spans = has_spans_;
  out.latest_ns = latest_ns_;
  if (!has_spans_) return out;
  const std::int64_t cutoff = cutoff_ns();
  std::vector<latency_stats> stats(names_.size(), latency_stats(options_.max_samples + 1));
  std::int64_t oldest = latest_ns_;
  for (const sample& s : samples_) {
    if (s.end_ns < cutoff) continue;
    stats[s.row].add(s.duration_ns);
    oldest = std::min(oldest, s.end_ns);
    ++out.spans;
  }
  // Covered: the whole window once the trace is that long (or from the
  // oldest span kept, when max_samples cut it short).
  const std::int64_t start = capped_ ? oldest : std::max(cutoff, first_ns_);
  out.window_ns = latest_ns_ > start ? static_cast<std::uint64_t>(latest_ns_ - start) : 0;
  out.capped = capped_ && oldest > cutoff;
  const double seconds = static_cast<double>(out.window_ns) / 1e9;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const latency_stats& l = stats[i];
    if (l.count() == 0) continue;
    top_row r;
    r.name = names_[i];
    r.calls = l.count();
    r.per_second = seconds > 0 ? static_cast<double>(l.count()) / seconds : 0;
    r.total_ns = l.total();
    r.mean_ns = l.mean();
    r.p50_ns = l.percentile(50);
    r.p99_ns = l.percentile(99);
    r.max_ns = l.max();
    out.rows.push_back(std::move(r));
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const top_row& a, const top_row& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  out.rows_before_top = out.rows.size();
  if (options_.rows != 0 && out.rows.size() > options_.rows) out.rows.resize(options_.rows);
  // The iterations that ended in the same covered window, unless
  // max_iterations cut theirs shorter: then over their own.
  latency_stats iterations(options_.max_iterations + 1);
  std::int64_t iterations_start = start;
  if (iterations_capped_ && !iterations_.empty() && iterations_.front().end_ns > start) {
    iterations_start = iterations_.front().end_ns;
    out.iteration.capped = true;
  }
  for (const iteration& it : iterations_)
    if (it.end_ns >= iterations_start) iterations.add(it.duration_ns);
  const double iteration_seconds =
      latest_ns_ > iterations_start ? static_cast<double>(latest_ns_ - iterations_start) / 1e9 : 0;
  out.iteration.from_marks = from_marks_;
  out.iteration.count = iterations.count();
  out.iteration.per_second = iteration_seconds > 0 ? static_cast<double>(iterations.count()) / iteration_seconds : 0;
  out.iteration.p50_ns = iterations.percentile(50);
  out.iteration.p99_ns = iterations.percentile(99);
  out.iteration.max_ns = iterations.max();
  return out;
}

EDGETRACE_DETAIL_READER_API void top_window::add_iteration(std::int64_t end_ns, std::uint64_t duration_ns) {
  iterations_.push_back(iteration{end_ns, duration_ns});
  if (iterations_.size() > options_.max_iterations) {
    iterations_.pop_front();
    iterations_capped_ = true;
  }
  const std::int64_t cutoff = cutoff_ns();
  while (!iterations_.empty() && iterations_.front().end_ns < cutoff) iterations_.pop_front();
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
