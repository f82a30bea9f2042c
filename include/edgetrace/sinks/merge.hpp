// SPDX-License-Identifier: MIT
// Several processes' dumps on one timeline (`edgetrace merge`): clock alignment, distinct pids and writer ids, .etr or JSON out.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// How to put the inputs on one timeline.
enum class merge_clock : std::uint8_t {
  automatic,  ///< CLOCK_MONOTONIC when the inputs share a boot, else CLOCK_REALTIME
  monotonic,  ///< CLOCK_MONOTONIC as recorded (processes of one machine, one boot)
  realtime,   ///< shift each input by its CLOCK_REALTIME - CLOCK_MONOTONIC offset
};

/// What merging the inputs needs: a time shift per input, and new pids or
/// writer ids where inputs collide.
struct merge_plan {
  bool realtime = false;              ///< true: aligned through the realtime pairs
  std::vector<std::int64_t> shift_ns;  ///< per input, added to its CLOCK_MONOTONIC times (>= 0)
  std::vector<std::map<std::uint32_t, std::uint64_t>> pid_override;  ///< per input: writer id -> shown pid
  std::vector<std::map<std::uint32_t, std::uint32_t>> writer_id;     ///< per input: writer id -> new id
  std::vector<std::string> notes;      ///< one line each: which clock, what was renumbered
};

/// Two dumps whose realtime-monotonic offsets differ by less than this are
/// taken to come from one boot of one machine (the offset only moves with
/// NTP steps and slewing, by far less than a second over a run).
inline constexpr std::int64_t same_boot_tolerance_ns = 500000000;

/// Plans a merge of opened dumps (metadata read). `names` label the inputs
/// in notes. False with `error` when realtime alignment is asked for and an
/// input has no calibration pair.
EDGETRACE_DETAIL_READER_API bool plan_merge(const std::vector<dump_reader*>& inputs,
                                            const std::vector<std::string>& names, merge_clock clock,
                                            merge_plan& plan, std::string& error);

/// Writes the inputs as one .etr: one file header, then every validated
/// chunk of each input in turn (writers never share ids, so their streams
/// stay apart). Chunks are copied byte for byte except: a renumbered
/// writer's id, a shifted input's calibration pairs (CLOCK_MONOTONIC +
/// shift) and a renumbered pid in a process chunk, each resealed with a
/// fresh CRC. Damage in an input is stepped over as by every reader.
EDGETRACE_DETAIL_READER_API bool write_merged_dump(const std::vector<dump_reader*>& inputs, const merge_plan& plan,
                                                   std::FILE* out, std::string& error);

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <algorithm>
#include <set>

#include <edgetrace/format.hpp>
#include <edgetrace/sinks/output.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

namespace detail {

/// Median of CLOCK_REALTIME - CLOCK_MONOTONIC over a dump's calibration
/// pairs; false when it has none.
inline bool realtime_offset(const dump_reader& r, std::int64_t& offset) {
  std::vector<std::int64_t> offsets;
  for (const auto& w : r.writers())
    for (const calibration_pair& p : w.second.calibration)
      offsets.push_back(static_cast<std::int64_t>(p.realtime_ns - p.monotonic_ns));
  if (offsets.empty()) return false;
  std::nth_element(offsets.begin(), offsets.begin() + static_cast<std::ptrdiff_t>(offsets.size() / 2), offsets.end());
  offset = offsets[offsets.size() / 2];
  return true;
}

}  // namespace detail

EDGETRACE_DETAIL_READER_API bool plan_merge(const std::vector<dump_reader*>& inputs,
                                            const std::vector<std::string>& names, merge_clock clock,
                                            merge_plan& plan, std::string& error) {
  const std::size_t n = inputs.size();
  plan = merge_plan{};
  plan.shift_ns.assign(n, 0);
  plan.pid_override.resize(n);
  plan.writer_id.resize(n);
  std::vector<std::int64_t> offsets(n, 0);
  std::vector<bool> known(n, false);
  for (std::size_t i = 0; i < n; ++i) known[i] = detail::realtime_offset(*inputs[i], offsets[i]);
  bool same_boot = true;
  for (std::size_t i = 1; i < n; ++i)
    if (known[i] && known[0]) {
      const std::int64_t d = offsets[i] - offsets[0];
      if (d > same_boot_tolerance_ns || d < -same_boot_tolerance_ns) same_boot = false;
    }
  plan.realtime = clock == merge_clock::realtime || (clock == merge_clock::automatic && !same_boot);
  if (plan.realtime) {
    for (std::size_t i = 0; i < n; ++i)
      if (!known[i]) {
        error = names[i] + ": no calibration pair, so no CLOCK_REALTIME to align it by";
        return false;
      }
    const std::int64_t base = *std::min_element(offsets.begin(), offsets.end());
    for (std::size_t i = 0; i < n; ++i) plan.shift_ns[i] = offsets[i] - base;
    std::string shifts;
    for (std::size_t i = 0; i < n; ++i)
      shifts += (i ? ", " : "") + names[i] + " +" + detail::format_duration(static_cast<std::uint64_t>(plan.shift_ns[i]));
    plan.notes.push_back(std::string("clocks aligned through CLOCK_REALTIME (") +
                         (clock == merge_clock::realtime ? "asked for" : "the dumps come from different boots or machines") +
                         "): " + shifts);
  } else {
    plan.notes.push_back(std::string("clocks aligned through CLOCK_MONOTONIC (") +
                         (clock == merge_clock::monotonic ? "asked for" : "one boot: the dumps' realtime offsets agree") +
                         "); times are unchanged");
  }
  // Distinct pids and writer ids, first come first kept.
  std::set<std::uint64_t> pids;
  std::set<std::uint32_t> ids;
  std::uint64_t max_pid = 0;
  for (const dump_reader* r : inputs)
    for (const auto& w : r->writers()) max_pid = std::max(max_pid, w.second.pid);
  for (std::size_t i = 0; i < n; ++i) {
    std::set<std::uint64_t> own;
    for (const writer_info* w : inputs[i]->writers_in_order()) {
      if (!ids.insert(w->id).second) {
        std::uint32_t fresh = w->id;
        do fresh = fresh * 2654435761u + 0x9e3779b9u;
        while (fresh == 0 || ids.count(fresh));
        ids.insert(fresh);
        plan.writer_id[i][w->id] = fresh;
        char text[160];
        std::snprintf(text, sizeof text, "%s: writer id 0x%08x is also used by an earlier input; renumbered 0x%08x",
                      names[i].c_str(), static_cast<unsigned>(w->id), static_cast<unsigned>(fresh));
        plan.notes.push_back(text);
      }
      if (!w->has_process) continue;
      if (pids.count(w->pid) && !own.count(w->pid)) {
        const std::uint64_t fresh = ++max_pid;
        plan.pid_override[i][w->id] = fresh;
        plan.notes.push_back(names[i] + ": pid " + std::to_string(w->pid) +
                             " is also used by an earlier input; shown as pid " + std::to_string(fresh));
        pids.insert(fresh);
      } else {
        own.insert(w->pid);
        pids.insert(w->pid);
      }
    }
  }
  return true;
}

EDGETRACE_DETAIL_READER_API bool write_merged_dump(const std::vector<dump_reader*>& inputs, const merge_plan& plan,
                                                   std::FILE* out, std::string& error) {
  unsigned char header[format::file_header_size];
  format::write_file_header(header);
  std::uint16_t minor = 0;
  for (const dump_reader* r : inputs) minor = std::max(minor, r->version_minor());
  format::put_u16(header + 10, minor);
  bool ok = std::fwrite(header, 1, sizeof header, out) == sizeof header;
  std::vector<unsigned char> copy;
  for (std::size_t i = 0; i < inputs.size() && ok; ++i) {
    const auto& ids = plan.writer_id[i];
    const auto& pids = plan.pid_override[i];
    const std::int64_t shift = plan.shift_ns[i];
    const bool read_ok = inputs[i]->for_each_chunk([&](const dump_reader::raw_chunk& c) {
      if (!ok) return;
      const auto id = ids.find(c.writer);
      const auto pid = pids.find(c.writer);
      const bool shift_it = shift != 0 && c.type == format::chunk_type::calibration;
      const bool repid = pid != pids.end() && c.type == format::chunk_type::process;
      if (id == ids.end() && !shift_it && !repid) {
        ok = std::fwrite(c.bytes, 1, c.size, out) == c.size;
        return;
      }
      const std::size_t payload = c.size - format::chunk_header_size - format::chunk_trailer_size;
      copy.assign(c.bytes, c.bytes + format::chunk_header_size);
      const unsigned char* body = c.bytes + format::chunk_header_size;
      if (repid) {
        // varint pid, then the rest of the payload unchanged.
        const unsigned char* p = body;
        std::uint64_t old_pid = 0;
        if (!format::get_varint(p, body + payload, old_pid)) p = body;  // malformed: keep as is
        unsigned char varint[10];
        const unsigned char* start = varint;
        const unsigned char* end = format::put_varint(varint, p == body ? old_pid : pid->second);
        if (p != body) copy.insert(copy.end(), start, end);
        copy.insert(copy.end(), p, body + payload);
      } else {
        copy.insert(copy.end(), body, body + payload);
      }
      if (shift_it)
        for (std::size_t k = format::chunk_header_size; k + 24 <= copy.size(); k += 24)
          format::put_u64(copy.data() + k + 8,
                          format::get_u64(copy.data() + k + 8) + static_cast<std::uint64_t>(shift));
      const std::uint32_t writer = id == ids.end() ? c.writer : id->second;
      const std::size_t size = copy.size() - format::chunk_header_size;
      copy.resize(copy.size() + format::chunk_trailer_size);
      const std::size_t total =
          format::seal_chunk(copy.data(), c.type, writer, static_cast<std::uint32_t>(size));
      ok = std::fwrite(copy.data(), 1, total, out) == total;
    });
    if (!read_ok) {
      error = inputs[i]->path() + ": " + inputs[i]->error();
      return false;
    }
  }
  if (!ok || std::fflush(out) != 0) return detail::fail_write(&error);
  return true;
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
