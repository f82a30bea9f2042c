// SPDX-License-Identifier: MIT
// What an NVTX range costs under NVTX capture (libedgetrace-nvtx.so), as
// ratios measured in the same run: to the floor (two raw ticks and one
// 24-byte store, bench/floor.hpp) and to an EDGETRACE_SCOPE. Run with
//   NVTX_INJECTION64_PATH=<build>/libedgetrace-nvtx.so EDGETRACE_OUTPUT=/tmp/b.etr edgetrace_nvtx_bench
// (bench/run.sh does). The program exports its symbols, so the capture
// library shares its runtime: one writer, as in an app that traces too.
#include <edgetrace/edgetrace.hpp>

#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>

#include "floor.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

EDGETRACE_CATEGORY(bench_on);

namespace {

void BM_floor(benchmark::State& state) {
  for (auto _ : state) {
    const std::uint64_t begin = edgetrace::detail::ticks();
    const std::uint64_t end = edgetrace::detail::ticks();
    edgetrace_bench::floor_store(0x1000, begin, end);
    benchmark::ClobberMemory();
  }
}

void BM_span_literal(benchmark::State& state) {
  for (auto _ : state) {
    EDGETRACE_SCOPE(bench_on, "bench_span");
    benchmark::ClobberMemory();
  }
}

/// The global domain, an ASCII name repeated every call (as an engine's
/// layer names are every frame): cached per thread by pointer.
void BM_nvtx_push_pop_ascii(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("conv2d_17");
    benchmark::ClobberMemory();
    nvtxRangePop();
  }
}

/// A domain and a registered string (TensorRT's and libtorch's way).
void BM_nvtx_push_pop_registered(benchmark::State& state) {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("engine");
  static const nvtxStringHandle_t name = nvtxDomainRegisterStringA(domain, "conv2d_17");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  for (auto _ : state) {
    nvtxDomainRangePushEx(domain, &a);
    benchmark::ClobberMemory();
    nvtxDomainRangePop(domain);
  }
}

/// Collects CPU time per iteration, for the ratio table.
class ratio_reporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns;
  std::vector<std::string> order;
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      const std::string name = r.benchmark_name();
      if (ns.count(name) == 0) order.push_back(name);
      ns[name] = r.GetAdjustedCPUTime() * 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
    }
  }
};

}  // namespace

BENCHMARK(BM_floor);
BENCHMARK(BM_span_literal);
BENCHMARK(BM_nvtx_push_pop_ascii);
BENCHMARK(BM_nvtx_push_pop_registered);

int main(int argc, char** argv) {
  const char* injection = std::getenv("NVTX_INJECTION64_PATH");
  if (!edgetrace::tracing_active() || injection == nullptr) {
    std::fprintf(stderr,
                 "edgetrace_nvtx_bench: run it with NVTX_INJECTION64_PATH=<libedgetrace-nvtx.so> and "
                 "EDGETRACE_OUTPUT=<file> (bench/run.sh does)\n");
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ratio_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double floor = reporter.ns["BM_floor"], scope = reporter.ns["BM_span_literal"];
  std::printf("\n%-32s %10s %14s %16s\n", "case (per range, CPU time)", "ns", "ratio to floor", "ratio to scope");
  for (const std::string& name : reporter.order) {
    const double t = reporter.ns[name];
    std::printf("%-32s %10.2f %13.2fx %15.2fx\n", name.c_str(), t, floor > 0 ? t / floor : 0.0,
                scope > 0 ? t / scope : 0.0);
  }
  benchmark::Shutdown();
  return 0;
}
