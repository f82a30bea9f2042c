// SPDX-License-Identifier: MIT
// Iteration windows for `summary --per NAME` (instances of an enclosing span, or the time between marks), cut at pauses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/latency.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Whether recording of writer `w` was switched off (edgetrace::pause(),
/// EDGETRACE_DURATION, a toggle signal) at some time in [begin, end): the
/// time between two marks around such a switch is not one iteration, since
/// whatever ran while recording was off is missing. Cost: one pass over the
/// writer's recording changes (a handful).
inline bool crosses_pause(const writer_info& w, std::int64_t begin, std::int64_t end) {
  for (const recording_change& change : w.recording)
    if (!change.on && change.ns >= begin && change.ns < end) return true;
  return false;
}

/// The iterations that `--per NAME` divides a dump into, from a forward
/// pre-pass over the dump (memory: one pair of times per iteration).
/// With a span name, each outermost instance of the span is one iteration
/// and a span belongs to it when it lies inside the instance on the same
/// thread. With a mark name, each interval between consecutive marks of one
/// thread is one iteration (an interval across a pause is left out and
/// counted in cut_at_pause()) and a span belongs to it when it begins inside
/// it, on any thread.
class iteration_windows {
 public:
  using window = std::pair<std::int64_t, std::int64_t>;  ///< [begin, end] in ns

  /// Reads `r` and keeps the iterations named `name` for which
  /// `keep(thread, begin_ns, end_ns)` holds (thread, warm-up and phase
  /// filters). False with `error` set on an I/O error or when the dump has
  /// no span and no mark of that name.
  template <class Keep>
  bool collect(dump_reader& r, const std::string& name, Keep&& keep, std::string& error) {
    bool span_named = false, mark_named = false;
    if (!named(r, name, span_named, mark_named, error)) return false;
    marks_ = !span_named;  // a span of that name wins: it says exactly what belongs to it
    // Deques: a million iterations grow without a doubled copy. Marks
    // keep their times only (8 bytes a mark).
    std::map<const thread_info*, std::deque<window>> found;
    std::map<const thread_info*, std::deque<std::int64_t>> mark_times;
    const bool ok = r.read_events([&](const event& e) {
      if (e.site == nullptr || e.site->name != name) return;
      if (!marks_ && e.kind == event_kind::span) found[e.thread].emplace_back(e.begin_ns, e.end_ns);
      if (marks_ && e.kind == event_kind::instant && e.site->kind == format::site_kind::mark)
        mark_times[e.thread].push_back(e.begin_ns);
    });
    if (!ok) {
      error = r.error();
      return false;
    }
    if (marks_) collect_marks(mark_times, keep);
    for (auto& entry : found) {
      std::deque<window>& list = entry.second;
      std::sort(list.begin(), list.end());
      // The outermost instances kept, in place (memory: 16 bytes an
      // iteration, not twice that).
      std::size_t kept = 0;
      for (const window& w : list) {
        if (kept != 0 && w.second <= list[kept - 1].second) continue;  // nested in the previous instance
        if (keep(entry.first, w.first, w.second)) {
          list[kept++] = w;
          counted(w);
        }
      }
      list.resize(kept);
      list.shrink_to_fit();
      if (kept != 0) span_windows_[entry.first] = std::move(list);
    }
    found.clear();
    number_span_windows();
    return true;
  }

  /// Whether some writer of `r` defines a span (`span`) or a mark (`mark`)
  /// named `name`; false, with `error` saying so, when neither.
  static bool named(const dump_reader& r, const std::string& name, bool& span, bool& mark, std::string& error) {
    for (const auto& w : r.writers())
      for (const auto& s : w.second.sites)
        if (s.second.name == name) {
          span = span || s.second.kind == format::site_kind::span;
          mark = mark || s.second.kind == format::site_kind::mark;
        }
    if (span || mark) return true;
    error = "--per: no span or mark named \"" + name + "\" in the dump";
    return false;
  }

  /// Whether a span of `thread` over [begin, end] belongs to an iteration.
  /// Cost: one binary search.
  bool contains(const thread_info* thread, std::int64_t begin, std::int64_t end) const {
    if (marks_) {
      auto it = std::upper_bound(merged_.begin(), merged_.end(), window{begin, std::numeric_limits<std::int64_t>::max()});
      return it != merged_.begin() && begin < (--it)->second;
    }
    const auto found = span_windows_.find(thread);
    if (found == span_windows_.end()) return false;
    const std::deque<window>& list = found->second;
    auto it = std::upper_bound(list.begin(), list.end(), window{begin, std::numeric_limits<std::int64_t>::max()});
    if (it == list.begin()) return false;
    --it;
    return begin >= it->first && end <= it->second;
  }

  /// The number of the iteration a span of `thread` over [begin, end]
  /// belongs to, counted from 0 in order of begin over every thread; -1
  /// when it belongs to none. Spans: as contains() decides. Marks: the
  /// latest iteration that began at or before `begin`, when `begin` is
  /// before its end (where iterations of several threads overlap, the
  /// latest begun wins). Cost: one binary search.
  std::int64_t number_of(const thread_info* thread, std::int64_t begin, std::int64_t end) const {
    const auto at = [&](const auto& list) {
      auto it = std::upper_bound(list.begin(), list.end(), window{begin, std::numeric_limits<std::int64_t>::max()});
      return it == list.begin() ? list.size() : static_cast<std::size_t>(it - list.begin()) - 1;
    };
    if (marks_) {
      const std::size_t i = at(mark_windows_);
      return i < mark_windows_.size() && begin < mark_windows_[i].second ? static_cast<std::int64_t>(i) : -1;
    }
    const auto found = span_windows_.find(thread);
    if (found == span_windows_.end()) return -1;
    const std::size_t i = at(found->second);
    if (i == found->second.size() || begin < found->second[i].first || end > found->second[i].second) return -1;
    // One thread's iterations are numbered in their order (nothing kept).
    return span_windows_.size() == 1 ? static_cast<std::int64_t>(i) : span_numbers_.at(thread)[i];
  }

  /// Calls `fn(thread, window)` for every iteration kept with the thread it
  /// is on (the thread of its span, or of the marks around it): span
  /// iterations thread by thread, then mark iterations by begin. Memory:
  /// nothing.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& entry : span_windows_)
      for (const window& w : entry.second) fn(entry.first, w);
    for (std::size_t i = 0; i < mark_windows_.size(); ++i)
      fn(mark_threads_[mark_thread_index_.empty() ? 0 : mark_thread_index_[i]], mark_windows_[i]);
  }

  /// About the memory the windows hold (bytes).
  std::size_t bytes() const noexcept {
    std::size_t total = (mark_windows_.capacity() + merged_.capacity()) * sizeof(window) +
                        mark_thread_index_.capacity() * sizeof(std::uint32_t);
    for (const auto& entry : span_windows_) total += entry.second.size() * sizeof(window);
    for (const auto& entry : span_numbers_) total += entry.second.capacity() * sizeof(std::int64_t);
    return total;
  }

  bool from_marks() const noexcept { return marks_; }
  std::uint64_t count() const noexcept { return count_; }        ///< iterations kept
  std::uint64_t total_ns() const noexcept { return total_ns_; }  ///< their summed durations
  const latency_stats& latency() const noexcept { return latency_; }  ///< their durations
  std::uint64_t cut_at_pause() const noexcept { return cut_at_pause_; }

 private:
  /// The mark iterations: each interval between consecutive marks of one
  /// thread that crosses no pause and passes `keep`, all threads' sorted
  /// by begin (then thread), and their union. Memory: 16 bytes an
  /// iteration (24 while the times are read), and 4 more where several
  /// threads have marks.
  template <class Keep>
  void collect_marks(std::map<const thread_info*, std::deque<std::int64_t>>& times, Keep&& keep) {
    std::size_t candidates = 0;
    for (const auto& entry : times) candidates += entry.second.empty() ? 0 : entry.second.size() - 1;
    mark_windows_.reserve(candidates);
    const bool several = times.size() > 1;
    if (several) mark_thread_index_.reserve(candidates);
    for (auto entry = times.begin(); entry != times.end(); entry = times.erase(entry)) {
      std::deque<std::int64_t>& list = entry->second;
      std::sort(list.begin(), list.end());
      const auto index = static_cast<std::uint32_t>(mark_threads_.size());
      bool any = false;
      for (std::size_t i = 1; i < list.size(); ++i) {
        const window w{list[i - 1], list[i]};
        if (crosses_pause(*entry->first->writer, w.first, w.second)) ++cut_at_pause_;
        else if (keep(entry->first, w.first, w.second)) {
          mark_windows_.push_back(w);
          if (several) mark_thread_index_.push_back(index);
          counted(w);
          any = true;
        }
      }
      if (any) mark_threads_.push_back(entry->first);
    }
    if (mark_threads_.size() > 1) {
      // Several threads: one order for all (a permutation, then each array
      // rebuilt in it).
      std::vector<std::uint32_t> order(mark_windows_.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
      std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return mark_windows_[a] != mark_windows_[b] ? mark_windows_[a] < mark_windows_[b]
                                                    : mark_thread_index_[a] < mark_thread_index_[b];
      });
      std::vector<window> windows(order.size());
      std::vector<std::uint32_t> threads(order.size());
      for (std::size_t i = 0; i < order.size(); ++i) {
        windows[i] = mark_windows_[order[i]];
        threads[i] = mark_thread_index_[order[i]];
      }
      mark_windows_.swap(windows);
      mark_thread_index_.swap(threads);
    } else {
      mark_thread_index_.clear();  // one thread: its windows are already in order
      mark_thread_index_.shrink_to_fit();
    }
    // Windows of several threads may overlap: look up in their union.
    for (const window& w : mark_windows_) {
      if (!merged_.empty() && w.first <= merged_.back().second) merged_.back().second = std::max(merged_.back().second, w.second);
      else merged_.push_back(w);
    }
  }

  /// Numbers the span iterations of every thread in order of begin (with
  /// one thread, their order is their number: nothing kept).
  void number_span_windows() {
    if (span_windows_.size() < 2) return;
    std::vector<std::pair<window, std::pair<const thread_info*, std::size_t>>> all;
    for (const auto& entry : span_windows_)
      for (std::size_t i = 0; i < entry.second.size(); ++i) all.push_back({entry.second[i], {entry.first, i}});
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return a.second.first->os_tid != b.second.first->os_tid ? a.second.first->os_tid < b.second.first->os_tid
                                                               : a.second.first < b.second.first;
    });
    for (const auto& entry : span_windows_) span_numbers_[entry.first].resize(entry.second.size());
    for (std::size_t n = 0; n < all.size(); ++n)
      span_numbers_[all[n].second.first][all[n].second.second] = static_cast<std::int64_t>(n);
  }

  void counted(const window& w) {
    ++count_;
    total_ns_ += static_cast<std::uint64_t>(w.second - w.first);
    latency_.add(static_cast<std::uint64_t>(w.second - w.first));
  }

  bool marks_ = false;
  std::map<const thread_info*, std::deque<window>> span_windows_;  ///< outermost instances, by begin
  std::map<const thread_info*, std::vector<std::int64_t>> span_numbers_;  ///< their numbers (number_of)
  std::vector<window> mark_windows_;                                 ///< every thread's, by begin
  std::vector<const thread_info*> mark_threads_;                     ///< the threads whose marks gave windows
  std::vector<std::uint32_t> mark_thread_index_;  ///< the thread of each window; empty: all mark_threads_[0]'s
  std::vector<window> merged_;                                       ///< their union, for contains()
  std::uint64_t count_ = 0;
  std::uint64_t total_ns_ = 0;
  latency_stats latency_;
  std::uint64_t cut_at_pause_ = 0;
};

/// "layer_2" before "layer_10": compares runs of digits by value and the
/// rest byte by byte; equal values with different zero padding fall back
/// to the plain comparison, so the order stays strict. Cost: one pass over
/// the common prefix.
inline bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && a[ei] == '0') ++ei;
      while (ej < b.size() && b[ej] == '0') ++ej;
      std::size_t si = ei, sj = ej;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      if (ei - si != ej - sj) return ei - si < ej - sj;
      const int c = a.compare(si, ei - si, b, sj, ej - sj);
      if (c != 0) return c < 0;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if (i != a.size() || j != b.size()) return a.size() - i < b.size() - j;
  return a < b;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
