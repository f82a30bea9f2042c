// SPDX-License-Identifier: MIT
// trace_app modes that load the writer: random bursts, dense loops on
// many threads, thread churn, paced iterations, a feed for kill -9
// (tests/writer/reliability_test.cpp, overload_test.cpp; paced for
// tests/sinks/top_test.cpp and tests/decode/snapshot_reader_test.cpp).
#pragma once

#include <support/trace_app/common.hpp>

namespace trace_app {

// ---- modes added for tests/writer/reliability_test.cpp -------------------------

/// "stress SECONDS THREADS": THREADS threads issue random bursts of spans
/// (some nested) until SECONDS pass; each prints how many it issued.
inline int stress_mode(double seconds, int thread_total) {
  std::vector<std::uint64_t> issued(static_cast<std::size_t>(thread_total), 0);
  const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_total; ++t)
    threads.emplace_back([&, t] {
      const std::string name = "stress-" + std::to_string(t);
      EDGETRACE_THREAD_NAME(name.c_str());
      std::uint64_t state = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(t + 1);
      std::uint64_t count = 0;
      while (now_ns() < deadline) {
        const std::uint64_t burst = 1 + next_random(state) % 3000;
        for (std::uint64_t i = 0; i < burst; ++i) {
          EDGETRACE_SCOPE(app, "stress_outer");
          if ((i & 3) == 0) {
            EDGETRACE_SCOPE(app, "stress_inner");
            ++count;
          }
          ++count;
        }
        const std::uint64_t pause_us = next_random(state) % 2000;
        if (pause_us < 1000) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
      }
      issued[static_cast<std::size_t>(t)] = count;
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < thread_total; ++t)
    std::printf("stress-%d %llu\n", t, static_cast<unsigned long long>(issued[static_cast<std::size_t>(t)]));
  return 0;
}

/// "kill-feed": forever: a span around a ~100 us sleep, then a counter whose
/// value is the sequence number; after each, (seq, CLOCK_MONOTONIC ns) goes
/// to stdout as two raw u64, so whoever kills us knows what was completed.
[[noreturn]] inline void kill_feed_mode() {
  for (std::uint64_t seq = 1;; ++seq) {
    {
      EDGETRACE_SCOPE(app, "feed_span");
      timespec pause{0, 100000};
      nanosleep(&pause, nullptr);
    }
    EDGETRACE_COUNTER(app, "feed_seq", static_cast<double>(seq));
    const std::uint64_t entry[2] = {seq, now_ns()};
    write_all(1, entry, sizeof entry);
  }
}

/// "many-threads N PER": N short-lived threads (4 at a time), PER spans each;
/// prints memory before (after a warm-up) and after.
inline int many_threads_mode(int thread_total, int per_thread) {
  auto batch = [&](int count) {
    for (int done = 0; done < count;) {
      std::thread group[4];
      int n = 0;
      for (; n < 4 && done < count; ++n, ++done)
        group[n] = std::thread([per_thread] {
          for (int i = 0; i < per_thread; ++i) {
            EDGETRACE_SCOPE(app, "short_thread_span");
          }
        });
      for (int i = 0; i < n; ++i) group[i].join();
    }
  };
  const int warm_up = 64;
  batch(warm_up);
  edgetrace::flush();
  edgetrace::flush();  // retired rings are recycled on the cycle after the exit
  const long rss_before = status_kb("VmRSS"), vm_before = status_kb("VmSize");
  batch(thread_total);
  for (int i = 0; i < 3; ++i) {
    edgetrace::flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const long rss_after = status_kb("VmRSS"), vm_after = status_kb("VmSize");
  std::printf("threads=%d rss_before_kb=%ld rss_after_kb=%ld vm_before_kb=%ld vm_after_kb=%ld live_threads=%d\n",
              warm_up + thread_total, rss_before, rss_after, vm_before, vm_after, thread_count());
  return 0;
}

/// "dense N": N spans in a tight loop on the main thread.
inline int dense_mode(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "dense_span");
  }
  return 0;
}

// ---- mode for tests/sinks/top_test.cpp and tests/decode/snapshot_reader_test.cpp --------
// "paced SECONDS RATE": RATE iterations a second for SECONDS; each iteration
// is a span "paced_outer" (about 200 us) holding a span "paced_inner" (about
// 100 us), both sleeping, so the dump grows steadily while the program
// runs. Prints "iterations N" at the end.
inline int paced_mode(double seconds, int rate) {
  const std::uint64_t start = now_ns();
  const std::uint64_t period = rate > 0 ? 1000000000u / static_cast<std::uint64_t>(rate) : 1000000000u;
  const std::uint64_t end = start + static_cast<std::uint64_t>(seconds * 1e9);
  std::uint64_t iterations = 0;
  for (std::uint64_t next = start; next < end; next += period) {
    {
      EDGETRACE_SCOPE(app, "paced_outer");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      EDGETRACE_SCOPE(app, "paced_inner");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ++iterations;
    const std::uint64_t now = now_ns();
    if (next + period > now) std::this_thread::sleep_for(std::chrono::nanoseconds(next + period - now));
  }
  std::printf("iterations %llu\n", static_cast<unsigned long long>(iterations));
  return 0;
}

// ---- modes for tests/writer/overload_test.cpp ------------------------------------
/// THREADS threads named dense-0, dense-1, ..., each running body(index)
/// once all of them have started (released together, as the peer
/// harness's w1_2t is). Returns them running.
template <class Body>
std::vector<std::thread> start_dense_threads(int threads, Body body) {
  std::atomic<int> ready{0}, released{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&ready, &released, &go, body, t] {
      char name[16];
      std::snprintf(name, sizeof name, "dense-%d", t);
      edgetrace::set_thread_name(name);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      released.fetch_add(1);  // the last use of this function's locals
      body(t);
    });
  }
  while (ready.load() != threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  while (released.load() != threads) std::this_thread::yield();
  return pool;
}

/// Joins the threads and prints "issued N".
inline int join_dense_threads(std::vector<std::thread>& pool, long long issued) {
  for (auto& thread : pool) thread.join();
  std::printf("issued %lld\n", issued);
  return 0;
}

// "dense-threads THREADS COUNT": each thread records COUNT empty spans as fast
// as it can; prints "issued N" (all threads).
inline int dense_threads_mode(int threads, int count) {
  auto pool = start_dense_threads(threads, [count](int) {
    for (int i = 0; i < count; ++i) {
      EDGETRACE_SCOPE(app, "dense_span");
    }
  });
  return join_dense_threads(pool, static_cast<long long>(threads) * count);
}

/// Records empty spans as fast as it can until CLOCK_MONOTONIC `end` (the
/// clock read every 4096 spans); returns how many.
inline long long dense_until(std::uint64_t end) {
  long long count = 0;
  do {
    for (int i = 0; i < 4096; ++i) {
      EDGETRACE_SCOPE(app, "dense_span");
    }
    count += 4096;
  } while (now_ns() < end);
  return count;
}

// "dense-for THREADS SECONDS": each thread records empty spans as fast as it
// can for SECONDS; prints "issued N" (all threads): a load that lasts as
// long on a slow build as on a fast one.
inline int dense_for_mode(int threads, double seconds) {
  std::atomic<long long> issued{0};
  const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  auto pool = start_dense_threads(threads, [&issued, end](int) { issued.fetch_add(dense_until(end)); });
  for (auto& thread : pool) thread.join();
  std::printf("issued %lld\n", issued.load());
  return 0;
}

// "dense-idle THREADS SECONDS": each thread records empty spans as fast as it
// can for SECONDS, then all go idle: prints "issued dense-I N" per thread
// and "idle", then sleeps for a minute (the test kills it: kill -9 of a
// process whose threads stopped recording a moment ago).
inline int dense_idle_mode(int threads, double seconds) {
  std::vector<long long> issued(static_cast<std::size_t>(threads), 0);
  std::atomic<int> finished{0};
  const std::uint64_t end = now_ns() + static_cast<std::uint64_t>(seconds * 1e9);
  auto pool = start_dense_threads(threads, [&issued, &finished, end](int t) {
    issued[static_cast<std::size_t>(t)] = dense_until(end);
    finished.fetch_add(1, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::seconds(60));
  });
  while (finished.load(std::memory_order_acquire) != threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int t = 0; t < threads; ++t) std::printf("issued dense-%d %lld\n", t, issued[static_cast<std::size_t>(t)]);
  std::printf("idle\n");
  std::fflush(stdout);
  for (auto& thread : pool) thread.join();
  return 0;
}

// "exit-busy THREADS": THREADS detached threads record dense spans without
// end; once every one has recorded, main returns 300 ms later while they
// still do (the exit bound with busy threads). Prints "exiting".
inline int exit_busy_mode(int threads) {
  static std::atomic<int> recording{0};  // static: the detached threads outlive main's frame
  for (int t = 0; t < threads; ++t) {
    std::thread([t] {
      char name[16];
      std::snprintf(name, sizeof name, "dense-%d", t);
      edgetrace::set_thread_name(name);
      {
        EDGETRACE_SCOPE(app, "dense_span");
      }
      recording.fetch_add(1);
      for (;;) {
        EDGETRACE_SCOPE(app, "dense_span");
      }
    }).detach();
  }
  while (recording.load() != threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::printf("exiting\n");
  std::fflush(stdout);
  return 0;
}

// "dense-mixed THREADS COUNT": dense-threads with what a thread that encodes
// its own records under overload cannot encode alone: an argument on every
// 1000th span, and from the middle of the loop on a second span site,
// "late_span", inside each span, that nobody recorded before. Prints
// "issued N" (dense_span spans, all threads).
inline int dense_mixed_mode(int threads, int count) {
  auto pool = start_dense_threads(threads, [count](int) {
    for (int i = 0; i < count; ++i) {
      EDGETRACE_SCOPE(app, "dense_span");
      if (i % 1000 == 0) EDGETRACE_ARG(app, "i", i);
      if (i >= count / 2) {
        EDGETRACE_SCOPE(app, "late_span");
      }
    }
  });
  return join_dense_threads(pool, static_cast<long long>(threads) * count);
}

// "dense-term THREADS": the threads record back-to-back spans until, after
// 300 ms, the first of them gets SIGTERM (pthread_kill: the handler runs on
// a thread that may be encoding its own records). Its default action ends
// the process.
inline int dense_term_mode(int threads) {
  auto pool = start_dense_threads(threads, [](int) {
    for (;;) {
      EDGETRACE_SCOPE(app, "dense_span");
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  pthread_kill(pool[0].native_handle(), SIGTERM);
  for (;;) pause();
}

/// The modes above, by name (trace_app.cpp looks them up).
inline const app_mode load_modes[] = {
    {"stress", [](int argc, char** argv) { return stress_mode(argc > 2 ? std::atof(argv[2]) : 2.0, argc > 3 ? std::atoi(argv[3]) : 8); }},
    {"kill-feed", [](int, char**) -> int { kill_feed_mode(); }},
    {"many-threads", [](int argc, char** argv) { return many_threads_mode(argc > 2 ? std::atoi(argv[2]) : 10000, argc > 3 ? std::atoi(argv[3]) : 3); }},
    {"dense", [](int argc, char** argv) { return dense_mode(argc > 2 ? std::atoi(argv[2]) : 1000000); }},
    {"dense-threads", [](int argc, char** argv) { return dense_threads_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atoi(argv[3]) : 1000000); }},
    {"dense-idle", [](int argc, char** argv) { return dense_idle_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atof(argv[3]) : 0.5); }},
    {"dense-for", [](int argc, char** argv) { return dense_for_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atof(argv[3]) : 1.0); }},
    {"dense-mixed", [](int argc, char** argv) { return dense_mixed_mode(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? std::atoi(argv[3]) : 1000000); }},
    {"dense-term", [](int argc, char** argv) { return dense_term_mode(argc > 2 ? std::atoi(argv[2]) : 2); }},
    {"exit-busy", [](int argc, char** argv) { return exit_busy_mode(argc > 2 ? std::atoi(argv[2]) : 64); }},
    {"paced", [](int argc, char** argv) { return paced_mode(argc > 2 ? std::atof(argv[2]) : 2.0, argc > 3 ? std::atoi(argv[3]) : 200); }},
};

}  // namespace trace_app
