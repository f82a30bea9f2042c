// SPDX-License-Identifier: MIT
// Slow iterations explained (`summary --per NAME`, the report): for the slowest iterations, which layers (span names) took longer than they usually do, what the device's samples say was different from the usual iterations (run-queue wait and involuntary switches of the iteration's thread, CPU clocks, temperatures, other processes' load, throttling, page faults, the GPU clock, free memory), where no sample was taken, and the command that writes that iteration alone.
//
// The usual iterations are those no longer than the median; an iteration
// more than a fifth longer than the median is slower than usual. Layers: each span name's self time in an
// iteration (all its spans there), against its median and spread over the
// iterations (over every stride-th one past 2 M iteration-name cells).
// Device: each quantity is measured for every iteration from the samples
// around it (totals: their increase between the last sample before the
// iteration and the first after; levels: the worst value sampled within a
// period of it) and named only when it lies beyond the usual iterations'
// spread in the direction that slows work: past their median by three
// scaled MADs and a floor per quantity (5 % of the time on a run queue, 10 %
// of a clock, 3 °C, a fifth of a CPU, ...); run-queue wait also when it is
// past the floor and the waiting it implies covers half of what the
// iteration took beyond the usual. The samples are EDGETRACE_SAMPLE_MS
// apart, so an iteration much shorter than that is judged by the period
// around it; the text says how long that was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

class iteration_windows;

/// A layer (span name) that took longer than usual in a slow iteration.
struct layer_excess {
  std::string name;
  std::uint64_t ns = 0;        ///< its self time in the iteration (all its spans there)
  std::uint64_t usual_ns = 0;  ///< its median self time per iteration
};

/// One of the slowest iterations and what differed in it.
struct slow_iteration {
  std::int64_t number = -1;  ///< as `csv --per` numbers iterations (from 0)
  const thread_info* thread = nullptr;
  std::int64_t begin_ns = 0, end_ns = 0;
  bool slower = false;                   ///< beyond the usual iterations' spread of duration
  std::vector<layer_excess> layers;      ///< at most 3, the largest excess first
  std::vector<std::string> differences;  ///< the device's state beyond the usual iterations'
  std::int64_t unsampled_ns = 0;         ///< no device sample around it for this long (> 3 periods), else 0
};

struct slow_iterations_result {
  std::string name;             ///< --per NAME
  std::string dump;             ///< the dump's path (for the command that opens an iteration)
  std::int64_t first_ns = 0;    ///< the dump's first event (--window counts from it)
  std::uint64_t iterations = 0;
  std::int64_t median_ns = 0;   ///< the iterations' median duration
  std::int64_t slower_ns = 0;   ///< longer than this (the median and a fifth) is slower than usual
  std::uint64_t period_us = 0;  ///< the sampling period (0: no device samples)
  bool has_device = false;
  std::uint64_t samples = 0;         ///< device samples of the writers the iterations ran in
  std::uint64_t usual_measured = 0;  ///< usual iterations the device's state was measured for
  bool too_few = false;              ///< too few of either to judge the device's state
  std::uint64_t layer_stride = 1;    ///< usual layer times from every stride-th iteration (0: not judged)
  std::uint64_t left_out = 0;   ///< iterations at or above p99 not listed (the default shows 10)
  std::vector<slow_iteration> slowest;
};

/// The slowest of the iterations `windows` collected from `r` under
/// `name` (its `slowest` longest, or with 0 those at or above the 99th
/// percentile, at most 10 listed): for each, the layers beyond their usual
/// time and what the device's samples say differed from the usual
/// iterations. Reads `r` once more (backwards, for self times); false with
/// `error` set when that fails.
EDGETRACE_DETAIL_READER_API bool explain_slow_iterations(dump_reader& r, const iteration_windows& windows,
                                                         const std::string& name, std::size_t slowest,
                                                         slow_iterations_result& out, std::string& error);

/// The same, reading `r` for the iterations. False with `error` set when
/// the dump cannot be read or has no span or mark of that name.
EDGETRACE_DETAIL_READER_API bool explain_slow_iterations(dump_reader& r, const std::string& name,
                                                         std::size_t slowest, slow_iterations_result& out,
                                                         std::string& error);

/// The text `summary --per NAME` prints after its table: per iteration one
/// line of findings, and one with the command that writes it alone.
EDGETRACE_DETAIL_READER_API std::string slow_iterations_text(const slow_iterations_result& s);

/// The same as JSON, for scripts: {"per", "iterations", "median_ns",
/// "slower_ns", "device": {...}, "slowest": [{"number", "thread", "tid",
/// "begin_ns", "end_ns", "slower", "layers": [{"name", "ns", "usual_ns"}],
/// "device": [...], "unsampled_ns", "window"}]}; times on the dump's clock.
EDGETRACE_DETAIL_READER_API std::string slow_iterations_json(const slow_iterations_result& s);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include <edgetrace/decode/device.hpp>
#include <edgetrace/decode/span_walker.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// The quantities an iteration is judged by.
enum slow_metric : std::size_t { m_wait, m_switches, m_clock, m_temperature, m_others, m_throttle, m_faults,
                                 m_gpu_clock, m_memory, m_steal, m_count };

/// A writer's samples per track, and its tracks by role.
class device_lookup {
 public:
  explicit device_lookup(const writer_info& w) : w_(&w), by_track_(device_samples_by_track(w.device)) {
    // At most an hour: a damaged dump's period must not overflow.
    period_ns_ = static_cast<std::int64_t>(std::min<std::uint64_t>(w.device.period_us, 3600000000u)) * 1000;
    for (const device_sample& s : w.device.samples) times_.push_back(s.ns);
    std::sort(times_.begin(), times_.end());
    times_.erase(std::unique(times_.begin(), times_.end()), times_.end());
  }

  std::int64_t period_ns() const noexcept { return period_ns_; }
  std::size_t sample_count() const noexcept { return times_.size(); }

  /// The time from the last sample at or before `begin` to the first at or
  /// after `end` (0 when the run has none on one side).
  std::int64_t unsampled(std::int64_t begin, std::int64_t end) const {
    const auto after = std::lower_bound(times_.begin(), times_.end(), end);
    auto before = std::upper_bound(times_.begin(), times_.end(), begin);
    if (after == times_.end() || before == times_.begin()) return 0;
    --before;
    return static_cast<std::int64_t>(std::min(static_cast<double>(*after) - static_cast<double>(*before), 9e18));
  }

  const writer_info& writer() const noexcept { return *w_; }

  /// The increase of track `t` from the last sample at or before `begin`
  /// to the first at or after `end`; false when either is missing. `span`
  /// gets the time between those two samples.
  bool increase(std::size_t t, std::int64_t begin, std::int64_t end, double& delta, std::int64_t& span) const {
    const std::vector<std::size_t>& list = by_track_[t];
    const auto after = std::lower_bound(list.begin(), list.end(), end, [&](std::size_t i, std::int64_t ns) {
      return w_->device.samples[i].ns < ns;
    });
    const auto before_end = std::upper_bound(list.begin(), list.end(), begin, [&](std::int64_t ns, std::size_t i) {
      return ns < w_->device.samples[i].ns;
    });
    if (after == list.end() || before_end == list.begin()) return false;
    const device_sample& a = w_->device.samples[*(before_end - 1)];
    const device_sample& b = w_->device.samples[*after];
    if (b.value < a.value || b.ns <= a.ns) return false;
    delta = static_cast<double>(b.value) - static_cast<double>(a.value);  // no int64 overflow on a damaged dump
    span = static_cast<std::int64_t>(std::min(static_cast<double>(b.ns) - static_cast<double>(a.ns), 9e18));
    return true;
  }

  /// The lowest (or highest) value of track `t` sampled within a period of
  /// [begin, end], divided by `scale_by` (0: as read); NaN when none.
  double extreme(std::size_t t, std::int64_t begin, std::int64_t end, bool lowest, double scale_by = 0) const {
    double best = std::numeric_limits<double>::quiet_NaN();
    const std::vector<std::size_t>& list = by_track_[t];
    const std::int64_t low = begin > std::numeric_limits<std::int64_t>::min() + period_ns_ ? begin - period_ns_ : begin;
    const std::int64_t high = end < std::numeric_limits<std::int64_t>::max() - period_ns_ ? end + period_ns_ : end;
    const auto from = std::lower_bound(list.begin(), list.end(), low, [&](std::size_t i, std::int64_t ns) {
      return w_->device.samples[i].ns < ns;
    });
    for (auto it = from; it != list.end() && w_->device.samples[*it].ns <= high; ++it) {
      double v = static_cast<double>(w_->device.samples[*it].value);
      if (scale_by > 0) v /= scale_by;
      if (std::isnan(best) || (lowest ? v < best : v > best)) best = v;
    }
    return best;
  }

  /// The tracks of `q` (system-wide, or of thread `thread_id`).
  std::vector<std::size_t> tracks(format::device_quantity q, std::uint64_t thread_id = 0) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < w_->device.tracks.size(); ++i)
      if (w_->device.tracks[i].quantity == q && w_->device.tracks[i].thread_id == thread_id) out.push_back(i);
    return out;
  }

 private:
  const writer_info* w_;
  std::vector<std::vector<std::size_t>> by_track_;
  std::vector<std::int64_t> times_;  ///< every sample's time, once, in order
  std::int64_t period_ns_ = 0;
};

/// What an iteration measured: a value per metric (NaN: unknown), and for
/// the text, the window of the totals and the track that gave an extreme.
struct iteration_measure {
  double value[m_count];
  std::int64_t span_ns = 0;
  std::size_t track[m_count] = {};
  iteration_measure() { std::fill(std::begin(value), std::end(value), std::numeric_limits<double>::quiet_NaN()); }
};

/// The worst of several tracks' extremes (lowest or highest), remembering which.
inline void worst_of(const device_lookup& d, const std::vector<std::size_t>& tracks, std::int64_t b, std::int64_t e,
                     bool lowest, bool share_of_max, iteration_measure& m, slow_metric k) {
  for (std::size_t t : tracks) {
    const std::int64_t max = d.writer().device.tracks[t].maximum;
    if (share_of_max && max <= 0) continue;
    const double v = d.extreme(t, b, e, lowest, share_of_max ? static_cast<double>(max) : 0);
    if (std::isnan(v)) continue;
    if (std::isnan(m.value[k]) || (lowest ? v < m.value[k] : v > m.value[k])) {
      m.value[k] = v;
      m.track[k] = t;
    }
  }
}

inline iteration_measure measure_iteration(const device_lookup& d, const thread_info* thread, std::int64_t b,
                                           std::int64_t e) {
  using Q = format::device_quantity;
  iteration_measure m;
  const std::uint64_t tid = thread != nullptr ? thread->thread_id : 0;
  double delta = 0;
  std::int64_t span = 0;
  for (std::size_t t : d.tracks(Q::thread_wait_ns_total, tid))
    if (d.increase(t, b, e, delta, span) && span > 0) {
      // One thread waits at most all of the time: a sample read late (its
      // flusher preempted between tick and file) must not say more.
      m.value[m_wait] = std::min(delta / static_cast<double>(span), 1.0);
      m.span_ns = span;
    }
  // Counts become rates: an iteration next to a sample is judged by two
  // periods, and its count by their length.
  const auto per_second = [](double count, std::int64_t ns) { return count * 1e9 / static_cast<double>(ns); };
  for (std::size_t t : d.tracks(Q::thread_involuntary_total, tid))
    if (d.increase(t, b, e, delta, span) && span > 0) m.value[m_switches] = per_second(delta, span);
  worst_of(d, d.tracks(Q::cpu_khz), b, e, true, true, m, m_clock);
  worst_of(d, d.tracks(Q::temperature_mc), b, e, false, false, m, m_temperature);
  worst_of(d, d.tracks(Q::others_busy_permille), b, e, false, false, m, m_others);
  worst_of(d, d.tracks(Q::gpu_hz), b, e, true, true, m, m_gpu_clock);
  worst_of(d, d.tracks(Q::mem_available_kb), b, e, true, false, m, m_memory);
  worst_of(d, d.tracks(Q::steal_permille), b, e, false, false, m, m_steal);
  for (Q q : {Q::throttle_total, Q::cgroup_throttled_total})
    for (std::size_t t : d.tracks(q))
      if (d.increase(t, b, e, delta, span) && span > 0)
        m.value[m_throttle] = (std::isnan(m.value[m_throttle]) ? 0 : m.value[m_throttle]) + per_second(delta, span);
  for (std::size_t t : d.tracks(Q::major_faults_total))
    if (d.increase(t, b, e, delta, span) && span > 0) m.value[m_faults] = per_second(delta, span);
  return m;
}

/// A metric's median and how far from it counts as different.
struct metric_spread {
  double median = std::numeric_limits<double>::quiet_NaN();
  double limit = 0;  ///< |value - median| past this, in the bad direction
};
using metric_spreads = std::array<metric_spread, m_count>;

inline metric_spread spread_of(std::vector<double> values, double floor, bool relative_floor) {
  metric_spread s;
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }), values.end());
  if (values.empty()) return s;
  const auto median_of = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  s.median = median_of(values);
  for (double& v : values) v = std::fabs(v - s.median);
  const double mad = median_of(values);
  s.limit = std::max(3 * 1.4826 * mad, relative_floor ? floor * std::fabs(s.median) : floor);
  return s;
}

/// "thread infer (1234)".
inline std::string thread_text(const thread_info* t) {
  if (t == nullptr) return "no thread";
  return "thread " + (t->name.empty() ? "#" + std::to_string(t->thread_id) : t->name) + " (" + std::to_string(t->os_tid) + ")";
}

/// The lines of what differed in one iteration of `duration_ns` from the
/// usual ones (`usual_ns`: their median duration), quoting a value only
/// where it lies beyond the usual in the direction that slows work.
inline std::vector<std::string> differences(const device_lookup& d, const iteration_measure& m,
                                            const metric_spreads& local, const metric_spreads& run_wide,
                                            const double (&floors)[m_count], std::int64_t duration_ns,
                                            std::int64_t usual_ns) {
  std::vector<std::string> out;
  static constexpr bool higher_is_bad[m_count] = {true, true, false, true, true, true, true, false, false, true};
  const double excess = static_cast<double>(duration_ns - usual_ns);
  // Beyond a baseline's spread; the run-queue wait also past the floor
  // with the waiting it implies (share x duration) covering half of the
  // time beyond the usual.
  const auto flagged = [&](const metric_spreads& s, std::size_t k) {
    if (std::isnan(m.value[k]) || std::isnan(s[k].median)) return false;
    const double past = higher_is_bad[k] ? m.value[k] - s[k].median : s[k].median - m.value[k];
    if (past > s[k].limit) return true;
    return k == m_wait && past > floors[k] && m.value[k] * static_cast<double>(duration_ns) >= excess / 2;
  };
  // Against the usual iterations around it; where those do not flag a
  // quantity and the whole run's do (a stretch longer than the
  // neighbourhood), against the run's. The text quotes the one that did.
  metric_spreads s = local;
  for (std::size_t k = 0; k < m_count; ++k)
    if (!flagged(local, k) && flagged(run_wide, k)) s[k] = run_wide[k];
  const auto beyond = [&](slow_metric k) { return flagged(s, k); };
  const auto& tracks = d.writer().device.tracks;
  if (beyond(m_wait)) {
    std::string line = format_text("waited on the run queue %.0f%% of the %s around it (usually %.0f%%)",
                                   100 * m.value[m_wait],
                                   format_duration(static_cast<std::uint64_t>(m.span_ns)).c_str(), 100 * s[m_wait].median);
    if (beyond(m_switches))
      line += format_text(", %.0f involuntary switches a second (usually %.0f)", m.value[m_switches], s[m_switches].median);
    out.push_back(line);
  }  // switches alone, without the wait, cost microseconds: not named
  if (beyond(m_clock)) {
    const device_track& t = tracks[m.track[m_clock]];
    out.push_back(format_text("%s at %.0f MHz (%.0f%% of its maximum; usually %.0f%%)", t.name.c_str(),
                              m.value[m_clock] * static_cast<double>(t.maximum) / 1000.0, 100 * m.value[m_clock],
                              100 * s[m_clock].median));
  }
  if (beyond(m_temperature))
    out.push_back(format_text("%s at %.1f C (usually %.1f C)", tracks[m.track[m_temperature]].name.c_str(),
                              m.value[m_temperature] / 1000.0, s[m_temperature].median / 1000.0));
  if (beyond(m_others))
    out.push_back(format_text("other processes used %.0f%% of a CPU (usually %.0f%%)", m.value[m_others] / 10.0,
                              s[m_others].median / 10.0));
  if (beyond(m_throttle))
    out.push_back(format_text("%.1f throttling events a second (thermal or CPU quota; usually %.1f)", m.value[m_throttle],
                              s[m_throttle].median));
  if (beyond(m_faults))
    out.push_back(format_text("%.0f major page faults a second (usually %.0f)", m.value[m_faults], s[m_faults].median));
  if (beyond(m_gpu_clock))
    out.push_back(format_text("GPU clock at %.0f%% of its maximum (usually %.0f%%)", 100 * m.value[m_gpu_clock],
                              100 * s[m_gpu_clock].median));
  if (beyond(m_steal))
    out.push_back(format_text("the hypervisor took %.0f%% of a CPU from this machine (steal; usually %.0f%%)",
                              m.value[m_steal] / 10.0, s[m_steal].median / 10.0));
  if (beyond(m_memory))
    out.push_back(format_text("MemAvailable %.0f MB (usually %.0f MB)", m.value[m_memory] / 1024.0,
                              s[m_memory].median / 1024.0));
  return out;
}

/// Each layer's (span name's) self time per iteration: exact for the
/// iterations asked about, and over every stride-th iteration for the
/// usual time (at most `max_cells` iteration-name cells: 8 MB).
class layer_times {
 public:
  static constexpr std::uint64_t max_cells = std::uint64_t{1} << 21;

  /// Reads `r` backwards once (walk_spans: self times). `wanted`: the
  /// numbers of the iterations whose layers are asked about.
  bool read(dump_reader& r, const iteration_windows& windows, const std::vector<std::int64_t>& wanted) {
    std::unordered_map<std::string, std::uint32_t> by_name;
    for (const writer_info* w : r.writers_in_order())
      for (const auto& site : w->sites) {
        if (site.second.kind != format::site_kind::span) continue;
        const auto added = by_name.emplace(site.second.name, static_cast<std::uint32_t>(names_.size()));
        if (added.second) names_.push_back(site.second.name);
        ids_[&site.second] = added.first->second;
      }
    const std::uint64_t n = windows.count(), l = names_.size();
    if (l > max_cells) stride_ = 0;  // more span names than cells: layers not judged
    if (n == 0 || l == 0 || l > max_cells) return true;
    stride_ = std::max<std::uint64_t>(1, (n * l + max_cells - 1) / max_cells);
    rows_ = (n + stride_ - 1) / stride_;
    cells_.assign(static_cast<std::size_t>(rows_ * l), 0.0f);
    for (std::int64_t number : wanted) wanted_.emplace(number, std::unordered_map<std::uint32_t, std::uint64_t>{});
    return walk_spans(
        r,
        [&](const span_record& s) {
          const auto id = ids_.find(s.site);
          if (id == ids_.end()) return;
          const std::int64_t number = windows.number_of(s.thread, s.begin_ns, s.end_ns);
          if (number < 0) return;
          const auto at = static_cast<std::uint64_t>(number);
          if (at % stride_ == 0 && at / stride_ < rows_)
            cells_[static_cast<std::size_t>(at / stride_ * l + id->second)] += static_cast<float>(s.self_ns);
          const auto one = wanted_.find(number);
          if (one != wanted_.end()) one->second[id->second] += s.self_ns;
        },
        [](const event&) {});
  }

  /// Usual times from every stride-th iteration; 0: layers not judged.
  std::uint64_t stride() const noexcept { return stride_; }

  /// The layers of iteration `number` beyond their usual self time (past
  /// the median by three scaled MADs, a quarter of it and 2 % of the
  /// iteration), the largest excess first, at most `most`.
  std::vector<layer_excess> beyond_usual(std::int64_t number, std::uint64_t duration_ns, std::size_t most) {
    std::vector<std::pair<double, layer_excess>> found;
    const auto one = wanted_.find(number);
    if (one == wanted_.end()) return {};
    for (const auto& entry : one->second) {
      const metric_spread& usual = column(entry.first);
      const double excess = static_cast<double>(entry.second) - usual.median;
      if (excess <= usual.limit || excess < 0.02 * static_cast<double>(duration_ns)) continue;
      layer_excess e;
      e.name = names_[entry.first];
      e.ns = entry.second;
      e.usual_ns = static_cast<std::uint64_t>(std::max(usual.median, 0.0));
      found.emplace_back(excess, std::move(e));
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second.name < b.second.name;
    });
    std::vector<layer_excess> out;
    for (std::size_t i = 0; i < found.size() && i < most; ++i) out.push_back(std::move(found[i].second));
    return out;
  }

 private:
  const metric_spread& column(std::uint32_t id) {
    const auto known = spreads_.find(id);
    if (known != spreads_.end()) return known->second;
    std::vector<double> values(static_cast<std::size_t>(rows_));
    for (std::uint64_t row = 0; row < rows_; ++row) values[row] = cells_[static_cast<std::size_t>(row * names_.size() + id)];
    metric_spread s = spread_of(std::move(values), 0.25, true);
    s.limit = std::max(s.limit, 1000.0);  // and at least a microsecond
    return spreads_.emplace(id, s).first->second;
  }

  std::vector<std::string> names_;
  std::unordered_map<const site_info*, std::uint32_t> ids_;
  std::uint64_t stride_ = 1, rows_ = 0;
  std::vector<float> cells_;  ///< rows_ x names_, row r = iteration r * stride_
  std::unordered_map<std::int64_t, std::unordered_map<std::uint32_t, std::uint64_t>> wanted_;
  std::unordered_map<std::uint32_t, metric_spread> spreads_;
};

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool explain_slow_iterations(dump_reader& r, const iteration_windows& windows,
                                                         const std::string& name, std::size_t slowest,
                                                         slow_iterations_result& out, std::string& error) {
  using window = iteration_windows::window;
  out = slow_iterations_result{};
  out.name = name;
  out.dump = r.path();
  out.first_ns = r.first_ns();
  out.iterations = windows.count();
  if (out.iterations == 0) return true;
  // Memory: 8 bytes an iteration here (durations), besides the windows;
  // the listed ones and a sample of the usual ones are kept.
  std::vector<std::int64_t> durations;
  durations.reserve(static_cast<std::size_t>(out.iterations));
  windows.for_each([&](const thread_info*, const window& w) { durations.push_back(w.second - w.first); });
  const std::size_t n = durations.size();
  const auto nth_longest = [&](std::size_t k) {  // k-th longest, from 0
    std::nth_element(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(k), durations.end(),
                     std::greater<std::int64_t>());
    return durations[k];
  };
  out.median_ns = nth_longest(n / 2);
  out.slower_ns = out.median_ns + out.median_ns / 5;
  std::size_t listed = slowest;
  if (listed == 0) {
    const std::size_t at_p99 = n - static_cast<std::size_t>(std::floor(0.99 * static_cast<double>(n - 1)));
    listed = std::min<std::size_t>(at_p99, 10);
    out.left_out = at_p99 - listed;
  }
  listed = std::min(listed, n);
  // The listed: the longest first, of equal ones the earliest.
  const std::int64_t shortest_listed = nth_longest(listed - 1);
  std::vector<std::pair<const thread_info*, window>> top;
  windows.for_each([&](const thread_info* t, const window& w) {
    if (w.second - w.first >= shortest_listed) top.emplace_back(t, w);
  });
  std::vector<std::int64_t>().swap(durations);
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    const std::int64_t da = a.second.second - a.second.first, db = b.second.second - b.second.first;
    return da != db ? da > db : a.second.first < b.second.first;
  });
  top.resize(listed);
  // The device's samples, per writer.
  std::map<const writer_info*, detail::device_lookup> lookups;
  for (const writer_info* w : r.writers_in_order())
    if (!w->device.samples.empty()) {
      const auto added = lookups.emplace(w, detail::device_lookup(*w));
      out.has_device = true;
      out.period_us = w->device.period_us;
      out.samples += added.first->second.sample_count();
    }
  const auto lookup_of = [&](const thread_info* t) { return t != nullptr ? lookups.find(t->writer) : lookups.end(); };
  // Floors: 5 % of the time waiting, 50 switches a second, 10 % of a clock, 3 C, a fifth of a CPU, one
  // throttling event a second, 50 faults a second, 10 % of the GPU clock, 10 % of free memory, a tenth
  // of a CPU stolen.
  const double floors[detail::m_count] = {0.05, 50, 0.10, 3000, 200, 1, 50, 0.10, 0.10, 100};
  // The usual iterations (no longer than the median) the device's state
  // was measured for are the baseline: those within 30 s of an iteration
  // (a board that warms over minutes is compared with its own minute), or
  // the whole run's where fewer than 20 are that close. Measured over at
  // most 65,536 of them (every k-th): a median needs no more.
  const auto usual_measured = [&](const thread_info* t, const window& w) {
    return w.second - w.first <= out.median_ns && lookup_of(t) != lookups.end();
  };
  windows.for_each([&](const thread_info* t, const window& w) { out.usual_measured += usual_measured(t, w) ? 1 : 0; });
  const std::uint64_t stride = std::max<std::uint64_t>(1, (out.usual_measured + 65535) / 65536);
  struct usual_sample {
    std::int64_t begin_ns;
    float value[detail::m_count];
  };
  std::vector<usual_sample> usual;
  std::uint64_t seen = 0;
  windows.for_each([&](const thread_info* t, const window& w) {
    if (!usual_measured(t, w) || seen++ % stride != 0) return;
    const detail::iteration_measure m = detail::measure_iteration(lookup_of(t)->second, t, w.first, w.second);
    usual_sample u{w.first, {}};
    for (std::size_t k = 0; k < detail::m_count; ++k) u.value[k] = static_cast<float>(m.value[k]);
    usual.push_back(u);
  });
  std::sort(usual.begin(), usual.end(), [](const usual_sample& a, const usual_sample& b) { return a.begin_ns < b.begin_ns; });
  const auto spreads_over = [&](std::size_t from, std::size_t to) {
    detail::metric_spreads spreads;
    for (std::size_t k = 0; k < detail::m_count; ++k) {
      std::vector<double> values;
      for (std::size_t j = from; j < to; ++j) values.push_back(usual[j].value[k]);
      spreads[k] = detail::spread_of(std::move(values), floors[k], k == detail::m_memory);
    }
    return spreads;
  };
  const detail::metric_spreads run_wide = spreads_over(0, usual.size());
  constexpr std::int64_t bucket_ns = 10000000000, around_ns = 30000000000;
  std::map<std::int64_t, detail::metric_spreads> local;  // by 10 s bucket of the run
  const std::int64_t origin = out.first_ns;
  const auto baseline_at = [&](std::int64_t ns) -> const detail::metric_spreads& {
    const std::int64_t bucket = ns >= origin ? (ns - origin) / bucket_ns : -1;
    const auto known = local.find(bucket);
    if (known != local.end()) return known->second;
    const std::int64_t from_ns = origin + bucket * bucket_ns - around_ns, to_ns = origin + (bucket + 1) * bucket_ns + around_ns;
    const auto begin_of = [](const usual_sample& u, std::int64_t t) { return u.begin_ns < t; };
    const auto from = std::lower_bound(usual.begin(), usual.end(), from_ns, begin_of) - usual.begin();
    const auto to = std::lower_bound(usual.begin(), usual.end(), to_ns, begin_of) - usual.begin();
    if (to - from < 20 || (from == 0 && static_cast<std::size_t>(to) == usual.size()))
      return local.emplace(bucket, run_wide).first->second;
    return local.emplace(bucket, spreads_over(static_cast<std::size_t>(from), static_cast<std::size_t>(to))).first->second;
  };
  // Fewer than 5 usual iterations or 10 samples give no spread to judge by.
  out.too_few = out.has_device && (out.usual_measured < 5 || out.samples < 10);
  std::vector<std::int64_t> numbers(listed);
  for (std::size_t i = 0; i < listed; ++i) numbers[i] = windows.number_of(top[i].first, top[i].second.first, top[i].second.second);
  detail::layer_times layers;
  if (!layers.read(r, windows, numbers)) {
    error = r.error();
    return false;
  }
  out.layer_stride = layers.stride();
  for (std::size_t i = 0; i < listed; ++i) {
    slow_iteration s;
    s.thread = top[i].first;
    s.begin_ns = top[i].second.first;
    s.end_ns = top[i].second.second;
    s.number = numbers[i];
    s.slower = s.end_ns - s.begin_ns > out.slower_ns;
    if (!s.slower) {
      out.slowest.push_back(std::move(s));
      continue;
    }
    s.layers = layers.beyond_usual(s.number, static_cast<std::uint64_t>(s.end_ns - s.begin_ns), 3);
    const auto found = lookup_of(s.thread);
    if (found != lookups.end()) {
      if (!out.too_few)
        s.differences = detail::differences(found->second, detail::measure_iteration(found->second, s.thread, s.begin_ns, s.end_ns),
                                            baseline_at(s.begin_ns), run_wide, floors, s.end_ns - s.begin_ns, out.median_ns);
      const std::int64_t gap = found->second.unsampled(s.begin_ns, s.end_ns);
      if (found->second.period_ns() > 0 && gap > 3 * found->second.period_ns()) s.unsampled_ns = gap;
    }
    out.slowest.push_back(std::move(s));
  }
  return true;
}

EDGETRACE_DETAIL_READER_API bool explain_slow_iterations(dump_reader& r, const std::string& name,
                                                         std::size_t slowest, slow_iterations_result& out,
                                                         std::string& error) {
  if (!r.metadata_read() && !r.read_metadata()) {
    error = r.error();
    return false;
  }
  iteration_windows windows;
  if (!windows.collect(r, name, [](const thread_info*, std::int64_t, std::int64_t) { return true; }, error)) return false;
  return explain_slow_iterations(r, windows, name, slowest, out, error);
}

namespace detail {

/// `--window FROM:TO` that holds exactly [begin, end] (µs from the first event).
inline std::string window_option(const slow_iterations_result& s, const slow_iteration& it) {
  const auto us = [&](std::int64_t ns, bool up) {
    const double from_first = (static_cast<double>(ns) - static_cast<double>(s.first_ns)) / 1000.0;
    return static_cast<long long>(std::max(0.0, up ? std::ceil(from_first) : std::floor(from_first)));
  };
  return format_text("--window %lldus:%lldus", us(it.begin_ns, false), std::max(us(it.end_ns, true), us(it.begin_ns, false) + 1));
}

/// What one listed iteration shows: layers, then the device, then gaps.
inline std::string iteration_findings(const slow_iterations_result& s, const slow_iteration& it) {
  if (!it.slower) return "not slower than usual";
  std::string text;
  if (s.layer_stride == 0) text = "layers not judged (more than 2 M span names)";
  else if (it.layers.empty()) text = "no layer beyond its usual time";
  for (std::size_t i = 0; i < it.layers.size(); ++i)
    text += (i == 0 ? "" : ", ") + format_text("%s %s (usually %s)", it.layers[i].name.c_str(),
                                               format_duration(it.layers[i].ns).c_str(),
                                               format_duration(it.layers[i].usual_ns).c_str());
  if (!s.has_device) text += "; the device was not sampled";
  else if (s.too_few) text += "; too few device samples to judge the device";
  else if (it.differences.empty() && it.unsampled_ns == 0) text += "; the device as usual";
  for (const std::string& d : it.differences) text += "; " + d;
  if (it.unsampled_ns != 0)
    text += format_text("; no device sample for %s around it: the whole process or the machine stalled",
                        format_duration(static_cast<std::uint64_t>(it.unsampled_ns)).c_str());
  return text;
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API std::string slow_iterations_text(const slow_iterations_result& s) {
  std::string text = detail::format_text("slowest iterations of \"%s\" (%llu iterations, median %s, slower than usual past %s)",
                                         s.name.c_str(), static_cast<unsigned long long>(s.iterations),
                                         detail::format_duration(static_cast<std::uint64_t>(s.median_ns)).c_str(),
                                         detail::format_duration(static_cast<std::uint64_t>(s.slower_ns)).c_str());
  text += ": the layers (span names, self time) beyond their usual time per iteration";
  if (s.layer_stride > 1) text += detail::format_text(" (usual from every %llu. iteration)", static_cast<unsigned long long>(s.layer_stride));
  if (!s.has_device) text += "; no device samples in the dump (EDGETRACE_SAMPLE_MS)";
  else if (s.too_few)
    text += detail::format_text("; only %llu device samples and %llu usual iterations measured: too few to judge the device",
                                static_cast<unsigned long long>(s.samples), static_cast<unsigned long long>(s.usual_measured));
  else
    text += detail::format_text("; what the device's samples (every %s) say differed from the usual iterations (within 30 s, or the run's)",
                                detail::format_duration(s.period_us * 1000).c_str());
  text += ":\n";
  for (const slow_iteration& it : s.slowest) {
    text += detail::format_text("  iteration %lld  %s  %s: ", static_cast<long long>(it.number),
                                detail::format_duration(static_cast<std::uint64_t>(it.end_ns - it.begin_ns)).c_str(),
                                detail::thread_text(it.thread).c_str());
    text += detail::iteration_findings(s, it) + '\n';
    if (it.slower && !s.dump.empty())
      text += "    edgetrace json " + s.dump + " " + detail::window_option(s, it) + " -o iteration-" +
              std::to_string(it.number) + ".json\n";
  }
  if (s.left_out != 0)
    text += detail::format_text("  ... and %llu more at or above p99 (--slowest N lists the N slowest)\n",
                                static_cast<unsigned long long>(s.left_out));
  return text;
}

EDGETRACE_DETAIL_READER_API std::string slow_iterations_json(const slow_iterations_result& s) {
  const auto field = [](std::string& o, const char* key, const std::string& value) {
    o += key;
    append_json_string(o, value);
  };
  const auto flag = [](bool b) { return b ? std::string("true") : std::string("false"); };
  std::string out = "{";
  field(out, "\"per\":", s.name);
  out += ",\"iterations\":" + std::to_string(s.iterations) + ",\"median_ns\":" + std::to_string(s.median_ns) +
         ",\"slower_ns\":" + std::to_string(s.slower_ns) + ",\"layer_stride\":" + std::to_string(s.layer_stride) +
         ",\"device\":{\"sampled\":" + flag(s.has_device) + ",\"period_us\":" + std::to_string(s.period_us) +
         ",\"samples\":" + std::to_string(s.samples) + ",\"usual_measured\":" + std::to_string(s.usual_measured) +
         ",\"too_few\":" + flag(s.too_few) + "},\"left_out\":" + std::to_string(s.left_out) + ",\"slowest\":[";
  for (std::size_t i = 0; i < s.slowest.size(); ++i) {
    const slow_iteration& it = s.slowest[i];
    out += i == 0 ? "\n{" : ",\n{";
    out += "\"number\":" + std::to_string(it.number);
    field(out, ",\"thread\":", it.thread != nullptr ? it.thread->name : std::string());
    out += ",\"tid\":" + std::to_string(it.thread != nullptr ? it.thread->os_tid : 0) +
           ",\"begin_ns\":" + std::to_string(it.begin_ns) + ",\"end_ns\":" + std::to_string(it.end_ns) +
           ",\"slower\":" + flag(it.slower) + ",\"layers\":[";
    for (std::size_t j = 0; j < it.layers.size(); ++j) {
      field(out, j == 0 ? "{\"name\":" : ",{\"name\":", it.layers[j].name);
      out += ",\"ns\":" + std::to_string(it.layers[j].ns) + ",\"usual_ns\":" + std::to_string(it.layers[j].usual_ns) + "}";
    }
    out += "],\"device\":[";
    for (std::size_t j = 0; j < it.differences.size(); ++j) field(out, j == 0 ? "" : ",", it.differences[j]);
    out += "],\"unsampled_ns\":" + std::to_string(it.unsampled_ns);
    field(out, ",\"window\":", detail::window_option(s, it).substr(9));
    out += "}";
  }
  out += "]}";
  return out;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
