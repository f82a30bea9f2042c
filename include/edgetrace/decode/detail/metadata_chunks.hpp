// SPDX-License-Identifier: MIT
// Pass 1's decoders of the metadata chunks: process, definitions, threads, thread stats, capture, and the tick range of events chunks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include <edgetrace/decode/detail/diagnostic_log.hpp>
#include <edgetrace/decode/detail/event_codec.hpp>
#include <edgetrace/decode/detail/payload_cursor.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Widens the writer's tick range (all its events, annotations and GPU
/// launches) to hold [begin, end].
inline void include_ticks(writer_info& w, std::uint64_t begin, std::uint64_t end) noexcept {
  if (!w.has_events) {
    w.has_events = true;
    w.min_tick = begin;
    w.max_tick = end;
  }
  w.min_tick = std::min(w.min_tick, begin);
  w.max_tick = std::max(w.max_tick, end);
}

/// Threads of one reader as pass 1 meets them: a thread id seen first in
/// any chunk gets the next order of appearance (over all writers).
struct thread_table {
  std::size_t next_order = 0;

  thread_info& get(writer_info& w, std::uint64_t id) {
    auto it = w.threads.find(id);
    if (it == w.threads.end()) {
      it = w.threads.emplace(id, thread_info{}).first;
      it->second.writer = &w;
      it->second.thread_id = id;
      it->second.order = next_order++;
    }
    return it->second;
  }
};

inline void read_process(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset) {
  std::uint64_t pid, rate, ring, flush;
  std::uint8_t source, flags;
  std::string name;
  if (!in.varint(pid) || !in.u8(source) || !in.u8(flags) || !in.varint(rate) || !in.varint(ring) ||
      !in.varint(flush) || !in.string(name))
    return log.malformed("process", offset, w);
  w.has_process = true;
  w.pid = pid;
  w.clock_source = source;
  w.clock_flags = flags;
  w.nominal_tick_rate = rate;
  w.ring_capacity = ring;
  w.flush_period_us = flush;
  w.process_name = std::move(name);
  std::uint8_t policy;
  if (in.u8(policy))  // 1.8
    w.overload = policy == format::overload_drop ? overload_policy::drop
                 : policy == format::overload_wait ? overload_policy::wait
                                                   : overload_policy::unknown;
  std::uint64_t start_ticks;
  w.has_identity = false;
  if (in.varint(start_ticks) && in.left() >= w.boot_id.size()) {  // 1.15
    for (unsigned char& b : w.boot_id) in.u8(b);
    w.start_ticks = start_ticks;
    w.has_identity = true;
  }
}

/// A definition that contradicts an earlier one of the same writer: the
/// writer never does that, so events may be attributed wrongly.
inline void redefined(diagnostic_log& log, const char* what, std::uint64_t id, const std::string& was,
                      const std::string& now, std::uint64_t offset, const writer_info& w) {
  char text[320];
  std::snprintf(text, sizeof text,
                "definitions chunk at offset %llu (%s): %s %llu redefined as \"%.60s\" (was \"%.60s\"); the "
                "later definition is used for all its events",
                static_cast<unsigned long long>(offset), w.label().c_str(), what, static_cast<unsigned long long>(id),
                now.c_str(), was.c_str());
  log.add(diagnostic::severity::damage, offset, text);
}

inline void read_definitions(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset) {
  while (in.left() != 0) {
    std::uint8_t tag;
    in.u8(tag);
    if (tag == static_cast<std::uint8_t>(format::definition_tag::category)) {
      std::uint64_t id;
      std::string name;
      if (!in.varint(id) || !in.string(name)) return log.malformed("definitions", offset, w);
      std::string& slot = w.categories[id];
      if (!slot.empty() && slot != name) redefined(log, "category", id, slot, name, offset, w);
      slot = std::move(name);
    } else if (tag == static_cast<std::uint8_t>(format::definition_tag::site)) {
      site_info s;
      std::uint8_t kind;
      if (!in.varint(s.id) || !in.u8(kind) || !in.varint(s.category_id) || !in.string(s.name) ||
          !in.string(s.file) || !in.varint(s.line))
        return log.malformed("definitions", offset, w);
      s.kind = static_cast<format::site_kind>(kind);
      const std::uint64_t id = s.id;
      // A writer that started the file again sends every definition
      // again: the same content is expected and silent.
      const auto old = w.sites.find(id);
      if (old != w.sites.end() && (old->second.kind != s.kind || old->second.category_id != s.category_id ||
                                   old->second.name != s.name || old->second.file != s.file ||
                                   old->second.line != s.line))
        redefined(log, "site", id, old->second.name, s.name, offset, w);
      w.sites[id] = std::move(s);
    } else {
      // An entry of a newer minor: entries carry no length, so nothing
      // after it can be found. The entries before it are kept.
      return;
    }
  }
}

inline void read_thread(diagnostic_log& log, thread_table& threads, writer_info& w, payload_cursor& in,
                        std::uint64_t offset) {
  std::uint64_t id, tid;
  std::string name;
  if (!in.varint(id) || id == 0 || !in.varint(tid) || !in.string(name)) return log.malformed("thread", offset, w);
  thread_info& t = threads.get(w, id);
  t.has_record = true;
  t.os_tid = tid;
  t.name = std::move(name);  // the last one wins (renames)
}

inline void read_thread_stats(diagnostic_log& log, thread_table& threads, writer_info& w, payload_cursor& in,
                              std::uint64_t offset) {
  std::uint64_t id, written, dropped, rejected = 0, helped = 0;
  if (!in.varint(id) || id == 0 || !in.varint(written) || !in.varint(dropped))
    return log.malformed("thread stats", offset, w);
  if (in.left() != 0 && !in.varint(rejected)) return log.malformed("thread stats", offset, w);
  if (in.left() != 0 && !in.varint(helped)) return log.malformed("thread stats", offset, w);
  thread_info& t = threads.get(w, id);
  t.has_stats = true;
  t.stats_written = written;
  t.stats_dropped = dropped;
  t.stats_rejected = rejected;
  t.stats_helped = helped;
}

/// A capture chunk (1.2): recording windows and phases.
inline void read_capture(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset) {
  const bool ok = for_each_record(in, [&w](std::uint8_t tag, payload_cursor& body) {
    if (tag == static_cast<std::uint8_t>(format::capture_record::recording)) {
      recording_change change;
      std::uint8_t on, reason;
      if (!body.varint(change.tick) || !body.u8(on) || !body.u8(reason) || on > 1) return false;
      change.on = on == 1;
      change.reason = static_cast<format::capture_reason>(reason);
      w.recording.push_back(change);
    } else if (tag == static_cast<std::uint8_t>(format::capture_record::phase)) {
      phase_change change;
      if (!body.varint(change.tick) || !body.string(change.name)) return false;
      w.phases.push_back(std::move(change));
    }
    return true;
  });
  if (!ok) log.malformed("capture", offset, w);
}

/// What pass 1 keeps of an events chunk: its thread and its latest span end.
struct events_chunk_scan {
  std::uint64_t thread_id = 0;
  std::uint64_t latest_span_end = 0;  ///< 0: no span
};

/// Pass 1 look at an events chunk: only the tick range (for the output's
/// time origin and `info`), the thread's first span begin and the chunk's
/// latest span end; sites are not needed to walk the records.
inline events_chunk_scan scan_event_ticks(writer_info& w, payload_cursor& in) {
  events_chunk_scan scan;
  std::uint64_t base;
  if (!in.varint(scan.thread_id) || !in.varint(base)) return scan;  // reported in pass 2
  std::uint64_t first_span = ~std::uint64_t{0};
  decode_events(in, base, [&w, &first_span, &scan](const raw_event& e) {
    ++w.event_records;
    include_ticks(w, e.begin, e.end);
    if (e.type == format::event_type::span) {
      first_span = std::min(first_span, e.begin);
      scan.latest_span_end = std::max(scan.latest_span_end, e.end);
    }
    return true;
  });
  if (first_span == ~std::uint64_t{0}) return scan;
  const auto known = w.first_span_tick.emplace(scan.thread_id, first_span).first;
  known->second = std::min(known->second, first_span);
  return scan;
}

/// After pass 1: every site's category name ("category <id>" when the
/// writer never defined it).
inline void resolve_categories(writer_info& w) {
  for (auto& s : w.sites) {
    const auto cat = w.categories.find(s.second.category_id);
    if (cat != w.categories.end()) {
      s.second.category = cat->second;
    } else {
      char text[48];
      std::snprintf(text, sizeof text, "category %llu", static_cast<unsigned long long>(s.second.category_id));
      s.second.category = text;
    }
  }
}

/// After the writer's clock model: recording changes, phases and device
/// samples in tick order (stable: file order on ties), with their times.
inline void resolve_capture(writer_info& w) {
  auto by_tick = [](const auto& a, const auto& b) { return a.tick < b.tick; };
  std::stable_sort(w.recording.begin(), w.recording.end(), by_tick);
  std::stable_sort(w.phases.begin(), w.phases.end(), by_tick);
  std::stable_sort(w.device.samples.begin(), w.device.samples.end(), by_tick);
  for (recording_change& change : w.recording) change.ns = w.clock.to_ns(change.tick);
  for (phase_change& change : w.phases) change.ns = w.clock.to_ns(change.tick);
  for (device_sample& sample : w.device.samples) sample.ns = w.clock.to_ns(sample.tick);
}

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
