// SPDX-License-Identifier: MIT
// Annotations chunks (format 1.3+): pass 1's counts and chunk list, and the decoder of arguments, argument runs, flow steps, allocations and frees that later passes run again.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/detail/chunk_walker.hpp>
#include <edgetrace/decode/detail/diagnostic_log.hpp>
#include <edgetrace/decode/detail/metadata_chunks.hpp>
#include <edgetrace/decode/detail/payload_cursor.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// One annotations chunk pass 1 accepted: where it is, and the ticks (then
/// times) of its first and last annotation, so that annotation_stream knows
/// which chunks can hold an annotation before or after a given time.
struct annotation_chunk_ref {
  std::uint64_t offset = 0;
  std::uint32_t writer = 0;
  std::uint64_t min_tick = ~std::uint64_t{0};
  std::uint64_t max_tick = 0;
  std::int64_t min_ns = 0;  ///< after pass 1
  std::int64_t max_ns = 0;
};

/// Pass 1's reader of annotations chunks: counts what they hold per writer
/// (writer_info::annotations_read) and per thread, keeps the allocations
/// and frees (at most max_memory_records per reader), and lists the chunks
/// for the passes that read arguments and flow steps again. Memory: 40
/// bytes per annotations chunk, nothing per argument. One per reader;
/// reset() when a file is opened.
class annotation_decoder {
 public:
  /// Allocations and frees kept per reader; past this they are counted,
  /// not stored (a flipped length cannot make the reader allocate without
  /// bound).
  static constexpr std::size_t max_memory_records = 16u << 20;

  void reset() {
    last_.clear();
    chunks_.clear();
    kept_ = 0;
    noted_full_ = false;
  }

  /// An annotations chunk (1.3). An exact repeat of the writer's previous
  /// annotations chunk (a duplicated chunk) is skipped.
  void read(diagnostic_log& log, thread_table& threads, writer_info& w, payload_cursor& in, const chunk& c) {
    const std::uint64_t offset = c.offset;
    auto& last = last_[w.id];
    if (last.first == c.crc && last.second == c.size) {
      log.add(diagnostic::severity::damage, offset,
              "annotations chunk at offset " + std::to_string(offset) + " (" + w.label() +
                  ") repeats the previous one; skipped");
      return;
    }
    last = {c.crc, static_cast<std::uint32_t>(c.size)};
    annotation_chunk_ref ref;
    ref.offset = offset;
    ref.writer = w.id;
    const bool ok = decode(in, [&](const annotation& a, std::uint64_t records) {
      threads.get(w, a.thread_id).annotation_records += records;
      include_ticks(w, a.tick, a.tick);
      ref.min_tick = std::min(ref.min_tick, a.tick);
      ref.max_tick = std::max(ref.max_tick, a.tick);
      count(w.annotations_read, a);
      if (a.type == format::annotation_record::alloc || a.type == format::annotation_record::free)
        keep_memory_record(log, w, a, offset);
    });
    if (!ok) log.malformed("annotations", offset, w);
    if (ref.min_tick <= ref.max_tick) chunks_.push_back(ref);
  }

  /// The chunks read, in file order; their times once finish_times ran.
  const std::vector<annotation_chunk_ref>& chunks() const noexcept { return chunks_; }

  /// After pass 1 (every writer's clock built): each chunk's time range.
  void finish_times(const std::map<std::uint32_t, writer_info>& writers) {
    for (annotation_chunk_ref& ref : chunks_) {
      const auto w = writers.find(ref.writer);
      if (w == writers.end()) continue;
      ref.min_ns = w->second.clock.to_ns(ref.min_tick);
      ref.max_ns = w->second.clock.to_ns(ref.max_tick);
      if (ref.max_ns < ref.min_ns) std::swap(ref.min_ns, ref.max_ns);
    }
  }

  /// Decodes one annotations chunk's records, calling `fn(const annotation&
  /// a, std::uint64_t records)` for each annotation in file order (`records`:
  /// ring records it stands for, 2 for an allocation), with the fields as
  /// in the file (ids and tick; resolve() adds the rest). False when a
  /// record is malformed (the annotations before it were delivered).
  template <class Fn>
  static bool decode(payload_cursor& in, Fn&& fn) {
    return for_each_record(in, [&](std::uint8_t tag, payload_cursor& body) { return read_record(tag, body, fn); });
  }

  /// Fills in what the file leaves to the reader: time, thread and sites
  /// (after pass 1; pointers into `w`).
  static void resolve(const writer_info& w, annotation& a) {
    a.ns = w.clock.to_ns(a.tick);
    const auto t = w.threads.find(a.thread_id);
    a.thread = t != w.threads.end() ? &t->second : nullptr;
    const auto site = w.sites.find(a.site_id);
    a.site = site != w.sites.end() ? &site->second : nullptr;
    if (a.type == format::annotation_record::arg_name) {
      const auto value = w.sites.find(a.value_site_id);
      a.value_site = value != w.sites.end() ? &value->second : nullptr;
    }
  }

  /// Resolves a writer's memory records and its counts' names (after its
  /// sites and clock are known).
  static void finish(writer_info& w) {
    std::stable_sort(w.memory_records.begin(), w.memory_records.end(),
                     [](const annotation& a, const annotation& b) { return a.tick < b.tick; });
    for (annotation& a : w.memory_records) resolve(w, a);
    w.has_memory = !w.memory_records.empty();
    annotation_counts& n = w.annotations_read;
    auto name_of = [&w](std::uint64_t id) {
      const auto site = w.sites.find(id);
      return site != w.sites.end() ? site->second.name : "(unknown site " + std::to_string(id) + ")";
    };
    for (const std::uint64_t id : n.key_sites) n.keys.insert(name_of(id));
    for (const std::uint64_t id : n.flow_sites) n.flow_names.insert(name_of(id));
  }

 private:
  /// Counts one annotation into its writer's totals.
  static void count(annotation_counts& n, const annotation& a) {
    switch (a.type) {
      case format::annotation_record::arg:
        n.reals += a.is_real();
        n.bools += a.is_bool();
        ++n.args;
        n.key_sites.insert(a.site_id);
        break;
      case format::annotation_record::arg_name:
        ++n.names;
        ++n.args;
        n.key_sites.insert(a.site_id);
        break;
      case format::annotation_record::flow:
        ++n.flows;
        n.flow_sites.insert(a.site_id);
        break;
      case format::annotation_record::alloc: ++n.allocs; break;
      case format::annotation_record::free: ++n.frees; break;
      default: break;  // runs are delivered as one `arg` per entry
    }
  }

  /// Keeps an allocation or free, up to max_memory_records.
  void keep_memory_record(diagnostic_log& log, writer_info& w, const annotation& a, std::uint64_t offset) {
    if (kept_ < max_memory_records) {
      ++kept_;
      w.memory_records.push_back(a);
    } else if (!noted_full_) {
      noted_full_ = true;
      log.add(diagnostic::severity::note, offset,
              "more than " + std::to_string(max_memory_records) + " allocations and frees; the rest are not analysed");
    }
  }

  /// One record (thread, tick, site, then by tag); false when malformed.
  template <class Fn>
  static bool read_record(std::uint8_t tag, payload_cursor& body, Fn& fn) {
    annotation a;
    if (!body.varint(a.thread_id) || a.thread_id == 0 || !body.varint(a.tick) || !body.varint(a.site_id)) return false;
    std::uint64_t records = 1;
    switch (static_cast<format::annotation_record>(tag)) {
      case format::annotation_record::arg:
        if (!integer_argument(a, body)) return false;
        break;
      case format::annotation_record::arg_run: return read_run(a, body, false, fn);  // 1.4
      case format::annotation_record::typed_arg_run: return read_run(a, body, true, fn);  // 1.5
      case format::annotation_record::arg_name:
        if (!body.varint(a.value_site_id)) return false;
        break;
      case format::annotation_record::flow:
      case format::annotation_record::free:
        if (!body.varint(a.value)) return false;
        break;
      case format::annotation_record::alloc:
        if (!body.varint(a.value) || !body.varint(a.bytes)) return false;
        records = 2;
        break;
      default: return true;  // a newer minor's record: stepped over
    }
    a.type = static_cast<format::annotation_record>(tag);
    fn(static_cast<const annotation&>(a), records);
    return true;
  }

  /// An argument run: one argument, then (site, tick delta, value)* of the
  /// same span. `typed` (1.5): each site carries its value's type.
  template <class Fn>
  static bool read_run(annotation& a, payload_cursor& body, bool typed, Fn& fn) {
    a.type = format::annotation_record::arg;
    auto value = [&] { return typed ? typed_argument(a, body) : integer_argument(a, body); };
    if (!value()) return false;
    fn(static_cast<const annotation&>(a), std::uint64_t{1});
    while (body.left() != 0) {
      std::uint64_t delta;
      if (!body.varint(a.site_id) || !body.varint(delta) || a.tick + delta < a.tick) return false;
      a.tick += delta;
      if (!value()) return false;
      fn(static_cast<const annotation&>(a), std::uint64_t{1});
    }
    return true;
  }

  /// A zigzagged integer argument into a.value.
  static bool integer_argument(annotation& a, payload_cursor& body) {
    std::uint64_t zigzagged;
    if (!body.varint(zigzagged)) return false;
    a.value = static_cast<std::uint64_t>(format::unzigzag(zigzagged));
    return true;
  }

  /// Splits a typed site (in a.site_id) into site id and value type and
  /// reads the value that type implies (annotations tag 7).
  static bool typed_argument(annotation& a, payload_cursor& body) {
    a.value_type = static_cast<format::arg_type>(a.site_id & 3);
    a.site_id >>= 2;
    switch (a.value_type) {
      case format::arg_type::integer: return integer_argument(a, body);
      case format::arg_type::real: return body.u64(a.value);
      case format::arg_type::bool_false: a.value = 0; return true;
      case format::arg_type::bool_true: a.value = 1; return true;
    }
    return false;
  }

  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> last_;  // writer -> (crc, size) of its last chunk
  std::vector<annotation_chunk_ref> chunks_;
  std::size_t kept_ = 0;     // memory records stored, over all writers
  bool noted_full_ = false;  // the "more than max_memory_records" note was given
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
