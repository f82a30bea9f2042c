// SPDX-License-Identifier: MIT
// A traced program with NVTX forwarding compiled in (edgetrace::nvtx), run
// by nvtx_test.cpp with the recording injection library. Main thread:
// outer > inner, an interned "conv_7", an instant and a mark, one scope of
// a category the tests filter out; a worker thread: three "work" spans.
// With NVTX_APP_OWN_RANGE set, one NVTX range of its own ("own_range", the
// global domain) too, for NVTX capture (nvtx_capture_test.cpp).
#include <edgetrace/nvtx.hpp>

#include <cstdlib>
#include <thread>

EDGETRACE_CATEGORY(model);
EDGETRACE_CATEGORY(io);

int main() {
  EDGETRACE_THREAD_NAME("main");
  std::thread worker([] {
    for (int i = 0; i < 3; ++i) {
      EDGETRACE_SCOPE(model, "work");
    }
  });
  worker.join();  // the worker's ranges first, so the log is in a known order
  const auto layer = edgetrace::intern("conv_7");
  {
    EDGETRACE_SCOPE(model, "outer");
    {
      EDGETRACE_SCOPE(model, "inner");
      EDGETRACE_SCOPE(io, "read_file");
    }
    { EDGETRACE_SCOPE_NAMED(model, layer); }
    EDGETRACE_INSTANT(model, "ready");
    EDGETRACE_MARK(model, "frame");
    EDGETRACE_COUNTER(model, "depth", 1);
  }
  if (std::getenv("NVTX_APP_OWN_RANGE") != nullptr) {
    nvtxRangePushA("own_range");
    nvtxRangePop();
  }
  return 0;
}
