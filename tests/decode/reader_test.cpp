// SPDX-License-Identifier: MIT
// Tests of decode/dump_reader.hpp and decode/clock_model.hpp on dumps crafted byte by byte.
#include <doctest/doctest.h>

#include <edgetrace/reader.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/read_dump.hpp>

namespace reader_test {

namespace er = edgetrace::reader;
using namespace edgetrace_test;

namespace {

/// A dump written to the scratch dir, opened, and fully read.
struct loaded {
  er::dump_reader reader;
  std::vector<er::event> events;
  bool ok = false;

  loaded(const bytes& b, const std::string& name) {
    const std::string path = temp_path(name);
    REQUIRE(write_file(path, b));
    ok = reader.open(path) && reader.read_metadata() &&
         reader.read_events([this](const er::event& e) { events.push_back(e); });
  }
  std::size_t count(er::event_kind kind) const {
    std::size_t n = 0;
    for (const auto& e : events) n += e.kind == kind;
    return n;
  }
  /// The first diagnostic containing `text`, or null.
  const er::diagnostic* diag(const std::string& text) const { return edgetrace_test::find_diagnostic(reader, text); }
  std::string all_diags() const { return edgetrace_test::all_diagnostics(reader); }
};

std::string open_error(const bytes& b, const std::string& name) {
  const std::string path = temp_path(name);
  REQUIRE(write_file(path, b));
  er::dump_reader r;
  CHECK_FALSE(r.open(path));
  return r.error();
}

}  // namespace

TEST_CASE("round trip: every event, name and number comes back exactly") {
  loaded l(sample_dump().build(), "round_trip.etr");
  REQUIRE(l.ok);
  INFO(l.all_diags());
  CHECK(l.reader.diagnostics().empty());
  CHECK_FALSE(l.reader.damaged());
  CHECK(l.reader.complete());
  CHECK(l.reader.version_major() == 1);
  CHECK(l.reader.stats().chunks_read == 10);

  REQUIRE(l.reader.writers().size() == 1);
  const er::writer_info& w = l.reader.writers().begin()->second;
  CHECK(w.id == 0xA1B2C3D4u);
  CHECK(w.pid == 1234);
  CHECK(w.process_name == "app");
  CHECK(w.ring_capacity == 4096);
  CHECK(w.flush_period_us == 10000);
  CHECK(w.has_end);
  CHECK(w.clock.kind() == er::clock_model::fit::calibrated);
  CHECK(w.first_ns == 1002000);
  CHECK(w.last_ns == 1003200);

  REQUIRE(l.events.size() == 7);
  const er::event& conv = l.events[0];
  CHECK(conv.kind == er::event_kind::span);
  CHECK(conv.site->name == "conv1");
  CHECK(conv.site->category == "infer");
  CHECK(conv.site->file == "model.cpp");
  CHECK(conv.site->line == 10);
  CHECK(conv.thread->os_tid == 1234);
  CHECK(conv.thread->name == "main");
  CHECK(conv.writer->pid == 1234);
  CHECK(conv.begin_ns == 1002100);
  CHECK(conv.end_ns == 1002500);
  CHECK(l.events[1].site->name == "model");
  CHECK(l.events[1].begin_ns == 1002000);
  CHECK(l.events[1].end_ns == 1003000);
  CHECK(l.events[2].kind == er::event_kind::instant);
  CHECK(l.events[2].site->name == "frame");
  CHECK(l.events[2].site->category == "io");
  CHECK(l.events[2].begin_ns == 1003100);
  CHECK(l.events[3].kind == er::event_kind::counter);
  CHECK(l.events[3].value == 7.5);
  CHECK(l.events[3].begin_ns == 1003200);

  const er::event& worker = l.events[4];
  CHECK(worker.thread->name == "worker");
  CHECK(worker.thread->os_tid == 1235);
  CHECK(worker.begin_ns == 1002600);
  const er::event& loss = l.events[5];
  CHECK(loss.kind == er::event_kind::loss);
  CHECK(loss.site == nullptr);
  CHECK(loss.count == 5);
  CHECK(loss.begin_ns == 1002800);
  CHECK(loss.end_ns == 1002900);
  CHECK(l.events[6].begin_ns == 1003000);
  CHECK(l.events[6].end_ns == 1003050);

  const er::thread_info* main_thread = l.reader.find_thread(0xA1B2C3D4u, 1);
  REQUIRE(main_thread);
  CHECK(main_thread->spans == 2);
  CHECK(main_thread->instants == 1);
  CHECK(main_thread->counters == 1);
  CHECK(main_thread->decoded() == main_thread->stats_written);
  const er::thread_info* worker_thread = l.reader.find_thread(0xA1B2C3D4u, 2);
  REQUIRE(worker_thread);
  CHECK(worker_thread->spans == 2);
  CHECK(worker_thread->loss_records == 1);
  CHECK(worker_thread->lost == 5);
  CHECK(worker_thread->dropped() == 5);
  CHECK(worker_thread->decoded() == worker_thread->stats_written);
  REQUIRE(l.reader.threads_in_order().size() == 2);
  CHECK(l.reader.threads_in_order()[0] == main_thread);

  // Pass 2 can run again with the same result.
  std::size_t again = 0;
  REQUIRE(l.reader.read_events([&](const er::event&) { ++again; }));
  CHECK(again == 7);
  CHECK(main_thread->spans == 2);
}

std::size_t plain_function_calls = 0;
void count_event(const er::event&) { ++plain_function_calls; }
struct counting {
  std::size_t n = 0;
  void operator()(const er::event&) { ++n; }
};
struct counting_through {
  std::size_t* n;
  void operator()(const er::event&) const { ++*n; }
};

TEST_CASE("a pass takes any callable: a functor it updates in place, a const one, a temporary, a plain function") {
  loaded l(sample_dump().build(), "callables.etr");
  REQUIRE(l.ok);
  REQUIRE(l.events.size() == 7);
  counting functor;
  REQUIRE(l.reader.read_events(functor));
  CHECK(functor.n == 7);  // the passes call the caller's object, not a copy
  std::size_t n = 0;
  const counting_through through{&n};
  REQUIRE(l.reader.read_events_backward(through));
  CHECK(n == 7);
  plain_function_calls = 0;
  REQUIRE(l.reader.read_events(count_event));
  CHECK(plain_function_calls == 7);
  CHECK(l.reader.read_events(counting{}));
}

TEST_CASE("rebase records and thread renames") {
  dump_builder d = edgetrace_test::one_site_dump(fmt::site_kind::span, "c", "s", 50, "before");
  events e(1, 5000);
  e.span(1, 5000, 5100);
  e.rebase(4000);  // ticks went backwards
  e.span(1, 4000, 4050);
  d.event_chunk(1, e).thread(1, 1, 50, "after").end(1);
  loaded l(d.build(), "rebase.etr");
  REQUIRE(l.ok);
  CHECK(l.reader.diagnostics().empty());
  REQUIRE(l.events.size() == 2);
  CHECK(l.events[1].begin_ns == 4000);
  CHECK(l.events[1].end_ns == 4050);
  CHECK(l.events[0].thread->name == "after");  // the last thread record wins
}

TEST_CASE("several writers in one file are kept apart") {
  dump_builder a = sample_dump(0x11111111u, 100);
  dump_builder b = sample_dump(0x22222222u, 200);
  // Interleave the two streams chunk by chunk, as two appenders would.
  const bytes ab = a.build(), bb = b.build();
  bytes file(ab.begin(), ab.begin() + static_cast<std::ptrdiff_t>(fmt::file_header_size));
  for (std::size_t i = 0; i < a.chunk_count(); ++i) {
    auto add = [&file](const bytes& src, const dump_builder& d, std::size_t k) {
      file.insert(file.end(), src.begin() + static_cast<std::ptrdiff_t>(d.offset_of(k)),
                  src.begin() + static_cast<std::ptrdiff_t>(d.offset_of(k) + d.size_of(k)));
    };
    add(ab, a, i);
    add(bb, b, i);
  }
  loaded l(file, "two_writers.etr");
  REQUIRE(l.ok);
  CHECK(l.reader.diagnostics().empty());
  REQUIRE(l.reader.writers().size() == 2);
  CHECK(l.events.size() == 14);
  std::size_t by_100 = 0, by_200 = 0;
  for (const auto& e : l.events) {
    if (e.writer->pid == 100) {
      ++by_100;
      CHECK((e.thread->os_tid == 100 || e.thread->os_tid == 101));
    } else {
      ++by_200;
      CHECK(e.writer->pid == 200);
      CHECK((e.thread->os_tid == 200 || e.thread->os_tid == 201));
    }
  }
  CHECK(by_100 == 7);
  CHECK(by_200 == 7);
  CHECK(l.reader.threads_in_order().size() == 4);
  const auto order = l.reader.writers_in_order();
  CHECK(order[0]->pid == 100);
  CHECK(order[1]->pid == 200);
}

TEST_CASE("clock model: piecewise-linear with extrapolation") {
  er::clock_model m;
  m.build({{2000, 12000, 0}, {1000, 10000, 0}, {3000, 12500, 0}}, 1, 0);  // unsorted on purpose
  CHECK(m.kind() == er::clock_model::fit::calibrated);
  CHECK(m.warning().empty());
  CHECK(m.pairs_used() == 3);
  CHECK(m.to_ns(1000) == 10000);
  CHECK(m.to_ns(1500) == 11000);
  CHECK(m.to_ns(2000) == 12000);
  CHECK(m.to_ns(2500) == 12250);
  CHECK(m.to_ns(3000) == 12500);
  CHECK(m.to_ns(4000) == 13000);  // last segment's slope (0.5)
  CHECK(m.to_ns(0) == 8000);      // first segment's slope (2)
  CHECK(m.ticks_per_second() == doctest::Approx(2000.0 / 2500.0 * 1e9));
}

TEST_CASE("clock model: out-of-order, repeated and non-increasing pairs are dropped") {
  er::clock_model m;
  m.build({{1000, 1000, 0}, {1000, 1000, 0}, {2000, 900, 0}, {3000, 3000, 0}, {3000, 3500, 0}}, 0, 1000000000);
  CHECK(m.pairs_given() == 5);
  CHECK(m.pairs_used() == 2);  // (1000,1000) and (3000,3000)
  CHECK(m.to_ns(2000) == 2000);
}

TEST_CASE("clock model: monotonic across segment joins with awkward slopes") {
  er::clock_model m;
  // Slopes 1/3, 7/3, 1/7: rounding differs between neighbouring segments.
  m.build({{1000, 5000, 0}, {4000, 6000, 0}, {7000, 13000, 0}, {14000, 14000, 0}}, 1, 0);
  std::int64_t previous = m.to_ns(0);
  for (std::uint64_t t = 1; t < 20000; ++t) {
    const std::int64_t ns = m.to_ns(t);
    if (ns < previous) {
      CAPTURE(t);
      FAIL("clock model went backwards");
    }
    previous = ns;
  }
  CHECK(m.to_ns(4000) == 6000);
  CHECK(m.to_ns(7000) == 13000);
  CHECK(m.to_ns(14000) == 14000);
}

TEST_CASE("clock model: 64-bit ticks keep nanosecond precision") {
  const std::uint64_t t0 = 0xF000000000000000ull;
  const std::uint64_t ns0 = 1000000000000000ull;  // ~11.6 days of uptime
  er::clock_model m;
  m.build({{t0, ns0, 0}, {t0 + 3000000000ull, ns0 + 1000000000ull, 0}, {t0 + 6000000000ull, ns0 + 2000000000ull, 0}},
          1, 0);
  for (std::uint64_t k : {0ull, 1ull, 333333333ull, 999999999ull, 1000000000ull, 1500000001ull, 2000000000ull,
                          5000000000ull}) {
    CAPTURE(k);
    CHECK(m.to_ns(t0 + 3 * k) == static_cast<std::int64_t>(ns0 + k));
    CHECK(m.to_ns(t0 + 3 * k + 1) == static_cast<std::int64_t>(ns0 + k));  // +1/3 ns rounds down
    CHECK(m.to_ns(t0 + 3 * k + 2) == static_cast<std::int64_t>(ns0 + k + 1));
  }
  CHECK(m.ticks_per_second() == doctest::Approx(3e9));
  // Ticks near 2^64 and 0 do not overflow.
  CHECK(m.to_ns(UINT64_MAX) >= m.to_ns(t0 + 6000000000ull));
  CHECK(m.to_ns(0) <= m.to_ns(t0));
}

TEST_CASE("clock model: one pair uses the nominal rate, none warns") {
  er::clock_model m;
  SUBCASE("single pair with a nominal rate") {
    m.build({{1000, 5000, 0}}, 2, 2000000000);  // 2 GHz
    CHECK(m.kind() == er::clock_model::fit::single_pair);
    CHECK(m.warning().empty());
    CHECK(m.rate_known());
    CHECK(m.to_ns(3000) == 6000);
    CHECK(m.to_ns(0) == 4500);
  }
  SUBCASE("single pair, monotonic source, rate 0: 1 ns per tick") {
    m.build({{1000, 5000, 0}}, 0, 0);
    CHECK(m.warning().empty());
    CHECK(m.to_ns(3000) == 7000);
  }
  SUBCASE("single pair, TSC, rate unknown: said so (dump_reader refuses durations)") {
    m.build({{1000, 5000, 0}}, 1, 0);
    CHECK_FALSE(m.rate_known());
    CHECK(m.warning().find("tick rate unknown") != std::string::npos);
  }
  SUBCASE("no pair, TSC, rate unknown") {
    m.build({}, 1, 0);
    CHECK_FALSE(m.rate_known());
  }
  SUBCASE("no pair: warn, scale by the nominal rate") {
    m.build({}, 2, 500000000);  // 500 MHz: 2 ns per tick
    CHECK(m.kind() == er::clock_model::fit::nominal);
    CHECK_FALSE(m.warning().empty());
    CHECK(m.to_ns(1000) == 2000);
  }
}

TEST_CASE("a missing calibration is a note, not damage") {
  dump_builder d;
  d.process(1);
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::span, 1, "s");
  d.defs(1, defs).thread(1, 1, 9, "t");
  events e(1, 100);
  e.span(1, 100, 200);
  d.event_chunk(1, e).end(1);
  loaded l(d.build(), "no_calibration.etr");
  REQUIRE(l.ok);
  CHECK_FALSE(l.reader.damaged());
  REQUIRE(l.diag("no calibration pair"));
  CHECK(l.diag("no calibration pair")->level == er::diagnostic::severity::note);
  REQUIRE(l.events.size() == 1);
  CHECK(l.events[0].begin_ns == 100);
}

TEST_CASE("truncated tail: everything before it is used, the loss is reported") {
  dump_builder d = sample_dump();
  bytes b = d.build();
  const std::size_t last = d.chunk_count() - 1;  // the end chunk
  const std::size_t stats = last - 1;            // a thread_stats chunk
  truncate(b, d.offset_of(stats) + 5);
  loaded l(b, "truncated.etr");
  REQUIRE(l.ok);
  CHECK(l.events.size() == 7);
  CHECK(l.reader.damaged());
  CHECK_FALSE(l.reader.complete());
  const er::diagnostic* t = l.diag("truncated");
  REQUIRE(t);
  CHECK(t->offset == d.offset_of(stats));
  CHECK(t->message.find("(5 bytes lost)") != std::string::npos);
  CHECK(l.reader.stats().bytes_truncated == 5);
  CHECK(l.diag("incomplete: writer pid 1234 has no end record (process killed or crashed?); events after its last "
               "flush are missing"));
}

TEST_CASE("truncation inside a chunk header and right after the file header") {
  dump_builder d = sample_dump();
  bytes b = d.build();
  SUBCASE("two bytes of the next header") {
    truncate(b, d.offset_of(3) + 2);
    loaded l(b, "truncated_header.etr");
    REQUIRE(l.ok);
    CHECK(l.diag("truncated"));
    CHECK(l.reader.stats().bytes_truncated == 2);
  }
  SUBCASE("only the file header") {
    truncate(b, fmt::file_header_size);
    loaded l(b, "header_only.etr");
    REQUIRE(l.ok);
    CHECK(l.events.empty());
    CHECK(l.reader.writers().empty());
    CHECK(l.reader.diagnostics().empty());
  }
}

TEST_CASE("a bit flip in an events chunk loses that chunk only, and says where") {
  dump_builder d = sample_dump();
  bytes b = d.build();
  const std::size_t chunk = 5;  // thread 1's events
  flip_bit(b, d.offset_of(chunk) + fmt::chunk_header_size + 3, 4);
  loaded l(b, "bit_flip.etr");
  REQUIRE(l.ok);
  CHECK(l.reader.damaged());
  const er::diagnostic* skip = l.diag("corrupt data: skipped");
  REQUIRE(skip);
  CHECK(skip->offset == d.offset_of(chunk));
  CHECK(skip->message.find("skipped " + std::to_string(d.size_of(chunk)) + " bytes at offset " +
                           std::to_string(d.offset_of(chunk))) != std::string::npos);
  CHECK(l.reader.stats().bytes_skipped == d.size_of(chunk));
  // Thread 2's events, the stats and the end record still count.
  CHECK(l.events.size() == 3);
  for (const auto& e : l.events) CHECK(e.thread->name == "worker");
  CHECK(l.reader.complete());
  const er::thread_info* t1 = l.reader.find_thread(0xA1B2C3D4u, 1);
  REQUIRE(t1);
  CHECK(t1->decoded() == 0);
  CHECK(t1->stats_written == 4);  // info shows "missing 4"
}

TEST_CASE("bit flips in chunk headers: sync, length, writer id") {
  dump_builder d = sample_dump();
  for (std::size_t at : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{7}, std::size_t{9}}) {
    CAPTURE(at);
    bytes b = d.build();
    flip_bit(b, d.offset_of(3) + at, 6);  // the thread chunk of "main"
    loaded l(b, "header_flip.etr");
    REQUIRE(l.ok);
    CHECK(l.diag("corrupt data"));
    CHECK(l.reader.stats().bytes_skipped == d.size_of(3));
    CHECK(l.diag("unknown thread id 1"));  // its events cannot be attributed
    CHECK(l.events.size() == 3);
  }
}

TEST_CASE("a zero-filled region spanning chunks is stepped over") {
  dump_builder d = sample_dump();
  bytes b = d.build();
  const std::size_t from = d.offset_of(4) + 3;
  const std::size_t to = d.offset_of(6) + 2;
  zero_fill(b, from, to - from);
  loaded l(b, "zero_fill.etr");
  REQUIRE(l.ok);
  CHECK(l.reader.stats().bytes_skipped == d.offset_of(7) - d.offset_of(4));
  CHECK(l.reader.stats().skipped_regions == 1);
  CHECK(l.events.empty());  // both events chunks were in the hole
  CHECK(l.reader.complete());
  const er::thread_info* worker = l.reader.find_thread(0xA1B2C3D4u, 2);
  CHECK((worker == nullptr || !worker->has_record));  // its thread record was in the hole
}

TEST_CASE("a zero-filled tail (preallocated file, power loss) is reported") {
  dump_builder d = sample_dump();
  bytes b = d.build();
  b.resize(b.size() + 4096, 0);
  loaded l(b, "zero_tail.etr");
  REQUIRE(l.ok);
  CHECK(l.events.size() == 7);
  const er::diagnostic* skip = l.diag("no valid chunk up to the end of the file");
  REQUIRE(skip);
  CHECK(skip->offset == b.size() - 4096);
  CHECK(l.reader.stats().bytes_skipped == 4096);
}

TEST_CASE("a duplicated events chunk is counted once; duplicated metadata is harmless") {
  dump_builder d = sample_dump();
  d.duplicate(5);  // thread 1's events
  d.duplicate(2);  // definitions
  loaded l(d.build(), "duplicate.etr");
  REQUIRE(l.ok);
  CHECK(l.events.size() == 7);
  REQUIRE(l.diag("duplicate events chunk"));
  CHECK(l.diag("duplicate events chunk")->offset == d.offset_of(7));
  CHECK(l.reader.find_thread(0xA1B2C3D4u, 1)->decoded() == 4);
}

TEST_CASE("reordered chunks: metadata anywhere in the file resolves events anywhere") {
  // Pass 1 reads all metadata before pass 2 decodes any event, so definitions
  // and thread records written after the events that use them still apply.
  dump_builder d = sample_dump();
  d.move(2, 7);  // definitions after both events chunks
  d.move(2, 7);  // thread "main" too
  d.move(0, 8);  // and the process record
  loaded l(d.build(), "reordered.etr");
  REQUIRE(l.ok);
  INFO(l.all_diags());
  CHECK(l.reader.diagnostics().empty());
  REQUIRE(l.events.size() == 7);
  CHECK(l.events[0].site->name == "conv1");
  CHECK(l.events[0].thread->name == "main");
  CHECK(l.events[0].writer->pid == 1234);
}

TEST_CASE("unknown chunk types are skipped silently; extra payload bytes are ignored") {
  dump_builder d;
  payload future;
  future.u32(0xDEADBEEF).str("from a newer minor");
  d.chunk(42, 7, future.data());
  payload proc;
  proc.varint(77).u8(0).u8(0).varint(1000000000).varint(64).varint(500).str("svc").u32(0xFFFFFFFF);  // + a new field
  d.chunk(fmt::chunk_type::process, 7, proc);
  payload cal;
  cal.u64(0).u64(0).u64(0).u64(1000).u64(1000).u64(0).u16(0xABCD);  // 2 pairs + 2 stray bytes
  d.chunk(fmt::chunk_type::calibration, 7, cal);
  definitions defs;
  defs.category(1, "c").site(1, fmt::site_kind::instant, 1, "tick");
  d.defs(7, defs);
  payload thread;
  thread.varint(1).varint(78).str("t").u8(99);
  d.chunk(fmt::chunk_type::thread, 7, thread);
  events e(1, 10);
  e.instant(1, 20);
  d.event_chunk(7, e).chunk(200, 7, bytes{}).end(7);
  loaded l(d.build(), "forward_compat.etr");
  REQUIRE(l.ok);
  INFO(l.all_diags());
  CHECK(l.reader.diagnostics().empty());
  CHECK(l.reader.stats().chunks_unknown == 2);
  const er::writer_info& w = l.reader.writers().begin()->second;
  CHECK(w.pid == 77);
  CHECK(w.process_name == "svc");
  CHECK(w.clock.pairs_used() == 2);
  REQUIRE(l.events.size() == 1);
  CHECK(l.events[0].begin_ns == 20);
  CHECK(l.events[0].thread->os_tid == 78);
}

namespace {

/// A chunk payload of one record: `tag`, its size, and `fields` as varints.
template <class Tag>
payload one_record(Tag tag, const std::vector<std::uint64_t>& fields) {
  payload body;
  for (std::uint64_t v : fields) body.varint(v);
  payload record;
  record.u8(static_cast<std::uint8_t>(tag)).varint(body.data().size());
  for (unsigned char b : body.data()) record.u8(b);
  return record;
}

}  // namespace

TEST_CASE("gpu stats: a 1.9 record has no skip reasons; a 1.10 one splits the skipped; a forged split is ignored") {
  struct stats_case {
    std::vector<std::uint64_t> fields;  ///< launches, resolved, captured, unresolved, skipped, pairs[, no pair]
    bool reasons;
    std::uint64_t no_pair;
  };
  const stats_case cases[] = {
      {{10, 8, 0, 2, 5, 64}, false, 0},     // 1.9: six varints
      {{10, 8, 0, 2, 5, 64, 3}, true, 3},   // 1.10: 3 of the 5 for want of an event pair
      {{10, 8, 0, 2, 5, 64, 9}, false, 9},  // more lacking a pair than skipped: not believed
  };
  for (const stats_case& c : cases) {
    CAPTURE(c.fields.size());
    dump_builder d;
    d.process(7).chunk(fmt::chunk_type::gpu, 7, one_record(fmt::gpu_record::stats, c.fields)).end(7);
    loaded l(d.build(), "gpu_stats.etr");
    REQUIRE(l.ok);
    const er::writer_gpu& g = l.reader.writers().begin()->second.gpu;
    REQUIRE(g.has_stats);
    CHECK(g.skipped == 5);
    CHECK(g.event_pairs == 64);
    CHECK(g.has_skip_reasons == c.reasons);
    if (c.reasons) CHECK(g.skipped_no_pair == c.no_pair);
  }
}

TEST_CASE("device stats: a 1.10 record says nothing of the longest sample; a 1.11 one does") {
  for (const bool with_longest : {false, true}) {
    CAPTURE(with_longest);
    std::vector<std::uint64_t> fields = {40, 1, 0, 90000, 12};  // taken, ignored, failed, CPU ns, files
    if (with_longest) fields.push_back(1500000);
    dump_builder d;
    d.process(7).chunk(fmt::chunk_type::device_samples, 7, one_record(fmt::device_sample_record::stats, fields)).end(7);
    loaded l(d.build(), "device_stats.etr");
    REQUIRE(l.ok);
    CHECK(l.diag("device samples") == nullptr);  // not malformed
    const er::writer_device& dev = l.reader.writers().begin()->second.device;
    CHECK(dev.samples_taken == 40);
    CHECK(dev.files_last == 12);
    CHECK(dev.longest_ns == (with_longest ? 1500000u : 0u));
  }
}

TEST_CASE("an events chunk that fails midway keeps the events before the error") {
  dump_builder d = sample_dump();
  SUBCASE("unknown site") {
    events e(1, 10000);
    e.span(1, 10000, 10100).span(99, 10100, 10200).span(1, 10200, 10300);
    d.event_chunk(0xA1B2C3D4u, e);
    loaded l(d.build(), "unknown_site.etr");
    REQUIRE(l.ok);
    CHECK(l.events.size() == 8);
    CHECK(l.events.back().end_ns == 1010100);
    const er::diagnostic* bad = l.diag("unknown site id 99");
    REQUIRE(bad);
    CHECK(bad->offset == d.offset_of(d.chunk_count() - 1));
    CHECK(l.reader.stats().events_chunks_damaged == 1);
  }
  // The rest: one damaged chunk each, after sample_dump's 7 events.
  struct damaged_chunk {
    const char* what;
    std::uint64_t thread, base_tick;
    void (*append)(events&);
    std::uint32_t writer;
    std::size_t events_kept;
    std::vector<const char*> diagnostics;
  };
  const damaged_chunk cases[] = {
      {"malformed varint at the end", 2, 10000, [](events& e) { e.instant(3, 10001).instant(3, 10002).u8(0x80); },
       0xA1B2C3D4u, 9, {"malformed varint"}},
      {"unknown special subtype", 2, 10000, [](events& e) { e.instant(3, 10001).varint(5 << 2 | 3).varint(1); },
       0xA1B2C3D4u, 8, {"unknown special record"}},
      {"span longer than its end tick", 2, 10, [](events& e) { e.varint(1 << 2).varint(5).varint(100); }, 0xA1B2C3D4u,
       7, {"span longer than its end tick"}},
      {"unknown thread", 9, 10, [](events& e) { e.instant(3, 11); }, 0xA1B2C3D4u, 7, {"unknown thread id 9"}},
      {"events of a writer with no other chunk", 1, 10, [](events& e) { e.instant(3, 11); }, 0x5555u, 7,
       {"writer 0x00005555 has no process record", "unknown thread id 1"}},
  };
  for (const damaged_chunk& c : cases) {
    CAPTURE(c.what);
    dump_builder damaged = sample_dump();
    events e(c.thread, c.base_tick);
    c.append(e);
    damaged.event_chunk(c.writer, e);
    loaded l(damaged.build(), "damaged_chunk.etr");
    REQUIRE(l.ok);
    CHECK(l.events.size() == c.events_kept);
    for (const char* diagnostic : c.diagnostics) CHECK_MESSAGE(l.diag(diagnostic), diagnostic);
  }
}

TEST_CASE("malformed metadata chunks are reported and ignored") {
  dump_builder d = sample_dump();
  payload bad_thread;
  bad_thread.varint(3).varint(5).varint(1000);  // string longer than the payload
  d.chunk(fmt::chunk_type::thread, 0xA1B2C3D4u, bad_thread);
  payload huge_string;
  huge_string.u8(1).varint(5).varint(1ull << 40);  // category name of a terabyte
  d.chunk(fmt::chunk_type::definitions, 0xA1B2C3D4u, huge_string);
  loaded l(d.build(), "malformed_meta.etr");
  REQUIRE(l.ok);
  CHECK(l.events.size() == 7);
  CHECK(l.diag("malformed thread chunk"));
  CHECK(l.diag("malformed definitions chunk"));
}

TEST_CASE("open errors say what is wrong") {
  SUBCASE("missing") {
    er::dump_reader r;
    CHECK_FALSE(r.open(temp_path("does_not_exist.etr")));
    CHECK(r.error() == "No such file or directory");
  }
  SUBCASE("directory") {
    er::dump_reader r;
    CHECK_FALSE(r.open(temp_path("")));
    CHECK(r.error() == "is a directory");
  }
  SUBCASE("empty") { CHECK(open_error({}, "empty.etr") == "empty file (0 bytes)"); }
  SUBCASE("shorter than the header") {
    bytes b = dump_builder().build();
    truncate(b, 10);
    CHECK(open_error(b, "short.etr").find("too short") != std::string::npos);
  }
  SUBCASE("bad magic") {
    const std::string text = "{\"traceEvents\":[]}\n";
    CHECK(open_error(bytes(text.begin(), text.end()), "not_a_dump.etr") == "not an edgetrace dump (bad magic)");
  }
  SUBCASE("unknown major version") {
    dump_builder d = sample_dump();
    d.header(2, 3);
    CHECK(open_error(d.build(), "v2.etr") ==
          "dump format version 2.3 is newer than this reader (1.x); update edgetrace");
  }
  SUBCASE("a newer minor is fine") {
    dump_builder d = sample_dump();
    d.header(1, 7);
    loaded l(d.build(), "v1_7.etr");
    CHECK(l.ok);
    CHECK(l.reader.version_minor() == 7);
    CHECK(l.events.size() == 7);
  }
}

TEST_CASE("garbage lengths never make the reader allocate or skip far") {
  dump_builder d = sample_dump();
  bytes b = d.build();
  // A chunk header claiming 4 GiB, then one claiming exactly the maximum.
  bytes fake = {fmt::chunk_sync0, fmt::chunk_sync1, 5, 0, 0xF0, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0};
  bytes at_max = {fmt::chunk_sync0, fmt::chunk_sync1, 5, 0, 0, 0, 0x40, 0, 1, 0, 0, 0};
  bytes file(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(d.offset_of(5)));
  append(file, fake);
  append(file, at_max);
  file.insert(file.end(), b.begin() + static_cast<std::ptrdiff_t>(d.offset_of(5)), b.end());
  loaded l(file, "garbage_lengths.etr");
  REQUIRE(l.ok);
  CHECK(l.events.size() == 7);
  CHECK(l.reader.stats().bytes_skipped == fake.size() + at_max.size());
}

TEST_CASE("diagnostics are bounded") {
  dump_builder d = sample_dump();
  for (int i = 0; i < 300; ++i) {
    events e(77, 10);  // unknown thread: one diagnostic each
    e.instant(3, 11);
    d.event_chunk(0xA1B2C3D4u, e);
  }
  loaded l(d.build(), "many_diags.etr");
  REQUIRE(l.ok);
  CHECK(l.reader.diagnostics().size() == er::dump_reader::max_stored_diagnostics);
  CHECK(l.reader.diagnostics_dropped() == 300 - er::dump_reader::max_stored_diagnostics);
  CHECK(l.reader.damage_count() == 300);
}

TEST_CASE("random damage never crashes or hangs (mini fuzz)") {
  const bytes clean = sample_dump().build();
  std::mt19937 rng(20240601);
  for (int round = 0; round < 400; ++round) {
    bytes b = clean;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = fmt::file_header_size + rng() % (b.size() - fmt::file_header_size);
      switch (rng() % 4) {
        case 0: flip_bit(b, at, rng() % 8); break;
        case 1: zero_fill(b, at, rng() % 40); break;
        case 2: b[at] = static_cast<unsigned char>(rng()); break;
        case 3: truncate(b, std::max<std::size_t>(at, fmt::file_header_size + 1)); break;
      }
    }
    loaded l(b, "fuzz.etr");
    CHECK(l.ok);
    for (const auto& e : l.events) CHECK(e.begin_ns <= e.end_ns);
  }
}

TEST_CASE("forged headers claiming big payloads cost linear time, and real chunks after them are found") {
  // A megabyte of headers that each claim a 1 MiB payload: without the CRC
  // budget every one would be checksummed in full (quadratic).
  bytes forged;
  for (int i = 0; i < (1 << 20) / 12; ++i) {
    const unsigned char h[12] = {fmt::chunk_sync0, fmt::chunk_sync1, 5, 0, 0, 0, 0x10, 0, 1, 0, 0, 0};
    forged.insert(forged.end(), h, h + 12);
  }
  const bytes clean = sample_dump().build();
  bytes file(clean.begin(), clean.begin() + static_cast<std::ptrdiff_t>(fmt::file_header_size));
  append(file, forged);
  file.insert(file.end(), clean.begin() + static_cast<std::ptrdiff_t>(fmt::file_header_size), clean.end());
  loaded l(file, "forged_headers.etr");
  REQUIRE(l.ok);
  CHECK(l.events.size() == 7);
  CHECK(l.reader.stats().bytes_skipped == forged.size());
  CHECK(l.reader.stats().skipped_regions == 1);
}

}  // namespace reader_test
