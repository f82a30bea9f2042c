// SPDX-License-Identifier: MIT
// `edgetrace report`: one self-contained HTML file; its embedded data matches the summary; no network references.
#include <edgetrace/sinks/report.hpp>

#include <doctest/doctest.h>

#include <regex>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/json_lite.hpp>

namespace report_test {

using namespace edgetrace_test;

TEST_CASE("report embeds the summary data, histograms and thread bars, and references nothing external") {
  const std::string dump_path = record_workload("report_run", 20);
  const std::string out = scratch("report_run.html");
  const auto r = run_cli({"report", dump_path, "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string html = read_file(out);
  REQUIRE(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);

  // No network: no http(s) URL anywhere, no external resource attributes.
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK_FALSE(std::regex_search(html, std::regex("(src|href)\\s*=", std::regex::icase)));
  CHECK(html.find("@import") == std::string::npos);

  // The embedded data: the same numbers as `summary --format json`.
  const std::string open_tag = "<script type=\"application/json\" id=\"edgetrace-data\">";
  const std::size_t at = html.find(open_tag);
  REQUIRE(at != std::string::npos);
  const std::size_t from = at + open_tag.size();
  const std::string data = html.substr(from, html.find("</script>", from) - from);
  json_lite::value doc, summary;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(data, doc, error), error);
  const auto s = run_cli({"summary", dump_path, "--format", "json", "--top", "30"});
  REQUIRE(json_lite::parse(s.out, summary, error));
  REQUIRE(doc["rows"].size() == summary["rows"].size());
  const auto rows = reference_rows(reference_spans(load_dump(dump_path)));
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const auto& row = doc["rows"][i];
    CHECK(row["key"].str() == summary["rows"][i]["key"].str());
    CHECK(row["host"]["total_ns"].num() == static_cast<double>(rows.at(row["key"].str()).total));
  }
  // A histogram per top row whose counts add up to the calls.
  REQUIRE(doc["histograms"].size() >= 5);
  for (std::size_t i = 0; i < doc["histograms"].size(); ++i) {
    const auto& h = doc["histograms"][i];
    double sum = 0;
    for (std::size_t k = 0; k < h["counts"].size(); ++k) sum += h["counts"][k].num();
    CHECK(sum == static_cast<double>(rows.at(h["key"].str()).calls));
    CHECK(h["edges_ns"].size() == h["counts"].size() + 1);
  }
  CHECK(doc["threads"].size() == 2);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("Thread utilisation") != std::string::npos);
  CHECK(html.find("iterations") != std::string::npos);
}

TEST_CASE("report in network order lists every layer; a cut table says how to see the rest") {
  // 33 layers, each once per iteration, in order: a model deeper than the
  // default --top 30.
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "infer");
  for (std::uint64_t layer = 1; layer <= 33; ++layer)
    defs.site(layer, edgetrace::format::site_kind::span, 1, "layer_" + std::to_string(layer));
  d.defs(1, defs);
  d.thread(1, 1, 101, "infer");
  events e(1, 1000);
  for (std::uint64_t iteration = 0; iteration < 5; ++iteration)
    for (std::uint64_t layer = 1; layer <= 33; ++layer) {
      const std::uint64_t begin = 1000 + (iteration * 33 + layer) * 1000;
      e.span(layer, begin, begin + 100 * layer);
    }
  d.event_chunk(1, e);
  d.end(1);
  const std::string dump_path = saved_dump(d, "report_33_layers");
  const std::string out = scratch("report_33_layers.html");

  const auto ordered = run_cli({"report", dump_path, "-o", out, "--sort-by", "order"});
  REQUIRE_MESSAGE(ordered.exit_code == 0, ordered.err);
  std::string html = read_file(out);
  for (const char* layer : {"layer_1<", "layer_30<", "layer_31<", "layer_33<"}) {
    CAPTURE(layer);
    CHECK(html.find(layer) != std::string::npos);
  }
  CHECK(html.find("rows shown") == std::string::npos);
  CHECK(html.find("layer_31<") > html.find("layer_30<"));  // in the order they ran

  const auto by_total = run_cli({"report", dump_path, "-o", out});
  REQUIRE_MESSAGE(by_total.exit_code == 0, by_total.err);
  html = read_file(out);
  CHECK(html.find("30 of 33 rows shown (--top 33 shows them all)") != std::string::npos);
}

// Renders the report in headless Chromium and checks a screenshot comes
// out; skips cleanly without a browser (ctest label: browser).
TEST_CASE("report renders in headless chromium" * doctest::skip(!file_exists("/usr/bin/chromium"))) {
  const std::string dump_path = record_workload("report_browser_" + std::to_string(::getpid()), 10);
  const std::string html = scratch("report_browser_" + std::to_string(::getpid()) + ".html");
  REQUIRE(run_cli({"report", dump_path, "-o", html}).exit_code == 0);
  // Unique per process: ctest may run report_test and report_browser at once.
  const std::string id = std::to_string(::getpid());
  const std::string png = scratch("report_browser_" + id + ".png");
  const std::string profile = scratch("report_browser_profile_" + id);
  std::remove(png.c_str());
  const auto r = run({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                      "--disable-background-networking", "--disable-component-update", "--disable-sync",
                      "--no-first-run", "--user-data-dir=" + profile, "--screenshot=" + png, "--window-size=1400,1800",
                      "file://" + html});
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  const std::string image = read_file(png);
  REQUIRE(image.size() > 10000);
  CHECK(image.compare(1, 3, "PNG") == 0);
}

}  // namespace report_test
