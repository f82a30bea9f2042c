// SPDX-License-Identifier: MIT
// Process life: signal dispositions the app inherited, quick_exit,
// names interned before fork(), the exit-time line about dropped records.
// Each test proves one promise of docs/TRUST.md ("Process life")
// through tests/support/trace_app.cpp and the real reader.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/sanitizers.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/dump_reader.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace process_life_test {

using edgetrace_test::app;
using edgetrace_test::fresh;
using edgetrace_test::line_count;
using edgetrace_test::load_dump;
using edgetrace_test::run;
using edgetrace_test::tmp;

namespace {

using edgetrace_test::contains;

/// Sum of the dump's per-thread stats (records dropped because a ring was full).
std::uint64_t dropped_in_dump(const std::string& path) {
  edgetrace::reader::dump_reader reader;
  if (!reader.open(path)) return ~std::uint64_t{0};
  reader.read_events([](const edgetrace::reader::event&) {});
  std::uint64_t dropped = 0;
  for (const auto* info : reader.threads_in_order()) dropped += info->stats_dropped;
  return dropped;
}
}  // namespace

// ------------------------------------------------------------ signals

TEST_CASE("process life: inherited SIG_IGN for SIGINT/SIGTERM/toggle signal stays SIG_IGN, here and after exec") {
  const std::string dump_path = fresh("sig-ign.etr");
  // The shell sets SIG_IGN (as nohup or a background job does) and execs the app.
  const auto r = run({"/bin/sh", "-c", "trap '' INT TERM USR2; exec \"$0\" sig-ign", app},
                     {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_SIGNAL_FLUSH=1", "EDGETRACE_TOGGLE_SIGNAL=SIGUSR2"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);  // SIGINT and SIGTERM raised: still ignored
  CHECK(r.out == "SIGINT=SIG_IGN SIGTERM=SIG_IGN SIGUSR2=SIG_IGN\nchild=0\n");  // exec'd child: ignored too
  // The toggle signal cannot arrive: one line, and recording is on from the start.
  CHECK(line_count(r.err) == 1);
  CHECK(contains(r.err, "EDGETRACE_TOGGLE_SIGNAL: SIGUSR2 is ignored in this process"));
  const auto dump = load_dump(dump_path);
  CHECK(dump.complete);
  CHECK(dump.named("app_span").size() == 200);
  ::unlink(dump_path.c_str());
}

// ------------------------------------------------------------ quick_exit

TEST_CASE("process life: std::quick_exit(9) from a worker while main traces: exit code 9, complete dump") {
  const std::string dump_path = fresh("quick-exit.etr");
  const auto r = run({app, "quick-exit"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CAPTURE(r.err);
  CHECK(r.exit_code == 9);
  CHECK(r.err.empty());
  // Complete: the end chunk is there (quick_exit is not a crash).
  const auto dump = edgetrace_test::whole_dump(dump_path);
  CHECK(dump.named("app_span").size() == 1000);
  CHECK(dump.named("quick_exit_span").size() == 500);
  ::unlink(dump_path.c_str());
}

TEST_CASE("process life: std::quick_exit with a runtime lock held on the calling thread exits at once, code kept") {
  // What a signal handler calling quick_exit() finds when it interrupted
  // this thread inside intern() or pause(): waiting for the lock would hang.
  const std::string dump_path = fresh("quick-exit-locked.etr");
  const auto start = std::chrono::steady_clock::now();
  const auto r = run({app, "quick-exit-locked"}, {"EDGETRACE_OUTPUT=" + dump_path});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CAPTURE(r.err);
  CHECK(r.exit_code == 9);
  CHECK(seconds < 2.0);  // ~0.1 s of tries, then the dump is left as after a crash
  CHECK(load_dump(dump_path).opened);
  ::unlink(dump_path.c_str());
}

// ------------------------------------------------------------ fork

// Skipped in sanitizer builds, as every follow-mode test: the child allocates
// after fork() (tests/support/sanitizers.hpp, docs/RELIABILITY.md section 4).
TEST_CASE("process life: EDGETRACE_FORK=follow: a name interned before fork() names the child's spans" *
          doctest::skip(edgetrace_test::sanitized_build)) {
  edgetrace_test::check_followed_fork("fork-names", "fork-names", {{"parent_name", 5}, {"child_name", 0}},
                                      {{"parent_name", 30}, {"child_name", 20}, {"(unnamed)", 0}});
}

// ------------------------------------------------------------ drops

TEST_CASE("process life: a run that dropped records says so in one stderr line at exit, with the dump's count") {
  const std::string dump_path = fresh("dense.etr");
  const auto r = run({app, "dense", "300000"},
                     {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_BUFFER_KB=4", "EDGETRACE_ON_FULL=drop"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  REQUIRE(line_count(r.err) == 1);
  unsigned long long dropped = 0, total = 0;
  REQUIRE(std::sscanf(r.err.c_str(), "edgetrace: %llu of %llu records", &dropped, &total) == 2);
  CHECK(dropped > 0);
  CHECK(total == 300000);  // one record per span: written + dropped
  CHECK(contains(r.err, "set EDGETRACE_ON_FULL=wait, or a larger EDGETRACE_BUFFER_KB (now 4), to keep them"));
  CHECK(dropped == dropped_in_dump(dump_path));
  ::unlink(dump_path.c_str());
}

TEST_CASE("process life: a run without drops prints nothing at exit") {
  const std::string dump_path = fresh("dense-small.etr");
  const auto r = run({app, "dense", "1000"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(dropped_in_dump(dump_path) == 0);
  ::unlink(dump_path.c_str());
}

// ------------------------------------------------------------ static initialisation

TEST_CASE("process life: spans recorded during static initialisation, before their category registered, are kept") {
  const std::string static_init_app = app.substr(0, app.rfind('/') + 1) + "static_init_app";
  const std::string dump_path = fresh("static-init.etr");
  const auto r = run({static_init_app}, {"EDGETRACE_OUTPUT=" + dump_path});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  CHECK(dump.named("priority_constructor_span").size() == 5);  // before any edgetrace initialiser
  CHECK(dump.named("early_own_span").size() == 10);
  CHECK(dump.named("other_tu_span").size() == 20);  // the other TU's category was not registered yet
  CHECK(dump.named("static_init_instant").size() == 1);
  CHECK(dump.named("main_span").size() == 1);
  for (const auto& e : dump.named("other_tu_span")) CHECK(e.category == "later");
  ::unlink(dump_path.c_str());

  const auto untraced = run({static_init_app});  // tracing off: nothing changes for the app
  CHECK(untraced.exit_code == 0);
  CHECK(untraced.err.empty());
}

}  // namespace process_life_test
