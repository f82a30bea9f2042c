// SPDX-License-Identifier: MIT
// Which events a trace output keeps: --min-dur, --filter and --window, the same for the JSON and the Perfetto outputs.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <regex>

#include <edgetrace/decode/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// What an output keeps of a dump's events. Loss markers are always kept.
struct event_selection {
  /// Spans shorter than this are left out (instants, counters and loss
  /// markers are kept).
  std::uint64_t min_dur_ns = 0;
  /// When set, only spans, instants and counters whose name matches
  /// (std::regex_search) are written; loss markers are always kept.
  std::shared_ptr<const std::regex> filter;
  /// Only what lies in [window_begin_ns, window_end_ns] (the reader's ns,
  /// CLOCK_MONOTONIC) is written: spans that overlap it (so the span that
  /// holds the window is kept, with its full length), instants, counters and
  /// loss markers inside it.
  std::int64_t window_begin_ns = std::numeric_limits<std::int64_t>::min();
  std::int64_t window_end_ns = std::numeric_limits<std::int64_t>::max();

  bool windowed() const noexcept {
    return window_begin_ns != std::numeric_limits<std::int64_t>::min() ||
           window_end_ns != std::numeric_limits<std::int64_t>::max();
  }
  /// Does it leave anything out?
  bool selects() const noexcept { return min_dur_ns != 0 || filter != nullptr || windowed(); }
};

namespace detail {

/// Applies an event_selection; caches the regex verdict per site.
class event_filter {
 public:
  explicit event_filter(const event_selection& selection) : s_(selection) {}
  bool keep(const event& e) {
    if (e.kind == event_kind::span ? e.end_ns < s_.window_begin_ns || e.begin_ns > s_.window_end_ns
                                   : e.begin_ns < s_.window_begin_ns || e.begin_ns > s_.window_end_ns)
      return false;
    if (e.kind == event_kind::loss) return true;
    if (e.kind == event_kind::span && s_.min_dur_ns != 0 &&
        static_cast<std::uint64_t>(e.end_ns - e.begin_ns) < s_.min_dur_ns)
      return false;
    if (!s_.filter) return true;
    if (e.site == last_site_) return last_verdict_;
    auto it = verdicts_.find(e.site);
    if (it == verdicts_.end()) it = verdicts_.emplace(e.site, std::regex_search(e.site->name, *s_.filter)).first;
    last_site_ = e.site;
    last_verdict_ = it->second;
    return it->second;
  }
  /// Is the host span that launched `g` in the output?
  bool keep_launch(const gpu_span& g) { return keep_span(g.site, g.host_begin_ns, g.host_end_ns); }
  /// Is `g` itself (resolved) in the output? Same rules as for host spans.
  bool keep_gpu(const gpu_span& g) { return keep_span(g.site, g.begin_ns, g.end_ns); }

 private:
  bool keep_span(const site_info* site, std::int64_t begin_ns, std::int64_t end_ns) {
    if (site == nullptr) return !s_.filter && end_ns >= s_.window_begin_ns && begin_ns <= s_.window_end_ns;
    event e;
    e.kind = event_kind::span;
    e.site = site;
    e.begin_ns = begin_ns;
    e.end_ns = end_ns;
    return keep(e);
  }

  const event_selection& s_;
  std::map<const site_info*, bool> verdicts_;
  const site_info* last_site_ = nullptr;
  bool last_verdict_ = true;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
