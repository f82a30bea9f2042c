// SPDX-License-Identifier: MIT
// The Chrome JSON conversion's pass over one input: filters, progress, and events to the document(s) they belong in (internal to chrome_json.hpp and its split).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/chrome_json/document.hpp>
#include <edgetrace/sinks/chrome_json/flows.hpp>
#include <edgetrace/sinks/chrome_json/options.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Applies chrome_json_options' filters; caches the regex verdict per site.
class json_event_filter {
 public:
  explicit json_event_filter(const chrome_json_options& options) : options_(options) {}
  bool keep(const event& e) {
    if (e.kind == event_kind::loss) return true;
    if (e.kind == event_kind::span && options_.min_dur_ns != 0 &&
        static_cast<std::uint64_t>(e.end_ns - e.begin_ns) < options_.min_dur_ns)
      return false;
    if (!options_.filter) return true;
    if (e.site == last_site_) return last_verdict_;
    auto it = verdicts_.find(e.site);
    if (it == verdicts_.end()) it = verdicts_.emplace(e.site, std::regex_search(e.site->name, *options_.filter)).first;
    last_site_ = e.site;
    last_verdict_ = it->second;
    return it->second;
  }
  /// Is the host span that launched `g` in the output?
  bool keep_launch(const gpu_span& g) { return keep_span(g.site, g.host_begin_ns, g.host_end_ns); }
  /// Is `g` itself (resolved) in the output? Same rules as for host spans.
  bool keep_gpu(const gpu_span& g) { return keep_span(g.site, g.begin_ns, g.end_ns); }

 private:
  bool keep_span(const site_info* site, std::int64_t begin_ns, std::int64_t end_ns) {
    if (site == nullptr) return !options_.filter;
    event e;
    e.kind = event_kind::span;
    e.site = site;
    e.begin_ns = begin_ns;
    e.end_ns = end_ns;
    return keep(e);
  }

  const chrome_json_options& options_;
  std::map<const site_info*, bool> verdicts_;
  const site_info* last_site_ = nullptr;
  bool last_verdict_ = true;
};

/// Counts records read over all passes and reports whole percents to
/// chrome_json_options::progress (one call per change: at most 101).
class progress_meter {
 public:
  progress_meter(const chrome_json_options& options, const std::vector<chrome_json_input>& inputs, unsigned passes)
      : callback_(options.progress) {
    for (const chrome_json_input& in : inputs) total_ += in.reader->event_records();
    total_ *= passes;
  }
  /// One record read; cheap (a decrement and a branch) between reports.
  void tick() {
    if (!callback_ || --countdown_ != 0) return;
    countdown_ = 1u << 16;
    done_ += countdown_;
    report(total_ == 0 ? 100 : static_cast<unsigned>(std::min<std::uint64_t>(99, done_ * 100 / total_)));
  }
  /// The work is done: 100 %.
  void finish() {
    if (callback_) report(100);
  }

 private:
  void report(unsigned percent) {
    if (percent == last_) return;
    last_ = percent;
    callback_(percent);
  }
  std::function<void(unsigned)> callback_;
  std::uint64_t total_ = 0;
  std::uint64_t done_ = 0;
  std::uint32_t countdown_ = 1u << 16;
  unsigned last_ = ~0u;
};

/// Converts one input's events, annotations and GPU spans into the
/// document(s) `doc_for(ns)` picks for each (shifted) time. Runs the
/// reader's pass 2. Returns false on a read error (`error` says why).
template <class DocFor>
bool convert_input(const chrome_json_input& in, json_event_filter& filter, DocFor&& doc_for, std::uint64_t& flow_id,
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
  notes.finish(in, r, doc_for, flow_id);
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
