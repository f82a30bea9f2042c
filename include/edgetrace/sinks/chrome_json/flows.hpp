// SPDX-License-Identifier: MIT
// EDGETRACE_FLOW steps, span arguments and memory pools in the Chrome JSON: which span each belongs to, and the flow fields both Perfetto and DevTools draw.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/device.hpp>
#include <edgetrace/decode/dump_reader.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Flow fields of a span that is a step of a flow (flow v2): `bind_id`
/// links the steps; the first step has only flow_out, the last only flow_in.
struct flow_binding {
  std::uint64_t id = 0;  ///< 0: the span is not bound
  bool in = false;
  bool out = false;
};

/// Arguments, flow steps and memory tracks of one input (format 1.3):
/// feed every span to on_span() (kept or not, so a filtered child never
/// hands its arguments to its parent), let hold() keep the spans that are
/// flow steps, then call finish(), which writes them with their flow fields.
class json_annotations {
 public:
  /// Reads the dump's flow steps once first (flow_prefilter): a span that
  /// is a flow's only step is written as it comes, not held.
  explicit json_annotations(const dump_reader& r) : spans_(r, span_order::read_events), memory_(r) {
    prefilter_.read(r);  // a chunk that no longer reads: every flow is held, as before
    flows_.use(&prefilter_);
  }

  /// Claims span `e`'s arguments (returned) and, when `kept`, its flow steps.
  const std::vector<const annotation*>& on_span(const event& e, bool kept) {
    steps_before_ = flows_.steps();
    spans_.collect(e.thread, e.site, e.begin_ns, e.end_ns, kept ? &args_ : nullptr, kept ? &flows_ : nullptr);
    if (!kept) args_.clear();
    return args_;
  }

  /// True when the span last given to on_span() is a flow step: it is then
  /// kept (with `pid` and its arguments) and finish() writes it, because its
  /// flow fields depend on steps not read yet. Memory: one entry per step.
  bool hold(const event& e, std::uint64_t pid) {
    if (flows_.steps() == steps_before_) return false;
    held_index_[held_key{e.thread, e.site, e.begin_ns, e.end_ns}] = held_.size();
    held_span h{e, pid, {}};
    for (const annotation* a : args_) h.args.push_back(*a);  // args_ point into the claim: kept by value
    held_.push_back(std::move(h));
    return true;
  }

  const std::vector<const annotation*>& none() const noexcept { return none_; }

  /// Writes memory tracks, the held flow-step spans and flow events;
  /// `doc_for(ns)` picks the document of a (shifted) time; `next_id` numbers
  /// flows over all inputs of a document.
  ///
  /// Each flow of two or more steps gets one id, written twice: as
  /// `bind_id` with `flow_out` / `flow_in` on the steps' own X events (flow
  /// v2: Perfetto binds it to those slices, whatever their categories), and
  /// as s/t/f events (flow v1, the only kind DevTools reads; it binds one to
  /// the slice of the same ts, pid, tid and cat, and groups a flow's events
  /// by cat, name and id). When the steps share a category the s/t/f events
  /// take it and bind to the step spans; else they take "flow" and bind to a
  /// 1 ns "flow" slice written at each step's start. Ids start at
  /// 2^40: clear of the launch arrows' ids and of the ids Perfetto gives
  /// s/t/f flows (a 32-bit counter), which share one space with bind_id.
  /// `keep_at(ns)`: whether a memory sample at that time is in the output.
  template <class Input, class DocFor, class KeepAt>
  void finish(const Input& in, dump_reader& r, DocFor&& doc_for, KeepAt&& keep_at, std::uint64_t& next_id) {
    for (const auto& entry : memory_.all()) {
      const std::uint64_t pid = in.pid(*entry.first);
      const memory_timeline& m = entry.second;
      for (const memory_timeline::point& p : m.points()) {
        if (!keep_at(p.ns)) {
          ++doc_for(p.ns + in.shift_ns).result().filtered;
          continue;
        }
        doc_for(p.ns + in.shift_ns).write_memory_sample(m.pools()[p.pool].name, pid, p.ns + in.shift_ns, p.pool_live);
      }
    }
    for (const writer_info* w : r.writers_in_order())
      for (const device_series& series : device_series_of(*w))
        for (const device_series::point& p : series.points) {
          if (!keep_at(p.ns)) {
            ++doc_for(p.ns + in.shift_ns).result().filtered;
            continue;
          }
          doc_for(p.ns + in.shift_ns).write_device_sample(series.label, in.pid(*w), p.ns + in.shift_ns, p.value);
        }
    if (next_id < flow_id_base) next_id = flow_id_base;
    // A flow whose steps fall in several documents (--split-mb) becomes one
    // flow per document, of its steps there, so each file stays whole.
    struct segment {
      const flow_collector::key* flow;
      const std::vector<flow_step>* steps;
      std::size_t first, last;  ///< steps [first, last]
      std::uint64_t id;
    };
    std::vector<segment> segments;
    for (const auto& flow : flows_.sorted()) {
      const std::vector<flow_step>& steps = flow.second;
      const auto doc_of = [&](std::size_t i) { return &doc_for(steps[i].begin_ns + in.shift_ns); };
      std::size_t first = 0;
      for (std::size_t i = 1; i <= steps.size(); ++i)
        if (i == steps.size() || doc_of(i) != doc_of(first)) {
          if (i - first >= 2)  // one step: no arrow
            segments.push_back(segment{&flow.first, &steps, first, i - 1, ++next_id});
          first = i;
        }
    }
    std::vector<flow_binding> bound(held_.size() + 1);  // the last: for a step no span was held for
    for (const segment& g : segments) {
      // One bind_id per span: a span already bound to another flow keeps
      // that one; this flow is then drawn from its s/t/f events alone.
      bool free = true;
      for (std::size_t i = g.first; i <= g.last; ++i) {
        const std::size_t h = held_of((*g.steps)[i]);
        free = free && h < held_.size() && bound[h].id == 0;
      }
      if (!free) continue;
      for (std::size_t i = g.first; i <= g.last; ++i)
        bound[held_of((*g.steps)[i])] = flow_binding{g.id, i > g.first, i < g.last};
    }
    std::vector<const annotation*> args;
    for (std::size_t h = 0; h < held_.size(); ++h) {
      const held_span& s = held_[h];
      args.clear();
      for (const annotation& a : s.args) args.push_back(&a);
      doc_for(s.span.begin_ns + in.shift_ns).write(s.span, s.pid, in.shift_ns, r, args, &bound[h]);
    }
    for (const segment& g : segments) {
      const std::vector<flow_step>& steps = *g.steps;
      const std::string* cat = &steps[g.first].site->category;
      for (std::size_t i = g.first; i <= g.last; ++i)
        if (steps[i].site->category != *cat) cat = &flow_category_;
      for (std::size_t i = g.first; i <= g.last; ++i) {
        const char phase = i == g.first ? 's' : i == g.last ? 'f' : 't';
        const std::int64_t ns = steps[i].begin_ns + in.shift_ns;
        const std::uint64_t pid = in.pid(*steps[i].writer), tid = steps[i].thread->os_tid;
        auto& doc = doc_for(ns);
        // The event first, then the marker: a viewer that binds by time
        // (Perfetto) finds the step's own span open, not the marker.
        doc.write_flow_step(g.flow->name, *cat, g.id, phase, pid, tid, ns);
        if (cat == &flow_category_)
          doc.write_flow_marker(g.flow->name, g.flow->id, pid, tid, ns, steps[i].end_ns - steps[i].begin_ns);
      }
    }
  }

  static constexpr std::uint64_t flow_id_base = std::uint64_t{1} << 40;

 private:
  struct held_key {
    const thread_info* thread;
    const site_info* site;
    std::int64_t begin_ns, end_ns;
    bool operator<(const held_key& o) const {
      if (thread != o.thread) return thread < o.thread;
      if (site != o.site) return site < o.site;
      if (begin_ns != o.begin_ns) return begin_ns < o.begin_ns;
      return end_ns < o.end_ns;
    }
  };
  struct held_span {
    event span;
    std::uint64_t pid;
    std::vector<annotation> args;
  };
  /// The held span of a step; held_.size() when none (cannot happen: every
  /// kept span that claims a step is held).
  std::size_t held_of(const flow_step& step) const {
    const auto it = held_index_.find(held_key{step.thread, step.site, step.begin_ns, step.end_ns});
    return it == held_index_.end() ? held_.size() : it->second;
  }

  span_annotations spans_;
  memory_timelines memory_;
  flow_prefilter prefilter_;
  flow_collector flows_;
  std::size_t steps_before_ = 0;
  std::vector<held_span> held_;
  std::map<held_key, std::size_t> held_index_;
  std::vector<const annotation*> args_;
  const std::vector<const annotation*> none_;
  const std::string flow_category_ = "flow";
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
