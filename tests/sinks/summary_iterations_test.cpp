// SPDX-License-Identifier: MIT
// `edgetrace summary` row order, --per iterations, shares over the shown rows, waiting spans, pauses, flows and labels, on real traced runs.
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/report.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>
#include <edgetrace/sinks/summary/summary.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <support/analysis_workload.hpp>
#include <support/json_checks.hpp>
#include <support/json_lite.hpp>

namespace summary_iterations_test {

using namespace edgetrace_test;
namespace er = edgetrace::reader;

namespace {

json_lite::value summary_json(const std::vector<std::string>& args) {
  std::vector<std::string> all{"summary"};
  all.insert(all.end(), args.begin(), args.end());
  all.insert(all.end(), {"--format", "json"});
  const auto r = run_cli(all);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return parse_json(r.out);
}

std::vector<std::string> keys(const json_lite::value& doc) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) out.push_back(doc["rows"][i]["key"].str());
  return out;
}

const json_lite::value* find_by(const json_lite::value& list, const char* field, const std::string& value) {
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i][field].str() == value) return &list[i];
  return nullptr;
}

bool waiting_name(const std::string& name) { return std::regex_search(name, std::regex("^wait", std::regex::icase)); }

/// The times recording was switched off (pause), from the dump's capture records.
std::vector<std::int64_t> pause_times(const std::string& path) {
  er::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, path), r.error());
  std::vector<std::int64_t> out;
  for (const auto& w : r.writers())
    for (const auto& change : w.second.recording)
      if (!change.on) out.push_back(change.ns);
  return out;
}

/// One recording of the extras workload shared by the test cases (each
/// reads it; none changes it).
const std::string& extras_dump() {
  static const std::string path = record_workload("summary_extras", 24, 1, "extras");
  return path;
}

struct window {
  std::int64_t begin, end;
};

}  // namespace

TEST_CASE("--sort-by order lists rows by first begin; --sort-by name sorts numbers by value") {
  const std::string& path = extras_dump();
  const auto spans = reference_spans(load_dump(path));
  // First begin of each name, ties to the shallower span.
  std::map<std::string, std::pair<std::int64_t, std::uint32_t>> first;
  for (const ref_span& s : spans) {
    const auto at = std::make_pair(s.begin, s.depth);
    const auto found = first.find(s.name);
    if (found == first.end() || at < found->second) first[s.name] = at;
  }
  std::vector<std::pair<std::pair<std::int64_t, std::uint32_t>, std::string>> expected;
  for (const auto& f : first) expected.emplace_back(f.second, f.first);
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> expected_keys;
  for (const auto& e : expected) expected_keys.push_back(e.second);

  const json_lite::value doc = summary_json({path, "--sort-by", "order"});
  CHECK(keys(doc) == expected_keys);
  CHECK(doc["sorted_by"].str() == "order");
  // Execution order inside an iteration: layer_10, layer_2, layer_1.
  const auto in_order = keys(doc);
  const auto pos = [&](const std::string& k) { return std::find(in_order.begin(), in_order.end(), k) - in_order.begin(); };
  CHECK(pos("layer_10") < pos("layer_2"));
  CHECK(pos("layer_2") < pos("layer_1"));
  // '-order': latest first begin first.
  std::vector<std::string> reversed(expected_keys.rbegin(), expected_keys.rend());
  CHECK(keys(summary_json({path, "--sort-by", "-order"})) == reversed);

  // By name: layer_1, layer_2, layer_10 (not layer_1, layer_10, layer_2).
  const auto by_name = keys(summary_json({path, "--sort-by", "name"}));
  const auto npos = [&](const std::string& k) { return std::find(by_name.begin(), by_name.end(), k) - by_name.begin(); };
  CHECK(npos("layer_1") < npos("layer_2"));
  CHECK(npos("layer_2") < npos("layer_10"));
  CHECK(er::natural_less("layer_2", "layer_10"));
  CHECK_FALSE(er::natural_less("layer_10", "layer_2"));
  CHECK(er::natural_less("a9b", "a10"));
  CHECK(er::natural_less("x01", "x1"));  // same value: plain order keeps it strict
  CHECK_FALSE(er::natural_less("x1", "x01"));

  const auto table = run_cli({"summary", path, "--sort-by", "order"});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("sorted by order") != std::string::npos);
}

TEST_CASE("--per SPAN: rows count only spans inside an instance; avg/iter and % of iteration from the spans") {
  const std::string& path = extras_dump();
  const auto spans = reference_spans(load_dump(path));
  std::map<std::uint64_t, std::vector<window>> instances;  // by tid
  std::uint64_t count = 0, total = 0;
  for (const ref_span& s : spans)
    if (s.name == "iteration") {
      instances[s.tid].push_back({s.begin, s.end});
      ++count;
      total += s.dur();
    }
  REQUIRE(count == 24);
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> inside;  // calls, total
  for (const ref_span& s : spans)
    for (const window& w : instances[s.tid])
      if (s.begin >= w.begin && s.end <= w.end) {
        inside[s.name].first += 1;
        inside[s.name].second += s.dur();
        break;
      }
  CHECK(inside.count("worker_task") == 0);

  const json_lite::value doc = summary_json({path, "--per", "iteration", "--sort-by", "order"});
  const json_lite::value& per = doc["per"];
  CHECK(per["name"].str() == "iteration");
  CHECK(per["from"].str() == "span");
  CHECK(u(per["count"]) == count);
  CHECK(u(per["total_ns"]) == total);
  CHECK(keys(doc) == std::vector<std::string>{"iteration", "layer_10", "layer_2", "layer_1"});
  REQUIRE(doc["rows"].size() == inside.size());
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const json_lite::value& row = doc["rows"][i];
    const auto& want = inside.at(row["key"].str());
    CAPTURE(row["key"].str());
    CHECK(u(row["calls"]) == want.first);
    CHECK(u(row["host"]["total_ns"]) == want.second);
    CHECK(u(row["per_iteration_ns"]) == (want.second + count / 2) / count);
    CHECK(std::fabs(row["iteration_share"].num() - static_cast<double>(want.second) / static_cast<double>(total)) < 2e-6);
  }
  CHECK(std::fabs((*find_by(doc["rows"], "key", "iteration"))["iteration_share"].num() - 1.0) < 1e-9);

  // The table and the CSV carry the same columns, and the header says what
  // an iteration is and how many there were.
  const auto table = run_cli({"summary", path, "--per", "iteration"});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("per iteration: " + std::to_string(count) + " instances of span \"iteration\"") !=
        std::string::npos);
  CHECK(table.out.find("avg/iter") != std::string::npos);
  CHECK(table.out.find("% iter") != std::string::npos);
  const auto csv = run_cli({"summary", path, "--per", "iteration", "--format", "csv"});
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.substr(0, csv.out.find('\n')).find(",per_iteration_ns,iteration_share") != std::string::npos);

  const auto bad = run_cli({"summary", path, "--per", "no_such_thing"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("--per: no span or mark named \"no_such_thing\"") != std::string::npos);

  // --skip-warmup takes its iterations from --per when --iteration is not
  // given (the dump's marks would be ambiguous, or not the iterations meant).
  // Here the dump's "frame" marks would cut elsewhere than layer_10's ends.
  const json_lite::value from_per = summary_json({path, "--per", "layer_10", "--skip-warmup", "2"});
  const json_lite::value named = summary_json({path, "--per", "layer_10", "--iteration", "layer_10", "--skip-warmup", "2"});
  const json_lite::value by_marks = summary_json({path, "--per", "layer_10", "--iteration", "frame", "--skip-warmup", "2"});
  CHECK(u(from_per["per"]["count"]) < count);
  CHECK(u(from_per["spans_warmup"]) != u(by_marks["spans_warmup"]));
  CHECK(u(from_per["per"]["count"]) == u(named["per"]["count"]));
  CHECK(u(from_per["spans_warmup"]) == u(named["spans_warmup"]));
  CHECK(u(from_per["spans_warmup"]) > 0);
  CHECK(keys(from_per) == keys(named));
}

TEST_CASE("--per MARK and mark iterations are cut at a pause; a single-step flow is not a latency sample") {
  const std::string& path = extras_dump();
  const loaded_dump dump = load_dump(path);
  const auto spans = reference_spans(dump);
  const auto marks = mark_times(dump);
  const auto pauses = pause_times(path);
  REQUIRE(!pauses.empty());
  std::vector<window> windows;
  std::uint64_t cut = 0, total = 0;
  for (std::size_t i = 1; i < marks.size(); ++i) {
    const bool paused = std::any_of(pauses.begin(), pauses.end(), [&](std::int64_t p) { return p >= marks[i - 1] && p < marks[i]; });
    if (paused) {
      ++cut;
      continue;
    }
    windows.push_back({marks[i - 1], marks[i]});
    total += static_cast<std::uint64_t>(marks[i] - marks[i - 1]);
  }
  REQUIRE(cut == 1);
  std::map<std::string, std::uint64_t> inside;  // name -> total of spans beginning in a window (any thread)
  for (const ref_span& s : spans)
    for (const window& w : windows)
      if (s.begin >= w.begin && s.begin < w.end) {
        inside[s.name] += s.dur();
        break;
      }

  const json_lite::value doc = summary_json({path, "--per", "frame"});
  CHECK(doc["per"]["from"].str() == "marks");
  CHECK(u(doc["per"]["count"]) == windows.size());
  CHECK(u(doc["per"]["cut_at_pause"]) == cut);
  CHECK(u(doc["per"]["total_ns"]) == total);
  REQUIRE(doc["rows"].size() == inside.size());
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const json_lite::value& row = doc["rows"][i];
    CAPTURE(row["key"].str());
    CHECK(u(row["host"]["total_ns"]) == inside.at(row["key"].str()));
    CHECK(u(row["per_iteration_ns"]) == (inside.at(row["key"].str()) + windows.size() / 2) / windows.size());
  }

  // The iteration table: the interval across the pause is not a sample.
  const json_lite::value plain = summary_json({path});
  const json_lite::value* frame = find_by(plain["iterations"], "name", "frame");
  REQUIRE(frame != nullptr);
  CHECK((*frame)["from"].str() == "marks");
  CHECK(u((*frame)["count"]) == windows.size());
  CHECK(u((*frame)["cut_at_pause"]) == cut);
  std::uint64_t longest = 0;
  for (const window& w : windows) longest = std::max(longest, static_cast<std::uint64_t>(w.end - w.begin));
  CHECK(u((*frame)["max_ns"]) == longest);
  // per second: iterations over the time they cover, the cut interval not included.
  CHECK((*frame)["per_second"].num() ==
        doctest::Approx(static_cast<double>(windows.size()) / (static_cast<double>(total) / 1e9)).epsilon(1e-4));

  // Flows: "request" has two steps per frame, "lonely" one.
  std::uint64_t iterations = 0, lonely_steps = 0;
  for (const ref_span& s : spans) {
    iterations += s.name == "iteration";
    lonely_steps += s.name == "layer_2";
  }
  const json_lite::value* request = find_by(plain["iterations"], "name", "request");
  const json_lite::value* lonely = find_by(plain["iterations"], "name", "lonely");
  REQUIRE(request != nullptr);
  REQUIRE(lonely != nullptr);
  CHECK((*request)["from"].str() == "flow");
  CHECK(u((*request)["count"]) == iterations);
  CHECK(u((*request)["single_step"]) == 0);
  CHECK(u((*lonely)["count"]) == 0);
  CHECK(u((*lonely)["single_step"]) == lonely_steps);
  const auto table = run_cli({"summary", path});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("\"lonely\": " + std::to_string(lonely_steps) + " flow id(s) with a single recorded step") !=
        std::string::npos);
  CHECK(table.out.find("\"frame\": 1 interval(s) between marks contain a pause") != std::string::npos);
}

TEST_CASE("shares are over the rows left after the filters, without waiting spans; busy time leaves waiting out") {
  const std::string& path = extras_dump();
  const auto spans = reference_spans(load_dump(path));

  struct variant {
    std::vector<std::string> args;
    std::set<std::string> categories;  // empty: all
    bool wait_names;                   // default rule on
    std::set<std::string> wait_categories;
  };
  const std::vector<variant> variants = {
      {{}, {}, true, {}},
      {{"--category", "aux"}, {"aux"}, true, {}},
      {{"--category", "work,idle", "--wait-category", "idle"}, {"work", "idle"}, true, {"idle"}},
      {{"--wait", "off"}, {}, false, {}},
  };
  for (const variant& v : variants) {
    std::string label;
    for (const auto& a : v.args) label += a + " ";
    CAPTURE(label);
    std::vector<std::string> args{path};
    args.insert(args.end(), v.args.begin(), v.args.end());
    const json_lite::value doc = summary_json(args);
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> self;  // name -> self, waiting self
    std::uint64_t busy_self = 0, wait_self = 0;
    for (const ref_span& s : spans) {
      if (!v.categories.empty() && v.categories.count(s.category) == 0) continue;
      const bool waits = (v.wait_names && waiting_name(s.name)) || v.wait_categories.count(s.category) != 0;
      self[s.name].first += s.self;
      self[s.name].second += waits ? s.self : 0;
      (waits ? wait_self : busy_self) += s.self;
    }
    CHECK(u(doc["share_self_ns"]) == busy_self);
    CHECK(u(doc["wait_self_ns"]) == wait_self);
    REQUIRE(doc["rows"].size() == self.size());
    double sum = 0;
    for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
      const json_lite::value& row = doc["rows"][i];
      const auto& want = self.at(row["key"].str());
      CAPTURE(row["key"].str());
      CHECK(u(row["wait_self_ns"]) == want.second);
      CHECK(row["waiting"].boolean == (want.first != 0 && want.first == want.second));
      const double expected = static_cast<double>(want.first - want.second) / static_cast<double>(busy_self);
      CHECK(std::fabs(row["share"].num() - expected) < 2e-6);
      sum += row["share"].num();
    }
    CHECK(std::fabs(sum - 1.0) < 1e-4);

    // Busy time per thread: inside top-level spans minus waiting self time.
    for (const char* thread : {"main", "worker"}) {
      CAPTURE(thread);
      std::uint64_t covered = 0, waited = 0;
      for (const ref_span& s : spans) {
        if (s.thread != thread) continue;
        if (s.depth == 0) covered += s.dur();
        if ((v.wait_names && waiting_name(s.name)) || v.wait_categories.count(s.category) != 0) waited += s.self;
      }
      const json_lite::value* t = nullptr;
      for (std::size_t i = 0; i < doc["threads"].size(); ++i)
        if (doc["threads"][i]["thread"].str().rfind(std::string(thread) + " (", 0) == 0) t = &doc["threads"][i];
      REQUIRE(t != nullptr);
      CHECK(u((*t)["covered_ns"]) == covered);
      CHECK(u((*t)["wait_ns"]) == waited);
      CHECK(u((*t)["busy_ns"]) == covered - waited);
    }
  }

  // The worker waits most of its time: busy is far below covered.
  const json_lite::value doc = summary_json({path});
  for (std::size_t i = 0; i < doc["threads"].size(); ++i)
    if (doc["threads"][i]["thread"].str().rfind("worker (", 0) == 0)
      CHECK(u(doc["threads"][i]["busy_ns"]) * 2 < u(doc["threads"][i]["covered_ns"]));

  // The header names the denominator; waiting rows say "wait".
  const auto table = run_cli({"summary", path, "--category", "aux"});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("share = self / " + er::detail::readable_time(u(summary_json({path, "--category", "aux"})["share_self_ns"])) +
                       " busy self time of the 2 row(s) left after the filters") != std::string::npos);
  CHECK(table.out.find("names matching /^wait/i") != std::string::npos);
  // A --wait given explicitly matches case-sensitively, and says so.
  const auto explicit_wait = run_cli({"summary", path, "--category", "aux", "--wait", "^wait"});
  REQUIRE(explicit_wait.exit_code == 0);
  CHECK(explicit_wait.out.find("names matching /^wait/") != std::string::npos);
  CHECK(explicit_wait.out.find("/^wait/i") == std::string::npos);
  CHECK(std::regex_search(table.out, std::regex("\\nwait_queue +aux .* wait\\n")));
  CHECK(std::regex_search(table.out, std::regex("\\nworker_task +aux .* 100\\.0 %\\n")));
  const auto bad = run_cli({"summary", path, "--wait", "("});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("bad --wait regex") != std::string::npos);
}

TEST_CASE("headers say the grouping, sort and phase; the report keeps the iteration table's 'from' column") {
  const std::string& path = extras_dump();
  const auto table = run_cli({"summary", path, "--by", "arg:op", "--phase", "steady"});
  REQUIRE_MESSAGE(table.exit_code == 0, table.err);
  CHECK(table.out.find("; by arg:op, sorted by total;") != std::string::npos);
  CHECK(table.out.find("; phase steady\n") != std::string::npos);
  CHECK(table.out.find("\narg:op ") != std::string::npos);  // the key column's header
  const json_lite::value doc = summary_json({path, "--by", "name,arg:op"});
  CHECK(doc["grouping"].str() == "name,arg:op");
  CHECK(doc["group_by"].str() == "name");
  CHECK(run_cli({"summary", path, "--by", "name,arg:op"}).out.find("; by name,arg:op,") != std::string::npos);

  const std::string out = scratch("summary_extras_report.html");
  const auto r = run_cli({"report", path, "-o", out, "--by", "arg:op", "--phase", "steady", "--per", "iteration"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string html = read_file(out);
  CHECK(html.find("<h2>Summary by arg:op</h2>") != std::string::npos);
  CHECK(html.find("by arg:op &middot; sorted by total &middot; phase: steady") != std::string::npos);
  CHECK(html.find("<th>avg/iter</th><th>% iter</th>") != std::string::npos);
  CHECK(html.find("<th class=\"l\">iteration</th><th class=\"l\">from</th>") != std::string::npos);
  // Two rows named alike ("frame" marks here, flows beside them) are told apart.
  CHECK(html.find("<td class=\"l\">frame</td><td class=\"l\">marks</td>") != std::string::npos);
  CHECK(html.find("<td class=\"l\">request</td><td class=\"l\">flow</td>") != std::string::npos);
  // A flow with no latency sample (single steps only) shows dashes, as the table does, not "0 ns".
  CHECK(html.find("<td class=\"l\">lonely</td><td class=\"l\">flow</td><td>0</td><td>-</td><td>-</td>") !=
        std::string::npos);
  CHECK(html.find("0 ns") == std::string::npos);
  CHECK(html.find("% busy, ") != std::string::npos);  // the worker's waiting is shown apart
}

}  // namespace summary_iterations_test
