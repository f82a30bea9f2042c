// SPDX-License-Identifier: MIT
// Slow iterations explained (`summary --per NAME`): for the slowest iterations, what the device's samples say was different from the run's usual state — run-queue wait and involuntary switches of the iteration's thread, CPU clocks, temperatures, other processes' load, throttling, page faults, the GPU clock, free memory.
//
// Each quantity is measured for every iteration from the samples around it
// (totals: their increase between the last sample before the iteration
// and the first after; levels: the worst value sampled within a period of
// it). An iteration's value is named only when it lies beyond the run's
// own spread: past the median by more than three scaled median absolute
// deviations and by more than a floor per quantity (5 % of the time on a
// run queue, 10 % of a clock, 3 °C, a fifth of a CPU, ...). The samples
// are EDGETRACE_SAMPLE_MS apart, so an iteration much shorter than that
// is judged by the period around it; the text says how long that was.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/device.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// One of the slowest iterations and what differed in it.
struct slow_iteration {
  std::int64_t number = -1;  ///< as `csv --per` numbers iterations (from 0)
  const thread_info* thread = nullptr;
  std::int64_t begin_ns = 0, end_ns = 0;
  std::vector<std::string> differences;  ///< empty: nothing beyond the run's spread
};

struct slow_iterations_result {
  std::string name;             ///< --per NAME
  std::uint64_t iterations = 0;
  std::int64_t median_ns = 0;   ///< the iterations' median duration
  std::uint64_t period_us = 0;  ///< the sampling period (0: no device samples)
  bool has_device = false;
  std::uint64_t left_out = 0;   ///< iterations at or above p99 not listed (the default shows 10)
  std::vector<slow_iteration> slowest;
};

namespace detail {

/// The quantities an iteration is judged by.
enum slow_metric : std::size_t { m_wait, m_switches, m_clock, m_temperature, m_others, m_throttle, m_faults,
                                 m_gpu_clock, m_memory, m_count };

/// A writer's samples per track, and its tracks by role.
class device_lookup {
 public:
  explicit device_lookup(const writer_info& w) : w_(&w), by_track_(device_samples_by_track(w.device)) {
    // At most an hour: a damaged dump's period must not overflow.
    period_ns_ = static_cast<std::int64_t>(std::min<std::uint64_t>(w.device.period_us, 3600000000u)) * 1000;
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
      m.value[m_wait] = delta / static_cast<double>(span);
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

/// The lines of what differed in one iteration (those about its thread
/// follow the thread's name in the text).
inline std::vector<std::string> differences(const device_lookup& d, const iteration_measure& m,
                                            const metric_spread (&s)[m_count]) {
  std::vector<std::string> out;
  const auto beyond = [&](slow_metric k, bool higher_is_bad) {
    if (std::isnan(m.value[k]) || std::isnan(s[k].median)) return false;
    const double d_value = higher_is_bad ? m.value[k] - s[k].median : s[k].median - m.value[k];
    return d_value > s[k].limit;
  };
  const auto& tracks = d.writer().device.tracks;
  if (beyond(m_wait, true)) {
    std::string line = format_text("waited on the run queue %.0f%% of the %s around it (median %.0f%%)",
                                   100 * m.value[m_wait],
                                   format_duration(static_cast<std::uint64_t>(m.span_ns)).c_str(), 100 * s[m_wait].median);
    if (!std::isnan(m.value[m_switches]))
      line += format_text(", %.0f involuntary switches a second (median %.0f)", m.value[m_switches], s[m_switches].median);
    out.push_back(line);
  }  // switches alone, without the wait, cost microseconds: not named
  if (beyond(m_clock, false)) {
    const device_track& t = tracks[m.track[m_clock]];
    out.push_back(format_text("%s at %.0f MHz (%.0f%% of its maximum; median %.0f%%)", t.name.c_str(),
                              m.value[m_clock] * static_cast<double>(t.maximum) / 1000.0, 100 * m.value[m_clock],
                              100 * s[m_clock].median));
  }
  if (beyond(m_temperature, true))
    out.push_back(format_text("%s at %.1f C (median %.1f C)", tracks[m.track[m_temperature]].name.c_str(),
                              m.value[m_temperature] / 1000.0, s[m_temperature].median / 1000.0));
  if (beyond(m_others, true))
    out.push_back(format_text("other processes used %.0f%% of a CPU (median %.0f%%)", m.value[m_others] / 10.0,
                              s[m_others].median / 10.0));
  if (beyond(m_throttle, true))
    out.push_back(format_text("%.1f throttling events a second (thermal or CPU quota; median %.1f)", m.value[m_throttle],
                              s[m_throttle].median));
  if (beyond(m_faults, true))
    out.push_back(format_text("%.0f major page faults a second (median %.0f)", m.value[m_faults], s[m_faults].median));
  if (beyond(m_gpu_clock, false))
    out.push_back(format_text("GPU clock at %.0f%% of its maximum (median %.0f%%)", 100 * m.value[m_gpu_clock],
                              100 * s[m_gpu_clock].median));
  if (beyond(m_memory, false))
    out.push_back(format_text("MemAvailable %.0f MB (median %.0f MB)", m.value[m_memory] / 1024.0,
                              s[m_memory].median / 1024.0));
  return out;
}

}  // namespace detail

/// The slowest of the iterations `windows` collected from `r` under
/// `name` (its `slowest` longest, or with 0 those at or above the 99th
/// percentile, at most 10 listed) and what the device's samples say
/// differed in each.
inline void explain_slow_iterations(const dump_reader& r, const iteration_windows& windows, const std::string& name,
                                    std::size_t slowest, slow_iterations_result& out) {
  auto all = windows.all();
  out = slow_iterations_result{};
  out.name = name;
  out.iterations = all.size();
  if (all.empty()) return;
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    const std::int64_t da = a.second.second - a.second.first, db = b.second.second - b.second.first;
    return da != db ? da > db : a.second.first < b.second.first;
  });
  const auto length = [](const auto& entry) { return entry.second.second - entry.second.first; };
  out.median_ns = length(all[all.size() / 2]);
  std::size_t listed = slowest;
  if (listed == 0) {
    const std::size_t at_p99 = all.size() - static_cast<std::size_t>(std::floor(0.99 * static_cast<double>(all.size() - 1)));
    listed = std::min<std::size_t>(at_p99, 10);
    out.left_out = at_p99 - listed;
  }
  listed = std::min(listed, all.size());
  // The device's samples, per writer; each metric's spread over every iteration.
  std::map<const writer_info*, detail::device_lookup> lookups;
  for (const writer_info* w : r.writers_in_order())
    if (!w->device.samples.empty()) {
      lookups.emplace(w, detail::device_lookup(*w));
      out.has_device = true;
      out.period_us = w->device.period_us;
    }
  std::vector<detail::iteration_measure> measures(all.size());
  for (std::size_t i = 0; i < all.size() && out.has_device; ++i) {
    const thread_info* t = all[i].first;
    const auto found = t != nullptr ? lookups.find(t->writer) : lookups.end();
    if (found != lookups.end()) measures[i] = detail::measure_iteration(found->second, t, all[i].second.first, all[i].second.second);
  }
  // Floors: 5 % of the time waiting, 50 switches a second, 10 % of a clock, 3 C, a fifth of a CPU, one
  // throttling event a second, 50 faults a second, 10 % of the GPU clock, 10 % of free memory.
  const double floors[detail::m_count] = {0.05, 50, 0.10, 3000, 200, 1, 50, 0.10, 0.10};
  detail::metric_spread spreads[detail::m_count];
  for (std::size_t k = 0; k < detail::m_count; ++k) {
    std::vector<double> values(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) values[i] = measures[i].value[k];
    spreads[k] = detail::spread_of(std::move(values), floors[k], k == detail::m_memory);
  }
  for (std::size_t i = 0; i < listed; ++i) {
    slow_iteration s;
    s.thread = all[i].first;
    s.begin_ns = all[i].second.first;
    s.end_ns = all[i].second.second;
    s.number = windows.number_of(s.thread, s.begin_ns, s.end_ns);
    const auto found = s.thread != nullptr ? lookups.find(s.thread->writer) : lookups.end();
    if (found != lookups.end()) s.differences = detail::differences(found->second, measures[i], spreads);
    out.slowest.push_back(std::move(s));
  }
}

/// The same, reading `r` for the iterations. False with `error` set when
/// the dump cannot be read or has no span or mark of that name.
inline bool explain_slow_iterations(dump_reader& r, const std::string& name, std::size_t slowest,
                                    slow_iterations_result& out, std::string& error) {
  if (!r.metadata_read() && !r.read_metadata()) {
    error = r.error();
    return false;
  }
  iteration_windows windows;
  if (!windows.collect(r, name, [](const thread_info*, std::int64_t, std::int64_t) { return true; }, error)) return false;
  explain_slow_iterations(r, windows, name, slowest, out);
  return true;
}

/// The text `summary --per NAME` prints after its table.
inline std::string slow_iterations_text(const slow_iterations_result& s) {
  std::string text = detail::format_text("slowest iterations of \"%s\" (%llu iterations, median %s)", s.name.c_str(),
                                 static_cast<unsigned long long>(s.iterations),
                                 detail::format_duration(static_cast<std::uint64_t>(s.median_ns)).c_str());
  if (!s.has_device) return text + ": the dump has no device samples (EDGETRACE_SAMPLE_MS), so nothing explains them\n";
  text += detail::format_text(" and what the device's samples (every %s) say differed, where it lies beyond the run's spread:\n",
                      detail::format_duration(s.period_us * 1000).c_str());
  for (const slow_iteration& it : s.slowest) {
    std::string line = detail::format_text("  iteration %lld  %s  %s: ", static_cast<long long>(it.number),
                                   detail::format_duration(static_cast<std::uint64_t>(it.end_ns - it.begin_ns)).c_str(),
                                   detail::thread_text(it.thread).c_str());
    if (it.differences.empty()) line += "nothing beyond the run's spread";
    for (std::size_t i = 0; i < it.differences.size(); ++i) line += (i == 0 ? "" : "; ") + it.differences[i];
    text += line + '\n';
  }
  if (s.left_out != 0)
    text += detail::format_text("  ... and %llu more at or above p99 (--slowest N lists the N slowest)\n",
                        static_cast<unsigned long long>(s.left_out));
  return text;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
