// SPDX-License-Identifier: MIT
// trace_app modes for the device sampler (tests/telemetry/): iterations of
// about a millisecond of CPU work, or of sleep, optionally pinned to one CPU.
#pragma once

#include <support/trace_app/common.hpp>

#include <cerrno>
#include <fcntl.h>
#include <sched.h>

namespace trace_app {

inline std::uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

/// "device-steps SECONDS [CPU [sleep]]": spans "step" for SECONDS, each
/// about 1 ms of the thread's own CPU time (or a 1 ms sleep with `sleep`),
/// pinned to CPU when it is >= 0, on a thread named "steps". Prints "steps N".
inline int device_steps_mode(double seconds, int cpu, bool sleep) {
  // The flusher keeps the process's CPUs (it was made in static
  // initialisation, and takes them itself when a pinned thread makes it).
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("trace_app: sched_setaffinity");
  }
  EDGETRACE_THREAD_NAME("steps");
  const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  std::uint64_t steps = 0;
  volatile std::uint64_t sink = 0;
  while (now_ns() < deadline) {
    EDGETRACE_SCOPE(app, "step");
    if (sleep) {
      const timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    } else {
      const std::uint64_t until = thread_cpu_ns() + 1000000u;
      while (thread_cpu_ns() < until) sink = sink + 1;
    }
    ++steps;
  }
  std::printf("steps %llu\n", static_cast<unsigned long long>(steps));
  return 0;
}

/// "device-layers SECONDS PLANTED": spans "frame" for SECONDS on a thread
/// named "frames", each holding ten layers ("layer_0" ... "layer_9", about
/// 100 us of the thread's CPU time each; "layer_2" to "layer_7" inside a
/// "backbone" span). In frame number PLANTED (from 0), "layer_4" takes 20
/// times as long. Prints "frames N".
inline int device_layers_mode(double seconds, long long planted) {
  EDGETRACE_THREAD_NAME("frames");
  const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  volatile std::uint64_t sink = 0;
  long long frames = 0;
  const auto work = [&](int layer) {
    const std::uint64_t until = thread_cpu_ns() + (frames == planted && layer == 4 ? 2000000u : 100000u);
    while (thread_cpu_ns() < until) sink = sink + 1;
  };
#define TRACE_APP_LAYER(N)                 \
  do {                                     \
    EDGETRACE_SCOPE(app, "layer_" #N);     \
    work(N);                               \
  } while (0)
  for (; now_ns() < deadline; ++frames) {
    EDGETRACE_SCOPE(app, "frame");
    TRACE_APP_LAYER(0);
    TRACE_APP_LAYER(1);
    {
      EDGETRACE_SCOPE(app, "backbone");
      TRACE_APP_LAYER(2);
      TRACE_APP_LAYER(3);
      TRACE_APP_LAYER(4);
      TRACE_APP_LAYER(5);
      TRACE_APP_LAYER(6);
      TRACE_APP_LAYER(7);
    }
    TRACE_APP_LAYER(8);
    TRACE_APP_LAYER(9);
  }
#undef TRACE_APP_LAYER
  std::printf("frames %lld\n", frames);
  return 0;
}

/// "device-descriptors THREADS FILES": THREADS traced threads that each
/// record a span and stay alive while the sampler takes several samples,
/// then FILES descriptors opened at once (what an app that keeps many
/// files open does). Prints "opened N" and exits 1 when an open failed.
inline int device_descriptors_mode(int threads, int files) {
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&] {
      { EDGETRACE_SCOPE(app, "work"); }
      started.fetch_add(1);
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
  while (started.load() < threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // samples at EDGETRACE_SAMPLE_MS with every thread
  std::vector<int> opened;
  for (int i = 0; i < files; ++i) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::printf("opened %d: %s\n", i, std::strerror(errno));
      break;
    }
    opened.push_back(fd);
  }
  if (static_cast<int>(opened.size()) == files) std::printf("opened %d\n", files);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // more samples with the table full
  for (int fd : opened) ::close(fd);
  done.store(true);
  for (std::thread& w : workers) w.join();
  return static_cast<int>(opened.size()) == files ? 0 : 1;
}

inline const app_mode device_modes[] = {
    {"device-descriptors", [](int argc, char** argv) {
       return device_descriptors_mode(argc > 2 ? std::atoi(argv[2]) : 256, argc > 3 ? std::atoi(argv[3]) : 900);
     }},
    {"device-layers", [](int argc, char** argv) {
       return device_layers_mode(argc > 2 ? std::atof(argv[2]) : 1.0, argc > 3 ? std::atoll(argv[3]) : -1);
     }},
    {"device-steps", [](int argc, char** argv) {
       return device_steps_mode(argc > 2 ? std::atof(argv[2]) : 1.0, argc > 3 ? std::atoi(argv[3]) : -1,
                                argc > 4 && std::strcmp(argv[4], "sleep") == 0);
     }},
};

}  // namespace trace_app
