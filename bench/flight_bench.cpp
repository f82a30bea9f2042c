// SPDX-License-Identifier: MIT
// The flight recorder's costs off the hot path, for bench/flight.sh: the flusher's CPU per span at a paced rate, and the time to write a snapshot.
//
// usage: edgetrace_flight_bench paced [SPANS_PER_S [SECONDS]]
//          spans at a steady rate (default 1 000 000/s for 3 s), in batches
//          of one millisecond's worth; prints
//          spans=N seconds=S flusher_cpu_ns_per_span=F app_cpu_ns_per_span=A
//          (F: the flusher thread's CPU time over the run, per span; A: the
//          recording thread's, sleeps excluded)
//        edgetrace_flight_bench snapshot [SPANS]
//          flight mode (EDGETRACE_MODE=flight, EDGETRACE_FLIGHT_AFTER_MS=0):
//          records SPANS spans (default 12 M, enough to wrap a 16 MiB ring),
//          lets the flusher file them, calls edgetrace::snapshot() and times
//          it until OUTPUT.1 is complete (it ends with the end chunk); prints
//          snapshot_bytes=B snapshot_ms=T flusher_cpu_ms=C
#include <edgetrace/edgetrace.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

EDGETRACE_CATEGORY(flight_bench);

namespace {

namespace et = edgetrace::detail;

std::uint64_t clock_read(clockid_t id) {
  timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// CPU time of the flusher thread so far, in ns (0: tracing is off).
std::uint64_t flusher_cpu_ns() {
  const et::runtime* rt = et::the_runtime.load(std::memory_order_acquire);
  clockid_t id;
  if (rt == nullptr || !rt->flusher_cpu_clock(id)) return 0;
  return clock_read(id);
}

/// Four sites of a realistic mix, one after the other.
void batch(long spans) {
  for (long i = 0; i < spans; i += 4) {
    { EDGETRACE_SCOPE(flight_bench, "preprocess"); }
    { EDGETRACE_SCOPE(flight_bench, "infer"); }
    { EDGETRACE_SCOPE(flight_bench, "postprocess"); }
    { EDGETRACE_SCOPE(flight_bench, "publish"); }
  }
}

int paced(double rate, double seconds) {
  const long per_ms = static_cast<long>(rate / 1000.0);
  const long periods = static_cast<long>(seconds * 1000.0);
  batch(4000);  // warm-up: sites defined, ring faulted in
  edgetrace::flush();
  const std::uint64_t flusher_before = flusher_cpu_ns();
  const std::uint64_t app_before = clock_read(CLOCK_THREAD_CPUTIME_ID);
  const std::uint64_t start = clock_read(CLOCK_MONOTONIC);
  timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (long p = 0; p < periods; ++p) {
    batch(per_ms);
    next.tv_nsec += 1000000;
    if (next.tv_nsec >= 1000000000) {
      next.tv_nsec -= 1000000000;
      ++next.tv_sec;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
    }
  }
  const std::uint64_t app = clock_read(CLOCK_THREAD_CPUTIME_ID) - app_before;
  const std::uint64_t wall = clock_read(CLOCK_MONOTONIC) - start;
  edgetrace::flush();  // the flusher's share of the last period too
  const std::uint64_t flusher = flusher_cpu_ns() - flusher_before;
  const double spans = static_cast<double>((per_ms + 3) / 4 * 4 * periods);
  std::printf("spans=%.0f seconds=%.3f flusher_cpu_ns_per_span=%.2f app_cpu_ns_per_span=%.2f\n", spans,
              static_cast<double>(wall) / 1e9, static_cast<double>(flusher) / spans, static_cast<double>(app) / spans);
  return 0;
}

/// Whether `path` is a whole dump: it ends with an end chunk (16 bytes:
/// a header of type 7 with no payload, then its CRC).
bool complete_dump(const char* path, std::uint64_t& size) {
  struct stat st;
  if (stat(path, &st) != 0 || st.st_size < 32) return false;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char last[16];
  const bool read_all = pread(fd, last, sizeof last, st.st_size - 16) == 16;
  close(fd);
  size = static_cast<std::uint64_t>(st.st_size);
  return read_all && last[0] == edgetrace::format::chunk_sync0 && last[1] == edgetrace::format::chunk_sync1 &&
         last[2] == static_cast<unsigned char>(edgetrace::format::chunk_type::end) && last[4] == 0;
}

int snapshot(long spans) {
  const et::runtime* rt = et::the_runtime.load(std::memory_order_acquire);
  if (rt == nullptr) {
    std::fprintf(stderr, "edgetrace_flight_bench snapshot: set EDGETRACE_OUTPUT and EDGETRACE_MODE=flight\n");
    return 2;
  }
  // OUTPUT.1 as the flight recorder names it.
  char path[et::runtime::snapshot_path_capacity];
  rt->snapshot_path(1, path);
  unlink(path);
  batch(spans);
  edgetrace::flush();
  const std::uint64_t flusher_before = flusher_cpu_ns();
  const std::uint64_t start = clock_read(CLOCK_MONOTONIC);
  edgetrace::snapshot("benchmark");
  std::uint64_t size = 0;
  const timespec poll{0, 50000};
  while (!complete_dump(path, size)) {
    if (clock_read(CLOCK_MONOTONIC) - start > 10000000000u) {
      std::fprintf(stderr, "edgetrace_flight_bench snapshot: no complete %s after 10 s\n", path);
      return 1;
    }
    nanosleep(&poll, nullptr);
  }
  const std::uint64_t elapsed = clock_read(CLOCK_MONOTONIC) - start;
  const std::uint64_t flusher = flusher_cpu_ns() - flusher_before;
  std::printf("snapshot_bytes=%llu snapshot_ms=%.2f flusher_cpu_ms=%.2f\n", static_cast<unsigned long long>(size),
              static_cast<double>(elapsed) / 1e6, static_cast<double>(flusher) / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "paced") == 0)
    return paced(argc > 2 ? std::atof(argv[2]) : 1e6, argc > 3 ? std::atof(argv[3]) : 3.0);
  if (argc >= 2 && std::strcmp(argv[1], "snapshot") == 0) return snapshot(argc > 2 ? std::atol(argv[2]) : 12000000);
  std::fprintf(stderr, "usage: edgetrace_flight_bench paced [SPANS_PER_S [SECONDS]] | snapshot [SPANS]\n");
  return 2;
}
