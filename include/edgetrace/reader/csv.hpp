// SPDX-License-Identifier: MIT
// One CSV line per span (`edgetrace csv`), in time order: name, category, thread, times, self time, depth, phase, flow step and one column per argument key; pandas-ready.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "annotations.hpp"
#include "chrome_json.hpp"
#include "dump_reader.hpp"
#include "sorted_rows.hpp"
#include "span_walker.hpp"
#include "summary.hpp"

namespace edgetrace {
inline namespace v1 {
namespace reader {

/// The CSV's first columns (docs/ANALYSIS.md documents each). The gpu_*
/// columns stay empty until the format records GPU spans. phase, flow and
/// flow_id follow, then one arg:KEY column per argument key of the dump.
inline constexpr char spans_csv_header[] =
    "name,category,thread,pid,tid,start_ns,dur_ns,self_ns,depth,gpu_start_ns,gpu_dur_ns,phase,flow,flow_id";

/// How write_spans_csv sorts.
struct csv_options {
  /// Bytes of rows sorted in memory; past it rows go to sorted runs in
  /// temporary files, merged at the end (detail::sorted_rows).
  std::size_t sort_memory = std::size_t{64} << 20;
};

namespace detail {

/// Every argument key of the dump (recorded, not just defined), sorted:
/// the arg:KEY columns. Reads the annotations pass 1 already keeps.
inline std::vector<std::string> argument_keys(const dump_reader& r) {
  std::set<std::string> keys;
  for (const auto& w : r.writers())
    for (const annotation& a : w.second.annotations)
      if (a.type == format::annotation_record::arg || a.type == format::annotation_record::arg_name)
        keys.insert(a.name());
  return std::vector<std::string>(keys.begin(), keys.end());
}

/// The phase of writer `w` that time `ns` falls in (a phase lasts until
/// the writer's next one, as for summary --phase); empty before the first.
inline const std::string& phase_at(const writer_info& w, std::int64_t ns) {
  static const std::string none;
  const auto after = std::upper_bound(w.phases.begin(), w.phases.end(), ns,
                                      [](std::int64_t t, const phase_change& p) { return t < p.ns; });
  return after == w.phases.begin() ? none : std::prev(after)->name;
}

}  // namespace detail

/// Writes every span of an opened dump as CSV, one row per span in time
/// order (begin, then pid and tid, then depth). Each row carries the
/// span's phase, its flow step (the last one when it has several) and the
/// last value of each argument key. Memory: the reader's annotations (kept
/// by pass 1), one stack of open ancestors per thread, and
/// options.sort_memory of rows; past that, temporary files about the size
/// of the CSV. Returns false on a read or write error (`error` says which).
inline bool write_spans_csv(dump_reader& r, std::FILE* out, std::uint64_t* rows = nullptr,
                            std::string* error = nullptr, const csv_options& options = {}) {
  if (!r.metadata_read() && !r.read_metadata()) {
    if (error) *error = r.error();
    return false;
  }
  const std::vector<std::string> keys = detail::argument_keys(r);
  detail::buffered_output o(out);
  o.write(spans_csv_header);
  for (const std::string& key : keys) o.write("," + detail::csv_field("arg:" + key));
  o.put('\n');
  std::uint64_t count = 0;
  const thread_info* last_thread = nullptr;
  std::string thread_prefix;  // ",thread,pid,tid,"
  const site_info* last_site = nullptr;
  std::string site_prefix;  // "name,category"
  span_annotations notes(r);
  std::vector<const annotation*> args;
  std::vector<const annotation*> flows;
  detail::sorted_rows sorted(options.sort_memory);
  bool sort_ok = true;
  std::string line;
  auto number = [&line](auto v) {
    char text[24];
    const auto done = std::to_chars(text, text + sizeof text, v);
    line.append(text, done.ptr);
  };
  const bool ok = walk_spans(
      r,
      [&](const span_record& s) {
        if (s.site != last_site) {
          last_site = s.site;
          site_prefix = detail::csv_field(s.site->name) + "," + detail::csv_field(s.site->category);
        }
        if (s.thread != last_thread) {
          last_thread = s.thread;
          thread_prefix = "," + detail::csv_field(s.thread->name) + "," + std::to_string(s.writer->pid) + "," +
                          std::to_string(s.thread->os_tid) + ",";
        }
        args.clear();
        flows.clear();
        notes.claim(s.thread, s.begin_ns, s.end_ns, [&](const annotation& a) {
          (a.type == format::annotation_record::flow ? flows : args).push_back(&a);
        });
        line = site_prefix;
        line += thread_prefix;
        number(s.begin_ns);
        line += ',';
        number(s.duration());
        line += ',';
        number(s.self_ns);
        line += ',';
        number(s.depth);
        line += ",,,";
        line += detail::csv_field(detail::phase_at(*s.writer, s.begin_ns));
        line += ',';
        if (!flows.empty()) {
          line += detail::csv_field(flows.back()->name());
          line += ',';
          number(flows.back()->value);
        } else {
          line += ',';
        }
        for (const std::string& key : keys) {
          line += ',';
          if (const annotation* a = last_with_key(args, key)) line += detail::csv_field(a->value_text());
        }
        line += '\n';
        sort_ok = sort_ok && sorted.add(detail::row_key{s.begin_ns, s.writer->pid, s.thread->os_tid, s.depth}, line);
        ++count;
      },
      [](const event&) {});
  sort_ok = sort_ok && sorted.finish([&](std::string_view row) { o.write(row); });
  const bool write_ok = o.flush();
  if (rows) *rows = count;
  if (!ok) {
    if (error) *error = r.error();
    return false;
  }
  if (!sort_ok) {
    if (error) *error = std::string("write error (temporary file for sorting rows): ") + std::strerror(errno);
    return false;
  }
  if (!write_ok) {
    if (error) *error = std::string("write error: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace reader
}  // namespace v1
}  // namespace edgetrace
