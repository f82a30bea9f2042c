// SPDX-License-Identifier: MIT
// Why was this frame slow (`summary --per frame`), in a real traced app: a layer planted 20 times slower in one frame is named for that frame (first, unless the machine stalled another longer), with its usual time and the command that writes the frame alone; a process frozen for 500 ms (SIGSTOP) is said as a stretch without device samples; too few samples are said as such; the JSON form carries the same.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/json_lite.hpp>
#include <support/process.hpp>
#include <support/spawn.hpp>
#include <support/test_env.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace drilldown_test {

using namespace edgetrace_test;

/// `summary --per frame --format json` with --slowest N: its first dump's
/// slowest_iterations object.
json_lite::value slowest(const std::string& dump, std::size_t n) {
  const process_result p = run({cli, "summary", dump, "--per", "frame", "--slowest", std::to_string(n), "--format", "json"});
  REQUIRE(p.exit_code == 0);
  json_lite::value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(p.out, doc, error), error);
  REQUIRE(doc["slowest_iterations"].size() == 1);
  return doc["slowest_iterations"][0];
}

TEST_CASE("a layer 20 times slower in one frame is named for that frame, with the command that opens it") {
  const std::string dump = fresh("planted.etr");
  const long long planted = 150;
  const process_result app_run = run({app, "device-layers", "0.5", std::to_string(planted)}, {"EDGETRACE_OUTPUT=" + dump});
  REQUIRE(app_run.exit_code == 0);
  REQUIRE(contains(app_run.out, "frames "));
  REQUIRE(std::atoll(app_run.out.c_str() + 7) > planted);

  // Every frame listed: on a busy machine other frames may wait longer
  // than the planted one works (tests/sinks/slow_iterations_test.cpp
  // proves the order on a built dump, where nothing waits).
  const json_lite::value s = slowest(dump, 100000);
  const json_lite::value* found = nullptr;
  for (std::size_t i = 0; i < s["slowest"].size(); ++i)
    if (s["slowest"][i]["number"].num(-1) == static_cast<double>(planted)) found = &s["slowest"][i];
  REQUIRE_MESSAGE(found != nullptr, "the planted frame is not listed");
  const json_lite::value& frame = *found;
  CHECK(frame["slower"].boolean);
  REQUIRE(frame["layers"].size() >= 1);
  // First, unless the machine also stalled another of its layers longer.
  std::size_t planted_at = frame["layers"].size();
  for (std::size_t i = 0; i < frame["layers"].size(); ++i)
    if (frame["layers"][i]["name"].str() == "layer_4") planted_at = i;
  REQUIRE(planted_at < frame["layers"].size());
  if (planted_at != 0) MESSAGE("named after " << frame["layers"][0]["name"].str() << ": the machine stalled that one longer");
  const json_lite::value& layer = frame["layers"][planted_at];
  CHECK(layer["ns"].num() >= 1.9e6);
  // Its usual time is the 100 us the app spends (a busy machine stretches some).
  CHECK(layer["usual_ns"].num() >= 0.9e5);
  CHECK(layer["usual_ns"].num() < 0.5e6);
  // "backbone" holds layer_4, but only its self time counts: not named before it.
  for (std::size_t i = 0; i < frame["layers"].size(); ++i) CHECK(frame["layers"][i]["name"].str() != "backbone");

  // The text names it too, and the command it prints writes that frame alone.
  const process_result text = run({cli, "summary", dump, "--per", "frame", "--slowest", "100000"});
  REQUIRE(text.exit_code == 0);
  const std::string line = "  iteration " + std::to_string(planted) + " ";
  const std::size_t at = text.out.find(line);
  REQUIRE(at != std::string::npos);
  const std::string rest = text.out.substr(at);
  CHECK(rest.substr(0, rest.find('\n')).find("layer_4 ") != std::string::npos);
  const std::size_t command = rest.find("    edgetrace json ");
  REQUIRE(command != std::string::npos);
  const std::string window = frame["window"].str();
  CHECK(rest.find("--window " + window + " -o iteration-" + std::to_string(planted) + ".json") == command + 20 + dump.size());
  const std::string out = fresh("planted.json");
  REQUIRE(run({cli, "json", dump, "--window", window, "-o", out}).exit_code == 0);
  const std::string json = read_file(out);
  // Its own layers, once each: the window is that frame (the frames either
  // side only touch its ends).
  CHECK(contains(json, "\"layer_4\""));
  CHECK(contains(json, "\"backbone\""));
}

TEST_CASE("a process frozen for 500 ms is said as a stretch without device samples") {
  const std::string dump = fresh("frozen.etr");
  spawned s = spawn({app, "device-layers", "1.5", "-1"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_SAMPLE_MS=100"});
  REQUIRE(s.pid > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(s.pid, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(s.pid, SIGCONT);
  REQUIRE(wait_for(s, 60) == 0);

  const json_lite::value r = slowest(dump, 1);
  REQUIRE(r["slowest"].size() == 1);
  const json_lite::value& frame = r["slowest"][0];
  CAPTURE(frame["end_ns"].num() - frame["begin_ns"].num());
  CHECK(frame["end_ns"].num() - frame["begin_ns"].num() >= 4.5e8);
  CHECK(frame["slower"].boolean);
  // No sample from before the stop to after it: at least the 500 ms.
  CHECK(frame["unsampled_ns"].num() >= 4.5e8);
  const process_result text = run({cli, "summary", dump, "--per", "frame", "--slowest", "1"});
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.out, "around it: the whole process or the machine stalled"));
  CHECK(!contains(text.out, "the device as usual"));
}

TEST_CASE("too few device samples to judge are said as such; no samples, no device verdict") {
  // 60 ms of frames at the default 100 ms: a sample or two.
  const std::string dump = fresh("short.etr");
  REQUIRE(run({app, "device-layers", "0.06", "20"}, {"EDGETRACE_OUTPUT=" + dump}).exit_code == 0);
  const json_lite::value r = slowest(dump, 3);
  CHECK(r["device"]["sampled"].boolean);
  CHECK(r["device"]["too_few"].boolean);
  for (std::size_t i = 0; i < r["slowest"].size(); ++i) CHECK(r["slowest"][i]["device"].size() == 0);
  const process_result text = run({cli, "summary", dump, "--per", "frame", "--slowest", "3"});
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.out, "too few to judge the device"));

  const std::string off = fresh("unsampled.etr");
  REQUIRE(run({app, "device-layers", "0.06", "20"}, {"EDGETRACE_OUTPUT=" + off, "EDGETRACE_SAMPLE_MS=off"}).exit_code == 0);
  const json_lite::value none = slowest(off, 3);
  CHECK(!none["device"]["sampled"].boolean);
  const process_result plain = run({cli, "summary", off, "--per", "frame", "--slowest", "3"});
  REQUIRE(plain.exit_code == 0);
  CHECK(contains(plain.out, "no device samples in the dump"));
  // --slowest in CSV is refused, with the formats it applies to.
  const process_result csv = run({cli, "summary", off, "--per", "frame", "--slowest", "3", "--format", "csv"});
  CHECK(csv.exit_code == 1);
  CHECK(contains(csv.err, "--slowest applies to the table and json formats"));
}

}  // namespace drilldown_test
