// SPDX-License-Identifier: MIT
// Test helper: builds .etr dumps byte by byte with format.hpp, with knobs to damage them (truncate, flip, zero, reorder).
#pragma once

#include <doctest/doctest.h>

#include <edgetrace/format.hpp>
#include <support/files.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgetrace_test {

namespace fmt = edgetrace::format;
using bytes = std::vector<unsigned char>;

/// A chunk payload under construction: fixed-width fields, varints, strings.
class payload {
 public:
  payload& u8(std::uint8_t v) {
    data_.push_back(v);
    return *this;
  }
  payload& u16(std::uint16_t v) {
    unsigned char b[2];
    fmt::put_u16(b, v);
    return raw(b, 2);
  }
  payload& u32(std::uint32_t v) {
    unsigned char b[4];
    fmt::put_u32(b, v);
    return raw(b, 4);
  }
  payload& u64(std::uint64_t v) {
    unsigned char b[8];
    fmt::put_u64(b, v);
    return raw(b, 8);
  }
  payload& f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return u64(bits);
  }
  payload& varint(std::uint64_t v) {
    unsigned char b[fmt::max_varint_size];
    return raw(b, static_cast<std::size_t>(fmt::put_varint(b, v) - b));
  }
  /// Varint length + bytes (the format's string).
  payload& str(std::string_view s) {
    varint(s.size());
    return raw(s.data(), s.size());
  }
  payload& raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    data_.insert(data_.end(), b, b + n);
    return *this;
  }
  payload& raw(const bytes& b) { return raw(b.data(), b.size()); }
  const bytes& data() const noexcept { return data_; }
  std::size_t size() const noexcept { return data_.size(); }

 private:
  bytes data_;
};

/// Definitions payload: categories and sites.
class definitions : public payload {
 public:
  definitions& category(std::uint64_t id, std::string_view name) {
    u8(static_cast<std::uint8_t>(fmt::definition_tag::category)).varint(id).str(name);
    return *this;
  }
  definitions& site(std::uint64_t id, fmt::site_kind kind, std::uint64_t category_id, std::string_view name,
                    std::string_view file = "app.cpp", std::uint64_t line = 1) {
    u8(static_cast<std::uint8_t>(fmt::definition_tag::site)).varint(id).u8(static_cast<std::uint8_t>(kind));
    varint(category_id).str(name).str(file).varint(line);
    return *this;
  }
};

/// Events payload of one thread. Takes absolute ticks and encodes the
/// deltas against the running reference exactly as FORMAT.md says; span()
/// must be called in end order (like the writer), or use rebase().
class events : public payload {
 public:
  events(std::uint64_t thread_id, std::uint64_t base_tick) : ref_(base_tick) { varint(thread_id).varint(base_tick); }
  events& span(std::uint64_t site, std::uint64_t begin, std::uint64_t end) {
    varint(site << 2 | 0).varint(end - ref_).varint(end - begin);
    ref_ = end;
    return *this;
  }
  events& instant(std::uint64_t site, std::uint64_t t) {
    varint(site << 2 | 1).varint(t - ref_);
    ref_ = t;
    return *this;
  }
  events& counter(std::uint64_t site, std::uint64_t t, double value) {
    varint(site << 2 | 2).varint(t - ref_).f64(value);
    ref_ = t;
    return *this;
  }
  events& loss(std::uint64_t first, std::uint64_t last, std::uint64_t count) {
    varint(0 << 2 | 3).varint(first - ref_).varint(last - first).varint(count);
    ref_ = last;
    return *this;
  }
  events& rebase(std::uint64_t tick) {
    varint(1 << 2 | 3).varint(tick);
    ref_ = tick;
    return *this;
  }
  std::uint64_t ref() const noexcept { return ref_; }

 private:
  std::uint64_t ref_;
};

/// Gpu chunk payload (FORMAT.md, chunk 8): records as `u8 tag, varint
/// size, body`.
class gpu_records : public payload {
 public:
  gpu_records& runtime(std::string_view backend = "fake") {
    payload b;
    b.varint(13000).varint(13000).varint(1).str(backend);
    return record(fmt::gpu_record::runtime, b);
  }
  gpu_records& device(std::uint64_t ordinal, std::string_view name = "fake GPU") {
    payload b;
    b.varint(ordinal).str(name).varint(8).varint(7);
    return record(fmt::gpu_record::device, b);
  }
  gpu_records& stream(std::uint64_t id, std::uint64_t device, std::uint64_t handle = 0x1000) {
    payload b;
    b.varint(id).varint(device).u64(handle).varint(0);
    return record(fmt::gpu_record::stream, b);
  }
  /// An anchor bracketed by host ticks [before, after]; `link` 0 starts a
  /// chain, else it is measured `since_previous_ns` after anchor link - 1.
  gpu_records& anchor(std::uint64_t device, std::uint64_t seq, std::uint64_t before, std::uint64_t after,
                      std::uint64_t link = 0, std::int64_t since_previous_ns = 0) {
    payload b;
    b.varint(device).varint(seq).u64(before).u64(after).varint(link).varint(zigzag(since_previous_ns));
    return record(fmt::gpu_record::anchor, b);
  }
  /// A resolved span launched over host ticks [begin, end], starting
  /// `offset_ns` GPU ns after anchor `anchor_seq` and lasting `duration_ns`.
  gpu_records& span(std::uint64_t stream, std::uint64_t site, std::uint64_t os_tid, std::uint64_t begin,
                    std::uint64_t end, std::uint64_t anchor_seq, std::int64_t offset_ns, std::uint64_t duration_ns) {
    payload b;
    b.varint(fmt::gpu_span_resolved).varint(stream).varint(site).varint(os_tid).varint(begin).varint(end - begin);
    b.varint(anchor_seq).varint(zigzag(offset_ns)).varint(duration_ns);
    return record(fmt::gpu_record::span, b);
  }

 private:
  static std::uint64_t zigzag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  }
  gpu_records& record(fmt::gpu_record tag, const payload& body) {
    u8(static_cast<std::uint8_t>(tag)).varint(body.size()).raw(body.data());
    return *this;
  }
};

/// Fields of a process chunk, with test-friendly defaults.
struct process_fields {
  std::uint64_t pid = 1234;
  fmt::clock_source source = fmt::clock_source::monotonic_ns;
  std::uint8_t clock_flags = 0;
  std::uint64_t nominal_rate = 1000000000;
  std::uint64_t ring_capacity = 4096;
  std::uint64_t flush_period_us = 10000;
  std::string name = "app";
  /// The overload policy byte (1.8): format::overload_wait or _drop; -1 leaves it out (an older writer).
  int overload = -1;
  /// The process's identity (1.15, after the overload byte, which it
  /// needs): start ticks, -1 leaves it out; the boot id's bytes.
  std::int64_t start_ticks = -1;
  unsigned char boot_id[16] = {0xB0, 0x07};
};

/// A dump under construction: the header, then a list of chunks that can be
/// duplicated, moved or dropped before build() concatenates them.
class dump_builder {
 public:
  dump_builder() { header(); }

  /// Rewrites the file header (e.g. another major version).
  dump_builder& header(std::uint16_t major = fmt::version_major, std::uint16_t minor = fmt::version_minor) {
    header_.assign(fmt::file_header_size, 0);
    fmt::write_file_header(header_.data());
    fmt::put_u16(header_.data() + 8, major);
    fmt::put_u16(header_.data() + 10, minor);
    return *this;
  }

  /// Appends a chunk of any type (raw type byte, so unknown types work).
  dump_builder& chunk(std::uint8_t type, std::uint32_t writer, const bytes& body) {
    bytes c(fmt::chunk_header_size + body.size() + fmt::chunk_trailer_size);
    if (!body.empty()) std::memcpy(c.data() + fmt::chunk_header_size, body.data(), body.size());
    // chunk_type has a fixed underlying type, so unknown values convert as is.
    fmt::seal_chunk(c.data(), static_cast<fmt::chunk_type>(type), writer, static_cast<std::uint32_t>(body.size()));
    chunks_.push_back(std::move(c));
    return *this;
  }
  dump_builder& chunk(fmt::chunk_type type, std::uint32_t writer, const payload& p) {
    return chunk(static_cast<std::uint8_t>(type), writer, p.data());
  }

  dump_builder& process(std::uint32_t writer, const process_fields& f = {}) {
    payload p;
    p.varint(f.pid).u8(static_cast<std::uint8_t>(f.source)).u8(f.clock_flags).varint(f.nominal_rate);
    p.varint(f.ring_capacity).varint(f.flush_period_us).str(f.name);
    if (f.overload >= 0) p.u8(static_cast<std::uint8_t>(f.overload));
    if (f.overload >= 0 && f.start_ticks >= 0) p.varint(static_cast<std::uint64_t>(f.start_ticks)).raw(f.boot_id, 16);
    return chunk(fmt::chunk_type::process, writer, p);
  }
  /// (tick, monotonic ns) pairs; realtime = monotonic + 1.7e18.
  dump_builder& calibration(std::uint32_t writer, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& pairs) {
    payload p;
    for (const auto& pr : pairs) p.u64(pr.first).u64(pr.second).u64(pr.second + 1700000000000000000ull);
    return chunk(fmt::chunk_type::calibration, writer, p);
  }
  dump_builder& defs(std::uint32_t writer, const definitions& d) { return chunk(fmt::chunk_type::definitions, writer, d); }
  dump_builder& thread(std::uint32_t writer, std::uint64_t thread_id, std::uint64_t os_tid, std::string_view name) {
    payload p;
    p.varint(thread_id).varint(os_tid).str(name);
    return chunk(fmt::chunk_type::thread, writer, p);
  }
  dump_builder& event_chunk(std::uint32_t writer, const events& e) { return chunk(fmt::chunk_type::events, writer, e); }
  dump_builder& thread_stats(std::uint32_t writer, std::uint64_t thread_id, std::uint64_t written,
                             std::uint64_t dropped) {
    payload p;
    p.varint(thread_id).varint(written).varint(dropped);
    return chunk(fmt::chunk_type::thread_stats, writer, p);
  }
  dump_builder& end(std::uint32_t writer) { return chunk(fmt::chunk_type::end, writer, payload{}); }
  dump_builder& gpu_chunk(std::uint32_t writer, const gpu_records& g) { return chunk(fmt::chunk_type::gpu, writer, g); }

  // ------------------------------------------------ restarts (tests/decode/reader_resync_test.cpp)

  /// Drops the file header at offset 0: the file starts with the first
  /// chunk, as one truncated under its writer does.
  dump_builder& no_header() {
    header_.clear();
    return *this;
  }
  /// Appends a file header after the chunks so far: a writer that found the
  /// file truncated under it starts again.
  dump_builder& restart(std::uint16_t major = fmt::version_major, std::uint16_t minor = fmt::version_minor) {
    bytes h(fmt::file_header_size);
    fmt::write_file_header(h.data());
    fmt::put_u16(h.data() + 8, major);
    fmt::put_u16(h.data() + 10, minor);
    chunks_.push_back(std::move(h));
    return *this;
  }
  /// Appends raw bytes (garbage, or anything not a chunk) after the chunks so far.
  dump_builder& raw_bytes(const bytes& b) {
    chunks_.push_back(b);
    return *this;
  }

  // ------------------------------------------------ chunk-list knobs

  std::size_t chunk_count() const noexcept { return chunks_.size(); }
  /// Byte offset of chunk `i` in build()'s output.
  std::size_t offset_of(std::size_t i) const {
    std::size_t off = header_.size();
    for (std::size_t k = 0; k < i; ++k) off += chunks_[k].size();
    return off;
  }
  std::size_t size_of(std::size_t i) const { return chunks_.at(i).size(); }
  dump_builder& duplicate(std::size_t i) {
    chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(i) + 1, chunks_.at(i));
    return *this;
  }
  /// Moves chunk `from` so it ends up at index `to`.
  dump_builder& move(std::size_t from, std::size_t to) {
    bytes c = chunks_.at(from);
    chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(from));
    chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(to), std::move(c));
    return *this;
  }
  dump_builder& erase(std::size_t i) {
    chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(i));
    return *this;
  }

  /// The whole file.
  bytes build() const {
    bytes out = header_;
    for (const bytes& c : chunks_) out.insert(out.end(), c.begin(), c.end());
    return out;
  }

 private:
  bytes header_;
  std::vector<bytes> chunks_;
};

// ---------------------------------------------------- byte-level damage

inline void flip_bit(bytes& b, std::size_t offset, unsigned bit = 0) { b.at(offset) ^= static_cast<unsigned char>(1u << bit); }
inline void zero_fill(bytes& b, std::size_t offset, std::size_t count) {
  for (std::size_t i = 0; i < count && offset + i < b.size(); ++i) b[offset + i] = 0;
}
inline void truncate(bytes& b, std::size_t size) {
  if (size < b.size()) b.resize(size);
}
inline void append(bytes& b, const bytes& tail) { b.insert(b.end(), tail.begin(), tail.end()); }

/// Writes `b` to `path`; returns false on error.
inline bool write_file(const std::string& path, const bytes& b) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = b.empty() || std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return std::fclose(f) == 0 && ok;
}

/// A path in the test scratch directory (scratch_dir, support/files.hpp).
inline std::string temp_path(const std::string& name) { return scratch_dir() + "/" + name; }

/// Writes the dump `d` builds to temp_path(name) (required to succeed) and
/// returns that path.
inline std::string saved_dump(const dump_builder& d, const std::string& name) {
  const std::string path = temp_path(name);
  REQUIRE(write_file(path, d.build()));
  return path;
}

/// A small valid single-writer dump: two threads, nested spans, an instant,
/// a counter, a loss record; ticks are ns (monotonic clock, 1 GHz), with two
/// calibration pairs mapping tick t to ns t + 1'000'000.
inline dump_builder sample_dump(std::uint32_t writer = 0xA1B2C3D4u, std::uint64_t pid = 1234, int overload = -1) {
  dump_builder d;
  process_fields pf;
  pf.pid = pid;
  pf.overload = overload;
  d.process(writer, pf);
  d.calibration(writer, {{1000, 1001000}, {1000000, 2000000}});
  definitions defs;
  defs.category(1, "infer").category(2, "io");
  defs.site(1, fmt::site_kind::span, 1, "conv1", "model.cpp", 10);
  defs.site(2, fmt::site_kind::span, 1, "model", "model.cpp", 5);
  defs.site(3, fmt::site_kind::instant, 2, "frame", "io.cpp", 7);
  defs.site(4, fmt::site_kind::counter, 2, "queue_depth", "io.cpp", 9);
  d.defs(writer, defs);
  d.thread(writer, 1, pid, "main");
  d.thread(writer, 2, pid + 1, "worker");
  events e1(1, 2000);
  e1.span(1, 2100, 2500);  // conv1 inside model
  e1.span(2, 2000, 3000);
  e1.instant(3, 3100);
  e1.counter(4, 3200, 7.5);
  d.event_chunk(writer, e1);
  events e2(2, 2500);
  e2.span(1, 2600, 2700);
  e2.loss(2800, 2900, 5);
  e2.span(1, 3000, 3050);
  d.event_chunk(writer, e2);
  d.thread_stats(writer, 1, 4, 0);
  d.thread_stats(writer, 2, 2, 5);
  d.end(writer);
  return d;
}

/// Writer 1 with ticks = ns: category 1 (`category`) holding site 1 (a
/// `kind` named `site`), and thread 1 (os tid `os_tid`, named `thread`).
/// Events and the end chunk are the caller's.
inline dump_builder one_site_dump(fmt::site_kind kind, std::string_view category, std::string_view site,
                                  std::uint64_t os_tid, std::string_view thread) {
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000000, 1000000}});
  definitions defs;
  defs.category(1, category).site(1, kind, 1, site);
  d.defs(1, defs).thread(1, 1, os_tid, thread);
  return d;
}

}  // namespace edgetrace_test
