// SPDX-License-Identifier: MIT
// Process-level behaviour of the runtime, through tests/support/trace_app:
// tracing off costs no file/thread/allocation, bad settings get one clear
// line, exited threads lose nothing, fork is safe, exit codes are kept.
#include <doctest/doctest.h>

#include <support/process.hpp>
#include <support/read_dump.hpp>

#include <dirent.h>
#include <string>

using edgetrace_test::file_exists;
using edgetrace_test::line_count;
using edgetrace_test::load_dump;
using edgetrace_test::run;

namespace {
const std::string app = EDGETRACE_TEST_TRACE_APP;
const std::string tmp = EDGETRACE_TEST_TMPDIR;

std::string fresh(const std::string& name) {
  const std::string path = tmp + "/" + name;
  ::unlink(path.c_str());
  return path;
}
}  // namespace

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
  CHECK(r.out.rfind("threads=2 ", 0) == 0);  // main + flusher
  CHECK(r.err.empty());
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  CHECK_FALSE(dump.damaged);
  CHECK(dump.named("app_span").size() == 1000);
  CHECK(dump.named("app_counter").size() == 1000);
  CHECK(dump.named("app_instant").size() == 1);
  CHECK(dump.named("runtime_name").size() == 1);
  CHECK(dump.thread_named("idle-main") != nullptr);
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
  const auto r = run({app, "fork"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "child=7\n");
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  CHECK_FALSE(dump.damaged);
  CHECK(dump.named("child_name").empty());
  CHECK(dump.named("app_span").size() >= 100);
}
