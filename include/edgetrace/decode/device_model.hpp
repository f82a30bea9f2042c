// SPDX-License-Identifier: MIT
// The device's state as a dump holds it (format 1.9): the tracks the writer's sampler found, its samples, the sources it could not read, and its totals.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// One sampled quantity (a device_tracks record).
struct device_track {
  std::uint64_t id = 0;
  format::device_quantity quantity = format::device_quantity::cpu_khz;
  std::uint64_t index = 0;      ///< CPU number, zone or rail number
  std::uint64_t thread_id = 0;  ///< the traced thread (writer-scoped id); 0: system-wide
  std::int64_t maximum = 0;     ///< the largest value possible, 0 when unknown
  std::string name;             ///< "cpu2", a zone's type, a rail's label ("" for a thread's)
  std::string source;           ///< the file it is read from
};

/// One value of one track.
struct device_sample {
  std::uint64_t tick = 0;
  std::int64_t ns = 0;       ///< resolved after pass 1
  std::size_t track = 0;     ///< index into writer_device::tracks
  std::int64_t value = 0;    ///< in the quantity's unit (format::device_quantity)
};

/// A source the sampler looked for and did not find.
struct device_missing {
  std::string name, why;
};

/// A writer's device samples (format 1.9); empty when it sampled nothing.
struct writer_device {
  bool present = false;          ///< a device chunk was seen
  std::uint64_t period_us = 0;   ///< EDGETRACE_SAMPLE_MS, in µs
  std::uint64_t files = 0;       ///< system-wide files read per sample
  std::vector<device_track> tracks;
  std::map<std::uint64_t, std::size_t> track_index;  ///< id -> index into tracks
  std::vector<device_sample> samples;                 ///< in file order
  std::vector<device_missing> missing;
  /// The sampler's totals (the last stats record wins).
  std::uint64_t samples_taken = 0, ignored = 0, failed = 0, cpu_ns = 0, files_last = 0;
  /// The longest a sample took from its tick to its last read, ns (1.11;
  /// 0 before): a sample's values were read within that long after its time.
  std::uint64_t longest_ns = 0;
  std::uint64_t undefined = 0;  ///< values of a track never defined (damage)
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
