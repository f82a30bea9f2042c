// SPDX-License-Identifier: MIT
// Spans measured elsewhere (an engine's profile), with typed arguments, written into one writer's stream of a dump as if that writer had recorded them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <edgetrace/decode/detail/annotation_chunks.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Spans to add to a dump: per OS thread, with category, name, CLOCK_MONOTONIC
/// times (the dump's own time axis) and arguments. Texts are interned, so a
/// profile of a million node runs naming a few hundred nodes holds each name
/// once: about 40 bytes a span and 16 an argument.
class imported_spans {
 public:
  /// An argument's value: an integer, a double, a bool, or a text (an
  /// interned id, written as a named argument).
  struct arg {
    std::uint32_t key = 0;  ///< text id
    format::arg_type type = format::arg_type::integer;
    bool text = false;      ///< value is a text id (named argument)
    std::uint64_t value = 0;
  };
  struct span {
    std::uint64_t os_tid = 0;
    std::uint32_t category = 0;  ///< text id
    std::uint32_t name = 0;      ///< text id
    std::int64_t begin_ns = 0;
    std::int64_t end_ns = 0;
    std::uint32_t first_arg = 0;
    std::uint32_t arg_count = 0;
  };

  /// The id of `s`, interned on first sight.
  std::uint32_t text(const std::string& s) {
    const auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(texts_.size());
    texts_.push_back(s);
    ids_.emplace(s, id);
    return id;
  }
  const std::string& text_of(std::uint32_t id) const { return texts_[id]; }

  /// Adds a span; arguments added next belong to it.
  void add_span(std::uint64_t os_tid, const std::string& category, const std::string& name, std::int64_t begin_ns,
                std::int64_t end_ns) {
    span s;
    s.os_tid = os_tid;
    s.category = text(category);
    s.name = text(name);
    s.begin_ns = begin_ns;
    s.end_ns = std::max(begin_ns, end_ns);
    s.first_arg = static_cast<std::uint32_t>(args_.size());
    spans_.push_back(s);
  }
  void add_int(const std::string& key, std::int64_t v) { push(key, format::arg_type::integer, false, static_cast<std::uint64_t>(v)); }
  void add_real(const std::string& key, double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    push(key, format::arg_type::real, false, bits);
  }
  void add_bool(const std::string& key, bool v) {
    push(key, v ? format::arg_type::bool_true : format::arg_type::bool_false, false, v ? 1 : 0);
  }
  void add_text(const std::string& key, const std::string& v) { push(key, format::arg_type::integer, true, text(v)); }

  /// Names the track of an OS thread the dump does not hold (a thread that
  /// recorded nothing of its own); the default is "<tid>".
  void name_thread(std::uint64_t os_tid, const std::string& name) { thread_names_[os_tid] = name; }

  const std::vector<span>& spans() const noexcept { return spans_; }
  const std::vector<arg>& args() const noexcept { return args_; }
  const std::map<std::uint64_t, std::string>& thread_names() const noexcept { return thread_names_; }

 private:
  void push(const std::string& key, format::arg_type type, bool is_text, std::uint64_t value) {
    if (spans_.empty()) return;
    arg a;
    a.key = text(key);
    a.type = type;
    a.text = is_text;
    a.value = value;
    args_.push_back(a);
    ++spans_.back().arg_count;
  }

  std::vector<std::string> texts_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<span> spans_;
  std::vector<arg> args_;
  std::map<std::uint64_t, std::string> thread_names_;
};

/// What write_dump_with_spans() added.
struct added_spans {
  std::uint64_t spans = 0;
  std::uint64_t args = 0;
  std::uint64_t threads_joined = 0;   ///< threads of the dump that received spans
  std::uint64_t threads_created = 0;  ///< tracks created for OS threads the dump did not hold
  std::uint64_t annotation_chunks_rewritten = 0;  ///< the app's, re-encoded to keep a thread's arguments in time order
};

namespace detail {

/// Builds chunks of one writer: payload bytes, then sealed and written.
class chunk_out {
 public:
  chunk_out(std::FILE* out, std::uint32_t writer) : out_(out), writer_(writer) {}

  std::vector<unsigned char>& payload() noexcept { return payload_; }
  void varint(std::uint64_t v) {
    unsigned char b[10];
    payload_.insert(payload_.end(), b, format::put_varint(b, v));
  }
  void string(const std::string& s) {
    const std::size_t n = std::min(s.size(), format::max_string_size);
    varint(n);
    payload_.insert(payload_.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void byte(std::uint8_t b) { payload_.push_back(b); }
  void u64(std::uint64_t v) {
    unsigned char b[8];
    format::put_u64(b, v);
    payload_.insert(payload_.end(), b, b + 8);
  }
  /// Seals and writes the payload as one chunk of `type` (nothing when empty).
  void flush(format::chunk_type type) {
    if (payload_.empty() || !ok_) {
      payload_.clear();
      return;
    }
    chunk_.assign(format::chunk_header_size, 0);
    chunk_.insert(chunk_.end(), payload_.begin(), payload_.end());
    chunk_.resize(chunk_.size() + format::chunk_trailer_size);
    const std::size_t total = format::seal_chunk(chunk_.data(), type, writer_, static_cast<std::uint32_t>(payload_.size()));
    ok_ = std::fwrite(chunk_.data(), 1, total, out_) == total;
    payload_.clear();
  }
  void copy(const unsigned char* bytes, std::size_t size) {
    if (ok_) ok_ = std::fwrite(bytes, 1, size, out_) == size;
  }
  bool ok() const noexcept { return ok_; }

 private:
  std::FILE* out_;
  std::uint32_t writer_;
  std::vector<unsigned char> payload_, chunk_;
  bool ok_ = true;
};

/// One annotation record as it will be written: an app's (decoded from its
/// chunk) or an imported argument.
struct annotation_out {
  format::annotation_record type = format::annotation_record::arg;
  format::arg_type value_type = format::arg_type::integer;
  std::uint64_t thread_id = 0, tick = 0, site_id = 0, value = 0, bytes = 0;
  std::uint64_t order = 0;  ///< ties on equal ticks keep this order
};

/// Appends one record (tags 1-5, or a one-entry tag 7 for a float or bool)
/// to `c`'s payload.
inline void encode_annotation(chunk_out& c, const annotation_out& a) {
  using format::annotation_record;
  const bool typed = a.type == annotation_record::arg && a.value_type != format::arg_type::integer;
  std::vector<unsigned char>& p = c.payload();
  p.push_back(static_cast<unsigned char>(typed ? annotation_record::typed_arg_run : a.type));
  const std::size_t size_at = p.size();
  p.push_back(0);  // one-byte size, filled in below (bodies stay under 128 bytes)
  const std::size_t body = p.size();
  c.varint(a.thread_id);
  c.varint(a.tick);
  if (typed) {
    c.varint(a.site_id * 4 + static_cast<std::uint64_t>(a.value_type));
    if (a.value_type == format::arg_type::real) c.u64(a.value);
  } else {
    c.varint(a.site_id);
    switch (a.type) {
      case annotation_record::arg: c.varint(format::zigzag(static_cast<std::int64_t>(a.value))); break;
      case annotation_record::alloc:
        c.varint(a.value);
        c.varint(a.bytes);
        break;
      default: c.varint(a.value); break;  // named argument's site, flow id, freed address
    }
  }
  p[size_at] = static_cast<unsigned char>(p.size() - body);
}

}  // namespace detail

/// Writes `r` (metadata read) to `out` with `spans` added to writer
/// `writer_id`'s stream, every other chunk copied byte for byte.
///
/// Each span goes to the writer's thread whose OS tid it names (the latest
/// such thread), or to a track created for that tid. Times become the
/// writer's ticks through its own clock (clock_model::to_tick), so the
/// reader maps them back to the same ns. Events chunks of the added spans
/// go in the file just before the writer's first events chunk that starts
/// after them (by end), so a reader holds them for at most a chunk before
/// they take their place by time (event::out_of_order). An argument's tick
/// lies in its span and in none of the span's added children (its begin,
/// or its end when a child begins there): it belongs to that span.
/// Arguments must stay in time order per thread (annotation_stream): an
/// app annotations chunk whose thread's records straddle an added
/// argument is re-encoded with the added ones merged in (as single records,
/// tags 1-5 and 7); the others are copied. Definitions (new category and
/// site ids, above the writer's) and thread chunks of new tracks come
/// before the first chunk that needs them; the writer's thread stats gain
/// the added records in a last stats chunk before its end record. False with
/// `error` on an I/O error.
inline bool write_dump_with_spans(dump_reader& r, std::uint32_t writer_id, const imported_spans& spans, std::FILE* out,
                                  added_spans& result, std::string& error) {
  using format::chunk_type;
  result = added_spans{};
  const auto w_it = r.writers().find(writer_id);
  if (w_it == r.writers().end()) {
    error = "no writer with that id in the dump";
    return false;
  }
  const writer_info& w = w_it->second;
  const std::vector<imported_spans::span>& in = spans.spans();

  // Threads: the latest of the writer's threads with the tid, or a new one.
  std::map<std::uint64_t, std::uint64_t> thread_of_tid;
  std::uint64_t max_thread = 0;
  for (const auto& t : w.threads) {
    max_thread = std::max(max_thread, t.first);
    if (t.second.has_record) thread_of_tid[t.second.os_tid] = t.first;
  }
  std::map<std::uint64_t, std::uint64_t> new_threads;  // thread id -> tid
  std::map<std::uint64_t, std::uint64_t> added_records;  // thread id -> records added
  for (const auto& s : in)
    if (!thread_of_tid.count(s.os_tid)) {
      thread_of_tid[s.os_tid] = ++max_thread;
      new_threads[max_thread] = s.os_tid;
    }

  // Categories and sites, numbered above the writer's.
  std::uint64_t next_category = 1, next_site = 1;
  if (!w.categories.empty()) next_category = w.categories.rbegin()->first + 1;
  if (!w.sites.empty()) next_site = w.sites.rbegin()->first + 1;
  // Definitions are built first and written before the first chunk that
  // needs them, cut into chunks of about target_event_payload at entries.
  detail::chunk_out definitions(out, writer_id);
  std::vector<std::vector<unsigned char>> definition_chunks;
  const auto next_definition = [&]() {
    if (definitions.payload().size() >= format::target_event_payload) {
      definition_chunks.push_back(std::move(definitions.payload()));
      definitions.payload().clear();
    }
  };
  std::map<std::uint32_t, std::uint64_t> category_ids;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> span_sites;  // (category, name)
  std::map<std::tuple<std::uint32_t, int, std::uint32_t>, std::uint64_t> other_sites;  // (category, kind, text)
  const auto category_id = [&](std::uint32_t text) {
    auto it = category_ids.find(text);
    if (it != category_ids.end()) return it->second;
    next_definition();
    definitions.byte(1);
    definitions.varint(next_category);
    definitions.string(spans.text_of(text));
    return category_ids.emplace(text, next_category++).first->second;
  };
  const auto define_site = [&](format::site_kind kind, std::uint64_t category, std::uint32_t text) {
    next_definition();
    definitions.byte(2);
    definitions.varint(next_site);
    definitions.byte(static_cast<std::uint8_t>(kind));
    definitions.varint(category);
    definitions.string(spans.text_of(text));
    definitions.string("");
    definitions.varint(0);
    return next_site++;
  };
  const auto site_of = [&](std::uint32_t category, int kind, std::uint32_t text) {
    const auto key = std::make_tuple(category, kind, text);
    auto it = other_sites.find(key);
    if (it != other_sites.end()) return it->second;
    const std::uint64_t id = define_site(static_cast<format::site_kind>(kind), category_id(category), text);
    other_sites.emplace(key, id);
    return id;
  };

  // Spans in the order the writer would have recorded them: by end, and on
  // equal ends the inner span (later begin) first.
  struct placed {
    std::uint64_t thread_id, site, begin_tick, end_tick;
    std::uint32_t index;
  };
  std::vector<placed> order;
  order.reserve(in.size());
  for (std::uint32_t i = 0; i < in.size(); ++i) {
    const auto& s = in[i];
    const auto key = std::make_pair(s.category, s.name);
    auto site = span_sites.find(key);
    if (site == span_sites.end())
      site = span_sites.emplace(key, define_site(format::site_kind::span, category_id(s.category), s.name)).first;
    const std::uint64_t begin = w.clock.to_tick(s.begin_ns);
    order.push_back(placed{thread_of_tid[s.os_tid], site->second, begin, std::max(begin, w.clock.to_tick(s.end_ns)), i});
  }
  std::sort(order.begin(), order.end(), [](const placed& a, const placed& b) {
    if (a.end_tick != b.end_tick) return a.end_tick < b.end_tick;
    if (a.begin_tick != b.begin_tick) return a.begin_tick > b.begin_tick;
    return a.index < b.index;
  });

  // Arguments: each at a tick of its span that no added child of it holds.
  // Children are found per thread from the spans sorted by begin.
  std::vector<detail::annotation_out> notes;
  {
    std::vector<std::uint32_t> by_begin(order.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) by_begin[i] = i;
    std::sort(by_begin.begin(), by_begin.end(), [&](std::uint32_t a, std::uint32_t b) {
      const placed& x = order[a];
      const placed& y = order[b];
      if (x.thread_id != y.thread_id) return x.thread_id < y.thread_id;
      if (x.begin_tick != y.begin_tick) return x.begin_tick < y.begin_tick;
      return x.end_tick > y.end_tick;
    });
    // For each span: does a child begin at its begin, end at its end?
    std::vector<unsigned char> child_at_begin(order.size(), 0), child_at_end(order.size(), 0);
    std::vector<std::uint32_t> stack;
    std::uint64_t stack_thread = 0;
    for (const std::uint32_t i : by_begin) {
      const placed& p = order[i];
      if (p.thread_id != stack_thread) {
        stack.clear();
        stack_thread = p.thread_id;
      }
      // A span that ends before this one begins, or where it begins (a
      // sibling that touches it), is not its parent.
      while (!stack.empty() && (order[stack.back()].end_tick < p.begin_tick ||
                                (order[stack.back()].end_tick == p.begin_tick && p.end_tick > p.begin_tick)))
        stack.pop_back();
      if (!stack.empty()) {
        const placed& parent = order[stack.back()];
        if (parent.begin_tick == p.begin_tick) child_at_begin[stack.back()] = 1;
        if (parent.end_tick == p.end_tick) child_at_end[stack.back()] = 1;
      }
      stack.push_back(i);
    }
    std::uint64_t sequence = 0;
    for (std::uint32_t i = 0; i < order.size(); ++i) {
      const placed& p = order[i];
      const auto& s = in[p.index];
      if (s.arg_count == 0) continue;
      std::uint64_t tick = p.begin_tick;
      if (child_at_begin[i] && !child_at_end[i]) tick = p.end_tick;
      for (std::uint32_t k = 0; k < s.arg_count; ++k) {
        const imported_spans::arg& a = spans.args()[s.first_arg + k];
        detail::annotation_out n;
        n.thread_id = p.thread_id;
        n.tick = tick;
        n.order = sequence++;
        if (a.text) {
          n.type = format::annotation_record::arg_name;
          n.site_id = site_of(s.category, static_cast<int>(format::site_kind::arg_name), a.key);
          n.value = site_of(s.category, static_cast<int>(format::site_kind::span), static_cast<std::uint32_t>(a.value));
        } else {
          n.type = format::annotation_record::arg;
          n.value_type = a.type;
          const format::site_kind kind = a.type == format::arg_type::integer ? format::site_kind::arg
                                         : a.type == format::arg_type::real  ? format::site_kind::arg_float
                                                                              : format::site_kind::arg_bool;
          n.site_id = site_of(s.category, static_cast<int>(kind), a.key);
          n.value = a.value;
        }
        notes.push_back(n);
        ++added_records[p.thread_id];
      }
    }
    std::stable_sort(notes.begin(), notes.end(), [](const detail::annotation_out& a, const detail::annotation_out& b) {
      return a.tick < b.tick;
    });
  }
  for (const placed& p : order) ++added_records[p.thread_id];
  result.spans = order.size();
  result.args = notes.size();
  result.threads_created = new_threads.size();
  result.threads_joined = added_records.size() - std::min(added_records.size(), new_threads.size());

  unsigned char header[format::file_header_size];
  format::write_file_header(header);
  format::put_u16(header + 10, std::max<std::uint16_t>(r.version_minor(), 5));  // typed arguments: 1.5
  detail::chunk_out c(out, writer_id);
  c.copy(header, sizeof header);

  std::set<std::uint64_t> seen_threads;  // the writer's thread chunks met so far, and the new ones once defined
  bool preamble = false;
  const auto write_preamble = [&]() {
    if (preamble) return;
    preamble = true;
    definition_chunks.push_back(std::move(definitions.payload()));
    for (auto& payload : definition_chunks) {
      c.payload() = std::move(payload);
      c.flush(chunk_type::definitions);
    }
    definition_chunks.clear();
    for (const auto& t : new_threads) {
      c.varint(t.first);
      c.varint(t.second);
      const auto name = spans.thread_names().find(t.second);
      c.string(name != spans.thread_names().end() ? name->second : std::to_string(t.second));
      c.flush(chunk_type::thread);
      seen_threads.insert(t.first);
    }
  };

  // Events chunks of the spans whose end lies before `limit` (all: ~0).
  std::size_t next_span = 0;
  std::vector<std::uint32_t> waiting;  // spans held back: their thread was not defined yet
  const auto emit_spans = [&](std::uint64_t limit) {
    std::map<std::uint64_t, std::vector<std::uint32_t>> per_thread;
    std::vector<std::uint32_t> still;
    for (const std::uint32_t i : waiting) (seen_threads.count(order[i].thread_id) || limit == ~std::uint64_t{0} ? per_thread[order[i].thread_id] : still).push_back(i);
    waiting.swap(still);
    for (; next_span < order.size() && order[next_span].end_tick < limit; ++next_span) {
      const std::uint64_t t = order[next_span].thread_id;
      if (!preamble) write_preamble();
      (seen_threads.count(t) || limit == ~std::uint64_t{0} ? per_thread[t] : waiting).push_back(static_cast<std::uint32_t>(next_span));
    }
    for (auto& entry : per_thread) {
      std::vector<std::uint32_t>& list = entry.second;
      std::sort(list.begin(), list.end());  // back to end order
      std::uint64_t ref = 0;
      for (std::size_t k = 0; k < list.size(); ++k) {
        const placed& p = order[list[k]];
        if (c.payload().empty()) {
          c.varint(entry.first);
          c.varint(p.end_tick);
          ref = p.end_tick;
        }
        c.varint(p.site << 2);
        c.varint(p.end_tick - ref);
        c.varint(p.end_tick - p.begin_tick);
        ref = p.end_tick;
        if (c.payload().size() >= format::target_event_payload || k + 1 == list.size()) c.flush(chunk_type::events);
      }
    }
  };

  // Annotations: the added ones not written yet, in tick order.
  std::size_t next_note = 0;
  std::vector<detail::annotation_out> held_notes;  // thread not defined yet
  const auto flush_notes = [&](std::vector<detail::annotation_out>& list) {
    std::stable_sort(list.begin(), list.end(), [](const detail::annotation_out& a, const detail::annotation_out& b) {
      return a.tick < b.tick;
    });
    for (const auto& n : list) {
      detail::encode_annotation(c, n);
      if (c.payload().size() >= format::target_event_payload) c.flush(chunk_type::annotations);
    }
    c.flush(chunk_type::annotations);
    list.clear();
  };
  std::vector<detail::annotation_out> app_notes, before, merged, after;
  const auto annotations_chunk = [&](const dump_reader::raw_chunk& raw) {
    // This chunk's records, and per thread their tick range.
    app_notes.clear();
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> range;
    std::uint64_t max_tick = 0;
    detail::payload_cursor cursor{raw.bytes + format::chunk_header_size, raw.bytes + raw.size - format::chunk_trailer_size};
    std::uint64_t sequence = 0;
    const bool whole = detail::annotation_decoder::decode(cursor, [&](const annotation& a, std::uint64_t) {
      detail::annotation_out o;
      o.type = a.type;
      o.value_type = a.value_type;
      o.thread_id = a.thread_id;
      o.tick = a.tick;
      o.site_id = a.site_id;
      o.value = a.type == format::annotation_record::arg_name ? a.value_site_id : a.value;
      o.bytes = a.bytes;
      o.order = sequence++;
      app_notes.push_back(o);
      auto it = range.find(a.thread_id);
      if (it == range.end()) range.emplace(a.thread_id, std::make_pair(a.tick, a.tick));
      else it->second = {std::min(it->second.first, a.tick), std::max(it->second.second, a.tick)};
      max_tick = std::max(max_tick, a.tick);
    });
    before.clear();
    merged.clear();
    after.clear();
    for (; next_note < notes.size() && notes[next_note].tick <= max_tick; ++next_note) {
      const detail::annotation_out& n = notes[next_note];
      if (!seen_threads.count(n.thread_id)) {
        held_notes.push_back(n);
        continue;
      }
      const auto it = range.find(n.thread_id);
      if (it == range.end() || n.tick < it->second.first) before.push_back(n);
      else if (n.tick >= it->second.second) after.push_back(n);
      else merged.push_back(n);
    }
    if (!before.empty() || !after.empty() || !merged.empty()) write_preamble();
    flush_notes(before);
    if (merged.empty() || !whole) {
      c.copy(raw.bytes, raw.size);
      flush_notes(merged);  // a malformed app chunk is copied as it is; ours follow it
    } else {
      ++result.annotation_chunks_rewritten;
      // Each added note goes before the first of its thread's records with
      // a later tick (merged is in tick order); other threads keep their place.
      std::map<std::uint64_t, std::vector<const detail::annotation_out*>> queue;
      for (const auto& n : merged) queue[n.thread_id].push_back(&n);
      std::map<std::uint64_t, std::size_t> taken;
      const auto put = [&](const detail::annotation_out& n) {
        detail::encode_annotation(c, n);
        if (c.payload().size() >= format::target_event_payload) c.flush(chunk_type::annotations);
      };
      for (const auto& n : app_notes) {
        const auto q = queue.find(n.thread_id);
        if (q != queue.end()) {
          std::size_t& k = taken[n.thread_id];
          for (; k < q->second.size() && q->second[k]->tick < n.tick; ++k) put(*q->second[k]);
        }
        put(n);
      }
      for (const auto& q : queue)
        for (std::size_t k = taken[q.first]; k < q.second.size(); ++k) put(*q.second[k]);
      c.flush(chunk_type::annotations);
      merged.clear();
    }
    flush_notes(after);
  };

  const auto finish_writer = [&]() {
    write_preamble();
    emit_spans(~std::uint64_t{0});
    held_notes.insert(held_notes.end(), notes.begin() + static_cast<std::ptrdiff_t>(next_note), notes.end());
    next_note = notes.size();
    flush_notes(held_notes);
    for (const auto& entry : added_records) {
      const auto t = w.threads.find(entry.first);
      const bool known = t != w.threads.end();
      if (known && !t->second.has_stats) continue;  // the writer said nothing: still nothing to compare
      c.varint(entry.first);
      c.varint((known ? t->second.stats_written : 0) + entry.second);
      c.varint(known ? t->second.stats_dropped : 0);
      c.varint(known ? t->second.stats_rejected : 0);
      c.varint(known ? t->second.stats_helped : 0);
      c.flush(chunk_type::thread_stats);
    }
  };

  bool finished = false;
  const bool read_ok = r.for_each_chunk([&](const dump_reader::raw_chunk& raw) {
    if (raw.writer != writer_id || finished) {
      c.copy(raw.bytes, raw.size);
      return;
    }
    switch (raw.type) {
      case chunk_type::thread: {
        const unsigned char* p = raw.bytes + format::chunk_header_size;
        std::uint64_t id = 0;
        if (format::get_varint(p, raw.bytes + raw.size - format::chunk_trailer_size, id)) seen_threads.insert(id);
        c.copy(raw.bytes, raw.size);
        return;
      }
      case chunk_type::events: {
        const unsigned char* p = raw.bytes + format::chunk_header_size;
        const unsigned char* end = raw.bytes + raw.size - format::chunk_trailer_size;
        std::uint64_t id = 0, base = 0;
        if (format::get_varint(p, end, id) && format::get_varint(p, end, base)) emit_spans(base);
        c.copy(raw.bytes, raw.size);
        return;
      }
      case chunk_type::annotations: annotations_chunk(raw); return;
      case chunk_type::end:
        finish_writer();
        finished = true;
        c.copy(raw.bytes, raw.size);
        return;
      default: c.copy(raw.bytes, raw.size); return;
    }
  });
  if (!read_ok) {
    error = r.path() + ": " + r.error();
    return false;
  }
  if (!finished) finish_writer();  // a stream cut off without its end record
  if (!c.ok() || !definitions.ok() || std::fflush(out) != 0) {
    error = "write error";
    return false;
  }
  return true;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
