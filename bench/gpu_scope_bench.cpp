// SPDX-License-Identifier: MIT
// Google Benchmark of the GPU scope's own cost, CUDA aside: the scope runs
// against a backend whose calls return at once (events "complete"
// immediately), next to a plain scope in the same run. On a real GPU add
// the CUDA calls themselves (cudaGetDevice, 2 cudaStreamIsCapturing, 2
// cudaEventRecord); that figure needs a GPU (docs/PERFORMANCE.md).
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/gpu/spans.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>

EDGETRACE_CATEGORY(bench_gpu);

namespace {

namespace et = edgetrace::detail;

// Streams are created on the app's thread, events on the flusher's: like
// the CUDA runtime it stands in for, the fake must be thread-safe.
std::atomic<std::uintptr_t> next_handle{0x1000};
int ok() noexcept { return 0; }
int ok_int(int* value) noexcept { return *value = 1, 0; }
int ok_device(int, et::gpu_device_properties* p) noexcept { return p->name[0] = 0, p->major = 8, p->minor = 7, 0; }
int ok_handle(void** handle) noexcept {
  return *handle = reinterpret_cast<void*>(next_handle.fetch_add(16, std::memory_order_relaxed) + 16), 0;
}
int ok_capture(void*, int* status) noexcept { return *status = 0, 0; }
int ok_record(void*, void*) noexcept { return 0; }
int ok_query(void*) noexcept { return 0; }
int ok_elapsed(float* ms, void*, void*) noexcept { return *ms = 0.001f, 0; }
int ok_set(int) noexcept { return 0; }
const char* text(int) noexcept { return "no error"; }

/// Every call succeeds at once: what is left is edgetrace's own work.
constexpr et::gpu_backend null_backend = {
    "null", &ok_int, &ok_int, &ok_int, &ok_device, &ok_int, &ok_set, &ok, &ok_handle, &ok_capture, &ok_handle,
    &ok_record, &ok_query, &ok_elapsed, &ok, &text, nullptr,  // no dlopen: the executable is never unloaded
};

void BM_plain_scope(benchmark::State& state) {
  for (auto _ : state) {
    EDGETRACE_SCOPE(bench_gpu, "plain");
    benchmark::ClobberMemory();
  }
}

void BM_gpu_scope_null_backend(benchmark::State& state) {
  void* stream = reinterpret_cast<void*>(std::uintptr_t{0x100});
  std::int64_t n = 0;
  for (auto _ : state) {
    {
      EDGETRACE_DETAIL_GPU_SCOPE(bench_gpu, "gpu", stream, &null_backend);
      benchmark::ClobberMemory();
    }
    // Let the flusher hand pairs back now and then (it runs every few ms):
    // in steady state no pair is created.
    if ((++n & 511) == 0) {
      state.PauseTiming();
      edgetrace::flush();
      state.ResumeTiming();
    }
  }
}

}  // namespace

BENCHMARK(BM_plain_scope);
BENCHMARK(BM_gpu_scope_null_backend);
BENCHMARK_MAIN();
