// SPDX-License-Identifier: MIT
// Maps one writer's raw ticks to CLOCK_MONOTONIC nanoseconds, piecewise-linearly over its calibration pairs.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <string>
#include <vector>

#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// One (tick, CLOCK_MONOTONIC, CLOCK_REALTIME) triple from a calibration chunk.
struct calibration_pair {
  std::uint64_t tick = 0;
  std::uint64_t monotonic_ns = 0;
  std::uint64_t realtime_ns = 0;
};

/// Human-readable name of a clock source byte ("x86 TSC", ...).
inline const char* clock_source_name(std::uint8_t source) noexcept {
  switch (source) {
    case static_cast<std::uint8_t>(format::clock_source::monotonic_ns): return "CLOCK_MONOTONIC";
    case static_cast<std::uint8_t>(format::clock_source::x86_tsc): return "x86 TSC";
    case static_cast<std::uint8_t>(format::clock_source::arm_cntvct): return "arm cntvct_el0";
    default: return "unknown clock";
  }
}

/// Tick -> ns mapping of one writer. Monotonic non-decreasing by construction
/// (see to_ns), so a child span that lies inside its parent in ticks still
/// lies inside it after conversion and rounding.
class clock_model {
 public:
  /// How the mapping was obtained (for `info` and diagnostics).
  enum class fit : std::uint8_t {
    calibrated,  ///< two or more usable pairs: piecewise-linear
    single_pair, ///< one pair, slope from the nominal rate
    nominal,     ///< no pair: ns = tick scaled by the nominal rate
  };

  /// Builds the mapping. `pairs` may be in any order and contain duplicates
  /// or outliers; only pairs strictly increasing in both tick and ns (after
  /// sorting by tick) are kept. Cost: O(n log n), memory O(n).
  void build(std::vector<calibration_pair> pairs, std::uint8_t source, std::uint64_t nominal_hz) {
    points_.clear();
    slopes_.clear();
    warning_.clear();
    pairs_given_ = pairs.size();
    std::sort(pairs.begin(), pairs.end(), [](const calibration_pair& a, const calibration_pair& b) {
      return a.tick != b.tick ? a.tick < b.tick : a.monotonic_ns < b.monotonic_ns;
    });
    for (const calibration_pair& p : pairs) {
      if (p.monotonic_ns > static_cast<std::uint64_t>(ns_limit)) continue;  // garbage: > 73 years of uptime
      const auto ns = static_cast<std::int64_t>(p.monotonic_ns);
      if (!points_.empty() && (p.tick <= points_.back().tick || ns <= points_.back().ns)) continue;
      points_.push_back(point{p.tick, ns});
    }
    for (std::size_t i = 1; i < points_.size(); ++i)
      slopes_.push_back(static_cast<long double>(points_[i].ns - points_[i - 1].ns) /
                        static_cast<long double>(points_[i].tick - points_[i - 1].tick));
    fast_slopes_.assign(slopes_.begin(), slopes_.end());

    // Nominal slope, used with fewer than two pairs.
    nominal_slope_ = 1.0L;
    bool rate_known = true;
    if (nominal_hz != 0) {
      nominal_slope_ = 1e9L / static_cast<long double>(nominal_hz);
    } else if (source != static_cast<std::uint8_t>(format::clock_source::monotonic_ns)) {
      rate_known = false;
    }
    rate_known_ = true;
    if (points_.size() >= 2) {
      fit_ = fit::calibrated;
    } else if (points_.size() == 1) {
      fit_ = fit::single_pair;
      rate_known_ = rate_known;
      if (!rate_known) warning_ = "tick rate unknown: one calibration pair and no nominal tick rate";
    } else {
      fit_ = fit::nominal;
      rate_known_ = rate_known;
      warning_ = rate_known ? "no calibration pair; timestamps use the nominal tick rate and start at an arbitrary origin"
                            : "tick rate unknown: no calibration pair and no nominal tick rate";
    }
  }

  /// False when ticks cannot become ns: a CPU counter with fewer than two
  /// usable pairs and no nominal rate. to_ns() then scales by 1 ns per tick,
  /// which is wrong by the counter's unknown rate (2.6x for a 2.6 GHz TSC):
  /// a reader must not show such durations (dump_reader refuses them).
  bool rate_known() const noexcept { return rate_known_; }

  /// Converts a tick to CLOCK_MONOTONIC ns. Cost: one binary search over the
  /// pairs and a few long double operations.
  ///
  /// Offsets are computed from the segment start (so a 64-bit tick never
  /// loses low bits in a product), and each segment's result is clamped to
  /// the ns range of its pairs: rounding cannot then break monotonicity at a
  /// join between two segments.
  std::int64_t to_ns(std::uint64_t tick) const noexcept {
    if (points_.size() < 2) {
      const point anchor = points_.empty() ? point{0, 0} : points_.front();
      return anchor.ns + scaled_offset(tick, anchor.tick, nominal_slope_, static_cast<double>(nominal_slope_));
    }
    const auto it = std::upper_bound(points_.begin(), points_.end(), tick,
                                     [](std::uint64_t t, const point& p) { return t < p.tick; });
    std::size_t i = static_cast<std::size_t>(it - points_.begin());
    i = i == 0 ? 0 : i - 1;
    if (i > points_.size() - 2) i = points_.size() - 2;
    const point& a = points_[i];
    const point& b = points_[i + 1];
    std::int64_t ns = a.ns + scaled_offset(tick, a.tick, slopes_[i], fast_slopes_[i]);
    if (tick < a.tick) return std::min(ns, a.ns);  // before the first pair
    ns = std::max(ns, a.ns);
    return tick < b.tick ? std::min(ns, b.ns) : std::max(ns, b.ns);
  }

  /// The inverse of to_ns(): the first tick whose to_ns() is at or after
  /// `ns` (the last tick when none is). Monotonic in `ns`, so spans nested
  /// in ns stay nested in ticks. Used to write times that came from
  /// elsewhere (an imported profile) into a writer's stream. Cost: a few
  /// to_ns() calls.
  std::uint64_t to_tick(std::int64_t ns) const noexcept {
    long double guess;
    if (points_.size() < 2) {
      const point anchor = points_.empty() ? point{0, 0} : points_.front();
      guess = static_cast<long double>(anchor.tick) + static_cast<long double>(ns - anchor.ns) / nominal_slope_;
    } else {
      const auto it = std::upper_bound(points_.begin(), points_.end(), ns,
                                       [](std::int64_t n, const point& p) { return n < p.ns; });
      std::size_t i = static_cast<std::size_t>(it - points_.begin());
      i = i == 0 ? 0 : i - 1;
      if (i > points_.size() - 2) i = points_.size() - 2;
      guess = static_cast<long double>(points_[i].tick) + static_cast<long double>(ns - points_[i].ns) / slopes_[i];
    }
    constexpr auto top = static_cast<long double>(std::numeric_limits<std::uint64_t>::max() / 2);
    std::uint64_t tick = guess <= 0 ? 0 : guess >= top ? static_cast<std::uint64_t>(top) : static_cast<std::uint64_t>(guess);
    // The guess is within a tick or two; step to the exact first tick.
    for (int step = 0; step < 64 && to_ns(tick) < ns; ++step) ++tick;
    for (int step = 0; step < 64 && tick > 0 && to_ns(tick - 1) >= ns; ++step) --tick;
    return tick;
  }

  /// Ticks per second over the whole calibrated range (or nominal).
  double ticks_per_second() const noexcept {
    if (points_.size() >= 2) {
      const long double dt = static_cast<long double>(points_.back().tick - points_.front().tick);
      const long double dn = static_cast<long double>(points_.back().ns - points_.front().ns);
      return static_cast<double>(dt * 1e9L / dn);
    }
    return static_cast<double>(1e9L / nominal_slope_);
  }

  fit kind() const noexcept { return fit_; }
  /// Pairs handed to build() and pairs kept for the mapping.
  std::size_t pairs_given() const noexcept { return pairs_given_; }
  std::size_t pairs_used() const noexcept { return points_.size(); }
  /// Non-empty when the mapping is a guess (no pairs) or impossible (rate unknown).
  const std::string& warning() const noexcept { return warning_; }

 private:
  struct point {
    std::uint64_t tick;
    std::int64_t ns;
  };
  // Pair ns and offsets stay within 2^61, so results stay within +-2^62 and
  // the difference of two results always fits in 64 bits.
  static constexpr std::int64_t ns_limit = std::int64_t{1} << 61;

  static std::int64_t scaled_offset(std::uint64_t tick, std::uint64_t from, long double slope,
                                    double fast_slope) noexcept {
    // Fast path in double (SSE; and no software quad on aarch64), taken
    // only when it provably rounds like the long double path below: for
    // |dt| < 2^53 and |offset| < 2^40 ns the double result is within
    // 2^-11.9 ns of the long double one, so when offset + 1/2 lies more
    // than 2^-10 from an integer both round to the same value.
    const std::uint64_t magnitude = tick >= from ? tick - from : from - tick;
    if (magnitude < (std::uint64_t{1} << 53)) {
      const double dt = tick >= from ? static_cast<double>(magnitude) : -static_cast<double>(magnitude);
      const double off = dt * fast_slope + 0.5;
      if (off < 1099511627776.0 && off > -1099511627776.0) {
        const double whole = std::floor(off);
        const double frac = off - whole;
        if (frac > 0x1p-10 && frac < 1 - 0x1p-10) return static_cast<std::int64_t>(whole);
      }
    }
    const long double dt = tick >= from ? static_cast<long double>(tick - from) : -static_cast<long double>(from - tick);
    long double off = dt * slope;
    const auto limit = static_cast<long double>(ns_limit);
    if (off > limit) off = limit;
    if (off < -limit) off = -limit;
    // Round half up: a monotone function of `off`, so of the tick. llrint
    // rounds to nearest (ties to even) without switching the x87 rounding
    // mode, which a truncating cast does on every call; a tie it rounded
    // down is moved up, so the result is exactly floor(off + 1/2).
    std::int64_t result = static_cast<std::int64_t>(std::llrint(off));
    if (static_cast<long double>(result) - off == -0.5L) ++result;
    return result;
  }

  std::vector<point> points_;
  std::vector<long double> slopes_;  // slopes_[i]: ns per tick between points_[i] and points_[i + 1]
  std::vector<double> fast_slopes_;  // the same, rounded to double (fast path of scaled_offset)
  long double nominal_slope_ = 1.0L;
  fit fit_ = fit::nominal;
  bool rate_known_ = true;
  std::size_t pairs_given_ = 0;
  std::string warning_;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
