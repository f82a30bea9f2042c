// SPDX-License-Identifier: MIT
// The real thing on this machine, with the default sampling: an app whose 1 ms iterations run pinned to one CPU while another process spins on that CPU during the middle third. `summary --per step` names run-queue wait for the slowest iterations; the quiet thirds get no explanation. (ctest runs it alone: RUN_SERIAL.)
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/machine_load.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/sanitizers.hpp>
#include <support/spawn.hpp>
#include <support/test_env.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <sched.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace preemption_test {

using namespace edgetrace_test;

/// A CPU this process may run on.
int some_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) return cpu;
  return 0;
}

/// A child spinning on `cpu` until killed.
pid_t spinner(int cpu) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    volatile std::uint64_t spin = 0;
    for (;;) spin = spin + 1;
  }
  return pid;
}

struct listed {
  long long number;
  bool explained;
  std::string text;
};

/// The "  iteration N  DURATION  thread ...: WHAT" lines of summary --per.
std::vector<listed> explained_lines(const std::string& out) {
  std::vector<listed> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  iteration ", 0) != 0) continue;
    listed l;
    l.number = std::atoll(line.c_str() + 12);
    l.explained = !contains(line, "nothing beyond the run's spread");
    l.text = line;
    lines.push_back(l);
  }
  return lines;
}

/// What one traced run with a spinner in its middle third showed.
struct preempted_run {
  std::vector<listed> top;  // summary --per step's default list
  std::size_t quiet = 0, spun = 0, spun_explained = 0;
  std::vector<std::string> quiet_lines;  // the quiet iterations it explained anyway
  double others_cpu_s = 0;               // CPU other processes used meanwhile
  std::size_t steps = 0;                 // iterations the app ran (about 3000)

  /// Whether it showed everything the case asserts.
  bool held() const {
    bool all_run_queue = top.size() == 10;
    for (const listed& l : top) all_run_queue = all_run_queue && contains(l.text, "waited on the run queue");
    return all_run_queue && steps > 1000 && quiet > 1000 && quiet_lines.empty() && spun > 100 &&
           spun_explained * 10 >= spun * 9;
  }
};

preempted_run run_preempted() {
  preempted_run result;
  const int cpu = some_cpu();
  const std::string dump = fresh("preempted.etr");
  const outside_load before = outside_load::now();
  spawned run_app = spawn({app, "device-steps", "3.0", std::to_string(cpu)}, {"EDGETRACE_OUTPUT=" + dump});
  REQUIRE(run_app.pid > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const auto spin_begin = static_cast<std::int64_t>(monotonic_ns());
  const pid_t spin = spinner(cpu);
  REQUIRE(spin > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ::kill(spin, SIGKILL);
  ::waitpid(spin, nullptr, 0);
  const auto spin_end = static_cast<std::int64_t>(monotonic_ns());
  std::string out;
  REQUIRE(wait_for(run_app, 60, &out) == 0);
  result.others_cpu_s = outside_load::now().since(before);

  // Iteration n is the n-th step by begin.
  const loaded_dump d = whole_dump(dump);
  std::vector<std::int64_t> begins;
  for (const loaded_event& e : d.named("step")) begins.push_back(e.begin_ns);
  std::sort(begins.begin(), begins.end());
  // A busy machine also takes iterations away (1 ms steps on a CPU shared
  // with other processes): fewer than 3000 is no failure here; held() judges.
  REQUIRE(begins.size() > 10);
  result.steps = begins.size();

  const process_result slowest = run({cli, "summary", dump, "--per", "step"});
  REQUIRE(slowest.exit_code == 0);
  result.top = explained_lines(slowest.out);

  // Every iteration, split into the quiet thirds (more than two sampling
  // periods from the spinner) and those under it.
  const process_result all =
      run({cli, "summary", dump, "--per", "step", "--slowest", std::to_string(begins.size())});
  REQUIRE(all.exit_code == 0);
  const std::int64_t margin = 250000000;
  for (const listed& l : explained_lines(all.out)) {
    REQUIRE(l.number >= 0);
    REQUIRE(static_cast<std::size_t>(l.number) < begins.size());
    const std::int64_t begin = begins[static_cast<std::size_t>(l.number)];
    if (begin < spin_begin - margin || begin > spin_end + margin) {
      ++result.quiet;
      if (l.explained) result.quiet_lines.push_back(l.text);
    } else if (begin > spin_begin + margin && begin < spin_end - margin) {
      ++result.spun;
      result.spun_explained += l.explained ? 1 : 0;
    }
  }
  return result;
}

// Under qemu-user the emulated app's own threads load the pinned CPU
// (7 % run-queue wait in the quiet thirds, measured): not the preemption
// this measures, so the case reports itself skipped there.
//
// The quiet thirds are quiet only on an otherwise idle machine. When a run
// did not show everything below, it is repeated once, and the repeat must
// show everything. Other processes' CPU (a build beside the suite, which
// the product rightly reports: "other processes used 33% of a CPU") is
// one cause; the app's own flusher is another, which the test cannot
// measure apart: it may run on the app's pinned CPU, and under ASan on 2
// cores one of its passes once kept the app waiting 7 ms of a 100 ms
// sample ("waited on the run queue 7%"), rightly reported too.
/// Other processes' CPU during a run above which its quiet thirds are not
/// quiet: a tenth of a CPU over its 3 s (the two failed runs that led here
/// saw 4.2 s, with a second suite running beside it).
constexpr double busy_cpu_s = 0.3;

TEST_CASE("another process on the app's CPU shows as run-queue wait; the quiet thirds get no explanation" *
          doctest::skip(edgetrace_test::emulated())) {
  preempted_run r = run_preempted();
  if (!r.held()) {
    MESSAGE("other processes used " << r.others_cpu_s << " s of CPU during the run, which did not show everything ("
                                    << r.quiet_lines.size() << " quiet iterations explained); running it once more");
    r = run_preempted();
  }
  // Still not, and the machine was busy again: the quiet thirds were not
  // quiet, so nothing here can be proven (a suite beside a build, two
  // suites at once). Skipped, saying so; on a quiet machine it must hold.
  if (!r.held() && r.others_cpu_s > busy_cpu_s) {
    const std::string why = "other processes used " + std::to_string(r.others_cpu_s) +
                            " s of CPU during the 3 s run (more than " + std::to_string(busy_cpu_s) +
                            "): no quiet thirds to measure";
    edgetrace_test::skip_at_run_time(why.c_str());
    return;
  }
  CAPTURE(r.others_cpu_s);

  CHECK(r.steps > 1000);
  // The default list: the slowest (p99 and above), each explained by the run queue.
  REQUIRE(r.top.size() == 10);
  for (const listed& l : r.top) {
    CAPTURE(l.text);
    CHECK(contains(l.text, "waited on the run queue"));
  }
  // None of the quiet thirds is explained, most of those under the spinner are.
  for (const std::string& line : r.quiet_lines) MESSAGE(line);
  CHECK(r.quiet > 1000);
  CHECK(r.quiet_lines.empty());
  CHECK(r.spun > 100);
  CHECK(r.spun_explained * 10 >= r.spun * 9);
}

}  // namespace preemption_test
