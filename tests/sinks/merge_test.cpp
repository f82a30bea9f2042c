// SPDX-License-Identifier: MIT
// `edgetrace merge`: two real processes' dumps on one timeline, as .etr and as JSON, both complete.
#include <edgetrace/sinks/merge.hpp>

#include <doctest/doctest.h>

#include <set>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/json_lite.hpp>

namespace merge_test {

using namespace edgetrace_test;

namespace {

std::multiset<std::tuple<std::string, std::uint64_t, std::int64_t, std::int64_t>> span_set(const loaded_dump& d) {
  std::multiset<std::tuple<std::string, std::uint64_t, std::int64_t, std::int64_t>> out;
  for (const auto& e : d.events)
    if (e.kind == edgetrace::reader::event_kind::span) out.insert({e.name, e.os_tid, e.begin_ns, e.end_ns});
  return out;
}

}  // namespace

TEST_CASE("merging two processes into .etr keeps both complete, on CLOCK_MONOTONIC") {
  const std::string a = record_workload("merge_a", 6);
  const std::string b = record_workload("merge_b", 6);
  const loaded_dump da = load_dump(a), db = load_dump(b);
  const std::string out = scratch("merge_ab.etr");
  const auto r = run_cli({"merge", a, b, "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("CLOCK_MONOTONIC") != std::string::npos);
  const loaded_dump merged = load_dump(out);
  CHECK(merged.complete);
  CHECK_FALSE(merged.damaged);
  auto want = span_set(da);
  for (const auto& s : span_set(db)) want.insert(s);
  CHECK(span_set(merged) == want);  // every span of both, times unchanged
  CHECK(merged.threads.size() == da.threads.size() + db.threads.size());

  // JSON: both pids, every span.
  const std::string json_out = scratch("merge_ab.json");
  REQUIRE(run_cli({"merge", a, b, "-o", json_out}).exit_code == 0);
  json_lite::value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(read_file(json_out), doc, error), error);
  std::set<double> pids;
  std::size_t spans = 0;
  for (std::size_t i = 0; i < doc["traceEvents"].size(); ++i) {
    const auto& e = doc["traceEvents"][i];
    pids.insert(e["pid"].num());
    spans += e["ph"].str() == "X";
  }
  CHECK(pids.size() == 2);
  CHECK(spans == want.size());

  // Summary over the merged dump equals the summary over both inputs.
  const auto one = run_cli({"summary", out, "--format", "csv"});
  const auto two = run_cli({"summary", a, b, "--format", "csv"});
  CHECK(one.out == two.out);
}

TEST_CASE("merge renumbers colliding writer ids and pids, and aligns different boots by CLOCK_REALTIME") {
  // Two dumps from "different boots": same writer id and pid, realtime
  // offsets an hour apart.
  auto make = [](std::uint64_t realtime_offset) {
    dump_builder d;
    process_fields pf;
    pf.pid = 77;
    d.process(0x1234u, pf);
    payload cal;
    for (std::uint64_t t : {1000ull, 2000000ull}) cal.u64(t).u64(t + 5000).u64(t + 5000 + realtime_offset);
    d.chunk(edgetrace::format::chunk_type::calibration, 0x1234u, cal);
    definitions defs;
    defs.category(1, "c");
    defs.site(1, edgetrace::format::site_kind::span, 1, "op", "", 0);
    d.defs(0x1234u, defs);
    d.thread(0x1234u, 1, 77, "t");
    events e(1, 2000);
    e.span(1, 2000, 3000);
    d.event_chunk(0x1234u, e);
    d.end(0x1234u);
    return d.build();
  };
  const std::string a = scratch("merge_boot_a.etr"), b = scratch("merge_boot_b.etr");
  write_file(a, make(1700000000000000000ull));
  write_file(b, make(1700000000000000000ull + 3600000000000ull));
  const std::string out = scratch("merge_boot.etr");
  const auto r = run_cli({"merge", a, b, "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("CLOCK_REALTIME") != std::string::npos);
  CHECK(r.err.find("writer id 0x00001234") != std::string::npos);
  CHECK(r.err.find("pid 77") != std::string::npos);
  edgetrace::reader::dump_reader reader;
  REQUIRE_MESSAGE(edgetrace_test::opened(reader, out), reader.error());
  CHECK(reader.writers().size() == 2);
  std::set<std::uint64_t> pids;
  for (const auto& w : reader.writers()) pids.insert(w.second.pid);
  CHECK(pids.size() == 2);
  std::vector<std::int64_t> begins;
  reader.read_events([&](const edgetrace::reader::event& e) { begins.push_back(e.begin_ns); });
  REQUIRE(begins.size() == 2);
  CHECK(begins[1] - begins[0] == 3600000000000ll);  // an hour later on the common timeline
  CHECK_FALSE(reader.damaged());

  // Forcing CLOCK_MONOTONIC keeps the recorded times.
  REQUIRE(run_cli({"merge", a, b, "-o", out, "--clock", "monotonic"}).exit_code == 0);
  const loaded_dump mono = load_dump(out);
  REQUIRE(mono.events.size() == 2);
  CHECK(mono.events[0].begin_ns == mono.events[1].begin_ns);
}

}  // namespace merge_test
