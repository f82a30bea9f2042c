// SPDX-License-Identifier: MIT
// `edgetrace perfetto`: real traced runs converted to Perfetto protobuf and decoded back, with a decoder of our own, to exactly the dump's slices, instants, counters and flows.
#include <edgetrace/sinks/perfetto/writer.hpp>

#include <doctest/doctest.h>

#if EDGETRACE_TEST_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <support/analysis_workload.hpp>
#include <support/dump_builder.hpp>
#include <support/files.hpp>
#include <support/process.hpp>
#include <support/test_env.hpp>

namespace perfetto_test {

using namespace edgetrace_test;
namespace et = edgetrace::reader;

namespace {

// ------------------------------------------------ a minimal protobuf reader

/// Bounds-checked reader of protobuf wire format; `ok` turns false on any
/// malformed input (the test then fails instead of reading garbage).
struct wire {
  const unsigned char* p;
  const unsigned char* end;
  bool ok = true;

  bool more() const { return ok && p < end; }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p >= end) break;
      const unsigned char b = *p++;
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  std::uint64_t fixed64() {
    if (end - p < 8) return ok = false, 0;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    p += 8;
    return v;
  }
  wire sub() {
    const std::uint64_t n = varint();
    if (!ok || n > static_cast<std::uint64_t>(end - p)) return ok = false, wire{p, p, false};
    wire w{p, p + n};
    p += n;
    return w;
  }
  std::string text() {
    wire w = sub();
    return std::string(reinterpret_cast<const char*>(w.p), static_cast<std::size_t>(w.end - w.p));
  }
  void skip(std::uint32_t type) {
    if (type == 0) varint();
    else if (type == 1) fixed64();
    else if (type == 2) sub();
    else if (type == 5 && end - p >= 4) p += 4;
    else ok = false;
  }
};

struct decoded_event {
  std::uint64_t ts = 0, track = 0, type = 0, name_iid = 0;
  std::string name, category;  // resolved on the event's sequence
  std::vector<std::uint64_t> categories, flows, terminating;
  std::map<std::string, std::string> args;
  double value = 0;
};

struct decoded_track {
  std::int64_t pid = -1, tid = -1;
  std::string name;
  bool counter = false;
};

/// A packet sequence's incremental state: interned names and categories,
/// the defaults (track, timestamp clock) and the incremental clock.
struct decoded_sequence {
  bool cleared = false;  // its first packet cleared the incremental state
  std::map<std::uint64_t, std::string> names, categories;
  std::uint64_t default_track = 0, clock_id = 0;
  bool incremental = false;  // clock 64 defined by a snapshot, is_incremental
  std::uint64_t last_ts = 0;
};

/// What a viewer would rebuild from a .pftrace, the way trace_processor
/// does: each sequence's interning, defaults and incremental clock applied,
/// events sorted by timestamp (file order on ties), an end closes the
/// innermost open slice of its track, flows link in processing order.
struct decoded_trace {
  bool ok = true;
  std::string error;
  std::size_t packets = 0;
  bool flags_ok = true;
  std::map<std::uint64_t, decoded_track> tracks;
  std::map<std::uint64_t, decoded_sequence> sequences;
  std::size_t clears = 0;  // packets that cleared their sequence's incremental state (a segment each)
  std::size_t compressed_packets = 0, largest_compressed_packet = 0;  // TracePackets holding compressed_packets
  std::vector<decoded_event> events;

  struct slice {
    std::string name, category;
    std::uint64_t track;
    std::int64_t begin, end;
    std::map<std::string, std::string> args;
    std::size_t depth;
  };
  std::vector<slice> slices;
  std::vector<std::tuple<std::string, std::uint64_t, std::int64_t>> instants;  // name, track, ts
  std::vector<std::tuple<std::string, std::int64_t, double>> counters;         // track name, ts, value
  std::vector<std::pair<std::size_t, std::size_t>> arrows;                     // slice index pairs
  std::size_t unmatched_ends = 0, open_slices = 0;
};

decoded_event decode_track_event(wire w, decoded_trace& t) {
  decoded_event e;
  while (w.more()) {
    const std::uint64_t key = w.varint();
    const auto field = static_cast<std::uint32_t>(key >> 3), type = static_cast<std::uint32_t>(key & 7);
    if (field == 9 && type == 0) e.type = w.varint();
    else if (field == 11 && type == 0) e.track = w.varint();
    else if (field == 10 && type == 0) e.name_iid = w.varint();
    else if (field == 3 && type == 0) e.categories.push_back(w.varint());
    else if (field == 47 && type == 1) e.flows.push_back(w.fixed64());
    else if (field == 48 && type == 1) e.terminating.push_back(w.fixed64());
    else if (field == 30 && type == 0) e.value = static_cast<double>(static_cast<std::int64_t>(w.varint()));
    else if (field == 44 && type == 1) {
      const std::uint64_t bits = w.fixed64();
      std::memcpy(&e.value, &bits, sizeof bits);
    } else if (field == 4 && type == 2) {
      wire a = w.sub();
      std::string name, value;
      while (a.more()) {
        const std::uint64_t k = a.varint();
        if ((k >> 3) == 10) name = a.text();
        else if ((k >> 3) == 6) value = a.text();
        else if ((k >> 3) == 4) value = std::to_string(static_cast<std::int64_t>(a.varint()));
        else if ((k >> 3) == 2 && (k & 7) == 0) value = a.varint() ? "true" : "false";
        else if ((k >> 3) == 5 && (k & 7) == 1) {
          const std::uint64_t bits = a.fixed64();
          double real = 0;
          std::memcpy(&real, &bits, sizeof bits);
          value = et::real_text(real);
        }
        else a.skip(static_cast<std::uint32_t>(k & 7));
      }
      e.args[name] = value;
      t.ok = t.ok && a.ok;
    } else {
      w.skip(type);
    }
  }
  t.ok = t.ok && w.ok;
  return e;
}

void decode_interned(wire w, decoded_sequence& t) {
  while (w.more()) {
    const std::uint64_t key = w.varint();
    if ((key & 7) != 2) {
      w.skip(static_cast<std::uint32_t>(key & 7));
      continue;
    }
    wire entry = w.sub();
    std::uint64_t iid = 0;
    std::string name;
    while (entry.more()) {
      const std::uint64_t k = entry.varint();
      if ((k >> 3) == 1) iid = entry.varint();
      else if ((k >> 3) == 2) name = entry.text();
      else entry.skip(static_cast<std::uint32_t>(k & 7));
    }
    if ((key >> 3) == 1) t.categories[iid] = name;
    if ((key >> 3) == 2) t.names[iid] = name;
  }
}

void decode_descriptor(wire w, decoded_trace& t) {
  decoded_track track;
  std::uint64_t uuid = 0;
  while (w.more()) {
    const std::uint64_t key = w.varint();
    const auto field = static_cast<std::uint32_t>(key >> 3);
    if (field == 1) uuid = w.varint();
    else if (field == 2) track.name = w.text();
    else if (field == 8) track.counter = true, w.sub();
    else if (field == 3 || field == 4) {
      wire d = w.sub();
      while (d.more()) {
        const std::uint64_t k = d.varint();
        if ((k >> 3) == 1) track.pid = static_cast<std::int64_t>(d.varint());
        else if (field == 4 && (k >> 3) == 2) track.tid = static_cast<std::int64_t>(d.varint());
        else if ((k >> 3) == 5 || (k >> 3) == 6) track.name = d.text();
        else d.skip(static_cast<std::uint32_t>(k & 7));
      }
    } else {
      w.skip(static_cast<std::uint32_t>(key & 7));
    }
  }
  t.tracks[uuid] = track;
}

#if EDGETRACE_TEST_ZLIB
/// zlib inflate of a whole stream; false when it is not one.
bool inflate_all(const unsigned char* data, std::size_t size, std::string& out) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return false;
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  char buffer[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END && z.avail_in == 0;
}
#endif

/// The trace with each TracePacket that holds compressed_packets (field 50)
/// replaced by the packets it expands to, as trace_processor reads it.
std::string expand_compressed(const std::string& bytes, decoded_trace& t) {
  std::string out;
  wire trace{reinterpret_cast<const unsigned char*>(bytes.data()),
             reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size()};
  while (trace.more()) {
    const unsigned char* start = trace.p;
    if (trace.varint() != ((1 << 3) | 2)) break;  // decode_perfetto reports it
    wire packet = trace.sub();
    bool compressed = false;
    for (wire scan = packet; scan.more();) {
      const std::uint64_t key = scan.varint();
      if (key != ((50 << 3) | 2)) {
        scan.skip(static_cast<std::uint32_t>(key & 7));
        continue;
      }
      compressed = true;
      const wire data = scan.sub();
      ++t.compressed_packets;
      t.largest_compressed_packet = std::max(t.largest_compressed_packet, static_cast<std::size_t>(trace.p - start));
#if EDGETRACE_TEST_ZLIB
      if (!inflate_all(data.p, static_cast<std::size_t>(data.end - data.p), out))
        t.ok = false, t.error = "compressed_packets that do not inflate";
#else
      static_cast<void>(data);
      t.ok = false, t.error = "compressed_packets, and this test has no zlib";
#endif
    }
    if (!compressed) out.append(reinterpret_cast<const char*>(start), static_cast<std::size_t>(trace.p - start));
  }
  if (trace.more()) out.append(reinterpret_cast<const char*>(trace.p), static_cast<std::size_t>(trace.end - trace.p));
  return out;
}

decoded_trace decode_perfetto(const std::string& file_bytes) {
  decoded_trace t;
  const std::string bytes = expand_compressed(file_bytes, t);
  wire trace{reinterpret_cast<const unsigned char*>(bytes.data()),
             reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size()};
  while (trace.more()) {
    if (trace.varint() != ((1 << 3) | 2)) {
      t.ok = false;
      t.error = "a Trace field other than packet";
      break;
    }
    wire packet = trace.sub();
    // The sequence id and flags first: they say which state the rest uses.
    std::uint64_t sequence = 0, flags = 0;
    for (wire scan = packet; scan.more();) {
      const std::uint64_t key = scan.varint();
      if ((key >> 3) == 10) sequence = scan.varint();
      else if ((key >> 3) == 13) flags = scan.varint();
      else scan.skip(static_cast<std::uint32_t>(key & 7));
    }
    decoded_sequence& seq = t.sequences[sequence];
    if (flags & 1u) seq = decoded_sequence{}, seq.cleared = true, ++t.clears;
    // Sequence 1 marks every packet as needing its state; a thread's
    // sequence clears its state in its first packet only.
    t.flags_ok = t.flags_ok && sequence != 0 && seq.cleared && (sequence == 1 ? flags == 1u || flags == 2u : flags <= 1u);
    std::uint64_t ts = 0;
    bool has_ts = false, has_event = false;
    decoded_event e;
    while (packet.more()) {
      const std::uint64_t key = packet.varint();
      const auto field = static_cast<std::uint32_t>(key >> 3);
      if (field == 8) ts = packet.varint(), has_ts = true;
      else if (field == 12) decode_interned(packet.sub(), seq);
      else if (field == 60) decode_descriptor(packet.sub(), t);
      else if (field == 11) e = decode_track_event(packet.sub(), t), has_event = true;
      else if (field == 59) {  // TracePacketDefaults
        wire d = packet.sub();
        while (d.more()) {
          const std::uint64_t k = d.varint();
          if ((k >> 3) == 58) seq.clock_id = d.varint();
          else if ((k >> 3) == 11) {
            wire te = d.sub();
            while (te.more()) {
              const std::uint64_t k2 = te.varint();
              if ((k2 >> 3) == 11) seq.default_track = te.varint();
              else te.skip(static_cast<std::uint32_t>(k2 & 7));
            }
          } else d.skip(static_cast<std::uint32_t>(k & 7));
        }
      } else if (field == 6) {  // ClockSnapshot: clock 64 = BOOTTIME here
        wire snapshot = packet.sub();
        std::map<std::uint64_t, std::uint64_t> clocks;
        bool incremental = false;
        while (snapshot.more()) {
          const std::uint64_t k = snapshot.varint();
          if ((k >> 3) != 1) {
            snapshot.skip(static_cast<std::uint32_t>(k & 7));
            continue;
          }
          wire c = snapshot.sub();
          std::uint64_t id = 0, value = 0;
          bool is_incremental = false;
          while (c.more()) {
            const std::uint64_t k2 = c.varint();
            if ((k2 >> 3) == 1) id = c.varint();
            else if ((k2 >> 3) == 2) value = c.varint();
            else if ((k2 >> 3) == 3) is_incremental = c.varint() != 0;
            else c.skip(static_cast<std::uint32_t>(k2 & 7));
          }
          clocks[id] = value;
          if (id == 64) incremental = is_incremental;
        }
        // Only the form written here is understood: the same time on both.
        if (clocks.size() != 2 || clocks.count(6) == 0 || clocks.count(64) == 0 || clocks[6] != clocks[64] ||
            !incremental)
          t.ok = false, t.error = "a clock snapshot of another form";
        seq.incremental = true;
        seq.last_ts = clocks[64];
      } else packet.skip(static_cast<std::uint32_t>(key & 7));
    }
    t.ok = t.ok && packet.ok;
    ++t.packets;
    if (has_event) {
      if (seq.clock_id == 64) {
        if (!seq.incremental) t.ok = false, t.error = "an incremental timestamp before its clock snapshot";
        ts = seq.last_ts += ts;
      } else if (seq.clock_id != 0) {
        t.ok = false, t.error = "an unknown timestamp clock";
      }
      if (!has_ts) t.ok = false, t.error = "an event without a timestamp";
      e.ts = ts;
      if (e.track == 0) e.track = seq.default_track;
      if (e.name_iid != 0) {
        const auto n = seq.names.find(e.name_iid);
        if (n == seq.names.end()) t.ok = false, t.error = "a name iid not interned on its sequence";
        else e.name = n->second;
      }
      if (!e.categories.empty()) {
        const auto c = seq.categories.find(e.categories[0]);
        if (c == seq.categories.end()) t.ok = false, t.error = "a category iid not interned on its sequence";
        else e.category = c->second;
      }
      t.events.push_back(e);
    }
  }
  t.ok = t.ok && trace.ok;
  // Rebuild as trace_processor does.
  std::stable_sort(t.events.begin(), t.events.end(),
                   [](const decoded_event& a, const decoded_event& b) { return a.ts < b.ts; });
  std::map<std::uint64_t, std::vector<std::size_t>> open;  // track -> open slice indices
  std::map<std::uint64_t, std::size_t> flow_from;          // flow id -> slice it leaves
  for (const decoded_event& e : t.events) {
    const auto ts = static_cast<std::int64_t>(e.ts);
    const std::string& name = e.name;
    if (e.type == 1) {
      auto& stack = open[e.track];
      t.slices.push_back({name, e.category, e.track, ts, -1, e.args, stack.size()});
      stack.push_back(t.slices.size() - 1);
      for (std::uint64_t id : e.flows) {
        const auto from = flow_from.find(id);
        if (from != flow_from.end()) t.arrows.emplace_back(from->second, t.slices.size() - 1);
        flow_from[id] = t.slices.size() - 1;
      }
      for (std::uint64_t id : e.terminating) {
        const auto from = flow_from.find(id);
        if (from != flow_from.end()) t.arrows.emplace_back(from->second, t.slices.size() - 1), flow_from.erase(from);
      }
    } else if (e.type == 2) {
      auto& stack = open[e.track];
      if (stack.empty()) ++t.unmatched_ends;
      else t.slices[stack.back()].end = ts, stack.pop_back();
    } else if (e.type == 3) {
      t.instants.emplace_back(name, e.track, ts);
    } else if (e.type == 4) {
      t.counters.emplace_back(t.tracks[e.track].name, ts, e.value);
    }
  }
  for (const auto& o : open) t.open_slices += o.second.size();
  return t;
}

// ------------------------------------------------ the traced workload

EDGETRACE_CATEGORY(pf);

/// Nested spans with arguments, instants, a counter, and a flow from the
/// main thread to a worker thread (each step in its own category).
void perfetto_workload(int items) {
  EDGETRACE_THREAD_NAME("main");
  std::atomic<int> produced{0};
  std::thread worker([&] {
    EDGETRACE_THREAD_NAME("worker");
    for (int i = 0; i < items; ++i) {
      while (produced.load() <= i) std::this_thread::yield();
      EDGETRACE_SCOPE(aux, "consume");
      EDGETRACE_FLOW(aux, "request", static_cast<std::uint64_t>(i));
      spin_us(15);
      {
        EDGETRACE_SCOPE(aux, "finish");
        EDGETRACE_INSTANT(aux, "done");
        spin_us(5);
      }
    }
  });
  for (int i = 0; i < items; ++i) {
    EDGETRACE_SCOPE(work, "request");
    // A coarse counter (aarch64) must not put "index" in the tick where the
    // previous request ended or "decode" begins: by time alone it would
    // belong to either (docs/FORMAT.md, annotations).
    spin_us(2);
    EDGETRACE_ARG(work, "index", i);
    EDGETRACE_COUNTER(pf, "queue_depth", i % 4);
    spin_us(2);
    static char frame[256];
    EDGETRACE_ALLOC(pf, frame, 64 * (1 + i % 3), "frames");
    {
      EDGETRACE_SCOPE(work, "decode");
      EDGETRACE_FLOW(work, "request", static_cast<std::uint64_t>(i));
      EDGETRACE_ARG(work, "batch", 4 + i % 3);
      EDGETRACE_ARG(work, "scale", 0.25 * i - 1.5);
      EDGETRACE_ARG(work, "keyframe", i % 4 == 0);
      spin_us(10);
      EDGETRACE_INSTANT(work, "decoded");
    }
    {
      EDGETRACE_SCOPE(work, "infer");
      for (int k = 0; k < 2; ++k) {
        EDGETRACE_SCOPE(work, "layer");
        spin_us(8);
      }
    }
    EDGETRACE_FREE(pf, frame);
    produced.store(i + 1);
  }
  worker.join();
}

std::string record_perfetto_workload(const std::string& name) {
  const std::string path = scratch(name + ".etr");
  std::remove(path.c_str());
  const auto r = run({"/proc/self/exe", "--test-case=perfetto workload", "--no-intro", "--no-version"},
                     {"EDGETRACE_OUTPUT=" + path, "ETTEST_PERFETTO_WORKLOAD=1"});
  REQUIRE_MESSAGE(r.exit_code == 0, std::string(r.out + r.err));
  REQUIRE(file_exists(path));
  return path;
}

using slice_key = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>;  // name, tid, begin, end
using point_key = std::tuple<std::string, std::int64_t, std::int64_t>;               // name, tid, ts
using step_key = std::pair<std::int64_t, std::int64_t>;                              // tid, begin

/// What the dump holds, read through the reader (forward pass), in the
/// terms the decoded trace is compared in.
struct expected_trace {
  std::multiset<slice_key> slices;
  std::multiset<point_key> instants;
  std::multiset<std::tuple<std::string, std::int64_t, double>> counters;  // memory pools and the device too
  std::size_t device_values = 0;  ///< of counters, the device's (EDGETRACE_SAMPLE_MS)
  std::multiset<std::pair<step_key, step_key>> arrows;
  std::map<std::tuple<std::int64_t, std::int64_t, std::string>, std::map<std::string, std::string>> args;  // (tid, begin, name)
};

expected_trace expect_from_dump(const std::string& path) {
  expected_trace x;
  et::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, path), r.error());
  et::span_annotations notes(r, et::span_order::read_events);
  et::flow_collector flows;
  std::vector<const et::annotation*> args;
  REQUIRE(r.read_events([&](const et::event& e) {
    const auto tid = static_cast<std::int64_t>(e.thread->os_tid);
    if (e.kind == et::event_kind::span) {
      x.slices.insert(slice_key{e.site->name, tid, e.begin_ns, e.end_ns});
      notes.collect(e.thread, e.site, e.begin_ns, e.end_ns, &args, &flows);
      for (const et::annotation* a : args) x.args[{tid, e.begin_ns, e.site->name}][a->name()] = a->value_text();
    } else if (e.kind == et::event_kind::instant) {
      x.instants.insert(point_key{e.site->name, tid, e.begin_ns});
    } else if (e.kind == et::event_kind::counter) {
      x.counters.insert({e.site->name, e.begin_ns, e.value});
    }
  }));
  const et::memory_timelines memory(r);
  for (const auto& entry : memory.all())
    for (const auto& p : entry.second.points())
      x.counters.insert({"memory: " + entry.second.pools()[p.pool].name, p.ns, static_cast<double>(p.pool_live)});
  for (const et::writer_info* w : r.writers_in_order())
    for (const et::device_series& series : et::device_series_of(*w))
      for (const et::device_series::point& p : series.points) {
        x.counters.insert({series.label, p.ns, p.value});
        ++x.device_values;
      }
  CHECK(flows.for_each_flow([&](const std::vector<et::flow_collector::step>& steps) {
    for (std::size_t i = 1; i < steps.size(); ++i)
      x.arrows.insert({{static_cast<std::int64_t>(steps[i - 1].thread->os_tid), steps[i - 1].begin_ns},
                       {static_cast<std::int64_t>(steps[i].thread->os_tid), steps[i].begin_ns}});
  }));
  return x;
}

/// Decodes OUT: a well-formed trace, each sequence's state set up before
/// use, every slice closed, no stray end.
decoded_trace decode_checked(const std::string& out) {
  decoded_trace t = decode_perfetto(read_file(out));
  REQUIRE_MESSAGE(t.ok, t.error);
  CHECK(t.flags_ok);
  CHECK(t.unmatched_ends == 0);
  CHECK(t.open_slices == 0);
  return t;
}

/// Runs `edgetrace perfetto DUMP -o OUT` and decodes OUT (decode_checked).
decoded_trace convert_and_decode(const std::string& dump, const std::string& out) {
  std::remove(out.c_str());
  const auto r = run_cli({"perfetto", dump, "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return decode_checked(out);
}

/// Converts `dump` through the library with the threads' events written in
/// sequences of `segment` events, and decodes it (decode_checked).
decoded_trace convert_segmented(const std::string& dump, const std::string& out, std::size_t segment,
                                et::perfetto_result* result = nullptr) {
  et::dump_reader r;
  REQUIRE(r.open(dump));
  std::FILE* f = std::fopen(out.c_str(), "wb");
  REQUIRE(f);
  et::perfetto_options options;
  options.thread_segment_events = segment;
  const bool ok = et::write_perfetto(r, f, options, result);
  std::fclose(f);
  REQUIRE(ok);
  return decode_checked(out);
}

}  // namespace

TEST_CASE("protobuf_writer encodes as the protobuf encoding guide says") {
  et::protobuf_writer w;
  auto hex = [&w] {
    std::string out;
    char byte[4];
    for (char c : w.bytes()) std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(c)), out += byte;
    return out;
  };
  w.add_varint(1, 150);  // the guide's first example
  CHECK(hex() == "089601");
  w.clear();
  w.add_string(2, "testing");
  CHECK(hex() == "120774657374696e67");
  w.clear();
  w.begin_message(3);  // a nested message: its length before its bytes
  w.add_varint(1, 150);
  w.end_message();
  CHECK(hex() == "1a03089601");
  CHECK(w.depth() == 0);
  w.clear();
  w.add_int(1, -2);  // int64: ten bytes of two's complement
  CHECK(hex() == "08feffffffffffffffff01");
  w.clear();
  w.add_fixed64(47, 1);  // a field number past 15: a two-byte key
  CHECK(hex() == "f9020100000000000000");
  w.clear();
  w.add_double(1, 1.0);
  CHECK(hex() == "09000000000000f03f");
}

// Runs only in the child started by record_perfetto_workload.
TEST_CASE("perfetto workload" * doctest::skip(std::getenv("ETTEST_PERFETTO_WORKLOAD") == nullptr)) {
  perfetto_workload(40);
}

TEST_CASE("perfetto: a real run decodes to exactly the dump's slices, instants, counters and flows") {
  const std::string dump = record_perfetto_workload("perfetto_run");
  const std::string out = scratch("perfetto_run.pftrace");
  const decoded_trace t = convert_and_decode(dump, out);
  const expected_trace x = expect_from_dump(dump);

  // Every thread track names its pid, tid and thread name.
  std::set<std::string> thread_names;
  for (const auto& track : t.tracks)
    if (track.second.tid >= 0) thread_names.insert(track.second.name);
  CHECK(thread_names.count("main") == 1);
  CHECK(thread_names.count("worker") == 1);

  auto tid_of = [&](std::uint64_t track) {
    const auto found = t.tracks.find(track);
    return found == t.tracks.end() ? std::int64_t{-2} : found->second.tid;
  };
  std::multiset<slice_key> slices;
  std::map<std::tuple<std::int64_t, std::int64_t, std::string>, std::map<std::string, std::string>> args;
  for (const auto& s : t.slices) {
    slices.insert(slice_key{s.name, tid_of(s.track), s.begin, s.end});
    if (!s.args.empty()) args[{tid_of(s.track), s.begin, s.name}] = s.args;  // a coarse clock can start two at once
  }
  CHECK(x.slices.size() == 40 * 7);
  CHECK(slices == x.slices);
  CHECK(args == x.args);
  CHECK(args.size() == 80);  // "request" (index) and "decode" (batch, scale, keyframe) each time

  std::multiset<point_key> instants;
  for (const auto& i : t.instants) instants.insert(point_key{std::get<0>(i), tid_of(std::get<1>(i)), std::get<2>(i)});
  CHECK(x.instants.size() == 80);
  CHECK(instants == x.instants);

  const std::multiset<std::tuple<std::string, std::int64_t, double>> counters(t.counters.begin(), t.counters.end());
  CHECK(x.counters.size() - x.device_values == 40 + 80);  // queue_depth, and memory: frames (40 allocations, 40 frees)
  CHECK(x.device_values > 0);  // sampled at its start and end at least
  CHECK(counters == x.counters);

  std::multiset<std::pair<step_key, step_key>> arrows;
  for (const auto& a : t.arrows) {
    const auto& from = t.slices[a.first];
    const auto& to = t.slices[a.second];
    arrows.insert({{tid_of(from.track), from.begin}, {tid_of(to.track), to.begin}});
  }
  CHECK(x.arrows.size() == 40);  // decode (main) -> consume (worker), one per request
  CHECK(arrows == x.arrows);

  // Thread events in segments of 37 (each clearing its thread's sequence,
  // with its own interning and clock): the same slices, arguments, instants
  // and arrows.
  {
    const decoded_trace u = convert_segmented(dump, scratch("perfetto_run_37.pftrace"), 37);
    CHECK(u.clears > 10);
    CHECK(u.sequences.size() == 3);  // sequence 1 and one per thread, however many segments
    std::multiset<slice_key> slices37;
    std::map<std::tuple<std::int64_t, std::int64_t, std::string>, std::map<std::string, std::string>> args37;
    for (const auto& sl : u.slices) {
      const auto tid = u.tracks.at(sl.track).tid;
      slices37.insert(slice_key{sl.name, tid, sl.begin, sl.end});
      if (!sl.args.empty()) args37[{tid, sl.begin, sl.name}] = sl.args;
    }
    CHECK(slices37 == x.slices);
    CHECK(args37 == x.args);
    CHECK(u.instants.size() == t.instants.size());
    CHECK(u.arrows.size() == t.arrows.size());
  }

  // Memory: the begins held back on a thread are its open ancestors, at
  // most the nesting depth (request > infer > layer) whatever the run's
  // length, plus a span that begins at the very nanosecond its sibling
  // ended (it waits for a span that ends before it): count those.
  std::size_t touching = 0;
  {
    std::set<std::pair<std::int64_t, std::int64_t>> ends;  // (tid, end)
    for (const auto& sl : x.slices) ends.insert({std::get<1>(sl), std::get<3>(sl)});
    for (const auto& sl : x.slices) touching += ends.count({std::get<1>(sl), std::get<2>(sl)});
  }
  et::dump_reader reader;
  REQUIRE(reader.open(dump));
  std::FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  et::perfetto_result result;
  CHECK(et::write_perfetto(reader, sink, &result));
  std::fclose(sink);
  CHECK(result.max_pending >= 2);
  CAPTURE(touching);
  CHECK(result.max_pending <= 3 + touching);
  CHECK(result.slices == x.slices.size());
  CHECK(result.flow_steps == 2 * x.arrows.size());
  CHECK(result.span_args == 40 * 4);

  // Much smaller than the JSON of the same dump.
  const std::string json = scratch("perfetto_run.json");
  REQUIRE(run_cli({"json", dump, "-o", json}).exit_code == 0);
  const double ratio = static_cast<double>(read_file(json).size()) / static_cast<double>(read_file(out).size());
  MESSAGE("JSON / pftrace size ratio: " << ratio);
  CHECK(ratio > 2.0);
}

#ifdef EDGETRACE_TEST_GPU_APP
constexpr bool gpu_app_built = true;
#else
constexpr bool gpu_app_built = false;
#endif

TEST_CASE("perfetto: a GPU run has one track per stream and launch flows to the GPU slices" *
          doctest::skip(!gpu_app_built)) {
#ifdef EDGETRACE_TEST_GPU_APP
  const std::string dump = scratch("perfetto_gpu.etr");
  std::remove(dump.c_str());
  const auto app = run({EDGETRACE_TEST_GPU_APP, "pipeline"}, {"EDGETRACE_OUTPUT=" + dump});
  REQUIRE_MESSAGE(app.exit_code == 0, std::string(app.out + app.err));
  const decoded_trace t = convert_and_decode(dump, scratch("perfetto_gpu.pftrace"));

  // Expected GPU spans and streams, from the reader.
  et::dump_reader reader;
  REQUIRE_MESSAGE(edgetrace_test::opened(reader, dump), reader.error());
  std::multiset<std::tuple<std::string, std::int64_t, std::int64_t>> want;  // name, begin, end
  std::set<const et::gpu_stream_info*> streams;
  std::multiset<std::pair<std::int64_t, std::int64_t>> launches;  // host begin -> GPU begin
  REQUIRE(reader.read_gpu_spans([&](const et::gpu_span& g) {
    if (!g.resolved) return;
    want.insert({g.site->name, g.begin_ns, g.end_ns});
    streams.insert(g.stream);
    launches.insert({g.host_begin_ns, g.begin_ns});
  }));
  REQUIRE(!want.empty());
  std::set<std::uint64_t> gpu_tracks;
  std::multiset<std::tuple<std::string, std::int64_t, std::int64_t>> got;
  for (const auto& s : t.slices)
    if (t.tracks.at(s.track).tid < 0) {
      got.insert({s.name, s.begin, s.end});
      gpu_tracks.insert(s.track);
    }
  CHECK(got == want);
  CHECK(gpu_tracks.size() == streams.size());
  std::multiset<std::pair<std::int64_t, std::int64_t>> arrows;
  for (const auto& a : t.arrows)
    if (t.tracks.at(t.slices[a.second].track).tid < 0) arrows.insert({t.slices[a.first].begin, t.slices[a.second].begin});
  CHECK(arrows == launches);
#endif
}

TEST_CASE("perfetto: slices that begin or end at the same nanosecond nest as recorded") {
  namespace fmt = edgetrace::format;
  dump_builder d;
  const std::uint32_t writer = 0x5eedu;
  d.process(writer, process_fields{});
  d.calibration(writer, {{1000, 1001000}, {1000000, 2000000}});
  definitions defs;
  defs.category(1, "infer");
  const char* names[] = {"", "child", "parent", "a1", "a2", "a", "zero", "b"};
  for (std::uint64_t id = 1; id <= 7; ++id) defs.site(id, fmt::site_kind::span, 1, names[id]);
  d.defs(writer, defs);
  d.thread(writer, 1, 1234, "main");
  events e(1, 2000);  // in end order, as a thread records them
  e.span(1, 2000, 2500);  // child: begins with its parent
  e.span(2, 2000, 3000);  // parent
  e.span(3, 3000, 3200);  // a1: begins where parent ends, and with its parent a
  e.span(4, 3200, 3500);  // a2: begins where a1 ends, ends with a
  e.span(5, 3000, 3500);  // a
  e.span(6, 3500, 3500);  // zero: no duration, where a ends and b begins
  e.span(7, 3500, 4000);  // b
  d.event_chunk(writer, e);
  d.end(writer);
  const std::string dump = temp_path("perfetto_ties.etr");
  REQUIRE(write_file(dump, d.build()));
  const expected_trace x = expect_from_dump(dump);
  // Each slice as (name, tid, begin, end), and each name's depth.
  auto slices_of = [](const decoded_trace& t, std::map<std::string, std::size_t>& depth) {
    std::multiset<slice_key> slices;
    for (const auto& s : t.slices) {
      slices.insert(slice_key{s.name, t.tracks.at(s.track).tid, s.begin, s.end});
      depth[s.name] = s.depth;
    }
    return slices;
  };
  std::map<std::string, std::size_t> depth;
  CHECK(slices_of(convert_and_decode(dump, scratch("perfetto_ties.pftrace")), depth) == x.slices);
  CHECK(depth["parent"] == 0);
  CHECK(depth["child"] == 1);
  CHECK(depth["a"] == 0);
  CHECK(depth["a1"] == 1);
  CHECK(depth["a2"] == 1);
  CHECK(depth["b"] == 0);

  // Written in segments of a few events (each a sequence of its own), the
  // trace reads the same: events at one nanosecond keep their file order
  // across sequences.
  for (std::size_t segment : {1, 2, 3, 5}) {
    CAPTURE(segment);
    et::perfetto_result result;
    const decoded_trace u = convert_segmented(dump, scratch("perfetto_ties_segments.pftrace"), segment, &result);
    CHECK(result.thread_sequences >= 14 / segment);
    std::map<std::string, std::size_t> depth_again;
    CHECK(slices_of(u, depth_again) == x.slices);
    CHECK(depth_again == depth);
  }
}

TEST_CASE("perfetto: --min-dur, --filter and --window keep what json keeps; a span left out keeps its arguments") {
  const std::string dump = record_perfetto_workload("perfetto_select");
  const expected_trace x = expect_from_dump(dump);
  et::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, dump), r.error());
  // From the begin of the slice a third of the way through to the begin of
  // the one two thirds through (by begin: a slow build may leave long gaps).
  std::vector<std::int64_t> begins;
  for (const slice_key& k : x.slices) begins.push_back(std::get<2>(k));
  std::sort(begins.begin(), begins.end());
  const std::int64_t first = r.first_ns();
  const std::int64_t from = begins[begins.size() / 3], to = begins[2 * begins.size() / 3];
  const std::string window = std::to_string((from - first) / 1000) + "us:" + std::to_string((to - first) / 1000) + "us";
  struct selection {
    std::vector<std::string> flags;
    std::function<bool(const slice_key&)> keeps;
  };
  const std::int64_t from_us = first + (from - first) / 1000 * 1000, to_us = first + (to - first) / 1000 * 1000;
  const selection selections[] = {
      {{"--min-dur", "10us"}, [](const slice_key& k) { return std::get<3>(k) - std::get<2>(k) >= 10000; }},
      {{"--filter", "^(decode|finish)$"},
       [](const slice_key& k) { return std::get<0>(k) == "decode" || std::get<0>(k) == "finish"; }},
      {{"--window", window}, [&](const slice_key& k) { return std::get<3>(k) >= from_us && std::get<2>(k) <= to_us; }},
  };
  for (const selection& sel : selections) {
    CAPTURE(sel.flags[0]);
    std::multiset<slice_key> expected;
    for (const slice_key& k : x.slices)
      if (sel.keeps(k)) expected.insert(k);
    REQUIRE(!expected.empty());
    REQUIRE(expected.size() < x.slices.size());
    const std::string out = scratch("perfetto_select.pftrace");
    std::remove(out.c_str());
    std::vector<std::string> argv{"perfetto", dump, "-o", out};
    argv.insert(argv.end(), sel.flags.begin(), sel.flags.end());
    const auto run_result = run_cli(argv);
    REQUIRE_MESSAGE(run_result.exit_code == 0, run_result.err);
    CHECK(run_result.err.empty());  // no progress or "wrote" line off a terminal
    const decoded_trace t = decode_perfetto(read_file(out));
    REQUIRE(t.ok);
    CHECK(t.unmatched_ends == 0);
    CHECK(t.open_slices == 0);
    auto tid_of = [&](std::uint64_t track) {
      const auto found = t.tracks.find(track);
      return found == t.tracks.end() ? std::int64_t{-2} : found->second.tid;
    };
    std::multiset<slice_key> slices;
    for (const auto& s : t.slices) {
      const slice_key k{s.name, tid_of(s.track), s.begin, s.end};
      slices.insert(k);
      // Its own arguments, never those of a child left out.
      const auto own = x.args.find({std::get<1>(k), s.begin, s.name});
      CHECK(s.args == (own != x.args.end() ? own->second : std::map<std::string, std::string>{}));
    }
    CHECK(slices == expected);
    // json keeps the same spans.
    const std::string json = scratch("perfetto_select.json");
    std::vector<std::string> json_argv{"json", dump, "-o", json};
    json_argv.insert(json_argv.end(), sel.flags.begin(), sel.flags.end());
    REQUIRE(run_cli(json_argv).exit_code == 0);
    const std::string text = read_file(json);
    auto count = [&text](const std::string& what) {
      std::size_t n = 0;
      for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    // Less the 1 ns "flow" slices DevTools binds cross-category flows to.
    CHECK(count("\"ph\":\"X\"") - count("\"cat\":\"flow\",\"ph\":\"X\"") == expected.size());
  }

  for (const char* bad : {"5s:1s", "abc", ":", "1s", "1:2"}) {
    const auto r2 = run_cli({"perfetto", dump, "-o", scratch("bad.pftrace"), "--window", bad});
    CAPTURE(bad);
    CHECK(r2.exit_code == 1);
    CHECK(r2.err.find("--window needs FROM:TO") != std::string::npos);
    CHECK(!file_exists(scratch("bad.pftrace")));
  }
  const auto no_unit = run_cli({"perfetto", dump, "--min-dur", "5"});
  CHECK(no_unit.exit_code == 1);
  CHECK(no_unit.err.find("--min-dur needs a duration with a unit") != std::string::npos);
}

TEST_CASE("perfetto: a dense run costs 12 bytes an event, and with --compress deflate under 4") {
  // 200,000 spans on one thread, one every 40 ns (a dense loop; built, so
  // the figure does not depend on how fast this build or machine runs):
  // 400,000 events.
  namespace fmt = edgetrace::format;
  dump_builder builder;
  builder.process(1, process_fields{});
  builder.calibration(1, {{0, 1000000}, {1000000000, 1001000000}});
  definitions defs;
  defs.category(1, "loop").site(1, fmt::site_kind::span, 1, "step");
  builder.defs(1, defs).thread(1, 1, 10, "main");
  events e(1, 0);
  for (std::uint64_t i = 0; i < 200000; ++i) e.span(1, 40 * i, 40 * i + 25);
  builder.event_chunk(1, e).end(1);
  const std::string dump = scratch("perfetto_dense.etr");
  REQUIRE(write_file(dump, builder.build()));
  const std::string plain = scratch("perfetto_dense_plain.pftrace");
  const auto none = run_cli({"perfetto", dump, "-o", plain, "--compress", "none"});
  REQUIRE_MESSAGE(none.exit_code == 0, none.err);
  const decoded_trace p = decode_checked(plain);
  CHECK(p.slices.size() == 200000);
  CHECK(p.compressed_packets == 0);
  const double events = 2.0 * static_cast<double>(p.slices.size());
  const std::string plain_bytes = read_file(plain);
  CHECK(static_cast<double>(plain_bytes.size()) / events <= 12.01);  // a begin 14 bytes, an end 10; headers

  const std::string deflated = scratch("perfetto_dense_deflate.pftrace");
  const auto z = run_cli({"perfetto", dump, "-o", deflated, "--compress", "deflate"});
#if EDGETRACE_TEST_ZLIB
  REQUIRE_MESSAGE(z.exit_code == 0, z.err);
  const decoded_trace d = decode_checked(deflated);
  CHECK(d.compressed_packets >= 2);                  // about 384 KiB of packets each
  CHECK(d.largest_compressed_packet < 512 * 1024);  // what Perfetto asks
  CHECK(static_cast<double>(read_file(deflated).size()) / events <= 4.0);
  // Expanded, the very packets of the plain file.
  decoded_trace scratch_trace;
  CHECK(expand_compressed(read_file(deflated), scratch_trace) == plain_bytes);
  CHECK(scratch_trace.ok);
  // The default where the CLI has zlib.
  const std::string by_default = scratch("perfetto_dense_default.pftrace");
  REQUIRE(run_cli({"perfetto", dump, "-o", by_default}).exit_code == 0);
  CHECK(read_file(by_default) == read_file(deflated));
#else
  // Built without zlib: a clear usage error, and nothing written.
  CHECK(z.exit_code == 1);
  CHECK(z.err.find("built without zlib") != std::string::npos);
  CHECK(!file_exists(deflated));
#endif
  const auto bad = run_cli({"perfetto", dump, "-o", deflated, "--compress", "zstd"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("--compress takes deflate or none") != std::string::npos);
}

TEST_CASE("perfetto: '-o -' writes the same bytes to stdout; bad input is a clear error") {
  const std::string dump = record_workload("perfetto_stdout", 5);
  const std::string out = scratch("perfetto_stdout.pftrace");
  REQUIRE(run_cli({"perfetto", dump, "-o", out}).exit_code == 0);
  const auto piped = run_cli({"perfetto", dump, "-o", "-"});
  CHECK(piped.exit_code == 0);
  CHECK(piped.out == read_file(out));

  // The default output name: DUMP with .etr replaced by .pftrace.
  const std::string by_default = scratch("perfetto_stdout.pftrace");
  std::remove(by_default.c_str());
  CHECK(run_cli({"perfetto", dump}).exit_code == 0);
  CHECK(read_file(by_default) == piped.out);

  const auto missing = run_cli({"perfetto", scratch("no_such_dump.etr"), "-o", scratch("x.pftrace")});
  CHECK(missing.exit_code == 2);
  CHECK(line_count(missing.err) == 1);
  CHECK(missing.err.find("edgetrace: error:") == 0);

  const std::string text = scratch("perfetto_not_a_dump.etr");
  { std::FILE* f = std::fopen(text.c_str(), "wb"); std::fputs("hello, this is not a dump\n", f); std::fclose(f); }
  const auto not_dump = run_cli({"perfetto", text, "-o", scratch("y.pftrace")});
  CHECK(not_dump.exit_code == 2);
  CHECK(line_count(not_dump.err) == 1);
  CHECK(!file_exists(scratch("y.pftrace")));

  // A truncated dump converts what is intact and exits 3.
  const std::string whole = read_file(dump);
  const std::string cut = scratch("perfetto_cut.etr");
  { std::FILE* f = std::fopen(cut.c_str(), "wb"); std::fwrite(whole.data(), 1, whole.size() * 2 / 3, f); std::fclose(f); }
  const std::string cut_out = scratch("perfetto_cut.pftrace");
  const auto damaged = run_cli({"perfetto", cut, "-o", cut_out});
  CHECK(damaged.exit_code == 3);
  const decoded_trace t = decode_perfetto(read_file(cut_out));
  CHECK(t.ok);
  CHECK(t.unmatched_ends == 0);
}

TEST_CASE("perfetto --split-mb: files by time window, each within its size, together every slice, instant, counter and argument once") {
  const std::string dump = record_perfetto_workload("perfetto_split");
  const expected_trace x = expect_from_dump(dump);
  et::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, dump), r.error());
  // The whole trace's packets, then files of about a quarter of that.
  std::uint64_t whole = 0;
  {
    const std::string out = scratch("perfetto_split_whole.pftrace");
    std::FILE* f = std::fopen(out.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(et::write_perfetto(r, f));
    REQUIRE(std::fclose(f) == 0);
    whole = read_file(out).size();
  }
  const std::uint64_t max_bytes = whole / 4 + 2000;
  std::vector<et::perfetto_part> parts;
  std::string error;
  et::perfetto_options options;
  REQUIRE_MESSAGE(et::write_perfetto_split(r, scratch("perfetto_split.pftrace"), max_bytes, options, parts, &error), error);
  CHECK(parts.size() >= 4);
  CHECK(parts.size() <= et::perfetto_max_parts);
  std::multiset<slice_key> slices;
  std::multiset<point_key> instants;
  std::multiset<std::tuple<std::string, std::int64_t, double>> counters;
  std::map<std::tuple<std::int64_t, std::int64_t, std::string>, std::map<std::string, std::string>> args;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const et::perfetto_part& part = parts[i];
    CAPTURE(part.path);
    char number[24];
    std::snprintf(number, sizeof number, "%03zu", i + 1);
    CHECK(part.path == scratch(std::string("perfetto_split-") + number + ".pftrace"));
    CHECK(part.plain_bytes <= max_bytes);
    CHECK(part.plain_bytes == read_file(part.path).size());  // not deflated: the library's default
    if (i + 1 < parts.size()) CHECK(part.to_ns == parts[i + 1].from_ns);
    const decoded_trace t = decode_checked(part.path);
    std::set<std::string> thread_names;  // every file describes every thread
    for (const auto& track : t.tracks)
      if (track.second.tid >= 0) thread_names.insert(track.second.name);
    CHECK(thread_names.count("main") == 1);
    CHECK(thread_names.count("worker") == 1);
    auto tid_of = [&](std::uint64_t track) { return t.tracks.at(track).tid; };
    for (const auto& sl : t.slices) {
      CHECK(sl.begin >= part.from_ns);  // in the file of the window it starts in
      CHECK(sl.begin < part.to_ns);
      slices.insert(slice_key{sl.name, tid_of(sl.track), sl.begin, sl.end});
      if (!sl.args.empty()) args[{tid_of(sl.track), sl.begin, sl.name}] = sl.args;
    }
    for (const auto& in : t.instants) instants.insert(point_key{std::get<0>(in), tid_of(std::get<1>(in)), std::get<2>(in)});
    counters.insert(t.counters.begin(), t.counters.end());
  }
  CHECK(slices == x.slices);
  CHECK(args == x.args);
  CHECK(instants == x.instants);
  CHECK(counters == x.counters);

  // Too small a file for one window's events: refused, nothing left behind.
  std::vector<et::perfetto_part> none;
  CHECK_FALSE(et::write_perfetto_split(r, scratch("perfetto_split_tiny.pftrace"), 300, options, none, &error));
  CHECK(error.rfind("cannot split into files of at most 0.0 MB", 0) == 0);
  CHECK(none.empty());
  CHECK(!file_exists(scratch("perfetto_split_tiny-001.pftrace")));
  // The CLI: N MB, several files, never stdout.
  const auto one = run_cli({"perfetto", dump, "--split-mb", "1", "-o", scratch("perfetto_split_cli.pftrace")});
  CHECK_MESSAGE(one.exit_code == 0, one.err);
  CHECK(file_exists(scratch("perfetto_split_cli-001.pftrace")));
  CHECK(!file_exists(scratch("perfetto_split_cli-002.pftrace")));
  CHECK(run_cli({"perfetto", dump, "--split-mb", "1", "-o", "-"}).exit_code == 1);
  CHECK(run_cli({"perfetto", dump, "--split-mb", "0"}).exit_code == 1);

  // A trace over what a browser holds (EDGETRACE_PERFETTO_WARN_MB=0 makes
  // any "too big"; the default is 500 MB of packets) gets one warning with
  // the ways out; a split's files are within their N MB: none.
  const std::string big = scratch("perfetto_split_big.pftrace");
  const auto warned = edgetrace_test::run({cli, "perfetto", dump, "-o", big}, {"EDGETRACE_PERFETTO_WARN_MB=0"});
  CHECK(warned.exit_code == 0);
  for (const char* hint : {"warning: ", "of packets", "--split-mb", "--min-dur", "trace_processor --httpd"})
    CHECK_MESSAGE(warned.err.find(hint) != std::string::npos, hint);
  CHECK(std::count(warned.err.begin(), warned.err.end(), '\n') == 1);
  const auto split = edgetrace_test::run({cli, "perfetto", dump, "-o", big, "--split-mb", "1"}, {"EDGETRACE_PERFETTO_WARN_MB=0"});
  CHECK(split.exit_code == 0);
  CHECK(split.err.empty());
}

}  // namespace perfetto_test
