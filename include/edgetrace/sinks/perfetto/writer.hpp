// SPDX-License-Identifier: MIT
// Writes a dump as a Perfetto protobuf trace (TrackEvent), streamed, for Perfetto UI and trace_processor.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/perfetto/proto.hpp>
#include <edgetrace/sinks/selection.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Options of write_perfetto: what to keep (event_selection: min_dur_ns,
/// filter, the window, as for the JSON), and progress.
struct perfetto_options : event_selection {
  /// When set, called with the percentage done (0..100) each time it
  /// changes, and with 100 at the end of a successful conversion.
  std::function<void(unsigned percent)> progress;
  /// Thread events buffered (over all threads) before each thread's are
  /// written as a packet sequence of its own; 0: 1 M. Any value gives the
  /// same trace to a reader; the tests make it small.
  std::size_t thread_segment_events = 0;
  /// When set, the packets are written compressed: in TracePackets whose
  /// `compressed_packets` holds about 384 KiB of packets each, as
  /// `compress(plain, compressed)` gives them (zlib deflate, as Perfetto's
  /// own service writes them; trace_processor and the UI expand them). The
  /// library itself does not link zlib: the CLI passes zlib's compress2.
  std::function<bool(std::string_view plain, std::string& compressed)> compress;
};

/// Converts an opened dump to a Perfetto protobuf trace on `out`.
///
/// Tracks: one per process (pid, name), one per thread (pid, tid, name),
/// one counter track per counter name and memory pool of each process, and
/// a "GPU" process per process with GPU spans, one track per stream. Host spans are
/// begin/end slices on their thread, with their arguments as debug
/// annotations; instants and loss records are instants on the thread;
/// recording changes and phases are instants on the process. EDGETRACE_FLOW
/// steps carry a flow id on their slice begin, so trace_processor links the
/// steps of a flow in time order; a launch's slice starts a flow that the
/// GPU slice it launched terminates. Timestamps are the reader's ns
/// (CLOCK_MONOTONIC), unshifted.
///
/// Threads' events (slices, instants, loss markers) are on packet
/// sequences of their own with incremental timestamps and the thread's
/// track as default, as Perfetto's SDK writes them (perfetto_thread_sequences:
/// 12 bytes an event for dense begin/end pairs); the rest (descriptors,
/// capture markers, counters, memory, GPU) is on sequence 1 with absolute
/// times.
///
/// Streaming: packets are written as the dump is read (a 1 MiB output
/// buffer); what is kept is per thread its open ancestors (see
/// perfetto_host_tracks), the interning tables (one entry per distinct
/// name and category), the tracks, and the thread events not yet written
/// (at most 1 M events or 8 MiB of them). Runs one GPU pass and one backward
/// events pass. Returns false when reading or writing failed; then `error`
/// says why. Damage in the dump is not a failure: see r.damaged().
///
/// `options` selects what is written as for the JSON (min_dur_ns, filter,
/// the window; result->filtered counts what it left out): a span left out
/// keeps its own arguments and flow steps (they never pass to its parent),
/// and a GPU span's launch arrow is drawn only when its launching span is
/// written too.
EDGETRACE_DETAIL_READER_API bool write_perfetto(dump_reader& r, std::FILE* out, const perfetto_options& options,
                                                perfetto_result* result = nullptr, std::string* error = nullptr);

/// Everything, no progress: write_perfetto with default options.
EDGETRACE_DETAIL_READER_API bool write_perfetto(dump_reader& r, std::FILE* out, perfetto_result* result = nullptr,
                                                std::string* error = nullptr);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/device.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/perfetto/host_tracks.hpp>
#include <edgetrace/sinks/perfetto/sequences.hpp>
#include <edgetrace/sinks/perfetto/stream.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// One write_perfetto: the stream, the host tracks, the result and the
/// track ids handed out so far; one member per part of the trace.
class perfetto_conversion {
 public:
  /// `buffer`: the output buffer's bytes; `segment_bytes`: thread events
  /// buffered before a segment is written (0: 8 MiB). A split makes both
  /// smaller, one conversion per file.
  perfetto_conversion(std::FILE* out, const perfetto_options& options, std::uint64_t records,
                      std::size_t buffer = std::size_t{1} << 20, std::size_t segment_bytes = 0)
      : s_(out, buffer),
        threads_(s_, res_, options.thread_segment_events, segment_bytes),
        host_(threads_, res_),
        selection_(options),
        filter_(selection_),
        progress_(options.progress, records) {
    if (options.compress) s_.compress_with(options.compress);
  }

  /// Process and thread tracks.
  void describe_tracks(const dump_reader& r) {
    for (const writer_info* w : r.writers_in_order()) {
      if (!process_track_.emplace(w->pid, next_uuid_).second) continue;
      s_.descriptor(next_uuid_++, 0, static_cast<std::int64_t>(w->pid), -1, w->process_name, false);
    }
    for (const thread_info* t : r.threads_in_order()) {
      const std::uint64_t uuid = next_uuid_++;
      s_.descriptor(uuid, process_track_[t->writer->pid], static_cast<std::int64_t>(t->writer->pid),
                    static_cast<std::int64_t>(t->os_tid), t->name, false);
      host_.add_thread(t, uuid);
    }
    host_.read_annotations(r);
  }

  /// Capture markers: instants on the process track (those at a time
  /// `in_file(ns)` accepts: a split's file takes those in its window).
  template <class InFile>
  void write_capture_markers(const dump_reader& r, InFile&& in_file) {
    for (const writer_info* w : r.writers_in_order()) {
      const std::uint64_t track = process_track_[w->pid];
      for (const recording_change& change : w->recording) {
        if (!in_file(change.ns)) continue;
        const std::string name = change.on ? "edgetrace: recording on" : "edgetrace: recording off";
        s_.event(change.ns, track, perfetto_proto::type_instant, &name, &edgetrace_category_);
        ++res_.capture_markers;
      }
      for (const phase_change& change : w->phases) {
        if (!in_file(change.ns)) continue;
        const std::string name = "phase: " + change.name;
        s_.event(change.ns, track, perfetto_proto::type_instant, &name, &edgetrace_category_);
        ++res_.capture_markers;
      }
    }
  }

  /// Memory pools (EDGETRACE_ALLOC/FREE): a counter track "memory: POOL" of
  /// the process, one sample of live bytes per change, as in the JSON (the
  /// samples `in_file(ns)` accepts).
  template <class InFile>
  void write_memory(const dump_reader& r, InFile&& in_file) {
    const memory_timelines memory(r);
    for (const auto& entry : memory.all()) {
      const memory_timeline& m = entry.second;
      std::vector<std::uint64_t> pool_track(m.pools().size(), 0);
      for (const memory_timeline::point& p : m.points()) {
        if (!in_file(p.ns)) continue;
        if (!filter_.keep_point(p.ns)) {
          ++res_.filtered;
          continue;
        }
        if (pool_track[p.pool] == 0) {
          pool_track[p.pool] = next_uuid_++;
          s_.descriptor(pool_track[p.pool], process_track_[entry.first->pid], -1, -1,
                        "memory: " + m.pools()[p.pool].name, true);
        }
        s_.counter(p.ns, pool_track[p.pool], static_cast<std::int64_t>(p.pool_live));
        ++res_.memory_samples;
      }
    }
  }

  /// The device's tracks (1.9): a counter track of the process per track
  /// ("cpu1 clock (MHz)"), its values as doubles (the samples `in_file(ns)`
  /// accepts).
  template <class InFile>
  void write_device(const dump_reader& r, InFile&& in_file) {
    for (const writer_info* w : r.writers_in_order()) {
      for (const device_series& series : device_series_of(*w)) {
        std::uint64_t track = 0;
        for (const device_series::point& p : series.points) {
          if (!in_file(p.ns)) continue;
          if (!filter_.keep_point(p.ns)) {
            ++res_.filtered;
            continue;
          }
          if (track == 0) {
            track = next_uuid_++;
            s_.descriptor(track, process_track_[w->pid], -1, -1, series.label, true);
          }
          s_.counter(p.ns, track, p.value);
          ++res_.device_samples;
        }
      }
    }
  }

  /// A "GPU" process per writer with GPU spans and a track per stream.
  void describe_gpu(const dump_reader& r) {
    for (const writer_info* w : r.writers_in_order()) {
      if (w->gpu.streams.empty()) continue;
      const std::uint64_t gpu_process = next_uuid_++;
      s_.descriptor(gpu_process, 0, static_cast<std::int64_t>(gpu_pid(w->pid)), -1,
                    "GPU (pid " + std::to_string(w->pid) + ")", false);
      for (const gpu_stream_info* st : w->gpu.sorted_streams()) {
        std::string name = "GPU " + std::to_string(st->device);
        const auto device = w->gpu.devices.find(st->device);
        if (device != w->gpu.devices.end() && !device->second.name.empty()) name += " (" + device->second.name + ")";
        stream_track_[st] = next_uuid_;
        s_.descriptor(next_uuid_++, gpu_process, -1, -1, name + " " + st->label(), false);
      }
    }
  }

  /// A resolved GPU span as a slice on its stream's track when `kept`, the
  /// end of its launch's flow when `launch_kept` (its launching span is
  /// written too).
  void on_gpu(const gpu_span& g, bool kept, bool launch_kept) {
    if (!kept) {
      ++res_.filtered;
      return;
    }
    static const std::string unknown = "(unknown site)", unknown_category = "unknown";
    const std::uint64_t track = stream_track_[g.stream];
    std::vector<std::uint64_t> terminating;
    if (launch_kept && g.thread != nullptr && g.site != nullptr) {
      host_.launch_sites().insert(g.site);
      terminating.push_back(perfetto_launch_id(g.writer->id, g.os_tid, g.host_begin_tick));
      ++res_.launch_flows;
    }
    s_.event(g.begin_ns, track, perfetto_proto::type_slice_begin,
             g.site ? (g.site->name.empty() ? &unknown : &g.site->name) : &unknown,
             g.site ? &g.site->category : &unknown_category, {}, terminating);
    s_.event(g.end_ns, track, perfetto_proto::type_slice_end, nullptr, nullptr);
    ++res_.gpu_slices;
  }

  /// describe_gpu, then the resolved GPU spans as slices (the end of their
  /// launch's flow). False on a read error.
  bool write_gpu(dump_reader& r) {
    describe_gpu(r);
    return r.read_gpu_spans([&](const gpu_span& g) {
      if (g.resolved) on_gpu(g, filter_.keep_gpu(g), g.thread != nullptr && g.site != nullptr && filter_.keep_launch(g));
    });
  }

  /// One host event of the backward pass, `kept` by the selection: a span
  /// to its thread's slices (held when left out), an instant, a counter (a
  /// track per counter name and process), a loss record.
  void on_event(const event& e, bool kept) {
    static const std::string unnamed = "(unnamed)";
    if (e.kind == event_kind::span) return host_.on_span(e, kept);
    if (!kept) {
      ++res_.filtered;
      return;
    }
    switch (e.kind) {
      case event_kind::span: break;
      case event_kind::instant:
        threads_.event(host_.track(e.thread), e.begin_ns, perfetto_proto::type_instant,
                       e.site->name.empty() ? &unnamed : &e.site->name, &e.site->category);
        ++res_.instants;
        break;
      case event_kind::counter: {
        auto found = counter_track_.find({e.writer, e.site});
        if (found == counter_track_.end()) {
          found = counter_track_.emplace(std::make_pair(e.writer, e.site), next_uuid_++).first;
          s_.descriptor(found->second, process_track_[e.writer->pid], -1, -1, e.site->name, true);
        }
        s_.counter(e.begin_ns, found->second, e.value);
        ++res_.counters;
        break;
      }
      case event_kind::loss: {
        const std::string name = "edgetrace: " + std::to_string(e.count) + " records lost";
        threads_.event(host_.track(e.thread), e.begin_ns, perfetto_proto::type_instant, &name, &edgetrace_category_);
        ++res_.loss_markers;
        break;
      }
    }
  }

  /// After the backward pass: the begins still held (when it read whole),
  /// and the thread events still buffered.
  void end_events(bool read_ok) {
    if (read_ok) host_.finish();
    threads_.flush();
  }

  /// The host events, backwards (on_event). False on a read error.
  bool write_events(dump_reader& r) {
    const bool ok = r.read_events_backward([&](const event& e) {
      progress_.tick();
      on_event(e, filter_.keep(e));
    });
    end_events(ok);
    if (ok) progress_.finish();
    return ok;
  }

  /// Flushes the stream; the result with its final counts. False on a
  /// write error.
  bool finish(perfetto_result& result) {
    res_.span_args = s_.args_written();
    const bool ok = s_.flush();
    res_.packets = s_.packets();
    res_.compressed_packets = s_.compressed_packets();
    res_.plain_bytes = s_.plain_bytes();
    result = res_;
    return ok;
  }

 private:
  perfetto_result res_;
  perfetto_stream s_;
  perfetto_thread_sequences threads_;
  perfetto_host_tracks host_;
  std::uint64_t next_uuid_ = 1;
  std::map<std::uint64_t, std::uint64_t> process_track_;  // by pid
  std::map<const gpu_stream_info*, std::uint64_t> stream_track_;
  std::map<std::pair<const writer_info*, const site_info*>, std::uint64_t> counter_track_;
  const std::string edgetrace_category_ = "edgetrace";
  const event_selection& selection_;
  event_filter filter_;
  progress_meter progress_;
};

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool write_perfetto(dump_reader& r, std::FILE* out, const perfetto_options& options,
                                                perfetto_result* result, std::string* error) {
  if (!r.metadata_read() && !r.read_metadata()) return detail::fail_with(error, r.error());
  detail::perfetto_conversion c(out, options, r.event_records());
  c.describe_tracks(r);
  const auto whole = [](std::int64_t) { return true; };
  c.write_capture_markers(r, whole);
  c.write_memory(r, whole);
  c.write_device(r, whole);
  bool ok = !r.has_gpu() || c.write_gpu(r);
  if (ok) ok = c.write_events(r);
  perfetto_result res;
  const bool write_ok = c.finish(res);
  if (result) *result = res;
  if (!ok) return detail::fail_with(error, r.error());
  if (!write_ok) return detail::fail_write(error);
  return true;
}

EDGETRACE_DETAIL_READER_API bool write_perfetto(dump_reader& r, std::FILE* out, perfetto_result* result,
                                                std::string* error) {
  return write_perfetto(r, out, perfetto_options{}, result, error);
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
