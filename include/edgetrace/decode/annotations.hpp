// SPDX-License-Identifier: MIT
// Annotations (format 1.3) put to use: arguments and flow steps attached to their spans, live bytes and peaks of memory pools.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <edgetrace/decode/detail/by_thread.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/sorted_records.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// One step of a flow: a span that recorded EDGETRACE_FLOW(name, id).
using flow_step = span_place;

/// Which flows may have more than one step, from one pass over a dump's
/// annotations before its spans are read: two Bloom filters of the flow
/// keys (writer, name, id), those seen once and those seen again. A flow
/// it calls single is single (a key seen twice is always in the second
/// filter); one it calls possibly longer may be single after all (about
/// 1 % of single flows: they are then handled as before). A dump of a
/// million single-step flows (a request id per frame) no longer keeps a
/// million flows while its spans are read. Memory: 2 x 16 bits a flow step.
class flow_prefilter {
 public:
  /// Reads the annotations of `r` (metadata read). False when a chunk no
  /// longer reads; the filter then calls every flow possibly longer.
  bool read(const dump_reader& r) {
    std::uint64_t steps = 0;
    for (const writer_info* w : r.writers_in_order()) steps += w->annotations_read.flows;
    if (steps == 0) return true;
    std::size_t bits = std::size_t{1} << 16;
    while (bits < 16 * steps && bits < (std::size_t{1} << 34)) bits <<= 1;
    once_.assign(bits / 64, 0);
    again_.assign(bits / 64, 0);
    const bool ok = r.for_each_annotation([&](const annotation& a) {
      if (a.type != format::annotation_record::flow || a.thread == nullptr) return;
      const std::uint64_t h = hash(a.thread->writer, a.name(), a.value);
      set(all_set(once_, h) ? again_ : once_, h);
    });
    if (!ok) {
      once_.clear();
      again_.clear();
    }
    return ok;
  }

  /// False only for a flow with one step in the dump.
  bool maybe_longer(const writer_info* writer, const std::string& name, std::uint64_t id) const {
    return again_.empty() || all_set(again_, hash(writer, name, id));
  }

 private:
  static std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  /// From the writer's place in the file, not its address: which single
  /// flows the filter mistakes for longer ones (and so which spans the
  /// JSON holds back) is the same in every run of the converter.
  static std::uint64_t hash(const writer_info* w, const std::string& name, std::uint64_t id) {
    return mix(mix(w->order + 1) ^ std::hash<std::string>{}(name) ^ mix(id + 0x9e3779b97f4a7c15ULL));
  }
  /// Three bit positions from one hash (double hashing).
  template <class Fn>
  void for_bits(std::uint64_t h, std::size_t bits, Fn&& fn) const {
    const std::uint64_t step = (h >> 32) | 1;
    for (std::uint64_t i = 0; i < 3; ++i) fn(static_cast<std::size_t>((h + i * step) & (bits - 1)));
  }
  bool all_set(const std::vector<std::uint64_t>& v, std::uint64_t h) const {
    bool all = true;
    for_bits(h, v.size() * 64, [&](std::size_t b) { all = all && ((v[b / 64] >> (b % 64)) & 1) != 0; });
    return all;
  }
  void set(std::vector<std::uint64_t>& v, std::uint64_t h) {
    for_bits(h, v.size() * 64, [&](std::size_t b) { v[b / 64] |= std::uint64_t{1} << (b % 64); });
  }

  std::vector<std::uint64_t> once_, again_;
};

/// Flow steps gathered while spans are claimed, keyed by (writer, flow
/// name, id): ids are the app's, scoped to its process. The steps go to a
/// sorted_records (a temporary file past 4 MiB), so memory stays flat
/// however many flows a run has; for_each_flow() hands the flows back one
/// at a time.
class flow_collector {
 public:
  /// One kept step: the span, its flow, and a number the caller gave the
  /// span (tag()).
  struct step : span_place {
    std::uint64_t id = 0;
    std::uint64_t order = 0;  ///< when it was added: the last tie-break
    std::uint64_t span_tag = 0;
    std::uint32_t name = 0;   ///< index into names()
  };

  flow_collector() : names_(new std::vector<std::string>), steps_(step_order{names_.get()}) {}

  /// Flows the prefilter calls single are counted by name, not kept.
  void use(const flow_prefilter* prefilter) noexcept { prefilter_ = prefilter; }
  /// The number given to the steps of the spans claimed from now on.
  void tag(std::uint64_t span_tag) noexcept { span_tag_ = span_tag; }

  void add(const annotation& a, const thread_info* thread, const site_info* site, std::int64_t begin_ns,
           std::int64_t end_ns) {
    std::string name = a.name();
    if (prefilter_ != nullptr && !prefilter_->maybe_longer(thread->writer, name, a.value)) {
      ++singles_[name];
      return;
    }
    step s;
    static_cast<span_place&>(s) = span_place{thread->writer, thread, site, begin_ns, end_ns};
    s.id = a.value;
    s.order = steps_.size();
    s.span_tag = span_tag_;
    s.name = name_index(std::move(name));
    steps_.add(s);
  }
  bool empty() const noexcept { return steps_.size() == 0 && singles_.empty(); }
  /// Steps kept so far, over all flows (single steps the prefilter told
  /// apart are counted in singles() instead).
  std::uint64_t steps() const noexcept { return steps_.size(); }
  /// Flows of one step that were not kept, by flow name.
  const std::map<std::string, std::uint64_t>& singles() const noexcept { return singles_; }
  /// The names of the flows kept.
  const std::vector<std::string>& names() const noexcept { return *names_; }

  /// Calls `fn(const std::vector<step>& steps)` for every flow kept, in
  /// the order (writer, name, id), its steps in time order (by begin, then
  /// end). May be called again. False when the temporary file could not
  /// be read back.
  template <class Fn>
  bool for_each_flow(Fn&& fn) {
    std::vector<step> flow;
    const bool ok = steps_.for_each([&](const step& s) {
      if (!flow.empty() && !same_flow(flow.front(), s)) {
        fn(static_cast<const std::vector<step>&>(flow));
        flow.clear();
      }
      flow.push_back(s);
    });
    if (!flow.empty()) fn(static_cast<const std::vector<step>&>(flow));
    return ok;
  }

 private:
  struct step_order {
    const std::vector<std::string>* names;
    bool operator()(const step& a, const step& b) const {
      if (a.writer != b.writer) return a.writer < b.writer;
      if (a.name != b.name) return (*names)[a.name] < (*names)[b.name];
      if (a.id != b.id) return a.id < b.id;
      if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
      if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
      return a.order < b.order;
    }
  };
  static bool same_flow(const step& a, const step& b) noexcept {
    return a.writer == b.writer && a.name == b.name && a.id == b.id;
  }
  std::uint32_t name_index(std::string name) {
    const auto it = name_indexes_.find(name);
    if (it != name_indexes_.end()) return it->second;
    const auto index = static_cast<std::uint32_t>(names_->size());
    names_->push_back(name);
    name_indexes_.emplace(std::move(name), index);
    return index;
  }

  std::unique_ptr<std::vector<std::string>> names_;  ///< on the heap: step_order points at it
  std::unordered_map<std::string, std::uint32_t> name_indexes_;
  sorted_records<step, step_order> steps_;
  std::uint64_t span_tag_ = 0;
  const flow_prefilter* prefilter_ = nullptr;
  std::map<std::string, std::uint64_t> singles_;
};

/// The last of `args` (time order) whose key is `key`; null when none.
inline const annotation* last_with_key(const std::vector<const annotation*>& args, const std::string& key) {
  const annotation* last = nullptr;
  for (const annotation* a : args)
    if (a->has_name(key)) last = a;
  return last;
}

/// The order in which a reader of arguments will meet spans: as
/// dump_reader::read_events hands them over (per thread by end time, a
/// span after the spans nested in it), or as walk_spans does (per thread
/// latest first, a span after the spans nested in it;
/// read_events_backward's order for the annotations too).
enum class span_order : std::uint8_t { read_events, walk_spans };

/// Arguments and flow steps of each thread, read from the annotations
/// chunks as they are asked for: forward in time (span_order::read_events)
/// or backward (walk_spans). take() hands over the next one of a thread
/// while it lies at or before a limit (forward) or at or after it
/// (backward); the chunks are decoded in file order (or its reverse), and
/// another thread's annotations met on the way wait in that thread's
/// queue. A chunk is decoded only while some chunk from there on holds an
/// annotation on the asked side of the limit (each chunk's time range from
/// pass 1). Memory: the queued annotations, about one flush period of them
/// when the asker walks the dump in file order, and one chunk; never more
/// than max_queued_total over all threads (a dump of many threads that
/// record arguments outside every span, or on threads no one asks for).
class annotation_stream {
 public:
  annotation_stream(const dump_reader& r, span_order order)
      : reader_(r), backward_(order == span_order::walk_spans) {
    const auto& chunks = r.annotation_chunks();
    bound_.resize(chunks.size());
    // Forward: the earliest time in chunk i or after it; backward: the
    // latest in chunk i or before it.
    if (backward_) {
      for (std::size_t i = 0; i < chunks.size(); ++i)
        bound_[i] = i == 0 ? chunks[i].max_ns : std::max(bound_[i - 1], chunks[i].max_ns);
      next_ = chunks.size();
    } else {
      for (std::size_t i = chunks.size(); i-- > 0;)
        bound_[i] = i + 1 == chunks.size() ? chunks[i].min_ns : std::min(bound_[i + 1], chunks[i].min_ns);
    }
  }

  /// Moves `thread`'s next argument or flow step into `out` when it lies at
  /// or before `limit_ns` (forward) / at or after it (backward); false when
  /// it does not, or when the thread has no more.
  ///
  /// A thread's annotations come in time order, except arguments recorded
  /// after the fact for a span measured elsewhere (EDGETRACE_RECORD_ARG):
  /// those wait in a heap of their own, and the next one handed over is the
  /// nearer of the two, once no chunk still unread can hold a nearer one.
  bool take(const thread_info* thread, std::int64_t limit_ns, annotation& out) {
    thread_queue& q = queues_[thread];
    for (;;) {
      const annotation* next = q.next(backward_);
      const bool eligible = next != nullptr && !(backward_ ? next->ns < limit_ns : next->ns > limit_ns);
      if (decode_next(eligible ? next->ns : limit_ns)) continue;  // an unread chunk may hold a nearer one
      if (!eligible) return false;
      out = *next;
      q.pop(backward_);
      --queued_;
      return true;
    }
  }

  /// Arguments and flow steps taken from one chunk. The writer ends an
  /// annotations chunk at about 60 KiB (some 20,000 arguments); only a
  /// forged 4 MiB chunk of 3-byte arguments holds more (its rest is left
  /// out, and counted as unclaimed): 50 MB at most.
  static constexpr std::size_t max_per_chunk = std::size_t{1} << 19;
  /// Annotations one thread's queue holds (about 13 MB). In a writer's dump
  /// a queue holds about one flush period of the thread's annotations.
  static constexpr std::size_t max_queued = std::size_t{1} << 17;
  /// Annotations all queues hold together (about 27 MB): past it the
  /// longest queue loses its oldest half (counted as unclaimed).
  static constexpr std::size_t max_queued_total = std::size_t{1} << 18;

 private:
  /// Decodes the next chunk in the stream's direction if one from there on
  /// can hold an annotation on the asked side of `limit_ns`.
  bool decode_next(std::int64_t limit_ns) {
    const auto keep = [this](const annotation& a) {
      if (a.type != format::annotation_record::arg && a.type != format::annotation_record::arg_name &&
          a.type != format::annotation_record::flow)
        return;
      // One on a thread the dump does not name, or past max_per_chunk, is
      // left out (counted as unclaimed).
      if (a.thread != nullptr && chunk_.size() < max_per_chunk) chunk_.push_back(a);
    };
    chunk_.clear();
    if (backward_) {
      if (next_ == 0 || bound_[next_ - 1] < limit_ns) return false;
      reader_.decode_annotation_chunk(--next_, buffer_, keep);
      for (auto a = chunk_.rbegin(); a != chunk_.rend(); ++a) enqueue(*a);
    } else {
      if (next_ >= bound_.size() || bound_[next_] > limit_ns) return false;
      reader_.decode_annotation_chunk(next_++, buffer_, keep);
      for (const annotation& a : chunk_) enqueue(a);
    }
    return true;
  }

  /// Queues `a` for its thread. A queue longer than max_queued means the
  /// thread's annotations are out of time order (a damaged or forged dump:
  /// one far in the future holds back the rest): its oldest is dropped.
  void enqueue(const annotation& a) {
    if (queued_ >= max_queued_total) trim_longest();
    thread_queue& q = queues_[a.thread];
    ++queued_;
    if (q.any && (backward_ ? a.ns > q.last_ns : a.ns < q.last_ns)) {
      q.held.push_back(a);  // out of time order: recorded after the fact
      std::push_heap(q.held.begin(), q.held.end(), thread_queue::later{backward_});
      if (q.held.size() > max_queued) {
        q.pop_held(backward_);
        --queued_;
      }
      return;
    }
    q.any = true;
    q.last_ns = a.ns;
    q.in_order.push_back(a);
    if (q.in_order.size() > max_queued) {
      q.in_order.pop_front();
      --queued_;
    }
  }

  /// Drops the oldest half of the longest queue: O(threads), once per
  /// max_queued_total / 2 annotations at most, when some thread's
  /// annotations are never asked for.
  void trim_longest() {
    thread_queue* longest = queues_.largest();
    if (longest == nullptr) return;
    const std::size_t before = longest->size();
    std::size_t drop = (before + 1) / 2;
    const std::size_t from_order = std::min(drop, longest->in_order.size());
    longest->in_order.erase(longest->in_order.begin(), longest->in_order.begin() + static_cast<std::ptrdiff_t>(from_order));
    for (drop -= from_order; drop > 0; --drop) longest->pop_held(backward_);
    queued_ -= before - longest->size();
  }

  /// One thread's annotations read and not taken: those in time order (in
  /// the stream's direction), and a heap of those that came out of it.
  struct thread_queue {
    std::deque<annotation> in_order;
    std::vector<annotation> held;
    std::int64_t last_ns = 0;  ///< the last one queued in order
    bool any = false;
    /// Heap comparator: the annotation the stream hands over first on top.
    struct later {
      bool backward;
      bool operator()(const annotation& a, const annotation& b) const noexcept {
        return backward ? a.ns < b.ns : a.ns > b.ns;
      }
    };
    /// The nearer of the two fronts, or null.
    const annotation* next(bool backward) const {
      const annotation* a = in_order.empty() ? nullptr : &in_order.front();
      if (held.empty()) return a;
      const annotation* h = &held.front();
      if (a == nullptr) return h;
      return (backward ? h->ns > a->ns : h->ns < a->ns) ? h : a;
    }
    void pop(bool backward) {
      const annotation* n = next(backward);
      if (!held.empty() && n == &held.front()) pop_held(backward);
      else in_order.pop_front();
    }
    /// Drops the heap's first (the one that would be handed over first).
    void pop_held(bool backward) {
      std::pop_heap(held.begin(), held.end(), later{backward});
      held.pop_back();
    }
    std::size_t size() const noexcept { return in_order.size() + held.size(); }
  };

  const dump_reader& reader_;
  bool backward_;
  std::vector<std::int64_t> bound_;
  std::size_t next_ = 0;  // forward: the next chunk to decode; backward: one past it
  detail::by_thread<thread_queue> queues_;
  std::size_t queued_ = 0;  ///< over all queues
  std::vector<unsigned char> buffer_;
  std::vector<annotation> chunk_;
};

/// Hands each argument and flow step to the span it belongs to: the
/// innermost span open on its thread when it was recorded. Feed it every
/// span of the dump (filtered or not) in the order given at construction
/// (span_order: read_events' or walk_spans'; in both a span comes after the
/// spans nested in it). Each span claims the annotations inside [begin,
/// end] that no nested span claimed. The annotations are read as the spans
/// ask for them (annotation_stream): memory is what waits for a span still
/// to come, per thread the annotations of the spans still open, never one
/// entry per annotation of the dump.
class span_annotations {
 public:
  span_annotations(const dump_reader& r, span_order order)
      : stream_(r, order), backward_(order == span_order::walk_spans) {
    for (const auto& w : r.writers()) total_ += w.second.annotations_read.span_notes();
  }

  bool empty() const noexcept { return total_ == 0; }

  /// Claims span [begin_ns, end_ns] of `thread` (named by `site`): its
  /// arguments go to `args` (time order; the pointers are valid until the
  /// next claim), its flow steps to `flows`; a null destination claims and
  /// drops them.
  void collect(const thread_info* thread, const site_info* site, std::int64_t begin_ns, std::int64_t end_ns,
               std::vector<const annotation*>* args, flow_collector* flows, bool outermost = false) {
    if (args != nullptr) args->clear();
    claim(
        thread, begin_ns, end_ns,
        [&](const annotation& a) {
          if (a.type == format::annotation_record::flow) {
            if (flows != nullptr) flows->add(a, thread, site, begin_ns, end_ns);
          } else if (args != nullptr) {
            args->push_back(&a);
          }
        },
        outermost);
  }

  /// Calls `fn(const annotation&)` for every annotation of `thread` within
  /// [begin_ns, end_ns] not claimed yet, in time order, and claims it. The
  /// references are valid until the next claim. `outermost` (walk_spans'
  /// depth 0): no span encloses this one, so what was read after it and not
  /// claimed never will be (walk_spans order only).
  template <class Fn>
  void claim(const thread_info* thread, std::int64_t begin_ns, std::int64_t end_ns, Fn&& fn, bool outermost = false) {
    claimed_.clear();
    if (total_ == 0 || thread == nullptr) return;
    std::int64_t& last_end = last_end_[thread].ns;
    last_end = std::max(last_end, end_ns);
    std::vector<annotation>& pending = pending_[thread];
    const std::size_t pending_before = pending.size();
    // Pending holds what was read and not claimed, in reading order: the
    // newest read (nearest to this span) last. Forward the span takes the
    // tail at or after its begin; backward the tail at or before its end.
    annotation a;
    while (stream_.take(thread, backward_ ? begin_ns : end_ns, a)) pending.push_back(a);
    std::size_t keep = pending.size();
    while (keep > 0 && (backward_ ? pending[keep - 1].ns <= end_ns : pending[keep - 1].ns >= begin_ns)) --keep;
    claimed_.assign(pending.begin() + static_cast<std::ptrdiff_t>(keep), pending.end());
    pending.resize(keep);
    if (backward_) std::reverse(claimed_.begin(), claimed_.end());  // read latest first
    if (backward_ && outermost) {
      pending.clear();  // recorded outside every span: unclaimed
    } else if (pending.size() > max_pending) {
      // Annotations outside every span pile up here when no depth is known
      // (read_events' order): the oldest read are dropped, counted as
      // unclaimed. Only a span holding more than max_pending / 2 arguments
      // of its own (not in its children) would lose its earliest ones.
      pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(pending.size() / 2));
    }
    pending_total_ = pending_total_ + pending.size() - pending_before;
    if (pending_total_ > max_pending_total) trim_longest_pending();
    claimed_count_ += claimed_.size();
    for (const annotation& c : claimed_) fn(c);
  }

  /// The oldest half of the longest pending list, dropped (unclaimed):
  /// O(threads), once per max_pending_total / 2 annotations at most.
  void trim_longest_pending() {
    std::vector<annotation>* longest = pending_.largest();
    if (longest == nullptr) return;
    const std::size_t drop = (longest->size() + 1) / 2;
    longest->erase(longest->begin(), longest->begin() + static_cast<std::ptrdiff_t>(drop));
    longest->shrink_to_fit();
    pending_total_ -= drop;
  }

  /// Annotations no span claimed (recorded outside every span, or on a
  /// thread the dump does not name). Meaningful after every span was fed.
  std::uint64_t unclaimed() const noexcept { return total_ - claimed_count_; }

  /// Of unclaimed(), those recorded after the last span fed on their
  /// thread ended (all of a thread no span was fed for): in a span still
  /// open when the recording, or a flight snapshot's window, ended (no end
  /// record: no span to attach to), or else outside every span. Reads
  /// `r`'s annotations chunks again (one pass); meaningful after every
  /// span was fed.
  std::uint64_t unclaimed_after_last_span(const dump_reader& r) {
    if (unclaimed() == 0) return 0;
    std::uint64_t after = 0;
    r.for_each_annotation([&](const annotation& a) {
      const bool span_note = a.type == format::annotation_record::arg || a.type == format::annotation_record::arg_name ||
                             a.type == format::annotation_record::flow;
      if (span_note && a.thread != nullptr && a.ns > last_end_[a.thread].ns) ++after;
    });
    return std::min(after, unclaimed());
  }

  /// Unclaimed annotations one thread may hold back for spans still to
  /// come (about 6 MB); past this the oldest half is dropped.
  static constexpr std::size_t max_pending = std::size_t{1} << 16;
  /// Unclaimed annotations all threads hold back together (about 27 MB):
  /// past it the thread holding most drops its oldest half.
  static constexpr std::size_t max_pending_total = std::size_t{1} << 18;

 private:
  annotation_stream stream_;
  bool backward_;
  detail::by_thread<std::vector<annotation>> pending_;
  std::size_t pending_total_ = 0;  ///< over all threads
  struct latest {
    std::int64_t ns = std::numeric_limits<std::int64_t>::min();
  };
  detail::by_thread<latest> last_end_;  ///< per thread: the latest end of a span fed
  std::vector<annotation> claimed_;
  std::uint64_t total_ = 0;
  std::uint64_t claimed_count_ = 0;
};

/// The arguments and flow steps no span claimed, in two parts that the
/// outputs say apart.
struct unattached_notes {
  std::uint64_t outside = 0;  ///< recorded outside every span
  /// Recorded after their thread's last span ended
  /// (span_annotations::unclaimed_after_last_span).
  std::uint64_t open = 0;
  bool snapshot = false;  ///< the dump is a flight recorder's window
  /// What `open` means, after "N argument(s) or flow step(s) ".
  std::string open_text() const {
    return snapshot ? "recorded in a span still open when the snapshot's window closed (its end is after the window)"
                    : "recorded after their thread's last span ended: in a span still open when the recording ended, "
                      "or outside every span";
  }
};

/// Splits `notes`' unclaimed annotations (after every span was fed).
inline unattached_notes unattached(const dump_reader& r, span_annotations& notes) {
  unattached_notes u;
  u.snapshot = r.snapshot() != nullptr;
  u.open = notes.unclaimed_after_last_span(r);
  u.outside = notes.unclaimed() - u.open;
  return u;
}

/// One memory pool of one writer (EDGETRACE_ALLOC's pool name).
struct memory_pool {
  std::string name;
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t bytes_allocated = 0;  ///< over the whole run
  std::uint64_t live = 0;             ///< at the end of the dump (still allocated)
  std::uint64_t peak = 0;             ///< highest live bytes
};

/// "2 double frees, 1 free of an unknown address, ..." for memory notes.
inline std::string memory_mismatch_text(const memory_mismatches& m) {
  std::string text;
  auto add = [&](std::uint64_t n, const char* one, const char* many) {
    if (n == 0) return;
    text += (text.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  add(m.double_frees, "double free", "double frees");
  add(m.unknown_frees, "free of an address never allocated in the dump",
      "frees of addresses never allocated in the dump");
  add(m.live_reallocs, "allocation at a still-live address (its free was not recorded)",
      "allocations at still-live addresses (their frees were not recorded)");
  add(m.null_allocs, "allocation at address 0", "allocations at address 0");
  return "EDGETRACE_ALLOC/FREE mismatches: " + text + "; counted, not attributed to any pool";
}

/// A step function over time with range-max queries: the value after each
/// change, and a segment tree over them. O(log n) per query.
class max_series {
 public:
  void add(std::int64_t ns, std::int64_t value) {
    ns_.push_back(ns);
    value_.push_back(value);
  }
  /// Call once all changes are added (in time order).
  void build() {
    size_ = 1;
    while (size_ < value_.size()) size_ *= 2;
    tree_.assign(2 * size_, std::numeric_limits<std::int64_t>::min());
    for (std::size_t i = 0; i < value_.size(); ++i) tree_[size_ + i] = value_[i];
    for (std::size_t i = size_ - 1; i >= 1; --i) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }
  /// The value just before `ns` (after every change before it; 0 first).
  std::int64_t before(std::int64_t ns) const {
    const std::size_t i = first_at_or_after(ns);
    return i == 0 ? 0 : value_[i - 1];
  }
  /// The highest value during [begin_ns, end_ns].
  std::int64_t max_during(std::int64_t begin_ns, std::int64_t end_ns) const {
    std::int64_t best = before(begin_ns);
    std::size_t lo = first_at_or_after(begin_ns) + size_;
    std::size_t hi = (end_ns == std::numeric_limits<std::int64_t>::max() ? value_.size() : first_at_or_after(end_ns + 1)) +
                     size_;  // exclusive
    for (; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) best = std::max(best, tree_[lo++]);
      if (hi & 1) best = std::max(best, tree_[--hi]);
    }
    return best;
  }

 private:
  std::size_t first_at_or_after(std::int64_t ns) const {
    return static_cast<std::size_t>(std::lower_bound(ns_.begin(), ns_.end(), ns) - ns_.begin());
  }
  std::vector<std::int64_t> ns_;
  std::vector<std::int64_t> value_;
  std::vector<std::int64_t> tree_;
  std::size_t size_ = 1;
};

/// Live bytes of one writer over time: per pool and in all (the sum), from
/// its allocations and frees in time order; and per thread, the net bytes
/// that thread allocated (allocations minus frees it made). Answers "the
/// peak while this span ran" and "the most this span's thread added while
/// it ran" in O(log n).
class memory_timeline {
 public:
  /// A change of live bytes, after an allocation or a free.
  struct point {
    std::int64_t ns;
    std::size_t pool;         ///< index into pools()
    std::uint64_t pool_live;  ///< the pool's live bytes after the change
    std::uint64_t total;      ///< all pools' live bytes after the change
  };

  explicit memory_timeline(const writer_info& w) {
    struct block {
      std::uint64_t bytes;
      std::size_t pool;
    };
    std::unordered_map<std::uint64_t, block> live;
    std::set<std::uint64_t> ever;  // addresses allocated at some point
    std::map<std::string, std::size_t> pool_index;
    std::unordered_map<const thread_info*, std::int64_t> net;  // per thread: allocated - freed so far
    std::uint64_t total = 0;
    auto pool_of = [&](const annotation& a) {
      const std::string name = a.name();
      const auto found = pool_index.find(name);
      if (found != pool_index.end()) return found->second;
      pools_.push_back(memory_pool{});
      pools_.back().name = name;
      pool_index.emplace(name, pools_.size() - 1);
      return pools_.size() - 1;
    };
    auto change = [&](const annotation& a, std::size_t pool, std::int64_t delta) {
      memory_pool& p = pools_[pool];
      p.live = static_cast<std::uint64_t>(static_cast<std::int64_t>(p.live) + delta);
      total = static_cast<std::uint64_t>(static_cast<std::int64_t>(total) + delta);
      p.peak = std::max(p.peak, p.live);
      points_.push_back(point{a.ns, pool, p.live, total});
      totals_.add(a.ns, static_cast<std::int64_t>(total));
      std::int64_t& mine = net[a.thread];
      mine += delta;
      threads_[a.thread].add(a.ns, mine);
    };
    for (const annotation& a : w.memory_records) {
      if (a.type == format::annotation_record::alloc) {
        if (a.value == 0) {
          ++mismatches_.null_allocs;
          continue;
        }
        const std::size_t index = pool_of(a);
        const auto old = live.find(a.value);
        if (old != live.end()) {  // the previous block's free was not recorded: it is gone now
          ++mismatches_.live_reallocs;
          change(a, old->second.pool, -static_cast<std::int64_t>(old->second.bytes));
          live.erase(old);
        }
        ++pools_[index].allocs;
        pools_[index].bytes_allocated += a.bytes;
        live.emplace(a.value, block{a.bytes, index});
        ever.insert(a.value);
        change(a, index, static_cast<std::int64_t>(a.bytes));
      } else if (a.type == format::annotation_record::free) {
        if (a.value == 0) continue;  // free(NULL): nothing
        const auto found = live.find(a.value);
        if (found == live.end()) {
          if (ever.count(a.value) != 0) ++mismatches_.double_frees;
          else ++mismatches_.unknown_frees;
          continue;
        }
        ++pools_[found->second.pool].frees;
        change(a, found->second.pool, -static_cast<std::int64_t>(found->second.bytes));
        live.erase(found);
      }
    }
    for (const point& p : points_) peak_ = std::max(peak_, p.total);
    totals_.build();
    for (auto& t : threads_) t.second.build();
  }

  bool empty() const noexcept { return points_.empty(); }
  const std::vector<memory_pool>& pools() const noexcept { return pools_; }
  const std::vector<point>& points() const noexcept { return points_; }
  const memory_mismatches& mismatches() const noexcept { return mismatches_; }
  std::uint64_t peak() const noexcept { return peak_; }

  /// All pools' live bytes just before `ns`.
  std::uint64_t live_before(std::int64_t ns) const { return static_cast<std::uint64_t>(totals_.before(ns)); }

  /// The highest live bytes (all pools) during [begin_ns, end_ns]: what was
  /// live when it began, or more if something was allocated meanwhile.
  std::uint64_t peak_during(std::int64_t begin_ns, std::int64_t end_ns) const {
    return static_cast<std::uint64_t>(totals_.max_during(begin_ns, end_ns));
  }

  /// The most `thread` had allocated (net of its own frees) at any moment
  /// of [begin_ns, end_ns] beyond what it had when the span began: the
  /// memory a span needs, not counting other threads' allocations.
  std::uint64_t growth_during(const thread_info* thread, std::int64_t begin_ns, std::int64_t end_ns) const {
    const auto found = threads_.find(thread);
    if (found == threads_.end()) return 0;
    const std::int64_t grown = found->second.max_during(begin_ns, end_ns) - found->second.before(begin_ns);
    return grown > 0 ? static_cast<std::uint64_t>(grown) : 0;
  }

 private:
  std::vector<memory_pool> pools_;
  std::vector<point> points_;
  memory_mismatches mismatches_;
  std::uint64_t peak_ = 0;
  max_series totals_;
  std::unordered_map<const thread_info*, max_series> threads_;
};

/// The memory timelines of a dump's writers (only writers with allocations).
class memory_timelines {
 public:
  explicit memory_timelines(const dump_reader& r) {
    for (const auto& w : r.writers())
      if (w.second.has_memory) timelines_.emplace(&w.second, memory_timeline(w.second));
  }
  bool empty() const noexcept { return timelines_.empty(); }
  /// The writer's timeline, or null when it recorded no allocation.
  const memory_timeline* find(const writer_info* w) const {
    const auto found = timelines_.find(w);
    return found != timelines_.end() ? &found->second : nullptr;
  }
  const std::map<const writer_info*, memory_timeline>& all() const noexcept { return timelines_; }

 private:
  std::map<const writer_info*, memory_timeline> timelines_;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
