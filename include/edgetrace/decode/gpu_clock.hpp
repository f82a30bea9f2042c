// SPDX-License-Identifier: MIT
// Places one GPU's time on the host timeline: chains the dump's clock
// anchors into a GPU time axis and fits host = offset + rate * gpu to them.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// GPU time → host CLOCK_MONOTONIC ns for one device of one writer.
///
/// Each anchor is a GPU event whose execution lies between two host times
/// (the record call and the first poll that saw it complete); its GPU
/// time is known only relative to the previous anchor (float ms from
/// cudaEventElapsedTime, over about a second, so within ~30 ns). Linked
/// anchors form a chain with its own GPU axis (0 at its first anchor). Per
/// chain, a weighted least-squares line host = a + b * gpu is fitted to the
/// midpoints of the brackets (weight 1 / (half-width + 0.5 us)^2); anchors
/// whose residual from the line shifted by the median residual exceeds
/// four times their half-width (at least 2 us and four times the median
/// absolute deviation) are dropped and the line refitted, so
/// one preempted measurement does not tilt it. A chain covering less than
/// 2 s of GPU time, or whose fitted rate is more than 1000 ppm off, keeps
/// the rate at 1 and fits the offset only.
class gpu_clock {
 public:
  struct anchor {
    std::uint64_t seq = 0;
    std::uint64_t link = 0;              ///< 0: starts a chain; else the previous anchor's seq + 1
    std::int64_t since_previous_ns = 0;  ///< GPU ns since the linked anchor
    std::int64_t host_before_ns = 0;     ///< host time of the record call
    std::int64_t host_after_ns = 0;      ///< host time it was first seen complete
  };

  /// Builds the mapping from the anchors (any order; duplicates of a seq:
  /// the first wins). Cost O(n log n).
  void build(std::vector<anchor> anchors) {
    points_.clear();
    chains_.clear();
    given_ = anchors.size();
    rejected_ = 0;
    residual_max_ns_ = 0;
    residual_rms_ns_ = 0;
    std::stable_sort(anchors.begin(), anchors.end(), [](const anchor& a, const anchor& b) { return a.seq < b.seq; });
    for (const anchor& a : anchors) {
      if (points_.count(a.seq) != 0 || a.host_after_ns < a.host_before_ns) continue;
      point p;
      p.host_mid = static_cast<long double>(a.host_before_ns) +
                   static_cast<long double>(a.host_after_ns - a.host_before_ns) / 2;
      p.half_window = static_cast<long double>(a.host_after_ns - a.host_before_ns) / 2;
      const auto previous = a.link != 0 ? points_.find(a.link - 1) : points_.end();
      if (previous != points_.end()) {
        p.chain = previous->second.chain;
        p.gpu = previous->second.gpu + static_cast<long double>(a.since_previous_ns);
      } else {
        p.chain = chains_.size();
        p.gpu = 0;
        chains_.push_back(chain{});
      }
      points_.emplace(a.seq, p);
    }
    std::vector<long double> residuals;
    for (std::size_t c = 0; c < chains_.size(); ++c) fit(c, residuals);
    if (!residuals.empty()) {
      long double sum = 0;
      for (long double r : residuals) {
        sum += r * r;
        residual_max_ns_ = std::max(residual_max_ns_, static_cast<double>(std::fabs(r)));
      }
      residual_rms_ns_ = static_cast<double>(std::sqrt(sum / static_cast<long double>(residuals.size())));
    }
  }

  /// Host ns of the GPU instant `offset_ns` after anchor `seq`. False when
  /// the anchor is unknown (its chunk was lost). Results stay within
  /// +-2^61 ns whatever the input, so differences of two never overflow.
  bool to_host_ns(std::uint64_t seq, long double offset_ns, std::int64_t& host_ns) const {
    const auto it = points_.find(seq);
    if (it == points_.end()) return false;
    const chain& c = chains_[it->second.chain];
    long double value = c.offset + c.rate * (it->second.gpu + offset_ns - c.gpu_origin);
    const long double limit = static_cast<long double>(std::int64_t{1} << 61);
    if (!(value < limit)) value = limit;  // also NaN
    if (value < -limit) value = -limit;
    host_ns = static_cast<std::int64_t>(std::llround(value));
    return true;
  }

  bool empty() const noexcept { return points_.empty(); }
  std::size_t anchors_given() const noexcept { return given_; }
  std::size_t anchors_used() const noexcept { return points_.size() - rejected_; }
  std::size_t anchors_rejected() const noexcept { return rejected_; }
  std::size_t chains() const noexcept { return chains_.size(); }
  /// How fast the GPU clock runs against the host's, in ppm (positive:
  /// the GPU clock is fast), of the chain with the most anchors; 0 when
  /// only an offset was fitted.
  double drift_ppm() const noexcept {
    const chain* best = nullptr;
    for (const chain& c : chains_)
      if (best == nullptr || c.used > best->used) best = &c;
    return best == nullptr ? 0 : static_cast<double>((1 / best->rate - 1) * 1e6L);
  }
  /// Residuals of the anchors kept, in ns: how far the line is from them.
  double residual_max_ns() const noexcept { return residual_max_ns_; }
  double residual_rms_ns() const noexcept { return residual_rms_ns_; }
  /// Median half-width of the anchor brackets (ns): the uncertainty of one anchor.
  double median_half_window_ns() const {
    std::vector<long double> w;
    for (const auto& p : points_) w.push_back(p.second.half_window);
    if (w.empty()) return 0;
    std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(w.size() / 2), w.end());
    return static_cast<double>(w[w.size() / 2]);
  }

 private:
  struct point {
    std::size_t chain = 0;
    long double gpu = 0;  ///< GPU ns on the chain's axis
    long double host_mid = 0;
    long double half_window = 0;
    bool rejected = false;
  };
  struct chain {
    long double offset = 0;      ///< host ns at gpu_origin
    long double rate = 1;        ///< host ns per GPU ns
    long double gpu_origin = 0;
    std::size_t used = 0;
  };

  void fit(std::size_t index, std::vector<long double>& residuals) {
    chain& c = chains_[index];
    std::vector<point*> members;
    for (auto& p : points_)
      if (p.second.chain == index) members.push_back(&p.second);
    for (int round = 0; round < 4; ++round) {
      solve(c, members);
      // Judge outliers against a robust line: the fitted rate with the
      // median residual as offset, so one bad anchor cannot hide by
      // pulling the mean towards itself.
      std::vector<long double> r;
      for (const point* p : members)
        if (!p->rejected) r.push_back(residual(c, *p));
      if (r.size() <= 2) break;
      const long double shift = median(r);
      for (long double& value : r) value = std::fabs(value - shift);
      const long double spread = median(r);
      bool dropped = false;
      for (point* p : members) {
        if (p->rejected) continue;
        const long double limit = std::max({4 * p->half_window, 4 * spread, 2000.0L});
        if (std::fabs(residual(c, *p) - shift) > limit) {
          p->rejected = true;
          ++rejected_;
          dropped = true;
        }
      }
      if (!dropped) break;
    }
    for (const point* p : members)
      if (!p->rejected) residuals.push_back(residual(c, *p));
  }

  static long double median(std::vector<long double> values) {
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
    return values[values.size() / 2];
  }

  static long double residual(const chain& c, const point& p) {
    return p.host_mid - (c.offset + c.rate * (p.gpu - c.gpu_origin));
  }

  /// Weighted least squares over the members not rejected.
  static void solve(chain& c, const std::vector<point*>& members) {
    long double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, lo = 0, hi = 0;
    bool first = true;
    long double x0 = 0, y0 = 0;
    c.used = 0;
    for (const point* p : members) {
      if (p->rejected) continue;
      if (first) {
        x0 = p->gpu;
        y0 = p->host_mid;
        lo = hi = p->gpu;
        first = false;
      }
      const long double w = 1 / ((p->half_window + 500) * (p->half_window + 500));
      const long double x = p->gpu - x0, y = p->host_mid - y0;
      sw += w;
      sx += w * x;
      sy += w * y;
      sxx += w * x * x;
      sxy += w * x * y;
      lo = std::min(lo, p->gpu);
      hi = std::max(hi, p->gpu);
      ++c.used;
    }
    c.gpu_origin = x0;
    if (c.used == 0) return;
    long double rate = 1;
    const long double denominator = sw * sxx - sx * sx;
    if (c.used >= 3 && hi - lo >= 2e9L && denominator > 0) {
      rate = (sw * sxy - sx * sy) / denominator;
      if (std::fabs(rate - 1) > 1e-3L) rate = 1;
    }
    c.rate = rate;
    c.offset = y0 + (sy - rate * sx) / sw;  // weighted mean of y - rate * x, shifted back
  }

  std::map<std::uint64_t, point> points_;
  std::vector<chain> chains_;
  std::size_t given_ = 0;
  std::size_t rejected_ = 0;
  double residual_max_ns_ = 0;
  double residual_rms_ns_ = 0;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
