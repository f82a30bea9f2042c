// SPDX-License-Identifier: MIT
// `edgetrace diff`: a run against itself is all zeros; a slower run shows up first, with the right deltas.
#include <edgetrace/sinks/diff.hpp>

#include <doctest/doctest.h>

#include <algorithm>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/json_lite.hpp>

namespace diff_test {

using namespace edgetrace_test;

TEST_CASE("diff of a run against itself is all zeros") {
  const std::string dump_path = record_workload("diff_self", 12);
  const auto r = run_cli({"diff", dump_path, dump_path, "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  json_lite::value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(r.out, doc, error), error);
  REQUIRE(doc["rows"].size() == 5);
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const auto& row = doc["rows"][i];
    CAPTURE(row["name"].str());
    for (const char* field : {"calls_delta", "mean_delta_ns", "p50_delta_ns", "p99_delta_ns", "total_delta_ns"})
      CHECK(row[field].num() == 0);
    CHECK(row["calls_base"].num() > 0);
  }
  const auto table = run_cli({"diff", dump_path, dump_path});
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("sorted by impact") != std::string::npos);
}

namespace {
/// 100 "work" spans of `work_ns` and 100 "wait_queue" spans of `wait_ns`.
std::string work_and_wait(const std::string& name, std::uint64_t work_ns, std::uint64_t wait_ns) {
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "c")
      .site(1, edgetrace::format::site_kind::span, 1, "work")
      .site(2, edgetrace::format::site_kind::span, 1, "wait_queue");
  d.defs(1, defs).thread(1, 1, 10, "main");
  events e(1, 1000);
  std::uint64_t t = 1000;
  for (int i = 0; i < 100; ++i) {
    e.span(1, t, t + work_ns);
    t += work_ns;
    e.span(2, t, t + wait_ns);
    t += wait_ns;
  }
  d.event_chunk(1, e).end(1);
  return saved_dump(d, name);
}
}  // namespace

TEST_CASE("diff ranks the work before the waiting spans, whose change follows from it") {
  // The wait grew 9x more than the work did: by impact alone it came first.
  const std::string base = work_and_wait("diff_wait_base.etr", 1000, 1000);
  const std::string next = work_and_wait("diff_wait_new.etr", 2000, 10000);
  const auto r = run_cli({"diff", base, next});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CAPTURE(r.out);
  const std::size_t work = r.out.find("\nwork "), wait = r.out.find("\nwait_queue (wait)");
  REQUIRE(work != std::string::npos);
  REQUIRE(wait != std::string::npos);
  CHECK(work < wait);
  CHECK(r.out.find("waiting rows (wait) after the work") != std::string::npos);
}

TEST_CASE("diff sorts by impact and reports the change computed from both runs") {
  const std::string base = record_workload("diff_base", 12, 1);
  const std::string slow = record_workload("diff_slow", 12, 3);
  const auto base_rows = reference_rows(reference_spans(load_dump(base)));
  const auto slow_rows = reference_rows(reference_spans(load_dump(slow)));
  const auto r = run_cli({"diff", base, slow, "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  json_lite::value doc;
  std::string error;
  REQUIRE(json_lite::parse(r.out, doc, error));
  REQUIRE(doc["rows"].size() == 5);
  double previous = 1e300;
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const auto& row = doc["rows"][i];
    const std::string name = row["name"].str();
    CAPTURE(name);
    const double delta = row["total_delta_ns"].num();
    CHECK(std::fabs(delta) <= previous);
    previous = std::fabs(delta);
    CHECK(delta == static_cast<double>(slow_rows.at(name).total) - static_cast<double>(base_rows.at(name).total));
    CHECK(row["calls_delta"].num() == 0);
    CHECK(row["p99_new_ns"].num() == static_cast<double>(reference_percentile(slow_rows.at(name).durations, 99)));
    CHECK(row["p50_base_ns"].num() == static_cast<double>(reference_percentile(base_rows.at(name).durations, 50)));
  }
  // The first row is the biggest change, computed from both runs' spans
  // (which name that is depends on timing: "iteration" or "worker_task").
  double biggest = 0;
  for (const auto& row : slow_rows)
    biggest = std::max(biggest, std::fabs(static_cast<double>(row.second.total) -
                                          static_cast<double>(base_rows.at(row.first).total)));
  CHECK(std::fabs(doc["rows"][0]["total_delta_ns"].num()) == biggest);
}

namespace {

/// Rounded mean, as the summary computes it.
std::uint64_t mean_of(const ref_row& r) { return r.calls ? (r.total + r.calls / 2) / r.calls : 0; }

/// Per-name rows pooled over several dumps (one side of a repeated-runs diff).
std::map<std::string, ref_row> pooled_rows(const std::vector<std::string>& dumps) {
  std::vector<ref_span> spans;
  for (const std::string& d : dumps) {
    const auto one = reference_spans(load_dump(d));
    spans.insert(spans.end(), one.begin(), one.end());
  }
  return reference_rows(spans);
}

/// max - min of each name's per-run mean over `dumps` (names in >= 2 runs).
std::map<std::string, std::uint64_t> run_spread(const std::vector<std::string>& dumps) {
  std::map<std::string, std::vector<std::uint64_t>> means;
  for (const std::string& d : dumps)
    for (const auto& row : reference_rows(reference_spans(load_dump(d)))) means[row.first].push_back(mean_of(row.second));
  std::map<std::string, std::uint64_t> out;
  for (const auto& m : means)
    if (m.second.size() >= 2)
      out[m.first] = *std::max_element(m.second.begin(), m.second.end()) - *std::min_element(m.second.begin(), m.second.end());
  return out;
}

}  // namespace

TEST_CASE("diff of repeated runs pools each side and sets every mean change against run-to-run noise") {
  std::vector<std::string> base, slow;
  for (int i = 0; i < 3; ++i) base.push_back(record_workload("diff_runs_base_" + std::to_string(i), 8, 1));
  for (int i = 0; i < 3; ++i) slow.push_back(record_workload("diff_runs_slow_" + std::to_string(i), 8, 3));
  std::vector<std::string> args{"diff"};
  args.insert(args.end(), base.begin(), base.end());
  args.push_back("--vs");
  args.insert(args.end(), slow.begin(), slow.end());
  args.insert(args.end(), {"--format", "json"});
  const auto r = run_cli(args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  json_lite::value doc;
  std::string error;
  REQUIRE(json_lite::parse(r.out, doc, error));
  const auto base_rows = pooled_rows(base), slow_rows = pooled_rows(slow);
  const auto base_spread = run_spread(base), slow_spread = run_spread(slow);
  REQUIRE(doc["rows"].size() == base_rows.size());
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const auto& row = doc["rows"][i];
    const std::string name = row["name"].str();
    CAPTURE(name);
    CHECK(row["runs_base"].num() == 3);
    CHECK(row["runs_new"].num() == 3);
    // Pooled: every span of the three runs of a side.
    CHECK(row["calls_base"].num() == static_cast<double>(base_rows.at(name).calls));
    CHECK(row["total_new_ns"].num() == static_cast<double>(slow_rows.at(name).total));
    CHECK(row["mean_base_ns"].num() == static_cast<double>(mean_of(base_rows.at(name))));
    const std::uint64_t noise = std::max(base_spread.at(name), slow_spread.at(name));
    CHECK(row["noise_ns"].num() == static_cast<double>(noise));
    const std::uint64_t mb = mean_of(base_rows.at(name)), mn = mean_of(slow_rows.at(name));
    CHECK(row["within_noise"].boolean == ((mn > mb ? mn - mb : mb - mn) <= noise));
  }
  // (Which rows end up beyond noise depends on the machine's load during
  // these runs; the synthetic case below checks the verdicts themselves.)
  std::vector<std::string> table_args(args.begin(), args.end() - 2);
  const auto table = run_cli(table_args);
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("(3 runs)") != std::string::npos);
  CHECK(table.out.find(" noise ") != std::string::npos);
  CHECK(table.out.find("noise: the larger run-to-run spread") != std::string::npos);

  // A single dump per side has no noise to compare with.
  const auto single = run_cli({"diff", base[0], slow[0], "--format", "json"});
  REQUIRE(json_lite::parse(single.out, doc, error));
  CHECK(doc["rows"][0]["within_noise"].is_null());
  // No noise column; the footer says why, and how to get one.
  const std::string one_each = run_cli({"diff", base[0], base[1]}).out;
  CHECK(one_each.find("mean change") == std::string::npos);  // the noise columns
  CHECK(one_each.find("one run each: no noise figure") != std::string::npos);
  CHECK(one_each.find("BASE... --vs NEW..., for a noise column") != std::string::npos);
  const auto empty_side = run_cli({"diff", base[0], "--vs"});
  CHECK(empty_side.exit_code == 1);
  CHECK(empty_side.err.find("at least one dump on each side of --vs") != std::string::npos);
  const auto three = run_cli({"diff", base[0], base[1], base[2]});
  CHECK(three.exit_code == 1);
  CHECK(three.err.find("BASE... --vs NEW...") != std::string::npos);
}

TEST_CASE("diff --by arg:KEY groups rows as summary does, and says so") {
  const std::string dump = scratch("diff_args.etr");
  std::remove(dump.c_str());
  const auto traced = run({edgetrace_test::app, "annotations"}, {"EDGETRACE_OUTPUT=" + dump});
  REQUIRE_MESSAGE(traced.exit_code == 0, traced.err);
  for (const char* by : {"arg:batch", "name,arg:dtype"}) {
    CAPTURE(by);
    const auto s = run_cli({"summary", dump, "--by", by, "--format", "json"});
    const auto d = run_cli({"diff", dump, dump, "--by", by, "--format", "json"});
    REQUIRE_MESSAGE(s.exit_code == 0, s.err);
    REQUIRE_MESSAGE(d.exit_code == 0, d.err);
    json_lite::value sdoc, ddoc;
    std::string error;
    REQUIRE(json_lite::parse(s.out, sdoc, error));
    REQUIRE(json_lite::parse(d.out, ddoc, error));
    std::map<std::string, double> summary_calls, diff_calls;
    for (std::size_t i = 0; i < sdoc["rows"].size(); ++i)
      summary_calls[sdoc["rows"][i]["key"].str()] = sdoc["rows"][i]["calls"].num();
    for (std::size_t i = 0; i < ddoc["rows"].size(); ++i)
      diff_calls[ddoc["rows"][i]["name"].str()] = ddoc["rows"][i]["calls_new"].num();
    CHECK(diff_calls == summary_calls);
    CHECK(summary_calls.size() > 1);
    const auto table = run_cli({"diff", dump, dump, "--by", by});
    CHECK(table.out.find(std::string(by) + " ") != std::string::npos);  // the first column's heading
  }
  CHECK(run_cli({"diff", dump, dump, "--sort-by", "name"}).exit_code == 1);
}

namespace {

/// A dump of one thread with spans "steady" and "tuned" whose durations
/// (ns) are given; the clock is nanoseconds.
std::string synthetic_run(const std::string& name, const std::vector<std::uint64_t>& steady,
                          const std::vector<std::uint64_t>& tuned) {
  namespace fmt = edgetrace::format;
  dump_builder d;
  d.process(1);
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "steady").site(2, fmt::site_kind::span, 1, "tuned");
  d.defs(1, defs).thread(1, 1, 10, "main");
  events e(1, 0);
  std::uint64_t t = 1000;
  for (std::size_t i = 0; i < steady.size(); ++i) {
    e.span(1, t, t + steady[i]);
    t += steady[i] + 100;
    e.span(2, t, t + tuned[i]);
    t += tuned[i] + 100;
  }
  d.event_chunk(1, e).end(1);
  return edgetrace_test::saved_dump(d, name);
}

}  // namespace

TEST_CASE("diff of repeated runs: a change bigger than the run-to-run spread is beyond noise, a smaller one within") {
  // Per-run means: steady 1000/1040/1020 ns against 1010/1030/1050 (change
  // +10, spreads 40 and 40: within); tuned 5000/5100/5050 against
  // 3000/3060/3030 (change -2020, spreads 100 and 60: beyond).
  const std::vector<std::string> base = {synthetic_run("noise_b1.etr", {990, 1010}, {5000, 5000}),
                                         synthetic_run("noise_b2.etr", {1040, 1040}, {5100, 5100}),
                                         synthetic_run("noise_b3.etr", {1020, 1020}, {5050, 5050})};
  const std::vector<std::string> next = {synthetic_run("noise_n1.etr", {1010, 1010}, {3000, 3000}),
                                         synthetic_run("noise_n2.etr", {1030, 1030}, {3060, 3060}),
                                         synthetic_run("noise_n3.etr", {1050, 1050}, {3030, 3030})};
  const auto r = run_cli({"diff", base[0], base[1], base[2], "--vs", next[0], next[1], next[2], "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  json_lite::value doc;
  std::string error;
  REQUIRE(json_lite::parse(r.out, doc, error));
  REQUIRE(doc["rows"].size() == 2);
  CHECK(doc["rows"][0]["name"].str() == "tuned");  // the bigger change in total time comes first
  CHECK(doc["rows"][0]["mean_delta_ns"].num() == -2020);
  CHECK(doc["rows"][0]["noise_ns"].num() == 100);
  CHECK(doc["rows"][0]["within_noise"].boolean == false);
  CHECK(doc["rows"][1]["name"].str() == "steady");
  CHECK(doc["rows"][1]["mean_delta_ns"].num() == 10);
  CHECK(doc["rows"][1]["noise_ns"].num() == 40);
  CHECK(doc["rows"][1]["within_noise"].boolean == true);
  const auto table = run_cli({"diff", base[0], base[1], base[2], "--vs", next[0], next[1], next[2]});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("beyond noise") < table.out.find("within noise"));
  CHECK(table.out.find("within noise") != std::string::npos);
  const auto csv = run_cli({"diff", base[0], base[1], base[2], "--vs", next[0], next[1], next[2], "--format", "csv"});
  CHECK(csv.out.find(",3,3,100,0,") != std::string::npos);
  CHECK(csv.out.find(",3,3,40,1,") != std::string::npos);
}

namespace {

/// A dump of one thread running `iterations` iterations: span "iter"
/// around layers "conv", "relu" and "fc" (base durations 3000, 1000 and
/// 2000 ns), each with a jitter of up to +-10 % from a generator seeded
/// with `seed`; "relu" lasts `relu_factor` times as long. A gap of 500 ns
/// between iterations, which are about 6000 ns long.
std::string iteration_run(const std::string& name, std::uint32_t seed, std::uint64_t relu_factor,
                          int iterations = 200) {
  namespace fmt = edgetrace::format;
  dump_builder d;
  d.process(1);
  definitions defs;
  defs.category(1, "c")
      .site(1, fmt::site_kind::span, 1, "iter")
      .site(2, fmt::site_kind::span, 1, "conv")
      .site(3, fmt::site_kind::span, 1, "relu")
      .site(4, fmt::site_kind::span, 1, "fc");
  d.defs(1, defs).thread(1, 1, 10, "main");
  events e(1, 0);
  std::uint32_t state = seed * 2654435761u + 1;
  auto jitter = [&](std::uint64_t ns) {
    state = state * 1664525u + 1013904223u;
    const std::uint64_t range = ns / 5;  // +-10 %
    return ns - ns / 10 + (state >> 8) % (range + 1);
  };
  std::uint64_t t = 1000;
  for (int i = 0; i < iterations; ++i) {
    const std::uint64_t begin = t;
    for (const auto& layer : {std::pair<std::uint64_t, std::uint64_t>{2, 3000}, {3, 1000 * relu_factor}, {4, 2000}}) {
      const std::uint64_t ns = jitter(layer.second);
      e.span(layer.first, t, t + ns);
      t += ns;
    }
    e.span(1, begin, t);
    t += 500;
  }
  d.event_chunk(1, e).end(1);
  return edgetrace_test::saved_dump(d, name);
}

}  // namespace

TEST_CASE("diff --per NAME compares the iteration's latency against noise and gives each row its % iter") {
  const std::vector<std::string> base = {iteration_run("per_b1.etr", 1, 1), iteration_run("per_b2.etr", 2, 1),
                                         iteration_run("per_b3.etr", 3, 1)};
  const std::vector<std::string> same = {iteration_run("per_s1.etr", 4, 1), iteration_run("per_s2.etr", 5, 1),
                                         iteration_run("per_s3.etr", 6, 1)};
  const std::vector<std::string> slow = {iteration_run("per_n1.etr", 7, 10), iteration_run("per_n2.etr", 8, 10),
                                         iteration_run("per_n3.etr", 9, 10)};
  auto diff = [&](const std::vector<std::string>& next, const std::string& format) {
    std::vector<std::string> args = {"diff", base[0], base[1], base[2], "--vs", next[0], next[1], next[2],
                                     "--per", "iter", "--format", format};
    const auto r = run_cli(args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
  };
  json_lite::value doc;
  std::string error;
  SUBCASE("one layer 10x slower: the iteration's p50 change is beyond noise") {
    REQUIRE(json_lite::parse(diff(slow, "json"), doc, error));
    const auto& it = doc["iteration"];
    CHECK(it["name"].str() == "iter");
    CHECK(it["calls_base"].num() == 600);
    CHECK(it["calls_new"].num() == 600);
    // About 6000 ns against 15000: the relu layer's 9000 ns more.
    CHECK(it["p50_base_ns"].num() == doctest::Approx(6000).epsilon(0.05));
    CHECK(it["p50_new_ns"].num() == doctest::Approx(15000).epsilon(0.05));
    CHECK(it["p99_new_ns"].num() >= it["p50_new_ns"].num());
    CHECK(it["max_new_ns"].num() >= it["p99_new_ns"].num());
    CHECK(it["noise_ns"].num() > 0);
    CHECK(it["noise_ns"].num() < 1000);
    CHECK(it["within_noise"].boolean == false);
    bool saw_relu = false;
    for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
      const auto& row = doc["rows"][i];
      if (row["name"].str() != "relu") continue;
      saw_relu = true;
      CHECK(row["iter_share_base"].num() == doctest::Approx(1000.0 / 6000).epsilon(0.05));
      CHECK(row["iter_share_new"].num() == doctest::Approx(10000.0 / 15000).epsilon(0.05));
    }
    CHECK(saw_relu);
    const std::string table = diff(slow, "table");
    CHECK(table.find("per iteration (--per iter)") != std::string::npos);
    CHECK(table.find("% iter") != std::string::npos);
    CHECK(table.find(" pt ") != std::string::npos);
    const std::size_t iteration_line = table.find("\niter ");
    REQUIRE(iteration_line != std::string::npos);
    CHECK(table.substr(iteration_line, table.find('\n', iteration_line + 1) - iteration_line).find("beyond noise") !=
          std::string::npos);
    const std::string csv = diff(slow, "csv");
    CHECK(csv.find(",iter_share_base,iter_share_new,kind\n") != std::string::npos);
    CHECK(csv.find("\niter,1,1,600,600,0,") == csv.find('\n'));  // the iteration comes first
    CHECK(csv.find(",iteration\n") != std::string::npos);
  }
  SUBCASE("3 + 3 runs of the same program: within noise") {
    REQUIRE(json_lite::parse(diff(same, "json"), doc, error));
    const auto& it = doc["iteration"];
    CHECK(it["calls_new"].num() == 600);
    CHECK(it["noise_ns"].num() > 0);
    CHECK(it["within_noise"].boolean == true);
    CHECK(std::fabs(it["p50_delta_ns"].num()) <= it["noise_ns"].num());
  }
  SUBCASE("without --per there is no iteration, and a name that never runs is an error") {
    const auto r = run_cli({"diff", base[0], slow[0], "--format", "json"});
    REQUIRE(json_lite::parse(r.out, doc, error));
    CHECK(r.out.find("\"iteration\"") == std::string::npos);
    CHECK(r.out.find("iter_share_new\":null") != std::string::npos);
    const auto bad = run_cli({"diff", base[0], slow[0], "--per", "itr"});
    CHECK(bad.exit_code != 0);
    CHECK(bad.err.find("no span or mark named \"itr\"") != std::string::npos);
  }
}

}  // namespace diff_test
