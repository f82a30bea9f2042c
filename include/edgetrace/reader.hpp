// SPDX-License-Identifier: MIT
// The offline side in one include: streaming dump reader, clock model, and every output (JSON, Perfetto protobuf, info, summary, CSV, diff, merge, report).
//
// Layout: the reader (decoding) in include/edgetrace/decode/, its internals
// in decode/detail/; the outputs in include/edgetrace/sinks/, one folder per
// format with several parts (chrome_json/, perfetto/, summary/). Internals
// are in namespace edgetrace::reader::detail; nothing there is part of the
// surface.
//
// Error convention (the one convention of the reader and every sink):
// - an entry point that reads a dump or writes an output returns bool
//   (false = reading or writing failed); a free function takes an optional
//   `std::string* error`, an object (dump_reader, dump_follower) keeps it in
//   error(); either way it is one line: no prefix, no newline, fit for
//   "edgetrace: error: <file>: <what>";
// - damage inside a dump is not a failure: it is counted and described
//   (dump_reader::damaged(), diagnostics()) and reading goes on;
// - decoders return an enum (detail::decode_error, detail::probe_result);
//   a field or record read that can only succeed or be malformed returns
//   bool (detail::payload_cursor);
// - no exceptions, no printing from library code.
//
// The stable surface, for tools written on the reader (namespace
// edgetrace::reader; everything else may change between releases):
// - dump_reader (decode/dump_reader.hpp): open(), read_metadata(),
//   read_events(), read_events_backward(), read_gpu_spans(),
//   for_each_chunk(), and its queries (writers_in_order(),
//   threads_in_order(), stats(), diagnostics(), damaged(), first_ns(), ...);
// - the model (decode/model.hpp): writer_info, thread_info, site_info,
//   event, gpu_span, annotation, recording_change, phase_change,
//   diagnostic, read_stats, and the clock models they hold (clock_model,
//   gpu_clock) and snapshot_record;
// - span structure (decode/span_walker.hpp: walk_spans, span_record),
//   annotations put to use (decode/annotations.hpp), the live follower
//   (decode/follow.hpp: dump_follower);
// - the sinks' entry points and their options structs: write_chrome_json
//   (and _split), write_perfetto (and _split), write_info, write_spans_csv,
//   write_csv_table, summary_builder and summary_table/_csv/_json,
//   diff_summaries and diff_table/_csv/_json, plan_merge and
//   write_merged_dump, report_html and report_device_html,
//   explain_slow_iterations, focus_slowest, top_window, and name_pattern
//   (the name filters, a compiled regular expression).
// Pointers handed out (event::site, thread_info::writer, ...) stay valid as
// long as the dump_reader lives and is not opened again.
//
// Compiled once: with EDGETRACE_SEPARATE_READER=1 (CMake: link
// edgetrace::reader) this header declares all of the above and the library
// defines it; every header puts its bodies after
// `#if EDGETRACE_DETAIL_READER_BODIES`, so a tool's TU parses no output's
// code and no <regex>. Header-only (the default) it is all inline.
//
// Example: the ten longest spans of a dump.
//
//     #include <edgetrace/reader.hpp>
//     namespace er = edgetrace::reader;
//     er::dump_reader r;
//     if (!r.open(path) || !r.read_metadata()) return fail(r.error());
//     std::vector<er::event> longest;
//     bool ok = r.read_events([&](const er::event& e) {
//       if (e.kind == er::event_kind::span) longest.push_back(e);
//     });
//     // sort by e.end_ns - e.begin_ns, print e.site->name, e.thread->os_tid
//     if (r.damaged()) ...  // some data was lost: r.diagnostics() says where
#pragma once

#include <edgetrace/config.hpp>  // first: it stops a pre-C++17 build with one message
#include <edgetrace/decode/clock_model.hpp>
#include <edgetrace/decode/device.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/follow.hpp>
#include <edgetrace/decode/gpu_clock.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/decode/snapshot.hpp>
#include <edgetrace/decode/span_walker.hpp>
#include <edgetrace/sinks/chrome_json/writer.hpp>
#include <edgetrace/sinks/csv/spans.hpp>
#include <edgetrace/sinks/csv/tables.hpp>
#include <edgetrace/sinks/diff.hpp>
#include <edgetrace/sinks/info.hpp>
#include <edgetrace/sinks/latency.hpp>
#include <edgetrace/sinks/merge.hpp>
#include <edgetrace/sinks/perfetto/protobuf.hpp>
#include <edgetrace/sinks/perfetto/split.hpp>
#include <edgetrace/sinks/perfetto/writer.hpp>
#include <edgetrace/sinks/report.hpp>
#include <edgetrace/sinks/report_device.hpp>
#include <edgetrace/sinks/selection.hpp>
#include <edgetrace/sinks/summary/format.hpp>
#include <edgetrace/sinks/summary/json.hpp>
#include <edgetrace/sinks/summary/slow_iterations.hpp>
#include <edgetrace/sinks/summary/summary.hpp>
#include <edgetrace/sinks/top.hpp>
