// SPDX-License-Identifier: MIT
// Produces spans through the real runtime, for converter benchmarks and the
// sustained-rate check: `make_dump SPANS [RATE] [args|frame=N]` records SPANS
// spans (two sites, nested) as fast as it can, or paced at RATE spans per
// second (0: unpaced); with `args`, every span carries an integer argument
// (the reader's memory with arguments); with `frame=N`, every N of them are
// inside one more span, "frame" (an iteration for --per frame); with
// `frame=N,flows`, each frame is also the one step of a flow "request" of
// its own id (the converter's memory with many flows), and with
// `frame=N,flows2` the frame's first "step" span is the flow's second step;
// with `frame=N,marks`, a mark "frame" begins each frame instead of a span
// (iterations between marks).
// Run with
// EDGETRACE_OUTPUT set; prints the achieved rate.
#include <edgetrace/edgetrace.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

EDGETRACE_CATEGORY(gen);

int main(int argc, char** argv) {
  const long long spans = argc > 1 ? std::atoll(argv[1]) : 50000000LL;
  const double rate = argc > 2 ? std::atof(argv[2]) : 0;
  const bool args = argc > 3 && std::string(argv[3]) == "args";
  const long long frame = argc > 3 && std::string(argv[3]).rfind("frame=", 0) == 0 ? std::atoll(argv[3] + 6) : 0;
  const std::string option = argc > 3 ? argv[3] : "";
  const bool flows2 = frame > 0 && option.size() > 7 && option.compare(option.size() - 7, 7, ",flows2") == 0;
  const bool flows = flows2 || (frame > 0 && option.size() > 6 && option.compare(option.size() - 6, 6, ",flows") == 0);
  const bool marks = frame > 0 && option.size() > 6 && option.compare(option.size() - 6, 6, ",marks") == 0;
  if (!edgetrace::tracing_active() || spans <= 0 || rate < 0 || (argc > 3 && !args && frame < 2)) {
    std::fprintf(stderr, "usage: EDGETRACE_OUTPUT=big.etr make_dump SPANS [SPANS_PER_SECOND [args|frame=N[,flows|,flows2|,marks]]]\n");
    return 2;
  }
  const auto frame_name = edgetrace::intern("frame");
  const auto layer = edgetrace::intern("layer");
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  volatile long long work = 0;
  // Spans [from, to): pairs of a "step" and a "layer" inside it.
  const auto steps = [&](long long from, long long to) {
    const long long frame_begin = from;
    for (long long i = from; i < to; i += 2) {
      if (rate > 0) {
        // Pace: spans i and i+1 are due at start + i / rate.
        const auto due = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(i / rate));
        while (clock::now() < due) {
        }
      } else if ((i & 0xFFFF) == 0) {
        std::this_thread::yield();  // a real app does other work between spans
      }
      EDGETRACE_SCOPE(gen, "step");
      if (args) EDGETRACE_ARG(gen, "i", i);
      if (flows2 && i == frame_begin) EDGETRACE_FLOW(gen, "request", frame_begin);
      {
        EDGETRACE_SCOPE_NAMED(gen, layer);
        if (args) EDGETRACE_ARG(gen, "bytes", i & 0xFFFF);
        work = work + i;
      }
    }
  };
  if (frame == 0) steps(0, spans);
  for (long long f = 0; marks && f < spans; f += frame) {
    EDGETRACE_MARK(gen, "frame");
    steps(f, std::min(spans, f + frame));
  }
  if (marks) EDGETRACE_MARK(gen, "frame");  // the last frame's end
  for (long long f = 0; frame > 0 && !marks && f < spans; f += frame) {
    EDGETRACE_SCOPE_NAMED(gen, frame_name);
    if (flows) EDGETRACE_FLOW(gen, "request", f);
    steps(f, std::min(spans, f + frame));
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("make_dump: %lld spans in %.2f s (%.1f M spans/s)\n", spans, seconds, spans / seconds / 1e6);
  return 0;
}
