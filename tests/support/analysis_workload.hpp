// SPDX-License-Identifier: MIT
// Test helper for the analysis tests: a small traced workload (nested spans,
// iteration marks, two threads) that a test binary runs in a child copy of
// itself with EDGETRACE_OUTPUT set, plus independent reference statistics
// computed from the raw span list (tests/support/read_dump.hpp).
#pragma once

#include <edgetrace/edgetrace.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>


#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/test_env.hpp>

EDGETRACE_CATEGORY(work);
EDGETRACE_CATEGORY(aux);
EDGETRACE_CATEGORY(idle);

namespace edgetrace_test {

inline std::string scratch(const std::string& name) { return tmp + "/" + name; }

/// Spins for about `us` microseconds (a traced stage must take time).
inline void spin_us(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  volatile unsigned sink = 0;
  while (std::chrono::steady_clock::now() < until) sink = sink + 1;
}

/// The workload: `iterations` frames on the main thread, each a mark then
/// an "iteration" span holding "stage_a" (three "leaf" spans) and
/// "stage_b"; a worker thread runs "worker_task" spans meanwhile.
inline void analysis_workload(int iterations, int scale) {
  EDGETRACE_THREAD_NAME("main");
  std::thread worker([&] {
    EDGETRACE_THREAD_NAME("worker");
    for (int i = 0; i < iterations; ++i) {
      EDGETRACE_SCOPE(aux, "worker_task");
      spin_us(scale * (20 + i % 5 * 10));
    }
  });
  for (int i = 0; i < iterations; ++i) {
    EDGETRACE_MARK(work, "frame");
    EDGETRACE_SCOPE(work, "iteration");
    {
      EDGETRACE_SCOPE(work, "stage_a");
      for (int k = 0; k < 3; ++k) {
        EDGETRACE_SCOPE(work, "leaf");
        spin_us(scale * (5 + (i * 3 + k) % 7 * 4));
      }
      spin_us(scale * 10);
    }
    {
      EDGETRACE_SCOPE(work, "stage_b");
      spin_us(scale * (15 + i % 4 * 20));
    }
  }
  EDGETRACE_MARK(work, "frame");  // closes the last iteration
  worker.join();
}

/// The "extras" mode: what the plain workload lacks. Each frame is a mark
/// then an "iteration" span holding "layer_10", "layer_2" and "layer_1" in
/// that order (names whose plain, natural and execution orders all differ),
/// each with an "op" argument; "layer_10" and "layer_1" are the two steps of
/// flow "request" (id = frame), "layer_2" the only step of flow "lonely".
/// Recording is paused (edgetrace::pause) for 3 ms before the mark of frame
/// `iterations / 2`, so one interval between marks holds a pause. Phase
/// "steady" starts at frame 2. A worker thread waits ("wait_queue",
/// sleeping), works ("worker_task") and parks ("park", category idle) from
/// then on: it starts once main is in the phase, so a report of phase
/// "steady" shows its waiting however late main gets there (under qemu on
/// a loaded machine, main's first two frames once took 8 ms, and the
/// worker had finished before the phase began).
inline void analysis_extras(int iterations, int scale) {
  EDGETRACE_THREAD_NAME("main");
  std::atomic<bool> steady{false};
  std::thread worker([&] {
    EDGETRACE_THREAD_NAME("worker");
    while (!steady.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::microseconds(50));
    for (int i = 0; i < iterations; ++i) {
      {
        EDGETRACE_SCOPE(aux, "wait_queue");
        std::this_thread::sleep_for(std::chrono::microseconds(scale * 300));
      }
      {
        EDGETRACE_SCOPE(aux, "worker_task");
        spin_us(scale * 40);
      }
      {
        EDGETRACE_SCOPE(idle, "park");
        spin_us(scale * 10);
      }
    }
  });
  for (int i = 0; i < iterations; ++i) {
    if (i == 2) {
      edgetrace::phase("steady");
      steady.store(true, std::memory_order_release);
    }
    if (i == iterations / 2) {
      edgetrace::pause();
      spin_us(3000);
      edgetrace::resume();
    }
    EDGETRACE_MARK(work, "frame");
    EDGETRACE_SCOPE(work, "iteration");
    {
      EDGETRACE_SCOPE(work, "layer_10");
      EDGETRACE_ARG(work, "op", 1);
      EDGETRACE_FLOW(work, "request", i);
      spin_us(scale * (30 + i % 3 * 10));
    }
    {
      EDGETRACE_SCOPE(work, "layer_2");
      EDGETRACE_ARG(work, "op", 2);
      EDGETRACE_FLOW(work, "lonely", i);
      spin_us(scale * 20);
    }
    {
      EDGETRACE_SCOPE(work, "layer_1");
      EDGETRACE_ARG(work, "op", 1);
      EDGETRACE_FLOW(work, "request", i);
      spin_us(scale * 15);
    }
    spin_us(scale * 5);
  }
  EDGETRACE_MARK(work, "frame");  // closes the last iteration
  steady.store(true, std::memory_order_release);  // fewer than 3 iterations: no phase, the worker still runs
  worker.join();
}

/// Runs the workload in a child copy of this test binary and returns the
/// dump path. `scale` stretches every stage (use 2 for a "slower" run);
/// `mode` "extras" runs analysis_extras instead.
inline std::string record_workload(const std::string& name, int iterations = 30, int scale = 1,
                                   const std::string& mode = "") {
  const std::string path = scratch(name + ".etr");
  std::remove(path.c_str());
  const auto r = run({"/proc/self/exe", "--test-case=analysis workload", "--no-intro", "--no-version"},
                     {"EDGETRACE_OUTPUT=" + path, "ETTEST_ANALYSIS_WORKLOAD=" + std::to_string(iterations) + "," +
                                                      std::to_string(scale) + (mode.empty() ? "" : "," + mode)});
  const std::string output = r.out + r.err;
  REQUIRE_MESSAGE(r.exit_code == 0, output);
  REQUIRE(file_exists(path));
  return path;
}

// ------------------------------------------------------- reference values

struct ref_span {
  std::string name, category, thread;
  std::uint64_t tid = 0;
  std::int64_t begin = 0, end = 0;
  std::uint64_t self = 0;
  std::uint32_t depth = 0;
  std::uint64_t dur() const { return static_cast<std::uint64_t>(end - begin); }
};

/// Spans of a dump with self time and depth computed the slow, obvious
/// way: per thread, a span's parent is the shortest other span containing
/// it (file order breaks ties: a parent is recorded after its children).
inline std::vector<ref_span> reference_spans(const loaded_dump& dump) {
  std::vector<ref_span> spans;
  std::vector<std::size_t> order;
  for (const auto& e : dump.events)
    if (e.kind == edgetrace::reader::event_kind::span)
      spans.push_back(ref_span{e.name, e.category, e.thread_name, e.os_tid, e.begin_ns, e.end_ns, 0, 0});
  const std::size_t n = spans.size();
  std::vector<long> parent(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {  // a parent comes later in file order
      if (spans[j].tid != spans[i].tid) continue;
      if (spans[j].begin <= spans[i].begin && spans[j].end >= spans[i].end) {
        if (parent[i] < 0 || spans[j].dur() < spans[static_cast<std::size_t>(parent[i])].dur()) parent[i] = static_cast<long>(j);
      }
    }
  }
  std::vector<std::uint64_t> children(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (parent[i] >= 0) children[static_cast<std::size_t>(parent[i])] += spans[i].dur();
  for (std::size_t i = 0; i < n; ++i) {
    spans[i].self = spans[i].dur() - std::min(children[i], spans[i].dur());
    std::uint32_t depth = 0;
    for (long p = parent[i]; p >= 0; p = parent[static_cast<std::size_t>(p)]) ++depth;
    spans[i].depth = depth;
  }
  return spans;
}

/// Nearest-rank percentile of a sample list, computed directly.
inline std::uint64_t reference_percentile(std::vector<std::uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()) - 1e-9));
  rank = std::max<std::size_t>(rank, 1);
  rank = std::min(rank, v.size());
  return v[rank - 1];
}

struct ref_row {
  std::uint64_t calls = 0, total = 0, self = 0, min = ~0ull, max = 0;
  std::vector<std::uint64_t> durations;
};

inline std::map<std::string, ref_row> reference_rows(const std::vector<ref_span>& spans) {
  std::map<std::string, ref_row> rows;
  for (const ref_span& s : spans) {
    ref_row& r = rows[s.name];
    ++r.calls;
    r.total += s.dur();
    r.self += s.self;
    r.min = std::min(r.min, s.dur());
    r.max = std::max(r.max, s.dur());
    r.durations.push_back(s.dur());
  }
  return rows;
}

/// Times of the "frame" marks, in time order.
inline std::vector<std::int64_t> mark_times(const loaded_dump& dump, const std::string& name = "frame") {
  std::vector<std::int64_t> out;
  for (const auto& e : dump.events)
    if (e.site_kind == edgetrace::format::site_kind::mark && e.name == name) out.push_back(e.begin_ns);
  std::sort(out.begin(), out.end());
  return out;
}

inline process_result run_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv{cli};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

}  // namespace edgetrace_test

// Runs only in the child started by record_workload.
TEST_CASE("analysis workload") {
  const char* spec = std::getenv("ETTEST_ANALYSIS_WORKLOAD");
  if (spec == nullptr) return;
  int iterations = 30, scale = 1;
  char mode[16] = "";
  std::sscanf(spec, "%d,%d,%15s", &iterations, &scale, mode);
  if (std::string(mode) == "extras") edgetrace_test::analysis_extras(iterations, scale);
  else edgetrace_test::analysis_workload(iterations, scale);
}
