// SPDX-License-Identifier: MIT
// Tests of writer/flight/triggers.hpp (EDGETRACE_TRIGGER): parsing, errors and evaluation on synthetic ticks.
#include <doctest/doctest.h>

#include <edgetrace/writer/flight/triggers.hpp>
#include <support/files.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace flight_triggers_test {

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
  // Each bad item and its line, after "EDGETRACE_TRIGGER: '<item>' ".
  const struct {
    const char* spec;
    const char* complaint;
  } bad[] = {
      {"infer", "has no limit (write NAME>LIMIT, e.g. infer>20ms)"},
      {">20ms", "has no name before '>'"},
      {"infer>ms", "has no number after '>' (e.g. infer>20ms)"},
      {"infer>-5ms", "has no number after '>' (e.g. infer>20ms)"},
      {"infer>20 msec", "has an unknown unit 'msec' (ns, us, ms, s)"},
      {"infer>20MS", "has an unknown unit 'MS' (ns, us, ms, s)"},
      {"infer>0ms", "is not a positive limit (at least 1 ns)"},
      {"infer>0.1ns", "is not a positive limit (at least 1 ns)"},
      {"infer>99999999999s", "has a limit over 10000000 s"},
      {"infer>999999999999999999999999ns", "has a limit over 10000000 s"},
  };
  for (const auto& b : bad) {
    CAPTURE(b.spec);
    CHECK(parse_error(t, b.spec) == std::string("EDGETRACE_TRIGGER: '") + b.spec + "' " + b.complaint + "; no trigger set");
  }
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
  CHECK(std::string(reason, t.describe(f, reason, sizeof reason)) == "frame>40ms: an iteration of frame took 52.3 ms");
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

TEST_CASE("A trigger whose name no span or mark has is reported, with the nearest name recorded") {
  et::flight_triggers t;
  REQUIRE(parse_error(t, "itr>25ms,infer>20ms,zzzzzzzz>1ms") == "");
  t.define_site(1, site_kind::span, "iter", 4);
  t.define_site(2, site_kind::span, "infer", 5);
  t.define_site(3, site_kind::counter, "itr", 3);  // a counter never matches a trigger
  const char* closest = nullptr;
  REQUIRE(t.never_matched(0, closest));
  REQUIRE(closest != nullptr);
  CHECK(std::string(closest) == "iter");
  CHECK_FALSE(t.never_matched(1, closest));
  REQUIRE(t.never_matched(2, closest));
  CHECK(closest == nullptr);  // nothing within 3 edits
}

// ---------------------------------------------------------------- real runs
// trace_app's flight-iterations mode in EDGETRACE_MODE=flight: ~1 ms
// iterations (a "frame" mark, then an "infer" span), some of them slow.

namespace {

/// An empty directory of its own for one run's dump and snapshots.
std::string fresh_dir(const std::string& name) {
  const std::string dir = edgetrace_test::tmp + "/" + name;
  ::mkdir(dir.c_str(), 0755);
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ::unlink((dir + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  return dir;
}

/// The files in `dir`, sorted.
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// The snapshot chunk (11) of a dump, found by walking its chunks.
struct snapshot_chunk {
  bool found = false;
  edgetrace::format::snapshot_info info;
  std::string reason;
};

snapshot_chunk read_snapshot_chunk(const std::string& path) {
  namespace fmt = edgetrace::format;
  snapshot_chunk out;
  const std::string bytes = edgetrace_test::read_file(path);
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t at = fmt::file_header_size;
  while (at + fmt::chunk_header_size + fmt::chunk_trailer_size <= bytes.size()) {
    const std::uint32_t payload = fmt::get_u32(data + at + 4);
    if (data[at] != fmt::chunk_sync0 || at + fmt::chunk_header_size + payload + fmt::chunk_trailer_size > bytes.size())
      break;
    if (data[at + 2] == static_cast<unsigned char>(fmt::chunk_type::snapshot)) {
      const unsigned char* reason = nullptr;
      std::size_t reason_size = 0;
      const unsigned char* begin = data + at + fmt::chunk_header_size;
      out.found = fmt::get_snapshot_payload(begin, begin + payload, out.info, reason, reason_size);
      if (out.found) out.reason.assign(reinterpret_cast<const char*>(reason), reason_size);
      return out;
    }
    at += fmt::chunk_header_size + payload + fmt::chunk_trailer_size;
  }
  return out;
}

/// Runs trace_app flight-iterations with `args` in flight mode, output
/// `dir`/run.etr, plus `env`.
edgetrace_test::process_result run_flight(const std::string& dir, std::vector<std::string> args,
                                          std::vector<std::string> env) {
  args.insert(args.begin(), {edgetrace_test::app, "flight-iterations"});
  env.push_back("EDGETRACE_OUTPUT=" + dir + "/run.etr");
  env.push_back("EDGETRACE_MODE=flight");
  return edgetrace_test::run(args, env);
}

std::vector<edgetrace_test::loaded_event> spans_named(const edgetrace_test::loaded_dump& dump, const char* name) {
  std::vector<edgetrace_test::loaded_event> out;
  for (const auto& e : dump.named(name))
    if (e.kind == edgetrace::reader::event_kind::span) out.push_back(e);
  return out;
}

/// The ms figure in a reason such as "infer>20ms: infer took 31.2 ms".
double reason_ms(const std::string& reason) {
  const std::size_t took = reason.rfind("took ");
  return took == std::string::npos ? -1 : std::atof(reason.c_str() + took + 5);
}

/// Runs 80 iterations of which the 41st takes 30 ms (its span's name
/// interned at run time when `span_name` is "named"), in flight mode with
/// EDGETRACE_TRIGGER=`trigger`, in a fresh directory `name`; checks that the
/// run went quietly and wrote exactly one snapshot, and returns its path.
std::string run_one_slow(const char* name, const char* trigger, const char* span_name = "literal") {
  const std::string dir = fresh_dir(name);
  const auto result =
      run_flight(dir, {"80", "40", "0", "30", "400", span_name}, {std::string("EDGETRACE_TRIGGER=") + trigger});
  CHECK(result.exit_code == 0);
  CHECK(result.err == "");
  CHECK(files_in(dir) == std::vector<std::string>{"run.1.etr"});
  return dir + "/run.1.etr";
}

/// One 30 ms infer among 1 ms ones: one snapshot holding it and what came
/// before, its reason naming the trigger and the span's duration.
void check_one_slow_span(bool named) {
  const std::string path =
      run_one_slow(named ? "flight_trigger_named" : "flight_trigger_span", "infer>20ms", named ? "named" : "literal");
  const auto dump = edgetrace_test::load_dump(path);
  REQUIRE(dump.opened);
  CHECK(dump.error == "");
  const auto infer = spans_named(dump, "infer");
  std::vector<edgetrace_test::loaded_event> slow;
  for (const auto& e : infer)
    if (e.end_ns - e.begin_ns > 20000000) slow.push_back(e);
  REQUIRE(slow.size() == 1);
  const std::int64_t slow_ns = slow[0].end_ns - slow[0].begin_ns;
  CHECK(slow_ns >= 30000000);
  // Every iteration before the slow one is in the window (16 MiB holds the
  // whole run), and the after-window brings some of the later ones.
  const auto before = std::count_if(infer.begin(), infer.end(), [&](const auto& e) { return e.end_ns <= slow[0].begin_ns; });
  const auto after = std::count_if(infer.begin(), infer.end(), [&](const auto& e) { return e.begin_ns >= slow[0].end_ns; });
  CHECK(before == 40);
  CHECK(after >= 1);
  const snapshot_chunk snapshot = read_snapshot_chunk(path);
  REQUIRE(snapshot.found);
  CHECK(snapshot.info.sequence == 1);
  CHECK(snapshot.info.trigger == edgetrace::format::snapshot_trigger::latency);
  CHECK(snapshot.reason.rfind("infer>20ms: infer took ", 0) == 0);
  CHECK(snapshot.reason.size() > 26);
  CHECK(snapshot.reason.substr(snapshot.reason.size() - 3) == " ms");
  // The flusher's measured rate and the reader's fit agree far better than that.
  CHECK(reason_ms(snapshot.reason) == doctest::Approx(static_cast<double>(slow_ns) / 1e6).epsilon(0.02));
}

}  // namespace

TEST_CASE("flight: one 30 ms infer among 1 ms ones fires infer>20ms once; the snapshot holds it and what came before") {
  check_one_slow_span(false);
}

TEST_CASE("flight: the same with the span's name interned at run time (EDGETRACE_SCOPE_NAMED)") {
  check_one_slow_span(true);
}

/// The longest "infer" span and the longest time between two "frame" marks
/// in the files of `dir`, in ms: how far the machine stretched an iteration
/// of 1 ms (a sleep) that a trigger then measured.
double longest_iteration_ms(const std::string& dir) {
  double longest = 0;
  for (const std::string& file : files_in(dir)) {
    const auto dump = edgetrace_test::load_dump(dir + "/" + file);
    std::vector<std::int64_t> marks;
    for (const auto& e : dump.events) {
      if (e.name == "infer") longest = std::max(longest, static_cast<double>(e.end_ns - e.begin_ns) / 1e6);
      if (e.name == "frame") marks.push_back(e.begin_ns);
    }
    std::sort(marks.begin(), marks.end());
    for (std::size_t i = 1; i < marks.size(); ++i)
      longest = std::max(longest, static_cast<double>(marks[i] - marks[i - 1]) / 1e6);
  }
  return longest;
}

TEST_CASE("flight: the same run without the slow iteration writes no file at all") {
  // The app sleeps 1 ms per iteration; a trigger at 20 ms fires only if the
  // machine kept it off the CPU for 19 ms more (qemu on a busy machine
  // did). A file is then a snapshot of an iteration that really took
  // longer: the run cannot judge "no file", so it runs once more, and a
  // second such run skips the case, saying so.
  edgetrace_test::judged_in_two_runs([](int) -> std::string {
    const std::string dir = fresh_dir("flight_trigger_quiet");
    const auto result = run_flight(dir, {"80", "-1"}, {"EDGETRACE_TRIGGER=infer>20ms,frame>20ms"});
    CHECK(result.exit_code == 0);
    CHECK(result.err == "");
    if (files_in(dir).empty()) return "";
    const double longest_ms = longest_iteration_ms(dir);
    CAPTURE(longest_ms);
    REQUIRE(longest_ms >= 20);  // a trigger fired: an iteration took at least its threshold
    return "an iteration of 1 ms took " + std::to_string(longest_ms) +
           " ms (a busy machine): 'no file without a slow iteration'";
  });
}

TEST_CASE("flight: a mark trigger fires on the iteration between two marks that took too long") {
  const std::string path = run_one_slow("flight_trigger_mark", "frame>20ms");
  const auto dump = edgetrace_test::load_dump(path);
  REQUIRE(dump.opened);
  std::vector<std::int64_t> marks;
  for (const auto& e : dump.named("frame")) marks.push_back(e.begin_ns);
  std::sort(marks.begin(), marks.end());
  std::vector<std::int64_t> long_iterations;
  for (std::size_t i = 1; i < marks.size(); ++i)
    if (marks[i] - marks[i - 1] > 20000000) long_iterations.push_back(marks[i] - marks[i - 1]);
  REQUIRE(long_iterations.size() == 1);
  CHECK(long_iterations[0] >= 30000000);
  const snapshot_chunk snapshot = read_snapshot_chunk(path);
  REQUIRE(snapshot.found);
  CHECK(snapshot.info.trigger == edgetrace::format::snapshot_trigger::latency);
  CHECK(snapshot.reason.rfind("frame>20ms: an iteration of frame took ", 0) == 0);
  CHECK(reason_ms(snapshot.reason) == doctest::Approx(static_cast<double>(long_iterations[0]) / 1e6).epsilon(0.02));
  // The slow iteration's span is there, with the ones before it.
  const auto infer = spans_named(dump, "infer");
  CHECK(std::count_if(infer.begin(), infer.end(), [](const auto& e) { return e.end_ns - e.begin_ns >= 30000000; }) == 1);
  CHECK(infer.size() > 40);
}

TEST_CASE("flight: an interval between two marks across a pause of recording is no iteration and does not fire") {
  const std::string dir = fresh_dir("flight_trigger_paused");
  // frame>20ms would fire on the 60 ms interval if it counted; the exit
  // snapshot shows that the marks around the pause were recorded.
  const auto result = edgetrace_test::run(
      {edgetrace_test::app, "flight-paused"},
      {"EDGETRACE_OUTPUT=" + dir + "/run.etr", "EDGETRACE_MODE=flight", "EDGETRACE_TRIGGER=frame>20ms",
       "EDGETRACE_FLIGHT_AT_EXIT=1"});
  CHECK(result.exit_code == 0);
  CHECK(result.err == "");
  // Only the exit snapshot: no latency one.
  REQUIRE(files_in(dir) == std::vector<std::string>{"run.1.etr"});
  const snapshot_chunk snapshot = read_snapshot_chunk(dir + "/run.1.etr");
  REQUIRE(snapshot.found);
  CHECK(snapshot.info.trigger == edgetrace::format::snapshot_trigger::exit);
  // The pause is in the dump, with a gap over the limit between the marks around it.
  std::vector<std::int64_t> marks;
  for (const auto& e : edgetrace_test::load_dump(dir + "/run.1.etr").named("frame")) marks.push_back(e.begin_ns);
  REQUIRE(marks.size() == 20);
  std::sort(marks.begin(), marks.end());
  CHECK(marks[10] - marks[9] > 50000000);
}

TEST_CASE("flight: a storm of slow iterations writes at most EDGETRACE_FLIGHT_MAX snapshots and counts the rest") {
  const std::string dir = fresh_dir("flight_trigger_storm");
  // 55 iterations of 30 ms from the 6th on: ~1.7 s of a trigger every 31 ms.
  const auto result = run_flight(dir, {"60", "5", "1", "30"},
                                 {"EDGETRACE_TRIGGER=infer>20ms", "EDGETRACE_FLIGHT_MAX=3", "EDGETRACE_FLIGHT_GAP_MS=200"});
  CHECK(result.exit_code == 0);
  REQUIRE(files_in(dir) == std::vector<std::string>{"run.1.etr", "run.2.etr", "run.3.etr"});
  std::uint64_t skipped = 0;
  for (int n = 1; n <= 3; ++n) {
    const std::string path = dir + "/run." + std::to_string(n) + ".etr";
    const snapshot_chunk snapshot = read_snapshot_chunk(path);
    REQUIRE(snapshot.found);
    CHECK(snapshot.info.sequence == static_cast<std::uint64_t>(n));
    CHECK(snapshot.info.trigger == edgetrace::format::snapshot_trigger::latency);
    CHECK(snapshot.reason.rfind("infer>20ms: infer took ", 0) == 0);
    if (n > 1) CHECK(snapshot.info.skipped >= 1);  // the slow iterations inside the gap
    skipped += snapshot.info.skipped;
    const auto dump = edgetrace_test::load_dump(path);
    CHECK(dump.error == "");
  }
  CHECK(skipped >= 2);
}

TEST_CASE("flight: a trigger naming no span or mark of the run says so at exit, with a 'did you mean'") {
  const std::string dir = fresh_dir("flight_trigger_typo");
  // frame>2s: a trigger on a name the run records, which no iteration of
  // 1 ms reaches even on a busy machine, says nothing.
  const auto result = run_flight(dir, {"80", "-1"}, {"EDGETRACE_TRIGGER=infr>20ms,frame>2s"});
  CHECK(result.exit_code == 0);
  CHECK(result.err == "edgetrace: EDGETRACE_TRIGGER 'infr>20ms' never fired: no span or mark named 'infr' was recorded "
                      "(did you mean 'infer'?)\n");
  CHECK(files_in(dir).empty());
}

TEST_CASE("flight: a bad EDGETRACE_TRIGGER is one stderr line; the app runs on and no trigger fires") {
  const std::string dir = fresh_dir("flight_trigger_bad");
  const auto result = run_flight(dir, {"20", "10", "0", "30", "200"}, {"EDGETRACE_TRIGGER=infer>20"});
  CHECK(result.exit_code == 0);
  CHECK(result.err == "edgetrace: EDGETRACE_TRIGGER: 'infer>20' has no unit (ns, us, ms, s); no trigger set\n");
  CHECK(files_in(dir).empty());
}

TEST_CASE("EDGETRACE_TRIGGER outside flight mode: one stderr line, and the dump is written as usual") {
  const std::string dir = fresh_dir("flight_trigger_normal");
  const auto result = edgetrace_test::run({edgetrace_test::app, "flight-iterations", "20", "10", "0", "30", "0"},
                                          {"EDGETRACE_OUTPUT=" + dir + "/run.etr", "EDGETRACE_TRIGGER=infer>20ms"});
  CHECK(result.exit_code == 0);
  CHECK(result.err == "edgetrace: EDGETRACE_TRIGGER needs EDGETRACE_MODE=flight (a trigger writes a snapshot of the "
                      "flight recorder); no trigger set\n");
  CHECK(files_in(dir) == std::vector<std::string>{"run.etr"});
  CHECK(spans_named(edgetrace_test::load_dump(dir + "/run.etr"), "infer").size() == 20);
}

}  // namespace flight_triggers_test
