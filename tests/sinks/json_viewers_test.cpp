// SPDX-License-Identifier: MIT
// What viewers need from `edgetrace json`, on real traced runs: cross-category flows bound to their spans, counter events, and the terminal-only progress, success line and size warning.
#include <doctest/doctest.h>

#include <edgetrace/edgetrace.hpp>
#include <edgetrace/sinks/chrome_json/writer.hpp>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <support/files.hpp>
#include <support/json_lite.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/test_env.hpp>

namespace json_viewers_test {

using edgetrace_test::cli;
using edgetrace_test::tmp;

EDGETRACE_CATEGORY(decode);
EDGETRACE_CATEGORY(preprocess);
EDGETRACE_CATEGORY(infer);

using json_lite::value;

namespace {

constexpr int frames = 12;

/// The traced run: frame i is decoded on one thread, preprocessed on a
/// second and inferred on this one, each step in its own category and a step
/// of flow "frame" i; a counter counts the frames done.
void pipeline_workload() {
  for (int i = 0; i < frames; ++i) {
    std::thread([i] {
      EDGETRACE_SCOPE(decode, "decode_frame");
      EDGETRACE_FLOW(decode, "frame", i);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }).join();
    std::thread([i] {
      EDGETRACE_SCOPE(preprocess, "preprocess_frame");
      EDGETRACE_FLOW(preprocess, "frame", i);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }).join();
    {
      EDGETRACE_SCOPE(infer, "inference");
      EDGETRACE_FLOW(infer, "frame", i);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    EDGETRACE_COUNTER(infer, "frames_done", i + 1);
  }
}

/// The dump of pipeline_workload, recorded once in a child copy of this test.
const std::string& pipeline_dump() {
  static const std::string path = [] {
    const std::string p = tmp + "/json_viewers.etr";
    std::remove(p.c_str());
    const auto r =
        edgetrace_test::run({"/proc/self/exe", "--test-case=json viewers workload", "--no-intro", "--no-version"},
                            {"EDGETRACE_OUTPUT=" + p, "ETTEST_JSON_VIEWERS_WORKLOAD=1"});
    const std::string output = r.out + r.err;
    REQUIRE_MESSAGE(r.exit_code == 0, output);
    return p;
  }();
  return path;
}

value parse(const std::string& text) {
  value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(text, doc, error), error);
  return doc;
}

/// Events of `doc` with this name and phase, by ts (then file order).
std::vector<const value*> events(const value& doc, const std::string& name, const std::string& ph) {
  std::vector<const value*> out;
  for (const value& e : doc["traceEvents"].items)
    if (e["name"].str() == name && e["ph"].str() == ph) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [](const value* a, const value* b) { return (*a)["ts"].num() < (*b)["ts"].num(); });
  return out;
}

/// Runs the CLI with stderr (and stdout) on a pseudo-terminal; returns what
/// the terminal showed and sets `exit_code`.
std::string run_on_terminal(const std::vector<std::string>& args, int& exit_code) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(cli.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::unsetenv("EDGETRACE_JSON_WARN_MB");
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string shown;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n <= 0) break;  // EIO once the child closed the terminal
    shown.append(buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return shown;
}

}  // namespace

// Runs only in the child started by pipeline_dump().
TEST_CASE("json viewers workload" * doctest::skip(std::getenv("ETTEST_JSON_VIEWERS_WORKLOAD") == nullptr)) {
  pipeline_workload();
}

TEST_CASE("a cross-category flow is bound to its steps' own spans, linked in time order") {
  const auto dump = edgetrace_test::load_dump(pipeline_dump());
  REQUIRE(dump.opened);
  const auto r = edgetrace_test::run({cli, "json", pipeline_dump(), "-o", "-"});
  REQUIRE(r.exit_code == 0);
  const value doc = parse(r.out);
  // Expected from the dump: frame i's steps are the i-th span of each stage
  // (the stages run one after the other), in that time order.
  const std::vector<std::string> stages{"decode_frame", "preprocess_frame", "inference"};
  std::vector<std::vector<std::int64_t>> begins(stages.size());
  for (std::size_t s = 0; s < stages.size(); ++s) {
    for (const auto& e : dump.named(stages[s])) begins[s].push_back(e.begin_ns);
    std::sort(begins[s].begin(), begins[s].end());
    REQUIRE(begins[s].size() == static_cast<std::size_t>(frames));
  }
  std::vector<std::vector<const value*>> spans;
  for (const auto& name : stages) {
    spans.push_back(events(doc, name, "X"));
    REQUIRE(spans.back().size() == static_cast<std::size_t>(frames));
  }
  const std::int64_t origin_ns = begins[0][0] - 1000;  // the earliest event is at ts 1.000
  std::vector<std::string> ids;
  for (int i = 0; i < frames; ++i) {
    CAPTURE(i);
    const std::string id = (*spans[0][static_cast<std::size_t>(i)])["bind_id"].text;
    REQUIRE_FALSE(id.empty());
    ids.push_back(id);
    for (std::size_t s = 0; s < stages.size(); ++s) {
      CAPTURE(stages[s]);
      const value& x = *spans[s][static_cast<std::size_t>(i)];
      // The right span: its start is the dump's (µs with three decimals).
      CHECK(std::llround(x["ts"].num() * 1000) == begins[s][static_cast<std::size_t>(i)] - origin_ns);
      CHECK(x["bind_id"].text == id);
      CHECK(x.has("flow_in") == (s > 0));  // the first step has no incoming arrow
      CHECK(x.has("flow_out") == (s + 1 < stages.size()));
      if (x.has("flow_in")) CHECK(x["flow_in"].boolean);
      if (x.has("flow_out")) CHECK(x["flow_out"].boolean);
      if (s > 0) CHECK(begins[s - 1][static_cast<std::size_t>(i)] < begins[s][static_cast<std::size_t>(i)]);
    }
  }
  std::sort(ids.begin(), ids.end());
  CHECK(std::unique(ids.begin(), ids.end()) == ids.end());  // one id per frame

  // For DevTools (s/t/f only, bound to a slice of their own category): one
  // s, t, f per frame in category "flow", each at a 1 ns "flow" slice at
  // the step's start on the step's thread, with the same id.
  const auto markers = events(doc, "frame", "X");
  REQUIRE(markers.size() == static_cast<std::size_t>(3 * frames));
  std::map<std::string, int> phases;
  for (const char* ph : {"s", "t", "f"})
    for (const value* e : events(doc, "frame", ph)) {
      CHECK((*e)["cat"].str() == "flow");
      ++phases[ph];
      const bool bound = std::any_of(markers.begin(), markers.end(), [&](const value* m) {
        return (*m)["ts"].text == (*e)["ts"].text && (*m)["tid"].text == (*e)["tid"].text &&
               (*m)["cat"].str() == "flow" && std::llround((*m)["dur"].num() * 1000.0) == 1;
      });
      CHECK(bound);
      CHECK(std::binary_search(ids.begin(), ids.end(), (*e)["id"].text));
    }
  CHECK(phases == std::map<std::string, int>{{"f", frames}, {"s", frames}, {"t", frames}});
}

TEST_CASE("counters are C events with a numeric args member, on their process and thread") {
  const auto dump = edgetrace_test::load_dump(pipeline_dump());
  std::vector<double> recorded;
  for (const auto& e : dump.named("frames_done")) recorded.push_back(e.value);
  REQUIRE(recorded.size() == static_cast<std::size_t>(frames));
  const auto r = edgetrace_test::run({cli, "json", pipeline_dump(), "-o", "-"});
  REQUIRE(r.exit_code == 0);
  const value doc = parse(r.out);
  const auto samples = events(doc, "frames_done", "C");
  REQUIRE(samples.size() == recorded.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const value& c = *samples[i];
    CHECK(c["cat"].str() == "infer");
    CHECK(c["pid"].is_number());
    CHECK(c["tid"].is_number());
    REQUIRE(c["args"].is_object());
    CHECK(c["args"].size() == 1);
    CHECK(c["args"]["frames_done"].is_number());
    CHECK(c["args"]["frames_done"].num() == recorded[i]);
  }
}

TEST_CASE("on a terminal json shows its progress and one success line; off a terminal, nothing") {
  const std::string out = tmp + "/json_viewers_tty.json";
  int rc = -1;
  const std::string shown = run_on_terminal({"json", pipeline_dump(), "-o", out}, rc);
  CHECK(rc == 0);
  CHECK(shown.find("\redgetrace: converting " + pipeline_dump() + ": 100%") != std::string::npos);
  const auto doc = parse(edgetrace_test::read_file(out));
  const std::string line = "edgetrace: wrote " + out + ": " + std::to_string(doc["traceEvents"].size()) + " events, ";
  CHECK_MESSAGE(shown.find(line) != std::string::npos, shown);
  CHECK(shown.find("100%\r\n") != std::string::npos);  // the progress line ends with a newline
  CHECK(shown.find("warning") == std::string::npos);

  const auto quiet = edgetrace_test::run({cli, "json", pipeline_dump(), "-o", out});
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  CHECK(quiet.out.empty());
}

TEST_CASE("json warns when its output will be too big for a browser, and names the ways out") {
  const std::string out = tmp + "/json_viewers_big.json";
  // EDGETRACE_JSON_WARN_MB=0 makes any dump "too big" (the default is 1 GB).
  const auto big = edgetrace_test::run({cli, "json", pipeline_dump(), "-o", out}, {"EDGETRACE_JSON_WARN_MB=0"});
  CHECK(big.exit_code == 0);  // a warning, not an error: the JSON is written
  for (const char* hint : {"warning: ", "will be about", "--split-mb", "--min-dur", "--filter", "edgetrace perfetto"})
    CHECK_MESSAGE(big.err.find(hint) != std::string::npos, hint);
  CHECK(std::count(big.err.begin(), big.err.end(), '\n') == 1);
  // 1 MB: the estimate (about 100 bytes an event, 22 an argument) stays below.
  const auto small = edgetrace_test::run({cli, "json", pipeline_dump(), "-o", out}, {"EDGETRACE_JSON_WARN_MB=1"});
  CHECK(small.exit_code == 0);
  CHECK(small.err.empty());
  const auto estimate_of = [](const std::string& err) {
    const std::size_t at = err.find("will be about ");
    REQUIRE_MESSAGE(at != std::string::npos, err);
    const double value = std::strtod(err.c_str() + at + 14, nullptr);
    return err.compare(at + 14 + err.substr(at + 14).find(' ') + 1, 2, "MB") == 0 ? value * 1000 : value;  // kB
  };
  // With --min-dur or --filter the output may be far smaller than the
  // whole estimate: the estimate is of what the selection keeps (here the
  // capture markers, instants and counters: a quarter of it), said once.
  const auto filtered =
      edgetrace_test::run({cli, "json", pipeline_dump(), "-o", out, "--min-dur", "1s"}, {"EDGETRACE_JSON_WARN_MB=0"});
  CHECK(filtered.exit_code == 0);
  CHECK(estimate_of(filtered.err) < estimate_of(big.err) / 3);
  CHECK(std::count(filtered.err.begin(), filtered.err.end(), '\n') == 1);
  // A selection that keeps it all: the estimate after the selection warns
  // before anything is written, once.
  const auto kept_all =
      edgetrace_test::run({cli, "json", pipeline_dump(), "-o", out, "--filter", "."}, {"EDGETRACE_JSON_WARN_MB=0"});
  CHECK(kept_all.exit_code == 0);
  CHECK_MESSAGE(kept_all.err.find("will be about") != std::string::npos, kept_all.err);
  CHECK(std::count(kept_all.err.begin(), kept_all.err.end(), '\n') == 1);
  CHECK(estimate_of(kept_all.err) == doctest::Approx(estimate_of(big.err)).epsilon(0.01));
  // One that keeps the first half of the time: less than the whole.
  edgetrace::reader::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, pipeline_dump()), r.error());
  const std::string half = std::to_string((r.last_ns() - r.first_ns()) / 2000) + "us";
  const auto windowed =
      edgetrace_test::run({cli, "json", pipeline_dump(), "-o", out, "--window", ":" + half}, {"EDGETRACE_JSON_WARN_MB=0"});
  CHECK(windowed.exit_code == 0);
  CHECK(estimate_of(windowed.err) > 0);
  CHECK(estimate_of(windowed.err) < estimate_of(big.err));
}

TEST_CASE("with --split-mb, a flow cut by a window boundary stays whole in every file") {
  edgetrace::reader::dump_reader r;
  REQUIRE(r.open(pipeline_dump()));
  edgetrace::reader::chrome_json_input in;
  in.reader = &r;
  std::vector<edgetrace::reader::chrome_json_part> parts;
  std::string error;
  // Small windows: most frames' three steps fall in two files.
  REQUIRE_MESSAGE(edgetrace::reader::write_chrome_json_split({in}, tmp + "/json_viewers_split.json", 9000, {}, parts,
                                                             &error),
                  error);
  REQUIRE(parts.size() >= 3);
  std::size_t bound_steps = 0;
  for (const auto& part : parts) {
    CAPTURE(part.path);
    const value doc = parse(edgetrace_test::read_file(part.path));
    std::map<std::string, std::vector<const value*>> by_id;
    std::map<std::string, std::string> phases;  // id -> phases of its s/t/f events, in file order
    for (const value& e : doc["traceEvents"].items) {
      if (e.has("bind_id")) by_id[e["bind_id"].text].push_back(&e);
      const std::string ph = e["ph"].str();
      if (ph == "s" || ph == "t" || ph == "f") phases[e["id"].text] += ph;
    }
    for (const auto& flow : by_id) {
      CAPTURE(flow.first);
      CHECK(flow.second.size() >= 2);  // a flow has two ends in the file
      std::size_t starts = 0, ends = 0;
      for (const value* x : flow.second) {
        starts += !x->has("flow_in");
        ends += !x->has("flow_out");
      }
      CHECK(starts == 1);
      CHECK(ends == 1);
      bound_steps += flow.second.size();
      const std::string& p = phases[flow.first];
      REQUIRE(p.size() == flow.second.size());
      CHECK(p.front() == 's');
      CHECK(p.back() == 'f');
    }
    CHECK(phases.size() == by_id.size());
  }
  CHECK(bound_steps >= static_cast<std::size_t>(frames));  // most steps keep an arrow
}

}  // namespace json_viewers_test
