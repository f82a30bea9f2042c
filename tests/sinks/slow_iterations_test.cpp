// SPDX-License-Identifier: MIT
// The slow-iteration drill-down on built dumps whose device samples say exactly what happened: a hypervisor's steal during the slow frames is named against the usual frames, a share the samples overstate stays at 100 %, a switch rate below the usual is not quoted as evidence.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/files.hpp>
#include <support/json_lite.hpp>

namespace slow_iterations_test {

using namespace edgetrace_test;
namespace fmt = edgetrace::format;

namespace {

/// `u8 tag, varint size, body`, as device chunks hold their records.
payload record(std::uint8_t tag, const payload& body) {
  payload r;
  r.u8(tag).varint(body.size()).raw(body.data());
  return r;
}

/// A dump of one writer (ticks are ns) whose `defs` define the sites, and
/// whose thread 1 is "main".
dump_builder main_thread_dump(const definitions& defs) {
  dump_builder d;
  d.process(1, process_fields{});
  d.calibration(1, {{0, 0}, {1000000000, 1000000000}});
  d.defs(1, defs).thread(1, 1, 10, "main");
  return d;
}

struct track {
  std::uint64_t id;
  fmt::device_quantity quantity;
  std::uint64_t thread_id;
  const char* name;
};

/// The run a dump holds: `frames` "frame" spans of `frame_ns` on thread 1,
/// those that `slow(i)` picks three times as long; device samples every
/// `period_ns`.
struct run_shape {
  int frames = 200;
  std::uint64_t frame_ns = 1000000;
  std::uint64_t period_ns = 10000000;
  bool (*slow)(int) = [](int i) { return i >= 100 && i < 120; };
};

/// A dump of `shape` with `tracks`, whose value at a sample
/// `value(track, ns, slow)` gives (slow: the sample lies within a slow frame
/// or a period of one).
template <class Value>
std::string frames_dump(const std::string& name, const std::vector<track>& tracks, Value&& value,
                        const run_shape& shape = {}) {
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "frame");
  dump_builder d = main_thread_dump(defs);
  events main(1, 0);
  std::uint64_t t = 1000000;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> slow_frames;
  for (int i = 0; i < shape.frames; ++i) {
    const std::uint64_t length = shape.slow(i) ? 3 * shape.frame_ns : shape.frame_ns;
    main.span(1, t, t + length);
    if (shape.slow(i)) slow_frames.emplace_back(t, t + length);
    t += length;
  }
  d.event_chunk(1, main);
  payload defined;
  for (const track& k : tracks) {
    payload b;
    b.varint(k.id).u8(static_cast<std::uint8_t>(k.quantity)).varint(0).varint(k.thread_id).varint(0).str(k.name).str("test");
    defined.raw(record(static_cast<std::uint8_t>(fmt::device_track_record::track), b).data());
  }
  payload sampler;
  sampler.varint(shape.period_ns / 1000).varint(1).varint(1);
  defined.raw(record(static_cast<std::uint8_t>(fmt::device_track_record::sampler), sampler).data());
  d.chunk(fmt::chunk_type::device_tracks, 1, defined);
  payload samples;
  for (std::uint64_t ns = 0; ns <= t + shape.period_ns; ns += shape.period_ns) {
    payload b;
    b.varint(ns);
    bool slow = false;
    for (const auto& f : slow_frames) slow = slow || (ns + shape.period_ns > f.first && ns < f.second + shape.period_ns);
    for (const track& k : tracks) b.varint(k.id).varint(fmt::zigzag(value(k, ns, slow)));
    samples.raw(record(static_cast<std::uint8_t>(fmt::device_sample_record::values), b).data());
  }
  d.chunk(fmt::chunk_type::device_samples, 1, samples).end(1);
  return saved_dump(d, name);
}

/// summary --per frame --slowest 30 --format json: the slowest list.
json_lite::value slowest(const std::string& dump) {
  const auto r = run_cli({"summary", dump, "--per", "frame", "--slowest", "30", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  json_lite::value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(r.out, doc, error), error);
  return doc["slowest_iterations"][0];
}

}  // namespace

TEST_CASE("slow iterations: a hypervisor's steal during the slow frames is named, against the usual frames") {
  const std::string dump = frames_dump("steal.etr", {{1, fmt::device_quantity::steal_permille, 0, "hypervisor"}},
                                       [](const track&, std::uint64_t, bool slow) { return slow ? 500 : 0; });
  const json_lite::value s = slowest(dump);
  CHECK_FALSE(s["device"]["too_few"].boolean);
  REQUIRE(s["slowest"].size() == 30);
  int named = 0;
  for (std::size_t i = 0; i < s["slowest"].size(); ++i) {
    const json_lite::value& it = s["slowest"][i];
    if (!it["slower"].boolean) {
      CHECK(it["device"].size() == 0);  // the usual frames are not explained
      continue;
    }
    REQUIRE(it["device"].size() == 1);
    CHECK(it["device"][0].str() == "the hypervisor took 50% of a CPU from this machine (steal; usually 0%)");
    ++named;
  }
  CHECK(named == 20);
}

TEST_CASE("slow iterations: a run-queue share the samples overstate stays at 100 %; fewer switches than usual are no evidence") {
  // The thread's wait grows 1.5 times as fast as time during the slow
  // frames (a sample read late makes that), and its involuntary switches
  // slow down there.
  const std::string dump =
      frames_dump("overstated.etr",
                  {{1, fmt::device_quantity::thread_wait_ns_total, 1, "main"},
                   {2, fmt::device_quantity::thread_involuntary_total, 1, "main"}},
                  [](const track& k, std::uint64_t ns, bool) {
                    // Totals: wait 10 % of the time before 101 ms, then 150 %
                    // for the slow stretch, then 10 % again; switches 1000/s,
                    // then 10/s.
                    const std::uint64_t a = 101000000, b = 171000000;
                    const auto in = [&](std::uint64_t lo, std::uint64_t hi) { return ns < lo ? 0 : (ns > hi ? hi : ns) - lo; };
                    if (k.id == 1) return static_cast<std::int64_t>(in(0, a) / 10 + in(a, b) * 3 / 2 + in(b, ~0ull) / 10);
                    return static_cast<std::int64_t>(in(0, a) / 1000000 + in(a, b) / 100000000 + in(b, ~0ull) / 1000000);
                  });
  const json_lite::value s = slowest(dump);
  int named = 0;
  for (std::size_t i = 0; i < s["slowest"].size(); ++i) {
    const json_lite::value& it = s["slowest"][i];
    for (std::size_t j = 0; j < it["device"].size(); ++j) {
      const std::string line = it["device"][j].str();
      CAPTURE(line);
      CHECK(line.rfind("waited on the run queue 100% of the ", 0) == 0);
      CHECK(line.find("(usually 10%)") != std::string::npos);
      CHECK(line.find("involuntary switches") == std::string::npos);
      ++named;
    }
  }
  CHECK(named >= 15);
}

TEST_CASE("slow iterations: a board that warms during the run is compared with the frames around it") {
  // Two minutes of 100 ms frames sampled every second: 40 C for the first
  // minute, 60 C for the second. Ten slow frames at 10 s ran at 50 C: warm
  // for their minute; ten at 90 s at 60 C: as warm as theirs.
  run_shape shape;
  shape.frames = 1200;
  shape.frame_ns = 100000000;
  shape.period_ns = 1000000000;
  shape.slow = [](int i) { return (i >= 100 && i < 110) || (i >= 900 && i < 910); };
  const std::string dump = frames_dump(
      "warming.etr", {{1, fmt::device_quantity::temperature_mc, 0, "CPU-therm"}},
      [](const track&, std::uint64_t ns, bool slow) -> std::int64_t {
        if (ns < 60000000000u) return slow ? 50000 : 40000;
        return 60000;
      },
      shape);
  const json_lite::value s = slowest(dump);
  int early = 0, late = 0;
  for (std::size_t i = 0; i < s["slowest"].size(); ++i) {
    const json_lite::value& it = s["slowest"][i];
    if (!it["slower"].boolean) continue;
    const bool first_minute = it["begin_ns"].num() < 60e9;
    CAPTURE(it["begin_ns"].num());
    if (first_minute) {
      REQUIRE(it["device"].size() == 1);
      CHECK(it["device"][0].str() == "CPU-therm at 50.0 C (usually 40.0 C)");
      ++early;
    } else {
      CHECK(it["device"].size() == 0);
      ++late;
    }
  }
  CHECK(early == 10);
  CHECK(late == 10);
}

TEST_CASE("slow iterations: a layer 20 times slower in one frame is named first for it, not the span around it") {
  // 100 frames of ten 100 us layers; layers 2 to 7 inside "backbone";
  // in frame 40, layer_4 takes 2 ms. No device samples.
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "frame").site(2, fmt::site_kind::span, 1, "backbone");
  for (int l = 0; l < 10; ++l) defs.site(static_cast<std::uint64_t>(10 + l), fmt::site_kind::span, 1, "layer_" + std::to_string(l));
  dump_builder d = main_thread_dump(defs);
  events main(1, 0);
  std::uint64_t t = 1000;
  for (int f = 0; f < 100; ++f) {
    const std::uint64_t frame_begin = t;
    std::uint64_t backbone_begin = 0;
    for (int l = 0; l < 10; ++l) {
      if (l == 2) backbone_begin = t;
      const std::uint64_t length = f == 40 && l == 4 ? 2000000 : 100000 + static_cast<std::uint64_t>((f * 7 + l) % 5) * 100;
      main.span(static_cast<std::uint64_t>(10 + l), t, t + length);  // in end order: children first
      t += length;
      if (l == 7) main.span(2, backbone_begin, t);
    }
    main.span(1, frame_begin, t);
    t += 1000;
  }
  d.event_chunk(1, main).end(1);
  const std::string dump = saved_dump(d, "planted_layer.etr");
  const auto r = run_cli({"summary", dump, "--per", "frame", "--slowest", "1", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  json_lite::value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(r.out, doc, error), error);
  const json_lite::value& frame = doc["slowest_iterations"][0]["slowest"][0];
  CHECK(frame["number"].num() == 40);
  CHECK(frame["slower"].boolean);
  REQUIRE(frame["layers"].size() == 1);  // the others are as usual; backbone's self time too
  CHECK(frame["layers"][0]["name"].str() == "layer_4");
  CHECK(frame["layers"][0]["ns"].num() == 2000000);
  CHECK(frame["layers"][0]["usual_ns"].num() >= 100000);
  CHECK(frame["layers"][0]["usual_ns"].num() <= 100400);
  CHECK(frame["device"].size() == 0);
  const auto text = run_cli({"summary", dump, "--per", "frame", "--slowest", "1"});
  CHECK(text.out.find(": layer_4 2.000 ms (usually 100.") != std::string::npos);
  CHECK(text.out.find("; the device was not sampled") != std::string::npos);
}

}  // namespace slow_iterations_test
