// SPDX-License-Identifier: MIT
// The Perfetto packet stream (framing, interning) and the host tracks that turn spans into slices (internal to perfetto.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/perfetto/proto.hpp>
#include <edgetrace/sinks/perfetto/protobuf.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// Flow id of EDGETRACE_FLOW(name, id) in writer `writer`: a 64-bit FNV-1a
/// hash (top bit clear), so no table of flows is kept.
inline std::uint64_t perfetto_flow_id(std::uint32_t writer, const std::string& name, std::uint64_t id) {
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 1099511628211ull;
  };
  mix(writer, 4);
  for (char c : name) mix(static_cast<unsigned char>(c), 1);
  mix(0xFF, 1);
  mix(id, 8);
  return h >> 1;
}

/// Flow id from a host launch span to its GPU work (top bit set): both ends
/// know the writer, the launching thread and the span's begin tick.
inline std::uint64_t perfetto_launch_id(std::uint32_t writer, std::uint64_t os_tid, std::uint64_t begin_tick) {
  std::uint64_t h = perfetto_flow_id(writer, "launch", os_tid);
  h = (h ^ begin_tick) * 0x9E3779B97F4A7C15ull;
  return (h ^ (h >> 29)) | (std::uint64_t{1} << 63);
}

/// The packet stream of one trace: framing of each TracePacket, and the one
/// packet sequence with its interning tables. Each packet is built in a
/// reused buffer, then copied once to the output buffer.
class perfetto_stream {
 public:
  explicit perfetto_stream(std::FILE* out) : o_(out) {}

  /// A track descriptor packet: a process, a thread, a counter or a named
  /// track. `pid`/`tid` < 0: not that kind.
  void descriptor(std::uint64_t uuid, std::uint64_t parent, std::int64_t pid, std::int64_t tid,
                  const std::string& name, bool counter) {
    namespace p = perfetto_proto;
    start_packet();
    pb_.begin_message(p::packet_track_descriptor);
    pb_.add_varint(p::track_uuid, uuid);
    if (parent != 0) pb_.add_varint(p::track_parent_uuid, parent);
    if (pid >= 0 && tid < 0) {
      pb_.begin_message(p::track_process);
      pb_.add_int(p::process_pid, pid);
      if (!name.empty()) pb_.add_string(p::process_name, name);
      pb_.end_message();
    } else if (pid >= 0) {
      pb_.begin_message(p::track_thread);
      pb_.add_int(p::thread_pid, pid);
      pb_.add_int(p::thread_tid, tid);
      if (!name.empty()) pb_.add_string(p::thread_name, name);
      pb_.end_message();
    } else {
      pb_.add_string(p::track_name, name);
      if (counter) {
        pb_.begin_message(p::track_counter);
        pb_.end_message();
      }
    }
    pb_.end_message();
    end_packet();
  }

  /// One TrackEvent. `name`/`category` are interned (null: none, for slice
  /// ends). Flow ids and arguments go on slice begins.
  void event(std::int64_t ns, std::uint64_t track, std::uint64_t type, const std::string* name,
             const std::string* category, const std::vector<std::uint64_t>& flows = {},
             const std::vector<std::uint64_t>& terminating = {}, const std::vector<const annotation*>& args = {}) {
    begin_event(ns, track, type, name, category);
    for (std::uint64_t id : flows) pb_.add_fixed64(perfetto_proto::event_flow_ids, id);
    for (std::uint64_t id : terminating) pb_.add_fixed64(perfetto_proto::event_terminating_flow_ids, id);
    add_args(args);
    end_event();
  }
  /// One counter sample: a double (EDGETRACE_COUNTER), or an integer (live
  /// bytes: a varint is 3 to 5 bytes where a double takes 9).
  void counter(std::int64_t ns, std::uint64_t track, double value) {
    begin_event(ns, track, perfetto_proto::type_counter, nullptr, nullptr);
    pb_.add_double(perfetto_proto::event_double_counter_value, value);
    end_event();
  }
  void counter(std::int64_t ns, std::uint64_t track, std::int64_t value) {
    begin_event(ns, track, perfetto_proto::type_counter, nullptr, nullptr);
    pb_.add_int(perfetto_proto::event_counter_value, value);
    end_event();
  }

  bool flush() { return o_.flush(); }
  std::uint64_t packets() const noexcept { return packets_; }
  std::uint64_t args_written() const noexcept { return args_written_; }

 private:
  /// Opens a TrackEvent packet (interning what it names first); the
  /// caller adds the event's own fields, then calls end_event().
  void begin_event(std::int64_t ns, std::uint64_t track, std::uint64_t type, const std::string* name,
                   const std::string* category) {
    namespace p = perfetto_proto;
    const std::uint64_t name_iid = name ? intern(names_, *name, new_names_) : 0;
    const std::uint64_t category_iid = category ? intern(categories_, *category, new_categories_) : 0;
    start_packet();
    pb_.add_varint(p::packet_timestamp, ns > 0 ? static_cast<std::uint64_t>(ns) : 0);
    if (!new_names_.empty() || !new_categories_.empty()) {
      pb_.begin_message(p::packet_interned_data);
      add_interned(p::interned_event_categories, new_categories_);
      add_interned(p::interned_event_names, new_names_);
      pb_.end_message();
    }
    pb_.begin_message(p::packet_track_event);
    pb_.add_varint(p::event_type, type);
    pb_.add_varint(p::event_track_uuid, track);
    if (name_iid != 0) pb_.add_varint(p::event_name_iid, name_iid);
    if (category_iid != 0) pb_.add_varint(p::event_category_iids, category_iid);
  }
  void end_event() {
    pb_.end_message();
    end_packet();
  }

  using table = std::unordered_map<std::string, std::uint64_t>;
  using fresh = std::vector<std::pair<std::uint64_t, const std::string*>>;

  /// Every packet is on sequence 1; the first clears its incremental state
  /// (the interning tables), the others depend on it.
  void start_packet() {
    namespace p = perfetto_proto;
    pb_.clear();
    pb_.add_varint(p::packet_trusted_packet_sequence_id, 1);
    pb_.add_varint(p::packet_sequence_flags,
                   packets_ == 0 ? p::seq_incremental_state_cleared : p::seq_needs_incremental_state);
  }
  /// Frames the packet as one `repeated TracePacket packet = 1` of Trace.
  void end_packet() {
    frame_.clear();
    frame_.push_back(static_cast<char>((perfetto_proto::trace_packet << 3) | protobuf_writer::wire_length));
    protobuf_writer::append_varint(frame_, pb_.bytes().size());
    o_.write(frame_);
    o_.write(pb_.bytes());
    ++packets_;
  }
  /// The iid of `s` (>= 1); a new string is queued for the packet's
  /// interned_data.
  static std::uint64_t intern(table& t, const std::string& s, fresh& out) {
    const auto found = t.find(s);
    if (found != t.end()) return found->second;
    const auto added = t.emplace(s, t.size() + 1).first;
    out.emplace_back(added->second, &added->first);  // node-based map: the key's address is stable
    return added->second;
  }
  void add_interned(std::uint32_t field, fresh& entries) {
    for (const auto& e : entries) {
      pb_.begin_message(field);
      pb_.add_varint(perfetto_proto::interned_iid, e.first);
      pb_.add_string(perfetto_proto::interned_name, *e.second);
      pb_.end_message();
    }
    entries.clear();
  }
  /// One debug annotation per key: the last value recorded for it (walking
  /// back from the last argument, a key already written is skipped).
  void add_args(const std::vector<const annotation*>& args) {
    namespace p = perfetto_proto;
    keys_.clear();
    for (auto a = args.rbegin(); a != args.rend(); ++a) {
      std::string key = (*a)->name();
      if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) continue;
      pb_.begin_message(p::event_debug_annotations);
      pb_.add_string(p::annotation_name, key);
      if ((*a)->type == format::annotation_record::arg_name) pb_.add_string(p::annotation_string_value, (*a)->value_text());
      else if ((*a)->is_bool()) pb_.add_bool(p::annotation_bool_value, (*a)->value != 0);
      else if ((*a)->is_real()) pb_.add_double(p::annotation_double_value, (*a)->real_value());
      else pb_.add_int(p::annotation_int_value, (*a)->int_value());
      pb_.end_message();
      keys_.push_back(std::move(key));
      ++args_written_;
    }
  }

  buffered_output o_;
  protobuf_writer pb_;
  std::string frame_;
  std::vector<std::string> keys_;  // add_args' scratch: keys written for this event
  table names_, categories_;
  fresh new_names_, new_categories_;
  std::uint64_t packets_ = 0;
  std::uint64_t args_written_ = 0;
};

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
  perfetto_host_tracks(perfetto_stream& s, perfetto_result& result) : s_(s), result_(result) {}

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
    if (kept && e.end_ns != e.begin_ns) s_.event(e.end_ns, t.track, perfetto_proto::type_slice_end, nullptr, nullptr);
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
      s_.event(h.begin_ns, t.track, perfetto_proto::type_slice_begin, &display_name(*h.site),
               &h.site->category, h.flows, {}, args_);
      if (h.begin_ns == h.end_ns) s_.event(h.end_ns, t.track, perfetto_proto::type_slice_end, nullptr, nullptr);
    }
    t.held.resize(kept);
  }

  const std::string& display_name(const site_info& site) const { return site.name.empty() ? unnamed_ : site.name; }

  perfetto_stream& s_;
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
