// SPDX-License-Identifier: MIT
// trace_app modes for the device sampler (tests/telemetry/): iterations of
// about a millisecond of CPU work, or of sleep, optionally pinned to one CPU.
#pragma once

#include <support/trace_app/common.hpp>

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

inline const app_mode device_modes[] = {
    {"device-steps", [](int argc, char** argv) {
       return device_steps_mode(argc > 2 ? std::atof(argv[2]) : 1.0, argc > 3 ? std::atoi(argv[3]) : -1,
                                argc > 4 && std::strcmp(argv[4], "sleep") == 0);
     }},
};

}  // namespace trace_app
