// SPDX-License-Identifier: MIT
// The flight recorder's costs off the hot path, for bench/flight.sh: the flusher's CPU per span at a paced rate, and the time to write a snapshot.
//
// usage: edgetrace_flight_bench paced [SPANS_PER_S [SECONDS]]
//          spans at a steady rate (default 1 000 000/s for 3 s), in batches
//          of one millisecond's worth; prints
//          spans=N seconds=S flusher_cpu_ns_per_span=F app_cpu_ns_per_span=A
//          (F: the flusher thread's CPU time over the run, per span; A: the
//          recording thread's, sleeps excluded)
#include <edgetrace/edgetrace.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>

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
  if (rt == nullptr || !rt->flusher_started_ || pthread_getcpuclockid(rt->flusher_, &id) != 0) return 0;
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

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "paced") == 0)
    return paced(argc > 2 ? std::atof(argv[2]) : 1e6, argc > 3 ? std::atof(argv[3]) : 3.0);
  std::fprintf(stderr, "usage: edgetrace_flight_bench paced [SPANS_PER_S [SECONDS]]\n");
  return 2;
}
