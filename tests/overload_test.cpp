// SPDX-License-Identifier: MIT
// Overload (docs/RELIABILITY.md, "Overload"): threads that record faster
// than the flusher drains. EDGETRACE_ON_FULL=wait (the default) loses
// nothing; drop loses records and counts every one. Real traced processes,
// tiny rings so that every run overflows; nothing here is timed except the
// bound on a stuck output.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/sanitizers.hpp>

#include <edgetrace/reader/dump_reader.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using edgetrace_test::run;

namespace {
const std::string app = EDGETRACE_TEST_TRACE_APP;
const std::string tmp = EDGETRACE_TEST_TMPDIR;

std::string fresh(const std::string& name) { return edgetrace_test::fresh_file(tmp + "/" + name); }

/// One producing thread as the dump tells it: records decoded, in-band
/// loss, the thread's own totals.
struct thread_figures {
  std::string name;
  std::uint64_t spans = 0, lost = 0, written = 0, dropped = 0;
  bool has_stats = false;
};

std::vector<thread_figures> dense_threads(const std::string& path) {
  std::vector<thread_figures> out;
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(path));
  REQUIRE(reader.read_events([](const edgetrace::reader::event&) {}));
  CHECK(reader.complete());
  CHECK_FALSE(reader.damaged());
  for (const auto* t : reader.threads_in_order()) {
    if (t->name.rfind("dense-", 0) != 0) continue;
    out.push_back({t->name, t->spans, t->lost, t->stats_written, t->stats_dropped, t->has_stats});
  }
  return out;
}

// Two threads, each as fast as it can: the workload that lost 44 % of its
// spans before the policy existed.
constexpr int threads = 2;
const int spans_per_thread = edgetrace_test::sanitized_build || edgetrace_test::emulated() ? 100000 : 400000;
}  // namespace

TEST_CASE("overload: 2 threads in 4 KiB rings under the default policy (wait): every span written, none dropped") {
  const std::string path = fresh("overload-wait.etr");
  const auto r = run({app, "dense-threads", std::to_string(threads), std::to_string(spans_per_thread)},
                     {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=4"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "issued " + std::to_string(threads * spans_per_thread) + "\n");
  CHECK(r.err.empty());  // no drop line: nothing was dropped
  const auto figures = dense_threads(path);
  REQUIRE(figures.size() == threads);
  for (const auto& t : figures) {
    CAPTURE(t.name);
    CHECK(t.has_stats);
    CHECK(t.spans == static_cast<std::uint64_t>(spans_per_thread));
    CHECK(t.written == static_cast<std::uint64_t>(spans_per_thread));
    CHECK(t.dropped == 0);
    CHECK(t.lost == 0);
  }
  ::unlink(path.c_str());
}

TEST_CASE("overload: the same loop under EDGETRACE_ON_FULL=drop loses records and counts every one") {
  const std::string path = fresh("overload-drop.etr");
  const auto r = run({app, "dense-threads", std::to_string(threads), std::to_string(spans_per_thread)},
                     {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=4", "EDGETRACE_ON_FULL=drop"});
  REQUIRE(r.exit_code == 0);
  const auto figures = dense_threads(path);
  REQUIRE(figures.size() == threads);
  std::uint64_t written = 0, dropped = 0;
  for (const auto& t : figures) {
    CAPTURE(t.name);
    CHECK(t.has_stats);
    CHECK(t.spans == t.written);   // every span the thread says it wrote is in the dump
    CHECK(t.lost == t.dropped);    // every drop is in-band too: where and how many
    CHECK(t.written + t.dropped == static_cast<std::uint64_t>(spans_per_thread));
    written += t.written;
    dropped += t.dropped;
  }
  MESSAGE("drop: " << written << " written, " << dropped << " dropped of " << threads * spans_per_thread);
  CHECK(dropped > 0);  // 170-record rings and two busy threads: the flusher cannot keep up
  // One stderr line at exit with the same count, naming the policy.
  CHECK(edgetrace_test::line_count(r.err) == 1);
  CHECK(r.err.find("edgetrace: " + std::to_string(dropped) + " of " + std::to_string(written + dropped) +
                   " records") != std::string::npos);
  CHECK(r.err.find("EDGETRACE_ON_FULL=drop") != std::string::npos);
  ::unlink(path.c_str());
}

TEST_CASE("overload: wait is bounded: an output that takes no data costs the app 250 ms, not a hang") {
  // A FIFO whose reader opened it and never reads: the flusher blocks in
  // write() once the pipe is full, the rings fill, and the threads stop
  // waiting after 250 ms without progress (then they drop, counted).
  const std::string fifo = fresh("overload-stalled.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run({app, "dense-threads", std::to_string(threads), std::to_string(spans_per_thread)},
                     {"EDGETRACE_OUTPUT=" + fifo, "EDGETRACE_BUFFER_KB=4"});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(reader);
  MESSAGE("wait against a stalled FIFO: the run took " << wall << " s");
  CHECK(r.exit_code == 0);
  CHECK(r.out == "issued " + std::to_string(threads * spans_per_thread) + "\n");
  // 0.25 s of waiting, ~1 s of the bounded exit wait, the loops themselves.
  CHECK(wall < (edgetrace_test::sanitized_build || edgetrace_test::emulated() ? 10.0 : 4.0));
  CHECK(r.err.find("took no data") != std::string::npos);
  ::unlink(fifo.c_str());
}

TEST_CASE("overload: a misspelt policy gets one line and the default") {
  const std::string path = fresh("overload-bad.etr");
  const auto r = run({app, "dense-threads", "1", "1000"}, {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_ON_FULL=block"});
  CHECK(r.exit_code == 0);
  CHECK(edgetrace_test::line_count(r.err) == 1);
  CHECK(r.err.find("EDGETRACE_ON_FULL='block' is not one of wait, drop; using the default wait") != std::string::npos);
  const auto figures = dense_threads(path);
  REQUIRE(figures.size() == 1);
  CHECK(figures[0].written == 1000);
  CHECK(figures[0].dropped == 0);
  ::unlink(path.c_str());
}
