// SPDX-License-Identifier: MIT
// `edgetrace import`: real ONNX Runtime profiles (tests/data/onnxruntime,
// written by ort_app.cpp with ONNX Runtime 1.30 beside the dump of the same
// run) become spans of the app's thread, nested in its span around Run(),
// with ORT's arguments typed; each time base; bad input refused untouched.
#include <doctest/doctest.h>

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/test_env.hpp>

namespace import_test {

using namespace edgetrace_test;
namespace et = edgetrace::reader;

namespace {

const std::string data = std::string(EDGETRACE_TEST_DATA) + "/onnxruntime";

/// The profiles of one mode (`session_...json`), sorted.
std::vector<std::string> profiles(const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(data.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix + "_", 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0)
        out.push_back(data + "/" + name);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  REQUIRE(f.good());
}

process_result import(const std::string& dump, const std::vector<std::string>& inputs, const std::string& out) {
  std::vector<std::string> argv{cli, "import", dump};
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  argv.push_back("-o");
  argv.push_back(out);
  return run(argv);
}

using span_row = walked_span;

std::int64_t total(const std::vector<span_row>& rows, const std::string& name, bool self) {
  std::int64_t sum = 0;
  for (const auto& s : rows)
    if (s.name == name) sum += self ? static_cast<std::int64_t>(s.self_ns) : s.end_ns - s.begin_ns;
  return sum;
}

/// The ORT events of a profile by kind: nodes, model_run and all.
struct profile_counts {
  int nodes = 0, runs = 0, all = 0;
};
profile_counts count_profile(const std::string& path) {
  const std::string text = read_file(path);
  profile_counts c;
  for (std::size_t at = 0; (at = text.find("\"cat\" : \"", at)) != std::string::npos; ++at) {
    ++c.all;
    if (text.compare(at + 9, 4, "Node") == 0) ++c.nodes;
  }
  for (std::size_t at = 0; (at = text.find("\"name\" :\"model_run\"", at)) != std::string::npos; ++at) ++c.runs;
  return c;
}

/// The innermost app span (category app) that holds `s`, or null.
const span_row* app_parent(const std::vector<span_row>& rows, const span_row& s) {
  const span_row* best = nullptr;
  for (const auto& a : rows)
    if (a.category == "app" && a.begin_ns <= s.begin_ns && a.end_ns >= s.end_ns && (!best || a.depth > best->depth))
      best = &a;
  return best;
}

/// The app spans (category app) that hold a model_run, the innermost of
/// each; REQUIREs one for every model_run.
std::vector<const span_row*> run_hosts(const std::vector<span_row>& rows) {
  std::vector<const span_row*> hosts;
  for (const auto& s : rows)
    if (s.name == "model_run") {
      const span_row* parent = app_parent(rows, s);
      REQUIRE(parent != nullptr);
      hosts.push_back(parent);
    }
  return hosts;
}

}  // namespace

TEST_CASE("import: a session profile becomes the app thread's spans, nested in the app's span around Run()") {
  const auto inputs = profiles("session");
  REQUIRE(inputs.size() == 1);
  const profile_counts expected = count_profile(inputs[0]);
  REQUIRE(expected.runs == 20);
  const std::string out = fresh("import_session.etr");
  const process_result p = import(data + "/session.etr", inputs, out);
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK(contains(p.err, "time base from the app's onnxruntime.profiling_start_ns argument: 20 of 20 runs inside an app span"));

  const auto before = walked_spans(data + "/session.etr");
  const auto after = walked_spans(out);
  int nodes = 0, inside_run = 0, ort = 0;
  for (const auto& s : after) {
    if (s.category.rfind("onnxruntime", 0) != 0) continue;
    ++ort;
    if (s.category != "onnxruntime") continue;
    ++nodes;
    const span_row* parent = app_parent(after, s);
    if (parent && parent->name == "ort_run") ++inside_run;
    // Every argument ORT wrote, typed; the node's name without the suffix.
    CHECK(s.name.find("_kernel_time") == std::string::npos);
    CHECK(s.args.count("op_name") == 1);
    CHECK(s.arg("provider") == "CPUExecutionProvider");
    CHECK(s.args.count("node_index") == 1);
    CHECK(s.arg("input_type_shape").rfind("float[", 0) == 0);
    CHECK(std::atoll(s.arg("output_size").c_str()) > 0);
  }
  CHECK(ort == expected.all);
  CHECK(nodes == expected.nodes);
  CHECK(inside_run * 100 >= nodes * 99);  // the target: 99 %; measured: all
  CHECK(inside_run == nodes);
  // model_run is ort_run's child, the nodes model_run's descendants: Run's
  // self time drops by model_run's time, and the app's spans keep theirs.
  const std::int64_t runs = total(after, "model_run", false);
  CHECK(total(before, "ort_run", true) - total(after, "ort_run", true) == runs);
  for (const char* name : {"frame", "preprocess", "postprocess"}) CHECK(total(before, name, true) == total(after, name, true));
  // setup holds ORT's model loading and session initialization now.
  CHECK(total(before, "setup", true) - total(after, "setup", true) ==
        total(after, "model_loading_array", false) + total(after, "session_initialization", false));
  for (const auto& s : after)
    if (s.name == "model_run") CHECK(s.depth == 2);

  // The per-op-type table.
  const process_result by_op = run({cli, "summary", out, "--by", "arg:op_name"});
  CHECK(by_op.exit_code == 0);
  CHECK(contains(by_op.out, "op_name=Conv"));
  CHECK(contains(by_op.out, "op_name=MaxPool"));
  // The dump reads clean: records written and read agree.
  const process_result info = run({cli, "info", out});
  CHECK(info.exit_code == 0);
  CHECK(!contains(info.out, "missing"));
  CHECK(contains(info.out, "ok"));
}

TEST_CASE("import: without the anchor, the start is fitted near the file name's time, or over the whole dump") {
  const auto inputs = profiles("plain");
  REQUIRE(inputs.size() == 1);
  const std::string out = fresh("import_plain.etr");
  process_result p = import(data + "/plain.etr", inputs, out);
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK(contains(p.err, "time base from the profile's file name"));
  CHECK(contains(p.err, "20 of 20 runs inside an app span"));
  // Renamed: no stamp left, the fit searches the whole dump.
  const std::string renamed = fresh("renamed_profile.json");
  write_text_file(renamed, read_file(inputs[0]));
  const std::string out2 = fresh("import_plain_renamed.etr");
  p = import(data + "/plain.etr", {renamed}, out2);
  REQUIRE(p.exit_code == 0);
  CHECK(contains(p.err, "time base from fitting model_run into the app's spans: 20 of 20 runs inside an app span"));
  for (const std::string& path : {out, out2}) {
    const auto after = walked_spans(path);
    const auto hosts = run_hosts(after);
    CHECK(hosts.size() == 20);
    for (const span_row* host : hosts) CHECK(host->name == "ort_run");
  }
}

TEST_CASE("import: RunOptions profiles (one run each) land in the app spans the app marked") {
  const auto inputs = profiles("run");
  REQUIRE(inputs.size() == 4);
  const std::string out = fresh("import_run.etr");
  const process_result p = import(data + "/run.etr", inputs, out);
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK(!contains(p.err, "warning"));
  const auto after = walked_spans(out);
  std::set<std::string> frames;
  const auto hosts = run_hosts(after);
  CHECK(hosts.size() == 4);
  for (const span_row* host : hosts) {
    CHECK(host->name == "ort_run");
    frames.insert(host->arg("onnxruntime.run_profiled"));
  }
  CHECK(frames == std::set<std::string>{"5", "15", "25", "35"});
}

TEST_CASE("import: bad input gets one line and exit 2, nothing written, the dump untouched") {
  const std::string dump = data + "/plain.etr";
  const std::string dump_bytes = read_file(dump);
  const std::string out = fresh("import_bad.etr");
  const auto refused = [&](const std::vector<std::string>& inputs, const std::string& why) {
    const process_result p = import(dump, inputs, out);
    INFO(p.err);
    CHECK(p.exit_code == 2);
    CHECK(contains(p.err, why));
    CHECK(line_count(p.err) == 1);
    CHECK(!file_exists(out));
    CHECK(read_file(dump) == dump_bytes);
  };
  const std::string garbage = fresh("not_json.json");
  write_text_file(garbage, "this is not JSON");
  refused({garbage}, "not an ONNX Runtime profile: expected a JSON array of trace events ('[') at byte 0");
  const std::string cut = fresh("cut.json");
  const std::string plain = read_file(profiles("plain")[0]);
  write_text_file(cut, plain.substr(0, plain.size() / 2));
  refused({cut}, "not an ONNX Runtime profile:");
  const std::string chrome = fresh("chrome.json");
  write_text_file(chrome, R"({"traceEvents":[{"ph":"X","name":"a","cat":"app","ts":1,"dur":2,"pid":1,"tid":1}]})");
  refused({chrome}, "no complete event with cat \"Node\" or \"Session\"");
  refused({fresh("missing.json")}, "cannot open");
  // Another process: the session run's profile against the plain run's dump.
  refused({profiles("session")[0]}, "a profile of process ");
  // The same process id, another run: nothing fits.
  std::string other = read_file(profiles("session")[0]);
  et::dump_reader r;
  REQUIRE(opened(r, dump));
  const std::string plain_pid = std::to_string(r.writers().begin()->second.pid);
  const std::string session_pid = other.substr(other.find("\"pid\" :") + 7, other.find(',', other.find("\"pid\" :")) - other.find("\"pid\" :") - 7);
  for (std::size_t at = 0; (at = other.find(session_pid, at)) != std::string::npos; at += plain_pid.size())
    other.replace(at, session_pid.size(), plain_pid);
  const std::string foreign = fresh("other_run.json");
  write_text_file(foreign, other);
  refused({foreign}, "the profile does not fit this dump: at best ");
  // Twice: the output of an import already holds ORT's spans.
  const std::string once = fresh("import_once.etr");
  REQUIRE(import(dump, profiles("plain"), once).exit_code == 0);
  const process_result twice = import(once, profiles("plain"), fresh("import_twice.etr"));
  CHECK(twice.exit_code == 2);
  CHECK(contains(twice.err, "already holds ONNX Runtime spans"));
  // Usage: no output, or not .etr.
  CHECK(run({cli, "import", dump, profiles("plain")[0]}).exit_code == 1);
  CHECK(run({cli, "import", dump, profiles("plain")[0], "-o", fresh("x.json")}).exit_code == 1);
}

}  // namespace import_test
