// SPDX-License-Identifier: MIT
// Writes a dump as Chrome Trace Event Format JSON (Perfetto UI, chrome://tracing, speedscope, DevTools), streamed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/chrome_json/options.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Converts several opened dumps into one Chrome JSON document on `out`
/// (each shifted by its input's shift_ns), streaming: memory does not
/// depend on the number of events (flow-step spans are held until the end
/// of their input: one entry per EDGETRACE_FLOW step). Runs each reader's
/// pass 2. Returns false when reading or writing failed; then `error` says
/// why.
EDGETRACE_DETAIL_READER_API bool write_chrome_json(const std::vector<chrome_json_input>& inputs, std::FILE* out,
                                                   const chrome_json_options& options,
                                                   chrome_json_result* result = nullptr,
                                                   std::string* error = nullptr,
                                                   const std::string& extra_other_data = {});

/// Converts an opened dump (read_metadata done or not) to Chrome JSON on
/// `out`, streaming: memory does not depend on the number of events. Runs
/// the reader's pass 2. Returns false when reading or writing failed; then
/// `error` says why. Damage in the dump is not a failure: see r.damaged().
///
/// Timestamps: integer ns from the clock model, minus an origin chosen so
/// the earliest event is at ts 1.000 (DevTools drops ts 0), printed as µs
/// with three decimals. A span's dur is end - begin of those integers, so
/// a child that nests in ticks nests in the output; where speedscope's
/// double arithmetic would end a slice past a slice starting at its end,
/// the dur is the double that ends it exactly there (see write_dur).
EDGETRACE_DETAIL_READER_API bool write_chrome_json(dump_reader& r, std::FILE* out,
                                                   const chrome_json_options& options,
                                                   chrome_json_result* result = nullptr,
                                                   std::string* error = nullptr);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <edgetrace/sinks/chrome_json/convert.hpp>
#include <edgetrace/sinks/chrome_json/document.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

EDGETRACE_DETAIL_READER_API bool write_chrome_json(const std::vector<chrome_json_input>& inputs, std::FILE* out,
                                                   const chrome_json_options& options, chrome_json_result* result,
                                                   std::string* error, const std::string& extra_other_data) {
  if (!detail::read_all_metadata(inputs, error)) return false;
  detail::chrome_json_document doc(out, detail::earliest_ns(inputs) - 1000);
  detail::progress_meter progress = detail::json_progress(options, inputs, options.selects() ? 2 : 1);
  // Each track's first slice is known before any is written: from pass 1
  // when every slice is, else from a pass with the selection.
  detail::track_starts starts;
  if (!detail::document_first_slices(inputs, options, progress, starts, error)) return false;
  doc.set_track_starts(starts);
  doc.begin(inputs);
  detail::event_filter filter(options);
  std::uint64_t flow_id = 0;
  bool read_ok = true;
  for (const chrome_json_input& in : inputs) {
    const bool ok = detail::convert_input(
        in, filter, [&](std::int64_t) -> detail::chrome_json_document& { return doc; }, flow_id, progress, error);
    if (doc.result().counters_skipped > 1)
      in.reader->add_diagnostic(diagnostic::severity::note, 0,
                                std::to_string(doc.result().counters_skipped) +
                                    " NaN or infinite counter samples left out in all");
    if (!ok) {
      read_ok = false;
      break;
    }
  }
  const bool write_ok = doc.end(inputs, options, extra_other_data);
  if (result) *result = doc.result();
  if (!read_ok) return false;
  progress.finish();
  if (!write_ok) return detail::fail_write(error);
  return true;
}

EDGETRACE_DETAIL_READER_API bool write_chrome_json(dump_reader& r, std::FILE* out,
                                                   const chrome_json_options& options, chrome_json_result* result,
                                                   std::string* error) {
  chrome_json_input in;
  in.reader = &r;
  return write_chrome_json(std::vector<chrome_json_input>{in}, out, options, result, error);
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES

#include <edgetrace/sinks/chrome_json/split.hpp>  // IWYU pragma: export
