// SPDX-License-Identifier: MIT
// Device sampling in a traced run (EDGETRACE_SAMPLE_MS, EDGETRACE_SYSFS_ROOT): a fake board's files that change mid-run land in the dump at the right sample, in every output (info, JSON, Perfetto, CSV), in a flight recorder's window, and not at all with `off`; a sandbox without /sys changes nothing else.
#include <doctest/doctest.h>

#include <support/fake_board.hpp>
#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/spawn.hpp>
#include <support/test_env.hpp>

#include <edgetrace/reader.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <sys/resource.h>
#include <string>
#include <thread>
#include <vector>

namespace device_test {

using namespace edgetrace_test;
namespace er = edgetrace::reader;
using Q = edgetrace::format::device_quantity;

std::string board(const char* name) {
  const std::string root = tmp + "/" + name + "_" + std::to_string(::getpid());
  std::system(("rm -rf '" + root + "'").c_str());
  fake_board(root);
  return root;
}

/// A track's samples (ns, value) in time order.
std::vector<std::pair<std::int64_t, std::int64_t>> values(const er::writer_info& w, Q q, const std::string& name) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const er::device_sample& s : w.device.samples) {
    const er::device_track& t = w.device.tracks[s.track];
    if (t.quantity == q && t.name == name) out.emplace_back(s.ns, s.value);
  }
  return out;
}

/// A file change the test made between `before` and `after` (CLOCK_MONOTONIC).
struct change {
  Q quantity;
  std::string track;
  std::int64_t value;
  std::int64_t before = 0, after = 0;
};

/// The first sample that shows `c.value` is the first taken after the write,
/// and it came within a sampling period of it (plus scheduling slack). A
/// sample's tick is read before its files, and a file may be read up to
/// the longest sample's time later (the dump says how long: a preempted
/// flusher takes longer), plus 1 ms for the fit from ticks to ns.
void check_change(const er::writer_info& w, const change& c, std::int64_t period_ns) {
  CAPTURE(c.track);
  CAPTURE(c.value);
  const auto read_within = static_cast<std::int64_t>(w.device.longest_ns);
  CAPTURE(read_within);
  const auto list = values(w, c.quantity, c.track);
  std::size_t first = list.size();
  for (std::size_t i = 0; i < list.size() && first == list.size(); ++i)
    if (list[i].second == c.value) first = i;
  REQUIRE(first < list.size());
  REQUIRE(first > 0);
  CHECK(list[first].first >= c.before - read_within - 1000000);
  CHECK(list[first - 1].first <= c.after);
  CHECK(list[first - 1].second != c.value);
  CHECK(list[first].first - c.after <= period_ns + 100000000);  // 100 ms for a busy machine's scheduler
}

TEST_CASE("a fake board's values and their changes land in the dump at the right sample, and in every output") {
  const std::string root = board("device_run");
  const std::string dump = fresh("device_run.etr");
  spawned s = spawn({app, "device-steps", "0.9", "-1", "sleep"},
                    {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SYSFS_ROOT=" + root, "EDGETRACE_SAMPLE_MS=10"});
  REQUIRE(s.pid > 0);
  // The first change comes after the first sample: the device tracks chunk
  // (it names its files) is written with it. A slow start (qemu) takes
  // longer than any fixed sleep.
  for (int i = 0; i < 3000 && !contains(read_file(dump), "scaling_cur_freq"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(contains(read_file(dump), "scaling_cur_freq"));
  const std::string cpu0 = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq";
  std::vector<change> changes = {{Q::cpu_khz, "cpu0", 1190400}, {Q::temperature_mc, "CPU-therm", 71000},
                                 {Q::cpu_khz, "cpu0", 729600},  {Q::gpu_hz, "17000000.ga10b", 306000000},
                                 {Q::power_mw, "VDD_IN", 9000}};
  const std::vector<std::pair<std::string, std::string>> writes = {
      {cpu0, "1190400\n"}, {"/sys/class/thermal/thermal_zone0/temp", "71000\n"}, {cpu0, "729600\n"},
      {"/sys/class/devfreq/17000000.ga10b/cur_freq", "306000000\n"}, {"/sys/class/hwmon/hwmon0/curr1_input", "1800\n"}};
  for (std::size_t i = 0; i < changes.size(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    changes[i].before = static_cast<std::int64_t>(monotonic_ns());
    put_file(root, writes[i].first, writes[i].second);
    changes[i].after = static_cast<std::int64_t>(monotonic_ns());
  }
  std::string out;
  REQUIRE(wait_for(s, 60, &out) == 0);
  er::dump_reader r;
  REQUIRE(opened(r, dump));
  REQUIRE(r.writers().size() == 1);
  const er::writer_info& w = r.writers().begin()->second;
  REQUIRE(w.device.present);
  CHECK(w.device.period_us == 10000);
  CHECK(w.device.samples_taken >= 20);
  CHECK(w.device.ignored == 0);
  CHECK(w.device.longest_ns > 0);
  for (const change& c : changes) check_change(w, c, 10000000);
  // The values before any change are the board's first ones.
  CHECK(values(w, Q::cpu_khz, "cpu1").front().second == 1984000);
  CHECK(values(w, Q::power_mw, "VDD_CPU_GPU_CV").back().second == 2000);

  // What `edgetrace COMMAND dump OPTIONS -o FILE` wrote.
  const auto converted = [&](std::vector<std::string> args, const char* file) {
    const std::string path = fresh(file);
    args.insert(args.begin() + 1, dump);
    args.insert(args.begin(), cli);
    args.insert(args.end(), {"-o", path});
    REQUIRE(run(args).exit_code == 0);
    return read_file(path);
  };
  SUBCASE("info lists what was sampled and what was not") {
    const process_result info = run({cli, "info", dump});
    REQUIRE(info.exit_code == 0);
    CHECK(contains(info.out, "sampled every 10.000 ms"));
    CHECK(contains(info.out, "a sample's values were read at most "));
    CHECK(contains(info.out, "not sampled    NVML"));
  }
  SUBCASE("the JSON has a counter track per device track") {
    const std::string text = converted({"json"}, "device_run.json");
    CHECK(contains(text, "{\"name\":\"cpu0 clock (MHz)\",\"cat\":\"device\",\"ph\":\"C\""));
    CHECK(contains(text, "\"args\":{\"value\":729.6}"));
    CHECK(contains(text, "\"name\":\"CPU-therm temperature (°C)\""));
    CHECK(contains(text, "\"name\":\"VDD_IN power (W)\""));
  }
  SUBCASE("the Perfetto trace has them as counter tracks") {
    const std::string bytes = converted({"perfetto", "--compress", "none"}, "device_run.pftrace");
    CHECK(contains(bytes, "cpu0 clock (MHz)"));
    CHECK(contains(bytes, "17000000.ga10b GPU clock (MHz)"));
  }
  SUBCASE("a live follower names the thread of a thread's device track, as the reader does") {
    // top --follow said "thread #2": the follower read no thread chunk.
    er::dump_follower follower;
    REQUIRE(follower.open(dump));
    REQUIRE(follower.poll([](const er::followed_span&) {}));
    const auto devices = follower.devices();
    REQUIRE(devices.size() == 1);
    int thread_tracks = 0;
    for (const er::device_track& t : devices.front()->device.tracks) {
      if (t.thread_id == 0) continue;
      ++thread_tracks;
      const std::string label = er::device_track_label(*devices.front(), t);
      CAPTURE(label);
      CHECK(label.find('#') == std::string::npos);
      CHECK(contains(label, "thread steps ("));  // the app's thread, by name and tid
    }
    CHECK(thread_tracks > 0);
  }
  SUBCASE("top --follow shows a line of the latest values") {
    const process_result top = run({cli, "top", dump, "--follow", "--interval", "0.1"});
    REQUIRE(top.exit_code == 0);
    // The board's /proc/stat does not change: no busy share to show.
    CHECK(contains(top.out, "device: cpu0 730 MHz (the slowest), MemAvailable 4883 MB, GPU 306 MHz, GPU load 25%"));
    CHECK(contains(top.out, "VDD_IN 9.0 W"));
    CHECK(contains(top.out, "CPU-therm 71.0 C"));
  }
  SUBCASE("the report plots each track under the iteration latency") {
    const std::string text = converted({"report", "--per", "step"}, "device_run.html");
    CHECK(contains(text, "<h2>Device</h2>"));
    CHECK(contains(text, "iteration &quot;step&quot; (ms)"));
    CHECK(contains(text, "cpu0 clock (MHz)"));
    CHECK(contains(text, "<svg class=\"plot\""));
    CHECK(contains(text, "slowest iterations of &quot;step&quot;"));
    const process_result bad = run({cli, "report", dump, "--slowest", "3", "-o", fresh("device_run_bad.html")});
    CHECK(bad.exit_code == 1);  // a usage error
    CHECK(contains(bad.err, "--slowest N goes with --per NAME"));
  }
  SUBCASE("the CSV counters table has their rows") {
    const std::string text = converted({"csv", "--tables", "counters"}, "device_run.csv");
    CHECK(contains(text, "cpu0 clock (MHz),device,,"));
    CHECK(contains(text, ",1190.4,"));
    CHECK(contains(text, "run-queue wait (%),device,"));  // the thread's name: its comm (qemu's under qemu)
    CHECK_FALSE(contains(text, "run-queue wait (%),device,,"));
  }
}

TEST_CASE("a flight recorder's snapshot keeps the samples of its window") {
  const std::string root = board("device_flight");
  const std::string dump = fresh("device_flight.etr");
  const std::string snapshot = fresh("device_flight.1.etr");
  const process_result p = run({app, "device-steps", "0.5", "-1", "sleep"},
                               {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SYSFS_ROOT=" + root, "EDGETRACE_SAMPLE_MS=10",
                                "EDGETRACE_MODE=flight", "EDGETRACE_FLIGHT_AT_EXIT=1"});
  REQUIRE(p.exit_code == 0);
  er::dump_reader r;
  REQUIRE(opened(r, snapshot));
  const er::writer_info& w = r.writers().begin()->second;
  REQUIRE(w.snapshot.present);
  CHECK(w.device.tracks.size() > 20);
  REQUIRE(w.device.samples.size() > 20);
  for (const er::device_sample& s : w.device.samples) {
    CHECK(s.ns >= w.snapshot.window_first_ns - 20000000);
    CHECK(s.ns <= w.snapshot.window_last_ns + 20000000);
  }
}

TEST_CASE("EDGETRACE_SAMPLE_MS: off samples nothing; a bad value says so and samples at the default") {
  const std::string dump = fresh("device_off.etr");
  REQUIRE(run({app, "device-steps", "0.1", "-1", "sleep"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SAMPLE_MS=off"})
              .exit_code == 0);
  er::dump_reader off;
  REQUIRE(opened(off, dump));
  CHECK_FALSE(off.writers().begin()->second.device.present);
  CHECK(off.stats().chunks_unknown == 0);

  const process_result bad =
      run({app, "device-steps", "0.1", "-1", "sleep"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SAMPLE_MS=fast"});
  REQUIRE(bad.exit_code == 0);
  CHECK(contains(bad.err, "EDGETRACE_SAMPLE_MS='fast' is not a whole number in 1..60000 or off; using the default 100"));
  er::dump_reader r;
  REQUIRE(opened(r, dump));
  CHECK(r.writers().begin()->second.device.period_us == 100000);

  // A *_MS setting takes its unit too (as EDGETRACE_START_AFTER does), or seconds.
  for (const auto& expected : {std::pair<std::string, std::uint64_t>{"5ms", 5000}, {"1s", 1000000}, {" 20 ms", 20000}}) {
    const std::string& setting = expected.first;
    const std::uint64_t period_us = expected.second;
    CAPTURE(setting);
    const process_result unit =
        run({app, "device-steps", "0.1", "-1", "sleep"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SAMPLE_MS=" + setting});
    REQUIRE(unit.exit_code == 0);
    CHECK_FALSE(contains(unit.err, "EDGETRACE_SAMPLE_MS"));
    er::dump_reader u;
    REQUIRE(opened(u, dump));
    CHECK(u.writers().begin()->second.device.period_us == period_us);
  }
  const process_result other_unit =
      run({app, "device-steps", "0.1", "-1", "sleep"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SAMPLE_MS=5us"});
  CHECK(contains(other_unit.err, "EDGETRACE_SAMPLE_MS='5us' is not a whole number in 1..60000 or off; using the default 100"));
}

TEST_CASE("a board whose files hold garbage: the app runs, the values are ignored and counted, the reader is clean") {
  const std::string root = board("device_garbage");
  put_cpu_clocks(root, {"fast\n", "", "123456789012345678901234567890\n", "-1\n"});
  put_file(root, "/sys/class/hwmon/hwmon0/in1_input", "\xff\xfe\n");
  put_file(root, "/proc/stat", "cpu  1 2 3\ncpu0 x\n");
  const std::string dump = fresh("device_garbage.etr");
  const process_result p = run({app, "device-steps", "0.3", "-1", "sleep"},
                               {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SYSFS_ROOT=" + root, "EDGETRACE_SAMPLE_MS=10"});
  REQUIRE(p.exit_code == 0);
  CHECK(p.err.empty());
  er::dump_reader r;
  REQUIRE(opened(r, dump));
  const er::writer_info& w = r.writers().begin()->second;
  CHECK_FALSE(r.damaged());
  CHECK(w.device.samples_taken >= 10);
  CHECK(w.device.ignored >= 6 * w.device.samples_taken);
  CHECK(values(w, Q::cpu_khz, "cpu0").empty());
  CHECK(values(w, Q::power_mw, "VDD_IN").empty());
  CHECK(values(w, Q::power_mw, "VDD_CPU_GPU_CV").size() == w.device.samples_taken);
  const process_result info = run({cli, "info", dump});
  CHECK(info.exit_code == 0);
  CHECK(contains(info.out, "device values  "));
  CHECK(contains(info.out, "ignored (not a number: garbage, empty, huge or negative)"));
  for (const char* command : {"json", "perfetto", "summary"}) {
    CAPTURE(command);
    const std::string out = fresh(std::string("device_garbage.") + command);
    CHECK(run({cli, command, dump, "-o", out}).exit_code == 0);
  }
}

TEST_CASE("a FIFO or a socket in the sampled tree is refused at once: the flusher never blocks on it") {
  // Opened without O_NONBLOCK, a FIFO where a temperature is read blocked
  // the flusher in open() for good: the dump ended at 88 bytes and the app
  // stopped once its rings filled.
  const std::string root = board("device_fifo");
  const std::string fifo = root + "/sys/class/thermal/thermal_zone0/temp";
  const std::string stat = root + "/proc/stat";
  ::unlink(fifo.c_str());
  ::unlink(stat.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  REQUIRE(::mkfifo(stat.c_str(), 0644) == 0);
  const std::string dump = fresh("device_fifo.etr");
  spawned app_run = spawn({app, "device-steps", "0.3", "-1", "sleep"},
                          {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SYSFS_ROOT=" + root, "EDGETRACE_SAMPLE_MS=10"});
  REQUIRE(app_run.pid > 0);
  REQUIRE(wait_for(app_run, 30) == 0);  // before: never (the test's timeout killed it)
  er::dump_reader r;
  REQUIRE(opened(r, dump));
  CHECK(r.complete());
  CHECK_FALSE(r.damaged());
  const er::writer_info& w = r.writers().begin()->second;
  CHECK(w.device.samples_taken >= 10);
  CHECK(values(w, Q::temperature_mc, "CPU-therm").empty());     // the FIFO: no track
  CHECK(values(w, Q::temperature_mc, "GPU-therm").size() == w.device.samples_taken);  // its neighbour: read
  bool stat_missing = false;
  for (const auto& m : w.device.missing) stat_missing = stat_missing || contains(m.name, "/proc/stat");
  CHECK(stat_missing);
}

TEST_CASE("a sandbox with no /sys: the run and its spans are as without sampling, the sources are listed") {
  const std::string root = tmp + "/device_sandbox_" + std::to_string(::getpid());
  std::system(("rm -rf '" + root + "' && mkdir -p '" + root + "'").c_str());
  const std::string dump = fresh("device_sandbox.etr");
  const process_result p = run({app, "device-steps", "0.2", "-1", "sleep"},
                               {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SYSFS_ROOT=" + root, "EDGETRACE_SAMPLE_MS=5"});
  REQUIRE(p.exit_code == 0);
  CHECK(p.err.empty());
  const loaded_dump d = whole_dump(dump);
  CHECK(d.complete);
  CHECK_FALSE(d.damaged);
  const std::uint64_t steps = std::strtoull(p.out.c_str() + 6, nullptr, 10);
  CHECK(d.named("step").size() == steps);
  const process_result info = run({cli, "info", dump});
  CHECK(contains(info.out, "not sampled    cpufreq"));
  CHECK(contains(info.out, "not sampled    /proc/stat"));
  CHECK(contains(info.out, "diagnostics (0)"));
}

/// ulimit -n 1024, as a default login shell has it.
int soft_limit_1024() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 90;
  r.rlim_cur = r.rlim_max != RLIM_INFINITY && r.rlim_max < 1024 ? r.rlim_max : 1024;
  return ::setrlimit(RLIMIT_NOFILE, &r) == 0 ? 0 : 91;
}

TEST_CASE("ulimit -n 1024, 256 traced threads sampled every 10 ms: an app that opens 900 files opens them all") {
  const std::string dump = fresh("device_descriptors.etr");
  const std::vector<std::string> argv = {app, "device-descriptors", "256", "900"};
  const process_result untraced = run(argv, {}, scratch_dir(), soft_limit_1024);
  REQUIRE(untraced.exit_code == 0);
  const process_result traced =
      run(argv, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SAMPLE_MS=10"}, scratch_dir(), soft_limit_1024);
  CAPTURE(traced.out);
  CAPTURE(traced.err);
  CHECK(traced.exit_code == 0);  // before: "opened 502: Too many open files"
  CHECK(contains(traced.out, "opened 900"));
  const loaded_dump d = whole_dump(dump);
  CHECK(d.complete);
  CHECK(d.named("work").size() == 256);
  er::dump_reader r;
  REQUIRE(opened(r, dump));
  REQUIRE(r.writers().size() == 1);
  std::size_t sampled_threads = 0;
  for (const er::device_track& t : r.writers().begin()->second.device.tracks)
    sampled_threads += t.quantity == Q::thread_cpu_ns_total ? 1 : 0;
  CHECK(sampled_threads >= 256);
}

}  // namespace device_test
