// SPDX-License-Identifier: MIT
// read_events_backward's span order (per thread, latest end first) for spans recorded out of order: each is held until its end comes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <vector>

#include <edgetrace/decode/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Passes a backward stream of events to `sink`, moving every out_of_order
/// span (recorded after a span of its thread that ends later: the file
/// holds it too late, so a backward pass meets it too early) to where its
/// end puts it: held in a per-thread heap, handed over just before the first
/// in-order span of its thread that comes after it in end order (latest end
/// first; on equal ends, the enclosing span first). Other events pass at
/// once. Memory: the held spans, i.e. those whose place in the backward
/// stream is still to come (an EDGETRACE_RECORD span waits about as long as
/// its call came after its end). finish() hands over what is still held.
template <class Sink>
class end_order {
 public:
  explicit end_order(Sink& sink) : sink_(sink) {}

  void operator()(const event& e) {
    if (e.kind == event_kind::span) {
      if (e.out_of_order) {
        std::vector<event>& heap = held_[e.thread];
        heap.push_back(e);
        std::push_heap(heap.begin(), heap.end(), after);
        ++held_count_;
        return;
      }
      if (held_count_ != 0) release_before(e);
    }
    sink_(e);
  }

  /// Hands over every span still held, per thread in end order.
  void finish() {
    for (auto& entry : held_) {
      std::vector<event>& heap = entry.second;
      while (!heap.empty()) pop(heap);
    }
    held_.clear();
    held_count_ = 0;
  }

 private:
  /// Does `a` come before `b` in the backward order? Heap comparator: the
  /// span that comes first is the heap's top.
  static bool first(const event& a, const event& b) noexcept {
    return a.end_ns != b.end_ns ? a.end_ns > b.end_ns : a.begin_ns < b.begin_ns;
  }
  static bool after(const event& a, const event& b) noexcept { return first(b, a); }

  void release_before(const event& e) {
    const auto it = held_.find(e.thread);
    if (it == held_.end()) return;
    std::vector<event>& heap = it->second;
    while (!heap.empty() && first(heap.front(), e)) pop(heap);
  }

  void pop(std::vector<event>& heap) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const event e = heap.back();
    heap.pop_back();
    --held_count_;
    sink_(e);
  }

  Sink& sink_;
  std::map<const thread_info*, std::vector<event>> held_;
  std::size_t held_count_ = 0;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
