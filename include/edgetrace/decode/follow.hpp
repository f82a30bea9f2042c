// SPDX-License-Identifier: MIT
// Incremental reader of a dump that is still being written (`edgetrace top --follow`): whole new chunks only, spans as they arrive.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <edgetrace/decode/clock_model.hpp>
#include <edgetrace/decode/detail/metadata_chunks.hpp>
#include <edgetrace/decode/device.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// One span as dump_follower hands it over. `name` and `key` stay valid as
/// long as the follower lives (`key` identifies the site: one per writer
/// and site id).
struct followed_span {
  const std::string* name = nullptr;
  const void* key = nullptr;
  std::int64_t begin_ns = 0;  ///< CLOCK_MONOTONIC, with the calibration known so far
  std::int64_t end_ns = 0;
  /// An EDGETRACE_MARK rather than a span (begin_ns == end_ns): `top --per`
  /// measures the time between two marks of one thread.
  bool mark = false;
  std::uint32_t writer = 0;     ///< the writer id and its thread's id: which thread
  std::uint64_t thread_id = 0;
};

/// Reads a dump while its writer appends to it. Each poll() reads the whole
/// chunks added since the previous one and hands over their spans; a chunk
/// still being written (cut by the end of the file) is left for the next
/// poll, not reported. Unlike dump_reader it makes one pass and keeps no
/// diagnostics list: what it steps over is counted (bytes_skipped()).
///
/// The file may be truncated under the follower (log rotation with
/// copytruncate, or the app started again): when it shrinks below the read
/// position, reading starts over at offset 0 and restarts() counts it.
/// Metadata (sites, calibration) is kept per writer id across restarts, as
/// the writer sends it again with the same ids.
///
/// Memory: one chunk buffer (<= 4 MiB) and each writer's sites and
/// calibration pairs. Nothing throws; errors are return values.
class dump_follower {
 public:
  /// Opens `path` and checks what is there. A file shorter than a header
  /// (its writer just created it) is accepted: poll() waits for the rest.
  /// False with error() on a missing or unreadable file, a directory, a
  /// file that is not a dump (bad magic), or a newer format.
  bool open(const std::string& path) {
    error_.clear();
    if (!file_.open_regular(path, size_, &error_)) return false;
    pos_ = 0;
    return check_start();
  }

  /// Reads every whole chunk appended since the last call and calls
  /// `sink(const followed_span&)` for each span and mark of its events
  /// chunks, in file order. Returns false only on an I/O error or when the file turns
  /// out not to be a dump (error()). Cost: one pread per chunk header and
  /// one per chunk, a CRC, and the events' decoding.
  template <class Sink>
  bool poll(Sink&& sink) {
    if (!error_.empty()) return false;
    struct stat st;
    if (::fstat(file_.get(), &st) != 0) return fail(std::strerror(errno));
    if (static_cast<std::uint64_t>(st.st_size) != size_) last_growth_ = std::chrono::steady_clock::now();
    size_ = static_cast<std::uint64_t>(st.st_size);
    if (size_ < pos_) {  // truncated under us: its writer starts over
      ++restarts_;
      pos_ = 0;
      started_ = false;
    }
    if (!started_ && !check_start()) return false;
    while (error_.empty() && pos_ < size_) {
      const step s = next_chunk();
      if (s == step::wait) break;
      if (s == step::skip) continue;
      handle_chunk(sink);
    }
    return error_.empty();
  }

  /// True once every writer seen has written its end chunk (a clean end).
  bool finished() const noexcept {
    if (writers_.empty()) return false;
    for (const auto& w : writers_)
      if (!w.second.ended) return false;
    return true;
  }
  /// A writer that has not ended is gone: its process no longer exists
  /// (kill(pid, 0) says ESRCH), so nothing more will come (killed, or
  /// crashed). Its pid then, else 0. Only meaningful where the dump is
  /// written on this machine, in this pid namespace (a live writer's pid
  /// always exists there). Cost: one kill() per writer.
  std::uint64_t gone_writer() const noexcept {
    for (const auto& w : writers_)
      if (!w.second.ended && w.second.pid != 0 && ::kill(static_cast<pid_t>(w.second.pid), 0) != 0 && errno == ESRCH)
        return w.second.pid;
    return 0;
  }
  /// Seconds since the file last grew (or since open): a live writer adds
  /// a calibration chunk every second even when its app records nothing,
  /// so a few seconds without growth means a stopped or stuck writer.
  double seconds_without_data() const noexcept {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_growth_).count();
  }
  const std::string& error() const noexcept { return error_; }

  /// Each writer's device (1.9): its tracks and, per track, the last two
  /// samples (older ones are not kept), their times on the writer's clock.
  /// Threads are named by their OS tid only (thread chunks are not read).
  std::vector<const writer_info*> devices() const {
    std::vector<const writer_info*> out;
    for (const auto& w : writers_)
      if (w.second.device.device.present) out.push_back(&w.second.device);
    return out;
  }
  /// Times the file was found truncated and read again from the start.
  std::uint64_t restarts() const noexcept { return restarts_; }
  /// Corrupt bytes stepped over (bad sync, length or CRC).
  std::uint64_t bytes_skipped() const noexcept { return bytes_skipped_; }
  /// Spans left out because their writer's tick rate was not known yet.
  std::uint64_t spans_untimed() const noexcept { return spans_untimed_; }
  /// Bytes read so far (the read position).
  std::uint64_t position() const noexcept { return pos_; }

 private:
  struct writer_state {
    std::map<std::uint64_t, std::string> sites;  ///< span names by site id (other kinds too: cheap)
    std::set<std::uint64_t> marks;              ///< the site ids of marks
    std::vector<calibration_pair> calibration;
    clock_model clock;
    bool clock_current = false;
    std::uint8_t clock_source = 0;
    std::uint64_t nominal_rate = 0;
    std::uint64_t pid = 0;  ///< from its process chunk (0: not seen yet)
    bool ended = false;
    /// Its process record (pid, identity), device tracks and their last two
    /// samples each, and its threads (devices()).
    writer_info device;
  };
  detail::thread_table threads_;  ///< names the threads of the device's run-queue tracks
  std::chrono::steady_clock::time_point last_growth_ = std::chrono::steady_clock::now();
  enum class step : std::uint8_t { chunk, skip, wait };

  bool fail(const char* what) {
    error_ = what;
    return false;
  }

  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t size) {
    return file_.read_at(offset, dst, size, error_);
  }

  /// At offset 0: a file header (checked), the first chunk of a file
  /// truncated under its writer, or too few bytes yet (wait).
  bool check_start() {
    unsigned char header[format::file_header_size];
    const std::size_t got = read_at(0, header, sizeof header);
    if (!error_.empty()) return false;
    if (got == 0) return true;  // nothing yet
    const std::size_t magic = std::min(got, sizeof format::file_magic);
    if (std::memcmp(header, format::file_magic, magic) == 0) {
      if (got < sizeof header) return true;  // the header is being written
      if (!version_ok(header)) return false;
      pos_ = format::file_header_size;
      started_ = true;
      return true;
    }
    if (header[0] == format::chunk_sync0 && (got < 2 || header[1] == format::chunk_sync1)) {
      started_ = true;  // chunks before any header: read them (FORMAT.md, "Restarts")
      return true;
    }
    return fail("not an edgetrace dump (bad magic)");
  }

  bool version_ok(const unsigned char* header) {
    const unsigned major = format::get_u16(header + 8), minor = format::get_u16(header + 10);
    if (major == format::version_major) return true;
    char text[160];
    std::snprintf(text, sizeof text, "dump format version %u.%u is %s this reader (%u.x)", major, minor,
                  major > format::version_major ? "newer than" : "not supported by", format::version_major);
    return fail(text);
  }

  /// Reads the chunk at pos_ into buffer_ when it is whole and valid.
  step next_chunk() {
    unsigned char header[format::file_header_size];
    const std::uint64_t left = size_ - pos_;
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, sizeof header));
    if (read_at(pos_, header, want) != want) return step::wait;
    if (header[0] == format::file_magic[0]) {  // a restart's file header, or one on its way
      if (std::memcmp(header, format::file_magic, std::min(want, sizeof format::file_magic)) == 0) {
        if (want < sizeof header) return step::wait;
        if (!version_ok(header)) return step::wait;
        pos_ += format::file_header_size;
        return step::skip;
      }
    }
    if (header[0] != format::chunk_sync0 || (want >= 2 && header[1] != format::chunk_sync1)) return resync();
    if (want < format::chunk_header_size) return step::wait;
    const std::uint32_t payload = format::get_u32(header + 4);
    if (payload > format::max_chunk_payload) return resync();
    const std::uint64_t total = format::chunk_header_size + std::uint64_t{payload} + format::chunk_trailer_size;
    if (left < total) return step::wait;  // still being written
    if (buffer_.size() < total) buffer_.resize(static_cast<std::size_t>(total));
    if (read_at(pos_, buffer_.data(), static_cast<std::size_t>(total)) != total) return step::wait;
    const std::size_t body = format::chunk_header_size + payload;
    if (format::crc32(buffer_.data(), body) != format::get_u32(buffer_.data() + body)) return resync();
    chunk_type_ = static_cast<format::chunk_type>(buffer_[2]);
    chunk_writer_ = format::get_u32(buffer_.data() + 8);
    chunk_size_ = payload;
    pos_ += total;
    return step::chunk;
  }

  /// Steps over bytes that are no chunk up to the next sync pair or magic
  /// byte (corruption; rare): the next call checks what is there.
  step resync() {
    unsigned char window[4096];
    std::uint64_t at = pos_ + 1;
    while (at < size_) {
      const std::size_t n = read_at(at, window, static_cast<std::size_t>(std::min<std::uint64_t>(size_ - at, sizeof window)));
      if (n == 0) break;
      for (std::size_t i = 0; i < n; ++i)
        if (window[i] == format::chunk_sync0 || window[i] == format::file_magic[0]) {
          bytes_skipped_ += at + i - pos_;
          pos_ = at + i;
          return step::skip;
        }
      at += n;
    }
    bytes_skipped_ += size_ - pos_;
    pos_ = size_;
    return step::wait;
  }

  template <class Sink>
  void handle_chunk(Sink& sink) {
    writer_state& w = writers_[chunk_writer_];
    detail::payload_cursor in{buffer_.data() + format::chunk_header_size,
                              buffer_.data() + format::chunk_header_size + chunk_size_};
    switch (chunk_type_) {
      case format::chunk_type::process: {
        detail::diagnostic_log ignored;
        w.device.has_process = false;
        detail::read_process(ignored, w.device, in, 0);
        if (w.device.has_process) {
          w.clock_source = w.device.clock_source;
          w.nominal_rate = w.device.nominal_tick_rate;
          w.pid = w.device.pid;
          w.clock_current = false;
          // A new image of a process that called exec (the same process by
          // its identity, 1.15) ends its earlier image's writer, which
          // wrote no end record.
          for (auto& other : writers_)
            if (&other.second != &w && !other.second.ended && w.device.same_process(other.second.device))
              other.second.ended = true;
        }
        break;
      }
      case format::chunk_type::calibration:
        detail::read_calibration(in, w.calibration);
        w.clock_current = false;
        break;
      case format::chunk_type::definitions: read_sites(w, in); break;
      case format::chunk_type::events: decode_spans(w, in, sink); break;
      case format::chunk_type::end: w.ended = true; break;
      case format::chunk_type::device_tracks: {
        detail::diagnostic_log ignored;
        detail::read_device_tracks(ignored, w.device, in, 0);
        break;
      }
      case format::chunk_type::device_samples: read_device_samples(w, in); break;
      case format::chunk_type::thread: {  // a device track of a thread names it: "thread infer (1234)"
        detail::diagnostic_log ignored;
        detail::read_thread(ignored, threads_, w.device, in, 0);
        break;
      }
      default: break;  // stats, capture, gpu, annotations, snapshot: not shown by top
    }
  }

  /// Span names from a definitions chunk; stops at the first entry it
  /// cannot read (the entries carry no length).
  static void read_sites(writer_state& w, detail::payload_cursor& in) {
    while (in.left() != 0) {
      std::uint8_t tag;
      in.u8(tag);
      std::uint64_t id, category, line;
      std::uint8_t kind;
      std::string name, file;
      if (tag == static_cast<std::uint8_t>(format::definition_tag::category)) {
        if (!in.varint(id) || !in.string(name)) return;
      } else if (tag == static_cast<std::uint8_t>(format::definition_tag::site)) {
        if (!in.varint(id) || !in.u8(kind) || !in.varint(category) || !in.string(name) || !in.string(file) ||
            !in.varint(line))
          return;
        w.sites[id] = std::move(name);  // the node stays put: keys handed out stay valid
        if (kind == static_cast<std::uint8_t>(format::site_kind::mark)) w.marks.insert(id);
        else w.marks.erase(id);
      } else {
        return;
      }
    }
  }

  /// A device samples chunk: each track keeps its last two samples.
  static void read_device_samples(writer_state& w, detail::payload_cursor& in) {
    writer_device& d = w.device.device;
    const std::size_t before = d.samples.size();
    detail::diagnostic_log ignored;
    detail::read_device_samples(ignored, w.device, in, 0);
    if (!w.clock_current) {
      w.clock.build(w.calibration, w.clock_source, w.nominal_rate);
      w.clock_current = true;
    }
    w.device.pid = w.pid;
    for (std::size_t i = before; i < d.samples.size(); ++i) d.samples[i].ns = w.clock.to_ns(d.samples[i].tick);
    // Keep the newest two of each track, in time order.
    std::vector<std::size_t> kept(d.tracks.size(), 0);
    std::vector<device_sample> last;
    for (std::size_t i = d.samples.size(); i-- > 0;)
      if (kept[d.samples[i].track]++ < 2) last.push_back(d.samples[i]);
    d.samples.assign(last.rbegin(), last.rend());
  }

  template <class Sink>
  void decode_spans(writer_state& w, detail::payload_cursor& in, Sink& sink) {
    if (!w.clock_current) {
      w.clock.build(w.calibration, w.clock_source, w.nominal_rate);
      w.clock_current = true;
    }
    std::uint64_t thread_id, base;
    if (!in.varint(thread_id) || !in.varint(base)) return;
    const bool timed = w.clock.rate_known();
    detail::decode_events(in, base, [&](const detail::raw_event& e) {
      const bool mark = e.type == format::event_type::instant && w.marks.count(e.id) != 0;
      if (e.type != format::event_type::span && !mark) return true;
      const auto site = w.sites.find(e.id);
      if (site == w.sites.end()) return true;  // never defined: nothing to name it by
      if (!timed) {
        ++spans_untimed_;
        return true;
      }
      followed_span s;
      s.name = &site->second;
      s.key = &site->second;
      s.begin_ns = w.clock.to_ns(mark ? e.end : e.begin);
      s.end_ns = w.clock.to_ns(e.end);
      s.mark = mark;
      s.writer = chunk_writer_;
      s.thread_id = thread_id;
      sink(static_cast<const followed_span&>(s));
      return true;
    });
  }

  detail::file_handle file_;
  std::string error_;
  std::uint64_t pos_ = 0;
  std::uint64_t size_ = 0;
  bool started_ = false;
  std::uint64_t restarts_ = 0;
  std::uint64_t bytes_skipped_ = 0;
  std::uint64_t spans_untimed_ = 0;
  std::vector<unsigned char> buffer_;
  format::chunk_type chunk_type_ = format::chunk_type::end;
  std::uint32_t chunk_writer_ = 0;
  std::uint32_t chunk_size_ = 0;
  std::map<std::uint32_t, writer_state> writers_;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
