// SPDX-License-Identifier: MIT
// Google Benchmark suite of the hot path and the flusher's encoder. Every
// case is reported as a ratio to a floor measured in the same run (two raw
// ticks + one 24-byte store to a thread-local array), because absolute
// times on shared machines move by 20 % between runs. Run it through
// bench/run.sh, which sets the environment this binary expects.
#include <edgetrace/edgetrace.hpp>

#include <benchmark/benchmark.h>

#include "floor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define EDGETRACE_BENCH_NVTX 1
#endif
#endif

EDGETRACE_CATEGORY(bench_on);            // recorded
EDGETRACE_CATEGORY(bench_off);           // filtered out at run time: EDGETRACE_CATEGORIES=*,-bench_off
EDGETRACE_CATEGORY(bench_compiled_out);  // EDGETRACE_EXCLUDED_CATEGORIES="bench_compiled_out" (CMake)

namespace {

namespace et = edgetrace::detail;

// ------------------------------------------------------------ floor

/// What any tracer must at least do per span: read the clock twice and
/// store 24 bytes somewhere of the thread's own (bench/floor.hpp).
void BM_floor(benchmark::State& state) {
  for (auto _ : state) {
    const std::uint64_t begin = et::ticks();
    const std::uint64_t end = et::ticks();
    edgetrace_bench::floor_store(0x1000, begin, end);
    benchmark::ClobberMemory();
  }
}

void BM_empty_loop(benchmark::State& state) {
  for (auto _ : state) benchmark::ClobberMemory();
}

// ------------------------------------------------------------ spans

void BM_span_literal(benchmark::State& state) {
  for (auto _ : state) {
    EDGETRACE_SCOPE(bench_on, "bench_span");
    benchmark::ClobberMemory();
  }
}

void BM_span_named(benchmark::State& state) {
  const auto name = edgetrace::intern("conv2d_17");
  for (auto _ : state) {
    EDGETRACE_SCOPE_NAMED(bench_on, name);
    benchmark::ClobberMemory();
  }
}

/// Three nested spans per iteration; the table divides by 3.
void BM_span_nested3(benchmark::State& state) {
  for (auto _ : state) {
    EDGETRACE_SCOPE(bench_on, "outer");
    {
      EDGETRACE_SCOPE(bench_on, "middle");
      {
        EDGETRACE_SCOPE(bench_on, "inner");
        benchmark::ClobberMemory();
      }
    }
  }
  state.counters["spans_per_iteration"] = 3;
}

void BM_span_runtime_disabled(benchmark::State& state) {
  for (auto _ : state) {
    EDGETRACE_SCOPE(bench_off, "off_span");
    benchmark::ClobberMemory();
  }
}

/// A recording category while edgetrace::pause() is in force: the same
/// load and branch as runtime-disabled.
void BM_span_paused(benchmark::State& state) {
  edgetrace::pause();
  for (auto _ : state) {
    EDGETRACE_SCOPE(bench_on, "paused_span");
    benchmark::ClobberMemory();
  }
  edgetrace::resume();
}

void BM_span_compile_disabled(benchmark::State& state) {
  for (auto _ : state) {
    EDGETRACE_SCOPE(bench_compiled_out, "gone");
    benchmark::ClobberMemory();
  }
}

void BM_instant(benchmark::State& state) {
  for (auto _ : state) {
    EDGETRACE_INSTANT(bench_on, "bench_instant");
    benchmark::ClobberMemory();
  }
}

void BM_counter(benchmark::State& state) {
  std::int64_t value = 0;
  for (auto _ : state) {
    EDGETRACE_COUNTER(bench_on, "bench_counter", ++value);
    benchmark::ClobberMemory();
  }
}

/// A span argument and a flow step: value events, the counter's path.
void BM_arg(benchmark::State& state) {
  std::int64_t value = 0;
  for (auto _ : state) {
    EDGETRACE_ARG(bench_on, "batch", ++value);
    benchmark::ClobberMemory();
  }
}

/// An allocation and its free: an out-of-line pair of records, then one.
void BM_alloc_free(benchmark::State& state) {
  std::uint64_t address = 0x10000;
  for (auto _ : state) {
    address += 64;
    EDGETRACE_ALLOC(bench_on, address, 64, "bench_pool");
    EDGETRACE_FREE(bench_on, address);
    benchmark::ClobberMemory();
  }
}

#if defined(EDGETRACE_BENCH_NVTX)
/// NVTX push/pop with no tool attached: the peer reference a CUDA user has.
void BM_nvtx_push_pop(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("nvtx_range");
    benchmark::ClobberMemory();
    nvtxRangePop();
  }
}
#endif

// ------------------------------------------------------------ clocks

void BM_clock_edgetrace_ticks(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(et::ticks());
}
#if defined(__x86_64__)
void BM_clock_rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
void BM_clock_rdtscp(benchmark::State& state) {
  unsigned aux;
  for (auto _ : state) benchmark::DoNotOptimize(__rdtscp(&aux));
}
void BM_clock_lfence_rdtsc(benchmark::State& state) {
  for (auto _ : state) {
    _mm_lfence();
    benchmark::DoNotOptimize(__rdtsc());
  }
}
#endif
void BM_clock_gettime_monotonic(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
void BM_clock_steady_clock(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}

// ------------------------------------------------------------ encoder

/// A runtime of our own (not the process one) whose flusher-side encoder
/// drains a ring of synthetic records into a scratch file.
struct encoder_fixture {
  alignas(et::runtime) unsigned char storage[sizeof(et::runtime)];
  et::runtime* rt;
  et::thread_ring* ring;
  std::string path;

  explicit encoder_fixture(std::size_t slots)
      : path("/tmp/edgetrace_encode_bench_" + std::to_string(::getpid()) + ".etr") {
    et::settings config;
    config.ring_records = slots;
    ::unlink(path.c_str());
    rt = new (storage) et::runtime(config, path.c_str(), pthread_key_t{});
    // The runtime's own open records the file's identity, so the check
    // before each write passes (else tracing turns itself off and nothing
    // is encoded); the iterations truncate the file, which that check
    // takes as a restart (a file header every 256 MiB: nothing per span).
    const et::playing_role flusher(et::flusher_role);
    rt->set_writer_id(1);
    rt->open_output();
    ring = et::map_ring(slots);
    ring->os_tid = 1;
  }
  ~encoder_fixture() {
    {
      const et::playing_role flusher(et::flusher_role);
      rt->close_output();
    }
    ::unlink(path.c_str());
    et::unmap_ring(ring);
    // Unlike the process runtime (static storage, reachable until exit) this
    // one lives in the fixture: its buffers would leak (LeakSanitizer found
    // it).
    rt->~runtime();
  }
  std::uint64_t file_size() const {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  }
};

constexpr et::site encode_site{&edgetrace_category_bench_on::state, "encoded", __FILE__, __LINE__,
                               edgetrace::format::site_kind::span};
constexpr et::site encode_sites[4] = {
    {&edgetrace_category_bench_on::state, "decode", __FILE__, __LINE__, edgetrace::format::site_kind::span},
    {&edgetrace_category_bench_on::state, "preprocess", __FILE__, __LINE__, edgetrace::format::site_kind::span},
    {&edgetrace_category_bench_on::state, "conv", __FILE__, __LINE__, edgetrace::format::site_kind::span},
    {&edgetrace_category_bench_on::state, "postprocess", __FILE__, __LINE__, edgetrace::format::site_kind::span},
};

/// Encodes a full ring of spans per iteration. Arg 0: dense loop of one site
/// (60-tick spans back to back, what the enabled-span benchmark produces);
/// arg 1: a mix of four sites with µs-scale, nested durations; arg 2: the
/// same mix with a latency trigger on one of the sites that never fires
/// (EDGETRACE_TRIGGER=conv>1s: what evaluating triggers costs the flusher).
void BM_flusher_encode(benchmark::State& state) {
  const bool realistic = state.range(0) >= 1;
  constexpr std::size_t slots = 32768;
  encoder_fixture f(slots);
  // The fixture's runtime has no flusher thread: this one is its flusher.
  const et::playing_role flusher(et::flusher_role);
  if (state.range(0) == 2) {
    char error[256];
    if (!f.rt->set_triggers("conv>1s", error, sizeof error)) state.SkipWithError(error);
  }
  // Fill the ring once; every iteration re-encodes the same records.
  std::uint64_t t = 1000000;
  std::uint32_t seed = 12345;
  for (std::size_t i = 0; i + 1 < slots; ++i) {
    et::record& r = f.ring->begin[i];
    if (!realistic) {
      r = {reinterpret_cast<std::uintptr_t>(&encode_site), t, t + 60};
      t += 90;
    } else {
      seed = seed * 1664525u + 1013904223u;
      const et::site* s = &encode_sites[i % 4];
      const std::uint64_t duration = 2000 + (seed >> 12) % 200000;  // ~1-100 µs at 2 GHz
      r = {reinterpret_cast<std::uintptr_t>(s), t, t + duration};
      t += duration + 500 + (seed >> 20) % 4000;
    }
  }
  std::uint64_t bytes = 0, spans = 0;
  for (auto _ : state) {
    f.ring->read_pos.store(f.ring->begin, std::memory_order_relaxed);
    f.ring->write_pos.store(f.ring->begin + (slots - 1), std::memory_order_relaxed);
    const std::uint64_t before = f.file_size();
    spans += f.rt->drain(*f.ring, 0);
    f.rt->flush_output();
    bytes += f.file_size() - before;
    if (f.file_size() > (256u << 20)) ::truncate(f.path.c_str(), 0);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(spans));
  state.counters["bytes_per_span"] = spans ? static_cast<double>(bytes) / static_cast<double>(spans) : 0;
  state.counters["spans_per_iteration"] = static_cast<double>(slots - 1);
}

/// Bytes per span on disk for real: a dense loop traced through the live
/// runtime and flusher, measured as the growth of the dump.
void BM_dense_loop_on_disk(benchmark::State& state) {
  const char* path = std::getenv("EDGETRACE_OUTPUT");
  struct stat st;
  edgetrace::flush();
  const auto size = [&] { return path != nullptr && ::stat(path, &st) == 0 ? static_cast<double>(st.st_size) : 0.0; };
  const double before = size();
  const std::uint64_t dropped_before = et::current_ring->drop_count.load();
  std::uint64_t spans = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) {
      EDGETRACE_SCOPE(bench_on, "dense_span");
      benchmark::ClobberMemory();
    }
    spans += 1000;
  }
  edgetrace::flush();
  const double dropped = static_cast<double>(et::current_ring->drop_count.load() - dropped_before);
  const double kept = static_cast<double>(spans) - dropped;
  state.counters["bytes_per_span"] = kept > 0 ? (size() - before) / kept : 0;
  state.counters["dropped_fraction"] = spans ? dropped / static_cast<double>(spans) : 0;
  state.counters["spans_per_iteration"] = 1000;
}

// ------------------------------------------------------------ reporting

/// Console reporter that also remembers CPU time per operation of every
/// case, so main() can print the ratio table after the run.
class ratio_reporter : public benchmark::ConsoleReporter {
 public:
  struct row {
    std::string name;
    double ns_per_op;
    double bytes_per_span;
    double items_per_second;
  };
  std::vector<row> rows;

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      double divisor = 1;
      if (auto it = run.counters.find("spans_per_iteration"); it != run.counters.end()) divisor = it->second;
      const double ns = run.GetAdjustedCPUTime() * to_ns(run.time_unit) / divisor;
      row r{run.benchmark_name(), ns, 0, 0};
      if (auto it = run.counters.find("bytes_per_span"); it != run.counters.end()) r.bytes_per_span = it->second;
      if (auto it = run.counters.find("items_per_second"); it != run.counters.end()) r.items_per_second = it->second;
      rows.push_back(r);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  static double to_ns(benchmark::TimeUnit unit) {
    switch (unit) {
      case benchmark::kNanosecond: return 1;
      case benchmark::kMicrosecond: return 1e3;
      case benchmark::kMillisecond: return 1e6;
      default: return 1e9;
    }
  }
};

/// "BM_span_literal/threads:2" → its floor "BM_floor/threads:2".
std::string floor_for(const std::string& name) {
  const auto slash = name.find("/threads:");
  return slash == std::string::npos ? "BM_floor" : "BM_floor" + name.substr(slash);
}

void print_table(const ratio_reporter& reporter) {
  std::map<std::string, double> floors;
  for (const auto& r : reporter.rows)
    if (r.name.rfind("BM_floor", 0) == 0) floors[r.name] = r.ns_per_op;
  std::printf("\n%-40s %12s %14s %14s\n", "case (per span/op, CPU time)", "ns", "ratio to floor", "bytes/span");
  for (const auto& r : reporter.rows) {
    const auto floor = floors.find(floor_for(r.name));
    char ratio[32] = "-";
    if (floor != floors.end() && floor->second > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", r.ns_per_op / floor->second);
    char bytes[32] = "";
    if (r.bytes_per_span > 0) std::snprintf(bytes, sizeof bytes, "%.2f", r.bytes_per_span);
    std::printf("%-40s %12.2f %14s %14s", r.name.c_str(), r.ns_per_op, ratio, bytes);
    if (r.items_per_second > 0) std::printf("   %.1f M spans/s", r.items_per_second / 1e6);
    std::printf("\n");
  }
}

}  // namespace

BENCHMARK(BM_floor);
BENCHMARK(BM_floor)->Threads(2);
BENCHMARK(BM_empty_loop);
BENCHMARK(BM_span_literal);
BENCHMARK(BM_span_literal)->Threads(2);
BENCHMARK(BM_span_named);
BENCHMARK(BM_span_nested3);
BENCHMARK(BM_span_runtime_disabled);
BENCHMARK(BM_span_paused);
BENCHMARK(BM_span_compile_disabled);
BENCHMARK(BM_instant);
BENCHMARK(BM_counter);
BENCHMARK(BM_arg);
BENCHMARK(BM_alloc_free);
#if defined(EDGETRACE_BENCH_NVTX)
BENCHMARK(BM_nvtx_push_pop);
#endif
BENCHMARK(BM_clock_edgetrace_ticks);
#if defined(__x86_64__)
BENCHMARK(BM_clock_rdtsc);
BENCHMARK(BM_clock_rdtscp);
BENCHMARK(BM_clock_lfence_rdtsc);
#endif
BENCHMARK(BM_clock_gettime_monotonic);
BENCHMARK(BM_clock_steady_clock);
BENCHMARK(BM_flusher_encode)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_dense_loop_on_disk);

int main(int argc, char** argv) {
  if (!edgetrace::tracing_active()) {
    std::fprintf(stderr,
                 "edgetrace_bench: run it with EDGETRACE_OUTPUT=<file> and EDGETRACE_CATEGORIES='*,-bench_off' "
                 "(bench/run.sh does)\n");
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ratio_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_table(reporter);
  benchmark::Shutdown();
  return 0;
}
