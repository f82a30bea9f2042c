// SPDX-License-Identifier: MIT
// Tests of sinks/chrome_json/: the JSON is parsed back and its content checked, not just its syntax.
#include <doctest/doctest.h>

#include <edgetrace/reader.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/read_dump.hpp>
#include <support/files.hpp>
#include <support/json_lite.hpp>

namespace chrome_json_test {

namespace er = edgetrace::reader;
using namespace edgetrace_test;
using json_lite::value;

namespace {

/// Converts `b` and parses the result.
struct converted {
  er::dump_reader reader;
  std::string text;
  value doc;
  er::chrome_json_result result;
  bool ok = false;

  converted(const bytes& b, const std::string& name) {
    const std::string path = temp_path(name);
    REQUIRE(write_file(path, b));
    REQUIRE(reader.open(path));
    char* data = nullptr;
    std::size_t size = 0;
    std::FILE* out = open_memstream(&data, &size);
    REQUIRE(out);
    er::chrome_json_options options;
    options.source_name = name;
    std::string error;
    ok = er::write_chrome_json(reader, out, options, &result, &error);
    std::fclose(out);
    text.assign(data, size);
    std::free(data);
    std::string parse_error;
    const bool parsed = json_lite::parse(text, doc, parse_error);
    INFO(parse_error);
    REQUIRE(parsed);
    CHECK(json_lite::is_utf8(text));
  }
  const value& events() const { return doc["traceEvents"]; }
  std::vector<const value*> with(const std::string& ph) const {
    std::vector<const value*> out;
    for (const value& e : events().items)
      if (e["ph"].str() == ph) out.push_back(&e);
    return out;
  }
  const value* named(const std::string& name) const {
    for (const value& e : events().items)
      if (e["name"].str() == name) return &e;
    return nullptr;
  }
};

/// "12.345" -> 12345 ns; requires exactly three decimals (no float formatting).
std::int64_t us_text_to_ns(const value& v) {
  REQUIRE(v.is_number());
  const std::string& t = v.text;
  const auto dot = t.find('.');
  REQUIRE(dot != std::string::npos);
  REQUIRE(t.size() - dot - 1 == 3);
  return std::stoll(t.substr(0, dot)) * 1000 + std::stoll(t.substr(dot + 1));
}

/// A dur in ns: three decimals exactly, or the longer text of a dur made
/// exact for speedscope, which must lie within 1e-6 ns of a whole ns.
std::int64_t dur_text_to_ns(const value& v) {
  REQUIRE(v.is_number());
  const auto dot = v.text.find('.');
  if (dot != std::string::npos && v.text.size() - dot - 1 == 3) return us_text_to_ns(v);
  const double ns = std::strtod(v.text.c_str(), nullptr) * 1000.0;
  CHECK(std::fabs(ns - std::nearbyint(ns)) < 1e-6);
  return std::llround(ns);
}

/// Replays speedscope 1.25's Trace Event import of `doc`'s X events: per
/// (pid, tid), the origin is the smallest ts; a slice starts at ts - origin
/// and ends at (ts - origin) + dur, all in doubles parsed from the text.
/// Returns, per track, every slice start and end as (ns, viewer time);
/// those must follow the ns order, equal ns giving equal times.
std::size_t viewer_order_breaks(const value& doc) {
  struct point {
    std::int64_t ns;
    double at;
  };
  std::map<std::pair<std::string, std::string>, std::vector<const value*>> tracks;
  for (const value& e : doc["traceEvents"].items)
    if (e["ph"].str() == "X") tracks[{e["pid"].text, e["tid"].text}].push_back(&e);
  std::size_t breaks = 0;
  for (const auto& track : tracks) {
    double origin = std::numeric_limits<double>::infinity();
    for (const value* e : track.second) origin = std::min(origin, std::strtod((*e)["ts"].text.c_str(), nullptr));
    std::vector<point> points;
    for (const value* e : track.second) {
      const std::int64_t begin = us_text_to_ns((*e)["ts"]);
      const double start = std::strtod((*e)["ts"].text.c_str(), nullptr) - origin;
      points.push_back({begin, start});
      points.push_back({begin + dur_text_to_ns((*e)["dur"]), start + std::strtod((*e)["dur"].text.c_str(), nullptr)});
    }
    std::sort(points.begin(), points.end(), [](const point& a, const point& b) { return a.ns < b.ns; });
    for (std::size_t i = 1; i < points.size(); ++i) {
      const bool same = points[i].ns == points[i - 1].ns;
      if ((same && points[i].at != points[i - 1].at) || (!same && points[i].at < points[i - 1].at)) ++breaks;
    }
  }
  return breaks;
}

}  // namespace

TEST_CASE("sample dump: structure, metadata, spans, instants, counters, loss") {
  converted c(sample_dump().build(), "sample.etr");
  REQUIRE(c.ok);
  CHECK(c.doc["displayTimeUnit"].str() == "ns");
  const value& other = c.doc["otherData"];
  CHECK(other["edgetrace_version"].str() == er::tool_version);
  CHECK(other["source"].str() == "sample.etr");
  CHECK(other["format_version"].str() == (std::to_string(edgetrace::format::version_major) + "." + std::to_string(edgetrace::format::version_minor)));
  CHECK(other["clock_source"].str() == "CLOCK_MONOTONIC");
  CHECK(other["complete"].is_bool());
  CHECK(other["complete"].boolean);
  CHECK(other["diagnostics"].str().find("0 problem(s)") == 0);

  // Metadata first.
  const auto& items = c.events().items;
  REQUIRE(items.size() == 5 + 7);
  for (std::size_t i = 0; i < 5; ++i) CHECK(items[i]["ph"].str() == "M");
  const value* process = c.named("process_name");
  REQUIRE(process);
  CHECK((*process)["args"]["name"].str() == "app");  // viewers add the pid themselves
  CHECK((*process)["pid"].text == "1234");
  std::map<std::string, std::string> thread_names;
  std::map<std::string, double> sort_index;
  for (const value* m : c.with("M")) {
    if ((*m)["name"].str() == "thread_name") thread_names[(*m)["tid"].text] = (*m)["args"]["name"].str();
    if ((*m)["name"].str() == "thread_sort_index") sort_index[(*m)["tid"].text] = (*m)["args"]["sort_index"].num(-1);
  }
  CHECK(thread_names["1234"] == "main");
  CHECK(thread_names["1235"] == "worker");
  CHECK(sort_index["1234"] == 0);
  CHECK(sort_index["1235"] == 1);

  // Spans: the earliest timestamp (model's begin) is exactly 1.000 µs.
  const auto spans = c.with("X");
  REQUIRE(spans.size() == 4);
  const value* model = c.named("model");
  REQUIRE(model);
  CHECK((*model)["ts"].text == "1.000");
  CHECK((*model)["dur"].text == "1.000");
  CHECK((*model)["cat"].str() == "infer");
  CHECK((*model)["pid"].text == "1234");
  CHECK((*model)["tid"].text == "1234");
  CHECK_FALSE(model->has("args"));  // no per-event args on spans (speedscope frames)
  const value* conv = c.named("conv1");
  REQUIRE(conv);
  CHECK((*conv)["ts"].text == "1.100");
  // 1.100 - 1.000 + 0.400 is past 1.500 - 1.000 in doubles: the dur is the
  // double just below 0.4 that speedscope ends the slice with at 0.5.
  CHECK(dur_text_to_ns((*conv)["dur"]) == 400);
  CHECK((*conv)["dur"].text == "0.3999999999999999");
  for (const value* e : spans) {
    CHECK(us_text_to_ns((*e)["ts"]) >= 1000);
    CHECK((*e)["pid"].is_number());
    CHECK((*e)["tid"].is_number());
  }

  const value* frame = c.named("frame");
  REQUIRE(frame);
  CHECK((*frame)["ph"].str() == "i");
  CHECK((*frame)["s"].str() == "t");
  CHECK((*frame)["ts"].text == "2.100");
  CHECK((*frame)["cat"].str() == "io");

  const value* depth = c.named("queue_depth");
  REQUIRE(depth);
  CHECK((*depth)["ph"].str() == "C");
  CHECK((*depth)["args"]["queue_depth"].num() == 7.5);
  CHECK((*depth)["ts"].text == "2.200");

  const value* loss = c.named("edgetrace: 5 records lost");
  REQUIRE(loss);
  CHECK((*loss)["cat"].str() == "edgetrace");
  CHECK((*loss)["ph"].str() == "i");
  CHECK((*loss)["s"].str() == "t");
  CHECK((*loss)["ts"].text == "1.800");
  CHECK((*loss)["tid"].text == "1235");
  CHECK((*loss)["args"]["lost"].text == "5");
  CHECK((*loss)["args"]["first_us"].text == "1.800");
  CHECK((*loss)["args"]["last_us"].text == "1.900");

  CHECK(c.result.spans == 4);
  CHECK(c.result.instants == 1);
  CHECK(c.result.counters == 1);
  CHECK(c.result.loss_markers == 1);
}

TEST_CASE("children never stick out of their parents after rounding") {
  // A 3 GHz TSC with piecewise calibration whose joins fall inside spans:
  // every tick boundary rounds a different way.
  dump_builder d;
  process_fields pf;
  pf.source = fmt::clock_source::x86_tsc;
  pf.nominal_rate = 0;
  d.process(1, pf);
  d.calibration(1, {{0, 1000}, {3001, 2000}, {6500, 3167}, {20000, 7600}, {40001, 14267}});
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "parent").site(2, fmt::site_kind::span, 1, "child");
  defs.site(3, fmt::site_kind::span, 1, "grandchild");
  d.defs(1, defs).thread(1, 1, 10, "t");
  events e(1, 0);
  std::uint64_t t = 1;
  for (int i = 0; i < 400; ++i) {
    const std::uint64_t p0 = t, c0 = p0 + static_cast<std::uint64_t>(i % 3), g0 = c0 + static_cast<std::uint64_t>(i % 2);
    const std::uint64_t g1 = g0 + 1 + static_cast<std::uint64_t>(i % 5), c1 = g1 + static_cast<std::uint64_t>(i % 3);
    const std::uint64_t p1 = c1 + static_cast<std::uint64_t>(i % 2);
    e.span(3, g0, g1).span(2, c0, c1).span(1, p0, p1);
    t = p1 + 1 + static_cast<std::uint64_t>(i % 4) * 37;
  }
  d.event_chunk(1, e).end(1);
  converted c(d.build(), "nesting.etr");
  REQUIRE(c.ok);
  const auto spans = c.with("X");
  REQUIRE(spans.size() == 1200);
  for (std::size_t i = 0; i + 2 < spans.size(); i += 3) {
    const std::int64_t gb = us_text_to_ns((*spans[i])["ts"]), ge = gb + dur_text_to_ns((*spans[i])["dur"]);
    const std::int64_t cb = us_text_to_ns((*spans[i + 1])["ts"]), ce = cb + dur_text_to_ns((*spans[i + 1])["dur"]);
    const std::int64_t pb = us_text_to_ns((*spans[i + 2])["ts"]), pe = pb + dur_text_to_ns((*spans[i + 2])["dur"]);
    CAPTURE(i);
    CHECK(pb <= cb);
    CHECK(ce <= pe);
    CHECK(cb <= gb);
    CHECK(ge <= ce);
    CHECK(gb >= 1000);
  }
  CHECK((*spans[2])["ts"].text == "1.000");  // the very first parent starts the timeline
  CHECK(viewer_order_breaks(c.doc) == 0);
}

namespace {

/// Back-to-back slices some ms into the run (ts 3308.960 + dur 0.030 is
/// past 3308.990 in doubles), each third one inside a parent that ends
/// with it, on two threads whose first slices start at different times.
bytes touching_dump() {
  dump_builder d;
  d.process(1, process_fields{});
  d.calibration(1, {{0, 1000000}, {1000000000, 1001000000}});
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "load").site(2, fmt::site_kind::span, 1, "layer");
  defs.site(3, fmt::site_kind::span, 1, "iteration");
  d.defs(1, defs).thread(1, 1, 10, "a").thread(1, 2, 11, "b");
  for (std::uint64_t thread = 1; thread <= 2; ++thread) {
    std::uint64_t t = 3300000 + thread * 1237;
    events e(thread, t);
    for (int i = 0; i < 3000; ++i) {
      const std::uint64_t mid = t + 7 + static_cast<std::uint64_t>(i * 13 % 97), end = mid + 3 + static_cast<std::uint64_t>(i % 41);
      e.span(1, t, mid).span(2, mid, end);
      if (i % 3 == 0) e.span(3, t, end);
      t = end;  // the next iteration starts where this one ended
    }
    d.event_chunk(1, e);
  }
  d.end(1);
  return d.build();
}

value parse_json_file(const std::string& path) {
  value doc;
  std::string error;
  const bool parsed = json_lite::parse(read_file(path), doc, error);
  INFO(error);
  REQUIRE(parsed);
  return doc;
}

}  // namespace

TEST_CASE("slices that touch in ns touch in speedscope too: a slice never ends after the next one starts") {
  converted c(touching_dump(), "touching.etr");
  REQUIRE(c.ok);
  REQUIRE(c.with("X").size() == 2 * 7000);
  // Without the exact dur, hundreds of ends land after the next start.
  CHECK(viewer_order_breaks(c.doc) == 0);
  CHECK(c.result.exact_durs > 0);
  CHECK(c.result.exact_durs < c.result.spans / 2);  // most durs keep their three decimals
}

TEST_CASE("slices that touch stay in order in speedscope when a selection leaves some out, and in every file of a split") {
  const std::string path = temp_path("touching_selected.etr");
  REQUIRE(write_file(path, touching_dump()));
  er::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, path), r.error());
  er::chrome_json_options options;
  std::size_t slices = 0;
  SUBCASE("--filter: the iterations left out") {
    REQUIRE(options.filter.compile("^(load|layer)$"));
    slices = 2 * 6000;
  }
  SUBCASE("--window from the middle: each track's first slice is no longer its first span") {
    options.window_begin_ns = r.first_ns() + (r.last_ns() - r.first_ns()) / 2;
    slices = 0;
  }
  SUBCASE("--min-dur: the shortest left out") {
    options.min_dur_ns = 20;
    slices = 0;
  }
  const std::string out = temp_path("touching_selected.json");
  std::FILE* f = std::fopen(out.c_str(), "wb");
  REQUIRE(f);
  er::chrome_json_result result;
  std::string error;
  CHECK_MESSAGE(er::write_chrome_json(r, f, options, &result, &error), error);
  REQUIRE(std::fclose(f) == 0);
  const value doc = parse_json_file(out);
  std::size_t x = 0;
  for (const value& e : doc["traceEvents"].items) x += e["ph"].str() == "X" ? 1 : 0;
  CHECK(x > 1000);
  if (slices != 0) CHECK(x == slices);
  CHECK(x < 2 * 7000);
  CHECK(viewer_order_breaks(doc) == 0);
  CHECK(result.exact_durs > 0);

  std::vector<er::chrome_json_part> parts;
  er::chrome_json_input in;
  in.reader = &r;
  REQUIRE_MESSAGE(er::write_chrome_json_split({in}, temp_path("touching_split.json"), 200000, options, parts, &error),
                  error);
  CHECK(parts.size() >= 3);
  for (const er::chrome_json_part& part : parts) {
    CAPTURE(part.path);
    CHECK(viewer_order_breaks(parse_json_file(part.path)) == 0);
  }
}

TEST_CASE("odd names are escaped and invalid UTF-8 is replaced") {
  const std::string names[] = {
      "quote\" backslash\\ slash/",
      std::string("ctl\x01\x1f\n\t\r\b\f", 10),
      "utf8 \xC2\xB5s \xE2\x86\x92 \xE2\x9C\x93 \xF0\x9F\x9A\x80",
      "bad \xFF\xFE end",
      "overlong \xC0\xAF and surrogate \xED\xA0\x80",
      "cut \xE2\x82",
      std::string("nul\0inside", 10),
      "",
  };
  dump_builder d;
  d.process(1).calibration(1, {{0, 0}, {1000, 1000}});
  definitions defs;
  defs.category(1, "cat \"q\"");
  for (std::size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    defs.site(i + 1, fmt::site_kind::instant, 1, names[i]);
  d.defs(1, defs).thread(1, 1, 5, "th\xFFread");
  events e(1, 10);
  for (std::size_t i = 0; i < sizeof names / sizeof names[0]; ++i) e.instant(i + 1, 10 + i);
  d.event_chunk(1, e).end(1);
  converted c(d.build(), "escaping.etr");
  REQUIRE(c.ok);
  const auto instants = c.with("i");
  REQUIRE(instants.size() == 8);
  CHECK((*instants[0])["name"].str() == names[0]);
  CHECK((*instants[0])["cat"].str() == "cat \"q\"");
  CHECK((*instants[1])["name"].str() == names[1]);
  CHECK(c.text.find("ctl\\u0001\\u001f\\u000a") != std::string::npos);
  CHECK((*instants[2])["name"].str() == names[2]);
  CHECK((*instants[3])["name"].str() == "bad \xEF\xBF\xBD\xEF\xBF\xBD end");
  CHECK((*instants[4])["name"].str() ==
        "overlong \xEF\xBF\xBD\xEF\xBF\xBD and surrogate \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK((*instants[5])["name"].str() == "cut \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK((*instants[6])["name"].str() == names[6]);
  CHECK((*instants[7])["name"].str() == "(unnamed)");  // viewers mishandle empty names
  const value* thread = c.named("thread_name");
  REQUIRE(thread);
  CHECK((*thread)["args"]["name"].str() == "th\xEF\xBF\xBDread");
}

TEST_CASE("counters: exact integers, full-precision doubles, NaN and Inf left out") {
  dump_builder d = edgetrace_test::one_site_dump(fmt::site_kind::counter, "mem", "bytes", 5, "t");
  events e(1, 10);
  e.counter(1, 11, 3).counter(1, 12, -42).counter(1, 13, 0.1).counter(1, 14, 1e300);
  e.counter(1, 15, std::numeric_limits<double>::quiet_NaN()).counter(1, 16, std::numeric_limits<double>::infinity());
  e.counter(1, 17, 9007199254740993.0).counter(1, 18, -0.0);
  d.event_chunk(1, e).end(1);
  converted c(d.build(), "counters.etr");
  REQUIRE(c.ok);
  const auto counters = c.with("C");
  REQUIRE(counters.size() == 6);
  CHECK((*counters[0])["args"]["bytes"].text == "3");
  CHECK((*counters[1])["args"]["bytes"].text == "-42");
  CHECK((*counters[2])["args"]["bytes"].num() == 0.1);
  CHECK((*counters[3])["args"]["bytes"].num() == 1e300);
  CHECK((*counters[4])["args"]["bytes"].num() == 9007199254740992.0);
  CHECK((*counters[5])["args"]["bytes"].text == "0");
  CHECK(c.result.counters_skipped == 2);
  bool noted = false;
  for (const auto& diag : c.reader.diagnostics()) noted |= diag.message.find("NaN or infinite") != std::string::npos;
  CHECK(noted);
  CHECK_FALSE(c.reader.damaged());  // a NaN sample is the app's data, not damage
}

TEST_CASE("several writers: one process_name per pid, numeric ids") {
  dump_builder a = sample_dump(0x1, 100);
  dump_builder b = sample_dump(0x2, 200);
  bytes file = a.build();
  const bytes second = b.build();
  file.insert(file.end(), second.begin() + static_cast<std::ptrdiff_t>(fmt::file_header_size), second.end());
  converted c(file, "two.etr");
  REQUIRE(c.ok);
  std::vector<std::string> processes, pids;
  for (const value* m : c.with("M"))
    if ((*m)["name"].str() == "process_name") {
      processes.push_back((*m)["args"]["name"].str());
      pids.push_back((*m)["pid"].text);
    }
  REQUIRE(processes.size() == 2);
  CHECK(pids == std::vector<std::string>{"100", "200"});
  CHECK(processes[0] == "app");
  CHECK(processes[1] == "app");
  CHECK(c.with("X").size() == 8);
  // The second writer's timeline is the same, so its earliest span is at 1.000 too.
  std::size_t at_one = 0;
  for (const value* x : c.with("X")) at_one += (*x)["ts"].text == "1.000";
  CHECK(at_one == 2);
}

TEST_CASE("a dump with no events still gives a valid document") {
  converted c(dump_builder().build(), "header_only.etr");
  REQUIRE(c.ok);
  CHECK(c.events().is_array());
  CHECK(c.events().size() == 0);
  CHECK(c.doc["otherData"]["complete"].boolean);
}

TEST_CASE("a damaged dump converts what is intact and says so in otherData") {
  dump_builder d = sample_dump();
  bytes b = d.build();
  truncate(b, b.size() - 3);
  converted c(b, "damaged.etr");
  REQUIRE(c.ok);
  CHECK(c.with("X").size() == 4);
  CHECK_FALSE(c.doc["otherData"]["complete"].boolean);
  CHECK(c.doc["otherData"]["diagnostics"].str().find("incomplete") != std::string::npos);
}

TEST_CASE("json_lite is strict") {
  value v;
  std::string error;
  CHECK(json_lite::parse(R"({"a":[1,-2.5e3,true,false,null,"x\u00e9\ud83d\ude80"]})", v, error));
  CHECK(v["a"][5].str() == "x\xC3\xA9\xF0\x9F\x9A\x80");
  CHECK(v["a"][1].num() == -2500);
  CHECK_FALSE(json_lite::parse("{\"a\":1,}", v, error));
  CHECK_FALSE(json_lite::parse("[01]", v, error));
  CHECK_FALSE(json_lite::parse("[NaN]", v, error));
  CHECK_FALSE(json_lite::parse("[\"tab\there\"]", v, error));
  CHECK_FALSE(json_lite::parse("[1] x", v, error));
  CHECK_FALSE(json_lite::parse("[.5]", v, error));
  CHECK_FALSE(json_lite::parse("[\"\\ud800\"]", v, error));
  CHECK_FALSE(json_lite::is_utf8("\xC0\xAF"));
  CHECK(json_lite::is_utf8("\xE2\x9C\x93"));
}

}  // namespace chrome_json_test
