// SPDX-License-Identifier: MIT
// trace_app modes that record arguments, flows and memory
// (tests/decode/annotations_test.cpp, typed_args_test.cpp).
#pragma once

#include <support/trace_app/common.hpp>

namespace trace_app {

// ---- modes for tests/decode/annotations_test.cpp: "arg-dense COUNT", "arg-loose COUNT"
// COUNT spans "argued", each with two arguments recorded back to back:
// i = index % 100 and neg = -(index % 7). The arguments go to the dump as
// runs (format 1.4).
inline int arg_dense_mode(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "argued");
    EDGETRACE_ARG(app, "i", i % 100);
    EDGETRACE_ARG(app, "neg", -(i % 7));
  }
  return 0;
}

// "flow-frames COUNT [EVERY]": COUNT "frame" spans, each with a "layer"
// inside and each a step of a flow "request" of its own id (a request id
// per frame: the converter's memory with a million flows and iterations).
// Every EVERY-th frame's layer is a second step of the frame's flow (0:
// none, every flow has one step).
inline int flow_frames_mode(int count, int every) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_SCOPE(app, "frame");
    EDGETRACE_FLOW(app, "request", i);
    EDGETRACE_SCOPE(app, "layer");
    if (every > 0 && i % every == 0) {
      EDGETRACE_FLOW(app, "request", i);
    }
  }
  return 0;
}

// "mark-frames COUNT": COUNT frames, each begun by a mark "frame" and
// holding a span "layer", then a last mark (iterations between marks: the
// converter's memory with a million of them).
inline int mark_frames_mode(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_MARK(app, "frame");
    EDGETRACE_SCOPE(app, "layer");
  }
  EDGETRACE_MARK(app, "frame");
  return 0;
}

// "arg-loose COUNT": COUNT arguments recorded outside every span, with an
// empty span "between" after every 16th (what no span can claim).
inline int arg_loose_mode(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_ARG(app, "loose", i);
    if (i % 16 == 15) {
      EDGETRACE_SCOPE(app, "between");
    }
  }
  return 0;
}

// "arg-loose-threads THREADS COUNT": THREADS threads each record COUNT
// arguments outside every span, then one span "late" (so that a reader
// in read order holds the arguments back for spans still to come).
inline int arg_loose_threads_mode(int threads, int count) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([count] {
      for (int i = 0; i < count; ++i) EDGETRACE_ARG(app, "loose", i);
      EDGETRACE_SCOPE(app, "late");
    });
  for (std::thread& w : workers) w.join();
  return 0;
}

// ---- modes for tests/decode/typed_args_test.cpp (format 1.5) ---------------------
// "typed-args": phase "warm up", then span "typed" with one argument of
// each kind (typed_arg_values below), then phase "measure" and COUNT spans
// "step" (depth 0) each holding a "child" span; step k records x = k / 8.0
// - 3 (a double), i = k (an int) and even = (k % 2 == 0) (a bool), and
// every step with k % 5 == 0 is a step of flow "request" with id k / 5.
// "float-dense COUNT": COUNT spans "f" with one double argument v = k * 0.25.
inline int typed_args_mode(int count) {
  const edgetrace::name_handle shape = edgetrace::intern("1x3x224x224");
  edgetrace::phase("warm up");
  {
    EDGETRACE_SCOPE(app, "typed");
    EDGETRACE_ARG(app, "ratio", 0.75);
    EDGETRACE_ARG(app, "neg", -2.5f);
    EDGETRACE_ARG(app, "huge", 1.7976931348623157e308);
    EDGETRACE_ARG(app, "tiny", 4.9406564584124654e-324);
    EDGETRACE_ARG(app, "third", 1.0 / 3.0);
    EDGETRACE_ARG(app, "nan", __builtin_nan(""));
    EDGETRACE_ARG(app, "ninf", -__builtin_inf());
    EDGETRACE_ARG(app, "cached", true);
    EDGETRACE_ARG(app, "fused", 1 > 2);
    EDGETRACE_ARG(app, "batch", 8);
    EDGETRACE_ARG(app, "min", INT64_MIN);
    EDGETRACE_ARG_NAMED(app, "shape", shape);
  }
  edgetrace::phase("measure");
  for (int k = 0; k < count; ++k) {
    EDGETRACE_SCOPE(app, "step");
    // The same before the arguments: with a coarse counter the previous
    // step may end in the tick this one begins in, and an argument of that
    // tick belongs to either by time alone (docs/FORMAT.md).
    const auto settle = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
    while (std::chrono::steady_clock::now() < settle) {
    }
    EDGETRACE_ARG(app, "x", k / 8.0 - 3);
    EDGETRACE_ARG(app, "i", k);
    EDGETRACE_ARG(app, "even", k % 2 == 0);
    if (k % 5 == 0) EDGETRACE_FLOW(app, "request", k / 5);
    // A few microseconds before the child, so a coarse counter (aarch64)
    // never puts the step's annotations in the child's first tick.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
    while (std::chrono::steady_clock::now() < until) {
    }
    EDGETRACE_SCOPE(app, "child");
  }
  return 0;
}
inline int float_dense_mode(int count) {
  for (int k = 0; k < count; ++k) {
    EDGETRACE_SCOPE(app, "f");
    EDGETRACE_ARG(app, "v", k * 0.25);
  }
  return 0;
}

inline int annotations_mode(int, char**) {
  // Arguments, memory pools and flows, with values tests/decode/annotations_test.cpp
  // recomputes. "weights" stays live (1500 bytes); each layer i adds
  // (i + 1) * 100 bytes of scratch and its gemm 50 more.
  // gap(): a few microseconds of work between every span boundary and
  // the records next to it, as real layers have. Without it, on a coarse
  // counter (cntvct_el0 ticks every 16-32 ns) an argument recorded in the
  // tick a child span begins cannot be told from one inside it (see
  // docs/ANALYSIS.md, "Arguments and flow steps belong to spans").
  const auto gap = [] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  alignas(16) static unsigned char arena[4096];
  const edgetrace::name_handle fp16 = edgetrace::intern("fp16"), int8 = edgetrace::intern(std::string("int8"));
  {
    EDGETRACE_SCOPE(app, "load");
    gap();
    EDGETRACE_ALLOC(app, arena + 0, 1000, "weights");
    EDGETRACE_ALLOC(app, arena + 1024, 500, "weights");
    gap();
  }
  for (int i = 0; i < 4; ++i) {
    gap();
    EDGETRACE_SCOPE(app, "layer");
    gap();
    EDGETRACE_ARG(app, "batch", 1 << i);
    EDGETRACE_ARG_NAMED(app, "dtype", i % 2 == 0 ? fp16 : int8);
    EDGETRACE_ALLOC(app, arena + 2048, (i + 1) * 100, "scratch");
    gap();
    {
      EDGETRACE_SCOPE(app, "gemm");
      gap();
      EDGETRACE_ARG(app, "k", -64 * (i + 1));
      EDGETRACE_ALLOC(app, arena + 3072, 50, "scratch");
      EDGETRACE_FREE(app, arena + 3072);
      gap();
    }
    gap();
    EDGETRACE_FREE(app, arena + 2048);
    gap();
  }
  gap();
  // Mismatches: a free of an address never allocated, a double free, and
  // free(NULL) (ignored); an argument outside every span (not attached).
  EDGETRACE_FREE(app, reinterpret_cast<void*>(0xdead0));
  EDGETRACE_ALLOC(app, arena + 3584, 64, "scratch");
  EDGETRACE_FREE(app, arena + 3584);
  EDGETRACE_FREE(app, arena + 3584);
  EDGETRACE_FREE(app, nullptr);
  EDGETRACE_ARG(app, "orphan", 1);
  gap();  // else the next span may begin in the orphan's own nanosecond, and claim it
  // Requests 1..3: enqueued on this thread, processed on another.
  for (std::uint64_t id = 1; id <= 3; ++id) {
    {
      EDGETRACE_SCOPE(app, "enqueue");
      EDGETRACE_FLOW(app, "request", id);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::thread([id] {
      EDGETRACE_SCOPE(app, "process");
      EDGETRACE_FLOW(app, "request", id);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }).join();
  }
  return 0;
}

inline int alloc_flood_mode(int argc, char** argv) {
  // More allocations than a 16 KiB ring holds, without pause: pairs drop
  // whole. Address 0x100000 + 16 i always carries i + 1 bytes.
  const int count = argc > 2 ? std::atoi(argv[2]) : 100000;
  for (int i = 0; i < count; ++i) {
    const std::uint64_t address = 0x100000u + 16u * static_cast<std::uint64_t>(i);
    EDGETRACE_ALLOC(app, address, i + 1, "flood");
    EDGETRACE_FREE(app, address);
  }
  std::printf("issued %d\n", count * 3);
  return 0;
}

/// The modes above, by name (trace_app.cpp looks them up).
inline const app_mode annotation_modes[] = {
    {"annotations", annotations_mode},
    {"typed-args", [](int argc, char** argv) { return typed_args_mode(argc > 2 ? std::atoi(argv[2]) : 100); }},
    {"float-dense", [](int argc, char** argv) { return float_dense_mode(argc > 2 ? std::atoi(argv[2]) : 10000); }},
    {"arg-dense", [](int argc, char** argv) { return arg_dense_mode(argc > 2 ? std::atoi(argv[2]) : 10000); }},
    {"arg-loose", [](int argc, char** argv) { return arg_loose_mode(argc > 2 ? std::atoi(argv[2]) : 10000); }},
    {"flow-frames", [](int argc, char** argv) {
       return flow_frames_mode(argc > 2 ? std::atoi(argv[2]) : 10000, argc > 3 ? std::atoi(argv[3]) : 0);
     }},
    {"mark-frames", [](int argc, char** argv) { return mark_frames_mode(argc > 2 ? std::atoi(argv[2]) : 10000); }},
    {"arg-loose-threads", [](int argc, char** argv) {
       return arg_loose_threads_mode(argc > 2 ? std::atoi(argv[2]) : 64, argc > 3 ? std::atoi(argv[3]) : 100000);
     }},
    {"alloc-flood", alloc_flood_mode},
};

}  // namespace trace_app
