// SPDX-License-Identifier: MIT
// The real thing on this machine, with the default sampling: an app whose 1 ms iterations run pinned to one CPU while another process spins on that CPU during the middle third, alone or beside a background that keeps that CPU's run queue busy all along. `summary --per step` names run-queue wait for the slow iterations under the spinner; the other thirds get (almost) no explanation; no share is over 100 %. (ctest runs it alone: RUN_SERIAL.)
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/json_lite.hpp>
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

/// A child pinned to `cpu` until killed: spinning all the time (`rest_ms`
/// 0), or `rest_ms` asleep after every 2 ms of spinning.
pid_t pinned_child(int cpu, int rest_ms) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    volatile std::uint64_t spin = 0;
    for (;;) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
      while (rest_ms == 0 || std::chrono::steady_clock::now() < until) spin = spin + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(rest_ms));
    }
  }
  return pid;
}

/// A child spinning on `cpu` until killed.
pid_t spinner(int cpu) { return pinned_child(cpu, 0); }

/// A child that keeps `cpu`'s run queue busy about half of the time.
pid_t background(int cpu) { return pinned_child(cpu, 2); }

/// One iteration of `summary --per step --format json`'s slowest list.
struct listed {
  long long number = -1;
  std::int64_t begin_ns = 0;
  bool slower = false;
  bool explained = false;  // the device's samples named something
  bool run_queue = false;  // ... the run-queue wait among it
  bool at_edge = false;    // began within the margin of the spinner's start or end
  double from_spinner_ms = 0;  // when it began, from the spinner's start
  double share = 0;        // the run-queue share quoted (%)
  std::string text;
};

/// The slowest iterations `summary --per step` lists (`slowest`: 0, the
/// default list), from its JSON form.
std::vector<listed> slowest_of(const std::string& dump, std::size_t slowest) {
  std::vector<std::string> args{cli, "summary", dump, "--per", "step", "--format", "json"};
  if (slowest != 0) args.insert(args.end(), {"--slowest", std::to_string(slowest)});
  const process_result p = run(args);
  REQUIRE(p.exit_code == 0);
  json_lite::value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(p.out, doc, error), error);
  std::vector<listed> out;
  const json_lite::value& list = doc["slowest_iterations"][0]["slowest"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json_lite::value& it = list[i];
    listed l;
    l.number = static_cast<long long>(it["number"].num(-1));
    l.begin_ns = std::atoll(it["begin_ns"].text.c_str());
    l.slower = it["slower"].boolean;
    l.explained = it["device"].size() != 0;
    for (std::size_t j = 0; j < it["device"].size(); ++j) {
      const std::string d = it["device"][j].str();
      l.text += d + "; ";
      if (d.rfind("waited on the run queue ", 0) == 0) {
        l.run_queue = true;
        l.share = std::atof(d.c_str() + 24);
      }
    }
    out.push_back(l);
  }
  return out;
}

/// What one traced run with a spinner in its middle third showed.
struct preempted_run {
  bool busy_background = false;
  std::vector<listed> top;  // summary --per step's default list
  std::size_t quiet = 0, quiet_explained = 0, spun_slower = 0, spun_run_queue = 0;
  std::vector<std::string> quiet_lines;  // the quiet iterations it explained
  double largest_share = 0;              // of every run-queue share quoted (%)
  double others_cpu_s = 0;               // CPU other processes used meanwhile
  std::size_t steps = 0;                 // iterations the app ran (about 3000, 1300 beside the background)

  /// Whether it showed everything the case asserts.
  bool held() const {
    return top_held() && steps > 1000 && quiet > 500 && quiet_held() && spun_slower > 30 &&
           spun_run_queue * 10 >= spun_slower * 9 && largest_share <= 100;
  }
  /// The default list: the 10 slowest, each named by the run queue. Beside
  /// the background, one that began within the margin of the spinner's
  /// start or end is left out of that, as it is of the quiet and the spun:
  /// its samples may straddle the change, and against the background's
  /// waits the share they give may not stand out (it did not, once, in a
  /// clean-clone run). The spinner's first slice makes the longest waits,
  /// so many of the slowest are there: at least 8 of the 10 must still be
  /// named by the run queue.
  bool top_held() const {
    std::size_t named = 0;
    bool inside_named = top.size() == 10;
    for (const listed& l : top) {
      named += l.run_queue ? 1 : 0;
      inside_named = inside_named && ((busy_background && l.at_edge) || l.run_queue);
    }
    return inside_named && named >= 8;
  }
  /// On a quiet machine no quiet iteration explained; beside the background at most 5 %.
  bool quiet_held() const { return busy_background ? quiet_explained * 20 <= quiet : quiet_explained == 0; }
};

preempted_run run_preempted(bool busy_background) {
  preempted_run result;
  result.busy_background = busy_background;
  const int cpu = some_cpu();
  const std::string dump = fresh("preempted.etr");
  const outside_load before = outside_load::now();
  const pid_t behind = busy_background ? background(cpu) : 0;
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
  const int app_exit = wait_for(run_app, 60, &out);
  if (behind > 0) {
    ::kill(behind, SIGKILL);
    ::waitpid(behind, nullptr, 0);
  }
  REQUIRE(app_exit == 0);
  result.others_cpu_s = outside_load::now().since(before);

  // Iterations within this of the spinner's start or end are neither
  // quiet nor under it: their samples may straddle the change.
  const std::int64_t margin = 250000000;
  result.top = slowest_of(dump, 0);
  for (listed& l : result.top) {
    l.at_edge = std::abs(l.begin_ns - spin_begin) < margin || std::abs(l.begin_ns - spin_end) < margin;
    l.from_spinner_ms = static_cast<double>(l.begin_ns - spin_begin) / 1e6;
  }
  // Every iteration, split into the quiet thirds (more than two sampling
  // periods from the spinner) and those under it. A busy machine also
  // takes iterations away (1 ms steps on a CPU shared with other
  // processes): fewer than 3000 is no failure here; held() judges.
  const std::vector<listed> all = slowest_of(dump, 100000);
  REQUIRE(all.size() > 10);
  result.steps = all.size();
  for (const listed& l : all) {
    result.largest_share = std::max(result.largest_share, l.share);
    if (l.begin_ns < spin_begin - margin || l.begin_ns > spin_end + margin) {
      ++result.quiet;
      if (l.explained) {
        ++result.quiet_explained;
        result.quiet_lines.push_back("iteration " + std::to_string(l.number) + ": " + l.text);
      }
    } else if (l.begin_ns > spin_begin + margin && l.begin_ns < spin_end - margin && l.slower) {
      ++result.spun_slower;
      result.spun_run_queue += l.run_queue ? 1 : 0;
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

/// Runs the case (once more when it did not hold), skipping it, saying
/// so, when the machine was busy both times.
void check_preempted(bool busy_background) {
  // A second run that did not show everything on a quiet machine is judged
  // (it fails below). One that did not on a busy machine again had no quiet
  // thirds (a suite beside a build, two suites at once): skipped, saying so.
  preempted_run r;
  const bool judged = edgetrace_test::judged_in_two_runs([&](int run_number) -> std::string {
    r = run_preempted(busy_background);
    if (r.held() || (run_number == 2 && r.others_cpu_s <= busy_cpu_s)) return "";
    std::string top;
    for (const listed& l : r.top)
      if (!l.run_queue)
        top += " " + std::to_string(l.number) + " (" + std::to_string(static_cast<long long>(l.from_spinner_ms)) +
               " ms from the spinner's start" + (l.slower ? "" : ", not slower") + ") [" + l.text + "]";
    return "other processes used " + std::to_string(r.others_cpu_s) + " s of CPU during the 3 s run (more than " +
           std::to_string(busy_cpu_s) + " leaves no quiet thirds), which did not show everything (" +
           std::to_string(r.quiet_explained) + " quiet iterations explained, " + std::to_string(r.spun_run_queue) +
           " of " + std::to_string(r.spun_slower) + " slow ones under the spinner by the run queue; of the slowest, " +
           "not by the run queue:" + top + ")";
  });
  if (!judged) return;
  CAPTURE(r.others_cpu_s);
  CAPTURE(r.steps);
  CHECK(r.steps > 1000);
  // The default list: the slowest (p99 and above), each explained by the run queue.
  REQUIRE(r.top.size() == 10);
  for (const listed& l : r.top) {
    CAPTURE(l.number);
    CAPTURE(l.at_edge);
    CAPTURE(l.text);
    if (!r.busy_background || !l.at_edge) CHECK(l.run_queue);
  }
  CHECK(r.top_held());
  // The quiet thirds: none explained (at most 5 % beside the background);
  // of the slow iterations under the spinner, 90 % by the run queue.
  for (const std::string& line : r.quiet_lines) MESSAGE(line);
  CHECK(r.quiet > 500);
  CHECK(r.quiet_held());
  CHECK(r.spun_slower > 30);
  CHECK(r.spun_run_queue * 10 >= r.spun_slower * 9);
  CHECK(r.largest_share <= 100);
}

TEST_CASE("another process on the app's CPU shows as run-queue wait; the quiet thirds get no explanation" *
          doctest::skip(edgetrace_test::emulated())) {
  check_preempted(false);
}

TEST_CASE("beside a background that keeps the run queue busy, the spinner's slow iterations are still the run queue's" *
          doctest::skip(edgetrace_test::emulated())) {
  check_preempted(true);
}

}  // namespace preemption_test
