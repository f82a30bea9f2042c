// SPDX-License-Identifier: MIT
// Spans recorded after the fact (EDGETRACE_RECORD, imports) take their place
// in the span structure by their times, not by their place in the file:
// depth and self time from walk_spans (summary, csv, report, diff) and the
// order of read_events_backward (perfetto) are those of the same spans
// written in end order.
#include <doctest/doctest.h>

#include <edgetrace/reader.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <support/dump_builder.hpp>

namespace recorded_order_test {

namespace er = edgetrace::reader;
using namespace edgetrace_test;

namespace {

struct planned_span {
  std::uint64_t site;
  std::uint64_t begin, end;
};

/// Appends span `s` to `e`, rebasing first when it ends before the
/// running reference (a span recorded after a later one, as the writer's
/// encoder does).
void put(events& e, const planned_span& s) {
  if (s.end < e.ref()) e.rebase(s.begin);
  e.span(s.site, s.begin, s.end);
}

struct walked {
  std::uint32_t depth;
  std::uint64_t self_ns;
};

/// walk_spans' depth and self time of every span, by (begin, end).
std::map<std::pair<std::int64_t, std::int64_t>, walked> walk(const std::string& path) {
  er::dump_reader r;
  REQUIRE(r.open(path));
  REQUIRE(r.read_metadata());
  std::map<std::pair<std::int64_t, std::int64_t>, walked> out;
  REQUIRE(er::walk_spans(
      r, [&](const er::span_record& s) { out[{s.begin_ns, s.end_ns}] = walked{s.depth, s.self_ns}; },
      [](const er::event&) {}));
  return out;
}

/// One thread (tick = ns), sites 1..n named s1..sn, the given chunks.
std::string write_dump(const std::vector<std::vector<planned_span>>& chunks, const std::string& name,
                       std::uint64_t sites = 8) {
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "app");
  for (std::uint64_t s = 1; s <= sites; ++s) defs.site(s, fmt::site_kind::span, 1, "s" + std::to_string(s));
  d.defs(1, defs).thread(1, 1, 100, "main");
  std::uint64_t records = 0;
  for (const auto& chunk : chunks) {
    events e(1, chunk.empty() ? 0 : std::min(chunk.front().begin, chunk.front().end));
    for (const auto& s : chunk) put(e, s);
    records += chunk.size();
    d.event_chunk(1, e);
  }
  d.thread_stats(1, 1, records, 0).end(1);
  return saved_dump(d, name);
}

}  // namespace

TEST_CASE("recorded spans: depth and self time by their times, in whatever order they were recorded") {
  // File order (three chunks): a frame scope, then two layers recorded
  // after it ended; a scope after the frame, then a span recorded after it
  // that lies before it (the old walk made the scope its child); a scope
  // with a nested scope, then a span recorded inside it afterwards.
  const std::vector<std::vector<planned_span>> chunks = {
      {{1, 1000, 2000}},                                        // frame (scope)
      {{2, 1100, 1300}, {3, 1300, 1900}, {4, 2100, 2200}},      // layer_a, layer_b (recorded); post (scope)
      {{5, 2000, 2050}, {6, 2600, 2700}, {7, 2300, 3000}, {8, 2400, 2500}},  // gap (recorded); v, outer; inner (recorded)
  };
  const auto spans = walk(write_dump(chunks, "recorded_order.etr"));
  REQUIRE(spans.size() == 8);
  auto check = [&](std::int64_t b, std::int64_t e, std::uint32_t depth, std::uint64_t self) {
    CAPTURE(b);
    CAPTURE(e);
    const auto it = spans.find({b, e});
    REQUIRE(it != spans.end());
    CHECK(it->second.depth == depth);
    CHECK(it->second.self_ns == self);
  };
  check(1000, 2000, 0, 200);  // frame: minus its two recorded layers
  check(1100, 1300, 1, 200);
  check(1300, 1900, 1, 600);
  check(2100, 2200, 0, 100);  // post: not a child of the span recorded after it
  check(2000, 2050, 0, 50);   // gap: a recorded span with no child keeps its whole time
  check(2300, 3000, 0, 500);  // outer: minus v and the recorded inner
  check(2600, 2700, 1, 100);
  check(2400, 2500, 1, 100);
}

TEST_CASE("recorded spans: read_events_backward hands every thread's spans over latest end first") {
  const std::vector<std::vector<planned_span>> chunks = {
      {{1, 1000, 2000}, {2, 2100, 2200}},
      {{3, 1100, 1300}, {4, 2500, 2600}, {5, 2210, 2300}},
  };
  er::dump_reader r;
  REQUIRE(r.open(write_dump(chunks, "recorded_backward.etr")));
  std::vector<std::int64_t> ends;
  std::size_t flagged = 0;
  REQUIRE(r.read_events_backward([&](const er::event& e) {
    if (e.kind != er::event_kind::span) return;
    ends.push_back(e.end_ns);
    flagged += e.out_of_order ? 1 : 0;
  }));
  CHECK(ends == std::vector<std::int64_t>{2600, 2300, 2200, 2000, 1300});
  CHECK(flagged == 2);  // 1100-1300 and 2210-2300 were recorded after a later end
  // The forward pass flags the same spans, in file order.
  std::vector<bool> forward;
  REQUIRE(r.read_events([&](const er::event& e) {
    if (e.kind == er::event_kind::span) forward.push_back(e.out_of_order);
  }));
  CHECK(forward == std::vector<bool>{false, false, true, false, true});
}

TEST_CASE("recorded spans: a random tree recorded with random delays walks like the same tree in end order") {
  std::mt19937_64 rng(20261206);
  for (int round = 0; round < 20; ++round) {
    CAPTURE(round);
    // A random forest of well-nested spans on one thread: each node gets
    // children inside it, separated by gaps.
    std::vector<planned_span> tree;
    std::uint64_t next_free = 1000;
    auto grow = [&](auto&& self, std::uint64_t begin, std::uint64_t length, int level) -> void {
      const std::uint64_t end = begin + length;
      if (level < 4 && length > 40) {
        std::uint64_t cursor = begin + 1 + rng() % 5;
        const int children = static_cast<int>(rng() % 4);
        for (int c = 0; c < children && cursor + 10 < end; ++c) {
          const std::uint64_t room = end - cursor - 1;
          const std::uint64_t child = 5 + rng() % std::max<std::uint64_t>(1, room / 2);
          if (cursor + child >= end) break;
          self(self, cursor, child, level + 1);
          cursor += child + 1 + rng() % 5;
        }
      }
      tree.push_back({1 + rng() % 8, begin, end});  // after its children: end order
    };
    for (int root = 0; root < 30; ++root) {
      const std::uint64_t length = 50 + rng() % 2000;
      grow(grow, next_free, length, 0);
      next_free += length + 1 + rng() % 50;
    }
    // Spans are in end order now (children first, parents after, roots in
    // order); the expected walk is that of this order.
    const std::string in_order = write_dump({tree}, "recorded_random_in_order.etr");
    const auto expected = walk(in_order);
    // Record a third of them late: each moved later by up to 40 places.
    std::vector<std::pair<double, planned_span>> keyed;
    for (std::size_t i = 0; i < tree.size(); ++i) {
      const bool late = rng() % 3 == 0;
      keyed.push_back({static_cast<double>(i) + (late ? static_cast<double>(rng() % 40) + 0.5 : 0.0), tree[i]});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::vector<planned_span>> chunks(1);
    for (const auto& k : keyed) {
      if (chunks.back().size() == 37) chunks.emplace_back();  // chunk boundaries too
      chunks.back().push_back(k.second);
    }
    const auto got = walk(write_dump(chunks, "recorded_random_late.etr"));
    REQUIRE(got.size() == expected.size());
    std::size_t same = 0;
    for (const auto& [key, w] : expected) {
      const auto it = got.find(key);
      if (it != got.end() && it->second.depth == w.depth && it->second.self_ns == w.self_ns) ++same;
    }
    CHECK(same == expected.size());
  }
}

}  // namespace recorded_order_test
