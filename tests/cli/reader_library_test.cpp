// SPDX-License-Identifier: MIT
// What a tool linked to edgetrace::reader gets: <edgetrace/reader.hpp>
// declares the reader and every output, and the library defines each. One
// call per entry point on a small recorded dump, each checked for what it
// wrote (a declaration the library does not define fails this program's
// link). Built with EDGETRACE_SEPARATE_READER=1 where the library is built;
// without it the same calls run the header-only reader.
#include <edgetrace/reader.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <support/analysis_workload.hpp>
#include <support/files.hpp>

namespace reader_library_test {

using namespace edgetrace_test;
namespace et = edgetrace::reader;

#if EDGETRACE_SEPARATE_READER
static_assert(EDGETRACE_DETAIL_READER_BODIES == 0, "a TU on edgetrace::reader sees declarations only");
#endif

namespace {

/// Runs `write(file)` on a fresh scratch file; returns what it wrote.
template <class Write>
std::string written(const std::string& name, Write&& write) {
  const std::string path = scratch(name);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  const bool ok = write(f);
  std::fclose(f);
  CHECK(ok);
  return read_file(path);
}

struct opened {
  et::dump_reader r;
  explicit opened(const std::string& path) {
    const bool ok = r.open(path) && r.read_metadata();
    REQUIRE_MESSAGE(ok, r.error());
  }
};

}  // namespace

TEST_CASE("reader library: name_pattern compiles once, matches, and refuses a bad pattern in one line") {
  et::name_pattern empty;
  CHECK_FALSE(empty);
  CHECK(empty.matches("anything"));
  et::name_pattern stage;
  REQUIRE(stage.compile("^stage_"));
  CHECK(stage);
  CHECK(stage.text() == "^stage_");
  CHECK(stage.matches("stage_a"));
  CHECK_FALSE(stage.matches("a stage_a"));
  const et::name_pattern copy = stage;  // shares the compiled expression
  CHECK(copy.matches("stage_b"));
  et::name_pattern wait;
  REQUIRE(wait.compile("^wait", true));
  CHECK(wait.ignores_case());
  CHECK(wait.matches("WaitQueue"));
  std::string error;
  CHECK_FALSE(stage.compile("(unclosed", false, &error));
  CHECK(error.rfind("bad regex '(unclosed': ", 0) == 0);
  CHECK(error.find('\n') == std::string::npos);
  CHECK(stage.text() == "^stage_");  // left as it was
  CHECK(et::summary_options().wait.text() == "^wait");
}

TEST_CASE("reader library: every output of reader.hpp, called through the library") {
  const std::string path = record_workload("reader_library", 12);
  opened a(path);

  // Conversions.
  et::chrome_json_result json_result;
  const std::string json = written("reader_library.json", [&](std::FILE* f) {
    return et::write_chrome_json(a.r, f, et::chrome_json_options{}, &json_result);
  });
  CHECK(json_result.spans > 0);
  CHECK(contains(json, "\"stage_a\""));
  et::perfetto_result perfetto_result;
  written("reader_library.pftrace", [&](std::FILE* f) { return et::write_perfetto(a.r, f, &perfetto_result); });
  CHECK(perfetto_result.slices == json_result.spans);
  CHECK(contains(written("reader_library.info", [&](std::FILE* f) { return et::write_info(a.r, f); }), "worker"));
  std::uint64_t rows = 0;
  const std::string csv = written("reader_library.csv", [&](std::FILE* f) { return et::write_spans_csv(a.r, f, &rows); });
  CHECK(rows == json_result.spans);
  CHECK(csv.rfind(et::spans_csv_header, 0) == 0);
  std::uint64_t marks = 0;
  written("reader_library_marks.csv", [&](std::FILE* f) {
    return et::write_csv_table(a.r, et::csv_table::marks, f, et::csv_options{}, &marks);
  });
  CHECK(marks == 13);  // one "frame" per iteration and the one that closes the last
  std::vector<et::chrome_json_part> json_parts;
  CHECK(et::write_chrome_json_split({et::chrome_json_input{&a.r, 0, {}}}, scratch("reader_library_split.json"), 100000000,
                                    et::chrome_json_options{}, json_parts));
  CHECK(json_parts.size() == 1);
  CHECK(et::chrome_json_part_path("run.json", 1) == "run-001.json");
  std::vector<et::perfetto_part> perfetto_parts;
  CHECK(et::write_perfetto_split(a.r, scratch("reader_library_split.pftrace"), 100000000, et::perfetto_options{},
                                 perfetto_parts));
  CHECK(perfetto_parts.size() == 1);

  // The summary and what is made of it.
  et::summary_options options;
  std::uint64_t min_ns = 0;
  REQUIRE(et::parse_duration("1.5ms", min_ns));
  CHECK(min_ns == 1500000);
  REQUIRE(et::parse_sort_column("+calls", options.sort_by, options.ascending));
  CHECK(options.ascending);
  CHECK(et::split_list(" a, b ,,c") == std::vector<std::string>{"a", "b", "c"});
  CHECK(contains(et::summary_column_names(), "p99.9"));
  CHECK(et::summary_columns().front().id == et::summary_column::key);
  CHECK(et::detail::summary_column_key("% iter") == "%iter");
  CHECK_FALSE(et::detail::summary_column_keys().empty());
  REQUIRE(options.filter.compile("^(stage_a|stage_b|leaf)$"));
  et::summary_builder builder(options);
  std::string error;
  REQUIRE_MESSAGE(builder.add(a.r, error), error);
  const et::summary_result summary = builder.finish();
  REQUIRE(summary.rows.size() == 3);
  CHECK(summary.rows.front().host.count() == 12);
  CHECK(et::detail::group_label(summary) == "name");
  CHECK(contains(et::summary_table(summary, path), "stage_b"));
  CHECK(et::summary_csv(summary).rfind("name,", 0) == 0);
  CHECK(contains(et::summary_json(summary, path), "\"leaf\""));
  const std::vector<et::diff_row> diff = et::diff_summaries(summary, summary);
  CHECK(diff.size() == 3);
  CHECK(contains(et::diff_table(diff, "a", "b"), "leaf"));
  CHECK(contains(et::diff_csv(diff), "stage_a"));
  CHECK(contains(et::diff_json(diff, "a", "b"), "\"rows\""));
  et::report_options report;
  CHECK(contains(et::report_html(summary, report), "stage_a"));
  std::string device_html;
  CHECK(et::report_device_html(a.r, "", 0, device_html, error));

  // Iterations: the slowest explained, the focus, the live table.
  et::slow_iterations_result slow;
  REQUIRE_MESSAGE(et::explain_slow_iterations(a.r, "iteration", 2, slow, error), error);
  CHECK(slow.iterations == 12);
  CHECK(slow.slowest.size() == 2);
  CHECK(contains(et::slow_iterations_text(slow), "slowest iterations of \"iteration\""));
  CHECK(contains(et::slow_iterations_json(slow), "\"median_ns\""));
  et::event_selection focus;
  et::focus_result focused;
  REQUIRE_MESSAGE(et::focus_slowest(a.r, "iteration", 2, focus, focused, error), error);
  CHECK(focused.iterations == 12);
  CHECK(focus.focused());
  et::top_window top;
  REQUIRE(a.r.read_events([&](const et::event& e) {
    if (e.kind == et::event_kind::span) top.add(e.site, e.site->name, e.end_ns, static_cast<std::uint64_t>(e.end_ns - e.begin_ns));
  }));
  const et::top_result table = top.table();
  CHECK(table.spans == json_result.spans);
  CHECK(contains(et::top_table(table, top.options()), "worker_task"));
  // Both are made of the device's samples (EDGETRACE_SAMPLE_MS), where the run took any.
  const std::string device = et::device_line(*a.r.writers_in_order().front());
  CHECK(device.empty() == device_html.empty());
  if (!device.empty()) CHECK(device.rfind("device: ", 0) == 0);

  // Two dumps merged into one.
  const std::string other = record_workload("reader_library_other", 5);
  opened b(other);
  et::merge_plan plan;
  REQUIRE_MESSAGE(et::plan_merge({&a.r, &b.r}, {path, other}, et::merge_clock::automatic, plan, error), error);
  written("reader_library_merged.etr", [&](std::FILE* f) { return et::write_merged_dump({&a.r, &b.r}, plan, f, error); });
  opened merged(scratch("reader_library_merged.etr"));
  CHECK(merged.r.writers().size() == 2);
}

}  // namespace reader_library_test
