// SPDX-License-Identifier: MIT
// Tests of writer/encoding/encoder.hpp without threads: records go into the pure chunk encoder, its chunks are read back with the reader, and every value must come back.
#include <doctest/doctest.h>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/writer/encoding/encoder.hpp>
#include <edgetrace/writer/rings.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace encoder_test {

namespace {

namespace et = edgetrace;
namespace dt = edgetrace::detail;
namespace rd = edgetrace::reader;
namespace fmt = edgetrace::format;

/// The encoder's questions answered from tables; no registry, no runtime.
class table_host final : public dt::encoder_host {
 public:
  std::map<std::uint32_t, std::string> categories;
  std::map<std::uint32_t, std::string> names;
  std::set<const dt::site*> unloaded;
  int outputs_full = 0;
  int watched = 0;

  bool read_loaded_site(const dt::site* s, void (*read)(const dt::site&, void*), void* context) override {
    if (unloaded.count(s) != 0) return false;
    read(*s, context);
    return true;
  }
  void category_name(std::uint32_t index, std::string& out) override {
    out = categories.count(index) != 0 ? categories[index] : "unknown";
  }
  void interned_name(std::uint32_t id, std::string& out) override {
    out = names.count(id) != 0 ? names[id] : "(unnamed)";
  }
  void watched_record(const dt::thread_ring&, std::uint32_t, const dt::record&) override { ++watched; }
  void output_full() override { ++outputs_full; }
};

// golden-script-begin: these lines, built against the runtime before it was split into rooms (one class
// runtime with the encoder inside), gave the size and CRC the "bytes" case checks.
dt::category_state cat_a("enc_a");
dt::category_state cat_b("enc_b");

/// The sites the records below use, by kind.
enum site_index { work, tick, iteration, depth, batch, ratio, hit, model, request, pool_alloc, pool_free, gone };
constexpr dt::site sites[] = {
    {&cat_a, "work", "enc.cpp", 11, fmt::site_kind::span},
    {&cat_a, "tick", "enc.cpp", 12, fmt::site_kind::instant},
    {&cat_a, "iteration", "enc.cpp", 13, fmt::site_kind::mark},
    {&cat_b, "depth", "enc.cpp", 14, fmt::site_kind::counter},
    {&cat_a, "batch", "enc.cpp", 15, fmt::site_kind::arg},
    {&cat_a, "ratio", "enc.cpp", 16, fmt::site_kind::arg_float},
    {&cat_a, "hit", "enc.cpp", 17, fmt::site_kind::arg_bool},
    {&cat_b, "model", "enc.cpp", 18, fmt::site_kind::arg_name},
    {&cat_a, "request", "enc.cpp", 19, fmt::site_kind::flow},
    {&cat_b, "pool", "enc.cpp", 20, fmt::site_kind::alloc},
    {&cat_b, "pool", "enc.cpp", 21, fmt::site_kind::free},
    {&cat_a, "gone", "lib.cpp", 22, fmt::site_kind::span},
};

std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

dt::record site_record(site_index s, std::uint64_t a, std::uint64_t b) { return {dt::pack_site(&sites[s]), a, b}; }

/// One thread's records, every kind the encoder knows, in an order that
/// opens and closes argument runs, rebases and coalesces unloaded drops.
template <class Add>
void golden_records(Add&& add) {
  add(site_record(work, 5000, 7000));
  add(dt::record{dt::pack_named(3, 2), 7100, 8000});
  add(site_record(batch, 7150, static_cast<std::uint64_t>(std::int64_t{-7})));
  add(site_record(batch, 7151, 300));
  add(site_record(ratio, 7152, bits(0.125)));
  add(site_record(hit, 7153, 1));
  add(site_record(batch, 7154, 5));
  add(site_record(model, 7155, 4));
  add(site_record(tick, 8100, 0));
  add(site_record(iteration, 8150, 0));
  add(site_record(depth, 8200, bits(2.5)));
  add(dt::record{dt::pack_loss(3), 8300, 8400});
  add(site_record(gone, 8450, 8460));
  add(site_record(gone, 8470, 8480));
  add(site_record(work, 6000, 6500));
  add(site_record(request, 6600, 99));
  add(site_record(pool_alloc, 6700, 0xABC000));
  add(dt::record{dt::tag_more, 4096, 0});
  add(site_record(pool_free, 6800, 0xABC000));
  add(site_record(depth, 100, bits(-1e300)));
  for (std::uint64_t i = 0; i < 3000; ++i) add(site_record(work, 200000 + 10 * i, 200005 + 10 * i + (i % 7)));
  add(dt::record{dt::pack_named(4, 1), 300000, 300000});
}
// golden-script-end

/// Writes `chunks` after a file header and reads the file back.
struct read_back {
  rd::dump_reader reader;
  std::vector<rd::event> events;
  bool ok = false;

  explicit read_back(const std::vector<unsigned char>& chunks) {
    const std::string path = "/tmp/edgetrace_encoder_test_" + std::to_string(::getpid()) + ".etr";
    unsigned char header[fmt::file_header_size];
    fmt::write_file_header(header);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(header, 1, sizeof header, f);
    std::fwrite(chunks.data(), 1, chunks.size(), f);
    std::fclose(f);
    ok = reader.open(path) && reader.read_metadata() &&
         reader.read_events([&](const rd::event& e) { events.push_back(e); });
    ::unlink(path.c_str());
  }
  const rd::writer_info& writer() const { return reader.writers().begin()->second; }
};

/// A mapped ring (the encoder builds its chunks in the ring's own
/// buffers) whose drain lock the test holds throughout, as the flusher
/// does while it encodes.
struct held_ring {
  dt::thread_ring& ring;
  dt::ring_encoding& enc;
  /// A ring of the default size (1 MiB), whose chunks are sealed at the
  /// format's target payload, as the bytes below were.
  held_ring() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS : ring(*dt::map_ring(43690)), enc(dt::encoding_of(ring)) {
    REQUIRE(enc.lock());
  }
  ~held_ring() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    enc.unlock();
    dt::unmap_ring(&ring);
  }
};

/// One thread's records in, as the flusher feeds them.
struct fixture : held_ring {
  table_host host;
  dt::chunk_encoder encoder{host};
  dt::settings config{};

  fixture() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    host.categories = {{1, "enc_a"}, {2, "enc_b"}};
    host.names = {{3, "dynamic"}, {4, "resnet"}};
    cat_a.index = 1;
    cat_b.index = 2;
    encoder.set_writer_id(0x2468ACE1u);
    config.clock = dt::clock_monotonic;
    config.ring_records = 4096;
    config.flush_ms = 10;
    encoder.write_process(777, edgetrace::detail::os::own_identity(), config, "encoder_test");
    encoder.write_calibration({1000, 1000, 5000000000ull});
    encoder.write_calibration({2000000000ull, 2000000000ull, 7000000000ull});
    ring.os_tid = 4242;
    std::strcpy(ring.name, "worker");
    encoder.begin_ring(ring, enc, 0);
  }
  void add(const dt::record& r) EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { encoder.add(ring, enc, r); }
  void add_loss(std::uint64_t count, std::uint64_t first, std::uint64_t last) EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    encoder.add_loss(ring, enc, count, first, last);
  }
  void begin_ring() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { encoder.begin_ring(ring, enc, 0); }
  void end_ring() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { encoder.end_ring(enc); }
  std::vector<unsigned char> finish() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    encoder.end_ring(enc);
    encoder.write_thread_stats(ring);
    encoder.write_end();
    return encoder.output();
  }
};

}  // namespace

TEST_CASE("events round-trip: spans, named spans, instants, marks, counters, losses, rebases") {
  fixture f;
  f.add(site_record(work, 5000, 7000));
  f.add({dt::pack_named(3, 2), 7100, 8000});
  f.add(site_record(tick, 8100, 0));
  f.add(site_record(iteration, 8150, 0));
  f.add(site_record(depth, 8200, bits(2.5)));
  f.add({dt::pack_loss(3), 8300, 8400});
  f.add(site_record(work, 6000, 6500));  // ends before the previous record: a rebase
  f.add(site_record(work, 9000, 9000));  // zero length
  f.add(site_record(depth, 100, bits(-1e300)));  // far back: a rebase on an instant-like record
  f.add_loss(2, 9500, 9600);  // a retired thread's pending loss, in a chunk of its own
  read_back back(f.finish());
  REQUIRE(back.ok);
  for (const auto& d : back.reader.diagnostics()) MESSAGE(d.message);
  CHECK_FALSE(back.reader.damaged());
  const rd::writer_info& w = back.writer();
  // The process chunk, whole.
  CHECK((w.id == 0x2468ACE1u && w.pid == 777 && w.process_name == "encoder_test"));
  CHECK((w.ring_capacity == 4096 && w.flush_period_us == 10000 && w.has_end));
  REQUIRE(w.calibration.size() == 2);
  CHECK(w.calibration[1].tick == 2000000000ull);
  CHECK(w.calibration[1].realtime_ns == 7000000000ull);
  REQUIRE(w.threads.size() == 1);
  const rd::thread_info& t = w.threads.begin()->second;
  CHECK(t.name == "worker");
  CHECK(t.os_tid == 4242);
  CHECK(t.stats_written == 8);  // losses are not records written
  CHECK(t.spans == 4);
  CHECK(t.instants == 2);
  CHECK(t.counters == 2);
  CHECK(t.lost == 5);

  REQUIRE(back.events.size() == 10);
  const auto& e = back.events;
  CHECK(e[0].kind == rd::event_kind::span);
  CHECK(e[0].site->name == "work");
  CHECK(e[0].site->category == "enc_a");
  CHECK(e[0].site->file == "enc.cpp");
  CHECK(e[0].site->line == 11);
  CHECK(e[0].begin_tick == 5000);
  CHECK(e[0].end_tick == 7000);
  CHECK(e[1].site->name == "dynamic");
  CHECK(e[1].site->category == "enc_b");
  CHECK(e[1].site->file.empty());
  CHECK(e[1].begin_tick == 7100);
  CHECK(e[1].end_tick == 8000);
  CHECK(e[2].kind == rd::event_kind::instant);
  CHECK(e[2].site->name == "tick");
  CHECK(e[2].begin_tick == 8100);
  CHECK(e[3].kind == rd::event_kind::instant);
  CHECK(e[3].site->kind == fmt::site_kind::mark);
  CHECK(e[3].begin_tick == 8150);
  CHECK(e[4].kind == rd::event_kind::counter);
  CHECK(e[4].site->category == "enc_b");
  CHECK(e[4].value == 2.5);
  CHECK(e[4].begin_tick == 8200);
  CHECK(e[5].kind == rd::event_kind::loss);
  CHECK(e[5].count == 3);
  CHECK(e[5].begin_tick == 8300);
  CHECK(e[5].end_tick == 8400);
  CHECK(e[6].begin_tick == 6000);
  CHECK(e[6].end_tick == 6500);
  CHECK(e[6].site == e[0].site);  // one definition per site
  CHECK(e[7].begin_tick == 9000);
  CHECK(e[7].end_tick == 9000);
  CHECK(e[8].kind == rd::event_kind::counter);
  CHECK(e[8].begin_tick == 100);
  CHECK(e[8].value == -1e300);
  CHECK(e[9].kind == rd::event_kind::loss);
  CHECK(e[9].count == 2);
  CHECK(e[9].begin_tick == 9500);
  CHECK(e[9].end_tick == 9600);
  CHECK(w.sites.size() == 5);
}

TEST_CASE("annotations round-trip: arguments of every type, runs, flows, allocations, frees") {
  fixture f;
  f.add(site_record(batch, 5000, static_cast<std::uint64_t>(std::int64_t{-7})));
  f.add(site_record(batch, 5001, 300));              // joins the run
  f.add(site_record(ratio, 5002, bits(0.125)));     // a typed run from here
  f.add(site_record(hit, 5003, 1));
  f.add(site_record(model, 5004, 4));          // value: interned name 4
  f.add(site_record(request, 5005, 99));
  f.add(site_record(pool_alloc, 5006, 0xABC000));
  f.add({dt::tag_more, 4096, 0});
  f.add(site_record(pool_free, 5007, 0xABC000));
  f.add(site_record(work, 4000, 5010));  // the span they belong to
  read_back back(f.finish());
  REQUIRE(back.ok);
  CHECK_FALSE(back.reader.damaged());
  const rd::writer_info& w = back.writer();
  std::vector<rd::annotation> a;
  back.reader.for_each_annotation([&a](const rd::annotation& one) { a.push_back(one); });
  REQUIRE(a.size() == 8);
  CHECK(w.memory_records.size() == 2);
  CHECK(a[0].type == fmt::annotation_record::arg);
  CHECK(a[0].has_name("batch"));
  CHECK(a[0].int_value() == -7);
  CHECK(a[0].tick == 5000);
  CHECK(a[1].int_value() == 300);
  CHECK(a[1].tick == 5001);
  CHECK(a[2].is_real());
  CHECK(a[2].real_value() == 0.125);
  CHECK(a[2].tick == 5002);
  CHECK(a[3].is_bool());
  CHECK(a[3].value_text() == "true");
  CHECK(a[4].type == fmt::annotation_record::arg_name);
  CHECK(a[4].has_name("model"));
  CHECK(a[4].value_text() == "resnet");
  CHECK(a[5].type == fmt::annotation_record::flow);
  CHECK(a[5].value == 99);
  CHECK(a[6].type == fmt::annotation_record::alloc);
  CHECK(a[6].value == 0xABC000);
  CHECK(a[6].bytes == 4096);
  CHECK(a[6].tick == 5006);
  CHECK(a[7].type == fmt::annotation_record::free);
  CHECK(a[7].value == 0xABC000);
  CHECK(a[7].tick == 5007);
  const rd::thread_info& t = w.threads.begin()->second;
  CHECK(t.stats_written == 10);  // an allocation counts as two records
  CHECK(t.annotation_records == 9);
  REQUIRE(back.events.size() == 1);
  CHECK(back.events[0].end_tick == 5010);
}

TEST_CASE("capture chunks, client chunks and records of an unloaded library") {
  fixture f;
  f.host.unloaded.insert(&sites[gone]);
  f.add(site_record(work, 5000, 6000));
  f.add(site_record(gone, 6100, 6200));
  f.add(site_record(gone, 6300, 6400));  // coalesced into the same loss record
  f.add(site_record(work, 7000, 8000));
  std::vector<dt::capture_entry> capture;
  capture.push_back({fmt::capture_record::recording, 5500, false, fmt::capture_reason::api, std::string()});
  capture.push_back({fmt::capture_record::phase, 5600, false, fmt::capture_reason::api, "warm-up"});
  capture.push_back({fmt::capture_record::recording, 5700, true, fmt::capture_reason::duration, std::string()});
  f.encoder.write_capture(capture);
  CHECK(f.encoder.word_site_id(dt::pack_site(&sites[work])) == 1);  // a client sees the rings' ids
  read_back back(f.finish());
  REQUIRE(back.ok);
  const rd::writer_info& w = back.writer();
  REQUIRE(back.events.size() == 3);
  CHECK(back.events[1].kind == rd::event_kind::loss);
  CHECK(back.events[1].count == 2);
  CHECK(back.events[1].begin_tick == 6100);
  CHECK(back.events[1].end_tick == 6300);
  CHECK(back.events[2].end_tick == 8000);
  const rd::thread_info& t = w.threads.begin()->second;
  CHECK(t.stats_dropped == 2);
  CHECK(t.stats_written == 2);
  REQUIRE(w.recording.size() == 2);
  CHECK_FALSE(w.recording[0].on);
  CHECK(w.recording[0].tick == 5500);
  CHECK(w.recording[1].on);
  CHECK(w.recording[1].reason == fmt::capture_reason::duration);
  REQUIRE(w.phases.size() == 1);
  CHECK(w.phases[0].name == "warm-up");
  CHECK(w.phases[0].tick == 5600);
  for (const auto& entry : w.sites) CHECK(entry.second.name != "gone");  // never read, never defined
}

TEST_CASE("a full output batch is handed to the host; forgotten definitions are written again") {
  fixture f;
  for (std::uint64_t i = 0; i < 100000; ++i) f.add(site_record(work, 1000 + 10 * i, 1005 + 10 * i));
  f.end_ring();
  CHECK(f.host.outputs_full > 0);  // the host would write them; here they stay
  f.encoder.forget_definitions();  // as after a truncated file: a new thread id, the site defined again
  f.begin_ring();
  f.add(site_record(work, 900000, 900100));
  read_back back(f.finish());
  REQUIRE(back.ok);
  CHECK_FALSE(back.reader.damaged());
  REQUIRE(back.events.size() == 100001);
  CHECK(back.events[99999].end_tick == 1005 + 10 * 99999);
  CHECK(back.events.back().site->name == "work");
  CHECK(back.events.back().site->id == 2);
  CHECK(back.events.back().thread->thread_id == 2);
  CHECK(back.events.back().begin_tick == 900000);
}

TEST_CASE("bytes: the chunks are those the encoder wrote before it became a room of its own") {
  table_host host;
  host.categories = {{1, "enc_a"}, {2, "enc_b"}};
  host.names = {{3, "dynamic"}, {4, "resnet"}};
  host.unloaded.insert(&sites[gone]);
  cat_a.index = 1;
  cat_b.index = 2;
  dt::chunk_encoder encoder(host);
  encoder.set_writer_id(0x2468ACE1u);
  encoder.write_calibration({1000, 1000, 5000000000ull});
  held_ring held;
  dt::thread_ring& ring = held.ring;
  ring.os_tid = 4242;
  std::strcpy(ring.name, "worker");
  [&]() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    encoder.begin_ring(ring, held.enc, 0);
    golden_records([&](const dt::record& r) EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { encoder.add(ring, held.enc, r); });
    encoder.end_ring(held.enc);
  }();
  encoder.write_capture({{fmt::capture_record::recording, 5500, false, fmt::capture_reason::api, std::string()},
                         {fmt::capture_record::phase, 5600, false, fmt::capture_reason::api, "warm-up"},
                         {fmt::capture_record::recording, 5700, true, fmt::capture_reason::duration, std::string()}});
  CHECK(encoder.word_site_id(dt::pack_named(4, 2)) == 7);
  const unsigned char payload[] = {1, 2, 3};
  encoder.emit_client_chunk(fmt::chunk_type::gpu, payload, sizeof payload);
  encoder.write_thread_stats(ring);
  encoder.write_end();
  const std::vector<unsigned char>& out = encoder.output();
  // 9605 bytes and CRC 0xDECE32D0 before format 1.7 added one varint (0 here:
  // nothing encoded by the thread itself) to the thread stats chunk.
  CHECK(out.size() == 9606);
  CHECK(fmt::crc32(out.data(), out.size()) == 0xD8EC3F84u);
  CHECK(host.outputs_full == 0);
}

TEST_CASE("a thread that encodes its own records and the flusher write one stream, in order") {
  fixture f;
  // The flusher meets the span first: it defines the site and caches it in the ring.
  f.add(site_record(work, 1000, 1100));
  f.end_ring();
  // Then the ring's own thread (EDGETRACE_ON_FULL=wait under overload):
  // 100,000 spans (five chunks' worth, four buffers), an instant the flusher
  // never saw, and more spans.
  std::vector<dt::record> records;
  std::uint64_t t = 2000;
  for (int i = 0; i < 100000; ++i, t += 40) records.push_back(site_record(work, t, t + 25 + i % 5));
  const std::size_t instant_at = records.size();
  records.push_back(site_record(tick, t, 0));
  for (int i = 0; i < 100; ++i, t += 40) records.push_back(site_record(work, t + 10, t + 30));
  std::uint64_t encoded = 0;
  bool handed = false;
  const dt::record* stopped = [&]() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    return f.enc.encode_alone(records.data(), records.data() + records.size(), f.ring.thread_id, encoded, handed);
  }();
  // Every buffer handed over, the flusher has taken none: it stops before
  // the instant, with records left that need no definition.
  CHECK(handed);
  const auto stop_index = static_cast<std::size_t>(stopped - records.data());
  CHECK(stop_index < instant_at);
  CHECK(stop_index > 80000);  // four full chunks of ~3-byte spans
  CHECK(encoded == stop_index);
  [&]() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { CHECK_FALSE(f.enc.can_start()); }();
  // The flusher takes them and goes on: the rest, the instant's definition and
  // the chunk the thread left open (none here) in one drain.
  f.ring.written.store(f.ring.written.load(std::memory_order_relaxed) + encoded, std::memory_order_relaxed);
  f.begin_ring();
  [&]() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    f.encoder.add_run(f.ring, f.enc, stopped, records.data() + records.size());
  }();
  // The thread goes on alone once more (the instant is cached now), into a
  // chunk it leaves open for the flusher's next drain to seal.
  f.end_ring();
  std::vector<dt::record> more;
  for (int i = 0; i < 10; ++i, t += 40) more.push_back(site_record(i % 2 ? tick : work, t + 10, i % 2 ? 0 : t + 30));
  std::uint64_t encoded_more = 0;
  bool handed_more = false;
  [&]() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
    CHECK(f.enc.encode_alone(more.data(), more.data() + more.size(), f.ring.thread_id, encoded_more, handed_more) ==
          more.data() + more.size());
  }();
  CHECK(encoded_more == more.size());
  CHECK_FALSE(handed_more);
  f.ring.written.store(f.ring.written.load(std::memory_order_relaxed) + encoded_more, std::memory_order_relaxed);
  f.begin_ring();
  read_back back(f.finish());
  REQUIRE(back.ok);
  CHECK_FALSE(back.reader.damaged());
  const std::size_t total = 1 + records.size() + more.size();
  REQUIRE(back.events.size() == total);
  const rd::thread_info& thread = back.writer().threads.begin()->second;
  CHECK(thread.stats_written == total);
  // Every event as it was recorded, in order.
  CHECK(back.events[0].end_tick == 1100);
  bool same = true;
  for (std::size_t i = 0; i < records.size() + more.size() && same; ++i) {
    const dt::record& r = i < records.size() ? records[i] : more[i - records.size()];
    const rd::event& e = back.events[i + 1];
    const bool span = dt::site_of(r.word) == &sites[work];
    same = e.begin_tick == r.t_begin && (!span || e.end_tick == r.t_end) &&
           e.site->name == (span ? "work" : "tick");
    if (!same) MESSAGE("event " << i + 1 << " differs");
  }
  CHECK(same);
}

TEST_CASE("two events chunks of a thread never repeat each other's bytes, though a coarse counter repeats ticks") {
  // A reader skips an events chunk identical to the thread's previous one as
  // a duplicated write. With a 16 ns counter (aarch64 under qemu) the same
  // spans of no length can follow at the same tick, one drain after another.
  fixture f;
  for (int drain = 0; drain < 4; ++drain) {
    f.add(site_record(work, 5000, 5000));
    f.add(site_record(work, 5000, 5000));
    f.end_ring();
    f.begin_ring();
  }
  read_back back(f.finish());
  REQUIRE(back.ok);
  for (const auto& d : back.reader.diagnostics()) MESSAGE(d.message);
  CHECK(back.reader.diagnostics().empty());
  CHECK(back.events.size() == 8);
  const rd::thread_info& t = back.writer().threads.begin()->second;
  CHECK(t.stats_written == 8);
  CHECK(t.spans == 8);
}

}  // namespace encoder_test
