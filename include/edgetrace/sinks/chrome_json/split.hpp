// SPDX-License-Identifier: MIT
// `json --split-mb`: a dump as several Chrome JSON files by time window, each within a size measured before any is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <edgetrace/sinks/chrome_json/options.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// The most files write_chrome_json_split writes for one output.
inline constexpr std::size_t chrome_json_max_parts = 256;

/// One file of a split conversion.
struct chrome_json_part {
  std::string path;
  std::int64_t from_ns = 0;  ///< window start (CLOCK_MONOTONIC of the first input, shifted)
  std::int64_t to_ns = 0;    ///< window end (exclusive; the last window includes its end)
  std::uint64_t bytes = 0;   ///< the file's size
  chrome_json_result result;
};

/// Path of part `index` (1-based) of `path`: "run.json" -> "run-001.json".
EDGETRACE_DETAIL_READER_API std::string chrome_json_part_path(const std::string& path, std::size_t index);

/// Writes the dumps as several JSON documents, each covering one time
/// window (an event goes to the window holding its start; a GPU span to its
/// launch's) and each loadable on its own (all process and thread metadata
/// in every file). The promise, refused before any file is written when it
/// cannot be kept:
///  * every file is at most `max_bytes` (10^6 bytes per MB), metadata and
///    trailer included;
///  * at most `max_parts` files (chrome_json_max_parts by default);
///  * windows are filled in time order, so each file but the last is
///    nearly full.
/// A first pass renders the whole conversion into a document that only
/// counts bytes, per 1/2^20 of the time range (a dur at its exact length
/// wherever a file's own first slice may need it: count_local_durs); the
/// next finds each file's first slices, the last writes the files. A file
/// that still came out over `max_bytes` has its window's count scaled by
/// what it took, and the files are planned and written again (at most 4
/// tries).
/// When more than `max_parts` files, or more than `max_bytes` in one slice,
/// would be needed, returns false with nothing written and `error` saying
/// which --split-mb would do (or to leave events out with --min-dur or
/// --filter). Also false on a read or write error (files written so far
/// are left for the caller to remove). Memory: 12 MB of slice tables, plus
/// what write_chrome_json needs.
EDGETRACE_DETAIL_READER_API bool write_chrome_json_split(const std::vector<chrome_json_input>& inputs,
                                                         const std::string& path, std::uint64_t max_bytes,
                                                         const chrome_json_options& options,
                                                         std::vector<chrome_json_part>& parts,
                                                         std::string* error = nullptr,
                                                         std::size_t max_parts = chrome_json_max_parts);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include <edgetrace/sinks/chrome_json/convert.hpp>
#include <edgetrace/sinks/chrome_json/document.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

EDGETRACE_DETAIL_READER_API std::string chrome_json_part_path(const std::string& path, std::size_t index) {
  return detail::numbered_path(path, index);
}

namespace detail {

/// The JSON bytes of every event by the time slice it starts in, measured
/// by rendering the whole conversion once into a document that only counts.
struct split_sizes {
  static constexpr std::size_t slices = std::size_t{1} << 20;
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::vector<std::uint64_t> bytes;  ///< per slice
  std::uint64_t total = 0;           ///< all events
  std::uint64_t overhead = 0;        ///< per file: header, metadata, trailer

  std::size_t slice_of(std::int64_t ns) const {
    ns = std::max(first, std::min(last, ns));
    const long double span = static_cast<long double>(last - first) + 1;
    const auto i = static_cast<std::size_t>(static_cast<long double>(ns - first) / span * slices);
    return std::min(i, slices - 1);
  }
  std::int64_t slice_ns(std::size_t i) const {
    const long double span = static_cast<long double>(last - first) + 1;
    return first + static_cast<std::int64_t>(std::ceil(static_cast<long double>(i) * span / slices));
  }

  /// Windows (first slice of each) when each file may hold `max_bytes`:
  /// greedy in time order. Empty when one slice alone does not fit.
  std::vector<std::size_t> pack(std::uint64_t max_bytes) const {
    std::vector<std::size_t> starts;
    if (max_bytes <= overhead) return starts;
    const std::uint64_t budget = max_bytes - overhead;
    starts.push_back(0);
    std::uint64_t filled = 0;
    for (std::size_t i = 0; i < slices; ++i) {
      if (bytes[i] > budget) return {};
      if (filled + bytes[i] > budget) {
        starts.push_back(i);
        filled = 0;
      }
      filled += bytes[i];
    }
    return starts;
  }

  /// The smallest whole number of MB whose packing needs at most `limit`
  /// files (binary search: the count only falls as files grow).
  std::uint64_t smallest_mb(std::size_t limit) const {
    std::uint64_t lo = 1, hi = 1;
    auto fits = [&](std::uint64_t mb) {
      const auto starts = pack(mb * 1000000);
      return !starts.empty() && starts.size() <= limit;
    };
    while (!fits(hi)) hi *= 2;
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (fits(mid)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
};

inline std::string megabytes_text(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

/// Pass A of the split: renders the whole conversion into a document that
/// only counts, and fills `sizes` (per-slice bytes, total, per-file
/// overhead). False on a read error.
inline bool measure_split(const std::vector<chrome_json_input>& inputs, const chrome_json_options& options,
                          std::int64_t origin, std::size_t max_parts, progress_meter& progress, split_sizes& sizes,
                          std::string* error) {
  // doc_for() is called before each event is written: it settles the
  // previous one.
  chrome_json_document counter(nullptr, origin, 64u << 10);
  // Durs as long as a file writes them: exact where either a track that
  // starts near the slice (a file's own first slice) or the whole
  // document's needs it. A file may still come out a little apart from
  // this count: write_chrome_json_split checks, and plans again.
  counter.count_local_durs();
  track_starts starts;  // the split's files are within their size: nothing to tell
  if (!document_first_slices(inputs, options, progress, starts, error, false)) return false;
  counter.set_track_starts(starts);
  counter.begin(inputs);
  const std::uint64_t header = counter.bytes();
  std::size_t pending = split_sizes::slices;
  std::uint64_t mark = header;
  auto settle = [&] {
    if (pending < split_sizes::slices) sizes.bytes[pending] += counter.bytes() - mark;
    mark = counter.bytes();
    pending = split_sizes::slices;
  };
  auto doc_for = [&](std::int64_t ns) -> chrome_json_document& {
    settle();
    pending = sizes.slice_of(ns);
    return counter;
  };
  event_filter filter(options);
  std::uint64_t flow_id = 0;
  for (const chrome_json_input& in : inputs)
    if (!convert_input(in, filter, doc_for, flow_id, progress, error)) return false;
  settle();
  sizes.total = counter.bytes() - header;
  // The trailer with the longest part numbers, and room for diagnostics
  // that a part may add (one NaN-counter note each).
  char extra[64];
  std::snprintf(extra, sizeof extra, ",\"part\":%zu,\"parts\":%zu", max_parts, max_parts);
  const std::uint64_t before_end = counter.bytes();
  counter.end(inputs, options, extra);
  sizes.overhead = header + (counter.bytes() - before_end) + 256;
  return true;
}

/// Why `max_bytes` per file cannot be kept, and which --split-mb would do.
inline std::string split_refusal(const split_sizes& sizes, const std::vector<std::size_t>& window_start,
                                 std::uint64_t max_bytes, std::size_t max_parts) {
  const std::uint64_t mb = sizes.smallest_mb(max_parts);
  std::uint64_t largest = 0;
  for (std::uint64_t b : sizes.bytes) largest = std::max(largest, b);
  std::string why;
  if (max_bytes <= sizes.overhead)
    why = "one file's metadata alone takes " + megabytes_text(sizes.overhead);
  else if (window_start.empty())
    why = megabytes_text(largest) + " of events start within one 1/1048576 of the time range";
  else
    why = "the JSON takes " + megabytes_text(sizes.total) + ": " + std::to_string(window_start.size()) +
          " files of at most " + megabytes_text(max_bytes) + ", more than the limit of " + std::to_string(max_parts);
  return "cannot split into files of at most " + megabytes_text(max_bytes) + ": " + why +
         "; nothing written. Use --split-mb " + std::to_string(mb) +
         " or more, or leave events out with --min-dur or --filter";
}

/// Pass B of the split: opens one file per window, converts every input
/// into them, ends and closes each. False on a read or write error (the
/// first one is in `error`).
inline bool write_split_files(const std::vector<chrome_json_input>& inputs, const std::string& path,
                              const chrome_json_options& options, const split_sizes& sizes, std::int64_t origin,
                              const std::vector<std::size_t>& window_start, progress_meter& progress,
                              std::vector<chrome_json_part>& parts, std::string* error) {
  const std::size_t count = window_start.size();
  std::vector<std::uint32_t> window_of(split_sizes::slices, 0);
  for (std::size_t w = 0; w < count; ++w) {
    const std::size_t end = w + 1 < count ? window_start[w + 1] : split_sizes::slices;
    std::fill(window_of.begin() + static_cast<std::ptrdiff_t>(window_start[w]),
              window_of.begin() + static_cast<std::ptrdiff_t>(end), static_cast<std::uint32_t>(w));
  }
  auto part_of = [&](std::int64_t ns) { return static_cast<std::size_t>(window_of[sizes.slice_of(ns)]); };
  std::vector<track_starts> starts;
  if (!kept_first_slices(inputs, options, count, part_of, progress, starts, error)) return false;
  std::vector<std::FILE*> files(count, nullptr);
  std::vector<std::unique_ptr<chrome_json_document>> docs(count);
  bool ok = true;
  for (std::size_t w = 0; w < count && ok; ++w) {
    chrome_json_part part;
    part.path = chrome_json_part_path(path, w + 1);
    part.from_ns = sizes.slice_ns(window_start[w]);
    part.to_ns = w + 1 < count ? sizes.slice_ns(window_start[w + 1]) : sizes.last + 1;
    parts.push_back(part);
    files[w] = std::fopen(part.path.c_str(), "wb");
    if (!files[w]) {
      ok = fail_write(error, part.path + ": cannot write");
      break;
    }
    docs[w] = std::make_unique<chrome_json_document>(files[w], origin, 256u << 10);
    docs[w]->set_track_starts(starts[w]);
    docs[w]->begin(inputs);
  }
  if (ok) {
    event_filter filter(options);
    std::uint64_t flow_id = 0;
    auto doc_for = [&](std::int64_t ns) -> chrome_json_document& { return *docs[window_of[sizes.slice_of(ns)]]; };
    for (const chrome_json_input& in : inputs)
      if (!convert_input(in, filter, doc_for, flow_id, progress, error)) {
        ok = false;
        break;
      }
  }
  for (std::size_t w = 0; w < count; ++w) {
    if (docs[w]) {
      char extra[64];
      std::snprintf(extra, sizeof extra, ",\"part\":%zu,\"parts\":%zu", w + 1, count);
      if (!docs[w]->end(inputs, options, extra) && ok) ok = fail_write(error, parts[w].path + ": write error");
      parts[w].result = docs[w]->result();
      parts[w].bytes = docs[w]->bytes();
      docs[w].reset();  // its last flush must reach the file before fclose, never after
    }
    if (files[w] && std::fclose(files[w]) != 0 && ok) ok = fail_write(error, parts[w].path + ": write error");
  }
  return ok;
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool write_chrome_json_split(const std::vector<chrome_json_input>& inputs,
                                                         const std::string& path, std::uint64_t max_bytes,
                                                         const chrome_json_options& options,
                                                         std::vector<chrome_json_part>& parts, std::string* error,
                                                         std::size_t max_parts) {
  parts.clear();
  if (!detail::read_all_metadata(inputs, error)) return false;
  detail::split_sizes sizes;
  sizes.first = detail::earliest_ns(inputs);
  sizes.last = sizes.first;
  for (const chrome_json_input& in : inputs)
    if (in.reader->has_events()) sizes.last = std::max(sizes.last, in.reader->last_ns() + in.shift_ns);
  sizes.bytes.assign(detail::split_sizes::slices, 0);
  detail::progress_meter progress = detail::json_progress(options, inputs, options.selects() ? 4 : 3);
  const std::int64_t origin = sizes.first - 1000;
  if (!detail::measure_split(inputs, options, origin, max_parts, progress, sizes, error)) return false;
  // A file's durs are exact against its own first slices (speedscope), so
  // its size may differ a little from the count: when a file is over
  // max_bytes, each window's slices are scaled by what its file took over
  // its count, and the windows packed again.
  for (int attempt = 0; attempt < 4; ++attempt) {
    const std::vector<std::size_t> window_start = sizes.pack(max_bytes);
    if (window_start.empty() || window_start.size() > max_parts)
      return error ? detail::fail_with(error, detail::split_refusal(sizes, window_start, max_bytes, max_parts)) : false;
    if (!detail::write_split_files(inputs, path, options, sizes, origin, window_start, progress, parts, error))
      return false;
    if (std::all_of(parts.begin(), parts.end(), [&](const chrome_json_part& p) { return p.bytes <= max_bytes; })) {
      progress.finish();
      return true;
    }
    for (std::size_t w = 0; w < parts.size(); ++w) {
      const std::size_t begin = window_start[w];
      const std::size_t end = w + 1 < window_start.size() ? window_start[w + 1] : detail::split_sizes::slices;
      std::uint64_t counted = sizes.overhead;
      for (std::size_t i = begin; i < end; ++i) counted += sizes.bytes[i];
      const double ratio = 1.002 * static_cast<double>(parts[w].bytes) / static_cast<double>(counted);
      if (ratio > 1)
        for (std::size_t i = begin; i < end; ++i)
          sizes.bytes[i] = static_cast<std::uint64_t>(std::ceil(static_cast<double>(sizes.bytes[i]) * ratio));
      std::remove(parts[w].path.c_str());
    }
    parts.clear();
  }
  return detail::fail_with(error, "cannot split into files of at most " + detail::megabytes_text(max_bytes) +
                                      ": after 4 tries a file was still bigger; nothing written. Use a larger --split-mb");
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
