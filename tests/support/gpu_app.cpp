// SPDX-License-Identifier: MIT
// A traced program on the fake GPU, run as a child process by
// tests/gpu/gpu_test.cpp, one behaviour per mode (argv[1]); it prints what it
// observed as key=value lines on stdout.
//   pipeline       H2D copy -> two kernels on two streams -> D2H, 20 frames (each
//                  followed by a "wait" span until the GPU is idle), on a
//                  GPU clock 3 s ahead and 150 ppm fast; one launch captured
//   fail-record    cudaEventRecord fails on the 6th call: one line, host spans go on
//   no-device      cudaGetDeviceCount says 0 devices
//   old-driver     cudaGetDeviceCount fails with cudaErrorInsufficientDriver
//   exit-pending   work still running at exit: resolved within the final wait
//   steady         8 x gpu_pending_capacity scopes at 10,000 a second, never
//                  faster (a late thread does not catch up in a burst)
// Like a program that includes cuda.hpp it samples NVIDIA GPUs through NVML
// (EDGETRACE_NVML_LIBRARY: the stand-in, support/fake_nvml.cpp); it
// includes nvml.hpp first, as cuda.hpp does.
#include <edgetrace/nvml.hpp>
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/gpu/spans.hpp>
#include <support/fake_gpu.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

EDGETRACE_CATEGORY(gpu);
EDGETRACE_CATEGORY(host);

namespace {

using edgetrace_test::fake_gpu;

void wait_gpu_idle(double extra_ns = 0) {
  fake_gpu& g = fake_gpu::instance();
  const double until = g.now() + extra_ns;
  while (g.now() < until || g.pending_events() != 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

/// One frame: copy in and a kernel on stream 0, a kernel on stream 1,
/// copy out on stream 0 (simulated GPU time, long enough that the host
/// records both events of a scope before its work ends, even under qemu).
void frame(void* copy, void* compute) {
  fake_gpu& g = fake_gpu::instance();
  EDGETRACE_SCOPE(host, "frame");
  {
    FAKE_GPU_SCOPE(gpu, "h2d", copy);
    g.launch(copy, 3e6);
  }
  {
    FAKE_GPU_SCOPE(gpu, "kernel_a", copy);
    g.launch(copy, 5e6);
  }
  {
    FAKE_GPU_SCOPE(gpu, "kernel_b", compute);
    g.launch(compute, 4e6);
  }
  {
    FAKE_GPU_SCOPE(gpu, "d2h", copy);
    g.launch(copy, 2e6);
  }
}

int pipeline() {
  fake_gpu& g = fake_gpu::instance();
  g.offset_ns = 3e9;
  g.drift = 150e-6;
  EDGETRACE_THREAD_NAME("launcher");
  void* copy = fake_gpu::stream(0);
  void* compute = fake_gpu::stream(1);
  for (int i = 0; i < 20; ++i) {
    frame(copy, compute);
    {
      EDGETRACE_SCOPE(host, "wait");  // the sync tools/gpu_check's judge bounds GPU spans by
      wait_gpu_idle();
    }
    // Spread the run over more than 2 s of GPU time so drift is fitted.
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
  }
  // A graph capture: the launch is recorded as a host span only.
  g.set_capturing(compute, true);
  {
    FAKE_GPU_SCOPE(gpu, "captured_kernel", compute);
  }
  g.set_capturing(compute, false);
  std::printf("captured_records=%ld\n", g.captured_records());
  std::printf("event_creates=%ld\n", g.calls(fake_gpu::c_event_create));
  return 0;
}

int fail_record() {
  fake_gpu& g = fake_gpu::instance();
  g.fail(fake_gpu::c_event_record, 700, 5);
  void* s = fake_gpu::stream(0);
  // This thread's calls once it has seen GPU spans go off: none. The
  // flusher may finish a call it began before the failure, so its calls are
  // counted from the first flush after it (a whole cycle): none either.
  long at_failure = -1;
  for (int i = 0; i < 10; ++i) {
    FAKE_GPU_SCOPE(gpu, "step", s);
    g.launch(s, 10e3);
    if (at_failure < 0 && edgetrace::detail::gpu_state.load() == edgetrace::detail::gpu_off)
      at_failure = fake_gpu::calls_on_this_thread();
  }
  edgetrace::flush();
  const long quiet = g.total_calls();
  for (int i = 0; i < 10; ++i) {
    FAKE_GPU_SCOPE(gpu, "after", s);
  }
  edgetrace::flush();
  std::printf("calls_after_off=%ld\n", fake_gpu::calls_on_this_thread() - at_failure);
  std::printf("calls_after_flush=%ld\n", g.total_calls() - quiet);
  return 0;
}

int not_usable() {
  void* s = fake_gpu::stream(0);
  for (int i = 0; i < 5; ++i) {
    FAKE_GPU_SCOPE(gpu, "step", s);
  }
  edgetrace::flush();
  std::printf("calls=%ld\n", fake_gpu::instance().total_calls());
  return 0;
}

int exit_pending() {
  fake_gpu& g = fake_gpu::instance();
  void* s = fake_gpu::stream(0);
  for (int i = 0; i < 5; ++i) {
    FAKE_GPU_SCOPE(gpu, "late", s);
    g.launch(s, 40e6);  // 40 ms each: 200 ms of work still queued at exit
  }
  return 0;
}

int steady() {
  fake_gpu& g = fake_gpu::instance();
  void* s = fake_gpu::stream(0);
  const std::uint32_t scopes = 8 * edgetrace::detail::gpu_pending_capacity;
  auto next = std::chrono::steady_clock::now();
  for (std::uint32_t i = 0; i < scopes; ++i) {
    {
      FAKE_GPU_SCOPE(gpu, "steady", s);
      g.launch(s, 2e3);
    }
    next = std::max(next + std::chrono::microseconds(100), std::chrono::steady_clock::now());
    while (std::chrono::steady_clock::now() < next) {
    }
  }
  std::printf("issued=%u\n", scopes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  fake_gpu& g = fake_gpu::instance();
  if (mode == "pipeline") return pipeline();
  if (mode == "fail-record") return fail_record();
  if (mode == "no-device") {
    g.devices = 0;
    return not_usable();
  }
  if (mode == "old-driver") {
    g.device_count_error = 35;
    g.driver = 11040;
    return not_usable();
  }
  if (mode == "cuda-off") return not_usable();
  if (mode == "exit-pending") return exit_pending();
  if (mode == "steady") return steady();
  std::fprintf(stderr, "usage: gpu_app pipeline|fail-record|no-device|old-driver|cuda-off|exit-pending|steady\n");
  return 2;
}
