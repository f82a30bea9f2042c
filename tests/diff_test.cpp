// SPDX-License-Identifier: MIT
// `edgetrace diff`: a run against itself is all zeros; a slower run shows up first, with the right deltas.
#include <edgetrace/reader/diff.hpp>

#include <doctest/doctest.h>

#include <algorithm>

#include "support/analysis_workload.hpp"
#include "support/json_lite.hpp"

using namespace edgetrace_test;

TEST_CASE("diff of a run against itself is all zeros") {
  const std::string dump_path = record_workload("diff_self", 12);
  const auto r = cli({"diff", dump_path, dump_path, "--format", "json"});
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
  const auto table = cli({"diff", dump_path, dump_path});
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("sorted by impact") != std::string::npos);
}

TEST_CASE("diff sorts by impact and reports the change computed from both runs") {
  const std::string base = record_workload("diff_base", 12, 1);
  const std::string slow = record_workload("diff_slow", 12, 3);
  const auto base_rows = reference_rows(reference_spans(load_dump(base)));
  const auto slow_rows = reference_rows(reference_spans(load_dump(slow)));
  const auto r = cli({"diff", base, slow, "--format", "json"});
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
