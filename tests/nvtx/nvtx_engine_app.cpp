// SPDX-License-Identifier: MIT
// An "engine" instrumented with NVTX only (no edgetrace header), run by
// nvtx_capture_test.cpp under libedgetrace-nvtx.so. Every count is known:
//   2 workers × ITERATIONS × 13 push/pop ranges: "frame" > "layer" (a
//   registered string of domain "engine", int64 payload = iteration) >
//   conv_0..conv_9 (domain "engine"; conv_0 with a double payload), then
//   L"post" (wide) in "frame"; one nvtxMarkA("tick") per iteration.
//   Worker 0 names itself ("worker-0"); main names worker 1 ("worker-1").
//   Main: names itself, starts 3 "async" ranges that worker 1 ends, one
//   "same_thread" start/end, "dyn_0".."dyn_2" from one reused buffer, and
//   the mistakes: a pop without a push, an end twice, an end of an unknown
//   id, a push left open at exit.
// Usage: nvtx_engine_app [ITERATIONS]   (default 2000)
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <sys/syscall.h>
#include <unistd.h>

namespace {

std::uint32_t gettid_now() { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

nvtxEventAttributes_t attributes() {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return a;
}

struct engine {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("engine");
  nvtxStringHandle_t layer = nvtxDomainRegisterStringA(domain, "layer");
  const char* convs[10] = {"conv_0", "conv_1", "conv_2", "conv_3", "conv_4",
                           "conv_5", "conv_6", "conv_7", "conv_8", "conv_9"};
};

void run_worker(const engine& e, int iterations) {
  for (int i = 0; i < iterations; ++i) {
    nvtxRangePushA("frame");
    nvtxEventAttributes_t layer = attributes();
    layer.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    layer.message.registered = e.layer;
    layer.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    layer.payload.llValue = i;
    nvtxDomainRangePushEx(e.domain, &layer);
    for (int k = 0; k < 10; ++k) {
      nvtxEventAttributes_t conv = attributes();
      conv.messageType = NVTX_MESSAGE_TYPE_ASCII;
      conv.message.ascii = e.convs[k];
      conv.colorType = NVTX_COLOR_ARGB;
      conv.color = 0xFF00FF00u;
      if (k == 0) {
        conv.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
        conv.payload.dValue = 0.5;
      }
      nvtxDomainRangePushEx(e.domain, &conv);
      nvtxDomainRangePop(e.domain);
    }
    nvtxDomainRangePop(e.domain);
    nvtxRangePushW(L"post");
    nvtxMarkA("tick");
    nvtxRangePop();
    nvtxRangePop();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
  nvtxNameOsThreadA(gettid_now(), "main-engine");
  const engine e;

  nvtxRangeId_t async[3];
  for (auto& id : async) id = nvtxRangeStartA("async");

  std::atomic<std::uint32_t> worker1_tid{0};
  std::atomic<bool> named{false};
  std::thread w0([&] {
    nvtxNameOsThreadA(gettid_now(), "worker-0");
    run_worker(e, iterations);
  });
  std::thread w1([&] {
    worker1_tid.store(gettid_now());
    while (!named.load()) std::this_thread::yield();
    run_worker(e, iterations);
    for (auto id : async) nvtxRangeEnd(id);  // started on main, ended here
  });
  while (worker1_tid.load() == 0) std::this_thread::yield();
  nvtxNameOsThreadA(worker1_tid.load(), "worker-1");
  named.store(true);
  w0.join();
  w1.join();

  const nvtxRangeId_t same = nvtxRangeStartA("same_thread");
  nvtxRangeEnd(same);
  char buffer[16];
  for (int k = 0; k < 3; ++k) {
    std::snprintf(buffer, sizeof buffer, "dyn_%d", k);
    nvtxRangePushA(buffer);
    nvtxRangePop();
  }
  nvtxRangePop();           // a pop without a push
  nvtxRangeEnd(same);       // ended twice
  nvtxRangeEnd(0x1234567);  // never started
  nvtxRangePushA("left_open");
  return 0;
}
