// SPDX-License-Identifier: MIT
// One CSV line per span (`edgetrace csv`), in time order: name, category, thread, times, self time, depth, phase, flow step and one column per argument key; pandas-ready.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/selection.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// The CSV's first columns (docs/EXPORTS.md documents each). The gpu_*
/// columns stay empty until the format records GPU spans. phase, flow and
/// flow_id follow, then one arg:KEY column per argument key of the dump.
inline constexpr char spans_csv_header[] =
    "name,category,thread,pid,tid,start_ns,dur_ns,self_ns,depth,gpu_start_ns,gpu_dur_ns,phase,flow,flow_id";

class iteration_windows;

/// What the CSV tables keep and how they sort.
struct csv_options {
  /// Bytes of rows sorted in memory; past it rows go to sorted runs in
  /// temporary files, merged at the end (detail::sorted_rows; sorted in
  /// place): 24 MiB keeps `edgetrace csv` under 64 MB (with --per, the
  /// CLI takes the iteration windows' bytes off it).
  std::size_t sort_memory = std::size_t{24} << 20;
  /// --min-dur, --filter and --window (a focus does not apply to tables):
  /// the spans table takes all three, marks and counters the filter (by
  /// name) and the window, allocations the window.
  event_selection selection;
  /// --per NAME: when set, every table gains an `iteration` column, the
  /// number of the iteration the row belongs to (iteration_windows::number_of,
  /// from 0; empty outside every iteration).
  const iteration_windows* iterations = nullptr;
};

/// Writes the spans of an opened dump that options.selection keeps as CSV,
/// one row per span in time order (begin, then pid and tid, then depth),
/// with an iteration column after flow_id when options.iterations is set. Each row carries the
/// span's phase, its flow step (the last one when it has several) and the
/// last value of each argument key. Memory: the arguments of the spans
/// still open (span_annotations), one stack of open ancestors per thread, and
/// options.sort_memory of rows; past that, temporary files about the size
/// of the CSV. Returns false on a read or write error (`error` says which).
EDGETRACE_DETAIL_READER_API bool write_spans_csv(dump_reader& r, std::FILE* out, std::uint64_t* rows = nullptr,
                                                 std::string* error = nullptr, const csv_options& options = {});

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <charconv>
#include <iterator>
#include <set>
#include <string_view>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/sinks/csv/sorted_rows.hpp>
#include <edgetrace/decode/span_walker.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// Every argument key of the dump (recorded, not just defined), sorted:
/// the arg:KEY columns. Pass 1 counted them.
inline std::vector<std::string> argument_keys(const dump_reader& r) {
  std::set<std::string> keys;
  for (const auto& w : r.writers()) keys.insert(w.second.annotations_read.keys.begin(), w.second.annotations_read.keys.end());
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

/// Renders one CSV row per span (spans_csv_header's columns, then one per
/// argument key). Caches the site's and the thread's fields, which repeat
/// from one span to the next.
class spans_csv_rows {
 public:
  spans_csv_rows(const dump_reader& r, const std::vector<std::string>& keys, const iteration_windows* iterations)
      : notes_(r, span_order::walk_spans), keys_(keys), iterations_(iterations) {}

  /// Takes `s`'s arguments and flow steps without a row (a span the
  /// selection leaves out keeps them: they never pass to its parent).
  void skip(const span_record& s) {
    notes_.claim(s.thread, s.begin_ns, s.end_ns, [](const annotation&) {}, s.depth == 0);
  }

  /// The row of `s`, line break included; valid until the next call.
  const std::string& row(const span_record& s) {
    if (s.site != last_site_) {
      last_site_ = s.site;
      site_prefix_ = csv_field(s.site->name) + "," + csv_field(s.site->category);
    }
    if (s.thread != last_thread_) {
      last_thread_ = s.thread;
      thread_prefix_ = "," + csv_field(s.thread->name) + "," + std::to_string(s.writer->pid) + "," +
                       std::to_string(s.thread->os_tid) + ",";
    }
    args_.clear();
    flows_.clear();
    notes_.claim(
        s.thread, s.begin_ns, s.end_ns,
        [&](const annotation& a) { (a.type == format::annotation_record::flow ? flows_ : args_).push_back(&a); },
        s.depth == 0);
    line_ = site_prefix_;
    line_ += thread_prefix_;
    number(s.begin_ns);
    line_ += ',';
    number(s.duration());
    line_ += ',';
    number(s.self_ns);
    line_ += ',';
    number(s.depth);
    line_ += ",,,";
    line_ += csv_field(phase_at(*s.writer, s.begin_ns));
    line_ += ',';
    if (!flows_.empty()) {
      line_ += csv_field(flows_.back()->name());
      line_ += ',';
      number(flows_.back()->value);
    } else {
      line_ += ',';
    }
    if (iterations_ != nullptr) {
      line_ += ',';
      if (const std::int64_t n = iterations_->number_of(s.thread, s.begin_ns, s.end_ns); n >= 0) number(n);
    }
    for (const std::string& key : keys_) {
      line_ += ',';
      if (const annotation* a = last_with_key(args_, key)) line_ += csv_field(a->value_text());
    }
    line_ += '\n';
    return line_;
  }

 private:
  template <class Number>
  void number(Number v) {
    char text[24];
    const auto done = std::to_chars(text, text + sizeof text, v);
    line_.append(text, done.ptr);
  }

  span_annotations notes_;
  const std::vector<std::string>& keys_;
  const iteration_windows* iterations_;
  const thread_info* last_thread_ = nullptr;
  std::string thread_prefix_;  // ",thread,pid,tid,"
  const site_info* last_site_ = nullptr;
  std::string site_prefix_;  // "name,category"
  std::vector<const annotation*> args_;
  std::vector<const annotation*> flows_;
  std::string line_;
};

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool write_spans_csv(dump_reader& r, std::FILE* out, std::uint64_t* rows,
                                                 std::string* error, const csv_options& options) {
  if (!r.metadata_read() && !r.read_metadata()) return detail::fail_with(error, r.error());
  const std::vector<std::string> keys = detail::argument_keys(r);
  detail::buffered_output o(out);
  o.write(spans_csv_header);
  if (options.iterations != nullptr) o.write(",iteration");
  for (const std::string& key : keys) o.write("," + detail::csv_field("arg:" + key));
  o.put('\n');
  std::uint64_t count = 0;
  detail::spans_csv_rows rows_of(r, keys, options.iterations);
  detail::sorted_rows sorted(options.sort_memory);
  detail::event_filter filter(options.selection);
  const bool selects = options.selection.selects();
  bool sort_ok = true;
  const bool ok = walk_spans(
      r,
      [&](const span_record& s) {
        if (selects) {
          event e;
          e.kind = event_kind::span;
          e.site = s.site;
          e.begin_ns = s.begin_ns;
          e.end_ns = s.end_ns;
          if (!filter.keep(e)) {
            rows_of.skip(s);
            return;
          }
        }
        const std::string& line = rows_of.row(s);
        sort_ok = sort_ok && sorted.add(detail::row_key{s.begin_ns, s.writer->pid, s.thread->os_tid, s.depth}, line);
        ++count;
      },
      [](const event&) {});
  sort_ok = sort_ok && sorted.finish([&](std::string_view row) { o.write(row); });
  const bool write_ok = o.flush();
  if (rows) *rows = count;
  if (!ok) return detail::fail_with(error, r.error());
  if (!sort_ok) return detail::fail_write(error, "write error (temporary file for sorting rows)");
  if (!write_ok) return detail::fail_write(error);
  return true;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
