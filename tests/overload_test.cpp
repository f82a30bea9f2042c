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
#include <map>
#include <csignal>
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
  std::uint64_t spans = 0, lost = 0, written = 0, dropped = 0, helped = 0;
  bool has_stats = false;
  /// Spans of each name, and spans that ended before the one decoded
  /// before them on the thread (chunks out of order).
  std::map<std::string, std::uint64_t> named;
  std::uint64_t out_of_order = 0;
};

std::vector<thread_figures> dense_threads(const std::string& path) {
  std::vector<thread_figures> out;
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(path));
  std::map<const edgetrace::reader::thread_info*, std::map<std::string, std::uint64_t>> named;
  std::map<const edgetrace::reader::thread_info*, std::pair<std::uint64_t, std::uint64_t>> order;  // last end, count
  REQUIRE(reader.read_events([&](const edgetrace::reader::event& e) {
    if (e.kind != edgetrace::reader::event_kind::span) return;
    ++named[e.thread][e.site->name];
    auto& last = order[e.thread];
    // A span ends no earlier than the one before it, unless it is nested in
    // it (late_span ends inside dense_span, which is recorded after it).
    if (e.end_tick < last.first && e.site->name == "dense_span") ++last.second;
    if (e.site->name == "dense_span") last.first = e.end_tick;
  }));
  CHECK(reader.complete());
  CHECK_FALSE(reader.damaged());
  for (const auto* t : reader.threads_in_order()) {
    if (t->name.rfind("dense-", 0) != 0) continue;
    out.push_back({t->name, t->spans, t->lost, t->stats_written, t->stats_dropped, t->stats_helped, t->has_stats,
                   named[t], order[t].second});
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
    // A ring this small fills at once: its thread encodes its own records
    // (detail/help.hpp) into the same stream, in order.
    CHECK(t.helped > 0);
    CHECK(t.helped <= t.written);
    CHECK(t.out_of_order == 0);
  }
  ::unlink(path.c_str());
}

TEST_CASE("overload: threads that encode their own records stop at what only the flusher can encode, and lose nothing") {
  // An argument every 1000th span and, half-way, a span site nobody recorded
  // before: a helping thread cannot encode either alone.
  const std::string path = fresh("overload-mixed.etr");
  const auto r = run({app, "dense-mixed", std::to_string(threads), std::to_string(spans_per_thread)},
                     {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=4"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto figures = dense_threads(path);
  REQUIRE(figures.size() == threads);
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(path));
  REQUIRE(reader.read_metadata());
  std::map<std::uint64_t, std::uint64_t> arguments;  // thread id -> arguments
  for (const auto& w : reader.writers())
    for (const auto& a : w.second.annotations) ++arguments[a.thread_id];
  const auto n = static_cast<std::uint64_t>(spans_per_thread);
  for (const auto& t : figures) {
    CAPTURE(t.name);
    CHECK(t.named.at("dense_span") == n);
    CHECK(t.named.at("late_span") == n / 2);
    CHECK(t.written == n + n / 2 + (n + 999) / 1000);  // spans, late spans, arguments
    CHECK(t.dropped == 0);
    CHECK(t.lost == 0);
    CHECK(t.out_of_order == 0);
  }
  std::uint64_t total_arguments = 0;
  for (const auto& a : arguments) total_arguments += a.second;
  CHECK(total_arguments == threads * ((n + 999) / 1000));
  ::unlink(path.c_str());
}

TEST_CASE("overload: SIGTERM on a thread that encodes its own records, with signal flush: a complete dump, no hang") {
  const std::string path = fresh("overload-term.etr");
  const auto started = std::chrono::steady_clock::now();
  const auto r = run({app, "dense-term", std::to_string(threads)},
                     {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=4", "EDGETRACE_SIGNAL_FLUSH=1"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(r.exit_code == 128 + SIGTERM);
  CHECK(seconds < (edgetrace_test::sanitized_build || edgetrace_test::emulated() ? 20.0 : 5.0));
  const auto figures = dense_threads(path);  // complete, undamaged
  REQUIRE(figures.size() == threads);
  for (const auto& t : figures) {
    CAPTURE(t.name);
    CHECK(t.spans > 1000);
    CHECK(t.lost == 0);
    CHECK(t.out_of_order == 0);
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
