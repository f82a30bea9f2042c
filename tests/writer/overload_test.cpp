// SPDX-License-Identifier: MIT
// Overload (docs/RELIABILITY.md, "Overload"): threads that record faster
// than the flusher drains. EDGETRACE_ON_FULL=wait (the default) loses
// nothing; drop loses records and counts every one. Real traced processes,
// tiny rings so that every run overflows; nothing here is timed except the
// bound on a stuck output.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/machine_load.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/sanitizers.hpp>
#include <support/spawn.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/dump_reader.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <sys/wait.h>
#include <map>
#include <csignal>
#include <string>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace overload_test {

using edgetrace_test::app;
using edgetrace_test::fresh;
using edgetrace_test::run;
using edgetrace_test::tmp;

namespace {

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
  /// The reader's count of the thread's dropped records
  /// (thread_info::dropped(): the totals or the loss records, the larger).
  std::uint64_t counted_dropped = 0;
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
                   named[t], order[t].second, t->dropped()});
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
    // (writer/help.hpp) into the same stream, in order.
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
  REQUIRE_MESSAGE(edgetrace_test::opened(reader, path), reader.error());
  std::map<std::uint64_t, std::uint64_t> arguments;  // thread id -> arguments
  reader.for_each_annotation([&arguments](const edgetrace::reader::annotation& a) { ++arguments[a.thread_id]; });
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

TEST_CASE("overload: after one stall of the output, wait waits again: no record is dropped once it takes data") {
  // The output's reader pauses once for 0.5 s. Before, the threads gave up
  // on a ring slot and dropped every time the read position came back to
  // it, until the end of the run (6.5-23 % of records).
  const std::string fifo = fresh("overload-stall-once.fifo"), copy = fresh("overload-stall-once.etr");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int in = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(in >= 0);
  ::fcntl(in, F_SETFL, 0);  // blocking reads from here on
  const double seconds = edgetrace_test::sanitized_build || edgetrace_test::emulated() ? 3.0 : 2.0;
  std::uint64_t pause_begin = 0, pause_end = 0;
  std::thread reader([&] {
    std::FILE* out = std::fopen(copy.c_str(), "wb");
    std::vector<char> buffer(1 << 20);
    // No writer yet: read() says end of file until the app opens the FIFO.
    ssize_t first = 0;
    for (int waited = 0; first == 0 && waited < 20000; ++waited) {
      first = ::read(in, buffer.data(), buffer.size());
      if (first == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (first > 0) std::fwrite(buffer.data(), 1, static_cast<std::size_t>(first), out);
    const std::uint64_t start = edgetrace_test::monotonic_ns();
    while (first > 0) {
      if (pause_begin == 0 && edgetrace_test::monotonic_ns() - start > 500000000u) {
        pause_begin = edgetrace_test::monotonic_ns();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        pause_end = edgetrace_test::monotonic_ns();
      }
      const ssize_t n = ::read(in, buffer.data(), buffer.size());
      if (n <= 0) break;
      std::fwrite(buffer.data(), 1, static_cast<std::size_t>(n), out);
    }
    std::fclose(out);
  });
  const auto r = run({app, "dense-for", "2", std::to_string(seconds)}, {"EDGETRACE_OUTPUT=" + fifo});
  reader.join();
  ::close(in);
  REQUIRE(r.exit_code == 0);
  REQUIRE(pause_end != 0);
  INFO(r.err);
  edgetrace::reader::dump_reader dump;
  REQUIRE(dump.open(copy));
  std::uint64_t lost = 0, lost_late = 0;
  REQUIRE(dump.read_events([&](const edgetrace::reader::event& e) {
    if (e.kind != edgetrace::reader::event_kind::loss) return;
    lost += e.count;
    // A loss ends within the stall, or just after it (the flusher drains
    // the rings it could not write meanwhile): 100 ms of slack.
    if (static_cast<std::uint64_t>(e.end_ns) > pause_end + 100000000u) lost_late += e.count;
  }));
  CHECK(dump.complete());
  MESSAGE("stall of " << (pause_end - pause_begin) / 1000000 << " ms: " << lost << " records lost");
  CHECK(lost_late == 0);
  if (lost != 0) {
    // Said once when the stall ended, with what stalled and for how long,
    // and at exit with the cause: never advice to use the setting in force.
    CHECK(r.err.find("edgetrace: output '" + fifo + "' (a pipe) took no data for ") != std::string::npos);
    CHECK(r.err.find("while output '" + fifo + "' (a pipe) took no data") != std::string::npos);
    CHECK(r.err.find("set EDGETRACE_ON_FULL=wait") == std::string::npos);
    CHECK(edgetrace_test::line_count(r.err) == 2);
  }
  ::unlink(fifo.c_str());
  ::unlink(copy.c_str());
}

TEST_CASE("overload: the whole process stopped for 1 s (Ctrl-Z, a debugger) is no stall: nothing is dropped") {
  const std::string path = fresh("overload-sigstop.etr");
  edgetrace_test::spawned child = edgetrace_test::spawn({app, "dense-for", "2", "1.5"}, {"EDGETRACE_OUTPUT=" + path});
  REQUIRE(child.pid > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(child.pid, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(child.pid, SIGCONT);
  std::string out;
  CHECK(edgetrace_test::wait_for(child, 60, &out) == 0);
  CHECK(edgetrace_test::read_file(child.err_path).empty());
  const auto figures = dense_threads(path);
  REQUIRE(figures.size() == 2);
  for (const auto& t : figures) {
    CAPTURE(t.name);
    CHECK(t.dropped == 0);
    CHECK(t.lost == 0);
  }
  ::unlink(path.c_str());
}

TEST_CASE("overload: thread pools larger than the core count lose nothing by default (8 to 128 dense threads)") {
  // A regular file that keeps up on average; 64 KiB rings so that every
  // thread overflows again and again. Before: 64 threads dropped 2-31 %,
  // 128 threads 30-60 %: a thread that waited 250 ms for a flusher busy
  // with the other rings gave up.
  const bool slow = edgetrace_test::sanitized_build || edgetrace_test::emulated();
  for (int threads : {8, 32, 64, 128}) {
    CAPTURE(threads);
    const std::string path = fresh("overload-pool.etr");
    const int each = slow ? 20000 : 200000;
    // Under qemu-user, 129 emulated threads on 2 CPUs can keep the flusher
    // off the CPUs for 250 ms (seen with 128 threads: "the flusher made no
    // progress for 250 ms (129 threads recording on 2 CPUs)", 0.004-4.6 %
    // of the records); so can other processes on a busy machine (two busy
    // loops on the 2 cores beside the suite: 29 % once). The bound then
    // drops, as designed, and says why; every record must still be
    // accounted for. A starved run on a busy machine is run once more, and
    // a second one is accepted, saying so. Natively on a quiet machine (and
    // under the sanitizers) nothing may be lost.
    bool starved = false;
    edgetrace_test::process_result r;
    for (int attempt = 1; attempt <= 2; ++attempt) {
      const auto before = edgetrace_test::outside_load::now();
      const auto started = std::chrono::steady_clock::now();
      r = run({app, "dense-threads", std::to_string(threads), std::to_string(each)},
              {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=64"});
      const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double others_cpu_s = edgetrace_test::outside_load::now().since(before);
      starved = r.err.find("the flusher made no progress for 250 ms") != std::string::npos;
      const bool busy = others_cpu_s > 0.25 * wall_s;  // a quarter of a CPU, on average
      if (!starved || edgetrace_test::emulated()) break;
      if (!busy) {
        starved = false;  // a quiet machine: the drops are the code's, and fail below
        break;
      }
      MESSAGE("other processes used " << others_cpu_s << " s of CPU in the " << wall_s << " s run of " << threads
                                      << " threads, which starved the flusher"
                                      << (attempt == 1 ? ": running it once more" : " again: drops accepted, counted"));
    }
    REQUIRE(r.exit_code == 0);
    CAPTURE(r.err);
    CHECK((r.err.empty() || starved));
    const auto figures = dense_threads(path);
    CHECK(figures.size() == static_cast<std::size_t>(threads));
    std::uint64_t written = 0, dropped = 0;
    for (const auto& t : figures) {
      CAPTURE(t.name);
      written += t.written;
      dropped += t.counted_dropped;
      CHECK(t.written == t.spans);
      CHECK(t.spans + t.counted_dropped == static_cast<std::uint64_t>(each));
      if (!starved) CHECK(t.spans == static_cast<std::uint64_t>(each));
    }
    if (starved) {
      MESSAGE("the flusher was starved with " << threads << " threads; " << dropped << " records dropped, counted");
    } else {
      CHECK(dropped == 0);
    }
    CHECK(written + dropped == static_cast<std::uint64_t>(threads) * static_cast<std::uint64_t>(each));
    ::unlink(path.c_str());
  }
}

namespace {
/// Runs "dense-idle THREADS 0.5" under `env`, kills it with SIGKILL
/// `after_ms` after its threads went idle, and returns what each thread
/// issued (from its stdout) by name.
std::map<std::string, std::uint64_t> kill_after_idle(const std::vector<std::string>& env, int after_ms) {
  edgetrace_test::spawned child = edgetrace_test::spawn({app, "dense-idle", "2", "0.5"}, env);
  REQUIRE(child.pid > 0);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (out.find("idle\n") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    if (!edgetrace_test::read_some(child, out, 50)) break;
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  ::kill(child.pid, SIGKILL);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  ::close(child.out);
  REQUIRE(out.find("idle\n") != std::string::npos);
  std::map<std::string, std::uint64_t> issued;
  std::size_t at = 0;
  while ((at = out.find("issued ", at)) != std::string::npos) {
    char name[32] = {};
    unsigned long long n = 0;
    if (std::sscanf(out.c_str() + at, "issued %31s %llu", name, &n) == 2) issued[name] = n;
    at += 7;
  }
  REQUIRE(issued.size() == 2);
  return issued;
}
}  // namespace

TEST_CASE("overload: kill -9 soon after the threads went idle: every record older than two flush periods is in the file") {
  // Before: the last spans (3.4 k-34 k) of a thread that was encoding its
  // own records stayed in its ring until its help window ended (up to 1 s).
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    const std::string path = fresh("overload-idle-kill.etr");
    const auto issued = kill_after_idle({"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=64"}, 200);
    edgetrace::reader::dump_reader reader;
    REQUIRE(reader.open(path));
    REQUIRE(reader.read_events([](const edgetrace::reader::event&) {}));
    for (const auto* t : reader.threads_in_order()) {
      if (t->name.rfind("dense-", 0) != 0) continue;
      CAPTURE(t->name);
      CHECK(t->spans == issued.at(t->name));
      CHECK(t->dropped() == 0);
    }
    ::unlink(path.c_str());
  }
}

TEST_CASE("overload: under drop, kill -9 after the threads went idle: every dropped record is counted in the file") {
  // Before: the loss record waited for the thread's next record, which
  // never came: 24 k-114 k records neither written nor counted.
  const std::string path = fresh("overload-idle-drop.etr");
  const auto issued =
      kill_after_idle({"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=4", "EDGETRACE_ON_FULL=drop"}, 200);
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(path));
  REQUIRE(reader.read_events([](const edgetrace::reader::event&) {}));
  std::uint64_t dropped = 0;
  for (const auto* t : reader.threads_in_order()) {
    if (t->name.rfind("dense-", 0) != 0) continue;
    CAPTURE(t->name);
    CHECK(t->has_stats);
    CHECK(t->spans + t->dropped() == issued.at(t->name));
    dropped += t->dropped();
  }
  CHECK(dropped > 0);  // 170-record rings: the flusher cannot keep up
  ::unlink(path.c_str());
}

TEST_CASE("overload: exit while 128 threads still record: the dump gets its end record within the exit bound") {
  // main returns; 128 detached threads go on recording on 2 cores. Before:
  // exit took 1.4-3 s, the dump had no end record, and the stderr line
  // blamed "a reader that stopped reading" for a healthy regular file.
  const bool slow = edgetrace_test::sanitized_build || edgetrace_test::emulated();
  for (const std::string policy : {"wait", "drop"}) {
    CAPTURE(policy);
    const std::string path = fresh("overload-exit-busy.etr");
    edgetrace_test::spawned child = edgetrace_test::spawn(
        {app, "exit-busy", slow ? "32" : "128"}, {"EDGETRACE_OUTPUT=" + path, std::string("EDGETRACE_ON_FULL=") + policy});
    REQUIRE(child.pid > 0);
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (out.find("exiting\n") == std::string::npos && std::chrono::steady_clock::now() < deadline)
      if (!edgetrace_test::read_some(child, out, 50)) break;
    const auto exiting = std::chrono::steady_clock::now();  // main has returned
    const int code = edgetrace_test::wait_for(child, 60, &out);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - exiting).count();
    const std::string err = edgetrace_test::read_file(child.err_path);
    CAPTURE(err);
    CHECK(code == 0);
    CHECK(out == "exiting\n");
    MESSAGE(policy << ": exit took " << seconds << " s");
    CHECK(seconds < (slow ? 10.0 : 1.2));  // the bound is 1 s: well inside it
    CHECK(err.find("stopped reading") == std::string::npos);
    CHECK(err.find("did not end within") == std::string::npos);
    edgetrace::reader::dump_reader reader;
    REQUIRE(reader.open(path));
    REQUIRE(reader.read_events([](const edgetrace::reader::event&) {}));
    CHECK(reader.complete());  // the end record
    CHECK_FALSE(reader.damaged());
    std::uint64_t threads = 0;
    for (const auto* t : reader.threads_in_order()) {
      if (t->name.rfind("dense-", 0) != 0) continue;
      ++threads;
      CHECK(t->has_stats);
    }
    CHECK(threads == (slow ? 32u : 128u));
    ::unlink(path.c_str());
  }
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

}  // namespace overload_test
