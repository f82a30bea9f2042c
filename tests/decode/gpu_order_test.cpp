// SPDX-License-Identifier: MIT
// GPU spans of one stream never overlap, whatever the clock alignment does
// between them: two spans timed from two anchor chains, whose fits disagree
// by 2.4 us (as a slow host's brackets make them), are placed in order.
// Hand-built dumps: no timing of this machine is involved.
#include <doctest/doctest.h>

#include <edgetrace/reader.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/process.hpp>

namespace gpu_order_test {

namespace er = edgetrace::reader;
using namespace edgetrace_test;

namespace {

/// Ticks are ns. Stream 1 on device 0; anchor 0 starts a chain at host
/// 1000 (GPU 0 of chain A); anchor 1 starts another at host 5000 (GPU 0 of
/// chain B), and so does anchor 2 at host 20000 (chain C). `spans` are
/// (anchor, GPU offset, duration) in launch order, launched 100 ns apart
/// from host 500 on.
std::string gpu_dump(const std::vector<std::vector<std::int64_t>>& spans, const std::string& name) {
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "gpu").site(1, fmt::site_kind::span, 1, "kernel");
  d.defs(1, defs).thread(1, 1, 100, "main");
  events e(1, 500);
  gpu_records g;
  g.runtime().device(0).stream(1, 0);
  g.anchor(0, 0, 1000, 1000).anchor(0, 1, 5000, 5000).anchor(0, 2, 20000, 20000);
  std::uint64_t host = 500;
  for (const auto& s : spans) {
    e.span(1, host, host + 50);
    g.span(1, 1, 100, host, host + 50, static_cast<std::uint64_t>(s[0]), s[1], static_cast<std::uint64_t>(s[2]));
    host += 100;
  }
  d.event_chunk(1, e).gpu_chunk(1, g).thread_stats(1, 1, spans.size(), 0).end(1);
  return saved_dump(d, name);
}

std::vector<er::gpu_span> placed(const std::string& path) {
  er::dump_reader r;
  REQUIRE(r.open(path));
  REQUIRE(r.read_metadata());
  std::vector<er::gpu_span> out;
  REQUIRE(r.read_gpu_spans([&](const er::gpu_span& g) { out.push_back(g); }));
  return out;
}

}  // namespace

TEST_CASE("gpu spans: a span aligned 2.4 us over its stream's previous one is moved after it") {
  // Kernel 1: chain A, GPU 1000..4000 → host 2000..5000. Kernel 2 ran right
  // after it, but chain B's fit puts it 2.4 us early: host 2600..5600.
  const auto spans = placed(gpu_dump({{0, 1000, 3000}, {1, -2400, 3000}, {2, -11900, 500}}, "gpu_overlap.etr"));
  REQUIRE(spans.size() == 3);
  for (const auto& s : spans) REQUIRE(s.resolved);
  CHECK(spans[0].begin_ns == 2000);
  CHECK(spans[0].end_ns == 5000);
  CHECK(spans[1].begin_ns > spans[0].end_ns);  // after it (1 ns apart: viewers' float ends)
  CHECK(spans[1].begin_ns <= spans[0].end_ns + 1);
  CHECK(spans[1].end_ns - spans[1].begin_ns >= 2999);  // its length kept
  CHECK(spans[1].moved_after_previous_ns == 2400);
  CHECK(spans[1].aligned_begin_ns == 2600);
  // Kernel 3: chain C puts it at host 8100..8600, after kernel 2's moved
  // end (8000): no overlap, no move.
  CHECK(spans[2].begin_ns >= spans[1].end_ns);
  CHECK(spans[2].moved_after_previous_ns == 0);

  // `info` says it, with how far.
  const std::string cli = EDGETRACE_TEST_CLI;
  const auto info = run({cli, "info", temp_path("gpu_overlap.etr")});
  CHECK(info.exit_code == 0);
  CHECK(info.out.find("1 GPU span(s) aligned over the previous span of their stream (by up to 2.400 us") !=
        std::string::npos);
}

TEST_CASE("gpu spans: nested scopes on one stream are left nested; a span aligned before the previous one follows it") {
  // Inner 2000..3000 completes (and is written) before outer 1500..4000;
  // then a span whose chain puts it at 1200..1700, before both.
  const auto spans = placed(gpu_dump({{0, 1000, 1000}, {0, 500, 2500}, {1, -3800, 500}}, "gpu_nested.etr"));
  REQUIRE(spans.size() == 3);
  CHECK(spans[0].begin_ns == 2000);
  CHECK(spans[1].begin_ns == 1500);  // around the inner one: not moved
  CHECK(spans[1].end_ns == 4000);
  CHECK(spans[1].moved_after_previous_ns == 0);
  CHECK(spans[2].begin_ns >= spans[1].end_ns);  // ran after the outer one
  CHECK(spans[2].moved_after_previous_ns == 2800);
}

}  // namespace gpu_order_test
