// SPDX-License-Identifier: MIT
// The host tracks: a dump's spans turned into slices on their thread's track, from the backward pass (internal to perfetto/writer.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/perfetto/proto.hpp>
#include <edgetrace/sinks/perfetto/sequences.hpp>
#include <edgetrace/sinks/perfetto/stream.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Puts one dump's host spans on their thread tracks from a backward pass
/// (dump_reader::read_events_backward: per thread, latest end first, a
/// span's ancestors before it).
///
/// trace_processor sorts all events by timestamp and keeps file order among
/// equal timestamps; a slice end closes the innermost open slice of its
/// track. So only events of one track at the same nanosecond need an order:
/// the ends there before the begins, and outer begins before inner ones.
/// An end is written when its span arrives (every end at that time arrives
/// before any later begin could be released); a begin is held until a span
/// ending before it arrives, which also means every argument and flow step
/// inside it has been seen. The held spans all contain the latest end seen,
/// so they are the open ancestors (plus later siblings that begin at the
/// nanosecond an earlier one ends): memory per thread is the nesting depth
/// plus such touching chains.
class perfetto_host_tracks {
 public:
  perfetto_host_tracks(perfetto_thread_sequences& s, perfetto_result& result) : s_(s), result_(result) {}

  /// Starts a thread: its track.
  void add_thread(const thread_info* t, std::uint64_t track) {
    thread_state& state = threads_[t];
    state.thread = t;
    state.track = track;
  }
  /// Reads `r`'s arguments and flow steps as the backward pass needs them.
  void read_annotations(const dump_reader& r) { notes_.emplace(r, span_order::walk_spans); }
  /// Sites whose spans launched GPU work: those spans start a launch flow.
  std::set<const site_info*>& launch_sites() noexcept { return launch_sites_; }

  /// A span, written or (`kept` false) left out by the selection: one left
  /// out is still held, so that its own arguments and flow steps do not
  /// pass to its parent.
  void on_span(const event& e, bool kept = true) {
    thread_state& t = state(e.thread);
    assign_from(t, e.end_ns + 1);
    release(t, [&](const held_span& h) { return h.begin_ns > e.end_ns; });
    if (kept && e.end_ns != e.begin_ns) s_.event(t.track, e.end_ns, perfetto_proto::type_slice_end, nullptr, nullptr);
    t.held.push_back(held_span{e.writer, e.site, e.begin_ns, e.end_ns, e.begin_tick, kept, {}, {}});
    result_.max_pending = std::max(result_.max_pending, t.held.size());
    if (kept) ++result_.slices;
    else ++result_.filtered;
  }

  /// Track of a thread (its events pass through here in order).
  std::uint64_t track(const thread_info* thread) { return state(thread).track; }

  /// Writes every begin still held (after the pass).
  void finish() {
    for (auto& entry : threads_) {
      assign_from(entry.second, std::numeric_limits<std::int64_t>::min());
      release(entry.second, [](const held_span&) { return true; });
    }
  }

 private:
  struct held_span {
    const writer_info* writer;
    const site_info* site;
    std::int64_t begin_ns, end_ns;
    std::uint64_t begin_tick;
    bool kept;  ///< written (else held only to keep its annotations from its parent)
    std::vector<annotation> args;
    std::vector<std::uint64_t> flows;
  };
  struct thread_state {
    const thread_info* thread = nullptr;
    std::uint64_t track = 0;
    std::vector<held_span> held;  // arrival order: outer before inner
  };

  thread_state& state(const thread_info* thread) {
    if (thread == last_thread_) return *last_state_;
    thread_state& t = threads_[thread];
    t.thread = thread;
    last_thread_ = thread;
    last_state_ = &t;
    return t;
  }

  /// Hands the thread's annotations at or after `from_ns` (read latest
  /// first) to the innermost held span that contains each: the latest to
  /// arrive (that is the one with the earliest end, as span_annotations
  /// decides in a forward pass).
  void assign_from(thread_state& t, std::int64_t from_ns) {
    if (!notes_) return;
    annotation a;
    while (notes_->take(t.thread, from_ns, a)) {
      for (auto h = t.held.rbegin(); h != t.held.rend(); ++h) {
        if (h->begin_ns > a.ns || h->end_ns < a.ns) continue;
        if (a.type != format::annotation_record::flow) {
          h->args.insert(h->args.begin(), a);  // arrives latest first; keep time order
        } else {
          const std::uint64_t id = perfetto_flow_id(h->writer->id, a.name(), a.value);
          if (std::find(h->flows.begin(), h->flows.end(), id) == h->flows.end()) h->flows.push_back(id);
        }
        break;
      }
    }
  }

  /// Writes the begins of the held spans that `done` picks, outer first.
  template <class Done>
  void release(thread_state& t, Done&& done) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < t.held.size(); ++i) {
      held_span& h = t.held[i];
      if (!done(h)) {
        if (kept != i) t.held[kept] = std::move(h);
        ++kept;
        continue;
      }
      if (!h.kept) continue;
      result_.flow_steps += h.flows.size();
      if (launch_sites_.count(h.site) != 0)
        h.flows.push_back(perfetto_launch_id(h.writer->id, t.thread->os_tid, h.begin_tick));
      args_.clear();
      for (const annotation& a : h.args) args_.push_back(&a);
      s_.event(t.track, h.begin_ns, perfetto_proto::type_slice_begin, &display_name(*h.site), &h.site->category,
               h.flows, args_);
      if (h.begin_ns == h.end_ns) s_.event(t.track, h.end_ns, perfetto_proto::type_slice_end, nullptr, nullptr);
    }
    t.held.resize(kept);
  }

  const std::string& display_name(const site_info& site) const { return site.name.empty() ? unnamed_ : site.name; }

  perfetto_thread_sequences& s_;
  perfetto_result& result_;
  std::map<const thread_info*, thread_state> threads_;
  std::set<const site_info*> launch_sites_;
  const thread_info* last_thread_ = nullptr;
  thread_state* last_state_ = nullptr;
  std::optional<annotation_stream> notes_;
  std::vector<const annotation*> args_;  // release's scratch
  const std::string unnamed_ = "(unnamed)";
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
