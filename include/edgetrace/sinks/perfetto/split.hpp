// SPDX-License-Identifier: MIT
// `perfetto --split-mb`: a dump as several Perfetto traces by time window, each at most N MB of packets as a viewer loads them, in one pass over the events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <edgetrace/sinks/perfetto/writer.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// The most files write_perfetto_split writes for one output (each open
/// file holds about 1 MB of buffers while the pass runs).
inline constexpr std::size_t perfetto_max_parts = 64;

/// One file of a split Perfetto conversion.
struct perfetto_part {
  std::string path;
  std::int64_t from_ns = 0;  ///< window start (CLOCK_MONOTONIC)
  std::int64_t to_ns = 0;    ///< window end (exclusive; the last window includes its end)
  std::uint64_t bytes = 0;   ///< the file's size
  std::uint64_t plain_bytes = 0;  ///< its packets before compression: what a viewer loads
  perfetto_result result;
};

/// Writes an opened dump as several Perfetto traces (OUT-001.pftrace, ...),
/// each covering one time window and each loadable on its own (every
/// process, thread, counter and GPU track described in every file). An
/// event goes to the file of the window it starts in (a GPU span with its
/// launch); a span that runs past its window is written whole there, and
/// a slice nested in it that starts in a later window is in that later
/// file, at the top of its thread. Flows between files are cut.
///
/// The promise: each file holds at most `max_bytes` (10^6 bytes per MB) of
/// packets before compression, the size a viewer loads (the file itself is
/// smaller when options.compress deflates it), and there are at most
/// `max_parts` files. The windows are planned from the kept events per
/// 1/65536 of the time range and a first guess of the bytes an event and an
/// argument take; a try
/// whose files come out bigger is planned again from what each file took
/// (bytes per event of its window) and written again, at most 4 tries. When
/// the promise cannot be kept, returns false with no file left and `error`
/// saying what would do. Passes: one to weigh the events, then one per try
/// (the GPU spans and the events, backward). False also on a read or write
/// error (files of the failed try are removed).
EDGETRACE_DETAIL_READER_API bool write_perfetto_split(dump_reader& r, const std::string& path,
                                                      std::uint64_t max_bytes, const perfetto_options& options,
                                                      std::vector<perfetto_part>& parts,
                                                      std::string* error = nullptr,
                                                      std::size_t max_parts = perfetto_max_parts);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cstdio>
#include <memory>
#include <unordered_map>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/selection.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// The kept events of a dump by the time slice they start in (a span counts
/// 2: its begin and end; a GPU span with its launch), and where the slices are.
struct perfetto_split_plan {
  static constexpr std::size_t slices = std::size_t{1} << 16;
  std::int64_t first = 0, last = 0;
  std::vector<std::uint64_t> weight = std::vector<std::uint64_t>(slices, 0);
  std::vector<double> bytes_per_weight = std::vector<double>(slices, 0);
  std::uint64_t overhead = 0;  ///< per file: descriptors, and the interning of each sequence

  std::size_t slice_of(std::int64_t ns) const {
    ns = std::max(first, std::min(last, ns));
    const long double span = static_cast<long double>(last - first) + 1;
    return std::min(static_cast<std::size_t>(static_cast<long double>(ns - first) / span * slices), slices - 1);
  }
  /// The first ns that slice_of puts in slice `i` or later: the rounding
  /// of the two divisions may disagree by a nanosecond, and a file's
  /// window must end where the next file's events begin.
  std::int64_t slice_ns(std::size_t i) const {
    const long double span = static_cast<long double>(last - first) + 1;
    std::int64_t ns = first + static_cast<std::int64_t>(static_cast<long double>(i) * span / slices);
    while (ns <= last && slice_of(ns) < i) ++ns;
    while (ns > first && slice_of(ns - 1) >= i) --ns;
    return ns;
  }
  /// First slice of each window, greedy in time order, each estimated at
  /// most `max_bytes`; empty when one slice alone does not fit.
  std::vector<std::size_t> pack(std::uint64_t max_bytes) const {
    if (max_bytes <= overhead) return {};
    const double budget = static_cast<double>(max_bytes - overhead);
    std::vector<std::size_t> starts = {0};
    double filled = 0;
    for (std::size_t i = 0; i < slices; ++i) {
      const double b = static_cast<double>(weight[i]) * bytes_per_weight[i];
      if (b > budget) return {};
      if (filled + b > budget) {
        starts.push_back(i);
        filled = 0;
      }
      filled += b;
    }
    return starts;
  }
};

/// Counts the kept events per slice (a forward pass). False on a read error.
inline bool weigh_events(dump_reader& r, const event_selection& selection, perfetto_split_plan& plan,
                         progress_meter& progress) {
  event_filter filter(selection);
  const bool ok = r.read_events([&](const event& e) {
    progress.tick();
    if (filter.keep(e)) plan.weight[plan.slice_of(e.begin_ns)] += e.kind == event_kind::span ? 2 : 1;
  });
  if (ok && r.has_gpu())
    r.read_gpu_spans([&](const gpu_span& g) {
      if (g.resolved && filter.keep_gpu(g)) plan.weight[plan.slice_of(g.host_begin_ns)] += 2;
    });
  return ok;
}

/// The files of one try: a conversion per window, fed by one pass.
class perfetto_split_files {
 public:
  perfetto_split_files(const std::string& path, const perfetto_options& options, const perfetto_split_plan& plan,
                       const std::vector<std::size_t>& starts)
      : plan_(plan), each_(options), window_of_(perfetto_split_plan::slices, 0) {
    for (std::size_t w = 0; w < starts.size(); ++w) {
      const std::size_t end = w + 1 < starts.size() ? starts[w + 1] : perfetto_split_plan::slices;
      std::fill(window_of_.begin() + static_cast<std::ptrdiff_t>(starts[w]),
                window_of_.begin() + static_cast<std::ptrdiff_t>(end), static_cast<std::uint32_t>(w));
      perfetto_part part;
      part.path = numbered_path(path, w + 1);
      part.from_ns = plan.slice_ns(starts[w]);
      part.to_ns = w + 1 < starts.size() ? plan.slice_ns(starts[w + 1]) : plan.last + 1;
      parts_.push_back(part);
    }
    each_.progress = nullptr;
    // Buffered thread events shared out among the files (8 MiB in all, at
    // least 256 KiB each), and a 256 KiB output buffer each.
    const std::size_t segment_bytes = std::max<std::size_t>(std::size_t{256} << 10, (std::size_t{8} << 20) / starts.size());
    each_.thread_segment_events = std::max<std::size_t>(std::size_t{1} << 15, (std::size_t{1} << 20) / starts.size());
    for (perfetto_part& part : parts_) {
      std::FILE* f = std::fopen(part.path.c_str(), "wb");
      files_.push_back(f);
      if (f == nullptr) {
        failed_ = part.path;
        return;
      }
      conversions_.push_back(std::make_unique<perfetto_conversion>(f, each_, 0, std::size_t{256} << 10, segment_bytes));
    }
  }
  perfetto_split_files(const perfetto_split_files&) = delete;
  perfetto_split_files& operator=(const perfetto_split_files&) = delete;
  ~perfetto_split_files() {
    for (std::FILE* f : files_)
      if (f != nullptr) std::fclose(f);
  }

  /// The file that could not be opened ("" when all were).
  const std::string& failed() const noexcept { return failed_; }
  std::vector<perfetto_part>& parts() noexcept { return parts_; }

  /// The whole conversion: every file's tracks and what lies in its window.
  /// A span goes to the file of its begin, and is seen (held, not written)
  /// by the file of each of its ancestors that began in an earlier window,
  /// so that its arguments do not pass to that ancestor there. False on a
  /// read error.
  bool convert(dump_reader& r, const event_selection& selection, progress_meter& progress) {
    event_filter filter(selection);
    for (std::size_t w = 0; w < conversions_.size(); ++w) {
      perfetto_conversion& c = *conversions_[w];
      const auto in_file = [this, w](std::int64_t ns) { return part_of(ns) == w; };
      c.describe_tracks(r);
      c.write_capture_markers(r, in_file);
      c.write_memory(r, in_file);
      c.write_device(r, in_file);
      c.describe_gpu(r);
    }
    if (r.has_gpu() && !r.read_gpu_spans([&](const gpu_span& g) {
          if (g.resolved)
            conversions_[part_of(g.host_begin_ns)]->on_gpu(
                g, filter.keep_gpu(g), g.thread != nullptr && g.site != nullptr && filter.keep_launch(g));
        }))
      return false;
    const bool ok = r.read_events_backward([&](const event& e) {
      progress.tick();
      const bool kept = filter.keep(e);
      const std::size_t part = part_of(e.begin_ns);
      conversions_[part]->on_event(e, kept);
      if (e.kind != event_kind::span || e.thread == nullptr) return;
      // The backward pass hands a parent before its children: the spans
      // still on the thread's stack that hold this one are its ancestors.
      std::vector<ancestor>& stack = ancestors_[e.thread];
      while (!stack.empty() && !(stack.back().begin_ns <= e.begin_ns && stack.back().end_ns >= e.end_ns)) stack.pop_back();
      std::size_t told = part;
      for (auto a = stack.rbegin(); a != stack.rend(); ++a)
        if (a->part < told) conversions_[told = a->part]->on_event(e, false);  // parts only fall going outwards
      stack.push_back(ancestor{e.begin_ns, e.end_ns, part});
    });
    for (auto& c : conversions_) c->end_events(ok);
    return ok;
  }

  /// Flushes and closes every file, filling the parts' results and sizes.
  /// False on a write error (`error` names the file).
  bool finish(std::string* error) {
    bool ok = true;
    for (std::size_t w = 0; w < conversions_.size(); ++w) {
      perfetto_part& part = parts_[w];
      if (!conversions_[w]->finish(part.result) && ok) ok = fail_write(error, part.path + ": write error");
      conversions_[w].reset();
      const long size = std::ftell(files_[w]);
      part.bytes = size > 0 ? static_cast<std::uint64_t>(size) : 0;
      part.plain_bytes = part.result.compressed_packets != 0 ? part.result.plain_bytes : part.bytes;
      if (std::fclose(files_[w]) != 0 && ok) ok = fail_write(error, part.path + ": write error");
      files_[w] = nullptr;
    }
    return ok;
  }

 private:
  std::size_t part_of(std::int64_t ns) const { return window_of_[plan_.slice_of(ns)]; }

  struct ancestor {
    std::int64_t begin_ns, end_ns;
    std::size_t part;
  };

  const perfetto_split_plan& plan_;
  std::unordered_map<const thread_info*, std::vector<ancestor>> ancestors_;  ///< per thread: the spans open around the latest
  perfetto_options each_;  ///< the options every conversion reads (they keep a reference)
  std::vector<std::uint32_t> window_of_;
  std::vector<perfetto_part> parts_;
  std::vector<std::FILE*> files_;
  std::vector<std::unique_ptr<perfetto_conversion>> conversions_;
  std::string failed_;
};

/// Why `max_bytes` a file cannot be kept, and what to do instead.
inline std::string perfetto_split_refusal(const perfetto_split_plan& plan, std::uint64_t max_bytes,
                                          std::size_t needed, std::size_t max_parts) {
  char text[320];
  if (needed == 0)
    std::snprintf(text, sizeof text,
                  "cannot split into files of at most %.1f MB: the events of one 1/65536 of the time range (or one "
                  "file's tracks, %.1f MB) do not fit; nothing written. Use a larger --split-mb, or leave events out "
                  "with --min-dur, --filter or --window",
                  static_cast<double>(max_bytes) / 1e6, static_cast<double>(plan.overhead) / 1e6);
  else
    std::snprintf(text, sizeof text,
                  "cannot split into files of at most %.1f MB: it needs about %zu files, more than the limit of %zu; "
                  "nothing written. Use --split-mb %llu or more, or leave events out with --min-dur, --filter or "
                  "--window",
                  static_cast<double>(max_bytes) / 1e6, needed, max_parts,
                  static_cast<unsigned long long>((max_bytes * needed / max_parts) / 1000000 + 1));
  return text;
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool write_perfetto_split(dump_reader& r, const std::string& path,
                                                      std::uint64_t max_bytes, const perfetto_options& options,
                                                      std::vector<perfetto_part>& parts, std::string* error,
                                                      std::size_t max_parts) {
  parts.clear();
  if (!r.metadata_read() && !r.read_metadata()) return detail::fail_with(error, r.error());
  detail::perfetto_split_plan plan;
  plan.first = r.has_events() ? r.first_ns() : 0;
  plan.last = r.has_events() ? std::max(r.last_ns(), plan.first) : plan.first;
  constexpr int max_tries = 4;
  // Two passes when the first try fits (a later try stays at 99 %).
  detail::progress_meter progress(options.progress, r.event_records() * 2);
  if (!detail::weigh_events(r, options, plan, progress)) return detail::fail_with(error, r.error());
  // The first guess: 12.5 bytes an event (dense begin/end pairs take 12)
  // and 12 an argument or flow step (what 8 M spans with an argument each
  // take), spread evenly, and a tenth to spare.
  std::uint64_t weight = 0, notes = 0;
  for (std::uint64_t w : plan.weight) weight += w;
  for (const auto& w : r.writers()) notes += w.second.annotations_read.span_notes();
  const double guess = 1.1 * (12.5 + (weight != 0 ? 12.0 * static_cast<double>(notes) / static_cast<double>(weight) : 0));
  std::fill(plan.bytes_per_weight.begin(), plan.bytes_per_weight.end(), guess);
  plan.overhead = 4096 + 256 * r.threads_in_order().size();
  auto remove_all = [](const std::vector<perfetto_part>& written) {
    for (const perfetto_part& part : written) std::remove(part.path.c_str());
  };
  for (int attempt = 0; attempt < max_tries; ++attempt) {
    const std::vector<std::size_t> starts = plan.pack(max_bytes);
    if (starts.empty() || starts.size() > max_parts)
      return detail::fail_with(error, detail::perfetto_split_refusal(plan, max_bytes, starts.size(), max_parts));
    detail::perfetto_split_files files(path, options, plan, starts);
    if (!files.failed().empty()) {
      files.finish(nullptr);
      remove_all(files.parts());
      return detail::fail_write(error, files.failed() + ": cannot write");
    }
    const bool read_ok = files.convert(r, options, progress);
    const bool write_ok = files.finish(error);
    parts = files.parts();
    if (!read_ok || !write_ok) {
      remove_all(parts);
      parts.clear();
      return read_ok ? false : detail::fail_with(error, r.error());
    }
    if (std::all_of(parts.begin(), parts.end(), [&](const perfetto_part& p) { return p.plain_bytes <= max_bytes; })) {
      progress.finish();
      return true;
    }
    // Plan again: each window's slices at the bytes per event its file
    // took (the file's tracks counted once), with a tenth to spare.
    std::uint64_t smallest = parts.front().plain_bytes;
    for (const perfetto_part& part : parts) smallest = std::min(smallest, part.plain_bytes);
    plan.overhead = std::max(plan.overhead, std::min(smallest, max_bytes / 4));
    for (std::size_t w = 0; w < parts.size(); ++w) {
      const std::size_t begin = starts[w], end = w + 1 < starts.size() ? starts[w + 1] : detail::perfetto_split_plan::slices;
      std::uint64_t weight = 0;
      for (std::size_t i = begin; i < end; ++i) weight += plan.weight[i];
      const double events_bytes = static_cast<double>(parts[w].plain_bytes > plan.overhead ? parts[w].plain_bytes - plan.overhead : 0);
      const double per = weight != 0 ? 1.1 * events_bytes / static_cast<double>(weight) : 16.0;
      for (std::size_t i = begin; i < end; ++i) plan.bytes_per_weight[i] = std::max(per, 1.0);
    }
    remove_all(parts);
    parts.clear();
  }
  return detail::fail_with(error, "cannot split into files of at most " + std::to_string(max_bytes / 1000000) +
                                      " MB: after " + std::to_string(max_tries) +
                                      " tries a file was still bigger; nothing written. Use a larger --split-mb");
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
