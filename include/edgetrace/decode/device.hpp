// SPDX-License-Identifier: MIT
// The device's samples put to use: one series per track in display units (MHz, %, °C, MB, W, per second), totals turned into rates between samples, and a track's value around a moment.
//
// Levels (a clock, a temperature, memory) are shown as read. Totals (a
// thread's run-queue wait, switches, faults, throttling) only grow: a
// series shows their rate from one sample to the next, at the later
// sample's time; a total that went back (a counter reset) starts again.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <edgetrace/decode/model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// How a quantity is shown.
struct device_display {
  const char* what;  ///< "clock", "busy", "temperature", "run-queue wait"...
  const char* unit;  ///< "MHz", "%", "°C", "MB", "W", "/s"
  /// A level is shown as value / divisor; a total as its increase per ns
  /// × multiplier (a divisor, not a fraction: 729600 kHz is 729.6 MHz
  /// exactly, where × 0.001 is not).
  double divisor;
  double multiplier;
  bool total;  ///< a total: shown as its rate between samples
};

inline device_display display_of(format::device_quantity q) noexcept {
  using Q = format::device_quantity;
  switch (q) {
    case Q::cpu_khz: return {"clock", "MHz", 1e3, 1, false};
    case Q::cpu_busy_permille: return {"busy", "%", 10, 1, false};
    case Q::temperature_mc: return {"temperature", "°C", 1e3, 1, false};
    case Q::throttle_total: return {"thermal throttling", "/s", 1, 1e9, true};
    case Q::cgroup_throttled_total: return {"quota throttling", "/s", 1, 1e9, true};
    case Q::cgroup_throttled_us_total: return {"time throttled by quota", "%", 1, 1e5, true};
    case Q::thread_cpu_ns_total: return {"CPU", "%", 1, 100, true};
    case Q::thread_wait_ns_total: return {"run-queue wait", "%", 1, 100, true};
    case Q::thread_involuntary_total: return {"involuntary switches", "/s", 1, 1e9, true};
    case Q::rss_kb: return {"RSS", "MB", 1024, 1, false};
    case Q::major_faults_total: return {"major page faults", "/s", 1, 1e9, true};
    case Q::mem_available_kb: return {"MemAvailable", "MB", 1024, 1, false};
    case Q::gpu_load_permille: return {"GPU load", "%", 10, 1, false};
    case Q::gpu_hz: return {"GPU clock", "MHz", 1e6, 1, false};
    case Q::emc_hz: return {"EMC clock", "MHz", 1e6, 1, false};
    case Q::power_mw: return {"power", "W", 1e3, 1, false};
    case Q::others_busy_permille: return {"CPU used", "%", 10, 1, false};
    case Q::steal_permille: return {"CPU stolen", "%", 10, 1, false};
  }
  return {"unknown quantity", "", 1, 1, false};
}

/// A track's name in outputs: "cpu1 clock (MHz)", "thread infer (1234)
/// run-queue wait (%)", "other processes CPU used (%)". Two system tracks
/// of one quantity with one name (two thermal zones both called `acpitz`)
/// get their index too ("acpitz #3 temperature (°C)"): a viewer keys a
/// counter track by its name, and would merge them.
inline std::string device_track_label(const writer_info& w, const device_track& t) {
  const device_display d = display_of(t.quantity);
  std::string who = t.name;
  if (t.thread_id == 0)
    for (const device_track& other : w.device.tracks)
      if (&other != &t && other.thread_id == 0 && other.quantity == t.quantity && other.name == t.name) {
        who += " #" + std::to_string(t.index);
        break;
      }
  if (t.thread_id != 0) {
    const auto thread = w.threads.find(t.thread_id);
    who = "thread ";
    if (thread != w.threads.end()) {
      who += thread->second.name.empty() ? "#" + std::to_string(t.thread_id) : thread->second.name;
      who += " (" + std::to_string(thread->second.os_tid) + ")";
    } else {
      who += "#" + std::to_string(t.thread_id);
    }
  }
  return (who.empty() ? std::string() : who + " ") + d.what + " (" + d.unit + ")";
}

/// One track's values over the run, in display units.
struct device_series {
  const device_track* track = nullptr;
  std::string label;  ///< device_track_label
  struct point {
    std::int64_t ns;
    double value;
  };
  std::vector<point> points;
};

/// Every track of writer `w` with at least one point, in definition order.
inline std::vector<device_series> device_series_of(const writer_info& w) {
  const writer_device& d = w.device;
  std::vector<device_series> out(d.tracks.size());
  std::vector<const device_sample*> previous(d.tracks.size(), nullptr);
  for (std::size_t i = 0; i < d.tracks.size(); ++i) out[i].track = &d.tracks[i];
  for (const device_sample& s : d.samples) {
    const device_display shown = display_of(d.tracks[s.track].quantity);
    device_series& series = out[s.track];
    if (!shown.total) {
      series.points.push_back({s.ns, static_cast<double>(s.value) / shown.divisor});
      continue;
    }
    const device_sample* before = previous[s.track];
    previous[s.track] = &s;
    if (before == nullptr || s.ns <= before->ns || s.value < before->value) continue;
    // In doubles: a damaged dump's values may be any int64, and their
    // difference must not overflow.
    const double rate = (static_cast<double>(s.value) - static_cast<double>(before->value)) /
                        (static_cast<double>(s.ns) - static_cast<double>(before->ns));
    series.points.push_back({s.ns, rate * shown.multiplier});
  }
  std::vector<device_series> kept;
  for (device_series& series : out) {
    if (series.points.empty()) continue;
    series.label = device_track_label(w, *series.track);
    kept.push_back(std::move(series));
  }
  return kept;
}

/// A track's samples (indexes into writer_device::samples), in time order.
inline std::vector<std::vector<std::size_t>> device_samples_by_track(const writer_device& d) {
  std::vector<std::vector<std::size_t>> by_track(d.tracks.size());
  for (std::size_t i = 0; i < d.samples.size(); ++i) by_track[d.samples[i].track].push_back(i);
  return by_track;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
