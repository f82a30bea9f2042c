// SPDX-License-Identifier: MIT
// Tests of reading a flight recorder's snapshot (chunk 11, decode/snapshot.hpp): info's lines, loss accounting, summary and json, damaged chunks.
#include <doctest/doctest.h>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/sinks/info.hpp>
#include <edgetrace/sinks/output.hpp>

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/json_lite.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>

namespace snapshot_reader_test {

using namespace edgetrace_test;
namespace fmt = edgetrace::format;
namespace et = edgetrace::reader;

namespace {

using edgetrace_test::contains;

/// The line of `text` that starts (after spaces) with `label`; "" if none.
std::string line_of(const std::string& text, const std::string& label) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const std::size_t start = line.find_first_not_of(' ');
    if (start != std::string::npos && line.compare(start, label.size(), label) == 0) return line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return {};
}

/// A chunk 11 payload, sealed as a whole chunk of `writer`.
bytes snapshot_chunk(std::uint32_t writer, const fmt::snapshot_info& info, const std::string& reason) {
  bytes chunk(fmt::chunk_header_size + fmt::snapshot_payload_max + fmt::chunk_trailer_size);
  unsigned char* payload = chunk.data() + fmt::chunk_header_size;
  const unsigned char* end = fmt::put_snapshot_payload(payload, info, reason.data(), reason.size());
  const auto size = static_cast<std::uint32_t>(end - payload);
  chunk.resize(fmt::seal_chunk(chunk.data(), fmt::chunk_type::snapshot, writer, size));
  return chunk;
}

/// A snapshot of the sample dump's ticks (sample_dump: 2000 to 3200).
fmt::snapshot_info sample_snapshot(std::uint64_t sequence, fmt::snapshot_trigger trigger, std::uint64_t trigger_tick) {
  fmt::snapshot_info info;
  info.sequence = sequence;
  info.trigger = trigger;
  info.window_first_tick = 2000;
  info.window_last_tick = 3200;
  info.trigger_tick = trigger_tick;
  return info;
}

/// The sample dump with `chunk` right after its process chunk.
bytes sample_with(const bytes& chunk) {
  dump_builder d = sample_dump();
  bytes b = d.build();
  b.insert(b.begin() + static_cast<std::ptrdiff_t>(d.offset_of(1)), chunk.begin(), chunk.end());
  return b;
}

/// A real dump rebuilt chunk by chunk: `extra` (when not empty) right after
/// the process chunk, and the first `drop_events` events chunks left out,
/// as a flight recorder's ring would have overwritten them.
bytes rebuild(const std::string& source, const bytes& extra, std::size_t drop_events, std::uint32_t* writer = nullptr) {
  et::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, source), r.error());
  const std::string original = read_file(source);
  bytes out(original.begin(), original.begin() + fmt::file_header_size);
  std::size_t dropped = 0;
  REQUIRE(r.for_each_chunk([&](const et::dump_reader::raw_chunk& c) {
    if (c.type == fmt::chunk_type::events && dropped < drop_events) {
      ++dropped;
      return;
    }
    out.insert(out.end(), c.bytes, c.bytes + c.size);
    if (c.type == fmt::chunk_type::process) {
      out.insert(out.end(), extra.begin(), extra.end());
      if (writer != nullptr) *writer = c.writer;
    }
  }));
  REQUIRE(dropped == drop_events);
  return out;
}

/// A finished traced run of trace_app's "paced" mode (many events chunks).
std::string paced_dump(const std::string& name, double seconds) {
  const std::string path = fresh_file(temp_path(name));
  const process_result p = run({edgetrace_test::app, "paced", std::to_string(seconds), "200"},
                               {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_FLUSH_MS=10"});
  REQUIRE(p.exit_code == 0);
  return path;
}

std::string write_dump(const std::string& name, const bytes& b) {
  const std::string path = fresh_file(temp_path(name));
  REQUIRE(write_file(path, b));
  return path;
}

/// Spans of a dump, counted by the reader's events pass.
std::uint64_t span_count(const std::string& path) {
  const loaded_dump d = load_dump(path);
  REQUIRE(d.error.empty());
  std::uint64_t n = 0;
  for (const auto& e : d.events) n += e.kind == et::event_kind::span;
  return n;
}

}  // namespace

TEST_CASE("a snapshot-like dump of a real run: info shows the snapshot and reports no loss") {
  const std::string source = paced_dump("snapshot_source.etr", 0.6);
  // Where the window lies: the ticks of the events left after the drop.
  std::uint32_t writer = 0;
  const std::string windowed = write_dump("snapshot_windowed.etr", rebuild(source, {}, 3, &writer));
  et::dump_reader plain;
  REQUIRE_MESSAGE(edgetrace_test::opened(plain, windowed), plain.error());
  REQUIRE(plain.writers().size() == 1);
  const et::writer_info& pw = plain.writers().begin()->second;
  REQUIRE(pw.has_events);
  REQUIRE(pw.max_tick > pw.min_tick);

  fmt::snapshot_info info;
  info.sequence = 3;
  info.trigger = fmt::snapshot_trigger::latency;
  info.window_first_tick = pw.min_tick;
  info.window_last_tick = pw.max_tick;
  info.trigger_tick = pw.min_tick + (pw.max_tick - pw.min_tick) * 3 / 4;
  info.skipped = 2;
  info.after_ms = 100;
  info.ring_bytes = 16u << 20;
  info.chunks_overwritten = 3;
  const std::string reason = "paced_outer>1ms: paced_outer took 31.2 ms";
  const std::string path = write_dump("snapshot_good.etr", rebuild(source, snapshot_chunk(writer, info, reason), 3));

  SUBCASE("the reader's model") {
    et::dump_reader r;
    REQUIRE_MESSAGE(edgetrace_test::opened(r, path), r.error());
    REQUIRE(r.snapshot() != nullptr);
    const et::snapshot_record& s = *r.snapshot();
    CHECK(s.info.sequence == 3);
    CHECK(s.info.trigger == fmt::snapshot_trigger::latency);
    CHECK(s.reason == reason);
    CHECK(s.info.trigger_tick == info.trigger_tick);
    CHECK(s.info.window_first_tick == info.window_first_tick);
    CHECK(s.info.window_last_tick == info.window_last_tick);
    CHECK(s.info.skipped == 2);
    CHECK(s.info.ring_bytes == info.ring_bytes);
    CHECK(s.info.chunks_overwritten == 3);
    CHECK(s.window_first_ns == pw.clock.to_ns(pw.min_tick));
    CHECK(s.window_last_ns == pw.clock.to_ns(pw.max_tick));
    CHECK(!r.damaged());
    std::uint64_t undecoded = 0;
    REQUIRE(r.read_events([](const et::event&) {}));
    for (const et::thread_info* t : r.threads_in_order()) {
      undecoded += t->undecoded();
      CHECK(t->missing() == 0);
    }
    CHECK(undecoded > 0);  // the dropped chunks' records: before the window
    // The unmodified run has nothing undecoded, and an ordinary dump with
    // chunks gone still reports them missing.
    et::dump_reader cut;
    REQUIRE(cut.open(windowed));
    REQUIRE(cut.read_events([](const et::event&) {}));
    std::uint64_t missing = 0;
    for (const et::thread_info* t : cut.threads_in_order()) missing += t->missing();
    CHECK(missing == undecoded);
  }

  SUBCASE("edgetrace info") {
    const process_result p = run({EDGETRACE_TEST_CLI, "info", path});
    INFO(p.out << p.err);
    CHECK(p.exit_code == 0);
    CHECK(line_of(p.out, "status").find("complete") != std::string::npos);
    CHECK(contains(line_of(p.out, "snapshot"), "#3, trigger latency"));
    CHECK(contains(line_of(p.out, "reason"), "\"" + reason + "\""));
    CHECK(contains(line_of(p.out, "skipped"), "2 snapshot(s)"));
    CHECK(contains(line_of(p.out, "flight ring"), std::to_string(info.ring_bytes) + " bytes, 3 chunk(s) overwritten"));
    CHECK(contains(line_of(p.out, "flight ring"), "100 ms recorded after the trigger"));
    CHECK(contains(line_of(p.out, "window"), "the run's records before it were not kept (not lost)"));
    // A window that holds the whole run so far (nothing overwritten) says so.
    fmt::snapshot_info whole = info;
    whole.chunks_overwritten = 0;
    const std::string whole_path =
        write_dump("snapshot_whole.etr", rebuild(source, snapshot_chunk(writer, whole, reason), 3));
    const process_result w = run({EDGETRACE_TEST_CLI, "info", whole_path});
    CHECK(contains(line_of(w.out, "window"), "the whole run so far: nothing was overwritten"));
    CHECK_FALSE(contains(w.out, "were not kept"));
    // The trigger's time: from the window start, and on the wall clock
    // (this run happened a moment ago).
    const std::int64_t into = pw.clock.to_ns(info.trigger_tick) - pw.clock.to_ns(info.window_first_tick);
    const std::string trigger = line_of(p.out, "trigger time");
    CHECK(contains(trigger, "+" + et::detail::format_duration(static_cast<std::uint64_t>(into)) +
                                " from the window start"));
    const std::size_t utc = trigger.find(" UTC");
    REQUIRE(utc != std::string::npos);
    REQUIRE(utc >= 26);
    std::tm tm{};
    REQUIRE(::strptime(trigger.substr(utc - 26, 19).c_str(), "%Y-%m-%d %H:%M:%S", &tm) != nullptr);
    const double age = std::difftime(std::time(nullptr), ::timegm(&tm));
    CHECK(age >= -5);
    CHECK(age <= 300);
    const std::string window = line_of(p.out, "window");
    CHECK(contains(window, "UTC to "));
    const auto length = static_cast<std::uint64_t>(pw.clock.to_ns(pw.max_tick) - pw.clock.to_ns(pw.min_tick));
    CHECK(contains(window, "(" + et::detail::format_duration(length) + ")"));
    CHECK(contains(window, "not kept (not lost)"));
    // No loss: the check column says where the records went.
    CHECK(!contains(p.out, "missing"));
    CHECK(contains(p.out, "before the snapshot's window"));
    CHECK(contains(line_of(p.out, "contents"), "snapshot"));
  }

  SUBCASE("summary and json work on it, without a loss warning") {
    const process_result s = run({EDGETRACE_TEST_CLI, "summary", path, "--format", "json"});
    INFO(s.out << s.err);
    CHECK(s.exit_code == 0);
    json_lite::value doc;
    std::string error;
    REQUIRE(json_lite::parse(s.out, doc, error));
    std::uint64_t calls = 0;
    for (const auto& row : doc["rows"].items) calls += static_cast<std::uint64_t>(row["calls"].number);
    CHECK(calls == span_count(path));
    CHECK(calls < span_count(source));
    CHECK(contains(s.out, "flight-recorder snapshot (#3, latency: " + reason));
    CHECK(contains(s.out, "not lost"));
    CHECK(!contains(s.out, "dropped by the tracer"));

    const std::string json = fresh_file(temp_path("snapshot_good.json"));
    const process_result j = run({EDGETRACE_TEST_CLI, "json", path, "-o", json});
    INFO(j.err);
    CHECK(j.exit_code == 0);
    CHECK(contains(j.err, "note: " + path + ": a flight-recorder snapshot"));
    CHECK(!contains(j.err, "warning"));
    json_lite::value trace;
    REQUIRE(json_lite::parse(read_file(json), trace, error));
    std::uint64_t spans = 0;
    for (const auto& e : trace["traceEvents"].items) spans += e["ph"].str() == "X";
    CHECK(spans == span_count(path));
    CHECK(contains(trace["otherData"]["snapshot"].str(), "a flight-recorder snapshot (#3, latency: " + reason));
  }
}

TEST_CASE("a snapshot whose writer dropped records still reports the drops") {
  // sample_dump's thread 2 dropped 5 records (a loss record and its stats).
  const fmt::snapshot_info info = sample_snapshot(1, fmt::snapshot_trigger::call, 3000);
  const std::string path = write_dump("snapshot_drops.etr", sample_with(snapshot_chunk(0xA1B2C3D4u, info, "operator asked")));
  const process_result p = run({EDGETRACE_TEST_CLI, "summary", path});
  INFO(p.out << p.err);
  CHECK(p.exit_code == 0);
  CHECK(contains(p.out, "5 records were dropped by the tracer"));
  CHECK(contains(p.out, "flight-recorder snapshot (#1, call: operator asked)"));
  CHECK(contains(p.out, "UTC"));  // the window on the wall clock (its calibration has real times)
  const process_result i = run({EDGETRACE_TEST_CLI, "info", path});
  CHECK(contains(line_of(i.out, "totals"), "5 dropped"));
}

TEST_CASE("a damaged snapshot chunk is reported, never a crash") {
  const fmt::snapshot_info info = sample_snapshot(2, fmt::snapshot_trigger::signal, 2500);
  const std::uint32_t writer = 0xA1B2C3D4u;
  auto payload_chunk = [&](const bytes& payload) {
    dump_builder d;
    d.chunk(static_cast<std::uint8_t>(fmt::chunk_type::snapshot), writer, payload);
    const bytes whole = d.build();
    return bytes(whole.begin() + fmt::file_header_size, whole.end());
  };
  const bytes good = snapshot_chunk(writer, info, "SIGUSR2");
  const bytes good_payload(good.begin() + fmt::chunk_header_size, good.end() - fmt::chunk_trailer_size);

  struct damaged_case {
    const char* name;
    bytes chunk;
    const char* expect;  ///< in info's output
  };
  std::vector<damaged_case> cases;
  cases.push_back({"cut short", payload_chunk(bytes(good_payload.begin(), good_payload.begin() + 4)),
                   "malformed snapshot chunk"});
  cases.push_back({"empty", payload_chunk({}), "malformed snapshot chunk"});
  {
    bytes huge = good_payload;
    huge[2] = 0xFF;  // the reason's length: past the payload
    huge[3] = 0x7F;
    cases.push_back({"reason longer than the chunk", payload_chunk(huge), "malformed snapshot chunk"});
  }
  {
    fmt::snapshot_info reversed = info;
    reversed.window_first_tick = 3200;
    reversed.window_last_tick = 2000;
    cases.push_back({"window ends before it starts", snapshot_chunk(writer, reversed, "x"), "malformed snapshot chunk"});
  }
  {
    bytes flipped = good;
    flip_bit(flipped, fmt::chunk_header_size + 3);
    cases.push_back({"bad CRC", flipped, "corrupt data"});
  }
  for (const damaged_case& c : cases) {
    CAPTURE(c.name);
    const std::string path = write_dump("snapshot_damaged.etr", sample_with(c.chunk));
    const process_result p = run({EDGETRACE_TEST_CLI, "info", path});
    INFO(p.out << p.err);
    CHECK(p.exit_code == 3);
    CHECK(contains(p.out, c.expect));
    CHECK(line_of(p.out, "snapshot").empty());
    const process_result s = run({EDGETRACE_TEST_CLI, "summary", path});
    CHECK(s.exit_code == 3);
    CHECK(contains(s.out, "conv1"));  // the rest of the dump still reads
  }

  SUBCASE("a trigger value of a later minor is named by its number") {
    bytes later = good_payload;
    later[1] = 9;  // the trigger byte (after a one-byte sequence)
    const std::string path = write_dump("snapshot_later.etr", sample_with(payload_chunk(later)));
    const process_result p = run({EDGETRACE_TEST_CLI, "info", path});
    CHECK(p.exit_code == 0);
    CHECK(contains(line_of(p.out, "snapshot"), "#2, trigger trigger 9"));
    CHECK(contains(line_of(p.out, "reason"), "\"SIGUSR2\""));
  }
}

}  // namespace snapshot_reader_test
