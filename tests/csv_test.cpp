// SPDX-License-Identifier: MIT
// `edgetrace csv`: one row per span of a real traced run, parsed back and compared with the spans.
#include <edgetrace/reader/csv.hpp>

#include <doctest/doctest.h>

#include <set>
#include <tuple>

#include "support/analysis_workload.hpp"

using namespace edgetrace_test;

namespace {

/// Minimal RFC 4180 reader (quoted fields, doubled quotes).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

}  // namespace

TEST_CASE("csv has one row per span with start, duration, self time and depth") {
  const std::string dump_path = record_workload("csv_run");
  const std::string out = scratch("csv_run.csv");
  const auto r = cli({"csv", dump_path, "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto rows = parse_csv(read_file(out));
  REQUIRE(!rows.empty());
  const std::vector<std::string> header = {"name",  "category", "thread", "pid",   "tid",          "start_ns",
                                           "dur_ns", "self_ns", "depth",  "gpu_start_ns", "gpu_dur_ns"};
  CHECK(rows[0] == header);

  using key = std::tuple<std::string, std::uint64_t, std::int64_t, std::uint64_t, std::uint64_t, std::uint32_t>;
  std::multiset<key> want, got;
  for (const ref_span& s : reference_spans(load_dump(dump_path)))
    want.insert(key{s.name, s.tid, s.begin, s.dur(), s.self, s.depth});
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == header.size());
    CHECK(rows[i][9].empty());  // no GPU spans in format 1.1
    got.insert(key{rows[i][0], std::stoull(rows[i][4]), std::stoll(rows[i][5]), std::stoull(rows[i][6]),
                   std::stoull(rows[i][7]), static_cast<std::uint32_t>(std::stoul(rows[i][8]))});
  }
  CHECK(got.size() == want.size());
  CHECK(got == want);
  // Depths of the workload's tree.
  bool leaf_at_2 = false;
  for (const auto& k : got) leaf_at_2 = leaf_at_2 || (std::get<0>(k) == "leaf" && std::get<5>(k) == 2);
  CHECK(leaf_at_2);

  // stdout, and fields that need quoting.
  CHECK(edgetrace::reader::detail::csv_field("a,b \"c\"") == "\"a,b \"\"c\"\"\"");
  const auto to_stdout = cli({"csv", dump_path, "-o", "-"});
  CHECK(to_stdout.exit_code == 0);
  CHECK(line_count(to_stdout.out) == static_cast<int>(rows.size()));
}
