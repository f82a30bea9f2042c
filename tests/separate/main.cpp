// SPDX-License-Identifier: MIT
// A program built with the runtime compiled once (edgetrace::runtime,
// EDGETRACE_SEPARATE_RUNTIME=1): two TUs trace, one category is declared
// in both, a second thread traces, names are interned, and GPU scopes on
// the fake GPU reach the GPU tracker compiled into the runtime (this TU
// sees only its declarations). check.cmake runs it traced and checks the
// dump with the `edgetrace` tool.
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/gpu/spans.hpp>

#include "../support/fake_gpu.hpp"

#include <chrono>
#include <string>
#include <thread>

EDGETRACE_CATEGORY(separate);

void work(int i);  // work.cpp: one "work" span per call

int main() {
  EDGETRACE_THREAD_NAME("main");
  const auto layer = edgetrace::intern(std::string("interned_layer"));
  std::thread helper([] {
    EDGETRACE_THREAD_NAME("helper");
    for (int i = 0; i < 500; ++i) work(i);
  });
  for (int i = 0; i < 1000; ++i) {
    EDGETRACE_SCOPE(separate, "outer");
    EDGETRACE_SCOPE_NAMED(separate, layer);
    work(i);
  }
  helper.join();
  // 50 GPU scopes of 20 us each on one stream, all resolved before exit.
  edgetrace_test::fake_gpu& gpu = edgetrace_test::fake_gpu::instance();
  void* stream = edgetrace_test::fake_gpu::stream(0);
  for (int i = 0; i < 50; ++i) {
    FAKE_GPU_SCOPE(separate, "gpu_step", stream);
    gpu.launch(stream, 20e3);
  }
  while (gpu.pending_events() != 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  EDGETRACE_MARK(separate, "done");
  return edgetrace::tracing_active() ? 0 : 3;
}
