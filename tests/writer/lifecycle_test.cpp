// SPDX-License-Identifier: MIT
// Process-level behaviour of the runtime, through tests/support/trace_app:
// tracing off costs no file/thread/allocation, bad settings get one clear
// line, exited threads lose nothing, fork is safe, exit codes are kept.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/test_env.hpp>

#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <vector>

namespace lifecycle_test {

using edgetrace_test::app;
using edgetrace_test::contains;
using edgetrace_test::file_exists;
using edgetrace_test::fresh;
using edgetrace_test::line_count;
using edgetrace_test::load_dump;
using edgetrace_test::run;
using edgetrace_test::tmp;

TEST_CASE("lifecycle: without EDGETRACE_OUTPUT there is no file, no thread, no allocation, no output") {
  const auto r = run({app, "idle"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "threads=1 allocations=0 active=0\n");
  CHECK(r.err.empty());
}

TEST_CASE("lifecycle: with EDGETRACE_OUTPUT the dump is complete after a normal exit") {
  const std::string dump_path = fresh("idle.etr");
  const auto r = run({app, "idle"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  // main + flusher (+ TSan's own thread under the tsan preset)
  CHECK(r.out.rfind("threads=" + std::to_string(2 + edgetrace_test::sanitizer_threads) + " ", 0) == 0);
  CHECK(r.err.empty());
  const auto dump = edgetrace_test::whole_dump(dump_path);
  CHECK(dump.named("app_span").size() == 1000);
  CHECK(dump.named("app_counter").size() == 1000);
  CHECK(dump.named("app_instant").size() == 1);
  CHECK(dump.named("runtime_name").size() == 1);
  CHECK(dump.thread_named("idle-main") != nullptr);
}

TEST_CASE("lifecycle: the clock falls back to CLOCK_MONOTONIC without an invariant counter, and info says so") {
  const std::string cli = EDGETRACE_TEST_CLI;
  struct clock_case {
    std::vector<std::string> env;
    const char* info_clock;  ///< expected in `edgetrace info`'s clock line
    bool message;            ///< one stderr line about the fallback
  };
  const clock_case cases[] = {
      {{"EDGETRACE_ASSUME_UNSTABLE_COUNTER=1"}, "CLOCK_MONOTONIC (fallback: the CPU's counter is not invariant)", true},
      {{"EDGETRACE_CLOCK=monotonic"}, "CLOCK_MONOTONIC,", false},
      {{"EDGETRACE_CLOCK=counter", "EDGETRACE_ASSUME_UNSTABLE_COUNTER=1"}, "TSC", false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.info_clock);
    const std::string dump_path = fresh("clock.etr");
    auto env = c.env;
    env.push_back("EDGETRACE_OUTPUT=" + dump_path);
    const auto r = run({app, "idle"}, env);
    CHECK(r.exit_code == 0);
    CHECK(line_count(r.err) == (c.message ? 1 : 0));
    if (c.message) CHECK(r.err.find("not invariant; using CLOCK_MONOTONIC") != std::string::npos);
    const auto info = run({cli, "info", dump_path});
    CHECK(info.exit_code == 0);
#if defined(__x86_64__)
    CHECK(info.out.find(c.info_clock) != std::string::npos);
#endif
    CHECK(load_dump(dump_path).named("app_span").size() == 1000);
  }
}

TEST_CASE("lifecycle: %p in EDGETRACE_OUTPUT becomes the pid") {
  const auto r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + tmp + "/pid-%p.etr"});
  CHECK(r.exit_code == 42);  // the app's own exit code is kept
  int found = 0;
  if (DIR* d = opendir(tmp.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("pid-", 0) == 0 && name.find('%') == std::string::npos) {
        ++found;
        ::unlink((tmp + "/" + name).c_str());
      }
    }
    closedir(d);
  }
  CHECK(found == 1);
}

TEST_CASE("lifecycle: an unwritable EDGETRACE_OUTPUT gets one stderr line and the app runs on") {
  const auto r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=/nonexistent-dir/x/run.etr"});
  CHECK(r.exit_code == 42);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.rfind("edgetrace: cannot open EDGETRACE_OUTPUT='/nonexistent-dir/x/run.etr'", 0) == 0);
  CHECK(r.err.find("tracing is off") != std::string::npos);
}

TEST_CASE("lifecycle: bad and unknown variables get one line each naming the variable") {
  const std::string dump_path = fresh("badenv.etr");
  const auto r = run({app, "idle"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_FLUSH_MS=abc",
                                     "EDGETRACE_BUFFER_KB=-5", "EDGETRACE_OUTPT=x"});
  CHECK(r.exit_code == 0);
  CHECK(line_count(r.err) == 3);
  CHECK(r.err.find("edgetrace: EDGETRACE_FLUSH_MS='abc' is not a whole number in 1..60000; using the default 10") !=
        std::string::npos);
  CHECK(r.err.find("EDGETRACE_BUFFER_KB='-5'") != std::string::npos);
  CHECK(r.err.find("unknown variable EDGETRACE_OUTPT (did you mean EDGETRACE_OUTPUT?)") != std::string::npos);
  CHECK(load_dump(dump_path).named("app_span").size() == 1000);  // still traced, with defaults
}

TEST_CASE("lifecycle: the *_MS settings take their unit, or seconds; another unit is a bad value") {
  const std::string dump_path = fresh("ms-units.etr");
  const auto good = run({app, "idle"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_FLUSH_MS=20ms"});
  CHECK(good.exit_code == 0);
  CHECK(good.err.empty());
  const auto seconds = run({app, "idle"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_FLUSH_MS=1s"});
  CHECK(seconds.exit_code == 0);
  CHECK(seconds.err.empty());
  const auto bad = run({app, "idle"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_FLUSH_MS=20min"});
  CHECK(bad.exit_code == 0);
  CHECK(contains(bad.err, "EDGETRACE_FLUSH_MS='20min' is not a whole number in 1..60000; using the default 10"));
}

TEST_CASE("lifecycle: a misspelt variable is reported even when tracing is off") {
  const auto r = run({app, "idle"}, {"EDGETRACE_OUTPU=run.etr"});
  CHECK(r.exit_code == 0);
  CHECK(r.err == "edgetrace: unknown variable EDGETRACE_OUTPU (did you mean EDGETRACE_OUTPUT?); ignored\n");
  CHECK(r.out == "threads=1 allocations=0 active=0\n");
}

TEST_CASE("lifecycle: a thread that exits loses nothing, even if the process then dies without exit handlers") {
  const std::string dump_path = fresh("worker-exit.etr");
  const auto r = run({app, "worker-exit"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK_FALSE(dump.complete);  // _exit: no end record, and the reader says so
  const auto* worker = dump.thread_named("short-worker");
  REQUIRE(worker != nullptr);
  CHECK(worker->has_stats);
  CHECK(worker->stats_written + worker->stats_dropped == 10000);  // 5000 spans + 5000 counters
  CHECK(worker->spans + worker->counters == worker->stats_written);
  CHECK(worker->dropped() == 0);
}

TEST_CASE("lifecycle: fork while tracing: the child does not trace or hang, the parent's dump is whole") {
  const std::string dump_path = fresh("fork.etr");
  std::vector<std::string> env{"EDGETRACE_OUTPUT=" + dump_path};
  if (edgetrace_test::thread_sanitized_build) {
    // TSan sleeps atexit_sleep_ms (1 s) at exit while it counts other live
    // threads, and a forked child still counts the parent's. 20 children
    // idled 20 s while the busy thread wrote a ~170 MB dump that this test
    // then needed > 2 GiB to load. The sleep finds nothing in such a child
    // (those threads do not exist there), nor in the parent (its other
    // threads are joined before exit), so it is off for this run only.
    const char* options = std::getenv("TSAN_OPTIONS");
    env.push_back(std::string("TSAN_OPTIONS=") + (options != nullptr ? options : "") + ":atexit_sleep_ms=0");
  }
  const auto r = run({app, "fork"}, env);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "child=7\n");
  const auto dump = edgetrace_test::whole_dump(dump_path);
  CHECK(dump.named("child_name").empty());
  CHECK(dump.named("app_span").size() >= 100);
}

TEST_CASE("lifecycle: EDGETRACE_SIGNAL_FLUSH=1 completes the dump when SIGTERM kills the app") {
  const std::string dump_path = fresh("sigterm.etr");
  const auto r = run({app, "signal-term"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_SIGNAL_FLUSH=1"});
  CHECK(r.exit_code == 128 + SIGTERM);  // the default action still happens
  const auto dump = edgetrace_test::whole_dump(dump_path);
  CHECK(dump.named("app_span").size() == 1000);
}

TEST_CASE("lifecycle: without signal flush a SIGTERM leaves a readable but incomplete dump") {
  const std::string dump_path = fresh("sigterm-plain.etr");
  const auto r = run({app, "signal-term"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 128 + SIGTERM);
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK_FALSE(dump.complete);
  CHECK(dump.named("app_span").size() <= 1000);
}

TEST_CASE("lifecycle: signal flush chains to the app's own handler") {
  const std::string dump_path = fresh("sigchain.etr");
  const auto r =
      run({app, "signal-chain"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_SIGNAL_FLUSH=1", "TRACE_APP_HANDLER=1"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "app_handler=1 installed=1\n");
  const auto dump = load_dump(dump_path);
  CHECK(dump.complete);
  CHECK(dump.named("app_span").size() == 1000);
}

// Skipped in sanitizer builds: the child allocates after fork (see sanitized_build).
TEST_CASE("lifecycle: EDGETRACE_FORK=follow gives the child a dump of its own" *
          doctest::skip(edgetrace_test::sanitized_build)) {
  const auto child = edgetrace_test::check_followed_fork("fork-follow", "follow", {{"app_span", 200}, {"child_span", 0}},
                                                        {{"child_span", 300}, {"app_span", 0}});
  CHECK(child.thread_named("child-main") != nullptr);
}

namespace {
// `trace_app MODE` loses its dump mid-run: it finishes (exit 0, tracing
// off at the end) and stderr has one line, saying `why`.
void check_tracing_stops(const std::string& mode, const std::string& dump_path, const std::string& why) {
  const auto r = run({app, mode}, {"EDGETRACE_OUTPUT=" + dump_path});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "active=0\n");
  CHECK(line_count(r.err) == 1);
  CHECK(contains(r.err, why));
}
}  // namespace

TEST_CASE("lifecycle: a dump deleted while the app runs gets one line and tracing stops") {
  check_tracing_stops("delete-output", fresh("deleted.etr"), "was deleted while tracing; tracing is off");
}

TEST_CASE("lifecycle: a file-size limit (disk full alike) gets one line and the app finishes") {
  const std::string dump_path = fresh("fsize.etr");
  check_tracing_stops("file-size-limit", dump_path, "failed: File too large; tracing is off");
  const auto dump = load_dump(dump_path);  // what fit is still readable
  REQUIRE(dump.opened);
  CHECK(dump.named("app_span").size() > 0);
}

}  // namespace lifecycle_test
