// SPDX-License-Identifier: MIT
// Tests of `edgetrace top` (sinks/top.hpp, decode/follow.hpp): the table against the spans, --follow on a live traced run, restarts, errors.
#include <doctest/doctest.h>

#include <edgetrace/sinks/latency.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/format.hpp>
#include <edgetrace/sinks/top.hpp>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/spawn.hpp>

namespace top_test {

using namespace edgetrace_test;
namespace et = edgetrace::reader;

namespace {

using edgetrace_test::contains;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// A table row as printed: name, calls, calls/s, then four "value unit" times.
struct printed_row {
  std::string name, calls, rate, mean, p50, p99, max;
};

/// The rows of the table that follows the last "name calls" header of `text`.
std::map<std::string, printed_row> last_table(const std::string& text) {
  std::map<std::string, printed_row> rows;
  bool in_table = false;
  for (const std::string& line : lines_of(text)) {
    const auto w = words(line);
    if (!w.empty() && w[0] == "name" && w.size() > 1 && w[1] == "calls") {
      rows.clear();
      in_table = true;
      continue;
    }
    if (!in_table || w.empty() || line[0] == '-') continue;
    if (w.size() != 11) {
      in_table = false;
      continue;
    }
    rows[w[0]] = printed_row{w[0], w[1], w[2], w[3] + " " + w[4], w[5] + " " + w[6], w[7] + " " + w[8], w[9] + " " + w[10]};
  }
  return rows;
}

/// The span counts of the refresh headers ("== HH:MM:SS UTC DUMP: N span(s) read ...").
std::vector<std::uint64_t> refresh_counts(const std::string& text, std::size_t* finished = nullptr) {
  std::vector<std::uint64_t> counts;
  if (finished) *finished = 0;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind("== ", 0) != 0) continue;
    const std::size_t read = line.find(" span(s) read");
    const std::size_t colon = line.rfind(": ", read);
    if (read == std::string::npos || colon == std::string::npos) continue;
    counts.push_back(std::stoull(line.substr(colon + 2, read - colon - 2)));
    if (finished && contains(line, "writer finished")) ++*finished;
  }
  return counts;
}

std::string write_dump(const std::string& name, const bytes& b) {
  const std::string path = fresh_file(temp_path(name));
  REQUIRE(write_file(path, b));
  return path;
}

/// Waits until `path` holds at least `bytes` bytes (false after `seconds`).
bool wait_for_size(const std::string& path, std::uint64_t bytes, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) >= bytes) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// Reads the spawned program's output until it holds `needle` (false after `seconds`).
bool read_until(const spawned& s, std::string& out, const std::string& needle, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!contains(out, needle) && std::chrono::steady_clock::now() < deadline)
    if (!read_some(s, out, 50)) break;
  return contains(out, needle);
}

}  // namespace

TEST_CASE("top on a finished dump: calls, rate, mean, p50, p99, max of the window's spans") {
  const std::string path = fresh_file(temp_path("top_finished.etr"));
  const process_result app =
      run({edgetrace_test::app, "paced", "1.5", "200"}, {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_FLUSH_MS=20"});
  REQUIRE(app.exit_code == 0);
  const loaded_dump dump = load_dump(path);
  REQUIRE(dump.error.empty());

  for (const double window_s : {0.5, 60.0}) {
    CAPTURE(window_s);
    // Expected values straight from the spans.
    std::int64_t latest = 0, first = 0;
    bool any = false;
    for (const auto& e : dump.events) {
      if (e.kind != et::event_kind::span) continue;
      latest = any ? std::max(latest, e.end_ns) : e.end_ns;
      first = any ? std::min(first, e.begin_ns) : e.begin_ns;
      any = true;
    }
    REQUIRE(any);
    const auto window_ns = static_cast<std::int64_t>(window_s * 1e9);
    const std::int64_t cutoff = latest - window_ns;
    std::map<std::string, std::vector<std::uint64_t>> durations;
    for (const auto& e : dump.events)
      if (e.kind == et::event_kind::span && e.end_ns >= cutoff)
        durations[e.name].push_back(static_cast<std::uint64_t>(e.end_ns - e.begin_ns));
    const double covered = static_cast<double>(latest - std::max(cutoff, first)) / 1e9;

    const process_result top = run({EDGETRACE_TEST_CLI, "top", path, "--window", std::to_string(window_s)});
    INFO(top.out << top.err);
    CHECK(top.exit_code == 0);
    const auto rows = last_table(top.out);
    REQUIRE(rows.size() == durations.size());
    REQUIRE(durations.count("paced_outer") == 1);
    for (auto& entry : durations) {
      std::vector<std::uint64_t>& d = entry.second;
      std::sort(d.begin(), d.end());
      std::uint64_t total = 0;
      for (std::uint64_t v : d) total += v;
      const auto n = static_cast<std::uint64_t>(d.size());
      auto nearest = [&](double p) { return d[et::latency_stats::nearest_rank(p, n) - 1]; };
      REQUIRE(rows.count(entry.first) == 1);
      const printed_row& r = rows.at(entry.first);
      CAPTURE(entry.first);
      CHECK(r.calls == std::to_string(n));
      CHECK(r.mean == et::detail::readable_time((total + n / 2) / n));
      CHECK(r.p50 == et::detail::readable_time(nearest(50)));
      CHECK(r.p99 == et::detail::readable_time(nearest(99)));
      CHECK(r.max == et::detail::readable_time(d.back()));
      CHECK(std::fabs(std::stod(r.rate) - static_cast<double>(n) / covered) < 0.051);
    }
    if (window_s < 1) {
      CHECK(durations["paced_outer"].size() < dump.named("paced_outer").size());  // the window left spans out
      CHECK(!contains(top.out, "shorter than the window"));
    } else {
      CHECK(durations["paced_outer"].size() == dump.named("paced_outer").size());
      CHECK(contains(top.out, "shorter than the window"));
    }
  }
}

namespace {
/// A traced app ("paced SECONDS 200", writing to `path`) and `top --follow`
/// on its dump (refreshing every 0.2 s, plus `more` options), both running.
struct live_follow {
  spawned app, top;
};
live_follow follow_paced_app(const std::string& path, const char* seconds, std::vector<std::string> more = {}) {
  live_follow live;
  live.app = spawn({edgetrace_test::app, "paced", seconds, "200"},
                   {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_FLUSH_MS=20"});
  REQUIRE(live.app.pid > 0);
  REQUIRE(wait_for_size(path, 16, 20));
  std::vector<std::string> argv = {EDGETRACE_TEST_CLI, "top", path, "--follow", "--interval", "0.2"};
  argv.insert(argv.end(), more.begin(), more.end());
  live.top = spawn(argv);
  REQUIRE(live.top.pid > 0);
  return live;
}
}  // namespace

TEST_CASE("top --follow on a live traced run: refreshes while it runs, ends with its end record") {
  const std::string path = fresh_file(temp_path("top_live.etr"));
  live_follow live = follow_paced_app(path, "2.5", {"--window", "1"});
  spawned& app = live.app;
  spawned& top = live.top;
  std::string out;
  // Refreshes seen while the app still runs.
  std::string before_end;
  int app_code = -2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(app.pid, &status, WNOHANG) == app.pid) {
      app_code = exit_code_of(status);
      break;
    }
    before_end = out;
    read_some(top, out, 50);
  }
  if (app_code == -2) ::kill(app.pid, SIGKILL);  // the guard
  ::close(app.out);
  CHECK(app_code == 0);
  const int top_code = wait_for(top, 30, &out);  // the guard: a top that never ends is killed (-2)
  INFO(out << read_file(top.err_path));
  CHECK(top_code == 0);
  std::size_t finished = 0;
  const auto early = refresh_counts(before_end);
  CHECK(early.size() >= 2);
  const auto counts = refresh_counts(out, &finished);
  REQUIRE(counts.size() >= 2);
  CHECK(finished == 1);
  CHECK(contains(out.substr(out.rfind("== ")), "writer finished"));  // the last refresh
  for (std::size_t i = 1; i < counts.size(); ++i) CHECK(counts[i] >= counts[i - 1]);
  CHECK(counts.back() > counts.front());
  // The last refresh has read the whole dump.
  const loaded_dump dump = load_dump(path);
  std::uint64_t spans = 0;
  for (const auto& e : dump.events) spans += e.kind == et::event_kind::span;
  CHECK(counts.back() == spans);
  const auto rows = last_table(out);
  REQUIRE(rows.count("paced_outer") == 1);
  CHECK(std::stoull(rows.at("paced_outer").calls) > 0);
}

TEST_CASE("top --follow marks a writer that stopped as stale, and ends when its process is gone (kill -9)") {
  const std::string path = fresh_file(temp_path("top_gone.etr"));
  live_follow live = follow_paced_app(path, "60");
  spawned& app = live.app;
  spawned& top = live.top;
  std::string out;
  const auto read_for = [&](double seconds, const char* until) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline && !contains(out, until)) read_some(top, out, 50);
  };
  read_for(0.6, "\x01");  // a few live refreshes
  CHECK_FALSE(contains(out, "STALE"));
  // Stopped (Ctrl-Z, a debugger): no data, but the process is there.
  ::kill(app.pid, SIGSTOP);
  read_for(12, "STALE: no data for");
  CHECK(contains(out, "STALE: no data for"));
  CHECK_FALSE(contains(out, "writer gone"));
  // Killed: no end record, and the process is gone once reaped.
  ::kill(app.pid, SIGKILL);
  int status = 0;
  CHECK(::waitpid(app.pid, &status, 0) == app.pid);
  ::close(app.out);
  const auto killed = std::chrono::steady_clock::now();
  const int top_code = wait_for(top, 20, &out);  // the guard: a top that never ends is killed (-2)
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const std::string err = read_file(top.err_path);
  INFO(out << err);
  CHECK(top_code == 0);
  CHECK(took < 5);
  CHECK(contains(out.substr(out.rfind("== ")), "writer gone: process " + std::to_string(app.pid)));
  CHECK(contains(err, "its writer (process " + std::to_string(app.pid) + ") has ended without an end record"));
}

TEST_CASE("top --follow on a program that called exec and exited 0: the writer finished, not gone") {
  // The old image writes no end record; its new image (a later writer,
  // the same process by its identity: format 1.15) does. Before: "writer
  // gone ... killed or crashed?" once the pid was gone.
  const std::string path = fresh_file(temp_path("top_exec.etr"));
  REQUIRE(edgetrace_test::run({edgetrace_test::app, "exec-self"}, {"EDGETRACE_OUTPUT=" + path}).exit_code == 0);
  spawned top = spawn({EDGETRACE_TEST_CLI, "top", path, "--follow", "--interval", "0.2"});
  REQUIRE(top.pid > 0);
  std::string out;
  const int code = wait_for(top, 30, &out);
  const std::string err = read_file(top.err_path);
  INFO(out << err);
  CHECK(code == 0);
  CHECK(contains(out, "writer finished"));
  CHECK_FALSE(contains(out + err, "killed or crashed"));
}

TEST_CASE("top --follow waits for a chunk being written and reads a file truncated under it from its start") {
  // A dump without its end, then the rest: top waits for the cut chunk.
  dump_builder first = sample_dump();
  first.erase(first.chunk_count() - 1);  // no end record yet
  for (int i = 0; i < 20; ++i) {        // more chunks: the file later shrinks below the read position
    events e(1, 10000 + 1000 * i);
    e.span(1, 10000 + 1000 * i, 10500 + 1000 * i);
    first.event_chunk(0xA1B2C3D4u, e);
  }
  const bytes whole = first.build();
  const std::string path = write_dump("top_follow_partial.etr", bytes(whole.begin(), whole.end() - 5));
  spawned top = spawn({EDGETRACE_TEST_CLI, "top", path, "-f", "--interval", "0.05"});
  REQUIRE(top.pid > 0);
  std::string out;
  REQUIRE(read_until(top, out, "== ", 20));
  {
    // The cut chunk's last 5 bytes arrive.
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    CHECK(::write(fd, whole.data() + whole.size() - 5, 5) == 5);
    ::close(fd);
  }
  REQUIRE(read_until(top, out, "24 span(s) read", 20));  // 4 of the sample + 20
  // Truncated and written again, shorter, by a writer that ends.
  REQUIRE(write_file(path, sample_dump().build()));
  const int code = wait_for(top, 30, &out);
  INFO(out << read_file(top.err_path));
  CHECK(code == 0);
  CHECK(contains(out, "file restarted 1 time(s)"));
  CHECK(contains(out, "writer finished"));
  CHECK(!contains(out, "corrupt"));
  const auto rows = last_table(out);
  REQUIRE(rows.count("conv1") == 1);
  // 3 of the first sample, 20 more, 3 of the second: spans read before the
  // truncation stay in the window (the same writer goes on).
  CHECK(rows.at("conv1").calls == "26");
}

TEST_CASE("top --follow on a terminal redraws the table in place") {
  const std::string path = write_dump("top_tty.etr", sample_dump().build());
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const std::string terminal = ::ptsname(master);
  const std::string cli = EDGETRACE_TEST_CLI;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setsid();
    const int slave = ::open(terminal.c_str(), O_RDWR);
    if (slave < 0) ::_exit(126);
    ::dup2(slave, 1);
    ::execl(cli.c_str(), cli.c_str(), "top", path.c_str(), "--follow", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string shown;
  char buffer[4096];
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 20000) <= 0) break;  // the guard: a top that never ends stops the read
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO once the child closed the terminal
    shown.append(buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {  // the guard: never hang
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::close(master);
  INFO(shown);
  CHECK(exit_code_of(status) == 0);
  CHECK(shown.rfind("\033[H\033[2J", 0) == 0);  // home and clear, then the status line
  CHECK(!contains(shown, "== "));                 // not the "== ... ==" lines that separate refreshes in a pipe
  CHECK(contains(shown, " UTC " + path + ": 4 span(s) read, writer finished"));
  CHECK(contains(shown, "writer finished"));
  CHECK(last_table(shown).count("conv1") == 1);
}

TEST_CASE("top_window keeps only the window's spans, and at most max_samples of them") {
  et::top_options options;
  options.window_ns = 1000;
  options.max_samples = 50;
  et::top_window window(options);
  const std::string a = "a", b = "b";
  // 1 span of "a" every 10 ns up to 2000 ns, and 1 of "b" every 100 ns.
  for (std::int64_t end = 10; end <= 2000; end += 10) {
    window.add(&a, a, end, 5);
    if (end % 100 == 0) window.add(&b, b, end, 50);
  }
  const et::top_result t = window.table();
  REQUIRE(t.has_spans);
  CHECK(t.latest_ns == 2000);
  CHECK(t.capped);  // 101 "a" and 11 "b" ended in [1000, 2000]: more than 50
  CHECK(t.spans <= 50);
  CHECK(t.window_ns < 1000);
  std::uint64_t calls = 0;
  for (const auto& r : t.rows) calls += r.calls;
  CHECK(calls == t.spans);
  CHECK(contains(et::top_table(t, options), "the window holds the latest spans only"));

  options.max_samples = 1000;
  et::top_window roomy(options);
  for (std::int64_t end = 10; end <= 2000; end += 10) roomy.add(&a, a, end, 5);
  const et::top_result all = roomy.table();
  CHECK(!all.capped);
  REQUIRE(all.rows.size() == 1);
  CHECK(all.rows[0].calls == 101);  // ends 1000, 1010, ..., 2000
  CHECK(all.window_ns == 1000);
  CHECK(all.rows[0].per_second == doctest::Approx(101e9 / 1000));
}

TEST_CASE("top_window keeps at most max_iterations iterations, and says its iteration line covers the latest only") {
  et::top_options options;
  options.window_ns = 1000;
  options.per = "frame";
  options.max_iterations = 10;
  et::top_window window(options);
  const std::string a = "a";
  // A span every 10 ns up to 2000 ns, each an iteration of 10 ns: 101 end
  // in the window, the latest 10 are kept (ends 1910 .. 2000).
  for (std::int64_t end = 10; end <= 2000; end += 10) {
    window.add(&a, a, end, 10);
    window.add_iteration_span(end, 10);
  }
  const et::top_result t = window.table();
  CHECK(!t.capped);  // the spans fit
  CHECK(t.iteration.capped);
  CHECK(t.iteration.count == 10);
  CHECK(t.iteration.per_second == doctest::Approx(10e9 / 90));  // over their own 90 ns
  CHECK(contains(et::top_table(t, options), "(the latest iterations only: memory limit)"));

  options.max_iterations = 1000;
  et::top_window roomy(options);
  for (std::int64_t end = 10; end <= 2000; end += 10) {
    roomy.add(&a, a, end, 10);
    roomy.add_iteration_span(end, 10);
  }
  const et::top_result all = roomy.table();
  CHECK(!all.iteration.capped);
  CHECK(all.iteration.count == 101);
  CHECK(all.iteration.per_second == doctest::Approx(101e9 / 1000));
  CHECK(!contains(et::top_table(all, options), "memory limit"));
}

namespace {

/// One writer (ns clock) whose thread 1 runs spans "step" of 100, 200, ...,
/// 1000 ns, 1000 ns apart, and whose threads 1 and 2 each record marks
/// "tick": thread 1 at 0, 2500, 5500 (iterations of 2500 and 3000 ns),
/// thread 2 at 500 and 1500 (one of 1000 ns).
bytes iteration_dump() {
  dump_builder d;
  d.process(1);
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "step").site(2, fmt::site_kind::mark, 1, "tick");
  d.defs(1, defs).thread(1, 1, 10, "main").thread(1, 2, 11, "other");
  events e(1, 0);
  e.instant(2, 0);
  for (std::uint64_t k = 1; k <= 10; ++k) {
    e.span(1, 1000 * k, 1000 * k + 100 * k);
    if (k == 2) e.instant(2, 2500);
    if (k == 5) e.instant(2, 5500);
  }
  d.event_chunk(1, e);
  events other(2, 0);
  other.instant(2, 500).instant(2, 1500);
  d.event_chunk(1, other).end(1);
  return d.build();
}

}  // namespace

TEST_CASE("top --per NAME: the iteration's count, rate, p50, p99 and max over the window, once and following") {
  const std::string path = write_dump("top_per.etr", iteration_dump());
  // Spans: 10 iterations of 100..1000 ns; the spans cover 10 us (first
  // begin 1000, last end 11000): 1,000,000 a second.
  process_result r = run({EDGETRACE_TEST_CLI, "top", path, "--per", "step"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.out, "iteration \"step\" (span): 10, 1000000.0/s, p50 500 ns, p99 1.000 us, max 1.000 us\n"));
  // Marks: thread 1's 2500 and 3000 ns, thread 2's 1000 ns.
  r = run({EDGETRACE_TEST_CLI, "top", path, "--per", "tick"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.out, "iteration \"tick\" (between marks): 3, "));
  CHECK(contains(r.out, "p50 2.500 us, p99 3.000 us, max 3.000 us\n"));
  // A window of 2500 ns, [8500, 11000]: the spans that ended at 8800, 9900 and 11000.
  r = run({EDGETRACE_TEST_CLI, "top", path, "--per", "step", "--window", "2500ns"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.out, "iteration \"step\" (span): 3, "));
  CHECK(contains(r.out, "p50 900 ns, p99 1.000 us, max 1.000 us\n"));
  // Following: the same lines from the follower's spans and marks.
  r = run({EDGETRACE_TEST_CLI, "top", path, "--follow", "--per", "tick"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.out, "iteration \"tick\" (between marks): 3, "));
  CHECK(last_table(r.out).count("tick") == 0);  // marks are not rows
  CHECK(last_table(r.out).at("step").calls == "10");
  r = run({EDGETRACE_TEST_CLI, "top", path, "--follow", "--per", "later"});  // may appear later: not an error
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "iteration \"later\": none ended in the window\n"));
}

TEST_CASE("top: errors and help") {
  const std::string text = write_dump("top_not_a_dump.etr", bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!',
                                                                  '!', '!', '!', '!', '!'});
  const std::string good = write_dump("top_good.etr", sample_dump().build());
  struct error_case {
    std::vector<std::string> args;
    int code;
    const char* message;
  };
  const std::vector<error_case> cases = {
      {{"top", temp_path("top_missing.etr")}, 2, "No such file or directory"},
      {{"top", temp_path("top_missing.etr"), "--follow"}, 2, "No such file or directory"},
      {{"top", text}, 2, "not an edgetrace dump"},
      {{"top", text, "--follow"}, 2, "not an edgetrace dump"},
      {{"top"}, 1, "'top' needs a DUMP file"},
      {{"top", good, "--window", "0"}, 1, "--window needs a number of seconds > 0"},
      {{"top", good, "--window", "-2"}, 1, "--window needs a number of seconds > 0"},
      {{"top", good, "--window", "abc"}, 1, "--window needs a number of seconds > 0"},
      {{"top", good, "--window"}, 1, "option '--window' needs a value"},
      {{"top", good, "--interval", "1"}, 1, "--interval applies only with --follow"},
      {{"top", good, "--follow", "--interval", "0"}, 1, "--interval needs a number of seconds > 0"},
      {{"top", good, "--top", "0"}, 1, "--top needs a whole number >= 1"},
      {{"top", good, "--bogus"}, 1, "unknown option '--bogus'"},
      {{"top", good, "--per", "nope"}, 2, "--per: no span or mark named \"nope\""},
      {{"top", good, "--per", ""}, 1, "--per needs a span or mark name"},
  };
  for (const error_case& c : cases) {
    std::vector<std::string> argv{EDGETRACE_TEST_CLI};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const process_result r = run(argv);
    INFO(r.err);
    CHECK(r.exit_code == c.code);
    CHECK(contains(r.err, c.message));
    CHECK(contains(r.err, "edgetrace: error: "));
    CHECK(r.out.empty());
  }
  // A damaged dump: the table of what could be read, and exit code 3.
  bytes damaged = sample_dump().build();
  truncate(damaged, damaged.size() - 3);
  const std::string cut = write_dump("top_damaged.etr", damaged);
  const process_result r = run({EDGETRACE_TEST_CLI, "top", cut});
  CHECK(r.exit_code == 3);
  CHECK(last_table(r.out).count("conv1") == 1);
  CHECK(contains(r.err, "damaged or incomplete"));
  const process_result help = run({EDGETRACE_TEST_CLI, "help", "top"});
  CHECK(help.exit_code == 0);
  CHECK(contains(help.out, "usage: edgetrace top DUMP [--follow]"));
  CHECK(contains(help.out, "--window SECONDS"));
  const process_result list = run({EDGETRACE_TEST_CLI, "--help"});
  CHECK(contains(list.out, "  top DUMP"));
}

}  // namespace top_test
