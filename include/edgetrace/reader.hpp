// SPDX-License-Identifier: MIT
// The offline side in one include: streaming dump reader, clock model, and every output (JSON, Perfetto protobuf, info, summary, CSV, diff, merge, report).
//
// Layout: reader internals live in include/edgetrace/reader/detail/,
// namespace edgetrace::reader::detail; nothing there is part of the surface.
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
// - dump_reader (reader/dump_reader.hpp): open(), read_metadata(),
//   read_events(), read_events_backward(), read_gpu_spans(),
//   for_each_chunk(), and its queries (writers_in_order(),
//   threads_in_order(), stats(), diagnostics(), damaged(), first_ns(), ...);
// - the model (reader/model.hpp): writer_info, thread_info, site_info,
//   event, gpu_span, annotation, recording_change, phase_change,
//   diagnostic, read_stats, and the clock models they hold (clock_model,
//   gpu_clock) and snapshot_record;
// - span structure (reader/span_walker.hpp: walk_spans, span_record),
//   annotations put to use (reader/annotations.hpp), the live follower
//   (reader/follow.hpp: dump_follower);
// - the sinks' entry points and their options structs: write_chrome_json,
//   write_perfetto, write_info, write_spans_csv, summary_builder and
//   summary_table/_csv/_json, diff_summaries, plan_merge and
//   write_merged_dump, report_html.
// Pointers handed out (event::site, thread_info::writer, ...) stay valid as
// long as the dump_reader lives and is not opened again.
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

#include "config.hpp"  // first: it stops a pre-C++17 build with one message
#include "reader/chrome_json.hpp"
#include "reader/clock_model.hpp"
#include "reader/csv.hpp"
#include "reader/diff.hpp"
#include "reader/dump_reader.hpp"
#include "reader/follow.hpp"
#include "reader/gpu_clock.hpp"
#include "reader/info.hpp"
#include "reader/latency.hpp"
#include "reader/merge.hpp"
#include "reader/model.hpp"
#include "reader/perfetto.hpp"
#include "reader/protobuf_writer.hpp"
#include "reader/report.hpp"
#include "reader/snapshot.hpp"
#include "reader/span_walker.hpp"
#include "reader/summary.hpp"
#include "reader/top.hpp"
