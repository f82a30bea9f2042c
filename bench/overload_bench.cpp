// SPDX-License-Identifier: MIT
// Loops as dense as tracing gets, timed on the recording threads, for
// bench/overload.sh: the same loop body untraced ("empty"), with the least
// any tracer must do per span ("floor": two raw ticks and one 24-byte store
// to a thread-local array) and with edgetrace ("traced", whatever
// EDGETRACE_ON_FULL says). The script runs them interleaved, round by
// round, and counts loss from the dump.
//
// usage: edgetrace_overload_bench WORKLOAD VARIANT
//   WORKLOAD  w1_1t  10 M empty spans on 1 thread
//             w1_2t  2 threads x 5 M empty spans, released together
//             w1_4t, w1_8t, w1_16t, w1_32t, w1_64t, w1_128t: that many threads, 20 M empty
//                    spans in all, released together (a pool larger than
//                    the core count)
//             w2     1 M spans around ~200 LCG steps of work
//             w2_2t  2 threads x w2, released together (an engine whose
//                    work keeps both cores busy)
//             w3     1 M x outer{mid{inner}}: 3 M spans
//   VARIANT   empty | floor | traced
// prints: hot_ns_per_span=X spans_issued=N flusher_cpu_ns_per_span=F
// (X: the timed loop's wall time per span of one thread, for the
// workloads on several threads the slowest thread's; F: the flusher thread's CPU time over every span issued)
#include <edgetrace/edgetrace.hpp>

#include "floor.hpp"
#include "flusher_cpu.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

EDGETRACE_CATEGORY(overload);

namespace {

namespace et = edgetrace::detail;

/// The floor's span: a tick at construction, a tick and a store at the end.
class floor_span {
 public:
  explicit floor_span(std::uint64_t id) noexcept : id_(id), begin_(et::ticks()) {}
  ~floor_span() { edgetrace_bench::floor_store(id_, begin_, et::ticks()); }
  floor_span(const floor_span&) = delete;
  floor_span& operator=(const floor_span&) = delete;

 private:
  std::uint64_t id_;
  std::uint64_t begin_;
};

enum class variant { empty, floor, traced };

volatile long sink;  // what the loops store, so the compiler keeps them

// One loop per variant (templates), each compiled as tight as it can be.
template <variant v>
__attribute__((noinline)) void dense(long n) {
  for (long i = 0; i < n; ++i) {
    if constexpr (v == variant::traced) {
      EDGETRACE_SCOPE(overload, "dense");
      sink = i;
    } else if constexpr (v == variant::floor) {
      floor_span span(1);
      sink = i;
    } else {
      sink = i;
    }
  }
}

template <variant v>
__attribute__((noinline)) std::uint64_t work(long n, int steps) {
  std::uint64_t acc = 88172645463325252ull;
  for (long i = 0; i < n; ++i) {
    auto body = [&] {
      asm volatile("" : "+r"(acc));
      for (int j = 0; j < steps; ++j) acc = acc * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(acc));
    };
    if constexpr (v == variant::traced) {
      EDGETRACE_SCOPE(overload, "work");
      body();
    } else if constexpr (v == variant::floor) {
      floor_span span(2);
      body();
    } else {
      body();
    }
  }
  return acc;
}

template <variant v>
__attribute__((noinline)) void nested(long n) {
  for (long i = 0; i < n; ++i) {
    if constexpr (v == variant::traced) {
      EDGETRACE_SCOPE(overload, "outer");
      EDGETRACE_SCOPE(overload, "mid");
      EDGETRACE_SCOPE(overload, "inner");
      sink = i;
    } else if constexpr (v == variant::floor) {
      floor_span outer(3);
      floor_span mid(4);
      floor_span inner(5);
      sink = i;
    } else {
      sink = i;
    }
  }
}

template <class Body>
double timed_ns(Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

volatile std::uint64_t result_sink;
constexpr long warm_up = 1000;

/// Runs warm() then, released together with the others, timed() on
/// `count` threads; returns the slowest thread's time (every core busy).
template <class Warm, class Timed>
double on_threads(int count, Warm warm, Timed timed) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> per_thread(static_cast<std::size_t>(count), 0.0);
  std::vector<std::thread> pool;
  for (int t = 0; t < count; ++t) {
    pool.emplace_back([&, t] {
      warm();
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      per_thread[static_cast<std::size_t>(t)] = timed_ns(timed);
    });
  }
  while (ready.load() != count) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& thread : pool) thread.join();
  return *std::max_element(per_thread.begin(), per_thread.end());
}

/// The thread pools of "w1_Nt": N threads, 20 M spans in all.
constexpr int pool_sizes[] = {4, 8, 16, 32, 64, 128};

/// N of a "w1_Nt" workload in pool_sizes, else 0.
int pool_size(const char* workload) {
  for (int n : pool_sizes)
    if (std::string(workload) == "w1_" + std::to_string(n) + "t") return n;
  return 0;
}

template <variant v>
int run(const char* workload) {
  double hot_ns = 0;
  long spans = 0, issued = 0;
  if (std::strcmp(workload, "w1_1t") == 0) {
    const long n = 10000000;
    dense<v>(warm_up);
    hot_ns = timed_ns([&] { dense<v>(n); });
    spans = n;
    issued = n + warm_up;
  } else if (std::strcmp(workload, "w2") == 0) {
    const long n = 1000000;
    result_sink = work<v>(warm_up, 200);
    hot_ns = timed_ns([&] { result_sink = work<v>(n, 200); });
    spans = n;
    issued = n + warm_up;
  } else if (std::strcmp(workload, "w3") == 0) {
    const long n = 1000000;
    nested<v>(warm_up);
    hot_ns = timed_ns([&] { nested<v>(n); });
    spans = 3 * n;
    issued = 3 * (n + warm_up);
  } else if (std::strcmp(workload, "w1_2t") == 0) {
    constexpr long n = 5000000;
    hot_ns = on_threads(2, [] { dense<v>(warm_up); }, [] { dense<v>(n); });
    spans = n;  // per thread: the cost of one span on one thread, both busy
    issued = 2 * (n + warm_up);
  } else if (std::strcmp(workload, "w2_2t") == 0) {
    constexpr long n = 1000000;
    hot_ns = on_threads(2, [] { result_sink = work<v>(warm_up, 200); }, [] { result_sink = work<v>(n, 200); });
    spans = n;
    issued = 2 * (n + warm_up);
  } else if (const int threads = pool_size(workload); threads != 0) {
    // A thread pool larger than the core count: the slowest thread's time
    // per span of its own, as for w1_2t.
    const long n = 20000000 / threads;
    hot_ns = on_threads(threads, [] { dense<v>(warm_up); }, [n] { dense<v>(n); });
    spans = n;
    issued = threads * (n + warm_up);
  } else {
    std::fprintf(stderr,
                 "edgetrace_overload_bench: unknown workload '%s' (w1_1t, w1_2t, w2, w2_2t, w3, w1_4t, w1_8t, "
                 "w1_16t, w1_32t, w1_64t, w1_128t)\n",
                 workload);
    return 2;
  }
  double flusher_ns = 0;
  if (v == variant::traced) {
    edgetrace::flush();
    flusher_ns = edgetrace_bench::flusher_cpu_ns();
  }
  std::printf("hot_ns_per_span=%.3f spans_issued=%ld flusher_cpu_ns_per_span=%.3f\n",
              hot_ns / static_cast<double>(spans), issued, flusher_ns / static_cast<double>(issued));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: edgetrace_overload_bench w1_1t|w1_2t|w2|w2_2t|w3|w1_4t|w1_8t|w1_16t|w1_32t|w1_64t|w1_128t "
                 "empty|floor|traced\n");
    return 2;
  }
  if (std::strcmp(argv[2], "empty") == 0) return run<variant::empty>(argv[1]);
  if (std::strcmp(argv[2], "floor") == 0) return run<variant::floor>(argv[1]);
  if (std::strcmp(argv[2], "traced") == 0) return run<variant::traced>(argv[1]);
  std::fprintf(stderr, "edgetrace_overload_bench: unknown variant '%s' (empty, floor, traced)\n", argv[2]);
  return 2;
}
