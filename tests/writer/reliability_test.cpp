// SPDX-License-Identifier: MIT
// "Never lose data silently, never hurt the traced app": each test
// here proves one promise of docs/RELIABILITY.md, through real processes
// (tests/support/trace_app.cpp, tests/dso/dso_app.cpp) and the real reader.
//
// EDGETRACE_LONG_TESTS=1 runs the long variants: 10 s stress instead of 2 s,
// 10 kills instead of 3, 1000 forks instead of 200.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/small_fs.hpp>
#include <support/spawn.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/dump_reader.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

namespace reliability_test {

using edgetrace_test::app;
using edgetrace_test::cli;
using edgetrace_test::fresh;
using edgetrace_test::line_count;
using edgetrace_test::load_dump;
using edgetrace_test::run;
using edgetrace_test::tmp;
using edgetrace_test::writer_count;

namespace {

/// "threads=N\n" as a traced program prints it, N counting the app's own
/// threads and flushers (plus TSan's thread under the tsan preset).
std::string threads_line(int app_threads) {
  return "threads=" + std::to_string(app_threads + edgetrace_test::sanitizer_threads) + "\n";
}

bool long_tests() {
  const char* v = std::getenv("EDGETRACE_LONG_TESTS");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

using edgetrace_test::contains;

/// Removes tmp/<prefix>* (child dumps of fork tests).
int remove_with_prefix(const std::string& prefix) {
  int removed = 0;
  if (DIR* d = opendir(tmp.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0) removed += ::unlink((tmp + "/" + name).c_str()) == 0;
    }
    closedir(d);
  }
  return removed;
}

std::vector<std::string> files_with_prefix(const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(tmp.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0) out.push_back(tmp + "/" + name);
    }
    closedir(d);
  }
  return out;
}
}  // namespace

// ------------------------------------------------------------ accounting

TEST_CASE("reliability: 8 threads x random bursts, small rings: written + dropped == issued, per thread") {
  const double seconds = long_tests() ? 10.0 : 2.0;
  const std::string dump_path = fresh("stress.etr");
  const auto r = run({app, "stress", std::to_string(seconds), "8"},
                     {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_BUFFER_KB=4", "EDGETRACE_ON_FULL=drop"});
  REQUIRE(r.exit_code == 0);
  std::map<std::string, std::uint64_t> issued;
  std::istringstream lines(r.out);
  std::string name;
  std::uint64_t count = 0;
  while (lines >> name >> count) issued[name] = count;
  REQUIRE(issued.size() == 8);

  // Streaming check (the dump can hold tens of millions of spans).
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(dump_path));
  struct per_thread {
    std::uint64_t spans = 0, lost = 0, bad = 0, out_of_order = 0;
    std::int64_t last_end = INT64_MIN;
  };
  std::map<const edgetrace::reader::thread_info*, per_thread> seen;
  REQUIRE(reader.read_events([&](const edgetrace::reader::event& e) {
    per_thread& t = seen[e.thread];
    if (e.kind == edgetrace::reader::event_kind::loss) {
      t.lost += e.count;
      return;
    }
    if (e.kind != edgetrace::reader::event_kind::span) return;
    ++t.spans;
    if (e.site == nullptr || (e.site->name != "stress_outer" && e.site->name != "stress_inner") ||
        e.begin_ns > e.end_ns)
      ++t.bad;
    if (e.end_ns < t.last_end) ++t.out_of_order;
    t.last_end = e.end_ns;
  }));
  CHECK(reader.complete());
  CHECK_FALSE(reader.damaged());
  std::uint64_t total_issued = 0, total_dropped = 0, total_written = 0;
  for (const auto* info : reader.threads_in_order()) {
    if (info->name.rfind("stress-", 0) != 0) continue;
    CAPTURE(info->name);
    REQUIRE(issued.count(info->name) == 1);
    const per_thread& t = seen[info];
    CHECK(info->has_stats);
    CHECK(t.bad == 0);
    CHECK(t.out_of_order == 0);
    CHECK(t.spans == info->stats_written);
    CHECK(t.lost == info->stats_dropped);  // every drop is also in-band: where and how many
    CHECK(info->stats_written + info->stats_dropped == issued[info->name]);
    total_issued += issued[info->name];
    total_dropped += info->stats_dropped;
    total_written += info->stats_written;
    issued.erase(info->name);
  }
  CHECK(issued.empty());  // every thread is in the dump
  CHECK(total_dropped > 0);  // the rings are small enough to overflow
  // stderr: only the exit line that says so, with the same count.
  CHECK(line_count(r.err) == 1);
  CHECK(contains(r.err, "edgetrace: " + std::to_string(total_dropped) + " of " +
                            std::to_string(total_dropped + total_written) + " records"));
  MESSAGE("stress " << seconds << " s, 8 threads, 4 KiB rings: issued " << total_issued << ", written "
                    << total_written << ", dropped " << total_dropped);

  // The loss is visible in every output, with where (thread) and how much.
  const auto info = run({cli, "info", dump_path});
  CHECK(info.exit_code == 0);
  CHECK(contains(info.out, std::to_string(total_dropped)));
  CHECK(contains(info.out, "stress-0"));
  const std::string json_path = fresh("stress.json");
  const auto json = run({cli, "json", dump_path, "-o", json_path});
  CHECK(json.exit_code == 0);
  const std::string json_text = edgetrace_test::read_file(json_path);
  std::uint64_t json_lost = 0;  // loss markers: instants "N records lost" with args.lost = N, on their thread
  const std::string key = "\"args\":{\"lost\":";
  for (std::size_t at = json_text.find(key); at != std::string::npos; at = json_text.find(key, at + 1))
    json_lost += std::strtoull(json_text.c_str() + at + key.size(), nullptr, 10);
  CHECK(json_lost == total_dropped);
  ::unlink(json_path.c_str());
  ::unlink(dump_path.c_str());
}

// The summary must say that spans are missing (how many, on which threads).
TEST_CASE("reliability: edgetrace summary reports dropped spans") {
  std::string dump_path;
  const std::uint64_t dropped = edgetrace_test::lossy_stress_run("summary-loss.etr", dump_path);
  const auto summary = run({cli, "summary", dump_path});
  CHECK(summary.exit_code == 0);
  CHECK(contains(summary.out + summary.err, "dropped"));
  CHECK(contains(summary.out + summary.err, std::to_string(dropped)));
  ::unlink(dump_path.c_str());
}

// ------------------------------------------------------------ crash and kill

TEST_CASE("reliability: kill -9 at a random moment keeps every span that ended a flush period before") {
  const int rounds = long_tests() ? 10 : 3;
  constexpr std::uint64_t flush_ms = 10;    // the default EDGETRACE_FLUSH_MS
  constexpr std::uint64_t margin_ms = 100;  // scheduling slack on a loaded 2-core machine
  std::mt19937 random(12345);
  std::vector<double> lost_ms, lost_spans;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    const std::string dump_path = fresh("kill9.etr");
    auto child = edgetrace_test::spawn({app, "kill-feed"}, {"EDGETRACE_OUTPUT=" + dump_path});
    REQUIRE(child.pid > 0);
    std::string feed;
    const auto start = edgetrace_test::monotonic_ns();
    const std::uint64_t run_ms = 200 + random() % 600;
    // The kill comes at a random moment past the first 100 spans: on a
    // busy machine the app may take longer than run_ms to complete them
    // (36 in 200+ ms once, beside two compilers on 2 cores), so it waits
    // for them too, up to 20 s.
    while (edgetrace_test::monotonic_ns() - start < run_ms * 1000000u ||
           (feed.size() / 16 <= 100 && edgetrace_test::monotonic_ns() - start < 20000000000u))
      edgetrace_test::read_some(child, feed, 5);
    const std::uint64_t kill_ns = edgetrace_test::monotonic_ns();
    ::kill(child.pid, SIGKILL);
    const int code = edgetrace_test::wait_for(child, 10, &feed);
    CHECK(code == 128 + SIGKILL);
    ::unlink(child.err_path.c_str());
    // (seq, ns) pairs of every span the app completed before the kill.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> completed;
    for (std::size_t i = 0; i + 16 <= feed.size(); i += 16) {
      std::uint64_t entry[2];
      std::memcpy(entry, feed.data() + i, 16);
      completed.emplace_back(entry[0], entry[1]);
    }
    REQUIRE(completed.size() > 100);
    const auto dump = load_dump(dump_path);
    REQUIRE(dump.opened);
    CHECK_FALSE(dump.complete);  // no end chunk: the reader says "incomplete"
    std::set<std::uint64_t> in_dump;
    for (const auto& e : dump.events)
      if (e.name == "feed_seq") in_dump.insert(static_cast<std::uint64_t>(e.value));
    std::uint64_t missing_old = 0, last_ns_in_dump = 0, missing = 0;
    for (const auto& c : completed) {
      const bool present = in_dump.count(c.first) != 0;
      if (present) last_ns_in_dump = std::max(last_ns_in_dump, c.second);
      missing += !present;
      if (!present && c.second + (flush_ms + margin_ms) * 1000000u <= kill_ns) ++missing_old;
    }
    CHECK(missing_old == 0);
    // Every span in the dump before the last one present is there too (a prefix).
    CHECK(in_dump.size() == *in_dump.rbegin() - *in_dump.begin() + 1);
    lost_ms.push_back(static_cast<double>(kill_ns - last_ns_in_dump) / 1e6);
    lost_spans.push_back(static_cast<double>(missing));
    // The converter says what happened and still converts.
    const auto info = run({cli, "info", dump_path});
    CHECK(contains(info.out + info.err, "incomplete"));
    const std::string json_path = fresh("kill9.json");
    const auto json = run({cli, "json", dump_path, "-o", json_path});
    CHECK(json.exit_code == 3);  // written, but incomplete
    CHECK(edgetrace_test::file_exists(json_path));
    ::unlink(json_path.c_str());
    ::unlink(dump_path.c_str());
  }
  std::sort(lost_ms.begin(), lost_ms.end());
  std::sort(lost_spans.begin(), lost_spans.end());
  MESSAGE("kill -9 at default settings (" << rounds << " kills): data lost = last " << lost_ms[lost_ms.size() / 2]
                                          << " ms median (max " << lost_ms.back() << " ms), "
                                          << lost_spans[lost_spans.size() / 2] << " spans median (max "
                                          << lost_spans.back() << ")");
}

TEST_CASE("reliability: SIGSEGV and abort() keep everything older than a flush period") {
  for (const char* how : {"segv", "abort"}) {
    CAPTURE(how);
    const std::string dump_path = fresh(std::string("crash-") + how + ".etr");
    const auto r = run({app, "crash", how}, {"EDGETRACE_OUTPUT=" + dump_path});
    CHECK(r.exit_code != 0);  // died (by the signal, or through a sanitizer's handler)
    const auto dump = load_dump(dump_path);
    REQUIRE(dump.opened);
    CHECK_FALSE(dump.complete);
    CHECK(dump.named("app_span").size() == 1000);  // ended 100 ms before the crash
    CHECK(dump.named("app_counter").size() == 1000);
    const auto info = run({cli, "info", dump_path});
    CHECK(contains(info.out + info.err, "incomplete"));
    ::unlink(dump_path.c_str());
  }
}

TEST_CASE("reliability: EDGETRACE_SIGNAL_FLUSH=1 completes the dump on SIGINT; without it, a prefix") {
  const std::string dump_path = fresh("sigint.etr");
  auto r = run({app, "signal-int"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_SIGNAL_FLUSH=1"});
  CHECK(r.exit_code == 128 + SIGINT);  // the default action still happens
  auto dump = edgetrace_test::whole_dump(dump_path);
  CHECK(dump.named("app_span").size() == 1000);
  r = run({app, "signal-int"}, {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 128 + SIGINT);
  dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK_FALSE(dump.complete);
  ::unlink(dump_path.c_str());
}

// ------------------------------------------------------------ threads

TEST_CASE("reliability: 10,000 short-lived threads: every span kept, memory back to a bound, no leak") {
  const int thread_total = edgetrace_test::thread_sanitized_build ? 2000 : 10000;  // TSan keeps per-thread state: fewer
  const std::string dump_path = fresh("many-threads.etr");
  auto child = edgetrace_test::spawn({app, "many-threads", std::to_string(thread_total), "3"},
                                     {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_BUFFER_KB=64",
                                      "MALLOC_ARENA_MAX=1"});  // glibc arenas would blur VmSize
  std::string out;
  const int code = edgetrace_test::wait_for(child, 300, &out);
  const std::string err = edgetrace_test::read_file(child.err_path);
  ::unlink(child.err_path.c_str());
  CAPTURE(out);
  CAPTURE(err);
  REQUIRE(code == 0);  // under the asan preset this includes LeakSanitizer's verdict
  CHECK(err.empty());
  long threads = 0, rss_before = 0, rss_after = 0, vm_before = 0, vm_after = 0, live = 0;
  REQUIRE(std::sscanf(out.c_str(),
                      "threads=%ld rss_before_kb=%ld rss_after_kb=%ld vm_before_kb=%ld vm_after_kb=%ld live_threads=%ld",
                      &threads, &rss_before, &rss_after, &vm_before, &vm_after, &live) == 6);
  CHECK(threads == thread_total + 64);
  CHECK(live == 2 + edgetrace_test::sanitizer_threads);  // main + flusher
  // Rings are recycled (2 kept) or unmapped. Leaked rings would cost 68 KiB
  // each: 680 MB of VmSize for 10,000 threads (MALLOC_ARENA_MAX=1 keeps
  // glibc's 64 MiB per-thread arenas out of the figure).
  if (!edgetrace_test::sanitized_build) {  // sanitizer allocators keep freed memory (quarantine)
    CHECK(rss_after - rss_before < 8 * 1024);
    CHECK(vm_after - vm_before < 16 * 1024);
  }
  MESSAGE(threads << " threads x 3 spans, 64 KiB rings: RSS " << rss_before << " -> " << rss_after << " kB, VmSize "
                  << vm_before << " -> " << vm_after << " kB");
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(dump_path));
  std::uint64_t spans = 0;
  REQUIRE(reader.read_events([&](const edgetrace::reader::event& e) {
    spans += e.kind == edgetrace::reader::event_kind::span && e.site != nullptr && e.site->name == "short_thread_span";
  }));
  CHECK(reader.complete());
  CHECK_FALSE(reader.damaged());
  CHECK(spans == static_cast<std::uint64_t>(threads) * 3);
  std::size_t traced_threads = 0;
  for (const auto* t : reader.threads_in_order()) {
    traced_threads += t->spans == 3;
    CHECK(t->dropped() == 0);
  }
  CHECK(traced_threads == static_cast<std::size_t>(threads));
  ::unlink(dump_path.c_str());
}

// ------------------------------------------------------------ fork

TEST_CASE("reliability: fork + exec of a traced program while threads trace: both dumps whole") {
  const std::string dump_path = fresh("fork-exec.etr");
  const std::string child_path = fresh("fork-exec-child.etr");
  auto child = edgetrace_test::spawn({app, "fork-exec", child_path}, {"EDGETRACE_OUTPUT=" + dump_path});
  std::string out;
  const int code = edgetrace_test::wait_for(child, 60, &out);
  ::unlink(child.err_path.c_str());
  REQUIRE(code == 0);  // -2 would be a deadlock (timeout)
  CHECK(out == "child=42,42,42\n");  // the exec'd program keeps its exit code
  const auto parent = load_dump(dump_path);
  REQUIRE(parent.opened);
  CHECK(parent.complete);
  CHECK_FALSE(parent.damaged);
  CHECK(parent.named("app_span").size() >= 200);
  CHECK(writer_count(dump_path) == 1);
  const auto exec_child = load_dump(child_path);
  REQUIRE(exec_child.opened);
  CHECK(exec_child.complete);
  CHECK_FALSE(exec_child.damaged);
  CHECK(exec_child.named("app_span").size() == 10);  // "exit-code" mode: 10 spans
  ::unlink(dump_path.c_str());
  ::unlink(child_path.c_str());
}

// An exec'd program inherits the environment, so by default it gets the
// parent's EDGETRACE_OUTPUT. The parent holds the file's lock as its first
// writer, so the child appends as a second writer instead of truncating.
TEST_CASE("reliability: an exec'd child inheriting EDGETRACE_OUTPUT keeps the parent's dump") {
  const std::string dump_path = fresh("fork-exec-same.etr");
  auto child = edgetrace_test::spawn({app, "fork-exec", dump_path}, {"EDGETRACE_OUTPUT=" + dump_path});
  std::string out;
  const int code = edgetrace_test::wait_for(child, 60, &out);
  ::unlink(child.err_path.c_str());
  REQUIRE(code == 0);
  CHECK(out == "child=42,42,42\n");
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK_FALSE(dump.damaged);
  CHECK(dump.named("app_span").size() >= 200 + 30);  // the parent's, and the three children's 10 each
  ::unlink(dump_path.c_str());
}

TEST_CASE("reliability: many forks under load never deadlock (EDGETRACE_FORK=off)") {
  const int forks = long_tests() ? 1000 : 200;
  const std::string dump_path = fresh("fork-storm.etr");
  auto child = edgetrace_test::spawn({app, "fork-storm", std::to_string(forks)}, {"EDGETRACE_OUTPUT=" + dump_path});
  std::string out;
  const int code = edgetrace_test::wait_for(child, 240, &out);
  ::unlink(child.err_path.c_str());
  REQUIRE(code == 0);  // -2: timed out, i.e. a deadlock
  CHECK(out == "forks=" + std::to_string(forks) + " ok=" + std::to_string(forks) + "\n");
  const auto dump = edgetrace_test::whole_dump(dump_path);
  CHECK(dump.named("storm_child_span").empty());
  CHECK(dump.named("app_span").size() >= static_cast<std::size_t>(forks) * 10);
  ::unlink(dump_path.c_str());
}

// Skipped in sanitizer builds: the child allocates after fork (see sanitized_build).
TEST_CASE("reliability: many forks under load with EDGETRACE_FORK=follow: one whole dump per child" *
          doctest::skip(edgetrace_test::sanitized_build)) {
  const int forks = long_tests() ? 200 : 40;
  remove_with_prefix("storm-follow.");
  const std::string dump_path = fresh("storm-follow.etr");
  auto child = edgetrace_test::spawn({app, "fork-storm", std::to_string(forks)},
                                     {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_FORK=follow"});
  std::string out;
  const int code = edgetrace_test::wait_for(child, 240, &out);
  ::unlink(child.err_path.c_str());
  REQUIRE(code == 0);
  CHECK(out == "forks=" + std::to_string(forks) + " ok=" + std::to_string(forks) + "\n");
  const auto parent = load_dump(dump_path);
  CHECK(parent.complete);
  CHECK_FALSE(parent.damaged);
  CHECK(parent.named("storm_child_span").empty());
  ::unlink(dump_path.c_str());
  const auto children = files_with_prefix("storm-follow.");
  CHECK(children.size() == static_cast<std::size_t>(forks));
  int whole = 0;
  for (const auto& path : children) {
    const auto dump = load_dump(path);
    whole += dump.complete && !dump.damaged && dump.named("storm_child_span").size() == 50 &&
             dump.named("app_span").empty();
    ::unlink(path.c_str());
  }
  CHECK(whole == forks);
}

// ------------------------------------------------------------ output failures

namespace {
void check_one_line_and_exit_code(const edgetrace_test::process_result& r, const std::string& expect) {
  CAPTURE(r.err);
  CHECK(r.exit_code == 42);  // the app's own exit code
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.rfind("edgetrace: ", 0) == 0);
  CHECK(contains(r.err, "tracing is off"));
  CHECK(contains(r.err, expect));
}
}  // namespace

TEST_CASE("reliability: unwritable outputs: one stderr line, tracing off, the app's exit code kept") {
  // A missing directory: lifecycle_test ("an unwritable EDGETRACE_OUTPUT ...").
  SUBCASE("the path is a directory") {
    check_one_line_and_exit_code(run({app, "busy-exit-code"}, {"EDGETRACE_OUTPUT=" + tmp}), "Is a directory");
  }
  SUBCASE("a parent is a regular file") {
    const std::string file = fresh("plain-file");
    { std::FILE* f = std::fopen(file.c_str(), "w"); std::fclose(f); }
    check_one_line_and_exit_code(run({app, "busy-exit-code"}, {"EDGETRACE_OUTPUT=" + file + "/run.etr"}),
                                 "Not a directory");
    ::unlink(file.c_str());
  }
  SUBCASE("a read-only file system") {
    check_one_line_and_exit_code(run({app, "busy-exit-code"}, {"EDGETRACE_OUTPUT=/proc/edgetrace-test.etr"}),
                                 "cannot open EDGETRACE_OUTPUT");
  }
  SUBCASE("a full device from the first write (/dev/full)") {
    check_one_line_and_exit_code(run({app, "busy-exit-code"}, {"EDGETRACE_OUTPUT=/dev/full"}),
                                 "No space left on device");
  }
}

// Skipped where no tmpfs can be mounted (not root, or no CAP_SYS_ADMIN);
// lifecycle_test covers disk full with RLIMIT_FSIZE everywhere. The dump's
// free-space floor is off (EDGETRACE_MIN_FREE_MB=0): this is the full disk
// itself; space_test has the floor that keeps it from coming.
TEST_CASE("reliability: disk full mid-run (a 256 KiB tmpfs): one line, the app finishes, the prefix reads" *
          doctest::skip(!edgetrace_test::tmpfs_mountable())) {
  const edgetrace_test::small_tmpfs small("small-tmpfs", "256k");
  REQUIRE_MESSAGE(small.error().empty(), small.error());
  const std::string dump_path = small.path() + "/run.etr";
  const auto r = run({app, "busy-exit-code"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_MIN_FREE_MB=0"});
  check_one_line_and_exit_code(r, "No space left on device");
  CHECK(r.out == "active=0\n");
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.named("app_span").size() > 0);  // what fit is readable
  CHECK_FALSE(dump.complete);
}

// ------------------------------------------------------------ shared objects

TEST_CASE("reliability: app + linked DSO + dlopen'd DSO: one writer, one flusher, spans from all three") {
  const std::string dump_path = fresh("dso.etr");
  const auto r = run({EDGETRACE_TEST_DSO_APP, "shared", EDGETRACE_TEST_DSO_LIB_B}, {"EDGETRACE_OUTPUT=" + dump_path});
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == threads_line(2));  // the app's main thread + one flusher
  CHECK(r.err.empty());
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(dump_path));
  std::map<std::string, int> spans;
  REQUIRE(reader.read_events([&](const edgetrace::reader::event& e) {
    if (e.kind == edgetrace::reader::event_kind::span) ++spans[e.site->category + "/" + e.site->name];
  }));
  CHECK(reader.writers().size() == 1);
  CHECK(reader.complete());
  CHECK_FALSE(reader.damaged());
  CHECK(spans["app/app_span"] == 300);
  CHECK(spans["lib_a/lib_a_span"] == 200);
  CHECK(spans["lib_b/lib_b_span"] == 100);
  CHECK(spans["shared_cat/shared_span"] == 600);  // one category shared by all three
  ::unlink(dump_path.c_str());
}

// dlclose of a library that declared a category: the category unregisters
// (its registration object's destructor runs at dlclose), so the exit
// handler never touches the unloaded memory. g++ builds hide the question
// (STB_GNU_UNIQUE inline variables make glibc ignore dlclose); clang builds
// really unload the library.
TEST_CASE("reliability: flush, dlclose a traced library, go on tracing, exit: the app is unharmed") {
  const std::string dump_path = fresh("dso-dlclose.etr");
  const auto r = run({EDGETRACE_TEST_DSO_APP, "shared", EDGETRACE_TEST_DSO_LIB_B, "dlclose"},
                     {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  const auto dump = load_dump(dump_path);
  CHECK(dump.complete);
  CHECK(dump.named("lib_b_span").size() == 100);
  CHECK(dump.named("app_span").size() == 300);
  ::unlink(dump_path.c_str());
}

TEST_CASE("reliability: a dlopen'd plugin binds to the executable's copy when it exports it (-rdynamic)") {
  const std::string dump_path = fresh("dso-plain.etr");
  const auto r =
      run({EDGETRACE_TEST_DSO_APP_PLAIN, "shared", EDGETRACE_TEST_DSO_LIB_B}, {"EDGETRACE_OUTPUT=" + dump_path});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == threads_line(2));
  CHECK(writer_count(dump_path) == 1);
  const auto dump = load_dump(dump_path);
  CHECK(dump.complete);
  CHECK_FALSE(dump.damaged);
  CHECK(dump.named("lib_b_span").size() == 100);
  CHECK(dump.named("app_span").size() == 300);
  ::unlink(dump_path.c_str());
}

namespace {
/// What a second copy of the library in one process does today (documented in
/// docs/RELIABILITY.md): a second writer and flusher on the same file, every
/// span kept; its O_TRUNC open cuts what the first copy had written so far.
void check_second_copy(const std::string& program, const std::string& library, const std::string& name) {
  const std::string dump_path = fresh("dso-second-copy.etr");
  const auto r = run({program, name == "lib_hidden_span" ? "hidden" : "shared", library},
                     {"EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == threads_line(3));  // main + two flushers
  CHECK(writer_count(dump_path) == 2);
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.named(name).size() == 100);
  CHECK(dump.named("app_span").size() == 300);
  std::string diagnostics;
  for (const auto& d : dump.diagnostics) diagnostics += d + "; ";
  MESSAGE(program << ": complete=" << dump.complete << " damaged=" << dump.damaged << " " << diagnostics);
  ::unlink(dump_path.c_str());
}
}  // namespace

TEST_CASE("reliability: a -fvisibility=hidden DSO has its own copy: a second writer (documented)") {
  check_second_copy(EDGETRACE_TEST_DSO_APP, EDGETRACE_TEST_DSO_LIB_HIDDEN, "lib_hidden_span");
}

TEST_CASE("reliability: a plugin of an executable that exports nothing gets its own copy (documented)") {
  check_second_copy(EDGETRACE_TEST_DSO_APP_NOEXPORT, EDGETRACE_TEST_DSO_LIB_B, "lib_b_span");
}

// A plugin loaded by a pinned inference thread starts tracing on that
// thread: the flusher it makes takes the process's CPUs instead of sharing
// the pinned one (where each drain would preempt the app); a program pinned
// as a whole (taskset) keeps its flusher within its CPUs.
TEST_CASE("reliability: a flusher made by a pinned thread runs on the process's CPUs, not the pinned one" *
          doctest::skip(std::thread::hardware_concurrency() < 2)) {
  const std::string cpu = std::to_string(std::thread::hardware_concurrency() - 1);
  const std::string dump_path = fresh("pinned.etr");
  const auto worker = run({EDGETRACE_TEST_PINNED_LOADER, cpu, EDGETRACE_TEST_DSO_LIB_B}, {"EDGETRACE_OUTPUT=" + dump_path});
  REQUIRE(worker.exit_code == 0);
  const std::string main_cpus = worker.out.substr(5, worker.out.find('\n') - 5);
  CHECK(main_cpus != cpu);
  CHECK(worker.out == "main " + main_cpus + "\nloader " + cpu + "\nflusher " + main_cpus + "\n");
  CHECK(load_dump(dump_path).named("lib_b_span").size() == 100);

  const auto whole = run({EDGETRACE_TEST_PINNED_LOADER, cpu, EDGETRACE_TEST_DSO_LIB_B, "process"},
                         {"EDGETRACE_OUTPUT=" + fresh("pinned_process.etr")});
  REQUIRE(whole.exit_code == 0);
  CHECK(whole.out == "main " + cpu + "\nloader " + cpu + "\nflusher " + cpu + "\n");
}

// ------------------------------------------------------------ environment

TEST_CASE("reliability: every EDGETRACE_* variable with bad values: one line naming it and the default, no crash") {
  const std::string huge_number = "99999999999999999999999999";
  const std::vector<std::string> numeric_values = {"", "-1", "0", huge_number, "abc", "12abc", "1e3", " "};
  const std::vector<std::string> choice_values = {"", "-1", huge_number, "yes", "FOLLOW", "on"};
  struct variable {
    const char* name;
    const std::vector<std::string>* values;
    const char* default_text;
  };
  const variable variables[] = {
      {"EDGETRACE_BUFFER_KB", &numeric_values, "using the default 1024"},
      {"EDGETRACE_FLUSH_MS", &numeric_values, "using the default 10"},
      {"EDGETRACE_SIGNAL_FLUSH", &choice_values, "using the default 0"},
      {"EDGETRACE_FORK", &choice_values, "using the default off"},
  };
  const std::string dump_path = fresh("env.etr");
  for (const auto& v : variables)
    for (const auto& value : *v.values) {
      CAPTURE(v.name);
      CAPTURE(value);
      const auto r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + dump_path, std::string(v.name) + "=" + value});
      CHECK(r.exit_code == 42);
      CHECK(line_count(r.err) == 1);
      CHECK(contains(r.err, std::string("edgetrace: ") + v.name + "='"));
      CHECK(contains(r.err, v.default_text));
      CHECK(load_dump(dump_path).named("app_span").size() == 10);  // traced with the default
    }
  SUBCASE("EDGETRACE_OUTPUT") {
    auto r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT="});
    CHECK(r.exit_code == 42);
    CHECK(r.err == "edgetrace: EDGETRACE_OUTPUT is empty; tracing is off\n");
    r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + std::string(5000, 'x')});
    CHECK(r.exit_code == 42);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "EDGETRACE_OUTPUT is longer than"));
  }
  SUBCASE("EDGETRACE_CATEGORIES") {
    for (const std::string& value :
         std::vector<std::string>{"", ",,,", "-", "*", "-app", huge_number, std::string(10000, 'c')}) {
      CAPTURE(value);
      const auto r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_CATEGORIES=" + value});
      CHECK(r.exit_code == 42);
      CHECK(line_count(r.err) <= 1);
      CHECK(load_dump(dump_path).opened);
    }
  }
  SUBCASE("unknown names, with and without a close match") {
    const auto r = run({app, "exit-code"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_FLUSHMS=5",
                                            "EDGETRACE_" + std::string(200, 'Z') + "=1", "EDGETRACE_=1"});
    CHECK(r.exit_code == 42);
    CHECK(line_count(r.err) == 3);
    CHECK(contains(r.err, "unknown variable EDGETRACE_FLUSHMS (did you mean EDGETRACE_FLUSH_MS?)"));
  }
  ::unlink(dump_path.c_str());
}

}  // namespace reliability_test
