// SPDX-License-Identifier: MIT
// Device chunks (format 1.9): pass 1 reads the sampler's tracks, the sources it could not read, its samples and totals.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <edgetrace/decode/detail/diagnostic_log.hpp>
#include <edgetrace/decode/detail/metadata_chunks.hpp>
#include <edgetrace/decode/detail/payload_cursor.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// A device_tracks chunk: tracks (a track defined again keeps its first
/// definition: a restarted stream sends the same), missing sources, the
/// sampler's period.
inline void read_device_tracks(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset) {
  writer_device& d = w.device;
  d.present = true;
  const bool ok = for_each_record(in, [&d](std::uint8_t tag, payload_cursor& body) {
    switch (static_cast<format::device_track_record>(tag)) {
      case format::device_track_record::track: {
        device_track t;
        std::uint8_t quantity = 0;
        std::uint64_t maximum = 0;
        if (!body.varint(t.id) || !body.u8(quantity) || !body.varint(t.index) || !body.varint(t.thread_id) ||
            !body.varint(maximum) || !body.string(t.name) || !body.string(t.source) || t.id == 0)
          return false;
        t.quantity = static_cast<format::device_quantity>(quantity);
        t.maximum = format::unzigzag(maximum);
        if (d.track_index.emplace(t.id, d.tracks.size()).second) d.tracks.push_back(std::move(t));
        return true;
      }
      case format::device_track_record::missing: {
        device_missing m;
        if (!body.string(m.name) || !body.string(m.why)) return false;
        for (const device_missing& known : d.missing)
          if (known.name == m.name) return true;
        d.missing.push_back(std::move(m));
        return true;
      }
      case format::device_track_record::sampler:
        return body.varint(d.period_us) && body.varint(d.files);
    }
    return true;  // a newer minor's record
  });
  if (!ok) log.malformed("device tracks", offset, w);
}

/// A device_samples chunk: values of defined tracks (others counted), and
/// the sampler's totals.
inline void read_device_samples(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset) {
  writer_device& d = w.device;
  d.present = true;
  const bool ok = for_each_record(in, [&d](std::uint8_t tag, payload_cursor& body) {
    switch (static_cast<format::device_sample_record>(tag)) {
      case format::device_sample_record::values: {
        device_sample s;
        if (!body.varint(s.tick)) return false;
        while (body.left() != 0) {
          std::uint64_t id = 0, value = 0;
          if (!body.varint(id) || !body.varint(value)) return false;
          const auto known = d.track_index.find(id);
          if (known == d.track_index.end()) {
            ++d.undefined;
            continue;
          }
          s.track = known->second;
          s.value = format::unzigzag(value);
          d.samples.push_back(s);
        }
        return true;
      }
      case format::device_sample_record::stats:
        return body.varint(d.samples_taken) && body.varint(d.ignored) && body.varint(d.failed) &&
               body.varint(d.cpu_ns) && body.varint(d.files_last);
    }
    return true;
  });
  if (!ok) log.malformed("device samples", offset, w);
}

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
