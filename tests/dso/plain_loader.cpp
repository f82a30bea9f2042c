// SPDX-License-Identifier: MIT
// A program that does not include edgetrace, so the runtime is its traced
// library's. It installs handlers of its own for SIGUSR1, SIGUSR2 and
// SIGTERM, dlopens LIBRARY (lib_unload, really unmapped by dlclose),
// records spans in it and dlcloses it (the stream ends there), then raises
// the three signals. Prints "unloaded=1" when the library is gone, then
// "usr1=1 usr2=1 term=1" when its own handlers ran once each.
// See tests/writer/dso_unload_test.cpp.
//
// plain_loader LIBRARY
#include <csignal>
#include <cstdio>
#include <dlfcn.h>

namespace {
volatile std::sig_atomic_t usr1 = 0, usr2 = 0, term = 0;
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::signal(SIGUSR1, [](int) { usr1 = usr1 + 1; });
  std::signal(SIGUSR2, [](int) { usr2 = usr2 + 1; });
  std::signal(SIGTERM, [](int) { term = term + 1; });
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "plain_loader: %s\n", dlerror());
    return 3;
  }
  auto work = reinterpret_cast<void (*)(int)>(dlsym(lib, "lib_unload_work"));
  if (work == nullptr) return 4;
  work(100);
  dlclose(lib);
  std::printf("unloaded=%d\n", dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) == nullptr ? 1 : 0);
  std::fflush(stdout);
  std::raise(SIGUSR1);
  std::raise(SIGUSR2);
  std::raise(SIGTERM);
  std::printf("usr1=%d usr2=%d term=%d\n", static_cast<int>(usr1), static_cast<int>(usr2), static_cast<int>(term));
  return 0;
}
