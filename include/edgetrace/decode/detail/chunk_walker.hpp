// SPDX-License-Identifier: MIT
// The dump file as a stream of validated chunks: open and version check, CRC, resync over damage, restarts and a cut tail.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <edgetrace/decode/detail/diagnostic_log.hpp>
#include <edgetrace/decode/model.hpp>
#include <edgetrace/format.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Owns a file descriptor; closes it on destruction.
class file_handle {
 public:
  file_handle() = default;
  file_handle(const file_handle&) = delete;
  file_handle& operator=(const file_handle&) = delete;
  ~file_handle() { reset(); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int get() const noexcept { return fd_; }

  /// Opens `path` read-only and checks it is a regular (seekable) file,
  /// whose size goes to `size`. False when it is not, with why in
  /// `*error` (when given) in words fit for "edgetrace: error: <file>: <what>".
  bool open_regular(const std::string& path, std::uint64_t& size, std::string* error) {
    auto fail = [error](const char* why) {
      if (error != nullptr) *error = why;
      return false;
    };
    // O_NONBLOCK: a FIFO would block the open until some process writes
    // to it; opened at once, it is then refused below. A regular file
    // reads as usual.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return fail(std::strerror(errno));
    reset(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return fail(std::strerror(errno));
    if (S_ISDIR(st.st_mode)) return fail("is a directory");
    if (!S_ISREG(st.st_mode)) return fail("not a regular file (the reader needs a seekable dump)");
    size = static_cast<std::uint64_t>(st.st_size);
    return true;
  }

  /// pread until `size` bytes or end of file; returns the bytes read. On
  /// an I/O error sets `error` and returns what was read before it.
  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t size, std::string& error) const {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n =
          ::pread(fd_, static_cast<unsigned char*>(dst) + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        error = std::string("read error: ") + std::strerror(errno);
        return done;
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

 private:
  int fd_ = -1;
};

/// One validated chunk; `payload` points into the walker's buffer and
/// stays valid until the next chunk is read.
struct chunk {
  std::uint64_t offset = 0;
  format::chunk_type type = format::chunk_type::end;
  std::uint32_t writer = 0;
  const unsigned char* payload = nullptr;
  std::uint32_t size = 0;
  std::uint32_t crc = 0;
};

enum class probe_result : std::uint8_t { ok, bad, cut };

/// The dump file as a stream of chunks: opens it and checks its version,
/// validates chunks (sync, length, CRC), steps over damage to the next
/// valid chunk or file header (resync), and reports what it stepped over.
/// Owns the file, the chunk buffer, the file's counters and the
/// diagnostics. Memory: one chunk (<= 4 MiB) and a 64 KiB scan window.
class chunk_walker {
 public:
  /// Opens `path` and checks its header. On failure returns false and
  /// error() says why, in words fit for "edgetrace: error: <file>: <what>".
  bool open(const std::string& path) {
    error_.clear();
    opened_ = false;
    log_.clear();
    stats_ = read_stats{};
    data_start_ = format::file_header_size;
    if (!file_.open_regular(path, stats_.file_size, &error_)) return false;
    if (stats_.file_size == 0) return fail("empty file (0 bytes)");
    unsigned char header[format::file_header_size];
    const std::size_t got = read_at(0, header, sizeof header);
    if (!error_.empty()) return false;
    if (got < sizeof format::file_magic || std::memcmp(header, format::file_magic, sizeof format::file_magic) != 0)
      return open_headerless();
    if (got < sizeof header) {
      char text[96];
      std::snprintf(text, sizeof text, "too short to be an edgetrace dump (%zu bytes; the header alone is %zu)", got,
                    format::file_header_size);
      return fail(text);
    }
    return open_version(header);
  }

  /// Starts pass 1 over the file: counters and diagnostics start afresh,
  /// and layout damage (skipped bytes, restarts, a cut tail) is reported.
  void begin_layout_pass() {
    log_.clear();
    const std::uint64_t size = stats_.file_size;
    stats_ = read_stats{};
    stats_.file_size = size;
    report_layout_ = true;
    crc_spent_ = 0;
    headers_seen_ = 0;
    stats_.headerless_start = data_start_ == 0;
    if (stats_.headerless_start)
      log_.add(diagnostic::severity::damage, 0,
               "no file header at the start: the file was truncated under its writer (log rotation with "
               "copytruncate?); what it held before is not here, reading what followed");
  }

  /// Starts a later pass: the layout was reported by pass 1 already.
  void begin_pass() noexcept {
    report_layout_ = false;
    crc_spent_ = 0;
  }

  /// Where the chunks begin: after the file header, or 0 in a file
  /// truncated under its writer.
  std::uint64_t data_start() const noexcept { return data_start_; }
  bool opened() const noexcept { return opened_; }

  /// Records why reading failed; returns false.
  bool fail(const std::string& what) {
    error_ = what;
    return false;
  }
  /// Why open or a pass failed (empty if it did not).
  const std::string& error() const noexcept { return error_; }
  std::uint16_t version_major() const noexcept { return major_; }
  std::uint16_t version_minor() const noexcept { return minor_; }
  read_stats& stats() noexcept { return stats_; }
  const read_stats& stats() const noexcept { return stats_; }
  diagnostic_log& log() noexcept { return log_; }
  const diagnostic_log& log() const noexcept { return log_; }

  /// pread until `size` bytes or end of file; returns the bytes read. Sets
  /// error() on an I/O error.
  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t size) {
    return file_.read_at(offset, dst, size, error_);
  }

  /// Steps to the next valid chunk from `pos`, stepping over (and, in pass
  /// 1, reporting) corrupt bytes and a truncated tail.
  ///
  /// A file header between chunks (a writer that started the file again)
  /// is stepped over; one of an unknown major version makes everything up
  /// to the next readable file header skipped, since its chunks may be
  /// framed differently.
  bool next_chunk(std::uint64_t& pos, chunk& c) {
    const std::uint64_t size = stats_.file_size;
    std::uint64_t cut_pos = no_position;
    for (;;) {
      if (pos >= size || !error_.empty()) return false;
      const probe_result first = probe_at(pos, c);
      if (first == probe_result::ok) {
        pos += format::chunk_header_size + std::uint64_t{c.size} + format::chunk_trailer_size;
        return true;
      }
      // Only off the normal path: a header costs one more read here.
      const header_result h = first == probe_result::bad ? file_header_at(pos) : header_result::none;
      bool is_header = false;
      cut_pos = no_position;
      if (h == header_result::ok) {
        pos += format::file_header_size;
        continue;
      }
      if (h == header_result::incompatible) {
        const std::uint64_t next = scan(pos + 1, c, cut_pos, true, is_header);
        if (report_layout_) {
          stats_.bytes_skipped += next - pos;
          ++stats_.skipped_regions;
          char text[240];
          std::snprintf(text, sizeof text,
                        "file header at offset %llu has format version %u.%u, which this reader cannot read: "
                        "skipped %llu bytes up to %s",
                        static_cast<unsigned long long>(pos), incompatible_major_, incompatible_minor_,
                        static_cast<unsigned long long>(next - pos),
                        next < size ? "the next readable file header" : "the end of the file");
          log_.add(diagnostic::severity::damage, pos, text);
        }
        pos = next;
        continue;
      }
      if (first == probe_result::cut) cut_pos = pos;
      const std::uint64_t found = scan(pos + 1, c, cut_pos, false, is_header);
      if (found < size && is_header) {
        report_skip(pos, found - pos, false);
        pos = found;
        continue;
      }
      if (found < size) {
        report_skip(pos, found - pos, false);
        pos = found + format::chunk_header_size + std::uint64_t{c.size} + format::chunk_trailer_size;
        return true;
      }
      break;
    }
    if (cut_pos != no_position) {
      if (cut_pos > pos) report_skip(pos, cut_pos - pos, false);
      if (report_layout_) {
        stats_.bytes_truncated += size - cut_pos;
        char text[200];
        std::snprintf(text, sizeof text,
                      "truncated: the last chunk, at offset %llu, is cut by the end of the file (%llu bytes lost)",
                      static_cast<unsigned long long>(cut_pos), static_cast<unsigned long long>(size - cut_pos));
        log_.add(diagnostic::severity::damage, cut_pos, text);
      }
    } else {
      report_skip(pos, size - pos, true);
    }
    pos = size;
    return false;
  }

  /// Reads again a chunk pass 1 found valid at `pos`, into `buffer` (the
  /// caller's: this leaves the walker's own buffer, counters and
  /// diagnostics alone, so it may run in the middle of another pass). On
  /// success `c` points into `buffer`; false when the chunk no longer reads
  /// whole with its CRC (the file changed under the reader).
  bool reread_chunk(std::uint64_t pos, std::vector<unsigned char>& buffer, chunk& c) const {
    std::string error;
    unsigned char header[format::chunk_header_size];
    if (file_.read_at(pos, header, sizeof header, error) != sizeof header) return false;
    const std::uint32_t payload = format::get_u32(header + 4);
    if (header[0] != format::chunk_sync0 || header[1] != format::chunk_sync1 || payload > format::max_chunk_payload)
      return false;
    const std::size_t total = format::chunk_header_size + std::size_t{payload} + format::chunk_trailer_size;
    if (buffer.size() < total) buffer.resize(total);
    if (file_.read_at(pos, buffer.data(), total, error) != total) return false;
    return accept(pos, buffer.data(), payload, c);
  }

  /// Checks for a whole valid chunk at `pos`; on success `c` points into
  /// buffer_. `cut`: a plausible header whose chunk runs past the end of
  /// the file.
  ///
  /// CRC work is budgeted: at most 64 MiB plus 8 bytes per byte of file
  /// before `pos`. A normal file uses about 1 byte per byte; a file forged
  /// with fake headers claiming 4 MiB every few bytes would otherwise cost
  /// quadratic time. Past the budget a candidate counts as invalid.
  /// `known_header`, when given, holds the 12 bytes at `pos` (saves a read).
  probe_result probe_at(std::uint64_t pos, chunk& c, const unsigned char* known_header = nullptr) {
    const std::uint64_t size = stats_.file_size;
    unsigned char buffer[format::chunk_header_size];
    const std::size_t avail = pos < size ? static_cast<std::size_t>(std::min<std::uint64_t>(size - pos, sizeof buffer)) : 0;
    const unsigned char* header = buffer;
    if (known_header && avail == sizeof buffer) header = known_header;
    else if (read_at(pos, buffer, avail) != avail) return probe_result::bad;
    if (avail < 1 || header[0] != format::chunk_sync0) return probe_result::bad;
    if (avail >= 2 && header[1] != format::chunk_sync1) return probe_result::bad;
    if (avail < sizeof buffer) return probe_result::cut;
    const std::uint32_t payload = format::get_u32(header + 4);
    if (payload > format::max_chunk_payload) return probe_result::bad;
    const std::uint64_t total = format::chunk_header_size + std::uint64_t{payload} + format::chunk_trailer_size;
    if (size - pos < total) return probe_result::cut;
    if (crc_spent_ + total > (std::uint64_t{64} << 20) + 8 * pos) return probe_result::bad;
    crc_spent_ += total;
    if (buffer_.size() < total) buffer_.resize(static_cast<std::size_t>(total));
    if (read_at(pos, buffer_.data(), static_cast<std::size_t>(total)) != total) return probe_result::bad;
    return accept(pos, buffer_.data(), payload, c) ? probe_result::ok : probe_result::bad;
  }

 private:
  /// Checks the CRC of the chunk read whole into `bytes` (header, `payload`
  /// bytes, trailer) at file offset `pos`, and points `c` into it.
  static bool accept(std::uint64_t pos, const unsigned char* bytes, std::uint32_t payload, chunk& c) {
    const std::size_t body = format::chunk_header_size + payload;
    const std::uint32_t crc = format::get_u32(bytes + body);
    if (format::crc32(bytes, body) != crc) return false;
    c.offset = pos;
    c.type = static_cast<format::chunk_type>(bytes[2]);
    c.writer = format::get_u32(bytes + 8);
    c.payload = bytes + format::chunk_header_size;
    c.size = payload;
    c.crc = crc;
    return true;
  }

  enum class header_result : std::uint8_t { none, ok, incompatible };

  /// Accepts the file if the file header `header` (16 bytes) has a major
  /// version this reader knows; else fails saying which version it is.
  bool open_version(const unsigned char* header) {
    major_ = format::get_u16(header + 8);
    minor_ = format::get_u16(header + 10);
    if (major_ != format::version_major) {
      char text[160];
      if (major_ > format::version_major)
        std::snprintf(text, sizeof text, "dump format version %u.%u is newer than this reader (%u.x); update edgetrace",
                      major_, minor_, format::version_major);
      else
        std::snprintf(text, sizeof text, "dump format version %u.%u is not supported by this reader (%u.x)", major_,
                      minor_, format::version_major);
      return fail(text);
    }
    opened_ = true;
    return true;
  }

  /// How far open() looks for a file header or a valid chunk in a file that
  /// does not begin with a file header, before calling it "not a dump".
  static constexpr std::uint64_t max_headerless_search = std::uint64_t{64} << 20;

  /// A file that does not begin with the file header: a file truncated
  /// under its writer (log rotation with copytruncate) begins with the
  /// chunks that writer appended before it noticed and wrote a new header.
  /// Accepted when a file header or a valid chunk lies within the first
  /// max_headerless_search bytes (the passes then start at offset 0 and
  /// step over what does not validate); the version is the first header's.
  bool open_headerless() {
    crc_spent_ = 0;
    chunk c;
    std::uint64_t cut_pos = no_position;
    bool is_header = false;
    const std::uint64_t limit = std::min(stats_.file_size, max_headerless_search);
    const std::uint64_t found = scan(0, c, cut_pos, false, is_header, limit);
    if (!error_.empty()) return false;
    if (found >= limit) return fail("not an edgetrace dump (bad magic)");
    data_start_ = 0;
    if (is_header) {
      unsigned char header[format::file_header_size];
      if (read_at(found, header, sizeof header) != sizeof header) return error_.empty() ? fail("read error") : false;
      return open_version(header);
    }
    // Chunks but no header yet: the version is this reader's until pass 1
    // meets a header.
    major_ = format::version_major;
    minor_ = 0;
    opened_ = true;
    return true;
  }

  /// Checks for a file header at `pos` (after the start: a writer that
  /// found the file truncated under it started again). In pass 1, notes
  /// it and takes the highest minor version seen.
  header_result file_header_at(std::uint64_t pos) {
    unsigned char header[format::file_header_size];
    if (read_at(pos, header, sizeof header) != sizeof header ||
        std::memcmp(header, format::file_magic, sizeof format::file_magic) != 0)
      return header_result::none;
    const std::uint16_t major = format::get_u16(header + 8);
    const std::uint16_t minor = format::get_u16(header + 10);
    if (major != format::version_major) {
      incompatible_major_ = major;
      incompatible_minor_ = minor;
      return header_result::incompatible;
    }
    if (report_layout_) {
      minor_ = headers_seen_++ == 0 && data_start_ == 0 ? minor : std::max(minor_, minor);
      if (pos != 0) {
        ++stats_.restarts;
        char text[200];
        std::snprintf(text, sizeof text,
                      "file header at offset %llu: a writer found the file truncated under it and started again; "
                      "reading on",
                      static_cast<unsigned long long>(pos));
        log_.add(diagnostic::severity::note, pos, text);
      }
    }
    return header_result::ok;
  }

  /// Finds the next position from `from` where a whole chunk validates or
  /// a file header starts (`is_header` says which; with `headers_only`,
  /// only a file header); returns the file size if none before `limit`.
  /// `cut_pos` receives the first plausible chunk start that runs past the
  /// end of the file, if any.
  std::uint64_t scan(std::uint64_t from, chunk& c, std::uint64_t& cut_pos, bool headers_only, bool& is_header,
                     std::uint64_t limit = no_position) {
    const std::uint64_t size = stats_.file_size;
    const std::uint64_t end = std::min(size, limit);
    is_header = false;
    // The window starts small (most damage is a few bytes: the next chunk
    // is near) and doubles, so a resync costs about what it skips.
    constexpr std::size_t max_window = 64u << 10;
    if (window_.size() < max_window) window_.resize(max_window);
    std::size_t window_size = 256;
    std::uint64_t base = from;
    std::uint64_t found = size;
    while (base < end && found == size && error_.empty()) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(window_size, size - base));
      if (read_at(base, window_.data(), n) != n) break;
      const bool last_window = base + n == size;
      std::size_t i = 0;
      for (; i < n && base + i < end; ++i) {
        // Leave candidates whose header straddles the window to the next one.
        if (!last_window && i + format::file_header_size > n) break;
        if (window_[i] == format::file_magic[0]) {
          if (i + format::file_header_size <= n &&
              std::memcmp(window_.data() + i, format::file_magic, sizeof format::file_magic) == 0) {
            found = base + i;
            is_header = true;
            break;
          }
          continue;
        }
        if (headers_only || window_[i] != format::chunk_sync0) continue;
        if (i + 1 < n && window_[i + 1] != format::chunk_sync1) continue;
        if (i + 8 <= n && format::get_u32(window_.data() + i + 4) > format::max_chunk_payload) continue;
        const probe_result r =
            probe_at(base + i, c, i + format::chunk_header_size <= n ? window_.data() + i : nullptr);
        if (r == probe_result::ok) {
          found = base + i;
          break;
        }
        if (r == probe_result::cut && cut_pos == no_position) cut_pos = base + i;
      }
      if (found == size) base += i == 0 ? 1 : i;
      window_size = std::min(window_size * 2, max_window);
    }
    return found;
  }

  void report_skip(std::uint64_t at, std::uint64_t count, bool to_end) {
    if (!report_layout_) return;
    stats_.bytes_skipped += count;
    ++stats_.skipped_regions;
    char text[200];
    std::snprintf(text, sizeof text, "corrupt data: skipped %llu bytes at offset %llu%s",
                  static_cast<unsigned long long>(count), static_cast<unsigned long long>(at),
                  to_end ? " (no valid chunk up to the end of the file)" : " (bad sync, length or CRC)");
    log_.add(diagnostic::severity::damage, at, text);
  }

  static constexpr std::uint64_t no_position = ~std::uint64_t{0};

  std::string error_;
  file_handle file_;
  bool opened_ = false;
  std::uint16_t major_ = 0;
  std::uint16_t minor_ = 0;
  read_stats stats_;
  diagnostic_log log_;

  std::vector<unsigned char> buffer_;  // one chunk, reused; grows to <= 4 MiB + 16
  std::vector<unsigned char> window_;  // resync scan window
  std::uint64_t crc_spent_ = 0;  // CRC bytes computed in this pass (see probe_at)
  std::uint64_t data_start_ = format::file_header_size;  // where the passes begin (0: no header at the start)
  std::uint64_t headers_seen_ = 0;  // file headers met by pass 1 (minor version bookkeeping)
  unsigned incompatible_major_ = 0, incompatible_minor_ = 0;  // the last unreadable file header's version
  bool report_layout_ = true;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
