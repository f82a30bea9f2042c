// SPDX-License-Identifier: MIT
// Tests of decode/dump_reader.hpp on files truncated under their writer: no header at the start, headers mid-stream.
#include <doctest/doctest.h>

#include <edgetrace/reader.hpp>

#include <cstdint>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/read_dump.hpp>
#include <support/process.hpp>

namespace reader_resync_test {

namespace er = edgetrace::reader;
using namespace edgetrace_test;

namespace {

constexpr std::uint32_t writer_a = 0xA1B2C3D5u;
constexpr std::uint32_t writer_b = 0x0B0B0B0Bu;

/// A dump written to the scratch dir, opened, and read forward and backward.
struct loaded {
  er::dump_reader reader;
  std::vector<er::event> events;
  std::size_t backward_events = 0;
  bool ok = false;

  loaded(const bytes& b, const std::string& name) {
    const std::string path = temp_path(name);
    REQUIRE(write_file(path, b));
    ok = reader.open(path) && reader.read_metadata() &&
         reader.read_events([this](const er::event& e) { events.push_back(e); }) &&
         reader.read_events_backward([this](const er::event&) { ++backward_events; });
  }
  /// (writer id, site name) -> spans.
  std::map<std::pair<std::uint32_t, std::string>, std::size_t> spans() const {
    std::map<std::pair<std::uint32_t, std::string>, std::size_t> out;
    for (const auto& e : events)
      if (e.kind == er::event_kind::span) ++out[{e.writer->id, e.site->name}];
    return out;
  }
  const er::diagnostic* diag(const std::string& text) const { return edgetrace_test::find_diagnostic(reader, text); }
  std::string all_diags() const { return edgetrace_test::all_diagnostics(reader); }
};

/// What a writer sends when it (re)starts: process, calibration, its
/// definitions so far, its threads. `extra_site` adds site 5 ("late").
void writer_metadata(dump_builder& d, std::uint32_t writer, std::uint64_t pid, const std::string& prefix,
                     bool extra_site = false) {
  process_fields pf;
  pf.pid = pid;
  d.process(writer, pf);
  d.calibration(writer, {{1000, 1001000}, {1000000, 2000000}});
  definitions defs;
  defs.category(1, "work");
  defs.site(1, fmt::site_kind::span, 1, prefix + "step", "w.cpp", 10);
  defs.site(2, fmt::site_kind::span, 1, prefix + "outer", "w.cpp", 5);
  if (extra_site) defs.site(5, fmt::site_kind::span, 1, prefix + "late", "w.cpp", 20);
  d.defs(writer, defs);
  d.thread(writer, 1, pid, "main");
}

/// One events chunk of thread 1: `n` spans of site `site` from tick `from`.
events spans_of(std::uint64_t site, std::uint64_t from, int n) {
  events e(1, from);
  for (int i = 0; i < n; ++i) e.span(site, from + 10 * static_cast<std::uint64_t>(i), from + 10 * static_cast<std::uint64_t>(i) + 5);
  return e;
}

using edgetrace_test::contains;

}  // namespace

TEST_CASE("a file truncated under its writer: orphan chunks, then a file header, then the stream again") {
  dump_builder d;
  d.no_header();
  // Appended before the writer noticed the truncation: a chunk whose site
  // is defined again after the header, one whose site definition is gone
  // with the rotated part, one of a thread whose record is gone.
  d.event_chunk(writer_a, spans_of(1, 1500, 3));
  d.event_chunk(writer_a, spans_of(9, 1600, 4));
  events unknown_thread(7, 1700);
  unknown_thread.span(1, 1700, 1705);
  d.event_chunk(writer_a, unknown_thread);
  const std::size_t header_at = d.offset_of(3);
  d.restart();
  writer_metadata(d, writer_a, 100, "a_");
  d.event_chunk(writer_a, spans_of(1, 2000, 5));
  d.event_chunk(writer_a, spans_of(2, 3000, 2));
  d.thread_stats(writer_a, 1, 14, 0);
  d.end(writer_a);
  const bytes file = d.build();

  SUBCASE("the reader reads everything intact and says what it skipped") {
    loaded l(file, "resync_orphans.etr");
    REQUIRE(l.ok);
    CHECK(l.reader.stats().headerless_start);
    CHECK(l.reader.stats().restarts == 1);
    CHECK(l.reader.stats().bytes_skipped == 0);  // every chunk validated
    // After the header: 5 + 2 spans; before it, the 3 whose site is known.
    const auto spans = l.spans();
    CHECK(spans.at({writer_a, "a_step"}) == 5 + 3);
    CHECK(spans.at({writer_a, "a_outer"}) == 2);
    CHECK(spans.size() == 2);  // nothing attributed to another site
    CHECK(l.backward_events == l.events.size());
    // The orphans that cannot be attributed are skipped and counted.
    CHECK(l.reader.stats().events_chunks_damaged == 2);
    CHECK(l.diag("unknown site id 9") != nullptr);
    CHECK(l.diag("unknown thread id 7") != nullptr);
    const er::diagnostic* start = l.diag("no file header at the start");
    REQUIRE(start != nullptr);
    CHECK(start->level == er::diagnostic::severity::damage);
    CHECK(start->offset == 0);
    const er::diagnostic* restart = l.diag("file header at offset " + std::to_string(header_at));
    REQUIRE(restart != nullptr);
    CHECK(restart->level == er::diagnostic::severity::note);
    CHECK(l.reader.damaged());
    CHECK(l.reader.complete());
    CHECK(l.reader.version_major() == fmt::version_major);
    CHECK(l.reader.version_minor() == fmt::version_minor);
  }

  SUBCASE("the CLI converts it, warns and exits with the damaged code") {
    const std::string path = temp_path("resync_cli.etr");
    REQUIRE(write_file(path, file));
    const process_result json = run({cli, "json", path, "-o", temp_path("resync_cli.json")});
    CHECK(json.exit_code == 3);
    CHECK(contains(json.err, "edgetrace: warning: " + path + ": no file header at the start"));
    CHECK(contains(json.err, "damaged or incomplete dump"));
    const std::string out = read_file(temp_path("resync_cli.json"));
    CHECK(contains(out, "\"a_step\""));
    CHECK(contains(out, "\"a_outer\""));
    const process_result summary = run({cli, "summary", path});
    CHECK(summary.exit_code == 3);
    CHECK(contains(summary.out, "a_step"));
    CHECK(contains(summary.out, "a_outer"));
    const process_result info = run({cli, "info", path});
    CHECK(contains(info.out, "no file header at the start"));
    CHECK(contains(info.out, "file header at offset " + std::to_string(header_at)));
  }

  SUBCASE("garbage before the first chunk is skipped and reported") {
    const std::string junk = "half a line of someone else's log\n";
    bytes b(junk.begin(), junk.end());
    append(b, file);
    loaded l(b, "resync_junk.etr");
    REQUIRE(l.ok);
    CHECK(l.reader.stats().bytes_skipped == junk.size());
    CHECK(l.diag("skipped " + std::to_string(junk.size()) + " bytes at offset 0") != nullptr);
    CHECK(l.spans().at({writer_a, "a_step"}) == 8);
  }

  SUBCASE("only a header and a stream after garbage") {
    dump_builder g;
    g.no_header();
    g.raw_bytes(bytes(1000, 0x00));
    g.restart();
    writer_metadata(g, writer_a, 100, "a_");
    g.event_chunk(writer_a, spans_of(1, 2000, 5));
    g.end(writer_a);
    loaded l(g.build(), "resync_zeros.etr");
    REQUIRE(l.ok);
    CHECK(l.reader.stats().bytes_skipped == 1000);
    CHECK(l.spans().at({writer_a, "a_step"}) == 5);
    CHECK(l.reader.damaged());
  }
}

TEST_CASE("a file header in the middle: the same writer sends its metadata again") {
  dump_builder d;
  writer_metadata(d, writer_a, 100, "a_");
  d.event_chunk(writer_a, spans_of(1, 2000, 3));
  d.event_chunk(writer_a, spans_of(2, 2500, 1));
  d.thread_stats(writer_a, 1, 4, 0);
  d.end(writer_a);
  const std::size_t header_at = d.offset_of(d.chunk_count());
  d.restart();

  SUBCASE("identical definitions are silent, a new site works, every span keeps its name") {
    writer_metadata(d, writer_a, 100, "a_", true);  // the same definitions, plus site 5
    events e(1, 5000);
    e.span(1, 5000, 5010).span(5, 5020, 5030).span(2, 4990, 5040);
    d.event_chunk(writer_a, e);
    d.thread_stats(writer_a, 1, 7, 0);
    d.end(writer_a);
    loaded l(d.build(), "resync_redefine.etr");
    REQUIRE(l.ok);
    const auto spans = l.spans();
    CHECK(spans.at({writer_a, "a_step"}) == 3 + 1);
    CHECK(spans.at({writer_a, "a_outer"}) == 1 + 1);
    CHECK(spans.at({writer_a, "a_late"}) == 1);
    CHECK(spans.size() == 3);
    CHECK(l.backward_events == l.events.size());
    CHECK(l.reader.writers().size() == 1);
    CHECK(l.reader.stats().restarts == 1);
    CHECK_FALSE(l.reader.stats().headerless_start);
    CHECK(l.reader.stats().bytes_skipped == 0);
    const er::diagnostic* restart = l.diag("file header at offset " + std::to_string(header_at));
    REQUIRE(restart != nullptr);
    CHECK(restart->level == er::diagnostic::severity::note);
    CHECK(l.diag("redefined") == nullptr);
    CHECK_MESSAGE(!l.reader.damaged(), l.all_diags());
    CHECK(l.reader.complete());
  }

  SUBCASE("a definition that contradicts an earlier one is reported") {
    writer_metadata(d, writer_a, 100, "x_");
    d.event_chunk(writer_a, spans_of(1, 5000, 2));
    d.end(writer_a);
    loaded l(d.build(), "resync_conflict.etr");
    REQUIRE(l.ok);
    const er::diagnostic* conflict = l.diag("site 1 redefined as \"x_step\" (was \"a_step\")");
    REQUIRE(conflict != nullptr);
    CHECK(conflict->level == er::diagnostic::severity::damage);
    CHECK(l.reader.damaged());
  }

  SUBCASE("a header of an unknown major version: skipped up to the next readable one") {
    dump_builder tail;
    tail.no_header();
    tail.raw_bytes(bytes(40, 0x77));  // chunks framed some other way
    tail.restart();
    writer_metadata(tail, writer_b, 200, "b_");
    tail.event_chunk(writer_b, spans_of(1, 2000, 2));
    tail.end(writer_b);
    dump_builder v2;
    v2.no_header();
    v2.restart(2, 0);
    bytes file = d.build();
    append(file, v2.build());
    append(file, tail.build());
    loaded l(file, "resync_v2.etr");
    REQUIRE(l.ok);
    const er::diagnostic* skipped = l.diag("has format version 2.0, which this reader cannot read: skipped 56 bytes");
    REQUIRE_MESSAGE(skipped != nullptr, l.all_diags());
    CHECK(skipped->level == er::diagnostic::severity::damage);
    CHECK(l.reader.stats().bytes_skipped == 56);
    const auto spans = l.spans();
    CHECK(spans.at({writer_a, "a_step"}) == 3);
    CHECK(spans.at({writer_b, "b_step"}) == 2);
  }
}

TEST_CASE("two writers on one file, each starting it again after a truncation") {
  dump_builder d;
  d.no_header();
  // Both appended after the truncation, before either noticed.
  d.event_chunk(writer_a, spans_of(1, 1500, 2));
  d.event_chunk(writer_b, spans_of(1, 1500, 3));
  // A notices first: header and its metadata; B keeps appending.
  d.restart();
  writer_metadata(d, writer_a, 100, "a_");
  d.event_chunk(writer_a, spans_of(2, 2000, 4));
  d.event_chunk(writer_b, spans_of(2, 2000, 5));
  // Then B notices: a second header, in the middle of A's stream.
  d.restart();
  writer_metadata(d, writer_b, 200, "b_");
  d.event_chunk(writer_a, spans_of(1, 3000, 6));
  d.event_chunk(writer_b, spans_of(1, 3000, 7));
  d.end(writer_b);
  d.end(writer_a);
  loaded l(d.build(), "resync_two_writers.etr");
  REQUIRE(l.ok);
  CHECK(l.reader.writers().size() == 2);
  CHECK(l.reader.stats().restarts == 2);
  CHECK(l.reader.stats().bytes_skipped == 0);
  // Same site ids, different writers: every span goes to its own writer's site.
  const auto spans = l.spans();
  CHECK(spans.at({writer_a, "a_step"}) == 2 + 6);
  CHECK(spans.at({writer_a, "a_outer"}) == 4);
  CHECK(spans.at({writer_b, "b_step"}) == 3 + 7);
  CHECK(spans.at({writer_b, "b_outer"}) == 5);
  CHECK(spans.size() == 4);
  CHECK(l.backward_events == l.events.size());
  CHECK(l.reader.find_thread(writer_a, 1)->os_tid == 100);
  CHECK(l.reader.find_thread(writer_b, 1)->os_tid == 200);
  CHECK(l.reader.stats().events_chunks_damaged == 0);
  CHECK(l.reader.damaged());  // the start of the file is gone
  CHECK(l.diag("no file header at the start") != nullptr);
}

TEST_CASE("a file with no header and no valid chunk is not a dump") {
  SUBCASE("text") {
    const std::string text = "2026-11-25 02:00:00 INFO rotated\nnothing to see here\n";
    const std::string path = temp_path("resync_text.etr");
    REQUIRE(write_file(path, bytes(text.begin(), text.end())));
    er::dump_reader r;
    CHECK_FALSE(r.open(path));
    CHECK(r.error() == "not an edgetrace dump (bad magic)");
    const process_result json = run({cli, "json", path, "-o", temp_path("resync_text.json")});
    CHECK(json.exit_code == 2);
    CHECK(contains(json.err, "edgetrace: error: " + path + ": not an edgetrace dump (bad magic)"));
  }
  SUBCASE("random bytes, sync and magic bytes included") {
    std::mt19937 rng(13);
    bytes b(256 * 1024);
    for (auto& x : b) x = static_cast<unsigned char>(rng());
    for (std::size_t i = 0; i + 12 < b.size(); i += 4096) {  // plausible chunk headers with bad CRCs
      b[i] = fmt::chunk_sync0;
      b[i + 1] = fmt::chunk_sync1;
      fmt::put_u32(b.data() + i + 4, 100);
    }
    for (std::size_t i = 2000; i + 8 < b.size(); i += 8192) b[i] = fmt::file_magic[0];  // magic's first byte only
    const std::string path = temp_path("resync_random.etr");
    REQUIRE(write_file(path, b));
    er::dump_reader r;
    CHECK_FALSE(r.open(path));
    CHECK(r.error() == "not an edgetrace dump (bad magic)");
  }
  SUBCASE("a valid chunk makes it a dump") {
    dump_builder d;
    d.no_header();
    d.raw_bytes(bytes(5000, 'x'));
    writer_metadata(d, writer_a, 100, "a_");
    d.event_chunk(writer_a, spans_of(1, 2000, 2));
    loaded l(d.build(), "resync_chunk_only.etr");
    REQUIRE(l.ok);
    CHECK(l.reader.stats().bytes_skipped == 5000);
    CHECK(l.spans().at({writer_a, "a_step"}) == 2);
    CHECK(l.reader.damaged());
  }
}

/// This process's CPU time, in seconds.
double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A forged 1.3 MB dump of 40,000 writers of one pid, none with an end
// record: which of them called exec is found in one pass (each one's
// later writers were compared with it before: 9 s of info, quadratic).
TEST_CASE("40,000 writers of one pid without end records: exec is told apart in linear time") {
  constexpr std::uint32_t writers = 40000;
  dump_builder d;
  for (std::uint32_t i = 0; i < writers; ++i) {
    process_fields pf;
    pf.pid = i + 1 == writers ? 78 : 77;  // the last has a pid of its own
    d.process(1000 + i, pf);
  }
  const std::string path = temp_path("resync_40k_writers.etr");
  REQUIRE(write_file(path, d.build()));
  const double before = process_cpu_seconds();
  er::dump_reader r;
  REQUIRE(r.open(path));
  REQUIRE(r.read_metadata());
  const double spent = process_cpu_seconds() - before;
  MESSAGE("40,000 writers read in " << spent << " s of CPU");
  CHECK(spent < 4.0);  // 0.2 s in a release build, 9 s before
  REQUIRE(r.writers().size() == writers);
  std::size_t exec = 0;
  for (const auto& w : r.writers()) exec += w.second.exec_follows ? 1 : 0;
  CHECK(exec == writers - 2);  // pid 77's last writer, and pid 78's, have none after them
  CHECK_FALSE(r.writers().at(1000 + writers - 2).exec_follows);
  CHECK(r.writers().at(1000).exec_follows);
  ::unlink(path.c_str());
}

// Writers of one pid are one process (its images, across exec) only when
// their identities (start ticks, boot id: format 1.15) match: two
// containers' pid 1 sharing a dump, one killed -9, is no exec.
TEST_CASE("two writers of one pid: exec when the identity matches, killed when it does not, exec by pid when none is said") {
  struct shape {
    const char* what;
    std::int64_t first_ticks, second_ticks;
    bool exec, reused;
  };
  for (const shape& c : {shape{"same process (its image replaced)", 500, 500, true, false},
                         shape{"another pid namespace's pid 1", 500, 9000, false, true},
                         shape{"no identity (a 1.14 writer): by pid", -1, -1, true, false}}) {
    CAPTURE(c.what);
    dump_builder d;
    process_fields pf;
    pf.pid = 1;
    pf.overload = 0;
    pf.start_ticks = c.first_ticks;
    d.process(writer_a, pf);  // killed -9, or exec'd: no end record
    pf.start_ticks = c.second_ticks;
    d.process(writer_b, pf);
    d.end(writer_b);
    const std::string path = temp_path("resync_pid1.etr");
    REQUIRE(write_file(path, d.build()));
    er::dump_reader r;
    REQUIRE(r.open(path));
    REQUIRE(r.read_metadata());
    const er::writer_info& first = r.writers().at(writer_a);
    CHECK(first.has_identity == (c.first_ticks >= 0));
    CHECK(first.exec_follows == c.exec);
    CHECK(first.pid_reused_later == c.reused);
    const std::string said = edgetrace_test::all_diagnostics(r);
    CHECK(contains(said, c.exec ? "the process called exec: a later writer of this dump is the same process"
                                : "process killed or crashed? a later writer has its pid but is another process"));
    ::unlink(path.c_str());
  }
}

}  // namespace reader_resync_test
