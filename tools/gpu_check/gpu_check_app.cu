// SPDX-License-Identifier: MIT
// The traced side of tools/gpu_check.sh: one CUDA program, one mode a run.
// Each mode traces (EDGETRACE_OUTPUT set by the script) and prints what it
// measured itself as "key=value" lines; gpu_check_read then reads the dump
// and those lines and gives the verdicts.
//
// usage: edgetrace_gpu_check_app MODE [N]
//   probe      the device: prints "device=... sm=... driver=... runtime=...";
//              exit 77 when the CUDA runtime sees no device
//   accuracy   kernels that spin on clock64() for 10 us, 100 us and 1 ms,
//              each in a scope: per span the kernel's own length (its
//              %globaltimer at start and end) and cudaEventElapsedTime of the
//              very events the scope recorded; each length twice, on an
//              idle stream and queued behind a 50 us kernel (then the start
//              event completes just before the kernel starts, not while the
//              host is still submitting the launch)
//   alignment  N (400) scopes around nothing on an empty stream, each
//              followed by cudaStreamSynchronize and an instant "synced"
//   cost       a CUDA scope against a bare cudaEventRecord pair on the same
//              stream, and a host-only scope against the floor (two ticks,
//              one store), interleaved rounds in one run; batches of 256
//              with a 1 ms pause between them (outside the timing), so
//              every scope gets its events: the cost of a skipped scope is
//              not the cost of a scope
//   load       8 threads x 4 streams x N (100000) scopes around a tiny kernel
//   graph      scopes inside a captured CUDA graph, the graph replayed N
//              (1000) times in a scope each
//   nvtx       N (200) frames of an "engine" that marks itself with NVTX
//              only ("nvtx_frame" > "nvtx_layer_0..2"), each layer around a
//              CUDA scope with a tiny kernel; run under libedgetrace-nvtx.so
//              (NVTX_INJECTION64_PATH), the program exporting its symbols
#include <edgetrace/cuda.hpp>

#include <nvtx3/nvToolsExt.h>

#include "floor.hpp"
#include "flusher_cpu.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

EDGETRACE_CATEGORY(check);

namespace {

namespace et = edgetrace::detail;

int cuda_failures = 0;

/// A CUDA call of the app's own; a failure is printed and counted.
bool ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::printf("cuda_error call=%s error=%s\n", what, cudaGetErrorString(error));
  ++cuda_failures;
  return false;
}

// ---- accuracy: the scope's own events, seen from the app ----------------

/// The last two events this thread recorded through edgetrace's backend:
/// after a scope, its start and end events (the pool hands them to no other
/// scope until this thread opens the next one).
thread_local void* recorded[2] = {nullptr, nullptr};

int record_and_remember(void* event, void* stream) noexcept {
  recorded[0] = recorded[1];
  recorded[1] = event;
  return et::cudart_calls::event_record(event, stream);
}

/// EDGETRACE_CUDA_SCOPE's backend with cudaEventRecord remembered.
constexpr et::gpu_backend remembering_backend() {
  et::gpu_backend b = et::cudart_backend;
  b.event_record = &record_and_remember;
  return b;
}
constexpr et::gpu_backend remembering = remembering_backend();

/// Spins for `cycles` of clock64(); stores %globaltimer (ns) at its start and end.
__global__ void spin(long long cycles, unsigned long long* times) {
  unsigned long long begin, end;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(begin));
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end));
  times[0] = begin;
  times[1] = end;
}

__global__ void tiny(int* sink) {
  if (threadIdx.x == 0 && sink != nullptr) *sink += 1;
}

/// One scoped spin of `cycles` on `stream`; one site per length and
/// placement (the reader tells the spans apart by name).
void scoped_spin(long long target, bool queued, cudaStream_t stream, long long cycles, unsigned long long* times) {
  void* const s = static_cast<void*>(stream);
#define EDGETRACE_CHECK_SPIN(name)                                    \
  {                                                                   \
    EDGETRACE_DETAIL_GPU_SCOPE(check, name, s, &remembering);         \
    spin<<<1, 1, 0, stream>>>(cycles, times);                         \
  }
  if (target == 10000 && !queued) EDGETRACE_CHECK_SPIN("spin_10us")
  else if (target == 10000) EDGETRACE_CHECK_SPIN("spin_10us_queued")
  else if (target == 100000 && !queued) EDGETRACE_CHECK_SPIN("spin_100us")
  else if (target == 100000) EDGETRACE_CHECK_SPIN("spin_100us_queued")
  else if (!queued) EDGETRACE_CHECK_SPIN("spin_1ms")
  else EDGETRACE_CHECK_SPIN("spin_1ms_queued")
#undef EDGETRACE_CHECK_SPIN
}

int accuracy(int reps) {
  cudaStream_t stream = nullptr;
  unsigned long long* times = nullptr;
  unsigned long long* ahead_times = nullptr;  // the 50 us kernel that keeps the stream busy
  if (!ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !ok(cudaMalloc(&times, 2 * sizeof(unsigned long long)), "cudaMalloc") ||
      !ok(cudaMalloc(&ahead_times, 2 * sizeof(unsigned long long)), "cudaMalloc"))
    return 1;
  // Cycles per ns from a 2 ms spin (the clock the kernel reports in ns).
  unsigned long long host[2] = {0, 0};
  int clock_khz = 0;
  ok(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), "cudaDeviceGetAttribute");
  const long long probe_cycles = static_cast<long long>(clock_khz) * 2;  // about 2 ms at the peak clock
  double cycles_per_ns = 0;
  for (int i = 0; i < 3; ++i) {  // the first launch loads the module
    spin<<<1, 1, 0, stream>>>(probe_cycles, times);
    ok(cudaMemcpyAsync(host, times, sizeof host, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (host[1] > host[0]) cycles_per_ns = static_cast<double>(probe_cycles) / static_cast<double>(host[1] - host[0]);
  }
  std::printf("clock_khz=%d cycles_per_ns=%.4f\n", clock_khz, cycles_per_ns);
  if (cycles_per_ns <= 0) return 1;
  const long long targets[] = {10000, 100000, 1000000};
  const long long ahead_cycles = static_cast<long long>(50000.0 * cycles_per_ns);
  for (long long target : targets) {
    for (const bool queued : {false, true}) {
      const long long cycles = static_cast<long long>(static_cast<double>(target) * cycles_per_ns);
      for (int i = 0; i < reps; ++i) {
        if (queued) spin<<<1, 1, 0, stream>>>(ahead_cycles, ahead_times);
        scoped_spin(target, queued, stream, cycles, times);
        ok(cudaMemcpyAsync(host, times, sizeof host, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
        ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        float ms = -1;
        if (recorded[0] != nullptr && recorded[1] != nullptr)
          ok(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(recorded[0]), static_cast<cudaEvent_t>(recorded[1])),
             "cudaEventElapsedTime");
        std::printf("span target_ns=%lld queued=%d kernel_ns=%llu events_ns=%.0f\n", target, queued ? 1 : 0,
                    host[1] - host[0], static_cast<double>(ms) * 1e6);
      }
    }
  }
  cudaFree(ahead_times);
  cudaFree(times);
  cudaStreamDestroy(stream);
  return 0;
}

// ---- alignment ----------------------------------------------------------

int alignment(int reps) {
  cudaStream_t stream = nullptr;
  if (!ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  for (int i = 0; i < reps; ++i) {
    {
      EDGETRACE_CUDA_SCOPE(check, "empty", stream);
    }
    ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    EDGETRACE_INSTANT(check, "synced");
    // Spread over about 2 s: anchors at start, +100 ms and every second.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("alignment_spans=%d\n", reps);
  cudaStreamDestroy(stream);
  return 0;
}

// ---- cost ---------------------------------------------------------------

/// ns per call of `body` over `n` calls. With a stream: every 256 calls,
/// outside the timing, the stream is synchronised (the GPU keeps up) and
/// the thread pauses 1 ms (the flusher keeps up: no scope is skipped).
template <class Body>
double timed(cudaStream_t stream, long n, Body&& body) {
  std::chrono::steady_clock::duration spent{};
  for (long done = 0; done < n; done += 256) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 256; ++i) body();
    spent += std::chrono::steady_clock::now() - start;
    if (stream != nullptr) {
      ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()) /
         static_cast<double>(((n + 255) / 256) * 256);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int cost(int rounds) {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
  if (!ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !ok(cudaEventCreateWithFlags(&start, cudaEventDefault), "cudaEventCreate") ||
      !ok(cudaEventCreateWithFlags(&end, cudaEventDefault), "cudaEventCreate"))
    return 1;
  auto bare = [&] {
    cudaEventRecord(start, stream);
    cudaEventRecord(end, stream);
  };
  auto scope = [&] { EDGETRACE_CUDA_SCOPE(check, "cost", stream); };
  auto floor = [] {
    const std::uint64_t begin = et::ticks();
    edgetrace_bench::floor_store(0x1000, begin, et::ticks());
  };
  auto host = [] { EDGETRACE_SCOPE(check, "host"); };
  timed(stream, 20000, bare);  // warm-up: the event pool fills, the clocks settle
  timed(stream, 20000, scope);
  std::vector<double> bare_ns, scope_ns, ratio, floor_ns, host_ns, host_ratio;
  for (int r = 0; r < rounds; ++r) {  // interleaved: a slow moment hits both alike
    bare_ns.push_back(timed(stream, 20000, bare));
    scope_ns.push_back(timed(stream, 20000, scope));
    ratio.push_back(scope_ns.back() / bare_ns.back());
    floor_ns.push_back(timed(nullptr, 1000000, floor));
    host_ns.push_back(timed(nullptr, 1000000, host));
    host_ratio.push_back(host_ns.back() / floor_ns.back());
  }
  std::printf("cost rounds=%d bare_pair_ns=%.1f cuda_scope_ns=%.1f ratio=%.3f ratio_worst=%.3f\n", rounds,
              median(bare_ns), median(scope_ns), median(ratio), *std::max_element(ratio.begin(), ratio.end()));
  std::printf("cost floor_ns=%.2f host_scope_ns=%.2f host_ratio=%.3f\n", median(floor_ns), median(host_ns),
              median(host_ratio));
  std::printf("cost scopes=%ld\n", (rounds + 1) * ((20000L + 255) / 256) * 256);
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  cudaStreamDestroy(stream);
  return 0;
}

// ---- load ---------------------------------------------------------------

int load(long per_stream) {
  constexpr int threads = 8, streams = 4;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([per_stream] {
      cudaStream_t s[streams] = {};
      for (auto& one : s) ok(cudaStreamCreateWithFlags(&one, cudaStreamNonBlocking), "cudaStreamCreate");
      for (long i = 0; i < per_stream; ++i)
        for (auto& one : s) {
          EDGETRACE_CUDA_SCOPE(check, "load", one);
          tiny<<<1, 32, 0, one>>>(nullptr);
        }
      for (auto& one : s) {
        ok(cudaStreamSynchronize(one), "cudaStreamSynchronize");
        cudaStreamDestroy(one);
      }
    });
  for (auto& t : pool) t.join();
  ok(cudaGetLastError(), "kernel launch");
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("load issued=%ld max_rss_kb=%ld flusher_cpu_ms=%.0f\n", static_cast<long>(threads) * streams * per_stream,
              usage.ru_maxrss, edgetrace_bench::flusher_cpu_ns() / 1e6);
  return 0;
}

// ---- graph --------------------------------------------------------------

int graph(int replays) {
  cudaStream_t stream = nullptr;
  int* sink = nullptr;
  if (!ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !ok(cudaMalloc(&sink, sizeof(int)), "cudaMalloc"))
    return 1;
  cudaGraph_t captured = nullptr;
  cudaGraphExec_t exec = nullptr;
  ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  for (int i = 0; i < 3; ++i) {
    EDGETRACE_CUDA_SCOPE(check, "in_capture", stream);  // host span only, flagged captured
    tiny<<<1, 32, 0, stream>>>(sink);
  }
  ok(cudaStreamEndCapture(stream, &captured), "cudaStreamEndCapture");
  ok(cudaGraphInstantiate(&exec, captured, 0), "cudaGraphInstantiate");
  for (int i = 0; i < replays && exec != nullptr; ++i) {
    EDGETRACE_CUDA_SCOPE(check, "replay", stream);
    ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  }
  ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  int value = 0;
  ok(cudaMemcpy(&value, sink, sizeof value, cudaMemcpyDeviceToHost), "cudaMemcpy");
  ok(cudaGetLastError(), "cudaGetLastError");
  std::printf("graph replays=%d kernel_runs=%d expected=%d\n", replays, value, 3 * replays);
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (captured != nullptr) cudaGraphDestroy(captured);
  cudaFree(sink);
  cudaStreamDestroy(stream);
  return 0;
}

// ---- nvtx: an engine's NVTX ranges around GPU work --------------------------

int nvtx(int frames) {
  cudaStream_t stream = nullptr;
  ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  const char* layers[3] = {"nvtx_layer_0", "nvtx_layer_1", "nvtx_layer_2"};
  for (int f = 0; f < frames; ++f) {
    nvtxRangePushA("nvtx_frame");
    for (const char* layer : layers) {
      nvtxRangePushA(layer);
      {
        EDGETRACE_CUDA_SCOPE(check, "nvtx_kernel", stream);
        tiny<<<1, 32, 0, stream>>>(nullptr);
      }
      nvtxRangePop();
    }
    ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    nvtxRangePop();
  }
  std::printf("nvtx frames=%d layers=3\n", frames);
  cudaStreamDestroy(stream);
  return 0;
}

int probe() {
  int devices = 0, driver = 0, runtime = 0;
  const cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess || devices == 0) {
    std::printf("no device: %s\n", error != cudaSuccess ? cudaGetErrorString(error) : "0 devices");
    return 77;
  }
  cudaDeviceProp p{};
  ok(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("device=\"%s\" sm=%d.%d sms=%d devices=%d driver=%d runtime=%d\n", p.name, p.major, p.minor,
              p.multiProcessorCount, devices, driver, runtime);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const long n = argc > 2 ? std::atol(argv[2]) : 0;
  int rc = 2;
  if (mode == "probe") return probe();
  EDGETRACE_THREAD_NAME("main");
  if (mode == "accuracy") rc = accuracy(n > 0 ? static_cast<int>(n) : 50);
  else if (mode == "alignment") rc = alignment(n > 0 ? static_cast<int>(n) : 400);
  else if (mode == "cost") rc = cost(n > 0 ? static_cast<int>(n) : 15);
  else if (mode == "load") rc = load(n > 0 ? n : 100000);
  else if (mode == "graph") rc = graph(n > 0 ? static_cast<int>(n) : 1000);
  else if (mode == "nvtx") rc = nvtx(n > 0 ? static_cast<int>(n) : 200);
  else std::fprintf(stderr, "usage: edgetrace_gpu_check_app probe|accuracy|alignment|cost|load|graph|nvtx [N]\n");
  std::printf("cuda_failures=%d\n", cuda_failures);
  return rc != 0 ? rc : (cuda_failures == 0 ? 0 : 1);
}
