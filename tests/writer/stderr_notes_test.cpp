// SPDX-License-Identifier: MIT
// "Never get data silently wrong": lines a user must see on
// stderr. The converters say how many records the tracer dropped (the
// counts in their output are lower bounds then), and an EDGETRACE_CATEGORIES
// item that names no category lists the compiled-in ones with the nearest.
#include <doctest/doctest.h>

#include <support/dump_builder.hpp>
#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/dump_reader.hpp>

#include <string>
#include <unistd.h>
#include <vector>

namespace stderr_notes_test {

using edgetrace_test::app;
using edgetrace_test::cli;
using edgetrace_test::fresh;
using edgetrace_test::line_count;
using edgetrace_test::run;
using edgetrace_test::tmp;

namespace {

using edgetrace_test::contains;

/// The commands that convert a whole dump, writing to `out`.
std::vector<std::vector<std::string>> converting_commands(const std::string& dump, const std::string& out) {
  return {{cli, "json", dump, "-o", out},
          {cli, "summary", dump, "-o", out},
          {cli, "csv", dump, "-o", out},
          {cli, "report", dump, "-o", out}};
}

}  // namespace

TEST_CASE("notes: the advice about dropped records follows the policy the run used, never the one in force") {
  // Format 1.8 states the policy (EDGETRACE_ON_FULL) in the process chunk.
  const std::string out = fresh("notes-policy.out");
  for (int policy : {int{edgetrace::format::overload_wait}, int{edgetrace::format::overload_drop}}) {
    CAPTURE(policy);
    const std::string dump = fresh("notes-policy.etr");
    REQUIRE(edgetrace_test::write_file(dump, edgetrace_test::sample_dump(0xA1B2C3D4u, 1234, policy).build()));
    for (const auto& argv : converting_commands(dump, out)) {
      CAPTURE(argv[1]);
      const auto r = run(argv);
      CHECK(r.exit_code == 0);
      if (policy == edgetrace::format::overload_drop) {
        CHECK(contains(r.err, "; the run used EDGETRACE_ON_FULL=drop: EDGETRACE_ON_FULL=wait (the default) or a "
                              "larger EDGETRACE_BUFFER_KB keeps them\n"));
      } else {
        CHECK(contains(r.err, "; the run used EDGETRACE_ON_FULL=wait, which drops only what waiting cannot keep"));
        CHECK_FALSE(contains(r.err, "EDGETRACE_ON_FULL=wait (the default)"));
      }
      ::unlink(out.c_str());
    }
    // summary's own note says the same.
    const auto s = run({cli, "summary", dump});
    CHECK(contains(s.out, policy == edgetrace::format::overload_drop ? "the run used EDGETRACE_ON_FULL=drop"
                                                                      : "the run used EDGETRACE_ON_FULL=wait"));
    ::unlink(dump.c_str());
  }
}

TEST_CASE("notes: json, summary, csv and report say on stderr how many records were dropped, and where") {
  // The sample dump: thread "worker" (tid 1235) lost 5 records (a loss
  // record and its thread_stats both say 5).
  const std::string dump = fresh("notes-sample.etr");
  REQUIRE(edgetrace_test::write_file(dump, edgetrace_test::sample_dump().build()));
  const std::string out = fresh("notes-sample.out");
  for (const auto& argv : converting_commands(dump, out)) {
    CAPTURE(argv[1]);
    const auto r = run(argv);
    CHECK(r.exit_code == 0);
    CHECK(r.err == "edgetrace: note: " + dump +
": 5 records were dropped by the tracer (ring buffer full) on worker (tid 1235) 5; under EDGETRACE_ON_FULL=drop, "
                       "EDGETRACE_ON_FULL=wait (the default) or a larger EDGETRACE_BUFFER_KB keeps them; under wait the run's "
                       "stderr line names the cause\n");
    CHECK(!edgetrace_test::read_file(out).empty());
    ::unlink(out.c_str());
  }
  ::unlink(dump.c_str());
}

TEST_CASE("notes: a real run that overflowed its rings: the count on stderr is the dump's own") {
  std::string dump;
  const std::uint64_t dropped = edgetrace_test::lossy_stress_run("notes-loss.etr", dump);
  const std::string out = fresh("notes-loss.out");
  for (const auto& argv : converting_commands(dump, out)) {
    CAPTURE(argv[1]);
    const auto r = run(argv);
    CHECK(r.exit_code == 0);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "edgetrace: note: " + dump + ": " + std::to_string(dropped) +
                              " records were dropped by the tracer (ring buffer full) on stress-"));
    CHECK(contains(r.err, "EDGETRACE_BUFFER_KB"));
    ::unlink(out.c_str());
  }
  ::unlink(dump.c_str());
}

TEST_CASE("notes: a run that dropped nothing gets no note") {
  const std::string dump = fresh("notes-clean.etr");
  const auto traced = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + dump});
  REQUIRE(traced.exit_code == 42);
  REQUIRE(edgetrace_test::load_dump(dump).named("app_span").size() == 10);
  const std::string out = fresh("notes-clean.out");
  for (const auto& argv : converting_commands(dump, out)) {
    CAPTURE(argv[1]);
    const auto r = run(argv);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    ::unlink(out.c_str());
  }
  ::unlink(dump.c_str());
}

// trace_app declares one category, "app".
TEST_CASE("notes: an EDGETRACE_CATEGORIES item naming no category lists the compiled-in ones and the nearest") {
  const std::string dump = fresh("notes-categories.etr");
  struct typo {
    const char* filter;
    const char* item;        ///< as the line quotes it
    const char* suggestion;  ///< nullptr: too far from every category
  };
  const typo typos[] = {{"app,aap", "aap", "app"},  {"*,-ap", "ap", "app"},      {"Ap", "Ap", "app"},
                        {"app,apps", "apps", "app"}, {"zzzzzz", "zzzzzz", nullptr}, {"app, x ", "x", nullptr}};
  for (const typo& t : typos) {
    const std::string filter = t.filter;
    CAPTURE(filter);
    const auto r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_CATEGORIES=" + filter});
    CHECK(r.exit_code == 42);  // the app is untouched
    CHECK(line_count(r.err) == 1);
    const std::string head = std::string("edgetrace: EDGETRACE_CATEGORIES names '") + t.item +
                             "', but no category of that name was compiled in";
    if (t.suggestion != nullptr)
      CHECK(r.err == head + "; did you mean '" + t.suggestion + "'? (compiled in: app)\n");
    else
      CHECK(r.err == head + " (compiled in: app)\n");
    CHECK(edgetrace_test::load_dump(dump).opened);
  }
  // An item of 10,000 bytes: quoted in part, still one line, still the list.
  const auto r = run({app, "exit-code"},
                     {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_CATEGORIES=" + std::string(10000, 'c')});
  CHECK(r.exit_code == 42);
  CHECK(line_count(r.err) == 1);
  CHECK(contains(r.err, "'" + std::string(64, 'c') + "'"));
  CHECK(contains(r.err, "(compiled in: app)"));
  // A filter that matches gets no line.
  const auto quiet = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_CATEGORIES=app"});
  CHECK(quiet.exit_code == 42);
  CHECK(quiet.err.empty());
  CHECK(edgetrace_test::load_dump(dump).named("app_span").size() == 10);
  ::unlink(dump.c_str());
}

}  // namespace stderr_notes_test
