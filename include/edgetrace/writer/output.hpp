// SPDX-License-Identifier: MIT
// The dump file: opening it (first writer or appending one), whole writes, the checks that it is still ours before each write, and its room (EDGETRACE_MAX_MB, EDGETRACE_MIN_FREE_MB).
//
// The flusher owns the output (writer/flusher.hpp). It opens it, so a FIFO
// that nobody reads or a stuck file system blocks the flusher, never the
// app; before every write it checks that its descriptor still names the
// file it opened (an app that closes every fd and opens its own file gets
// the same number) and that nobody truncated the file (log rotation).
// docs/TRUST.md, "Outputs that block".
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/writer/clock.hpp>
#include <edgetrace/writer/env.hpp>
#include <edgetrace/writer/platform/linux.hpp>
#include <edgetrace/writer/registry.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// The dump's descriptor and what the flusher knows of the file. The
/// flusher opens, writes and closes it; other threads only read failed()
/// and stalled(), and a forked child's handler closes its copy.
class dump_file {
 public:
  /// What check() found.
  enum class state { ours, gone, truncated };

  const char* path() const noexcept { return path_; }
  static constexpr std::size_t path_capacity = 4096;
  /// Before the flusher starts: the dump's path (cut to path_capacity - 1 bytes).
  void set_path(const char* path) noexcept { std::snprintf(path_, sizeof path_, "%s", path); }
  /// Output failed: tracing is off, the flusher only discards.
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  /// Acquire: what failed before it is visible.
  bool failed_acquire() const noexcept { return failed_.load(); }
  bool regular() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { return output_regular_; }
  /// Flusher only: the descriptor, and the file's size as this writer knows it.
  int descriptor() const noexcept { return fd_.load(std::memory_order_relaxed); }
  std::uint64_t size() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { return expected_size_; }

  /// Opens path() for appending (flusher thread). A FIFO without a reader
  /// first fails at once (O_NONBLOCK): waiting() is called (the starting
  /// thread is told and goes on), then the open waits for a reader.
  /// Returns the descriptor, or -1 after one stderr line.
  template <class Waiting>
  int open(Waiting&& waiting) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    int fd = ::open(path_, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0 && errno == ENXIO) {
      waiting();
      do fd = ::open(path_, O_WRONLY | O_APPEND | O_CLOEXEC);
      while (fd < 0 && errno == EINTR);
    }
    if (fd < 0) {
      char message[4400];
      std::snprintf(message, sizeof message, "cannot open EDGETRACE_OUTPUT='%s': %s; tracing is off", path_,
                    std::strerror(errno));
      fail_with(message);
      return -1;
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK) != 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // writes wait (here)
    struct stat st;
    if (::fstat(fd, &st) == 0) {
      output_dev_ = st.st_dev;
      output_ino_ = st.st_ino;
      output_regular_ = S_ISREG(st.st_mode);
      output_fifo_ = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
    }
    fd_.store(fd, std::memory_order_release);
    return fd;
  }

  /// After open(): true if this writer is the file's first live one, which
  /// then truncates it (the caller writes the file header first); else it
  /// appends after what is there. A file this process wrote before an
  /// exec() is appended to: its earlier image's lock went with the exec, not
  /// its data.
  bool begin(int fd, std::uint32_t writer_id) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const bool first = claim_file(fd, writer_id);  // the lock first: the size is read under it
    struct stat st;
    const bool known = ::fstat(fd, &st) == 0;
    if (first && !(known && written_before_exec(st))) {
      const int ignored = ::ftruncate(fd, 0);  // fails harmlessly on /dev/null, FIFOs
      (void)ignored;
      return true;
    }
    if (known) expected_size_ = static_cast<std::uint64_t>(st.st_size);
    return false;
  }

  /// Whether this process wrote the (unlocked) file before it called
  /// exec(): the file holds a process chunk of this process, by its pid and
  /// identity (os::own_identity: start time in clock ticks and boot id,
  /// which exec keeps and no other process shares, format 1.15). Clocks
  /// play no part: a dump whose time is ahead of the local clock (a clock
  /// stepped back, a file server ahead) is another run's, and a clock
  /// stepped forward between the old image's writes and the exec changes
  /// nothing. The chunk headers are walked from the start, reading only
  /// process chunks (an exec'd image's is near the start in the usual
  /// launcher case): at most max_walked chunks. A longer file, one that
  /// does not walk (damage, a foreign file), or a process without /proc
  /// falls back to the file's time: written after this process began.
  static constexpr int max_walked = 16384;
  bool written_before_exec(const struct stat& st) const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (st.st_size == 0) return false;
    const os::process_identity me = os::own_identity();
    // The dump's descriptor is write-only: the walk reads through one of
    // its own, on the same file (device and inode).
    const int reading = me.known && S_ISREG(st.st_mode) ? ::open(path_, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
    if (reading >= 0) {
      struct stat same;
      const int found = ::fstat(reading, &same) == 0 && same.st_dev == st.st_dev && same.st_ino == st.st_ino
                            ? holds_process(reading, static_cast<std::uint64_t>(st.st_size),
                                            static_cast<std::uint64_t>(::getpid()), me)
                            : -1;
      ::close(reading);
      if (found >= 0) return found == 1;
    }
    const std::uint64_t began_by = os::process_began_by_realtime_ns();
    const std::int64_t changed = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return began_by != 0 && changed > 0 && static_cast<std::uint64_t>(changed) > began_by + 2000000u;
  }

  /// 1 when a process chunk of `pid` with identity `me` is among the file's
  /// chunks, 0 when the whole file walked and none is, -1 when the walk
  /// could not tell (max_walked, a bad header, a read error).
  static int holds_process(int fd, std::uint64_t size, std::uint64_t pid, const os::process_identity& me) noexcept {
    std::uint64_t at = 0;
    for (int walked = 0; at < size; ++walked) {
      if (walked == max_walked) return -1;
      unsigned char head[format::file_header_size];
      if (size - at < format::chunk_header_size || ::pread(fd, head, format::chunk_header_size, static_cast<off_t>(at)) !=
                                                       static_cast<ssize_t>(format::chunk_header_size))
        return -1;
      if (std::memcmp(head, format::file_magic, 8) == 0) {  // a stream's file header (the start, a restart)
        at += format::file_header_size;
        continue;
      }
      if (head[0] != format::chunk_sync0 || head[1] != format::chunk_sync1) return -1;
      const std::uint32_t payload = format::get_u32(head + 4);
      if (payload > format::max_chunk_payload) return -1;
      if (static_cast<format::chunk_type>(head[2]) == format::chunk_type::process && payload <= 4096) {
        unsigned char body[4096];
        if (::pread(fd, body, payload, static_cast<off_t>(at + format::chunk_header_size)) != static_cast<ssize_t>(payload))
          return -1;
        if (is_process(body, body + payload, pid, me)) return 1;
      }
      at += format::chunk_header_size + payload + format::chunk_trailer_size;
    }
    return 0;
  }

  /// Whether a process chunk's payload names `pid` with identity `me`.
  static bool is_process(const unsigned char* p, const unsigned char* end, std::uint64_t pid,
                         const os::process_identity& me) noexcept {
    std::uint64_t value = 0, name = 0, ticks = 0;
    if (!format::get_varint(p, end, value) || value != pid) return false;
    if (end - p < 2) return false;
    p += 2;  // clock source, clock flags
    for (int field = 0; field < 3; ++field)  // nominal rate, ring capacity, flush period
      if (!format::get_varint(p, end, value)) return false;
    if (!format::get_varint(p, end, name) || static_cast<std::uint64_t>(end - p) < name + 1) return false;
    p += name + 1;  // the name, the overload policy
    if (!format::get_varint(p, end, ticks) || end - p < 16) return false;
    return ticks == me.start_ticks && std::memcmp(p, me.boot_id, 16) == 0;
  }

  /// Takes (or, with F_UNLCK, releases) a one-byte open-file-description
  /// lock at `offset`; with `wait`, retries for at most 200 ms.
  static bool file_lock(int fd, short type, off_t offset, bool wait) noexcept {
    struct flock lock;
    std::memset(&lock, 0, sizeof lock);
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = offset;
    lock.l_len = 1;
    for (int tries = 0;; ++tries) {
      if (::fcntl(fd, F_OFD_SETLK, &lock) == 0) return true;
      if (!wait || (errno != EAGAIN && errno != EACCES) || tries >= 200) return false;
      timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    }
  }

  /// Whether this process is the file's first live writer, so the one to
  /// truncate it and write its header. Every writer holds a lock on a byte
  /// of its own past offset 0 for its lifetime (released when it exits,
  /// however it exits; write locks, as the descriptor is write-only); the
  /// first is the one that finds none, under the byte-0 lock that orders
  /// writers starting together. So staggered writers (A starts, B starts,
  /// A exits, C starts) all append to one dump: C sees B's lock and
  /// destroys nothing. Without locks (some network file systems) every
  /// writer is first, as with an O_TRUNC open. FIFOs and devices: nothing
  /// to claim.
  bool claim_file(int fd, std::uint32_t writer_id) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!output_regular_) return true;
    struct flock probe;
    std::memset(&probe, 0, sizeof probe);
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_start = 1;
    probe.l_len = 0;  // to the end of any offset
    const bool others = ::fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
    for (off_t offset = 1 + static_cast<off_t>(writer_id & 0x3FFFFFFFu), tries = 0; tries < 64; ++offset, ++tries)
      if (file_lock(fd, F_WRLCK, offset, false)) break;  // taken by a writer with the same number: the next one
    return !others;
  }

  /// Writes all of [data, data+size) with as many write() calls as the
  /// kernel needs; on failure reports once and turns tracing off.
  bool write_all(const unsigned char* data, std::size_t size) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (failed_.load(std::memory_order_relaxed)) return false;
    const int fd = fd_.load(std::memory_order_relaxed);
    write_since_ns_.store(clock_ns(CLOCK_MONOTONIC), std::memory_order_relaxed);
    const std::size_t total = size;
    while (size > 0) {
      const ssize_t n = ::write(fd, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_since_ns_.store(0, std::memory_order_relaxed);
        fail("writing", n < 0 ? errno : ENOSPC);
        return false;
      }
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    const std::uint64_t took = clock_ns(CLOCK_MONOTONIC) - write_since_ns_.load(std::memory_order_relaxed);
    write_since_ns_.store(0, std::memory_order_relaxed);
    expected_size_ += total;
    if (took >= slow_write_ns) {
      ++slow_writes_;
      if (took > longest_write_ns_) longest_write_ns_ = took;
    }
    return true;
  }

  /// A write that took this long is an output that stalled (the drop
  /// reports name it): a reader that paused, a full pipe, a stuck disk.
  static constexpr std::uint64_t slow_write_ns = 100000000u;
  /// Flusher only: writes that took slow_write_ns or more, and the longest.
  std::uint64_t slow_writes() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { return slow_writes_; }
  std::uint64_t longest_write_ns() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { return longest_write_ns_; }
  /// Flusher only: what the output is, in words ("a regular file", "a pipe"...).
  const char* kind_text() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    return output_regular_ ? "a regular file" : output_fifo_ ? "a pipe" : "not a regular file";
  }

  void fail(const char* what, int error) noexcept {
    char message[4400];
    std::snprintf(message, sizeof message, "%s '%s' failed: %s; tracing is off", what, path_, std::strerror(error));
    fail_with(message);
  }

  /// Turns tracing off with one line (the first failure wins).
  void fail_with(const char* message) noexcept {
    if (failed_.exchange(true)) return;
    report("%s", message);
    mutex_lock lock(category_mutex);
    set_recording_locked(false);
  }

  /// The dump was deleted (st_nlink == 0): tracing is off.
  void fail_deleted() noexcept {
    char message[4400];
    std::snprintf(message, sizeof message, "output '%s' was deleted while tracing; tracing is off", path_);
    fail_with(message);
  }

  /// True when the output took no data for at least `ns` (a write stuck
  /// that long, or a file not opened yet: `opened` false): exit and unload
  /// stop waiting.
  bool stalled(std::uint64_t ns, bool opened) const noexcept {
    if (!opened) return !failed_.load(std::memory_order_relaxed);
    const std::uint64_t since = write_since_ns_.load(std::memory_order_relaxed);
    return since != 0 && clock_ns(CLOCK_MONOTONIC) - since >= ns;
  }

  /// Checks, before a write, that the descriptor still names the dump and
  /// that the dump was not truncated under us (then `truncated_to` is its
  /// size). One fstat.
  state check(std::uint64_t& truncated_to) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!fd_ours_) return state::gone;
    char message[4400];
    struct stat st;
    if (::fstat(fd_.load(std::memory_order_relaxed), &st) != 0) {
      fd_ours_ = false;
      std::snprintf(message, sizeof message,
                    "the descriptor of EDGETRACE_OUTPUT '%s' was closed by the application; tracing is off", path_);
      fail_with(message);
      return state::gone;
    }
    if (st.st_dev != output_dev_ || st.st_ino != output_ino_) {
      fd_ours_ = false;
      std::snprintf(message, sizeof message,
                    "descriptor %d no longer names EDGETRACE_OUTPUT '%s' (the application closed it and opened "
                    "another file under that number); nothing more is written to it; tracing is off",
                    fd_.load(std::memory_order_relaxed), path_);
      fail_with(message);
      return state::gone;
    }
    if (st.st_nlink == 0) {
      fail_deleted();
      return state::gone;
    }
    if (output_regular_ && static_cast<std::uint64_t>(st.st_size) < expected_size_) {
      truncated_to = static_cast<std::uint64_t>(st.st_size);
      return state::truncated;
    }
    return state::ours;
  }

  /// The file was truncated by someone else to `size`: says so once; the
  /// stream starts again at the new end.
  void note_truncated(std::uint64_t size) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!truncation_reported_) {
      truncation_reported_ = true;
      report("EDGETRACE_OUTPUT '%s' was truncated by another process (%llu bytes left of at least %llu; log "
             "rotation?); the trace goes on after a new file header",
             path_, static_cast<unsigned long long>(size), static_cast<unsigned long long>(expected_size_));
    }
    expected_size_ = size;
  }

  /// Flight mode: no dump is open, nothing to check before writes.
  void disown() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { fd_ours_ = false; }

  /// The descriptor is still ours and open (the deletion check each cycle).
  bool fd_ours() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { return fd_ours_; }

  /// Closes the dump unless its number now names someone else's file
  /// (async-signal-safe: the fork child's handler calls it too).
  void close() noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {  // the flusher, or a fork child with every lock held
    const int fd = fd_.exchange(-1, std::memory_order_acq_rel);
    struct stat st;
    if (fd >= 0 && fd_ours_ && ::fstat(fd, &st) == 0 && st.st_dev == output_dev_ && st.st_ino == output_ino_)
      ::close(fd);
  }

 private:
  char path_[path_capacity] = {};
  /// Opened, written and closed by the flusher; atomic because a forked
  /// child's fork handler reads it.
  std::atomic<int> fd_{-1};
  /// Set when output failed; the flusher then only discards.
  std::atomic<bool> failed_{false};
  /// Flusher only, set by open: what the descriptor named then.
  dev_t output_dev_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  ino_t output_ino_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  bool output_regular_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = false;
  bool output_fifo_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = false;
  std::uint64_t slow_writes_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  std::uint64_t longest_write_ns_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  /// Flusher only: false once the descriptor's number names another file
  /// (the app closed ours and reused it): never write to or close it.
  bool fd_ours_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = true;
  /// Flusher only: the file's size can be no smaller than this after our
  /// writes (other writers only append); smaller means truncated.
  std::uint64_t expected_size_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  bool truncation_reported_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = false;
  /// CLOCK_MONOTONIC ns when the write() in progress began, 0 between
  /// writes (flusher stores; exit and unload read it to see a stall).
  std::atomic<std::uint64_t> write_since_ns_{0};
};

// ------------------------------------------------------------ the dump's room
//
// A traced service that runs for hours writes a dump that grows for hours;
// on an SD card or a small root file system it would fill the disk, and
// then the app's own files fail to write too. The flusher asks this guard
// before each write of the continuous stream (flush_output, writer/stream.hpp).
// Two thresholds per bound: near it (a margin of an eighth of the bound,
// 64 KiB to 64 MiB) recording stops for good, in the dump's words (a
// recording record, writer/capture_control.hpp), so what was recorded is
// written and the dump ends complete; a write that would pass the bound
// itself is never made: tracing turns off as on a full disk. So that no
// write has to pass it, the flusher asks before it encodes a ring
// (stream::drain_locked): records that would come near the bound stop
// recording first, and after the stop, records that would not fit before
// it, less a tail kept for the end (thread totals, a last calibration pair,
// the end chunk), are dropped, counted in their thread's total, instead of
// written: the dump always ends complete (4 dense threads on 1 MiB rings
// under a 1-2 MiB bound ended without their end record 13 runs in 16 when
// the backlog written after the stop passed the margin). Free space is
// read with one fstatvfs at most every 100 ms, and at every write once it
// is within three margins of the floor; in between the guard subtracts
// what it wrote. Flight mode writes snapshots only, bounded by its own
// settings, and is not guarded. docs/RELIABILITY.md, "The dump never fills
// the disk".

/// Flusher only: the bounds of one stream's dump, and what it knows of its
/// file system's free space.
class space_guard {
 public:
  /// What a write of the continuous stream may do.
  enum class verdict : std::uint8_t {
    write,           ///< far from every bound
    stop_recording,  ///< near one: stop recording (once), then write
    refuse,          ///< the write would pass one: tracing is off, nothing written
  };

  /// The bounds of `config` for a dump that is a regular file (anything
  /// else, and flight mode, is not guarded). Called as the stream opens.
  void configure(const settings& config, bool regular_file) noexcept {
    *this = space_guard{};
    enabled_ = regular_file && !config.flight;
    max_bytes_ = std::uint64_t{config.max_mb} << 20;
    min_free_bytes_ = std::uint64_t{config.min_free_mb} << 20;
    min_free_auto_ = config.min_free_auto;
  }

  /// Before writing `size` bytes to descriptor `fd`, whose dump holds
  /// `written` bytes (as this writer knows it), at CLOCK_MONOTONIC
  /// `now_ns`. A verdict other than write leaves one line for the caller's
  /// report in `why`.
  verdict check(int fd, std::uint64_t written, std::uint64_t size, std::uint64_t now_ns, char* why,
                std::size_t why_size) noexcept {
    if (!enabled_ || refused_) return verdict::write;
    if (max_bytes_ != 0) {
      if (written + size > max_bytes_) {
        std::snprintf(why, why_size, "the dump would pass EDGETRACE_MAX_MB=%llu",
                      static_cast<unsigned long long>(max_bytes_ >> 20));
        refused_ = true;
        return verdict::refuse;
      }
      if (!stopped_ && written + size > max_bytes_ - margin(max_bytes_)) {
        stop_near_max(written + size, why, why_size);
        return verdict::stop_recording;
      }
    }
    if (!watch_free_space(fd, now_ns)) return verdict::write;
    const std::uint64_t free_now = free_bytes_ > size ? free_bytes_ - size : 0;
    if (free_now < floor_bytes_) {
      std::snprintf(why, why_size, "writing would leave less than %s free on the dump's file system", floor_text());
      refused_ = true;
      return verdict::refuse;
    }
    free_bytes_ = free_now;
    if (!stopped_ && free_now < floor_bytes_ + margin(floor_bytes_)) {
      stop_near_floor(free_now, why, why_size);
      return verdict::stop_recording;
    }
    return verdict::write;
  }

  /// Whether a bound applies to this stream and tracing is on: the
  /// flusher then asks before it encodes (stream::records_below_bound).
  bool bounded() const noexcept {
    return enabled_ && !refused_ && (max_bytes_ != 0 || (enabled_free_ && (min_free_auto_ || min_free_bytes_ != 0)));
  }

  /// The tail kept below a bound after the stop: thread totals (a few
  /// dozen bytes each), a last calibration pair, capture and end chunks.
  static std::uint64_t tail_bytes(std::uint64_t threads) noexcept { return 4096 + 64 * threads; }

  /// The bytes a dump of `written` bytes may still take: below
  /// EDGETRACE_MAX_MB, and above the free-space floor as last known; the
  /// most a uint64 holds when neither applies.
  std::uint64_t room(std::uint64_t written) const noexcept {
    std::uint64_t left = ~std::uint64_t{0};
    if (!enabled_ || refused_) return left;
    if (max_bytes_ != 0) left = written >= max_bytes_ ? 0 : max_bytes_ - written;
    if (enabled_free_ && floor_bytes_ != 0) {
      const std::uint64_t above = free_bytes_ > floor_bytes_ ? free_bytes_ - floor_bytes_ : 0;
      left = std::min(left, above);
    }
    return left;
  }

  /// Before encoding what would make the dump `size` bytes larger than
  /// `written` (the file and the output not yet written): whether that
  /// comes near a bound, in which case recording stops now (once; one line
  /// in `why` for the caller's report, as check()'s stop_recording).
  bool stop_if_near(std::uint64_t written, std::uint64_t size, char* why, std::size_t why_size) noexcept {
    if (!enabled_ || refused_ || stopped_) return false;
    if (max_bytes_ != 0 && written + size > max_bytes_ - margin(max_bytes_)) {
      stop_near_max(written, why, why_size);
      return true;
    }
    if (enabled_free_ && floor_bytes_ != 0 &&
        (free_bytes_ < size || free_bytes_ - size < floor_bytes_ + margin(floor_bytes_))) {
      stop_near_floor(free_bytes_, why, why_size);
      return true;
    }
    return false;
  }

  /// Whether a stop_recording verdict was given (once per stream), and for
  /// which bound.
  bool stopped() const noexcept { return stopped_; }
  format::capture_reason reason() const noexcept { return reason_; }

  /// How far from a bound recording stops: an eighth of it, 64 KiB to 64 MiB.
  static std::uint64_t margin(std::uint64_t bound) noexcept {
    const std::uint64_t eighth = bound / 8;
    return eighth < (64u << 10) ? (64u << 10) : eighth > (64u << 20) ? (64u << 20) : eighth;
  }
  /// The automatic floor: 5 % of the file system, at most 512 MiB.
  static std::uint64_t automatic_floor(std::uint64_t file_system_bytes) noexcept {
    const std::uint64_t share = file_system_bytes / 20;
    return share < (std::uint64_t{512} << 20) ? share : (std::uint64_t{512} << 20);
  }

 private:
  /// The stop, and its one line.
  void stop_near_max(std::uint64_t written, char* why, std::size_t why_size) noexcept {
    std::snprintf(why, why_size,
                  "the dump reached %s of EDGETRACE_MAX_MB=%llu; recording stopped for good (what fits below it is "
                  "written, what does not is dropped and counted; the dump ends complete)",
                  size_text(written).text, static_cast<unsigned long long>(max_bytes_ >> 20));
    stopped_ = true;
    reason_ = format::capture_reason::max_size;
  }
  void stop_near_floor(std::uint64_t free_now, char* why, std::size_t why_size) noexcept {
    std::snprintf(why, why_size,
                  "the dump's file system has %s free, near %s; recording stopped for good so that the trace does "
                  "not fill it (what fits above it is written, what does not is dropped and counted; the dump ends "
                  "complete)",
                  size_text(free_now).text, floor_text());
    stopped_ = true;
    reason_ = format::capture_reason::min_free;
  }

  /// A size for a message: whole MiB from 1 MiB up, else KiB.
  struct size_words {
    char text[32];
  };
  static size_words size_text(std::uint64_t bytes) noexcept {
    size_words words;
    if (bytes >= (1u << 20)) std::snprintf(words.text, sizeof words.text, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
    else std::snprintf(words.text, sizeof words.text, "%llu KiB", static_cast<unsigned long long>(bytes >> 10));
    return words;
  }

  /// Refreshes free_bytes_ when due; false when the floor is off or the
  /// file system does not say (then nothing is guarded by it).
  bool watch_free_space(int fd, std::uint64_t now_ns) noexcept {
    if (!min_free_auto_ && min_free_bytes_ == 0) return false;
    const bool due = last_query_ns_ == 0 || now_ns - last_query_ns_ >= 100000000u ||
                     free_bytes_ < floor_bytes_ + 3 * margin(floor_bytes_);
    if (due) {
      struct statvfs fs;
      if (::fstatvfs(fd, &fs) != 0 || fs.f_frsize == 0 || fs.f_blocks == 0) {
        if (last_query_ns_ == 0) enabled_free_ = false;  // never known: not guarded
        last_query_ns_ = now_ns;
        return enabled_free_;
      }
      last_query_ns_ = now_ns;
      free_bytes_ = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
      if (floor_bytes_ == 0)
        floor_bytes_ = min_free_auto_ ? automatic_floor(static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize)
                                      : min_free_bytes_;
    }
    return enabled_free_ && floor_bytes_ != 0;
  }

  /// "EDGETRACE_MIN_FREE_MB=N" or the automatic floor's words.
  const char* floor_text() noexcept {
    if (min_free_auto_)
      std::snprintf(floor_text_, sizeof floor_text_,
                    "the %s that EDGETRACE_MIN_FREE_MB keeps by default (5 %% of it, at most 512 MiB)",
                    size_text(floor_bytes_).text);
    else
      std::snprintf(floor_text_, sizeof floor_text_, "EDGETRACE_MIN_FREE_MB=%llu",
                    static_cast<unsigned long long>(floor_bytes_ >> 20));
    return floor_text_;
  }

  bool enabled_ = false;
  bool enabled_free_ = true;
  bool stopped_ = false;  ///< recording was stopped (once)
  bool refused_ = false;  ///< a write was refused: tracing is off
  bool min_free_auto_ = true;
  format::capture_reason reason_ = format::capture_reason::max_size;
  std::uint64_t max_bytes_ = 0;       ///< 0: no bound
  std::uint64_t min_free_bytes_ = 0;  ///< with min_free_auto_ false; 0: off
  std::uint64_t floor_bytes_ = 0;     ///< the floor in force, once known
  std::uint64_t free_bytes_ = 0;      ///< the last fstatvfs, less what was written since
  std::uint64_t last_query_ns_ = 0;
  char floor_text_[128] = {};
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
