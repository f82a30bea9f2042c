// SPDX-License-Identifier: MIT
// Streaming latency statistics: count/total/min/max, exact percentiles up to a sample bound, then a log-bucket histogram.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Log-linear buckets over u64 nanoseconds (HdrHistogram-like, 7 sub-bucket
/// bits): values below 256 have a bucket each (exact); above, every power of
/// two is cut into 128 equal buckets. A bucket's representative is its
/// midpoint, so an estimate is within 1/256 (0.39 %) of any value in the
/// bucket. 7424 buckets cover the whole u64 range.
struct log_buckets {
  static constexpr unsigned sub_bits = 7;
  static constexpr std::size_t linear = std::size_t{2} << sub_bits;  // 256 exact buckets
  static constexpr std::size_t count = linear + (64 - sub_bits - 1 - 1) * (std::size_t{1} << sub_bits) +
                                       (std::size_t{1} << sub_bits);  // 7424
  /// Relative error bound of a bucket representative (0.390625 %).
  static constexpr double relative_error = 1.0 / 256;

  static std::size_t index(std::uint64_t v) noexcept {
    if (v < linear) return static_cast<std::size_t>(v);
    const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(v));  // >= 8
    const unsigned shift = e - sub_bits;
    return linear + (e - sub_bits - 1) * (std::size_t{1} << sub_bits) +
           static_cast<std::size_t>((v >> shift) - (std::uint64_t{1} << sub_bits));
  }
  static std::uint64_t lower(std::size_t i) noexcept {
    if (i < linear) return i;
    const std::size_t k = i - linear;
    const unsigned e = static_cast<unsigned>(k >> sub_bits) + sub_bits + 1;
    const std::uint64_t m = (std::uint64_t{1} << sub_bits) + (k & ((std::size_t{1} << sub_bits) - 1));
    return m << (e - sub_bits);
  }
  static std::uint64_t width(std::size_t i) noexcept {
    if (i < linear) return 1;
    const unsigned e = static_cast<unsigned>((i - linear) >> sub_bits) + sub_bits + 1;
    return std::uint64_t{1} << (e - sub_bits);
  }
  /// Midpoint of bucket i (its lower bound for exact buckets).
  static std::uint64_t representative(std::size_t i) noexcept { return lower(i) + (width(i) - 1) / 2; }
};

/// Statistics of one stream of durations (ns). Memory: 8 bytes per sample
/// while exact (at most the exact limit), then at most 58 KiB of buckets.
class latency_stats {
 public:
  /// Samples kept exactly per stream before switching to buckets.
  static constexpr std::size_t default_exact_limit = 100000;

  explicit latency_stats(std::size_t exact_limit = default_exact_limit) : exact_limit_(exact_limit) {}

  /// Adds one sample. Cost: a few compares and a store (exact), or a bucket
  /// index (a count-leading-zeros and a shift) and an increment.
  void add(std::uint64_t v) {
    if (count_ == 0 || v < min_) min_ = v;
    if (v > max_) max_ = v;
    ++count_;
    total_ += v;
    if (exact_) {
      samples_.push_back(v);
      sorted_ = false;
      if (samples_.size() > exact_limit_) to_buckets();
    } else {
      add_bucket(v, 1);
    }
  }

  /// Adds all of `other` (exactness is kept only when both stay within the limit).
  void merge(const latency_stats& other) {
    if (other.count_ == 0) return;
    if (count_ == 0 || other.min_ < min_) min_ = other.min_;
    if (other.max_ > max_) max_ = other.max_;
    count_ += other.count_;
    total_ += other.total_;
    if (exact_ && other.exact_ && samples_.size() + other.samples_.size() <= exact_limit_) {
      samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
      sorted_ = false;
      return;
    }
    to_buckets();
    if (other.exact_)
      for (std::uint64_t v : other.samples_) add_bucket(v, 1);
    else
      for (std::size_t i = 0; i < other.buckets_.size(); ++i)
        if (other.buckets_[i]) add_bucket(bucket_value(i), other.buckets_[i]);
  }

  /// Moves the exact samples into buckets and frees them.
  void to_buckets() {
    if (!exact_) return;
    exact_ = false;
    for (std::uint64_t v : samples_) add_bucket(v, 1);
    std::vector<std::uint64_t>().swap(samples_);
  }

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t total() const noexcept { return total_; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  std::uint64_t max() const noexcept { return max_; }
  std::uint64_t mean() const noexcept { return count_ ? (total_ + count_ / 2) / count_ : 0; }
  /// True while every sample is kept (percentiles are exact).
  bool exact() const noexcept { return exact_; }
  std::size_t exact_samples() const noexcept { return samples_.size(); }

  /// Nearest-rank percentile: the smallest sample x such that at least p %
  /// of the samples are <= x (rank ceil(p/100 * n), at least 1). Exact
  /// while exact(); else the representative of the bucket holding that
  /// rank, clamped to [min, max] (relative error <= log_buckets::relative_error).
  std::uint64_t percentile(double p) const {
    if (count_ == 0) return 0;
    const std::uint64_t rank = nearest_rank(p, count_);
    if (exact_) {
      if (!sorted_) {
        std::sort(samples_.begin(), samples_.end());
        sorted_ = true;
      }
      return samples_[rank - 1];
    }
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) return std::min(std::max(bucket_value(i), min_), max_);
    }
    return max_;
  }

  /// Nearest rank (1-based) of percentile p among n samples.
  static std::uint64_t nearest_rank(double p, std::uint64_t n) {
    const double r = std::ceil(p / 100.0 * static_cast<double>(n) - 1e-9);
    if (r < 1) return 1;
    if (r >= static_cast<double>(n)) return n;
    return static_cast<std::uint64_t>(r);
  }

  /// Counts per bin for `edges` (ascending; bin i is [edges[i], edges[i+1]),
  /// the last bin also holds edges.back()). From samples while exact, else
  /// from bucket representatives.
  std::vector<std::uint64_t> histogram(const std::vector<std::uint64_t>& edges) const {
    std::vector<std::uint64_t> bins(edges.size() > 1 ? edges.size() - 1 : 0, 0);
    if (bins.empty()) return bins;
    auto put = [&](std::uint64_t v, std::uint64_t n) {
      auto it = std::upper_bound(edges.begin(), edges.end(), v);
      std::size_t i = it == edges.begin() ? 0 : static_cast<std::size_t>(it - edges.begin()) - 1;
      if (i >= bins.size()) i = bins.size() - 1;
      bins[i] += n;
    };
    if (exact_)
      for (std::uint64_t v : samples_) put(v, 1);
    else
      for (std::size_t i = 0; i < buckets_.size(); ++i)
        if (buckets_[i]) put(std::min(std::max(bucket_value(i), min_), max_), buckets_[i]);
    return bins;
  }

 private:
  static std::uint64_t bucket_value(std::size_t i) noexcept { return log_buckets::representative(i); }
  void add_bucket(std::uint64_t v, std::uint64_t n) {
    const std::size_t i = log_buckets::index(v);
    if (i >= buckets_.size()) buckets_.resize(i + 1, 0);
    buckets_[i] += n;
  }

  std::size_t exact_limit_;
  std::uint64_t count_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
  bool exact_ = true;
  mutable bool sorted_ = true;
  mutable std::vector<std::uint64_t> samples_;
  std::vector<std::uint64_t> buckets_;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
