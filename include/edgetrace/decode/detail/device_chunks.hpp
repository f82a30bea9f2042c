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

/// A device chunk's records: `read(record, body)` for each (false: the
/// chunk is malformed, said once under `what`). Marks the writer as having
/// device chunks.
template <typename Record, typename Read>
void read_device_records(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset, const char* what,
                         Read&& read) {
  w.device.present = true;
  if (!for_each_record(in, [&read](std::uint8_t tag, payload_cursor& body) { return read(static_cast<Record>(tag), body); }))
    log.malformed(what, offset, w);
}

/// A track record (a track defined again keeps its first definition: a
/// restarted stream sends the same). A source listed missing whose tracks
/// are defined later joined during the run (1.12: NVML registered after
/// sampling began): it is no longer missing.
inline bool read_device_track(writer_device& d, payload_cursor& body) {
  device_track t;
  std::uint8_t quantity = 0;
  std::uint64_t maximum = 0;
  if (!body.varint(t.id) || !body.u8(quantity) || !body.varint(t.index) || !body.varint(t.thread_id) ||
      !body.varint(maximum) || !body.string(t.name) || !body.string(t.source) || t.id == 0)
    return false;
  t.quantity = static_cast<format::device_quantity>(quantity);
  t.maximum = format::unzigzag(maximum);
  for (auto it = d.missing.begin(); it != d.missing.end(); ++it)
    if (it->name == t.source) {
      d.missing.erase(it);
      break;
    }
  if (d.track_index.emplace(t.id, d.tracks.size()).second) d.tracks.push_back(std::move(t));
  return true;
}

/// A source the sampler could not read (each name once; 1.12: listed again,
/// the later reason holds, and a source whose tracks are defined is not
/// missing).
inline bool read_device_missing(writer_device& d, payload_cursor& body) {
  device_missing m;
  if (!body.string(m.name) || !body.string(m.why)) return false;
  for (const device_track& t : d.tracks)
    if (t.source == m.name) return true;
  for (device_missing& known : d.missing)
    if (known.name == m.name) {
      known.why = std::move(m.why);
      return true;
    }
  d.missing.push_back(std::move(m));
  return true;
}

/// One sample: a value per defined track (values of undefined ones counted).
inline bool read_device_values(writer_device& d, payload_cursor& body) {
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

/// A device_tracks chunk: tracks, missing sources, the sampler's period.
/// Records of a newer minor are skipped.
inline void read_device_tracks(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset) {
  using record = format::device_track_record;
  writer_device& d = w.device;
  read_device_records<record>(log, w, in, offset, "device tracks", [&d](record r, payload_cursor& body) {
    if (r == record::track) return read_device_track(d, body);
    if (r == record::missing) return read_device_missing(d, body);
    return r != record::sampler || (body.varint(d.period_us) && body.varint(d.files));
  });
}

/// A device_samples chunk: samples, and the sampler's totals.
inline void read_device_samples(diagnostic_log& log, writer_info& w, payload_cursor& in, std::uint64_t offset) {
  using record = format::device_sample_record;
  writer_device& d = w.device;
  read_device_records<record>(log, w, in, offset, "device samples", [&d](record r, payload_cursor& body) {
    if (r == record::values) return read_device_values(d, body);
    return r != record::stats ||
           (body.varint(d.samples_taken) && body.varint(d.ignored) && body.varint(d.failed) && body.varint(d.cpu_ns) &&
            body.varint(d.files_last) && (body.left() == 0 || body.varint(d.longest_ns)));  // 1.11: the longest sample
  });
}

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
