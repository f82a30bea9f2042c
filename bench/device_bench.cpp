// SPDX-License-Identifier: MIT
// Google Benchmark of one device sample (telemetry/sampler.hpp) on this
// machine's own files, with 1 and 8 traced threads, next to its floor in the
// same run: one pread of each of the same files, nothing parsed or encoded;
// and a sample as the flusher meets it, after 100 ms of sleep (cold).
// The ratio is the sampler's own work; the absolute figure is what a sample
// costs the flusher, and at the default EDGETRACE_SAMPLE_MS (100 ms) ten of
// them a second (docs/PERFORMANCE.md, "Device sampling"). Counters: files
// read and bytes encoded per sample. EDGETRACE_SYSFS_ROOT points it at a
// replayed board instead.
#include <edgetrace/face/tick.hpp>
#include <edgetrace/telemetry/sampler.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

namespace tm = edgetrace::detail::telemetry;

/// Threads that sleep while the sampler reads their files.
struct sleepers {
  std::vector<std::thread> threads;
  std::vector<std::uint64_t> tids;
  std::atomic<bool> stop{false};
  explicit sleepers(int count) {
    std::atomic<int> ready{0};
    tids.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
      threads.emplace_back([this, i, &ready] {
        tids[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(::syscall(SYS_gettid));
        ready.fetch_add(1);
        while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      });
    while (ready.load() != count) std::this_thread::yield();
  }
  ~sleepers() {
    stop = true;
    for (auto& t : threads) t.join();
  }
};

/// CLOCK_MONOTONIC, read as the flusher reads it just before a sample's tick.
std::uint64_t monotonic_ns() { return edgetrace::detail::clock_ns(CLOCK_MONOTONIC); }

void BM_device_sample(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  sleepers traced(threads);
  auto sampler = std::make_unique<tm::device_sampler>();
  sampler->start(tm::sysfs_root(), 100);
  std::uint64_t bytes = 0, tick = 0;
  const auto each = [&traced](auto&& add) {
    for (std::size_t i = 0; i < traced.tids.size(); ++i) add(static_cast<std::uint32_t>(i + 1), traced.tids[i]);
  };
  const auto emit = [&bytes](edgetrace::format::chunk_type, const unsigned char*, std::size_t n) { bytes += n; };
  sampler->sample({1, monotonic_ns()}, 100000000u, each, emit);  // the first finds the threads
  tick = 1;
  bytes = 0;
  for (auto _ : state) {
    ++tick;
    sampler->sample({tick, monotonic_ns()}, tick * 100000000u, each, emit);
  }
  state.counters["files"] = static_cast<double>(sampler->sources().file_count + 2 * traced.tids.size());
  state.counters["bytes"] = static_cast<double>(bytes) / static_cast<double>(state.iterations());
}

/// The floor: the same files, one pread each into a buffer.
void BM_device_floor_pread(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  sleepers traced(threads);
  auto sampler = std::make_unique<tm::device_sampler>();
  sampler->start(tm::sysfs_root(), 100);
  std::vector<int> fds;
  for (std::size_t i = 0; i < sampler->sources().file_count; ++i) {
    fds.push_back(sampler->sources().files[i].fd);
    if (sampler->sources().files[i].fd2 >= 0) fds.push_back(sampler->sources().files[i].fd2);
  }
  std::vector<int> own;
  for (std::uint64_t tid : traced.tids)
    for (const char* file : {"schedstat", "status"}) {
      const std::string path = "/proc/self/task/" + std::to_string(tid) + "/" + file;
      own.push_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    }
  static char text[32768];
  for (auto _ : state) {
    for (int fd : fds) benchmark::DoNotOptimize(::pread(fd, text, sizeof text, 0));
    for (int fd : own) benchmark::DoNotOptimize(::pread(fd, text, sizeof text, 0));
  }
  for (int fd : own) ::close(fd);
  state.counters["files"] = static_cast<double>(fds.size() + own.size());
}

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// As the flusher meets it: a sample after 100 ms of sleep, when the
/// kernel's procfs paths and the sampler's buffers are cold. Manual time:
/// the sample's own CPU time, the sleep left out.
void BM_device_sample_cold(benchmark::State& state) {
  sleepers traced(static_cast<int>(state.range(0)));
  auto sampler = std::make_unique<tm::device_sampler>();
  sampler->start(tm::sysfs_root(), 100);
  std::uint64_t tick = 0;
  const auto each = [&traced](auto&& add) {
    for (std::size_t i = 0; i < traced.tids.size(); ++i) add(static_cast<std::uint32_t>(i + 1), traced.tids[i]);
  };
  const auto emit = [](edgetrace::format::chunk_type, const unsigned char*, std::size_t) {};
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ++tick;
    const double before = thread_cpu_seconds();
    sampler->sample({tick, monotonic_ns()}, tick * 100000000u, each, emit);
    state.SetIterationTime(thread_cpu_seconds() - before);
  }
}

BENCHMARK(BM_device_floor_pread)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK(BM_device_sample)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK(BM_device_sample_cold)->Arg(1)->Arg(8)->UseManualTime()->Iterations(30);

}  // namespace

BENCHMARK_MAIN();
