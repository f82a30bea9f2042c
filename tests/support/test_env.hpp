// SPDX-License-Identifier: MIT
// Test helper: what every test program is given (the traced helper app, the
// CLI, its scratch folder) and a fresh path in that folder. The paths come
// from the build (tests/CMakeLists.txt); the environment overrides two:
// a knob configuration that runs a room's program with its own trace_app
// gives it as ETTEST_TRACE_APP (tests/knob_configurations.cmake), and every
// ctest entry gets a scratch folder of its own as ETTEST_TMPDIR
// (support/files.hpp). Not EDGETRACE_*: the runtime in the test program
// would report them as unknown variables.
#pragma once

#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <support/files.hpp>
#include <support/process.hpp>

namespace edgetrace_test {

/// Says why the running case cannot prove its point here (a timing case on
/// a machine too busy to measure it) and counts it as skipped: a program
/// whose every case skipped exits 77, which ctest shows as "Skipped"
/// (support/doctest_main.cpp). The case returns right after.
void skip_at_run_time(const char* why);

/// For a case whose run the machine, not the code, can leave unable to
/// judge its point (a time a busy machine stretches; docs/TESTING.md,
/// "Timing on a busy machine"): runs `attempt(1)`, and `attempt(2)` when
/// that one could not judge. An attempt runs the case's checks and returns
/// "" when it judged, else why it could not, in a few words ("the flusher
/// took the request 393 ms after the call (a busy machine)"). After two
/// that could not, the case is skipped with the second one's words
/// (skip_at_run_time) and this returns false: the caller returns.
bool judged_in_two_runs(const std::function<std::string(int run_number)>& attempt);

/// The environment's `variable` when set and not empty, else `built`.
inline std::string setting(const char* variable, const char* built) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? value : built;
}

/// tests/support/trace_app.cpp as built for this program's configuration.
inline const std::string app = setting("ETTEST_TRACE_APP", EDGETRACE_TEST_TRACE_APP);
/// Whether this run is a knob configuration's (`<test>@<name>`, started with
/// ETTEST_TRACE_APP): the room's program, the same reader and CLI, with the
/// knob's trace_app.
inline bool knob_app() { return app != EDGETRACE_TEST_TRACE_APP; }
/// The edgetrace command-line tool.
inline const std::string cli = EDGETRACE_TEST_CLI;
/// This run's scratch folder (scratch_dir: one per ctest entry).
inline const std::string tmp = scratch_dir();

/// The line `trace_app knobs` prints: the build knobs of `app`
/// ("ENABLED=1 COMPACT_SCOPES=0 CLOCK_MONOTONIC=0 ...").
inline const std::string& app_knobs() {
  static const std::string knobs = run({app, "knobs"}).out;
  return knobs;
}

/// `tmp/name` with no file there (see fresh_file).
inline std::string fresh(const std::string& name) { return fresh_file(tmp + "/" + name); }

/// `trace_app MODE` with EDGETRACE_CLOCK=CLOCK, tracing to tmp/MODE-CLOCK.etr
/// (a fresh path): the run and the dump's path.
struct clock_run {
  process_result run;
  std::string path;
};
inline clock_run run_on_clock(const std::string& mode, const std::string& clock) {
  const std::string path = fresh(mode + "-" + clock + ".etr");
  return {run({app, mode}, {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_CLOCK=" + clock}), path};
}

/// The dump of `trace_app ARGS...` (EDGETRACE_OUTPUT=tmp/name), recorded the
/// first time a test asks for it in this program; false when the app
/// failed or wrote to stderr (the caller REQUIREs it).
inline bool recorded_once(const std::string& name, const std::vector<std::string>& args, std::string& path) {
  static std::map<std::string, bool> recorded;
  path = tmp + "/" + name;
  const auto known = recorded.find(name);
  if (known != recorded.end()) return known->second;
  std::vector<std::string> argv{app};
  argv.insert(argv.end(), args.begin(), args.end());
  const process_result r = run(argv, {"EDGETRACE_OUTPUT=" + fresh(name)});
  return recorded[name] = r.exit_code == 0 && r.err.empty();
}

}  // namespace edgetrace_test
