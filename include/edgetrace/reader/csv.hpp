// SPDX-License-Identifier: MIT
// One CSV line per span (`edgetrace csv`): name, category, thread, times, self time and depth; pandas-ready.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "chrome_json.hpp"
#include "dump_reader.hpp"
#include "span_walker.hpp"
#include "summary.hpp"

namespace edgetrace {
inline namespace v1 {
namespace reader {

/// The CSV header line (docs/ANALYSIS.md documents each column). The gpu_*
/// columns stay empty until the format records GPU spans.
inline constexpr char spans_csv_header[] =
    "name,category,thread,pid,tid,start_ns,dur_ns,self_ns,depth,gpu_start_ns,gpu_dur_ns\n";

/// Writes every span of an opened dump as CSV, streaming (a backward pass:
/// rows come per thread latest first; sort by start_ns for time order).
/// Memory: one stack of open ancestors per thread. Returns false on a read
/// or write error (`error` says which).
inline bool write_spans_csv(dump_reader& r, std::FILE* out, std::uint64_t* rows = nullptr,
                            std::string* error = nullptr) {
  if (!r.metadata_read() && !r.read_metadata()) {
    if (error) *error = r.error();
    return false;
  }
  detail::buffered_output o(out);
  o.write(spans_csv_header);
  std::uint64_t count = 0;
  const thread_info* last_thread = nullptr;
  std::string thread_prefix;  // ",thread,pid,tid,"
  const site_info* last_site = nullptr;
  std::string site_prefix;  // "name,category"
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
        o.write(site_prefix);
        o.write(thread_prefix);
        o.write_i64(s.begin_ns);
        o.put(',');
        o.write_u64(s.duration());
        o.put(',');
        o.write_u64(s.self_ns);
        o.put(',');
        o.write_u64(s.depth);
        o.write(",,\n");
        ++count;
      },
      [](const event&) {});
  const bool write_ok = o.flush();
  if (rows) *rows = count;
  if (!ok) {
    if (error) *error = r.error();
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
