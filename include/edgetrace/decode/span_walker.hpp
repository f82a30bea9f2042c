// SPDX-License-Identifier: MIT
// Span structure from a backward pass: nesting depth and self time per span, with one stack of ancestors per thread.
#pragma once

#include <cstdint>
#include <vector>

#include <edgetrace/decode/detail/by_thread.hpp>
#include <edgetrace/decode/dump_reader.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// One span with its place in the tree, handed out once all its children
/// are known.
struct span_record : span_place {
  std::uint64_t self_ns = 0;  ///< duration minus the durations of its direct children (same thread)
  std::uint32_t depth = 0;    ///< 0 for a span no other span on its thread encloses
  std::uint64_t duration() const noexcept { return static_cast<std::uint64_t>(end_ns - begin_ns); }
};

/// Walks a dump backwards (dump_reader::read_events_backward): per thread,
/// spans arrive latest end first, so ancestors come before descendants.
/// A stack of open ancestors per thread gives every span its depth on
/// arrival and its self time once the next span outside it arrives.
/// Memory: per thread, one entry per nesting level; nothing per span.
///
/// `on_span(const span_record&)` gets every span (in reverse end order per
/// thread, each after its descendants' durations are known);
/// `on_other(const event&)` gets instants, marks, counters and loss records
/// as they are read (reverse order per thread).
template <class OnSpan, class OnOther>
bool walk_spans(dump_reader& r, OnSpan&& on_span, OnOther&& on_other) {
  struct open_span {
    const site_info* site;
    std::int64_t begin_ns;
    std::int64_t end_ns;
    std::uint64_t children_ns;
    std::uint32_t depth;
  };
  struct thread_state {
    std::vector<open_span> stack;
  };
  detail::by_thread<thread_state> threads;
  span_record out;
  auto finish = [&](const open_span& s) {
    out.site = s.site;
    out.begin_ns = s.begin_ns;
    out.end_ns = s.end_ns;
    const auto duration = static_cast<std::uint64_t>(s.end_ns - s.begin_ns);
    out.self_ns = s.children_ns < duration ? duration - s.children_ns : 0;
    out.depth = s.depth;
    on_span(static_cast<const span_record&>(out));
  };
  const bool ok = r.read_events_backward([&](const event& e) {
    if (e.kind != event_kind::span) {
      on_other(e);
      return;
    }
    out.writer = e.writer;
    out.thread = e.thread;
    std::vector<open_span>& stack = threads[e.thread].stack;
    // An open span that does not contain this one has no more children:
    // everything later in this (backward) stream ends even earlier.
    while (!stack.empty() && stack.back().begin_ns > e.begin_ns) {
      finish(stack.back());
      stack.pop_back();
    }
    const auto duration = static_cast<std::uint64_t>(e.end_ns - e.begin_ns);
    if (!stack.empty()) stack.back().children_ns += duration;
    stack.push_back(open_span{e.site, e.begin_ns, e.end_ns, 0, static_cast<std::uint32_t>(stack.size())});
  });
  for (auto& t : threads) {
    out.writer = t.first->writer;
    out.thread = t.first;
    auto& stack = t.second.stack;
    while (!stack.empty()) {
      finish(stack.back());
      stack.pop_back();
    }
  }
  return ok;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
