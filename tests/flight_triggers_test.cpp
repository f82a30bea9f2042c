// SPDX-License-Identifier: MIT
// Tests of detail/flight_triggers.hpp (EDGETRACE_TRIGGER): parsing, errors and evaluation on synthetic ticks.
#include <doctest/doctest.h>

#include <edgetrace/detail/flight_triggers.hpp>

#include <cstdint>
#include <string>

namespace et = edgetrace::detail;
using edgetrace::format::site_kind;

namespace {

/// Parses `spec`; returns the error line ("" when it parsed).
std::string parse_error(et::flight_triggers& t, const char* spec) {
  char error[256] = "";
  const bool ok = t.parse(spec, error, sizeof error);
  CHECK(ok == (error[0] == '\0'));
  return error;
}

constexpr std::uint64_t ms = 1000000;

}  // namespace

TEST_CASE("EDGETRACE_TRIGGER: a list of NAME>LIMIT with units and decimals") {
  et::flight_triggers t;
  CHECK(parse_error(t, "infer>20ms, frame > 40ms ,tiny>500ns,mid>2.5us,long>1.25s,") == "");
  REQUIRE(t.size() == 5);
  CHECK(std::string(t.name(0)) == "infer");
  CHECK(t.limit_ns(0) == 20 * ms);
  CHECK(std::string(t.name(1)) == "frame");
  CHECK(std::string(t.text(1)) == "frame>40ms");
  CHECK(t.limit_ns(1) == 40 * ms);
  CHECK(t.limit_ns(2) == 500);
  CHECK(t.limit_ns(3) == 2500);
  CHECK(t.limit_ns(4) == 1250 * ms);
  CHECK(parse_error(t, "a->b>0.5ms") == "");  // the last '>' separates
  CHECK(std::string(t.name(0)) == "a->b");
  CHECK(t.limit_ns(0) == 500000);
  CHECK(parse_error(t, "conv layer > 3ms") == "");  // spaces inside a name stay
  CHECK(std::string(t.name(0)) == "conv layer");
  CHECK(std::string(t.text(0)) == "conv layer>3ms");
  CHECK(parse_error(t, "x>1.0000000001s") == "");  // decimals past the ns are cut
  CHECK(t.limit_ns(0) == 1000000000u);
}

TEST_CASE("EDGETRACE_TRIGGER: a bad item is one line naming it, and sets no trigger at all") {
  et::flight_triggers t;
  REQUIRE(parse_error(t, "infer>20ms") == "");
  CHECK(parse_error(t, "frame>40ms,infer>20") ==
        "EDGETRACE_TRIGGER: 'infer>20' has no unit (ns, us, ms, s); no trigger set");
  CHECK(t.empty());  // all or nothing: frame>40ms is not kept either
  CHECK(parse_error(t, "infer") ==
        "EDGETRACE_TRIGGER: 'infer' has no limit (write NAME>LIMIT, e.g. infer>20ms); no trigger set");
  CHECK(parse_error(t, ">20ms") == "EDGETRACE_TRIGGER: '>20ms' has no name before '>'; no trigger set");
  CHECK(parse_error(t, "infer>ms") ==
        "EDGETRACE_TRIGGER: 'infer>ms' has no number after '>' (e.g. infer>20ms); no trigger set");
  CHECK(parse_error(t, "infer>-5ms") ==
        "EDGETRACE_TRIGGER: 'infer>-5ms' has no number after '>' (e.g. infer>20ms); no trigger set");
  CHECK(parse_error(t, "infer>20 msec") ==
        "EDGETRACE_TRIGGER: 'infer>20 msec' has an unknown unit 'msec' (ns, us, ms, s); no trigger set");
  CHECK(parse_error(t, "infer>20MS") ==
        "EDGETRACE_TRIGGER: 'infer>20MS' has an unknown unit 'MS' (ns, us, ms, s); no trigger set");
  CHECK(parse_error(t, "infer>0ms") ==
        "EDGETRACE_TRIGGER: 'infer>0ms' is not a positive limit (at least 1 ns); no trigger set");
  CHECK(parse_error(t, "infer>0.1ns") ==
        "EDGETRACE_TRIGGER: 'infer>0.1ns' is not a positive limit (at least 1 ns); no trigger set");
  CHECK(parse_error(t, "infer>99999999999s") ==
        "EDGETRACE_TRIGGER: 'infer>99999999999s' has a limit over 10000000 s; no trigger set");
  CHECK(parse_error(t, "infer>999999999999999999999999ns") ==
        "EDGETRACE_TRIGGER: 'infer>999999999999999999999999ns' has a limit over 10000000 s; no trigger set");
  CHECK(parse_error(t, "infer>20ms,infer>30ms") ==
        "EDGETRACE_TRIGGER: 'infer>30ms' names infer a second time; no trigger set");
  CHECK(parse_error(t, "") == "EDGETRACE_TRIGGER is empty; no trigger set");
  CHECK(parse_error(t, " , ,") == "EDGETRACE_TRIGGER is empty; no trigger set");
  const std::string long_name(65, 'n');
  CHECK(parse_error(t, (long_name + ">1ms").c_str()).find("has a name longer than 64 bytes") != std::string::npos);
  std::string many;
  for (int i = 0; i < 17; ++i) many += "n" + std::to_string(i) + ">1ms,";
  CHECK(parse_error(t, many.c_str()) == "EDGETRACE_TRIGGER: more than 16 triggers; no trigger set");
  CHECK(t.empty());
  // A very long item is cut in the message, which still fits one line.
  char small[48];
  CHECK_FALSE(t.parse((std::string(200, 'x') + ">5").c_str(), small, sizeof small));
  CHECK(std::string(small).size() == sizeof small - 1);
}

TEST_CASE("Spans: a watched span over its limit fires, at or under it does not; other sites cost nothing") {
  et::flight_triggers t;
  REQUIRE(parse_error(t, "infer>20ms") == "");
  t.define_site(3, site_kind::span, "infer", 5);
  t.define_site(4, site_kind::span, "inference", 9);  // exact names only
  t.define_site(5, site_kind::instant, "infer", 5);   // instants and counters never match
  t.define_site(6, site_kind::span, "Infer", 5);
  CHECK(t.watches(3));
  CHECK_FALSE(t.watches(4));
  CHECK_FALSE(t.watches(5));
  CHECK_FALSE(t.watches(6));
  CHECK_FALSE(t.watches(1000));  // never defined: out of the table
  et::flight_triggers::firing f{};
  // No rate yet: nothing can be judged, nothing fires.
  CHECK_FALSE(t.evaluate(3, 1, 0, 3600000 * ms, f));
  // A 3 GHz counter: 20 ms = 60 M ticks.
  t.set_ticks_per_ns(3.0);
  CHECK(t.limit_ticks(0) == 60000000u);
  CHECK_FALSE(t.evaluate(3, 1, 1000, 1000 + 3 * ms, f));    // 1 ms
  CHECK_FALSE(t.evaluate(3, 1, 1000, 1000 + 60 * ms, f));   // exactly 20 ms
  CHECK_FALSE(t.evaluate(4, 1, 1000, 1000 + 300 * ms, f));  // unwatched
  REQUIRE(t.evaluate(3, 1, 1000, 1000 + 93 * ms + 600000, f));  // 31.2 ms
  CHECK(f.trigger == 0);
  CHECK_FALSE(f.mark);
  CHECK(f.elapsed == 93 * ms + 600000);
  CHECK(f.tick == 1000 + 93 * ms + 600000);
  char reason[256];
  const std::size_t n = t.describe(f, reason, sizeof reason);
  CHECK(std::string(reason, n) == "infer>20ms: infer took 31.2 ms");
  CHECK_FALSE(t.evaluate(3, 1, 500, 100, f));  // end before begin (a clock that went back): 0
  // A new rate (a later calibration pair) converts the limits again.
  t.set_ticks_per_ns(1.0);
  CHECK(t.limit_ticks(0) == 20 * ms);
  CHECK(t.evaluate(3, 1, 0, 21 * ms, f));
  // Cut reasons stay NUL-terminated.
  char tiny[8];
  CHECK(t.describe(f, tiny, sizeof tiny) == 7);
  CHECK(std::string(tiny) == "infer>2");
}

TEST_CASE("Marks: the interval between two marks of one thread is an iteration") {
  et::flight_triggers t;
  REQUIRE(parse_error(t, "infer>20ms,frame>40ms") == "");
  t.set_ticks_per_ns(1.0);
  t.define_site(7, site_kind::mark, "frame", 5);
  t.define_site(8, site_kind::span, "frame", 5);  // a span of the same name is judged as a span
  et::flight_triggers::firing f{};
  std::uint64_t now = 1000 * ms;
  CHECK_FALSE(t.evaluate(7, 1, now, 0, f));  // the first mark: no iteration yet
  for (int i = 0; i < 5; ++i) CHECK_FALSE(t.evaluate(7, 1, now += 10 * ms, 0, f));
  // Another thread's marks are its own iterations: its first mark, 45 ms
  // after thread 1's last, closes nothing.
  CHECK_FALSE(t.evaluate(7, 2, now + 45 * ms, 0, f));
  REQUIRE(t.evaluate(7, 1, now += 52 * ms + 300000, 0, f));
  CHECK(f.trigger == 1);
  CHECK(f.mark);
  CHECK(f.elapsed == 52 * ms + 300000);
  CHECK(f.tick == now);
  char reason[256];
  CHECK(std::string(reason, t.describe(f, reason, sizeof reason)) == "frame>40ms: a frame iteration took 52.3 ms");
  CHECK_FALSE(t.evaluate(7, 1, now += 10 * ms, 0, f));  // the slow one is over
  CHECK(t.evaluate(7, 2, now + 41 * ms, 0, f));          // thread 2: 58.3 ms since its own first mark
  CHECK(t.evaluate(8, 1, 0, 41 * ms, f));
  CHECK_FALSE(f.mark);
  // A thread that exits forgets its last mark: a new thread with that id
  // starts afresh.
  t.forget_thread(1);
  CHECK_FALSE(t.evaluate(7, 1, now += 500 * ms, 0, f));
  CHECK_FALSE(t.evaluate(7, 1, now += 1 * ms, 0, f));
}

TEST_CASE("Marks: an interval across a pause of recording is no iteration and never fires") {
  et::flight_triggers t;
  REQUIRE(parse_error(t, "frame>40ms") == "");
  t.set_ticks_per_ns(1.0);
  t.define_site(2, site_kind::mark, "frame", 5);
  et::flight_triggers::firing f{};
  CHECK_FALSE(t.evaluate(2, 1, 100 * ms, 0, f));
  t.recording_stopped(120 * ms);  // paused between the two marks
  CHECK_FALSE(t.evaluate(2, 1, 300 * ms, 0, f));
  CHECK(t.evaluate(2, 1, 350 * ms, 0, f));  // the next interval counts again
  // Pauses before the interval, or at its closing mark, leave it alone; many
  // later stops push out the old ones without losing the recent ones.
  for (int i = 0; i < 20; ++i) t.recording_stopped(360 * ms + static_cast<std::uint64_t>(i));
  CHECK_FALSE(t.evaluate(2, 1, 400 * ms, 0, f));
  CHECK(t.evaluate(2, 1, 450 * ms, 0, f));
}

TEST_CASE("No trigger set: nothing is watched, whatever is defined") {
  et::flight_triggers t;
  t.define_site(1, site_kind::span, "infer", 5);
  CHECK_FALSE(t.watches(1));
  char error[128];
  CHECK_FALSE(t.parse("infer>2", error, sizeof error));
  t.define_site(2, site_kind::span, "infer", 5);
  CHECK_FALSE(t.watches(2));
  et::flight_triggers::firing f{};
  CHECK_FALSE(t.evaluate(2, 1, 0, ~std::uint64_t{0}, f));
}
