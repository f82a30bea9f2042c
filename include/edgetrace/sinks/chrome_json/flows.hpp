// SPDX-License-Identifier: MIT
// EDGETRACE_FLOW steps, span arguments and memory pools in the Chrome JSON: which span each belongs to, and the flow fields both Perfetto and DevTools draw.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/device.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/sorted_records.hpp>

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
    flows_.tag(held_.size());
    spans_.collect(e.thread, e.site, e.begin_ns, e.end_ns, kept ? &args_ : nullptr, kept ? &flows_ : nullptr);
    if (!kept) args_.clear();
    return args_;
  }

  /// True when the span last given to on_span() is a flow step: it is then
  /// kept (with `pid` and its arguments) and finish() writes it, because its
  /// flow fields depend on steps not read yet. Memory: none, the spans wait
  /// in a temporary file (spilled_sequence).
  bool hold(const event& e, std::uint64_t pid) {
    if (flows_.steps() == steps_before_) return false;
    // A span with steps of several flows (or one flow twice): finish()
    // checks that it takes one bind_id only. Rare, so kept in memory.
    if (flows_.steps() - steps_before_ > 1) shared_.insert(held_.size());
    held_args_.clear();
    for (const annotation* a : args_) held_args_.push_back(*a);  // args_ point into the claim: kept by value
    held_.add(held_span{e, pid}, held_args_.data(), static_cast<std::uint32_t>(held_args_.size()));
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
  /// False when a temporary file could not be read back.
  template <class Input, class DocFor, class KeepAt>
  bool finish(const Input& in, dump_reader& r, DocFor&& doc_for, KeepAt&& keep_at, std::uint64_t& next_id) {
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
    const std::uint64_t first_id = next_id;
    // Which held span takes which bind_id, in the order of the flows; then
    // by held span, to be met as the held spans are read back.
    sorted_records<binding, by_span> bindings;
    std::unordered_set<std::uint64_t> bound_shared;
    bool ok = flows_.for_each_flow([&](const std::vector<flow_collector::step>& steps) {
      for_each_segment(steps, in, doc_for, [&](std::size_t first, std::size_t last) {
        const std::uint64_t id = ++next_id;
        // One bind_id per span: a span already bound to another flow keeps
        // that one; this flow is then drawn from its s/t/f events alone.
        for (std::size_t i = first; i <= last; ++i)
          if (bound_shared.count(steps[i].span_tag) != 0) return;
        for (std::size_t i = first; i <= last; ++i) {
          if (shared_.count(steps[i].span_tag) != 0) bound_shared.insert(steps[i].span_tag);
          bindings.add(binding{steps[i].span_tag, bindings.size(), flow_binding{id, i > first, i < last}});
        }
      });
    });
    ok = ok && held_.rewind();
    held_span s;
    std::vector<annotation> held_args;
    std::vector<const annotation*> args;
    std::uint64_t held = 0;
    // Writes the held spans up to `tag` (all when none), span `tag` with
    // `flow`'s fields.
    const auto write_held_to = [&](std::uint64_t tag, const flow_binding* flow) {
      for (; held <= tag && held_.next(s, held_args); ++held) {
        args.clear();
        for (const annotation& a : held_args) args.push_back(&a);
        doc_for(s.span.begin_ns + in.shift_ns).write(s.span, s.pid, in.shift_ns, r, args, held == tag ? flow : nullptr);
      }
    };
    bool pending = false;
    binding last{};
    ok = ok && bindings.for_each([&](const binding& b) {
      if (pending && b.span_tag != last.span_tag) write_held_to(last.span_tag, &last.flow);
      pending = true;
      last = b;  // a span bound twice by one flow: its last step's fields, as the steps come
    });
    if (pending) write_held_to(last.span_tag, &last.flow);
    write_held_to(std::numeric_limits<std::uint64_t>::max(), nullptr);
    ok = ok && !held_.failed();
    std::uint64_t id = first_id;
    ok = ok && flows_.for_each_flow([&](const std::vector<flow_collector::step>& steps) {
      for_each_segment(steps, in, doc_for, [&](std::size_t first, std::size_t last_step) {
        ++id;
        const std::string& name = flows_.names()[steps[first].name];
        const std::string* cat = &steps[first].site->category;
        for (std::size_t i = first; i <= last_step; ++i)
          if (steps[i].site->category != *cat) cat = &flow_category_;
        for (std::size_t i = first; i <= last_step; ++i) {
          const char phase = i == first ? 's' : i == last_step ? 'f' : 't';
          const std::int64_t ns = steps[i].begin_ns + in.shift_ns;
          const std::uint64_t pid = in.pid(*steps[i].writer), tid = steps[i].thread->os_tid;
          auto& doc = doc_for(ns);
          // The event first, then the marker: a viewer that binds by time
          // (Perfetto) finds the step's own span open, not the marker.
          doc.write_flow_step(name, *cat, id, phase, pid, tid, ns);
          if (cat == &flow_category_)
            doc.write_flow_marker(name, steps[i].id, pid, tid, ns, steps[i].end_ns - steps[i].begin_ns);
        }
      });
    });
    return ok;
  }

  static constexpr std::uint64_t flow_id_base = std::uint64_t{1} << 40;

 private:
  struct held_span {
    event span;
    std::uint64_t pid;
  };
  struct binding {
    std::uint64_t span_tag;  ///< the held span's number
    std::uint64_t order;     ///< when it was added
    flow_binding flow;
  };
  struct by_span {
    bool operator()(const binding& a, const binding& b) const noexcept {
      return a.span_tag != b.span_tag ? a.span_tag < b.span_tag : a.order < b.order;
    }
  };

  /// Calls `fn(first, last)` for each run of a flow's steps [first, last]
  /// of two or more steps in one document: a flow whose steps fall in
  /// several documents (--split-mb) becomes one flow per document, of its
  /// steps there, so each file stays whole.
  template <class Input, class DocFor, class Fn>
  static void for_each_segment(const std::vector<flow_collector::step>& steps, const Input& in, DocFor& doc_for, Fn&& fn) {
    const auto doc_of = [&](std::size_t i) { return &doc_for(steps[i].begin_ns + in.shift_ns); };
    std::size_t first = 0;
    for (std::size_t i = 1; i <= steps.size(); ++i)
      if (i == steps.size() || doc_of(i) != doc_of(first)) {
        if (i - first >= 2) fn(first, i - 1);  // one step: no arrow
        first = i;
      }
  }

  span_annotations spans_;
  memory_timelines memory_;
  flow_prefilter prefilter_;
  flow_collector flows_;
  std::size_t steps_before_ = 0;
  spilled_sequence<held_span, annotation> held_;
  std::vector<annotation> held_args_;
  std::unordered_set<std::uint64_t> shared_;  ///< held spans with more than one step
  std::vector<const annotation*> args_;
  const std::vector<const annotation*> none_;
  const std::string flow_category_ = "flow";
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
