// SPDX-License-Identifier: MIT
// Pass 1's decoder of annotations chunks (format 1.3+): arguments, argument runs, flow steps, allocations and frees.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "../../format.hpp"
#include "../model.hpp"
#include "chunk_walker.hpp"
#include "diagnostic_log.hpp"
#include "metadata_chunks.hpp"
#include "payload_cursor.hpp"

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Decodes annotations chunks into their writers' `annotations`, counts
/// their records on the threads, and keeps at most max_annotations per
/// reader. One per reader; reset() when a file is opened.
class annotation_decoder {
 public:
  /// Annotations kept per reader; past this they are counted, not stored
  /// (a flipped length cannot make the reader allocate without bound).
  static constexpr std::size_t max_annotations = 16u << 20;

  void reset() {
    last_.clear();
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
    target to{log, threads, w, offset};
    const bool ok = for_each_record(
        in, [&](std::uint8_t tag, payload_cursor& body) { return read_record(to, tag, body); });
    if (!ok) log.malformed("annotations", offset, w);
  }

  /// Resolves a writer's annotations (after its sites and clock are known).
  static void finish(writer_info& w) {
    std::stable_sort(w.annotations.begin(), w.annotations.end(),
                     [](const annotation& a, const annotation& b) { return a.tick < b.tick; });
    for (annotation& a : w.annotations) {
      a.ns = w.clock.to_ns(a.tick);
      const auto t = w.threads.find(a.thread_id);
      a.thread = t != w.threads.end() ? &t->second : nullptr;
      const auto site = w.sites.find(a.site_id);
      a.site = site != w.sites.end() ? &site->second : nullptr;
      if (a.type == format::annotation_record::arg_name) {
        const auto value = w.sites.find(a.value_site_id);
        a.value_site = value != w.sites.end() ? &value->second : nullptr;
      }
      if (a.type == format::annotation_record::alloc || a.type == format::annotation_record::free) w.has_memory = true;
    }
  }

 private:
  /// Where one chunk's annotations go.
  struct target {
    diagnostic_log& log;
    thread_table& threads;
    writer_info& w;
    std::uint64_t offset;
  };

  /// One record (thread, tick, site, then by tag); false when malformed.
  bool read_record(const target& to, std::uint8_t tag, payload_cursor& body) {
    annotation a;
    if (!body.varint(a.thread_id) || a.thread_id == 0 || !body.varint(a.tick) || !body.varint(a.site_id)) return false;
    std::uint64_t records = 1;
    switch (static_cast<format::annotation_record>(tag)) {
      case format::annotation_record::arg:
        if (!integer_argument(a, body)) return false;
        break;
      case format::annotation_record::arg_run: return read_run(to, a, body, false);  // 1.4
      case format::annotation_record::typed_arg_run: return read_run(to, a, body, true);  // 1.5
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
    keep(to, a, records);
    return true;
  }

  /// An argument run: one argument, then (site, tick delta, value)* of the
  /// same span. `typed` (1.5): each site carries its value's type.
  bool read_run(const target& to, annotation& a, payload_cursor& body, bool typed) {
    a.type = format::annotation_record::arg;
    auto value = [&] { return typed ? typed_argument(a, body) : integer_argument(a, body); };
    if (!value()) return false;
    keep(to, a, 1);
    while (body.left() != 0) {
      std::uint64_t delta;
      if (!body.varint(a.site_id) || !body.varint(delta) || a.tick + delta < a.tick) return false;
      a.tick += delta;
      if (!value()) return false;
      keep(to, a, 1);
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

  /// Counts one decoded annotation (`records` ring records: 2 for an
  /// allocation) and keeps it, up to max_annotations.
  void keep(const target& to, const annotation& a, std::uint64_t records) {
    to.threads.get(to.w, a.thread_id).annotation_records += records;
    include_ticks(to.w, a.tick, a.tick);
    if (kept_ < max_annotations) {
      ++kept_;
      to.w.annotations.push_back(a);
    } else if (!noted_full_) {
      noted_full_ = true;
      to.log.add(diagnostic::severity::note, to.offset,
                 "more than " + std::to_string(max_annotations) + " annotations; the rest are not analysed");
    }
  }

  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> last_;  // writer -> (crc, size) of its last chunk
  std::size_t kept_ = 0;     // annotations stored, over all writers
  bool noted_full_ = false;  // the "more than max_annotations" note was given
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
