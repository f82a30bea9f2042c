// SPDX-License-Identifier: MIT
// The CSV tables beside the spans (`edgetrace csv --tables`): marks and instants, counter samples and the device's values, allocations and frees, each one row per record in time order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/csv/spans.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// The tables `edgetrace csv` writes (docs/EXPORTS.md has each column).
enum class csv_table : std::uint8_t { spans, marks, counters, allocs };

inline const char* csv_table_name(csv_table t) noexcept {
  switch (t) {
    case csv_table::spans: return "spans";
    case csv_table::marks: return "marks";
    case csv_table::counters: return "counters";
    case csv_table::allocs: return "allocs";
  }
  return "?";
}

inline constexpr char marks_csv_header[] = "name,category,kind,thread,pid,tid,ts_ns,phase";
inline constexpr char counters_csv_header[] = "name,category,thread,pid,tid,ts_ns,value,phase";
inline constexpr char allocs_csv_header[] = "kind,pool,thread,pid,tid,ts_ns,address,bytes,pool_live_bytes,live_bytes";

/// Writes one of the tables beside the spans (marks, counters or allocs) of
/// an opened dump as CSV, in time order (then pid and tid). `rows` gets the
/// number of rows. Memory: options.sort_memory of rows, then temporary
/// files. False on a read or write error (`error` says which).
EDGETRACE_DETAIL_READER_API bool write_csv_table(dump_reader& r, csv_table table, std::FILE* out,
                                                 const csv_options& options = {}, std::uint64_t* rows = nullptr,
                                                 std::string* error = nullptr);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <map>
#include <string_view>
#include <unordered_map>

#include <edgetrace/sinks/csv/sorted_rows.hpp>
#include <edgetrace/decode/device.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// What the three point tables share: the header (with the iteration
/// column), the selection, the time-ordered rows, the counts and the
/// error handling.
class point_table {
 public:
  point_table(std::FILE* out, const char* header, const csv_options& options)
      : o_(out), sorted_(options.sort_memory), filter_(options.selection), iterations_(options.iterations) {
    o_.write(header);
    if (iterations_ != nullptr) o_.write(",iteration");
    o_.put('\n');
  }

  event_filter& filter() noexcept { return filter_; }

  /// ",thread,pid,tid," of a record's thread ("" and the file's id when unknown).
  static std::string thread_fields(const thread_info* t, const writer_info& w, std::uint64_t thread_id) {
    return "," + csv_field(t != nullptr ? t->name : std::string()) + "," + std::to_string(w.pid) + "," +
           std::to_string(t != nullptr ? t->os_tid : thread_id) + ",";
  }

  /// Adds a row at `ns` of `thread`: `line` without its line break, to which
  /// the iteration column and the break are added.
  void add(std::int64_t ns, const writer_info& w, const thread_info* thread, std::uint64_t tid, std::string line) {
    if (iterations_ != nullptr) {
      line += ',';
      if (const std::int64_t n = iterations_->number_of(thread, ns, ns); n >= 0) line += std::to_string(n);
    }
    line += '\n';
    ok_ = ok_ && sorted_.add(row_key{ns, w.pid, tid, 0}, line);
    ++rows_;
  }

  /// Writes the rows in time order; false with `error` set on a failure.
  bool finish(bool read_ok, const dump_reader& r, std::uint64_t* rows, std::string* error) {
    ok_ = ok_ && sorted_.finish([&](std::string_view row) { o_.write(row); });
    const bool write_ok = o_.flush();
    if (rows) *rows = rows_;
    if (!read_ok) return fail_with(error, r.error());
    if (!ok_) return fail_write(error, "write error (temporary file for sorting rows)");
    if (!write_ok) return fail_write(error);
    return true;
  }

 private:
  buffered_output o_;
  sorted_rows sorted_;
  event_filter filter_;
  const iteration_windows* iterations_;
  bool ok_ = true;
  std::uint64_t rows_ = 0;
};

/// The instants (EDGETRACE_INSTANT) and marks (EDGETRACE_MARK), or the
/// counter samples, of `r` into `table`. False on a read error.
inline bool add_points(dump_reader& r, point_table& table, bool counters) {
  return r.read_events([&](const event& e) {
    if (e.site == nullptr || e.kind != (counters ? event_kind::counter : event_kind::instant)) return;
    if (!table.filter().keep(e)) return;
    std::string line = csv_field(e.site->name) + "," + csv_field(e.site->category);
    if (!counters) line += e.site->kind == format::site_kind::mark ? ",mark" : ",instant";
    line += point_table::thread_fields(e.thread, *e.writer, e.thread != nullptr ? e.thread->os_tid : 0);
    line += std::to_string(e.begin_ns);
    if (counters) line += "," + real_text(e.value);
    line += "," + csv_field(phase_at(*e.writer, e.begin_ns));
    table.add(e.begin_ns, *e.writer, e.thread, e.thread != nullptr ? e.thread->os_tid : 0, std::move(line));
  });
}

/// The allocations and frees (EDGETRACE_ALLOC/FREE) of one writer into
/// `table`, with the live bytes of the block's pool and of every pool after
/// each. A free of an address not live names no pool and changes nothing;
/// an allocation over a live address ends the old block first (as the
/// summary's memory columns count them).
inline void add_allocs(const writer_info& w, point_table& table) {
  struct block {
    std::uint64_t bytes;
    const std::string* pool;
  };
  std::unordered_map<std::uint64_t, block> live;
  std::map<std::string, std::uint64_t> pool_live;
  std::uint64_t total = 0;
  const std::string none;
  for (const annotation& a : w.memory_records) {
    const bool alloc = a.type == format::annotation_record::alloc;
    if ((!alloc && a.type != format::annotation_record::free) || !table.filter().keep_point(a.ns)) continue;
    const auto old = live.find(a.value);
    const std::string* pool = &none;
    std::uint64_t bytes = 0;
    bool known = false;
    if (old != live.end() && a.value != 0) {  // a free, or an allocation over a block whose free was not recorded
      pool_live[*old->second.pool] -= old->second.bytes;
      total -= old->second.bytes;
      if (!alloc) {
        pool = old->second.pool;
        bytes = old->second.bytes;
        known = true;
      }
      live.erase(old);
    }
    if (alloc && a.value != 0) {
      const auto entry = pool_live.emplace(a.name(), 0).first;
      pool = &entry->first;
      bytes = a.bytes;
      known = true;
      entry->second += bytes;
      total += bytes;
      live.emplace(a.value, block{bytes, pool});
    }
    char address[24];
    std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(a.value));
    std::string line = alloc ? "alloc," : "free,";
    line += csv_field(alloc ? a.name() : *pool);
    line += point_table::thread_fields(a.thread, w, a.thread_id) + std::to_string(a.ns) + "," + address + ",";
    if (known) line += std::to_string(bytes) + "," + std::to_string(pool_live[*pool]) + "," + std::to_string(total);
    else line += ",,";
    table.add(a.ns, w, a.thread, a.thread != nullptr ? a.thread->os_tid : a.thread_id, std::move(line));
  }
}

/// The device's values (1.9) of one writer into the counters table: one
/// row per value, named after its track, in category "device", on the
/// thread the track measures (none for the system's).
inline void add_device_points(const writer_info& w, point_table& table) {
  for (const device_series& series : device_series_of(w)) {
    const auto thread = series.track->thread_id != 0 ? w.threads.find(series.track->thread_id) : w.threads.end();
    const thread_info* t = thread != w.threads.end() ? &thread->second : nullptr;
    for (const device_series::point& p : series.points) {
      if (!table.filter().keep_point(p.ns)) continue;
      std::string line = csv_field(series.label) + ",device" + point_table::thread_fields(t, w, 0);
      line += std::to_string(p.ns) + "," + real_text(p.value) + "," + csv_field(phase_at(w, p.ns));
      table.add(p.ns, w, t, t != nullptr ? t->os_tid : 0, std::move(line));
    }
  }
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool write_csv_table(dump_reader& r, csv_table table, std::FILE* out,
                                                 const csv_options& options, std::uint64_t* rows,
                                                 std::string* error) {
  if (table == csv_table::spans) return write_spans_csv(r, out, rows, error, options);
  if (!r.metadata_read() && !r.read_metadata()) return detail::fail_with(error, r.error());
  const char* header = table == csv_table::marks ? marks_csv_header
                       : table == csv_table::counters ? counters_csv_header
                                                      : allocs_csv_header;
  detail::point_table t(out, header, options);
  bool read_ok = true;
  if (table == csv_table::allocs) {
    for (const auto& w : r.writers()) detail::add_allocs(w.second, t);
  } else {
    read_ok = detail::add_points(r, t, table == csv_table::counters);
    if (table == csv_table::counters)
      for (const writer_info* w : r.writers_in_order()) detail::add_device_points(*w, t);
  }
  return t.finish(read_ok, r, rows, error);
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
