// SPDX-License-Identifier: MIT
// The Chrome JSON conversion's pass over one input: filters, progress, and events to the document(s) they belong in (internal to chrome_json/writer.hpp and chrome_json/split.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/chrome_json/document.hpp>
#include <edgetrace/sinks/chrome_json/flows.hpp>
#include <edgetrace/sinks/chrome_json/options.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/selection.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// The progress of a conversion over `inputs`, read `passes` times.
inline progress_meter json_progress(const chrome_json_options& options, const std::vector<chrome_json_input>& inputs,
                                    unsigned passes) {
  std::uint64_t total = 0;
  for (const chrome_json_input& in : inputs) total += in.reader->event_records();
  return progress_meter(options.progress, total * passes);
}

/// Converts one input's events, annotations and GPU spans into the
/// document(s) `doc_for(ns)` picks for each (shifted) time. Runs the
/// reader's pass 2. Returns false on a read error (`error` says why).
template <class DocFor>
bool convert_input(const chrome_json_input& in, event_filter& filter, DocFor&& doc_for, std::uint64_t& flow_id,
                   progress_meter& progress, std::string* error) {
  dump_reader& r = *in.reader;
  const writer_info* last_writer = nullptr;
  std::uint64_t pid = 0;
  json_annotations notes(r);
  const bool ok = r.read_events([&](const event& e) {
    progress.tick();
    const bool keep = filter.keep(e);
    const std::vector<const annotation*>& args = e.kind == event_kind::span ? notes.on_span(e, keep) : notes.none();
    chrome_json_document& doc = doc_for(e.begin_ns + in.shift_ns);
    if (!keep) {
      ++doc.result().filtered;
      return;
    }
    if (e.writer != last_writer) {
      last_writer = e.writer;
      pid = in.pid(*e.writer);
    }
    if (e.kind == event_kind::span && notes.hold(e, pid)) return;  // written by finish(), with its flow fields
    doc.write(e, pid, in.shift_ns, r, args);
  });
  if (!ok) return fail_with(error, r.error());
  if (!notes.finish(in, r, doc_for, [&filter](std::int64_t ns) { return filter.keep_point(ns); }, flow_id))
    return fail_with(error, "flow steps: a temporary file could not be read back (is $TMPDIR, else /tmp, writable?)");
  // A GPU span goes with its launch: to the document of the host span.
  if (r.has_gpu())
    r.read_gpu_spans([&](const gpu_span& g) {
      if (!g.resolved) return;
      chrome_json_document& doc = doc_for(g.host_begin_ns + in.shift_ns);
      if (!filter.keep_gpu(g)) {
        ++doc.result().filtered;
        return;
      }
      doc.write_gpu(g, in.pid(*g.writer), in.shift_ns, g.thread != nullptr && filter.keep_launch(g));
    });
  return true;
}

/// Where each track's first slice begins in each file when a selection
/// leaves events out or a split divides them (first_slices knows only
/// where the first of all slices begins): one forward pass over each
/// input's events and GPU spans, kept by the selection's rules.
/// `part_of(ns)` is the file (< `parts`) of an event that starts at ns, a
/// GPU span going with its launch, as convert_input sends them. False on a
/// read error.
template <class PartOf>
bool kept_first_slices(const std::vector<chrome_json_input>& inputs, const event_selection& selection,
                       std::size_t parts, PartOf&& part_of, progress_meter& progress, std::vector<track_starts>& out,
                       std::string* error, std::uint64_t* kept_records = nullptr, std::uint64_t* read_records = nullptr) {
  out.assign(parts, {});
  event_filter filter(selection);
  std::uint64_t kept = 0, read = 0;
  auto note = [&out](std::size_t part, std::uint64_t pid, std::uint64_t tid, std::int64_t ns) {
    const auto known = out[part].emplace(std::make_pair(pid, tid), ns).first;
    known->second = std::min(known->second, ns);
  };
  for (const chrome_json_input& in : inputs) {
    dump_reader& r = *in.reader;
    const bool ok = r.read_events([&](const event& e) {
      progress.tick();
      ++read;
      if (!filter.keep(e)) return;
      ++kept;
      if (e.kind != event_kind::span || e.thread == nullptr) return;
      const std::int64_t ns = e.begin_ns + in.shift_ns;
      note(part_of(ns), in.pid(*e.writer), e.thread->os_tid, ns);
    });
    if (!ok) return fail_with(error, r.error());
    if (r.has_gpu())
      r.read_gpu_spans([&](const gpu_span& g) {
        if (g.resolved && filter.keep_gpu(g))
          note(part_of(g.host_begin_ns + in.shift_ns), gpu_pid(in.pid(*g.writer)), g.stream->id, g.begin_ns + in.shift_ns);
      });
  }
  if (kept_records) *kept_records = kept;
  if (read_records) *read_records = read;
  return true;
}

/// Each track's first slice in one document of everything `options`
/// keeps: from pass 1 when it keeps every slice (no pass), else from
/// kept_first_slices; with a selection and `tell`, options.selected hears
/// the records kept and read. False on a read error.
inline bool document_first_slices(const std::vector<chrome_json_input>& inputs, const chrome_json_options& options,
                                  progress_meter& progress, track_starts& out, std::string* error, bool tell = true) {
  if (!options.selects()) {
    out = first_slices(inputs);
    return true;
  }
  std::vector<track_starts> starts;
  std::uint64_t kept = 0, read = 0;
  if (!kept_first_slices(inputs, options, 1, [](std::int64_t) { return std::size_t{0}; }, progress, starts, error,
                         &kept, &read))
    return false;
  out = std::move(starts[0]);
  if (tell && options.selected) options.selected(kept, read);
  return true;
}

/// Reads every input's metadata (pass 1) when not done yet.
inline bool read_all_metadata(const std::vector<chrome_json_input>& inputs, std::string* error) {
  for (const chrome_json_input& in : inputs)
    if (!in.reader->metadata_read() && !in.reader->read_metadata()) return fail_with(error, in.reader->error());
  return true;
}

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
