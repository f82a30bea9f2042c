// SPDX-License-Identifier: MIT
// The Chrome JSON conversion's options, inputs and result (write_chrome_json, its split and merge use them).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/selection.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// Options of write_chrome_json: what to keep (event_selection: min_dur_ns,
/// filter, the window), and these.
struct chrome_json_options : event_selection {
  /// Shown in otherData.source (usually the dump's file name).
  std::string source_name;
  /// When set, called with the percentage done (0..100) each time it
  /// changes, and with 100 at the end of a successful conversion.
  std::function<void(unsigned percent)> progress;
  /// When set and the selection leaves something out: called once, before
  /// anything is written, with the records the selection keeps (spans,
  /// instants, counters, loss records) and the records read, from the pass
  /// that finds each track's first kept slice; the CLI's size estimate
  /// after the selection.
  std::function<void(std::uint64_t kept, std::uint64_t read)> selected;
};

/// What write_chrome_json wrote.
struct chrome_json_result {
  std::uint64_t events = 0;  ///< trace events written, metadata included
  std::uint64_t spans = 0;
  std::uint64_t instants = 0;
  std::uint64_t counters = 0;
  std::uint64_t loss_markers = 0;
  std::uint64_t capture_markers = 0;   ///< recording on/off and phase markers (1.2)
  std::uint64_t gpu_spans = 0;         ///< GPU X events (on the "GPU" processes)
  std::uint64_t flows = 0;             ///< launch → GPU arrows
  std::uint64_t flow_steps = 0;        ///< spans written with flow fields (bind_id, flow_in/out) (1.3)
  std::uint64_t flow_events = 0;       ///< s/t/f events of EDGETRACE_FLOW steps (for DevTools)
  std::uint64_t flow_markers = 0;      ///< 1 ns "flow" slices DevTools binds cross-category flows to
  std::uint64_t span_args = 0;         ///< EDGETRACE_ARG arguments written into span args (1.3)
  std::uint64_t memory_samples = 0;    ///< live-bytes samples on memory pool tracks (1.3)
  std::uint64_t device_samples = 0;    ///< values on the device's counter tracks (1.9)
  std::uint64_t counters_skipped = 0;  ///< NaN/Inf samples left out
  std::uint64_t filtered = 0;          ///< events left out by min_dur_ns / filter / the window
  /// Slices whose dur is written as the exact double that ends them where
  /// a slice starting at their end begins, in speedscope (not three decimals)
  std::uint64_t exact_durs = 0;
  std::int64_t origin_ns = 0;          ///< CLOCK_MONOTONIC ns that ts 0 stands for
};

/// One dump among the inputs of a (merged) JSON document.
struct chrome_json_input {
  dump_reader* reader = nullptr;
  /// Added to every time of this dump (ns), to put several dumps on one
  /// timeline (see merge.hpp).
  std::int64_t shift_ns = 0;
  /// Pid to show per writer id, when it must differ from the recorded one
  /// (two dumps with the same pid). Writers not listed keep theirs.
  std::map<std::uint32_t, std::uint64_t> pid_override;

  std::uint64_t pid(const writer_info& w) const {
    const auto it = pid_override.find(w.id);
    return it == pid_override.end() ? w.pid : it->second;
  }
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
