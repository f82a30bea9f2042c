// SPDX-License-Identifier: MIT
// libedgetrace-nvtx.so, the library NVTX_INJECTION64_PATH names: NVTX calls
// its InitializeInjectionNvtx2 once per copy of NVTX in the process. The
// first call loads, from this library's own folder, the build of the
// capture (nvtx_capture.cpp) whose runtime the app already runs:
//   libedgetrace-nvtx-separate.so     an app linked with edgetrace::runtime
//                                     (EDGETRACE_SEPARATE_RUNTIME=1) that
//                                     exports its symbols: one runtime
//   libedgetrace-nvtx-header-only.so  every other program (header-only apps
//                                     share its runtime the same way; apps
//                                     without edgetrace get its own)
// and every call goes to that build's edgetrace_nvtx_initialize. This file
// uses no edgetrace header: loading it starts no runtime.
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <dlfcn.h>

namespace {

using initialize_fn = int (*)(NvtxGetExportTableFunc_t);
using builds_word_fn = std::atomic<unsigned>& (*)();

/// Which runtime builds started tracing in this process (bit 1 header-only,
/// bit 2 edgetrace::runtime), read from the app's own
/// edgetrace::abi::runtime_builds_started_word() when it exports it: the
/// function, or (inlined everywhere) its static word, a unique symbol.
unsigned runtime_builds_started() {
  if (void* word = ::dlsym(RTLD_DEFAULT, "_ZZN9edgetrace3abi27runtime_builds_started_wordEvE4word"))
    return static_cast<std::atomic<unsigned>*>(word)->load();
  if (void* function = ::dlsym(RTLD_DEFAULT, "_ZN9edgetrace3abi27runtime_builds_started_wordEv"))
    return reinterpret_cast<builds_word_fn>(function)().load();
  return 0;
}

/// The folder this library was loaded from, with a trailing slash ("" if unknown).
std::string own_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&runtime_builds_started), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

/// Loads the build that fits the app's runtime; null (with one line) when
/// it cannot.
initialize_fn load_capture() {
  const char* output = std::getenv("EDGETRACE_OUTPUT");
  if (output == nullptr || *output == '\0') {
    std::fprintf(stderr, "edgetrace-nvtx: EDGETRACE_OUTPUT is not set: NVTX ranges are not recorded\n");
    return nullptr;
  }
  const bool separate = (runtime_builds_started() & 2u) != 0;
  const std::string path =
      own_folder() + (separate ? "libedgetrace-nvtx-separate.so" : "libedgetrace-nvtx-header-only.so");
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* entry = library != nullptr ? ::dlsym(library, "edgetrace_nvtx_initialize") : nullptr;
  if (entry == nullptr) {
    const char* why = ::dlerror();
    std::fprintf(stderr, "edgetrace-nvtx: cannot load %s (%s): NVTX ranges are not recorded\n", path.c_str(),
                 why != nullptr ? why : "no edgetrace_nvtx_initialize in it");
    return nullptr;
  }
  return reinterpret_cast<initialize_fn>(entry);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  static const initialize_fn initialize = load_capture();
  return initialize != nullptr ? initialize(get_table) : 0;
}
