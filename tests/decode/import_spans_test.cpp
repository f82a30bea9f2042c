// SPDX-License-Identifier: MIT
// Spans measured elsewhere, written into a writer's stream (import/add_spans.hpp):
// each takes its place by time among the app's spans, its arguments stay its
// own even where the app's arguments of the same thread surround them, new
// tracks for threads the dump lacks, thread stats that still add up; the
// JSON reader the importers share; clock_model::to_tick.
#include <doctest/doctest.h>

#include <edgetrace/import/add_spans.hpp>
#include <edgetrace/import/json_events.hpp>
#include <edgetrace/import/onnxruntime.hpp>
#include <edgetrace/reader.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/read_dump.hpp>
#include <support/test_env.hpp>

namespace import_spans_test {

namespace er = edgetrace::reader;
using namespace edgetrace_test;

namespace {

/// An annotations record of tag 1 (an integer argument).
void int_arg(payload& p, std::uint64_t thread, std::uint64_t tick, std::uint64_t site, std::int64_t value) {
  payload body;
  body.varint(thread).varint(tick).varint(site).varint(fmt::zigzag(value));
  p.u8(1).varint(body.size()).raw(body.data());
}

/// One writer, tick = ns: thread 1 (tid 100) with spans frame [0, 1000]
/// holding run [100, 900], frame [1000, 2000] holding run [1100, 1900];
/// arguments "app.k" at 50 (frame 1) and 950 (frame 1, after run) and 1050,
/// all in one annotations chunk. `ended`: with thread stats and an end record.
std::string app_dump(const std::string& name, bool ended) {
  dump_builder d;
  d.process(7).calibration(7, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "app");
  defs.site(1, fmt::site_kind::span, 1, "frame");
  defs.site(2, fmt::site_kind::span, 1, "run");
  defs.site(3, fmt::site_kind::arg, 1, "app.k");
  d.defs(7, defs).thread(7, 1, 100, "main");
  events e1(1, 900);
  e1.span(2, 100, 900).span(1, 0, 1000);
  d.event_chunk(7, e1);
  payload notes;
  int_arg(notes, 1, 50, 3, 1);
  int_arg(notes, 1, 950, 3, 2);
  int_arg(notes, 1, 1050, 3, 3);
  d.chunk(fmt::chunk_type::annotations, 7, notes);
  events e2(1, 1900);
  e2.span(2, 1100, 1900).span(1, 1000, 2000);
  d.event_chunk(7, e2);
  if (ended) d.thread_stats(7, 1, 7, 0).end(7);
  return saved_dump(d, name);
}

using row = walked_span;

const row& find(const std::vector<row>& rows, const std::string& name, std::int64_t begin) {
  for (const auto& x : rows)
    if (x.name == name && x.begin_ns == begin) return x;
  FAIL("no span " << name << " at " << begin);
  return rows.front();
}

std::string import_into(const std::string& dump, const er::imported_spans& spans, const std::string& name,
                        er::added_spans& added) {
  er::dump_reader r;
  REQUIRE(opened(r, dump));
  const std::string out = fresh(name);
  std::FILE* f = std::fopen(out.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::string error;
  CHECK(er::write_dump_with_spans(r, r.writers().begin()->first, spans, f, added, error));
  CHECK(error.empty());
  std::fclose(f);
  return out;
}

}  // namespace

TEST_CASE("add_spans: nested by time in the app's spans, their arguments their own amid the app's") {
  for (const bool ended : {true, false}) {
    CAPTURE(ended);
    const std::string dump = app_dump(ended ? "import_app.etr" : "import_app_cut.etr", ended);
    er::imported_spans spans;
    // In run 1 two nodes, in run 2 one, each with arguments; one on a
    // thread the dump does not have; one after every app span.
    spans.add_span(100, "engine", "node_a", 200, 400);
    spans.add_text("op", "Conv");
    spans.add_int("size", -5);
    spans.add_span(100, "engine", "node_b", 400, 800);  // touches node_a
    spans.add_real("ratio", 0.25);
    spans.add_bool("fused", true);
    spans.add_span(100, "engine", "node_c", 1200, 1200);  // a point
    spans.add_text("op", "Relu");
    spans.add_span(555, "engine", "worker_job", 300, 600);
    spans.add_int("job", 9);
    spans.name_thread(555, "ort worker");
    spans.add_span(100, "engine", "late", 2500, 2600);
    er::added_spans added;
    const std::string out = import_into(dump, spans, ended ? "import_out.etr" : "import_out_cut.etr", added);
    CHECK(added.spans == 5);
    CHECK(added.args == 6);
    CHECK(added.threads_created == 1);
    CHECK(added.threads_joined == 1);
    CHECK(added.annotation_chunks_rewritten == 1);  // app args at 50 and 950 straddle node_a's and node_b's

    const auto rows = walked_spans(out);
    const row& a = find(rows, "node_a", 200);
    CHECK(a.depth == 2);
    CHECK(a.args == std::map<std::string, std::string>{{"op", "Conv"}, {"size", "-5"}});
    const row& b = find(rows, "node_b", 400);
    CHECK(b.depth == 2);
    CHECK(b.args == std::map<std::string, std::string>{{"ratio", "0.25"}, {"fused", "true"}});
    const row& c = find(rows, "node_c", 1200);
    CHECK(c.depth == 2);
    CHECK(c.args == std::map<std::string, std::string>{{"op", "Relu"}});
    // The app's spans: run loses its nodes' time, frame keeps its own and
    // its arguments.
    CHECK(find(rows, "run", 100).self_ns == 800 - 600);
    CHECK(find(rows, "run", 1100).self_ns == 800);
    const row& frame1 = find(rows, "frame", 0);
    CHECK(frame1.self_ns == 200);
    CHECK(frame1.args == std::map<std::string, std::string>{{"app.k", "2"}});  // 50 then 950: the last shown
    CHECK(find(rows, "frame", 1000).args == std::map<std::string, std::string>{{"app.k", "3"}});
    const row& w = find(rows, "worker_job", 300);
    CHECK(w.thread == "ort worker");
    CHECK(w.depth == 0);
    CHECK(w.args == std::map<std::string, std::string>{{"job", "9"}});
    CHECK(find(rows, "late", 2500).depth == 0);

    // Thread stats add up (info's check), where the app wrote them.
    er::dump_reader r;
    REQUIRE(opened(r, out));
    REQUIRE(r.read_events([](const er::event&) {}));
    for (const auto* t : r.threads_in_order()) {
      CAPTURE(t->name);
      CHECK(t->missing() == 0);
      if (ended || t->os_tid == 555) CHECK(t->stats_written == t->decoded());
    }
    CHECK(r.complete() == ended);
    er::dump_reader input;
    REQUIRE(opened(input, dump));
    CHECK(r.damage_count() == input.damage_count());  // a stream cut off stays so, no worse
  }
}

TEST_CASE("add_spans: a span file order puts before the app's chunks still takes its place by time") {
  // Spans far apart: many events chunks of the app, imported spans inside
  // several of them (emitted before the first app chunk that starts after).
  dump_builder d;
  d.process(7).calibration(7, {{0, 0}, {1000000000, 1000000000}});
  definitions defs;
  defs.category(1, "app");
  defs.site(1, fmt::site_kind::span, 1, "run");
  d.defs(7, defs).thread(7, 1, 100, "main");
  er::imported_spans spans;
  for (std::uint64_t k = 0; k < 50; ++k) {
    events e(1, k * 1000 + 900);
    e.span(1, k * 1000, k * 1000 + 900);
    d.event_chunk(7, e);
    spans.add_span(100, "engine", "node", static_cast<std::int64_t>(k * 1000 + 100), static_cast<std::int64_t>(k * 1000 + 500));
  }
  d.thread_stats(7, 1, 50, 0).end(7);
  const std::string dump = saved_dump(d, "import_many.etr");
  er::added_spans added;
  const auto rows = walked_spans(import_into(dump, spans, "import_many_out.etr", added));
  int nodes = 0;
  for (const auto& x : rows) {
    if (x.name == "node") {
      ++nodes;
      CHECK(x.depth == 1);
    } else {
      CHECK(x.self_ns == 500);
    }
  }
  CHECK(nodes == 50);
}

TEST_CASE("clock_model::to_tick: the first tick at or after a time, through every fit") {
  er::clock_model m;
  m.build({{1000, 5000, 0}, {3001000, 1005000, 0}, {9001000, 2005000, 0}}, 1, 0);  // 3 then 6 ticks a ns
  for (std::int64_t ns : {std::int64_t{5000}, std::int64_t{5001}, std::int64_t{777777}, std::int64_t{1005000},
                          std::int64_t{1500001}, std::int64_t{2005000}, std::int64_t{2500000}, std::int64_t{100}}) {
    CAPTURE(ns);
    const std::uint64_t t = m.to_tick(ns);
    CHECK(m.to_ns(t) >= ns);
    if (t > 0) CHECK(m.to_ns(t - 1) < ns);
  }
  er::clock_model nominal;
  nominal.build({}, 2, 19200000);  // a 19.2 MHz counter, no pair
  const std::uint64_t t = nominal.to_tick(1000000);
  CHECK(nominal.to_ns(t) >= 1000000);
  CHECK(nominal.to_ns(t - 1) < 1000000);
}

namespace {

std::vector<er::json_value> events_of(const std::string& text, std::string* error = nullptr) {
  const std::string path = fresh("json_events.json");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  f = std::fopen(path.c_str(), "rb");
  er::json_event_reader reader(f);
  std::vector<er::json_value> out;
  if (reader.start()) {
    er::json_value v;
    while (reader.next(v)) out.push_back(v);
  }
  std::fclose(f);
  if (error) *error = reader.error();
  return out;
}

}  // namespace

TEST_CASE("json_event_reader: both forms, escapes, numbers kept as written, malformed input said where") {
  auto e = events_of(R"([{"a":"x\u00e9\ud83d\ude00\n","n":-12,"f":1.5e3,"b":true,"z":null,"l":[1,[2]]}, 7])");
  REQUIRE(e.size() == 2);
  CHECK(e[0].find("a")->text == "x\xc3\xa9\xf0\x9f\x98\x80\n");
  std::int64_t n = 0;
  CHECK(e[0].find("n")->integer(n));
  CHECK(n == -12);
  CHECK(!e[0].find("f")->integer(n));
  CHECK(e[0].find("f")->text == "1.5e3");
  CHECK(e[0].find("b")->boolean);
  CHECK(e[0].find("l")->dump() == "[1,[2]]");
  CHECK(e[1].text == "7");
  e = events_of(R"({"displayTimeUnit":"ns","other":{"x":[1]},"traceEvents":[{"ph":"X"}]})");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("ph")->text == "X");
  std::string error;
  for (const char* bad : {"", "{}", "[1,", "[1 2]", "[\"\\ud800\"]", "[01]", "[-]", "[\"a\x01\"]", "[tru]", "[1,]"}) {
    CAPTURE(bad);
    events_of(bad, &error);
    CHECK(!error.empty());
    CHECK(error.find(" at byte ") != std::string::npos);
  }
  events_of(std::string(100, '[') + std::string(100, ']'), &error);
  CHECK(error.find("nested deeper than 64") != std::string::npos);
  std::string big = "[";
  for (int i = 0; i < 65; ++i) big += "[";
  for (int i = 0; i < 65; ++i) big += "]";
  events_of(big + "]", &error);
  CHECK(error.find("nested deeper") != std::string::npos);
  events_of("[" + std::string(64, '[') + std::string(64, ']') + "]", &error);
  CHECK(error.empty());
}

TEST_CASE("read_onnxruntime_profile: every prefix of a real profile is read or refused with a reason") {
  const std::string path = std::string(EDGETRACE_TEST_DATA) + "/onnxruntime/run_2026-12-06_06-24-38_339.json";
  std::string text;
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    REQUIRE(f != nullptr);
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
    std::fclose(f);
  }
  REQUIRE(text.size() > 1000);
  er::onnxruntime_profile p;
  std::string error;
  REQUIRE(er::read_onnxruntime_profile(path, p, error));
  CHECK(p.events.size() == 11);
  CHECK(p.has_stamp);
  const std::string cut = fresh("onnxruntime_prefix.json");
  std::size_t read = 0, refused = 0;
  for (std::size_t n = 0; n < text.size(); n += 7) {
    std::FILE* f = std::fopen(cut.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(text.data(), 1, n, f);
    std::fclose(f);
    error.clear();
    if (er::read_onnxruntime_profile(cut, p, error)) {
      ++read;
      CHECK(n > text.find_last_of(']'));  // only a file whose array is whole
    } else {
      ++refused;
      CHECK(error.rfind("not an ONNX Runtime profile: ", 0) == 0);
    }
  }
  CHECK(refused > 0);  // a cut file ends inside the array: refused, never half-imported
}

}  // namespace import_spans_test
