// SPDX-License-Identifier: MIT
// An app that traces, calls a linked shared library that traces (lib_a), and
// dlopens one (lib_b, or with "hidden" a -fvisibility=hidden one). Prints
// the number of threads while all three are loaded. See docs/RELIABILITY.md
// ("Several shared objects") and tests/writer/reliability_test.cpp; the
// "unload", "nvml", "gpu" and "nvtx" modes: tests/writer/dso_unload_test.cpp.
#include <edgetrace/edgetrace.hpp>
#include "../support/threads.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <thread>

EDGETRACE_CATEGORY(app);
EDGETRACE_CATEGORY(shared_cat);

#if DSO_APP_LINKS_LIB_A
extern "C" void lib_a_work(int count);
#else
void lib_a_work(int) {}  // dso_app_plain: no linked library that uses edgetrace
#endif

using edgetrace_test::thread_count;

namespace {
void app_work(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "app_span");
    EDGETRACE_SCOPE(shared_cat, "shared_span");
  }
}

/// "nvml", "gpu" and "nvtx": a library that includes what cuda.hpp does
/// (lib_cuda) or nvtx.hpp (lib_nvtx) is dlclosed (in a span named
/// "unload") while the app traces on for 20 periods of 5 ms; prints
/// "unloaded=1" when the library is gone from the process.
///  * nvml early|late: lib_cuda's NVML registration only (its GPU scopes
///    are not run), the library loaded before tracing begins (the sampler
///    finds NVML as it starts) or once it began (NVML joins at a later
///    sample), and unloaded after 20 sampling periods, while the sampler
///    reads the GPUs: "unloaded=1".
///  * gpu: lib_cuda's GPU scopes (on the fake GPU) run on a thread that
///    exits first; the flusher calls its code from then on, so the GPU
///    tracker keeps it loaded: "unloaded=0".
///  * nvtx: lib_nvtx's 10 spans; with EDGETRACE_NVTX=1 every scope calls
///    its hooks, so the runtime keeps it loaded ("unloaded=0"); without,
///    "unloaded=1".
int plugin_unload(const char* path, const char* mode, bool early) {
  const bool gpu = std::strcmp(mode, "gpu") == 0, nvml = std::strcmp(mode, "nvml") == 0;
  const auto periods = [](int n) { std::this_thread::sleep_for(std::chrono::milliseconds(5 * n)); };
  if (nvml && !early) {
    app_work(10);
    periods(4);
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dso_app: %s\n", dlerror());
    return 3;
  }
  const char* symbol = gpu ? "lib_cuda_gpu_work" : nvml ? "lib_cuda_work" : "lib_nvtx_work";
  auto work = reinterpret_cast<void (*)(int)>(dlsym(lib, symbol));
  if (work == nullptr) return 4;
  if (gpu) {
    std::thread([work] { work(20); }).join();
  } else {
    work(10);
    if (nvml) periods(20);
  }
  {
    EDGETRACE_SCOPE(app, "unload");
    dlclose(lib);
  }
  std::printf("unloaded=%d\n", dlopen(path, RTLD_NOW | RTLD_NOLOAD) == nullptr ? 1 : 0);
  std::fflush(stdout);
  for (int i = 0; i < 20; ++i) {
    app_work(1);
    periods(1);
  }
  return 0;
}

}  // namespace

// dso_app shared|hidden LIBRARY [dlclose] (dso_app_plain: the same without lib_a)
// dso_app unload LIBRARY SPANS: see "unload" below
// dso_app nvml LIBRARY early|late, dso_app gpu|nvtx LIBRARY: see plugin_unload()
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  for (const char* mode : {"nvml", "gpu", "nvtx"})
    if (std::strcmp(argv[1], mode) == 0) return plugin_unload(argv[2], mode, argc > 3 && std::strcmp(argv[3], "early") == 0);
  const bool hidden = std::strcmp(argv[1], "hidden") == 0;
  const bool unload = std::strcmp(argv[1], "unload") == 0;
  app_work(100);
  lib_a_work(100);
  void* lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dso_app: %s\n", dlerror());
    return 3;
  }
  using work_fn = void (*)(int);
  auto work = reinterpret_cast<work_fn>(
      dlsym(lib, unload ? "lib_unload_work" : hidden ? "lib_hidden_work" : "lib_b_work"));
  if (work == nullptr) return 4;
  // "unload" (tests/writer/dso_unload_test.cpp): the plugin (lib_unload, really
  // unmapped by dlclose) records 2 x SPANS spans, then is dlclosed at once,
  // without edgetrace::flush(), while the output may be slow; the app goes
  // on tracing. Prints "unloaded=1" if the library is gone from the process.
  // Then, once a flush went through, loads it again (same_address=1: where
  // it was), records 2 x 50 spans in it and 2 x 100 in the app.
  if (unload) {
    work(argc > 3 ? std::atoi(argv[3]) : 1000000);
    std::printf("unloading\n");
    std::fflush(stdout);
    dlclose(lib);
    const bool gone = dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD) == nullptr;
    std::printf("unloaded=%d\n", gone ? 1 : 0);
    std::fflush(stdout);
    app_work(100);
    edgetrace::flush();
    lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return 5;
    auto again = reinterpret_cast<work_fn>(dlsym(lib, "lib_unload_work"));
    // Any mapping made meanwhile (a ring, a large allocation) may have taken
    // the library's old place: unload it again and retry, a few times, for
    // the case this run is about is the library back where it was.
    for (int tries = 0; again != nullptr && again != work && tries < 5; ++tries) {
      dlclose(lib);
      lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) return 5;
      again = reinterpret_cast<work_fn>(dlsym(lib, "lib_unload_work"));
    }
    if (again == nullptr) return 6;
    std::printf("same_address=%d\n", again == work ? 1 : 0);
    again(50);
    app_work(100);
    return 0;
  }
  work(100);
  app_work(100);
  std::printf("threads=%d\n", thread_count());
  std::fflush(stdout);
  if (argc > 3 && std::strcmp(argv[3], "dlclose") == 0) {
    // Flush first, so the flusher has read every record (and its call-site
    // strings) that points into the library; see docs/RELIABILITY.md.
    edgetrace::flush();
    dlclose(lib);
  }
  app_work(100);
  lib_a_work(100);
  return 0;
}
