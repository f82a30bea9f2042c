// SPDX-License-Identifier: MIT
// Tests of the flight service alone (writer/flight/service.hpp), with a
// host of the test's own in place of the runtime: what it asks the host
// for, and the snapshots it writes for a snapshot() call, a crash on the
// flusher and the exit.
#include <doctest/doctest.h>

#include <edgetrace/edgetrace.hpp>

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace flight_service_test {

namespace et = edgetrace::detail;

namespace {

/// The runtime's part, counted: nothing is encoded, the tail is empty.
struct counting_host final : et::flight_host {
  int encoded = 0;
  int tails = 0;
  std::vector<unsigned char> tail;
  void encode_everything() override { ++encoded; }
  std::vector<unsigned char>& encode_tail() override {
    ++tails;
    return tail;
  }
  std::uint64_t tick_ns(std::uint64_t) const override { return et::clock_ns(CLOCK_MONOTONIC); }
};

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// An output path of the test's own, with no snapshot of an earlier run beside it.
std::string fresh_output(const char* name) {
  const std::string base = "/tmp/flight_service_test_" + std::to_string(::getpid()) + "_" + name;
  for (int n = 1; n <= 4; ++n) ::unlink((base + "." + std::to_string(n) + ".etr").c_str());
  return base + ".etr";
}

std::string snapshot(const std::string& output, int n) {
  return output.substr(0, output.size() - 4) + "." + std::to_string(n) + ".etr";
}

}  // namespace

TEST_CASE("flight service: a snapshot() call is served by the flusher: everything encoded, the tail, one file") {
  et::settings config;
  config.flight = true;
  config.flight_bytes = 1u << 20;
  config.flight_after_ms = 0;  // written at the first serve after the call
  config.flight_gap_ms = 0;    // and the next call too
  et::flight_service service(config);
  counting_host host;
  const std::string output = fresh_output("call");
  const et::playing_role flusher(et::flusher_role);
  char error[400] = "";
  REQUIRE(service.start(output.c_str(), 7, error, sizeof error));
  CHECK(service.ready());
  CHECK(service.wait(5000) == 5000);  // nothing pending: the flusher's own period

  service.serve(false, host);
  CHECK(host.encoded == 0);  // nothing handed over: nothing written
  service.hand_call("checkpoint", 10);
  service.serve(false, host);
  CHECK(host.encoded == 1);
  CHECK(host.tails == 1);
  CHECK(exists(snapshot(output, 1)));
  CHECK_FALSE(exists(snapshot(output, 2)));

  // The exit: the request made just before is taken and written, then the
  // exit snapshot. A call within the gap is skipped, and counted.
  config.flight_at_exit = true;
  service.hand_call("last", 4);
  service.finish(host);
  CHECK(host.encoded == 3);
  CHECK(exists(snapshot(output, 2)));
  CHECK(exists(snapshot(output, 3)));
  config.flight_gap_ms = 60000;
  et::flight_service limited(config);
  const std::string limited_output = fresh_output("limited");
  REQUIRE(limited.start(limited_output.c_str(), 7, error, sizeof error));
  limited.hand_call("first", 5);
  limited.serve(false, host);
  limited.hand_call("within the gap", 14);
  limited.serve(false, host);
  CHECK(host.encoded == 4);  // the second call wrote nothing
  CHECK_FALSE(exists(snapshot(limited_output, 2)));
  for (int n = 1; n <= 3; ++n) ::unlink(snapshot(output, n).c_str());
  ::unlink(snapshot(limited_output, 1).c_str());
}

TEST_CASE("flight service: a crash on the flusher writes the ring from there, without a tail") {
  et::settings config;
  config.flight = true;
  config.flight_bytes = 1u << 20;
  et::flight_service service(config);
  const std::string output = fresh_output("crash");
  {
    const et::playing_role flusher(et::flusher_role);
    char error[400] = "";
    REQUIRE(service.start(output.c_str(), 7, error, sizeof error));
  }
  int woken = 0;
  service.crashed(
      SIGSEGV, true, [] { return true; }, [&] { ++woken; });
  CHECK(woken == 0);  // the flusher is the crashing thread: nobody to wake
  CHECK(exists(snapshot(output, 1)));
  CHECK(std::string(et::flight_service::crash_signal_name(SIGSEGV)) == "SIGSEGV");
  ::unlink(snapshot(output, 1).c_str());
}

TEST_CASE("flight service: before its start nothing is served, requested or asked of the host") {
  et::settings config;
  config.flight = true;
  et::flight_service service(config);
  const et::playing_role flusher(et::flusher_role);
  counting_host host;
  CHECK_FALSE(service.ready());
  service.hand_call("early", 5);
  service.request(edgetrace::format::snapshot_trigger::call, "early", 5, 1, 1);
  service.serve(true, host);
  service.finish(host);
  CHECK(host.encoded == 0);
  CHECK(host.tails == 0);
  CHECK(service.wait(5000) == 5000);
}

}  // namespace flight_service_test
