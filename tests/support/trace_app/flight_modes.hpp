// SPDX-License-Identifier: MIT
// trace_app modes of latency triggers and of the flight recorder under
// hostile use (tests/flight/flight_triggers_test.cpp, flight_hostile_test.cpp).
#pragma once

#include <support/trace_app/common.hpp>

namespace trace_app {

/// ---- Latency triggers in flight mode (tests/flight/flight_triggers_test.cpp).
inline int flight_iterations_mode(int argc, char** argv) {
  // argv: COUNT SLOW_FIRST SLOW_EVERY SLOW_MS [TAIL_MS [named]]. COUNT
  // iterations, each a "frame" mark then an "infer" span of ~1 ms (its
  // name interned at run time with "named"); iteration
  // SLOW_FIRST (and every SLOW_EVERY-th after it, 0 = none more) lasts
  // SLOW_MS instead; SLOW_FIRST < 0: none. A last mark closes the last
  // iteration, then the app idles TAIL_MS (default 400) so that a
  // snapshot's after-window ends before exit.
  const int count = argc > 2 ? std::atoi(argv[2]) : 80;
  const int slow_first = argc > 3 ? std::atoi(argv[3]) : -1;
  const int slow_every = argc > 4 ? std::atoi(argv[4]) : 0;
  const int slow_ms = argc > 5 ? std::atoi(argv[5]) : 30;
  const int tail_ms = argc > 6 ? std::atoi(argv[6]) : 400;
  const bool named = argc > 7 && std::strcmp(argv[7], "named") == 0;
  const edgetrace::name_handle infer = edgetrace::intern(std::string("infer"));
  for (int i = 0; i < count; ++i) {
    const bool slow = slow_first >= 0 && (i == slow_first || (slow_every > 0 && i > slow_first &&
                                                              (i - slow_first) % slow_every == 0));
    const auto work = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(slow ? slow_ms : 1)); };
    EDGETRACE_MARK(app, "frame");
    if (named) {
      EDGETRACE_SCOPE_NAMED(app, infer);
      work();
    } else {
      EDGETRACE_SCOPE(app, "infer");
      work();
    }
  }
  EDGETRACE_MARK(app, "frame");
  std::this_thread::sleep_for(std::chrono::milliseconds(tail_ms));
  return 0;
}

inline int flight_paused_mode(int, char**) {
  // 1 ms "frame" iterations with a 60 ms pause of recording between two
  // marks: that interval is no iteration (it must not fire frame>20ms).
  for (int i = 0; i < 20; ++i) {
    if (i == 10) {
      edgetrace::pause();
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      edgetrace::resume();
    }
    EDGETRACE_MARK(app, "frame");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return 0;
}

/// ---- end of the latency trigger modes
/// ---- modes for tests/flight/flight_hostile_test.cpp (the recorder under hostile use).
///  "map-stalls SECONDS": records a span, then maps, touches and unmaps
///    1 MiB in a loop for SECONDS, and prints "first_span_ms=N
///    longest_us=M": N the time from the process's start (exec) to the
///    end of its first span (its thread's ring is mapped for it), M the
///    longest map-touch-unmap; both wait when something holds the
///    process's memory map lock (the flight ring's pre-faulting).
inline int map_stalls_mode(int argc, char** argv) {
  { EDGETRACE_SCOPE(app, "map_loop"); }
  long long first_span_ms = -1;
  {
    timespec boot{};
    ::clock_gettime(CLOCK_BOOTTIME, &boot);
    unsigned long long start_ticks = 0;
    if (std::FILE* stat = std::fopen("/proc/self/stat", "r")) {
      char line[1024] = {};
      if (std::fgets(line, sizeof line, stat) != nullptr) {
        const char* after = std::strrchr(line, ')');
        // Fields after the name: state is the 3rd, starttime the 22nd.
        for (int field = 2; after != nullptr && field < 22; ++field) after = std::strchr(after + 1, ' ');
        if (after != nullptr) start_ticks = std::strtoull(after + 1, nullptr, 10);
      }
      std::fclose(stat);
    }
    const long hz = ::sysconf(_SC_CLK_TCK);
    if (start_ticks != 0 && hz > 0)
      first_span_ms = static_cast<long long>(boot.tv_sec) * 1000 + boot.tv_nsec / 1000000 -
                      static_cast<long long>(start_ticks * 1000 / static_cast<unsigned long long>(hz));
  }
  const std::uint64_t start = now_ns();
  const auto duration = static_cast<std::uint64_t>((argc > 2 ? std::atof(argv[2]) : 1.0) * 1e9);
  std::uint64_t longest = 0;
  while (now_ns() - start < duration) {
    const std::uint64_t before = now_ns();
    void* block = ::mmap(nullptr, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return 3;
    static_cast<volatile char*>(block)[0] = 1;
    ::munmap(block, 1u << 20);
    const std::uint64_t took = now_ns() - before;
    if (took > longest) longest = took;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("first_span_ms=%lld longest_us=%llu\n", first_span_ms, static_cast<unsigned long long>(longest / 1000));
  return 0;
}

/// The modes above, by name (trace_app.cpp looks them up).
/// "grow-after MB WAIT_MS": spans for WAIT_MS (the flight ring is faulted
/// in meanwhile), then MB MiB allocated and touched at once (a model
/// loaded after start-up), held for 100 ms and freed. Prints "grew MB".
inline int grow_after_mode(int megabytes, int wait_ms) {
  const std::uint64_t until = now_ns() + static_cast<std::uint64_t>(wait_ms) * 1000000u;
  while (now_ns() < until) {
    EDGETRACE_SCOPE(app, "before");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::size_t bytes = static_cast<std::size_t>(megabytes) << 20;
  auto* model = static_cast<unsigned char*>(std::malloc(bytes));
  if (model == nullptr) return 2;
  {
    EDGETRACE_SCOPE(app, "load");
    std::memset(model, 1, bytes);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::printf("grew %d %d\n", megabytes, model[bytes / 2]);
  std::free(model);
  return 0;
}

inline const app_mode flight_modes[] = {
    {"grow-after", [](int argc, char** argv) {
       return grow_after_mode(argc > 2 ? std::atoi(argv[2]) : 160, argc > 3 ? std::atoi(argv[3]) : 500);
     }},
    {"flight-iterations", flight_iterations_mode},
    {"flight-paused", flight_paused_mode},
    {"map-stalls", map_stalls_mode},
};

}  // namespace trace_app
