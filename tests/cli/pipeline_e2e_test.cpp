// SPDX-License-Identifier: MIT
// End to end: runs examples/pipeline with EDGETRACE_OUTPUT, converts the dump with the CLI, and checks the JSON's content.
#include <doctest/doctest.h>

#include <support/json_lite.hpp>
#include <support/test_env.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <utility>
#include <vector>

extern char** environ;

namespace pipeline_e2e_test {

// Set by tests/extra_tests.cmake; empty when the examples are not built.
#ifndef EDGETRACE_TEST_PIPELINE
#define EDGETRACE_TEST_PIPELINE ""
#endif
#ifndef EDGETRACE_TEST_MINIMAL
#define EDGETRACE_TEST_MINIMAL ""
#endif

namespace {

const char* const pipeline_path = EDGETRACE_TEST_PIPELINE;
const char* const cli_path = EDGETRACE_TEST_CLI;

struct process_result {
  int exit_code = -1;  ///< -1: did not exit normally
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// A fresh, empty scratch directory under the test tmp dir.
std::string scratch_dir(const std::string& name) {
  const std::string dir = edgetrace_test::tmp + "/pipeline_e2e_" + name;
  const std::string command = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  return dir;
}

/// Runs `args` in `cwd` with this process's environment minus every
/// EDGETRACE_* variable, plus `extra_env` ("NAME=value"); stdout and stderr
/// are captured through files in `cwd`.
process_result run(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                   const std::string& cwd) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "EDGETRACE_", 10) != 0) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const std::string out_path = cwd + "/.stdout", err_path = cwd + "/.stderr";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // child: only async-signal-safe calls until execve
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || ::chdir(cwd.c_str()) != 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  process_result result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return result;
}

/// Files in `dir` (names only), for "created nothing" checks.
std::set<std::string> list_dir(const std::string& dir) {
  std::set<std::string> names;
  const std::string listing = dir + "/.listing";
  const std::string command = "ls -A '" + dir + "' > '" + listing + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  std::istringstream lines(read_file(listing));
  for (std::string line; std::getline(lines, line);)
    if (line != ".listing") names.insert(line);
  std::remove(listing.c_str());
  return names;
}

std::size_t count_lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

/// A Chrome JSON time in µs with 3 decimals, as integer ns (exact compare).
long long to_ns(const json_lite::value& v) { return std::llround(v.num(-1) * 1000.0); }

struct span {
  std::string name;
  long long pid, tid, begin, end;
};

const int frames = 5;
const int blocks = 2;
const char* const layer_names[] = {"conv1", "bn1", "relu1", "conv2", "bn2", "relu2", "pool", "fc"};
const int layers_per_frame = 3 * blocks + 2;

/// Without the examples (EDGETRACE_BUILD_EXAMPLES=OFF) every case here is
/// skipped, and the whole entry shows as skipped in ctest.
bool examples_missing() { return pipeline_path[0] == '\0'; }

}  // namespace

TEST_CASE("the traced pipeline's dump converts to JSON with threads, nested layers, counters and instants" * doctest::skip(examples_missing())) {
  const std::string dir = scratch_dir("traced");
  const std::string dump = dir + "/pipeline.etr", json = dir + "/pipeline.json";

  const process_result app = run({pipeline_path, "--frames", std::to_string(frames), "--layers", std::to_string(blocks)},
                                 {"EDGETRACE_OUTPUT=" + dump}, dir);
  INFO("pipeline stdout: " << app.out << "\npipeline stderr: " << app.err);
  REQUIRE(app.exit_code == 0);
  CHECK(app.err.empty());
  CHECK(app.out.find("tracing on") != std::string::npos);
  REQUIRE(file_exists(dump));

  const process_result cli = run({cli_path, "json", dump, "-o", json}, {}, dir);
  INFO("edgetrace json stderr: " << cli.err);
  REQUIRE(cli.exit_code == 0);

  json_lite::value root;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(read_file(json), root, error), error);
  const json_lite::value& events = root["traceEvents"];
  REQUIRE(events.is_array());

  std::map<std::pair<long long, long long>, std::string> thread_names;  // (pid, tid) -> name
  std::map<std::string, int> span_count, instant_count, counter_count;
  std::vector<span> spans;
  for (const json_lite::value& e : events.items) {
    const std::string ph = e["ph"].str(), name = e["name"].str();
    const long long pid = std::llround(e["pid"].num(-1)), tid = std::llround(e["tid"].num(-1));
    if (ph == "M") {
      if (name == "thread_name") thread_names[{pid, tid}] = e["args"]["name"].str();
      continue;
    }
    INFO("event " << name << " ph " << ph);
    REQUIRE(e["ts"].is_number());
    CHECK(e["ts"].num() > 0);  // DevTools drops a slice at ts 0
    if (ph == "X") {
      REQUIRE(e["dur"].is_number());
      CHECK(e["dur"].num() >= 0);
      ++span_count[name];
      const long long begin = to_ns(e["ts"]);
      spans.push_back({name, pid, tid, begin, begin + to_ns(e["dur"])});
    } else if (ph == "i") {
      ++instant_count[name];
    } else if (ph == "C") {
      ++counter_count[name];
      CHECK(e["args"].is_object());
      CHECK(e["args"].size() >= 1);
    }
  }

  {  // every pipeline thread is named by an M event
    std::set<std::string> names;
    for (const auto& t : thread_names) names.insert(t.second);
    for (const char* expected : {"decode", "preprocess", "inference", "postprocess"}) {
      INFO("thread " << expected);
      CHECK(names.count(expected) == 1);
    }
  }

  {  // each layer runs once per frame, on the inference thread, inside an 'inference' span
    CHECK(span_count["inference"] == frames);
    for (const char* layer : layer_names) {
      INFO("layer " << layer);
      CHECK(span_count[layer] == frames);
    }
    const std::set<std::string> layers(std::begin(layer_names), std::end(layer_names));
    std::map<const span*, int> children;
    for (const span& s : spans) {
      if (layers.count(s.name) == 0) continue;
      INFO("layer " << s.name << " [" << s.begin << ", " << s.end << "] ns");
      CHECK(thread_names[{s.pid, s.tid}] == "inference");
      const span* parent = nullptr;
      for (const span& p : spans)
        if (p.name == "inference" && p.pid == s.pid && p.tid == s.tid && p.begin <= s.begin && s.end <= p.end)
          parent = &p;
      REQUIRE(parent != nullptr);
      ++children[parent];
    }
    CHECK(children.size() == static_cast<std::size_t>(frames));
    for (const auto& c : children) CHECK(c.second == layers_per_frame);
  }

  {  // the other stages' spans, instants and queue counters are there
    for (const char* name : {"decode_frame", "preprocess_frame", "resize", "normalize", "top_k"}) {
      INFO("span " << name);
      CHECK(span_count[name] == frames);
    }
    CHECK(instant_count["frame_ready"] == frames);
    CHECK(instant_count["frame_done"] == frames);
    for (const char* name : {"decoded_depth", "prepared_depth", "inferred_depth"}) {
      INFO("counter " << name);
      CHECK(counter_count[name] == 2 * frames);  // one sample per push and per pop
    }
  }

  const process_result info = run({cli_path, "info", dump}, {}, dir);
  INFO("edgetrace info: " << info.out << info.err);
  CHECK(info.exit_code == 0);
  CHECK(info.out.find("inference") != std::string::npos);
}

TEST_CASE("the quick-start example's spans all reach the JSON" * doctest::skip(examples_missing())) {
  const std::string dir = scratch_dir("minimal");
  const process_result app = run({EDGETRACE_TEST_MINIMAL}, {"EDGETRACE_OUTPUT=minimal.etr"}, dir);
  REQUIRE(app.exit_code == 0);
  const process_result cli = run({cli_path, "json", "minimal.etr", "-o", "minimal.json"}, {}, dir);
  REQUIRE(cli.exit_code == 0);
  json_lite::value root;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(read_file(dir + "/minimal.json"), root, error), error);
  int work = 0, total = 0;
  for (const json_lite::value& e : root["traceEvents"].items) {
    work += e["ph"].str() == "X" && e["name"].str() == "work";
    total += e["ph"].str() == "C" && e["name"].str() == "total";
  }
  CHECK(work == 100);
  CHECK(total == 100);
}

TEST_CASE("without EDGETRACE_OUTPUT the pipeline writes no file and prints nothing on stderr" * doctest::skip(examples_missing())) {
  const std::string dir = scratch_dir("untraced");
  const process_result app = run({pipeline_path, "--frames", "3", "--layers", "1"}, {}, dir);
  CHECK(app.exit_code == 0);
  CHECK(app.err.empty());
  CHECK(app.out.find("tracing off") != std::string::npos);
  CHECK(list_dir(dir).empty());
}

TEST_CASE("an unwritable EDGETRACE_OUTPUT costs one stderr line and the app still succeeds" * doctest::skip(examples_missing())) {
  const std::string dir = scratch_dir("unwritable");
  const process_result app =
      run({pipeline_path, "--frames", "3", "--layers", "1"}, {"EDGETRACE_OUTPUT=/nonexistent/dir/x.etr"}, dir);
  INFO("stderr: " << app.err);
  CHECK(app.exit_code == 0);
  CHECK(count_lines(app.err) == 1);
  CHECK(app.err.rfind("edgetrace:", 0) == 0);
  CHECK(app.err.find("EDGETRACE_OUTPUT") != std::string::npos);
  CHECK(app.out.find("tracing off") != std::string::npos);
  CHECK(!file_exists("/nonexistent/dir"));
  CHECK(list_dir(dir).empty());
}

TEST_CASE("the pipeline built with EDGETRACE_ENABLED=0 runs and writes nothing, even with EDGETRACE_OUTPUT" * doctest::skip(examples_missing())) {
#ifdef EDGETRACE_TEST_PIPELINE_DISABLED
  const std::string dir = scratch_dir("disabled");
  const process_result app = run({EDGETRACE_TEST_PIPELINE_DISABLED, "--frames", "3", "--layers", "1"},
                                 {"EDGETRACE_OUTPUT=" + dir + "/disabled.etr"}, dir);
  CHECK(app.exit_code == 0);
  CHECK(app.err.empty());
  CHECK(app.out.find("tracing off") != std::string::npos);
  CHECK(list_dir(dir).empty());
#endif
}

}  // namespace pipeline_e2e_test
