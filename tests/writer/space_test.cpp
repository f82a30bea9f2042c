// SPDX-License-Identifier: MIT
// The dump never fills the disk: EDGETRACE_MAX_MB bounds the dump, and
// EDGETRACE_MIN_FREE_MB (by default 5 % of the file system, at most
// 512 MiB) keeps its file system from filling up (writer/output.hpp).
// Each case is a real process (trace_app "fill") read back with the real
// reader. docs/RELIABILITY.md, "The dump never fills the disk".
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/small_fs.hpp>
#include <support/sanitizers.hpp>
#include <support/spawn.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/writer/output.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace space_test {

using edgetrace_test::app;
using edgetrace_test::contains;
using edgetrace_test::fresh;
using edgetrace_test::line_count;
using edgetrace_test::run;
using edgetrace_test::small_tmpfs;
using edgetrace_test::tmpfs_mountable;

namespace {

std::uint64_t file_size(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

/// What a dump that stopped for its room must show: it reads whole and
/// complete, one recording change says recording went off, for `reason`,
/// and never came back, and every thread's records are accounted for. The
/// records a thread recorded before the stop reached it are written while
/// they fit above the bound; a slow flusher (a sanitizer, a busy machine)
/// can find more of them in a ring than fit, and those are dropped and
/// counted: in the thread stats, and in the one more stderr line of `err`
/// (docs/RELIABILITY.md, "The dump never fills the disk"). So `err` holds
/// 1 line (the stop), or 2 with the drops.
struct stopped_dump {
  std::uint64_t fill_spans = 0;
};
stopped_dump check_stopped(const std::string& path, edgetrace::format::capture_reason reason, const std::string& err) {
  stopped_dump out;
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(path));
  REQUIRE(reader.read_events([&](const edgetrace::reader::event& e) {
    if (e.kind == edgetrace::reader::event_kind::span && e.site->name == "fill") ++out.fill_spans;
  }));
  CHECK(reader.complete());
  CHECK_FALSE(reader.damaged());
  std::uint64_t dropped = 0;
  for (const auto* t : reader.threads_in_order()) {
    CHECK(t->has_stats);
    dropped += t->stats_dropped;
  }
  if (dropped == 0) {
    CHECK(line_count(err) == 1);
  } else {
    CHECK(line_count(err) == 2);
    CHECK(contains(err, std::to_string(dropped) + " records recorded before the stop near the dump's bound reached "
                                                  "their threads did not fit below it and were dropped"));
  }
  REQUIRE(reader.writers().size() == 1);
  const auto& recording = reader.writers().begin()->second.recording;
  REQUIRE(recording.size() == 1);
  CHECK_FALSE(recording.front().on);
  CHECK(recording.front().reason == reason);
  return out;
}

/// trace_app "fill BATCHES SPANS" into `dump` with `settings` besides
/// EDGETRACE_OUTPUT; it must exit 0 (its stderr is captured for any failure).
edgetrace_test::process_result fill(const std::string& dump, const std::vector<std::string>& settings,
                                    const char* batches = "200", const char* spans = "10000", const char* idle_ms = "0") {
  std::vector<std::string> env{"EDGETRACE_OUTPUT=" + dump};
  env.insert(env.end(), settings.begin(), settings.end());
  auto r = run({app, "fill", batches, spans, idle_ms}, env);
  INFO("stderr: ", r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("space: EDGETRACE_MAX_MB: recording stops near the bound, the dump ends complete below it, one line") {
  const std::string dump = fresh("max-mb.etr");
  // ~6 MiB of spans offered (3 bytes each), 1 MiB allowed.
  const auto r = fill(dump, {"EDGETRACE_MAX_MB=1", "EDGETRACE_MIN_FREE_MB=0"});
  CAPTURE(r.err);
  CHECK(r.out == "issued=2000000\n");
  CHECK(contains(r.err, "of EDGETRACE_MAX_MB=1; recording stopped for good"));
  CHECK(file_size(dump) <= (1u << 20));
  CHECK(file_size(dump) > (1u << 20) / 2);
  const stopped_dump d = check_stopped(dump, edgetrace::format::capture_reason::max_size, r.err);
  CHECK(d.fill_spans > 100000);
  CHECK(d.fill_spans < 2000000);
  ::unlink(dump.c_str());
}

TEST_CASE("space: after the stop the dump does not grow: an app that idles on ends complete at its size") {
  // The once-a-second calibration pair went on after the stop: 40 B a
  // second until the bound, and a clean exit then read "killed or crashed?".
  const std::string dump = fresh("max-mb-idle.etr");
  const auto r = fill(dump, {"EDGETRACE_MAX_MB=1", "EDGETRACE_MIN_FREE_MB=0"}, "200", "10000", "2500");
  CAPTURE(r.err);
  CHECK(contains(r.out, "idle_growth=0\n"));
  CHECK(file_size(dump) <= (1u << 20));
  check_stopped(dump, edgetrace::format::capture_reason::max_size, r.err);
  ::unlink(dump.c_str());
}

TEST_CASE("space: busy threads under a small bound: every run ends complete below it, the rest dropped and counted") {
  // 4 threads as fast as they can, 1 MiB rings, a 1 MiB bound: before,
  // the backlog written after the stop passed the margin and 13 runs in 16
  // (1-2 MiB) ended without their end record, tracing off.
  const bool slow = edgetrace_test::sanitized_build || edgetrace_test::emulated();
  const int each = slow ? 100000 : 1000000;
  for (int run_number = 0; run_number < 6; ++run_number) {
    CAPTURE(run_number);
    const std::string dump = fresh("max-mb-dense.etr");
    const auto r = run({app, "dense-threads", "4", std::to_string(each)},
                       {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_MAX_MB=1", "EDGETRACE_MIN_FREE_MB=0"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_FALSE(contains(r.err, "tracing is off"));
    CHECK(contains(r.err, "recording stopped for good"));
    CHECK(file_size(dump) <= (1u << 20));
    edgetrace::reader::dump_reader reader;
    REQUIRE(reader.open(dump));
    REQUIRE(reader.read_events([](const edgetrace::reader::event&) {}));
    CHECK(reader.complete());
    CHECK_FALSE(reader.damaged());
    std::uint64_t spans = 0, dropped = 0;
    int dense = 0;
    for (const auto* t : reader.threads_in_order()) {
      if (t->name.rfind("dense-", 0) != 0) continue;
      ++dense;
      CAPTURE(t->name);
      CHECK(t->spans == t->stats_written);  // every span written is read
      spans += t->spans;
      dropped += t->stats_dropped;
    }
    CHECK(dense == 4);
    // Recorded until the stop reached each thread, the rest not at all: what
    // was recorded is either in the file or counted as dropped.
    CHECK(spans > 0);
    CHECK(spans + dropped <= 4u * static_cast<std::uint64_t>(each));
    if (dropped != 0) CHECK(contains(r.err, "did not fit below it and were dropped, counted in the dump"));
    ::unlink(dump.c_str());
  }
}

TEST_CASE("space: the guard's verdicts: write, stop recording near a bound, refuse a write past it") {
  using edgetrace::detail::space_guard;
  edgetrace::detail::settings config;
  config.max_mb = 1;
  config.min_free_auto = false;  // the floor needs a file system: the cases above and below
  char why[512];
  SUBCASE("EDGETRACE_MAX_MB=1: the margin is an eighth, 128 KiB") {
    space_guard guard;
    guard.configure(config, true);
    CHECK(guard.check(-1, 0, 600u << 10, 1, why, sizeof why) == space_guard::verdict::write);
    CHECK(guard.check(-1, 600u << 10, 290u << 10, 2, why, sizeof why) == space_guard::verdict::write);  // 890 KiB
    CHECK(guard.check(-1, 890u << 10, 20u << 10, 3, why, sizeof why) == space_guard::verdict::stop_recording);
    CHECK(guard.reason() == edgetrace::format::capture_reason::max_size);
    CHECK(std::string(why).find("reached 910 KiB of EDGETRACE_MAX_MB=1; recording stopped for good") !=
          std::string::npos);
    CHECK(guard.check(-1, 910u << 10, 100u << 10, 4, why, sizeof why) == space_guard::verdict::write);  // once
    CHECK(guard.check(-1, 1010u << 10, 15u << 10, 5, why, sizeof why) == space_guard::verdict::refuse);
    CHECK(std::string(why) == "the dump would pass EDGETRACE_MAX_MB=1");
    CHECK(guard.check(-1, 1010u << 10, 15u << 10, 6, why, sizeof why) == space_guard::verdict::write);  // off now
  }
  SUBCASE("one write past the bound from far below it is refused, not stopped") {
    space_guard guard;
    guard.configure(config, true);
    CHECK(guard.check(-1, 0, 2u << 20, 1, why, sizeof why) == space_guard::verdict::refuse);
  }
  SUBCASE("not guarded: a pipe or a device, and flight mode") {
    space_guard pipe;
    pipe.configure(config, false);
    CHECK(pipe.check(-1, 0, 2u << 20, 1, why, sizeof why) == space_guard::verdict::write);
    config.flight = true;
    space_guard flight;
    flight.configure(config, true);
    CHECK(flight.check(-1, 0, 2u << 20, 1, why, sizeof why) == space_guard::verdict::write);
  }
  SUBCASE("margins and the automatic floor") {
    CHECK(space_guard::margin(1u << 20) == (128u << 10));
    CHECK(space_guard::margin(100u << 10) == (64u << 10));                          // at least 64 KiB
    CHECK(space_guard::margin(std::uint64_t{8} << 30) == (std::uint64_t{64} << 20));  // at most 64 MiB
    CHECK(space_guard::automatic_floor(std::uint64_t{2} << 30) == (std::uint64_t{2} << 30) / 20);
    CHECK(space_guard::automatic_floor(std::uint64_t{64} << 30) == (std::uint64_t{512} << 20));
  }
}

TEST_CASE("space: EDGETRACE_MIN_FREE_MB on a 4 MiB file system: recording stops before the floor, which is kept" *
          doctest::skip(!tmpfs_mountable())) {
  const small_tmpfs small("min-free", "4m");
  REQUIRE_MESSAGE(small.error().empty(), small.error());
  const std::string dump = small.path() + "/run.etr";
  const auto r = fill(dump, {"EDGETRACE_MIN_FREE_MB=2"});
  CAPTURE(r.err);
  CHECK(contains(r.err, "near EDGETRACE_MIN_FREE_MB=2; recording stopped for good"));
  CHECK(small.free_bytes() >= (2u << 20));
  const stopped_dump d = check_stopped(dump, edgetrace::format::capture_reason::min_free, r.err);
  CHECK(d.fill_spans > 100000);
}

TEST_CASE("space: by default 5 % of a small file system stays free; EDGETRACE_MIN_FREE_MB=0 turns the floor off" *
          doctest::skip(!tmpfs_mountable())) {
  SUBCASE("default") {
    const small_tmpfs small("default-floor", "2m");
    REQUIRE_MESSAGE(small.error().empty(), small.error());
    const std::string dump = small.path() + "/run.etr";
    const auto r = fill(dump, {});
    CAPTURE(r.err);
    CHECK(contains(r.err, "that EDGETRACE_MIN_FREE_MB keeps by default (5 % of it, at most 512 MiB)"));
    CHECK(small.free_bytes() >= (2u << 20) / 20);
    check_stopped(dump, edgetrace::format::capture_reason::min_free, r.err);
  }
  SUBCASE("off") {
    const small_tmpfs small("no-floor", "1m");
    REQUIRE_MESSAGE(small.error().empty(), small.error());
    const std::string dump = small.path() + "/run.etr";
    CHECK(contains(fill(dump, {"EDGETRACE_MIN_FREE_MB=0"}).err, "No space left on device; tracing is off"));
  }
}

TEST_CASE("space: bad EDGETRACE_MAX_MB and EDGETRACE_MIN_FREE_MB values: one line each, what holds instead") {
  const std::string dump = fresh("space-bad.etr");
  const auto r = fill(dump, {"EDGETRACE_MAX_MB=0", "EDGETRACE_MIN_FREE_MB=lots"}, "2", "1000");
  CAPTURE(r.err);
  CHECK(line_count(r.err) == 2);
  CHECK(contains(r.err, "EDGETRACE_MAX_MB='0' is not a whole number of MiB in 1..1048576; the dump has no size limit"));
  CHECK(contains(r.err, "EDGETRACE_MIN_FREE_MB='lots' is not a whole number of MiB in 0..1048576; keeping the "
                        "default: 5 % of the dump's file system, at most 512 MiB"));
  ::unlink(dump.c_str());
}

}  // namespace space_test
