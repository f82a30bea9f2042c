// SPDX-License-Identifier: MIT
// The machine's files as the writer reads them: EDGETRACE_SYSFS_ROOT in front of /sys and /proc (not /proc/self), paths joined without allocating, small files read whole, and numbers parsed so that garbage is told apart from a value.
//
// EDGETRACE_SYSFS_ROOT (documented in the README) puts a folder in front
// of /sys and of the system-wide /proc files (/proc/stat, /proc/meminfo),
// so tests (and anyone) can replay a board's files; the process's own
// files (/proc/self/...) are always the real ones. Nothing here allocates.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace telemetry {

/// The files' root: EDGETRACE_SYSFS_ROOT, else "" (the real /sys and /proc).
inline const char* sysfs_root() noexcept {
  const char* root = std::getenv("EDGETRACE_SYSFS_ROOT");
  return root != nullptr ? root : "";
}

/// `root` + `a` + `b` + `c` into `out` (of `capacity`); false when it does not fit.
inline bool join(char* out, std::size_t capacity, const char* root, const char* a, const char* b = "",
                 const char* c = "") noexcept {
  std::size_t n = 0;
  for (const char* part : {root, a, b, c}) {
    const std::size_t length = std::strlen(part);
    if (n + length + 1 > capacity) return false;
    std::memcpy(out + n, part, length);
    n += length;
  }
  out[n] = '\0';
  return true;
}

/// Copies `text` into `out` (of `capacity`), cut to fit, NUL-terminated.
inline void copy_text(char* out, std::size_t capacity, const char* text) noexcept {
  const std::size_t length = std::strlen(text);
  const std::size_t n = length < capacity ? length : capacity - 1;
  std::memcpy(out, text, n);
  out[n] = '\0';
}

/// Reads an open file from its start into `text` (NUL-terminated, at most
/// `capacity` - 1 bytes): sysfs and procfs files are made anew by each read
/// from offset 0, so one descriptor serves every sample. Returns the bytes
/// read, or -1 when the read failed (a sensor that answers EIO or ENODATA).
inline long read_at_start(int fd, char* text, std::size_t capacity) noexcept {
  // One pread gives a whole sysfs or procfs file that fits: a second, to
  // see the end, would make the kernel format it again (it costs as much).
  std::size_t got = 0;
  while (got + 1 < capacity) {
    const std::size_t wanted = capacity - 1 - got;
    const ssize_t n = ::pread(fd, text + got, wanted, static_cast<off_t>(got));
    if (n < 0) {
      text[0] = '\0';
      return -1;
    }
    got += static_cast<std::size_t>(n);
    if (static_cast<std::size_t>(n) < wanted) break;
  }
  text[got] = '\0';
  return static_cast<long>(got);
}

/// What a descriptor named when it was opened (device and inode): a held
/// descriptor is closed only while it still names that file. An app that
/// closes every descriptor (closefrom) and opens its own may get the same
/// number; closing it then would close the app's file.
struct file_identity {
  std::uint64_t device = 0, inode = 0;
};

/// Opens a file the sampler reads, or -1: only a regular file (what /sys
/// and /proc attributes are). O_NONBLOCK: a FIFO, a socket or a device
/// under the sampled tree (EDGETRACE_SYSFS_ROOT, a container's odd /sys)
/// would otherwise block the flusher in open() or read() for good, and the
/// app with it once its rings fill. `identity`, when given, gets what it names.
inline int open_sampled(const char* path, file_identity* identity = nullptr) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return -1;
  }
  if (identity != nullptr) *identity = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  return fd;
}

/// Closes `fd` if it still names `identity`'s file, and forgets it (-1)
/// either way: a number the app has since taken is the app's.
inline void close_if_still(int& fd, const file_identity& identity) noexcept {
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_dev) == identity.device &&
      static_cast<std::uint64_t>(st.st_ino) == identity.inode)
    ::close(fd);
  fd = -1;
}

/// Reads a small file into `text` (NUL-terminated); false when it cannot
/// be opened, is not a regular file, or is empty.
inline bool read_small(const char* path, char* text, std::size_t capacity) noexcept {
  const int fd = open_sampled(path);
  if (fd < 0) return false;
  const long got = read_at_start(fd, text, capacity);
  ::close(fd);
  return got > 0;
}

/// Values past this are not a reading (a huge number in a file is garbage).
inline constexpr std::int64_t largest_value = std::int64_t{1} << 53;

/// Parses the number at `p` (after blanks): decimal digits, with a leading
/// '-' only when `negative_ok`. Sets `p` past it. False for no digits, a
/// sign not allowed, or a value past largest_value.
inline bool parse_number(const char*& p, bool negative_ok, std::int64_t& value) noexcept {
  while (*p == ' ' || *p == '\t') ++p;
  const bool negative = *p == '-';
  if (negative) {
    if (!negative_ok) return false;
    ++p;
  }
  if (*p < '0' || *p > '9') return false;
  std::int64_t v = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (v > largest_value / 10) return false;
    v = v * 10 + (*p - '0');
  }
  if (v > largest_value) return false;
  value = negative ? -v : v;
  return true;
}

/// A file that holds one number and nothing else but blanks and a newline.
inline bool parse_whole(const char* text, bool negative_ok, std::int64_t& value) noexcept {
  const char* p = text;
  if (!parse_number(p, negative_ok, value)) return false;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
  return *p == '\0';
}

/// The number after `key` at the start of a line of `text` ("MemAvailable:",
/// "nr_throttled "). False when the key is absent or its value is garbage.
inline bool parse_keyed(const char* text, const char* key, std::int64_t& value) noexcept {
  const std::size_t length = std::strlen(key);
  for (const char* line = text; line != nullptr && *line != '\0';) {
    if (std::strncmp(line, key, length) == 0) {
      const char* p = line + length;
      return parse_number(p, false, value);
    }
    line = std::strchr(line, '\n');
    if (line != nullptr) ++line;
  }
  return false;
}

}  // namespace telemetry
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
