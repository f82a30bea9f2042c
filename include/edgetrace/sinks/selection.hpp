// SPDX-License-Identifier: MIT
// Which events a trace output keeps: --min-dur, --filter and --window, the same for the JSON and the Perfetto outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/sinks/name_pattern.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// What an output keeps of a dump's events. Loss markers are always kept.
struct event_selection {
  /// Spans shorter than this are left out (instants, counters and loss
  /// markers are kept).
  std::uint64_t min_dur_ns = 0;
  /// When set, only spans, instants and counters whose name matches are
  /// written; loss markers are always kept.
  name_pattern filter;
  /// Only what lies in [window_begin_ns, window_end_ns] (the reader's ns,
  /// CLOCK_MONOTONIC) is written: spans that overlap it (so the span that
  /// holds the window is kept, with its full length), instants, counters and
  /// loss markers inside it.
  std::int64_t window_begin_ns = std::numeric_limits<std::int64_t>::min();
  std::int64_t window_end_ns = std::numeric_limits<std::int64_t>::max();

  /// Focus (focus_slowest): the iteration span's name, the times of every
  /// iteration, and those kept in full ([begin, end] ns, sorted, merged).
  /// An event that lies inside an iteration but overlaps no kept one is
  /// left out, except the iteration spans themselves: each other iteration
  /// shows as one slice with its duration.
  std::string focus_name;
  std::vector<std::pair<std::int64_t, std::int64_t>> focus_iterations, focus_kept;
  /// With mark iterations: keep the marks of the iterations not kept in
  /// full too (a million iterations are a million marks); by default only
  /// the marks that bound a kept iteration are written.
  bool focus_other_marks = false;
  /// What the focus left out, in words (for the output's metadata).
  std::string focus_note;

  bool windowed() const noexcept {
    return window_begin_ns != std::numeric_limits<std::int64_t>::min() ||
           window_end_ns != std::numeric_limits<std::int64_t>::max();
  }
  /// Does it leave anything out?
  bool selects() const noexcept { return min_dur_ns != 0 || static_cast<bool>(filter) || windowed() || focused(); }
  bool focused() const noexcept { return !focus_iterations.empty(); }
};

/// What focus_slowest found.
struct focus_result {
  std::size_t iterations = 0;  ///< instances of the span (outermost on their thread)
  std::size_t slowest = 0;     ///< the slowest asked for (fewer when there are fewer)
  std::size_t kept = 0;        ///< kept in full: the slowest and one either side of each
  std::int64_t threshold_ns = 0;  ///< duration of the fastest of the slowest
  bool marks = false;             ///< iterations between marks (no span of that name)
};

/// `--focus slowest:N --per NAME`: full detail for the `n` slowest instances
/// of span `name` (outermost on their thread) and the instance before and
/// after each on its thread; every other instance kept as its one slice.
/// With a mark `name` (and no span of that name), an iteration is the time
/// between two consecutive marks of one thread, as `summary --per` counts
/// it (not across a pause): the slowest and their neighbours in full with
/// the marks that bound them, the others left out (their marks too, unless
/// `s.focus_other_marks`). Sets `s`'s focus fields from a forward pass
/// over `r`. False with `error` when the pass fails or no span or mark is
/// named `name`.
EDGETRACE_DETAIL_READER_API bool focus_slowest(dump_reader& r, const std::string& name, std::size_t n,
                                               event_selection& s, focus_result& result, std::string& error);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include <edgetrace/sinks/summary/iterations.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {
/// Sorted [begin, end] windows, overlapping ones merged.
inline std::vector<std::pair<std::int64_t, std::int64_t>> merged_windows(
    std::vector<std::pair<std::int64_t, std::int64_t>> windows) {
  std::sort(windows.begin(), windows.end());
  std::size_t merged = 0;  // in place: no second copy of a list that may hold millions
  for (const auto& w : windows) {
    if (merged != 0 && w.first <= windows[merged - 1].second)
      windows[merged - 1].second = std::max(windows[merged - 1].second, w.second);
    else
      windows[merged++] = w;
  }
  windows.resize(merged);
  windows.shrink_to_fit();
  return windows;
}
/// The window of `windows` (sorted, merged) that starts last at or before
/// `at`, or null.
inline const std::pair<std::int64_t, std::int64_t>* window_before(
    const std::vector<std::pair<std::int64_t, std::int64_t>>& windows, std::int64_t at) {
  auto it = std::upper_bound(windows.begin(), windows.end(),
                             std::make_pair(at, std::numeric_limits<std::int64_t>::max()));
  return it == windows.begin() ? nullptr : &*(--it);
}
}  // namespace detail

EDGETRACE_DETAIL_READER_API bool focus_slowest(dump_reader& r, const std::string& name, std::size_t n,
                                               event_selection& s, focus_result& result, std::string& error) {
  using window = std::pair<std::int64_t, std::int64_t>;
  // Memory: 16 bytes an instance (its window), the N slowest, and the
  // windows of every iteration once merged (16 bytes each again, the
  // threads' own lists freed as they are merged in).
  bool span_named = false, mark_named = false;
  if (!iteration_windows::named(r, name, span_named, mark_named, error)) {
    error = "--focus: no span or mark named \"" + name + "\" in the dump (--per names the span or mark of one iteration)";
    return false;
  }
  const bool marks = !span_named;  // a span of that name wins, as in summary --per
  std::map<const thread_info*, std::vector<window>> found;
  const bool ok = r.read_events([&](const event& e) {
    if (e.site == nullptr || e.site->name != name) return;
    if (marks ? (e.kind == event_kind::instant && e.site->kind == format::site_kind::mark) : e.kind == event_kind::span)
      found[e.thread].emplace_back(e.begin_ns, e.end_ns);
  });
  if (!ok) {
    error = r.error();
    return false;
  }
  if (marks)
    for (auto& entry : found) {  // each thread's marks become the iterations between them
      std::vector<window>& list = entry.second;
      std::sort(list.begin(), list.end());
      std::size_t kept = 0;
      for (std::size_t i = 1; i < list.size(); ++i)
        if (!crosses_pause(*entry.first->writer, list[i - 1].first, list[i].first))
          list[kept++] = window{list[i - 1].first, list[i].first};
      list.resize(kept);
    }
  // The slowest: a min-heap held to n of (duration, ~thread #, ~index), so
  // that of equal durations the earliest listed stay.
  using ranked = std::tuple<std::int64_t, std::size_t, std::size_t>;
  std::priority_queue<ranked, std::vector<ranked>, std::greater<ranked>> slowest;
  std::vector<std::vector<window>*> threads;
  std::size_t total = 0;
  for (auto& entry : found) {
    std::vector<window>& list = entry.second;
    std::sort(list.begin(), list.end());
    std::size_t kept = 0;  // outermost instances, in place: one nested in the previous is not one
    for (const window& w : list)
      if (kept == 0 || w.second > list[kept - 1].second) list[kept++] = w;
    list.resize(kept);
    list.shrink_to_fit();
    for (std::size_t i = 0; i < list.size(); ++i) {
      slowest.push(ranked{list[i].second - list[i].first, ~threads.size(), ~i});
      if (slowest.size() > n) slowest.pop();
    }
    total += list.size();
    threads.push_back(&list);
  }
  if (total == 0) {
    error = "--focus: no iteration of \"" + name + "\" in the dump (" +
            (marks ? "a mark needs two on one thread, with no pause between" : "no instance of the span") + ")";
    return false;
  }
  result.iterations = total;
  result.marks = marks;
  result.slowest = slowest.size();
  std::set<std::pair<std::size_t, std::size_t>> kept;
  result.threshold_ns = std::get<0>(slowest.top());  // the fastest of the slowest
  for (; !slowest.empty(); slowest.pop()) {
    const std::pair<std::size_t, std::size_t> at{~std::get<1>(slowest.top()), ~std::get<2>(slowest.top())};
    kept.insert(at);
    if (at.second > 0) kept.insert({at.first, at.second - 1});
    if (at.second + 1 < threads[at.first]->size()) kept.insert({at.first, at.second + 1});
  }
  std::vector<window> kept_windows;
  for (const auto& at : kept) kept_windows.push_back((*threads[at.first])[at.second]);
  result.kept = kept.size();
  std::vector<window> all;
  if (threads.size() == 1) {
    all = std::move(*threads.front());
  } else {
    all.reserve(total);
    for (std::vector<window>* list : threads) {
      all.insert(all.end(), list->begin(), list->end());
      std::vector<window>().swap(*list);
    }
  }
  found.clear();
  s.focus_name = name;
  s.focus_iterations = detail::merged_windows(std::move(all));
  s.focus_kept = detail::merged_windows(std::move(kept_windows));
  return true;
}

namespace detail {

/// Applies an event_selection; caches the filter's verdict per site.
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
    if (s_.focused() &&
        !(e.site != nullptr && e.site->name == s_.focus_name &&
          (e.kind == event_kind::span || (e.kind == event_kind::instant && s_.focus_other_marks))) &&
        !in_focus(e.begin_ns, e.end_ns))
      return false;
    if (!s_.filter) return true;
    if (e.site == last_site_) return last_verdict_;
    auto it = verdicts_.find(e.site);
    if (it == verdicts_.end()) it = verdicts_.emplace(e.site, s_.filter.matches(e.site->name)).first;
    last_site_ = e.site;
    last_verdict_ = it->second;
    return it->second;
  }
  /// Is a sample at `ns` (a memory pool's live bytes) in the output: inside
  /// the window and, with a focus, not inside an iteration shown as one slice.
  bool keep_point(std::int64_t ns) const {
    return ns >= s_.window_begin_ns && ns <= s_.window_end_ns && (!s_.focused() || in_focus(ns, ns));
  }
  /// Is the host span that launched `g` in the output?
  bool keep_launch(const gpu_span& g) { return keep_span(g.site, g.host_begin_ns, g.host_end_ns); }
  /// Is `g` itself (resolved) in the output? Same rules as for host spans.
  bool keep_gpu(const gpu_span& g) { return keep_span(g.site, g.begin_ns, g.end_ns); }

 private:
  /// Overlapping an iteration kept in full, or not inside any iteration.
  bool in_focus(std::int64_t begin_ns, std::int64_t end_ns) const {
    const auto* kept = detail::window_before(s_.focus_kept, end_ns);
    if (kept != nullptr && kept->second >= begin_ns) return true;
    const auto* iteration = detail::window_before(s_.focus_iterations, begin_ns);
    return iteration == nullptr || end_ns > iteration->second;
  }
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
#endif  // EDGETRACE_DETAIL_READER_BODIES
