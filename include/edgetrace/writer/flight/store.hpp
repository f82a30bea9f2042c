// SPDX-License-Identifier: MIT
// The flight recorder (EDGETRACE_MODE=flight): an in-memory ring of sealed
// chunks, the chunks every snapshot must carry, the rate limit, and the
// async-signal-safe writer of snapshot dumps (docs/FORMAT.md, chunk 11).
#pragma once

#include <edgetrace/format.hpp>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Writes all of [data, data + size) to `fd`; false on an error.
/// Async-signal-safe: write() only.
inline bool write_fully(int fd, const unsigned char* data, std::size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

/// The rate limit and the snapshot waiting for its post-trigger window.
/// Flusher only (no atomics): requests from other threads reach it through
/// runtime's hand-off fields. Pure logic, so it is tested on its own.
struct flight_schedule {
  std::uint32_t max = 10;        ///< EDGETRACE_FLIGHT_MAX
  std::uint64_t gap_ns = 0;      ///< EDGETRACE_FLIGHT_GAP_MS, in ns
  std::uint64_t after_ns = 0;    ///< EDGETRACE_FLIGHT_AFTER_MS, in ns
  std::uint32_t written = 0;     ///< snapshots written under the limit (crash and exit ones are not counted)
  std::uint64_t skipped = 0;     ///< requests skipped since the last snapshot written (goes into the next one)
  std::uint64_t skipped_total = 0;  ///< requests skipped over the whole run (the exit report)
  std::uint64_t last_ns = 0;     ///< CLOCK_MONOTONIC of the last request accepted; 0: none yet
  // The snapshot accepted and waiting for its post-trigger window.
  bool pending = false;
  format::snapshot_trigger trigger = format::snapshot_trigger::call;
  char reason[format::snapshot_reason_max] = {};
  std::size_t reason_size = 0;
  std::uint64_t trigger_tick = 0;
  std::uint64_t due_ns = 0;      ///< CLOCK_MONOTONIC when it is written
  bool names_used_up = false;    ///< EDGETRACE_FLIGHT_KEEP was reached and said so

  void skip(std::uint64_t count = 1) noexcept {
    skipped += count;
    skipped_total += count;
  }

  /// Applies the rate limit to a request made at `now_ns`: true when it is
  /// scheduled (written at due_ns), false when skipped (counted). A request
  /// while one waits for its window is covered by that one: skipped too.
  /// `immediate` (crash, exit): written at once, outside the limit, and it
  /// replaces a pending one (which then counts as skipped).
  bool request(format::snapshot_trigger why, const char* text, std::size_t size, std::uint64_t tick,
               std::uint64_t now_ns, bool immediate) noexcept {
    if (immediate) {
      if (pending) skip();
    } else if (pending || written >= max || (last_ns != 0 && now_ns - last_ns < gap_ns)) {
      skip();
      return false;
    }
    pending = true;
    trigger = why;
    reason_size = size < sizeof reason ? size : sizeof reason;
    if (reason_size != 0) std::memcpy(reason, text, reason_size);
    trigger_tick = tick;
    due_ns = immediate ? now_ns : now_ns + after_ns;
    if (!immediate) last_ns = now_ns != 0 ? now_ns : 1;
    return true;
  }

  /// The pending snapshot was written: its skipped count went with it.
  void wrote(bool counted) noexcept {
    pending = false;
    skipped = 0;
    if (counted) ++written;
  }
};

/// The in-memory part of the flight recorder. The flusher files every
/// sealed chunk here instead of writing it (take): definitions, threads,
/// the process chunk and capture records go to the sticky store, kept for
/// the whole run (a snapshot must define every site and thread it uses,
/// and each is defined once, at first sight), with a gpu chunk's
/// definitions; events, annotations, GPU spans and anchors, ended threads'
/// totals and later calibrations go to the ring, whose oldest chunks are
/// overwritten. write() turns both into a self-contained dump.
///
/// Threads: take() runs on the flusher only. write() runs on the flusher,
/// or in a crash handler on any thread, possibly while the flusher is in
/// take(): the ring's bounds are published under a sequence count (odd
/// while they change) so the handler reads a consistent set, or, when the
/// flusher itself crashed mid-update, one at most one chunk off; a chunk
/// overwritten under the handler fails its CRC in the reader, which skips
/// it. Memory is mapped once by the flusher (pre-faulted, so neither the
/// app nor the handler faults it in) and never moves.
class flight_recorder {
 public:
  /// Virtual room for the sticky store: touched only as definitions come
  /// (MAP_NORESERVE), never moved, so a crash handler can read it while it
  /// grows. 64 MiB is ~500k sites.
  static constexpr std::size_t sticky_reserve = 64u << 20;

  /// Maps the ring (`ring_bytes`, pre-faulted) and the sticky store, and
  /// splits `output` into the parts a snapshot's name is built from.
  /// Flusher only, once. False (nothing mapped) when memory is short.
  bool start(std::size_t ring_bytes, const char* output, std::uint32_t writer_id) noexcept {
    void* ring = ::mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring == MAP_FAILED) return false;
    // Pre-faulted one page at a time, not with MAP_POPULATE: that holds
    // the process's memory map lock for the whole ring (2 s for 4 GiB),
    // and any app thread that maps or unmaps memory meanwhile (malloc of
    // a large block, a new thread's stack) waits for it. A page fault
    // holds it only for itself.
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::size_t step = page > 0 ? static_cast<std::size_t>(page) : 4096;
    // Progress for the exit message, should the process end first (every
    // MiB: relaxed stores, read by the exiting thread).
    faulting_bytes_.store(ring_bytes, std::memory_order_relaxed);
    for (std::size_t at = 0; at < ring_bytes; at += step) {
      static_cast<volatile unsigned char*>(ring)[at] = 0;
      if ((at & ((std::size_t{1} << 20) - 1)) == 0) faulted_bytes_.store(at, std::memory_order_relaxed);
    }
    faulted_bytes_.store(ring_bytes, std::memory_order_relaxed);
    void* sticky = ::mmap(nullptr, sticky_reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);
    if (sticky == MAP_FAILED) {
      ::munmap(ring, ring_bytes);
      return false;
    }
    // A forked child gets neither (its own runtime maps its own, if any).
    ::madvise(ring, ring_bytes, MADV_DONTFORK);
    ::madvise(sticky, sticky_reserve, MADV_DONTFORK);
    split_output(output);
    writer_id_ = writer_id;
    capacity_ = ring_bytes;
    sticky_ = static_cast<unsigned char*>(sticky);
    ring_ = static_cast<unsigned char*>(ring);
    ready_.store(true, std::memory_order_release);  // a crash handler may use it from here on
    return true;
  }

  /// Gives the ring's memory back (MADV_DONTNEED: the mapping stays, so a
  /// crash handler that reads it finds zeros, which the reader skips as bad
  /// chunks, never a fault) and stops: take() keeps nothing more, write()
  /// writes nothing. Flusher only, once the process's memory runs short.
  void give_back_ring() noexcept {
    ready_.store(false, std::memory_order_release);
    ::madvise(ring_, capacity_, MADV_DONTNEED);
  }

  /// Snapshot numbers stop at `files` (EDGETRACE_FLIGHT_KEEP): with
  /// OUTPUT.1 .. OUTPUT.files all there, write() writes nothing (EEXIST).
  /// Before start().
  void keep_at_most(std::uint64_t files) noexcept { keep_ = files; }

  bool ready() const noexcept { return ready_.load(std::memory_order_acquire); }
  /// While start() faults the ring in: its size (0 before start), and how
  /// much of it is faulted in so far (to the MiB). Any thread.
  std::size_t faulting_bytes() const noexcept { return faulting_bytes_.load(std::memory_order_relaxed); }
  std::size_t faulted_bytes() const noexcept { return faulted_bytes_.load(std::memory_order_relaxed); }
  std::size_t capacity() const noexcept { return capacity_; }
  /// Events and annotations chunks overwritten so far (any thread).
  std::uint64_t overwritten() const noexcept { return overwritten_.load(std::memory_order_relaxed); }
  /// True once, when the sticky store first had no room for a chunk (the
  /// runtime reports it). Flusher only.
  bool sticky_just_filled() noexcept {
    if (!sticky_full_ || sticky_full_told_) return false;
    sticky_full_told_ = true;
    return true;
  }

  /// The next snapshot's sequence number (1, 2, ...). Any thread,
  /// async-signal-safe.
  std::uint64_t next_sequence() noexcept { return sequence_.fetch_add(1, std::memory_order_relaxed) + 1; }

  /// Files the sealed chunks in [data, data + size) (whole chunks, as the
  /// flusher's output buffer holds them). Flusher only. Cost: a memcpy of
  /// the bytes, plus a header read per chunk overwritten.
  void take(const unsigned char* data, std::size_t size) noexcept {
    if (!ready()) return;
    const unsigned char* const end = data + size;
    while (static_cast<std::size_t>(end - data) >= format::chunk_header_size + format::chunk_trailer_size) {
      const std::size_t chunk = chunk_size(data);
      if (chunk > static_cast<std::size_t>(end - data)) break;  // cannot happen: the flusher seals whole chunks
      const auto type = static_cast<format::chunk_type>(data[2]);
      if (type == format::chunk_type::end) {
        // the live stream's end: a snapshot has its own
      } else if (type == format::chunk_type::gpu) {
        split_gpu(data, chunk);
      } else if (sticky_type(type)) {
        keep_sticky(data, chunk);
      } else if (chunk <= capacity_ / 4) {
        keep_in_ring(data, chunk);
      }
      data += chunk;
    }
  }

  /// Writes a snapshot dump to OUTPUT.N (N = info.sequence): file header,
  /// process chunk, snapshot chunk, the sticky chunks, the ring's chunks
  /// oldest first, then `tail` (thread stats and the end chunk; empty from
  /// a crash handler). Never over an existing OUTPUT.N (a previous run's
  /// crash snapshot, another process's, a FIFO or directory by that
  /// name): N then goes on to the next free number, and info.sequence
  /// says which was taken. The dump is written under a temporary name
  /// (OUTPUT.N.<pid>.partial) and linked to OUTPUT.N only once it is
  /// whole, so a full disk or a failed write leaves no file behind, and N
  /// is given back for the next snapshot. Fills info's window first tick,
  /// ring bytes and chunks overwritten. Returns 0, or the errno of the
  /// failed call. Async-signal-safe: access, open, write, close, link,
  /// unlink, getpid and plain code on memory mapped beforehand. Cost:
  /// about one memcpy of the ring into the page cache.
  int write(format::snapshot_info& info, const char* reason, std::size_t reason_size, const unsigned char* tail,
            std::size_t tail_size) noexcept {
    if (!ready()) return ENOMEM;
    const bounds b = read_bounds();
    const std::size_t sticky_size = sticky_size_.load(std::memory_order_acquire);
    const std::size_t process_size = process_size_.load(std::memory_order_acquire);
    info.ring_bytes = capacity_;
    info.chunks_overwritten = overwritten_.load(std::memory_order_relaxed);
    info.window_first_tick = first_tick(b, info.trigger_tick);
    char path[path_capacity], partial[path_capacity + 48];
    for (int attempt = 0; attempt < 8; ++attempt) {
      // The first free number (something there already is left alone).
      for (;;) {
        if (info.sequence > keep_) return EEXIST;  // OUTPUT.1 .. OUTPUT.keep are all taken
        snapshot_path(info.sequence, path);
        if (::access(path, F_OK) != 0 && errno == ENOENT) break;
        info.sequence = next_sequence();
      }
      partial_path(path, partial);
      const int fd = open_snapshot(partial);
      if (fd < 0) {
        give_back(info.sequence);
        return -fd;
      }
      const int error = write_dump(fd, b, info, reason, reason_size, tail, tail_size, sticky_size, process_size);
      ::close(fd);
      if (error != 0) {
        ::unlink(partial);
        give_back(info.sequence);
        return error;
      }
      // link() never replaces: a file another process put there meanwhile
      // stays, and this dump goes on to the next number (its snapshot
      // chunk names the number, so it is written again).
      const int linked = ::link(partial, path) == 0 ? 0 : errno;
      if (linked == EPERM || linked == ENOTSUP || linked == EOPNOTSUPP || linked == EXDEV) {
        // A file system without hard links: a rename, after the check above.
        const int renamed = ::rename(partial, path) == 0 ? 0 : errno;
        if (renamed != 0) {
          ::unlink(partial);
          give_back(info.sequence);
        }
        return renamed;
      }
      ::unlink(partial);
      if (linked != EEXIST) {
        if (linked != 0) give_back(info.sequence);
        return linked;
      }
      info.sequence = next_sequence();
    }
    return EEXIST;
  }

  /// Why no snapshot could be written at all, checked once at start-up so
  /// that a crash snapshot is not lost unannounced: "" when OUTPUT's
  /// directory exists and is writable, else a phrase for one stderr line.
  /// A snapshot is written only when a trigger fires, often long after
  /// start (a crash handler cannot report). Cost: one access().
  const char* unwritable_reason() const noexcept {
    const std::size_t length = std::strlen(stem_);
    if (length == 0 || stem_[length - 1] == '/') return "it names a directory, not a file";
    char directory[sizeof stem_];
    const char* slash = std::strrchr(stem_, '/');
    if (slash == nullptr) {
      directory[0] = '.';
      directory[1] = '\0';
    } else {
      const std::size_t n = slash == stem_ ? 1 : static_cast<std::size_t>(slash - stem_);
      std::memcpy(directory, stem_, n);
      directory[n] = '\0';
    }
    if (::access(directory, W_OK | X_OK) == 0) return "";
    return errno == ENOENT || errno == ENOTDIR ? "its directory does not exist" : "its directory is not writable";
  }

  /// Creates a snapshot file: the fd, or minus an errno (EEXIST: something
  /// is there already, left alone). O_EXCL: a restarted app must not
  /// destroy the previous run's crash snapshot, nor two processes with
  /// one OUTPUT write into one file; it also never opens a FIFO, whose
  /// open would block the flusher or a crash handler until some process
  /// reads it. Async-signal-safe (open).
  static int open_snapshot(const char* path) noexcept {
    int fd;
    do fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    return fd >= 0 ? fd : -errno;
  }

  /// OUTPUT with ".N" before its extension (run.etr -> run.3.etr; no
  /// extension: run -> run.3). Async-signal-safe. `path` holds
  /// path_capacity bytes.
  void snapshot_path(std::uint64_t sequence, char* path) const noexcept {
    char digits[24];
    std::size_t count = 0;
    do digits[count++] = static_cast<char>('0' + sequence % 10);
    while ((sequence /= 10) != 0);
    std::size_t n = std::strlen(stem_);
    std::memcpy(path, stem_, n);
    path[n++] = '.';
    while (count > 0) path[n++] = digits[--count];
    const std::size_t e = std::strlen(extension_);
    std::memcpy(path + n, extension_, e + 1);
  }

 private:
  struct bounds {
    std::size_t begin, end, wrap;
    bool wrapped;
  };

  /// The snapshot dump itself into `fd`: 0, or the errno of the failed write.
  int write_dump(int fd, const bounds& b, const format::snapshot_info& info, const char* reason,
                 std::size_t reason_size, const unsigned char* tail, std::size_t tail_size, std::size_t sticky_size,
                 std::size_t process_size) noexcept {
    unsigned char snapshot[format::chunk_header_size + format::snapshot_payload_max + format::chunk_trailer_size];
    const unsigned char* payload_end =
        format::put_snapshot_payload(snapshot + format::chunk_header_size, info, reason, reason_size);
    const std::size_t snapshot_size = format::seal_chunk(
        snapshot, format::chunk_type::snapshot, writer_id_,
        static_cast<std::uint32_t>(payload_end - snapshot - format::chunk_header_size));
    unsigned char header[format::file_header_size];
    format::write_file_header(header);
    errno = 0;
    bool ok = write_fully(fd, header, sizeof header) && write_fully(fd, sticky_, process_size) &&
              write_fully(fd, snapshot, snapshot_size) &&
              write_fully(fd, sticky_ + process_size, sticky_size - process_size);
    if (b.wrapped) {
      ok = ok && write_fully(fd, ring_ + b.begin, b.wrap - b.begin) && write_fully(fd, ring_, b.end);
    } else {
      ok = ok && write_fully(fd, ring_ + b.begin, b.end - b.begin);
    }
    ok = ok && (tail_size == 0 || write_fully(fd, tail, tail_size));
    return ok ? 0 : (errno != 0 ? errno : EIO);
  }

  /// `path` + ".<pid>.partial": where a snapshot is written until it is
  /// whole. Async-signal-safe.
  static void partial_path(const char* path, char* partial) noexcept {
    std::size_t n = std::strlen(path);
    std::memcpy(partial, path, n);
    partial[n++] = '.';
    char digits[24];
    std::size_t count = 0;
    auto pid = static_cast<unsigned long>(::getpid());
    do digits[count++] = static_cast<char>('0' + pid % 10);
    while ((pid /= 10) != 0);
    while (count > 0) partial[n++] = digits[--count];
    std::memcpy(partial + n, ".partial", sizeof ".partial");
  }

  /// A snapshot that was not written gives its number back, unless a
  /// later one took the next number meanwhile.
  void give_back(std::uint64_t sequence) noexcept {
    std::uint64_t expected = sequence;
    sequence_.compare_exchange_strong(expected, sequence - 1, std::memory_order_relaxed);
  }

  static std::size_t chunk_size(const unsigned char* chunk) noexcept {
    return format::chunk_header_size + format::get_u32(chunk + 4) + format::chunk_trailer_size;
  }

  /// Kept for the whole run. The first two calibration pairs give the
  /// reader a rate; later ones ride in the ring. An ended thread's totals
  /// ride in the ring too: they come after its last events, so they are
  /// in any window that holds some of them.
  bool sticky_type(format::chunk_type type) noexcept {
    switch (type) {
      case format::chunk_type::process:
      case format::chunk_type::definitions:
      case format::chunk_type::thread:
      case format::chunk_type::capture:
      case format::chunk_type::device_tracks:
        return true;
      case format::chunk_type::calibration:
        if (calibrations_kept_ >= 2) return false;
        ++calibrations_kept_;
        return true;
      default:
        return false;
    }
  }

  /// A gpu chunk's definitions (runtime, devices, streams, GPU tracing
  /// off) go to the sticky store, as a stream is defined once, at first
  /// use; its spans, clock anchors (one a second: a reader starts a new
  /// chain at the oldest one kept) and totals (the last wins) go to the
  /// ring. Each part is sealed anew.
  void split_gpu(const unsigned char* chunk, std::size_t size) {
    const unsigned char* p = chunk + format::chunk_header_size;
    const unsigned char* const end = chunk + size - format::chunk_trailer_size;
    timed_.assign(format::chunk_header_size, 0);
    definitions_.assign(format::chunk_header_size, 0);
    while (p < end) {
      const unsigned char* record = p++;
      std::uint64_t body = 0;
      if (!format::get_varint(p, end, body) || body > static_cast<std::uint64_t>(end - p)) break;
      p += body;
      const auto tag = static_cast<format::gpu_record>(*record);
      const bool definition = tag == format::gpu_record::runtime || tag == format::gpu_record::device ||
                              tag == format::gpu_record::stream || tag == format::gpu_record::off;
      std::vector<unsigned char>& to = definition ? definitions_ : timed_;
      to.insert(to.end(), record, p);
    }
    for (std::vector<unsigned char>* part : {&definitions_, &timed_}) {
      const auto payload = static_cast<std::uint32_t>(part->size() - format::chunk_header_size);
      if (payload == 0) continue;
      part->resize(part->size() + format::chunk_trailer_size);
      format::seal_chunk(part->data(), format::chunk_type::gpu, format::get_u32(chunk + 8), payload);
      if (part == &definitions_)
        keep_sticky(part->data(), part->size());
      else if (part->size() <= capacity_ / 4)
        keep_in_ring(part->data(), part->size());
    }
  }

  void keep_sticky(const unsigned char* chunk, std::size_t size) noexcept {
    const std::size_t used = sticky_size_.load(std::memory_order_relaxed);
    if (size > sticky_reserve - used) {
      sticky_full_ = true;
      return;
    }
    std::memcpy(sticky_ + used, chunk, size);
    if (used == 0 && static_cast<format::chunk_type>(chunk[2]) == format::chunk_type::process)
      process_size_.store(size, std::memory_order_release);
    // Release: a crash handler that reads the new size sees the bytes.
    sticky_size_.store(used + size, std::memory_order_release);
  }

  /// Appends a chunk to the ring, overwriting the oldest chunks as needed.
  /// Chunks never wrap: when the room after the newest is short, the
  /// ring goes on at offset 0 and `wrap` marks where the older data ends.
  void keep_in_ring(const unsigned char* chunk, std::size_t size) noexcept {
    // Odd while the bounds change (acq_rel: the handler's acquire of an
    // even count sees the bounds stored before it).
    version_.fetch_add(1, std::memory_order_acq_rel);
    std::size_t begin = begin_.load(std::memory_order_relaxed), end = end_.load(std::memory_order_relaxed);
    std::size_t wrap = wrap_.load(std::memory_order_relaxed);
    bool wrapped = wrapped_.load(std::memory_order_relaxed);
    for (;;) {
      if (begin == end && !wrapped) {
        begin = end = 0;  // empty
        if (size <= capacity_) break;
      }
      if (!wrapped) {
        if (end + size <= capacity_) break;
        wrap = end;  // continue at the start, in front of the oldest chunk
        wrapped = true;
        end = 0;
        continue;
      }
      if (end + size <= begin) break;
      // Overwrite the oldest chunk.
      const unsigned char* oldest = ring_ + begin;
      const auto oldest_type = static_cast<format::chunk_type>(oldest[2]);
      if (oldest_type == format::chunk_type::events || oldest_type == format::chunk_type::annotations)
        overwritten_.fetch_add(1, std::memory_order_relaxed);
      begin += chunk_size(oldest);
      if (begin >= wrap) {  // the upper part is used up: the data is [0, end)
        begin = 0;
        wrapped = false;
        if (end == 0) begin = end = 0;
      }
    }
    begin_.store(begin, std::memory_order_relaxed);
    wrap_.store(wrap, std::memory_order_relaxed);
    wrapped_.store(wrapped, std::memory_order_relaxed);
    end_.store(end, std::memory_order_relaxed);
    version_.fetch_add(1, std::memory_order_release);
    // The bytes go in after the bounds that exclude what they overwrite.
    std::memcpy(ring_ + end, chunk, size);
    version_.fetch_add(1, std::memory_order_acq_rel);
    end_.store(end + size, std::memory_order_relaxed);
    version_.fetch_add(1, std::memory_order_release);
  }

  /// The ring's bounds, read under the sequence count: a few tries, then
  /// whatever was read (the flusher may be the thread that crashed).
  bounds read_bounds() const noexcept {
    bounds b{};
    for (int tries = 0; tries < 1000; ++tries) {
      const std::uint32_t before = version_.load(std::memory_order_acquire);
      // Acquire loads, not relaxed ones and a fence: they keep the second
      // read of the count after them just as well, and g++ rejects
      // atomic_thread_fence under -fsanitize=thread (-Wtsan).
      b.begin = begin_.load(std::memory_order_acquire);
      b.end = end_.load(std::memory_order_acquire);
      b.wrap = wrap_.load(std::memory_order_acquire);
      b.wrapped = wrapped_.load(std::memory_order_acquire);
      if ((before & 1) == 0 && version_.load(std::memory_order_relaxed) == before) break;
    }
    // Never outside the mapping, whatever a torn read gave.
    if (b.wrap > capacity_) b.wrap = capacity_;
    if (b.end > capacity_) b.end = capacity_;
    if (b.begin > (b.wrapped ? b.wrap : b.end)) b.begin = b.wrapped ? b.wrap : b.end;
    if (b.wrapped && b.end > b.begin) b.end = b.begin;
    return b;
  }

  /// The earliest base tick of the events chunks in the ring (`fallback`
  /// when it holds none). Walks chunk headers only.
  std::uint64_t first_tick(const bounds& b, std::uint64_t fallback) const noexcept {
    std::uint64_t first = ~std::uint64_t{0};
    const auto scan = [&](std::size_t from, std::size_t to) {
      while (to - from >= format::chunk_header_size + format::chunk_trailer_size) {
        const unsigned char* chunk = ring_ + from;
        const std::size_t size = chunk_size(chunk);
        if (chunk[0] != format::chunk_sync0 || chunk[1] != format::chunk_sync1 || size > to - from) return;
        if (static_cast<format::chunk_type>(chunk[2]) == format::chunk_type::events) {
          const unsigned char* p = chunk + format::chunk_header_size;
          const unsigned char* payload_end = p + (size - format::chunk_header_size - format::chunk_trailer_size);
          std::uint64_t thread = 0, base = 0;
          if (format::get_varint(p, payload_end, thread) && format::get_varint(p, payload_end, base) && base < first)
            first = base;
        }
        from += size;
      }
    };
    if (b.wrapped) {
      scan(b.begin, b.wrap);
      scan(0, b.end);
    } else {
      scan(b.begin, b.end);
    }
    return first == ~std::uint64_t{0} ? fallback : first;
  }

  /// Splits OUTPUT at its extension: the last '.' of its last path
  /// component, unless that component starts with it.
  void split_output(const char* output) noexcept {
    std::size_t length = std::strlen(output);
    if (length >= sizeof stem_) length = sizeof stem_ - 1;
    const char* slash = std::strrchr(output, '/');
    const char* name = slash != nullptr ? slash + 1 : output;
    const char* dot = std::strrchr(name, '.');
    std::size_t stem = length;
    if (dot != nullptr && dot != name && std::strlen(dot) < sizeof extension_) {
      stem = static_cast<std::size_t>(dot - output);
      std::memcpy(extension_, dot, std::strlen(dot) + 1);
    }
    std::memcpy(stem_, output, stem);
    stem_[stem] = '\0';
  }

  std::uint64_t keep_ = 20;  ///< EDGETRACE_FLIGHT_KEEP: the highest N of OUTPUT.N
  std::atomic<bool> ready_{false};
  std::atomic<std::size_t> faulting_bytes_{0};
  std::atomic<std::size_t> faulted_bytes_{0};
  std::uint32_t writer_id_ = 0;
  std::size_t capacity_ = 0;
  unsigned char* ring_ = nullptr;
  unsigned char* sticky_ = nullptr;
  // Written by the flusher (take), read by write() on any thread.
  std::atomic<std::uint32_t> version_{0};
  std::atomic<std::size_t> begin_{0};  ///< offset of the oldest chunk
  std::atomic<std::size_t> end_{0};    ///< offset after the newest chunk
  std::atomic<std::size_t> wrap_{0};   ///< while wrapped: where the older part ends
  std::atomic<bool> wrapped_{false};   ///< the ring holds [begin, wrap) then [0, end)
  std::atomic<std::size_t> sticky_size_{0};
  std::atomic<std::size_t> process_size_{0};  ///< the process chunk, first in the sticky store
  std::atomic<std::uint64_t> overwritten_{0};
  std::atomic<std::uint64_t> sequence_{0};
  int calibrations_kept_ = 0;  ///< flusher only
  std::vector<unsigned char> definitions_, timed_;  ///< flusher only: a gpu chunk's two parts
  bool sticky_full_ = false;   ///< flusher only
  bool sticky_full_told_ = false;
  char stem_[4096] = {};
  char extension_[64] = {};

 public:
  static constexpr std::size_t path_capacity = sizeof stem_ + sizeof extension_ + 24;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
