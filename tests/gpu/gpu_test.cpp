// SPDX-License-Identifier: MIT
// GPU spans on a fake GPU (gpu/spans.hpp through the gpu_backend seam):
// event pooling, per-stream FIFO resolution, out-of-order completion across
// streams, graph capture, the pool bound, the clock-alignment fit, and (in
// child processes, tests/support/gpu_app.cpp) the error paths and the whole
// chain app -> dump -> `edgetrace json` / `edgetrace info`.
// ctest runs it with EDGETRACE_OUTPUT set.
#include <doctest/doctest.h>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/gpu_clock.hpp>
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/gpu/spans.hpp>
#include <edgetrace/sinks/chrome_json/writer.hpp>
#include <support/fake_gpu.hpp>
#include <support/json_lite.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace gpu_test {

EDGETRACE_CATEGORY(gpu);

namespace {

using edgetrace::reader::gpu_span;
using edgetrace_test::fake_gpu;

std::string output_path() {
  const char* path = std::getenv("EDGETRACE_OUTPUT");
  return path != nullptr ? path : "";
}

/// The traced child program: gpu_app, or what GPU_TEST_APP names (the
/// gpu_test_separate run uses a build of it on the separate runtime).
std::string gpu_app() {
  const char* app = std::getenv("GPU_TEST_APP");
  return app != nullptr && *app != '\0' ? app : EDGETRACE_TEST_GPU_APP;
}

/// Waits until the fake GPU finished everything recorded so far.
void wait_gpu_idle() {
  fake_gpu& g = fake_gpu::instance();
  while (g.pending_events() != 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

struct read_back {
  std::vector<gpu_span> spans;  ///< pointers into `reader` stay valid while it lives
  edgetrace::reader::dump_reader reader;
};

/// Flushes and reads every GPU span record written so far.
/// A stream runs its work in order: no resolved GPU span of a stream
/// overlaps the one read before it, unless one encloses the other (nested
/// scopes). Checked on every dump this program reads.
void check_stream_order(const std::vector<gpu_span>& spans) {
  std::map<const void*, const gpu_span*> previous;
  for (const gpu_span& s : spans) {
    if (!s.resolved) continue;
    const gpu_span*& last = previous[s.stream];
    if (last != nullptr) {
      const bool nested = (s.begin_ns >= last->begin_ns && s.end_ns <= last->end_ns) ||
                          (s.begin_ns <= last->begin_ns && s.end_ns >= last->end_ns);
      CAPTURE(s.begin_ns);
      CAPTURE(last->end_ns);
      CHECK((nested || s.begin_ns >= last->end_ns));
    }
    last = &s;
  }
}

std::unique_ptr<read_back> gpu_spans_now() {
  edgetrace::flush();
  auto out = std::make_unique<read_back>();
  REQUIRE(out->reader.open(output_path()));
  REQUIRE(out->reader.read_metadata());
  out->reader.read_gpu_spans([&](const gpu_span& s) { out->spans.push_back(s); });
  check_stream_order(out->spans);
  return out;
}

std::vector<gpu_span> named(const std::vector<gpu_span>& spans, const std::string& name) {
  std::vector<gpu_span> out;
  for (const auto& s : spans)
    if (s.site != nullptr && s.site->name == name) out.push_back(s);
  return out;
}

}  // namespace

TEST_CASE("gpu: the test runs with EDGETRACE_OUTPUT set") {
  REQUIRE(!output_path().empty());
  // Reading the dump mid-run needs two calibration pairs (the second comes
  // about 1 ms after start, the third 20 ms after) to turn ticks into ns.
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
}

TEST_CASE("gpu: events come from a pool; no cudaEventCreate after warm-up") {
  fake_gpu& g = fake_gpu::instance();
  void* s = fake_gpu::stream(10);
  long after_warm_up = 0;
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < 20; ++i) {
      FAKE_GPU_SCOPE(gpu, "pooled", s);
      g.launch(s, 200e3);
    }
    wait_gpu_idle();
    edgetrace::flush();  // resolves them all: the pairs go back to this thread
    if (round == 0) after_warm_up = g.calls(fake_gpu::c_event_create);
  }
  CHECK(edgetrace::detail::gpu_state.load() == edgetrace::detail::gpu_on);
  CHECK(g.calls(fake_gpu::c_event_create) == after_warm_up);
  const auto dump = gpu_spans_now();
  const auto pooled = named(dump->spans, "pooled");
  CHECK(pooled.size() == 160);
  std::vector<std::uint64_t> lengths;
  for (const auto& span : pooled) {
    CHECK(span.resolved);
    CHECK(span.gpu_duration_ns >= 200000);  // longer when the host was slower than the work
    lengths.push_back(span.gpu_duration_ns);
  }
  std::nth_element(lengths.begin(), lengths.begin() + 80, lengths.end());
  CHECK(lengths[80] == 200000);
}

TEST_CASE("gpu: paused, a GPU scope makes no CUDA call and records nothing") {
  fake_gpu& g = fake_gpu::instance();
  void* s = fake_gpu::stream(11);
  { FAKE_GPU_SCOPE(gpu, "before_pause", s); }  // warm-up: this thread's state and a pair
  wait_gpu_idle();
  long before[fake_gpu::c_count];
  for (int c = 0; c < fake_gpu::c_count; ++c) before[c] = g.calls(static_cast<fake_gpu::call>(c));
  edgetrace::pause();
  for (int i = 0; i < 10; ++i) {
    FAKE_GPU_SCOPE(gpu, "paused_gpu", s);
  }
  // The flusher may take anchors meanwhile; the scopes' own calls are these.
  CHECK(g.calls(fake_gpu::c_current_device) == before[fake_gpu::c_current_device]);
  CHECK(g.calls(fake_gpu::c_capture_status) == before[fake_gpu::c_capture_status]);
  edgetrace::resume();
  { FAKE_GPU_SCOPE(gpu, "after_resume", s); }
  wait_gpu_idle();
  const auto dump = gpu_spans_now();
  CHECK(named(dump->spans, "paused_gpu").empty());
  CHECK(named(dump->spans, "after_resume").size() == 1);
}

TEST_CASE("gpu: FIFO per stream, and a held stream does not block another") {
  fake_gpu& g = fake_gpu::instance();
  void* a = fake_gpu::stream(20);
  void* b = fake_gpu::stream(21);
  g.hold(b);
  for (int i = 0; i < 10; ++i) {
    {
      FAKE_GPU_SCOPE(gpu, "on_a", a);
      g.launch(a, 20e3);
    }
    {
      FAKE_GPU_SCOPE(gpu, "on_b", b);
      g.launch(b, 30e3);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  {
    const auto dump = gpu_spans_now();
    CHECK(named(dump->spans, "on_a").size() == 10);  // resolved although b is stuck
    CHECK(named(dump->spans, "on_b").empty());
  }
  g.release(b);
  wait_gpu_idle();
  const auto dump = gpu_spans_now();
  for (const char* name : {"on_a", "on_b"}) {
    const auto spans = named(dump->spans, name);
    REQUIRE(spans.size() == 10);
    for (std::size_t i = 1; i < spans.size(); ++i) {
      // In launch order, back to back on the GPU (FIFO), never overlapping.
      CHECK(spans[i].host_begin_tick > spans[i - 1].host_begin_tick);
      CHECK(spans[i].begin_ns >= spans[i - 1].end_ns);
    }
    CHECK(spans.front().stream != nullptr);
  }
  CHECK(named(dump->spans, "on_a").front().stream != named(dump->spans, "on_b").front().stream);
}

TEST_CASE("gpu: nested scopes and run-time names") {
  fake_gpu& g = fake_gpu::instance();
  void* s = fake_gpu::stream(30);
  const auto layer = edgetrace::intern("layer_17");
  {
    FAKE_GPU_SCOPE(gpu, "outer", s);
    g.launch(s, 10e3);
    {
      EDGETRACE_DETAIL_GPU_SCOPE_NAMED(gpu, layer, s, edgetrace_test::fake_backend());
      g.launch(s, 50e3);
    }
    g.launch(s, 10e3);
  }
  wait_gpu_idle();
  const auto dump = gpu_spans_now();
  const auto outer = named(dump->spans, "outer");
  const auto inner = named(dump->spans, "layer_17");
  REQUIRE(outer.size() == 1);
  REQUIRE(inner.size() == 1);
  CHECK(outer[0].gpu_duration_ns >= 70000);  // more when the host is slower than the work (qemu)
  CHECK(inner[0].gpu_duration_ns >= 50000);
  CHECK(inner[0].begin_ns >= outer[0].begin_ns);
  CHECK(inner[0].end_ns <= outer[0].end_ns);
}

TEST_CASE("gpu: a capturing stream gets no event records, and its host span is flagged") {
  fake_gpu& g = fake_gpu::instance();
  void* s = fake_gpu::stream(40);
  const long records_before = g.captured_records();
  g.set_capturing(s, true);
  for (int i = 0; i < 3; ++i) {
    FAKE_GPU_SCOPE(gpu, "while_capturing", s);
  }
  g.set_capturing(s, false);
  CHECK(g.captured_records() == records_before);
  const auto dump = gpu_spans_now();
  const auto captured = named(dump->spans, "while_capturing");
  REQUIRE(captured.size() == 3);
  for (const auto& span : captured) {
    CHECK_FALSE(span.resolved);
    CHECK((span.flags & edgetrace::format::gpu_span_captured) != 0);
    CHECK(span.writer->gpu.captured_span(span.os_tid, span.host_end_tick));
  }
}

TEST_CASE("gpu: a thread owns at most gpu_max_pairs_per_thread pairs; the rest is host-only, counted") {
  fake_gpu& g = fake_gpu::instance();
  void* s = fake_gpu::stream(50);
  const int extra = 100;
  // The stats so far (none before the process's first GPU scope).
  std::uint64_t skipped_before = 0, no_pair_before = 0;
  {
    const auto before = gpu_spans_now();
    const auto& writers = before->reader.writers();
    if (!writers.empty() && writers.begin()->second.gpu.has_stats) {
      const auto& stats = writers.begin()->second.gpu;
      skipped_before = stats.skipped;
      no_pair_before = stats.skipped_no_pair;
    }
  }
  const long creates_before = g.calls(fake_gpu::c_event_create);
  std::thread worker([&] {
    g.hold(s);
    for (std::uint32_t i = 0; i < edgetrace::detail::gpu_max_pairs_per_thread + extra; ++i) {
      FAKE_GPU_SCOPE(gpu, "held", s);
      if (i % 512 == 0) edgetrace::flush();  // keeps the hand-off queue from filling
    }
  });
  worker.join();
  CHECK(g.calls(fake_gpu::c_event_create) - creates_before == 2 * long{edgetrace::detail::gpu_max_pairs_per_thread});
  g.release(s);
  wait_gpu_idle();
  const auto dump = gpu_spans_now();
  CHECK(named(dump->spans, "held").size() == edgetrace::detail::gpu_max_pairs_per_thread);
  // Counted as skipped for want of a pair (info: "every event pair in flight").
  const auto& stats = dump->reader.writers().begin()->second.gpu;
  REQUIRE(stats.has_skip_reasons);
  CHECK(stats.skipped - skipped_before == extra);
  CHECK(stats.skipped_no_pair - no_pair_before == extra);
  const auto info = edgetrace_test::run({EDGETRACE_TEST_CLI, "info", output_path()});
  CHECK(info.out.find(" every event pair in flight), ") != std::string::npos);
  // A thread started later adopts the exited worker's state, events included.
  const long creates = g.calls(fake_gpu::c_event_create);
  std::thread([&] {
    for (int i = 0; i < 50; ++i) {
      FAKE_GPU_SCOPE(gpu, "adopted", s);
    }
  }).join();
  CHECK(g.calls(fake_gpu::c_event_create) == creates);
  wait_gpu_idle();
  CHECK(named(gpu_spans_now()->spans, "adopted").size() == 50);
}

namespace {

/// `depth` GPU scopes, each nested in the previous one.
void nested_scopes(void* stream, std::uint32_t depth) {
  FAKE_GPU_SCOPE(gpu, "nested", stream);
  if (depth > 1) nested_scopes(stream, depth - 1);
}

/// The writer's skipped GPU scopes as of now (flush() writes the stats):
/// all of them, and those that found every event pair in flight.
struct skipped_counts {
  std::uint64_t all = 0, no_pair = 0;
};
skipped_counts gpu_skipped_now() {
  const auto dump = gpu_spans_now();
  REQUIRE(dump->reader.writers().size() == 1);
  const auto& gpu = dump->reader.writers().begin()->second.gpu;
  REQUIRE(gpu.has_stats);
  REQUIRE(gpu.has_skip_reasons);
  return {gpu.skipped, gpu.skipped_no_pair};
}

}  // namespace

TEST_CASE("gpu: nested scopes hold a hand-off slot each; past gpu_pending_capacity they are host-only, counted") {
  void* s = fake_gpu::stream(60);
  const std::uint32_t extra = 5;
  wait_gpu_idle();
  const skipped_counts before = gpu_skipped_now();
  std::thread([&] { nested_scopes(s, edgetrace::detail::gpu_pending_capacity + extra); }).join();
  wait_gpu_idle();
  const skipped_counts after = gpu_skipped_now();
  CHECK(after.all - before.all == extra);
  CHECK(after.no_pair == before.no_pair);  // a full queue, not a want of pairs
  CHECK(named(gpu_spans_now()->spans, "nested").size() == edgetrace::detail::gpu_pending_capacity);
}

// ------------------------------------------------------------ alignment math

namespace {

using anchor = edgetrace::reader::gpu_clock::anchor;

/// Anchors every `period` GPU ns of a GPU clock gpu = (host - offset) *
/// (1 + drift), each bracketed by +-`half` host ns around its true time.
std::vector<anchor> synthetic(int count, double period, double offset, double drift, double half, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> jitter(-0.8, 0.8);
  std::vector<anchor> out;
  for (int k = 0; k < count; ++k) {
    const double gpu = k * period;
    const double host = offset + gpu / (1 + drift);
    // The event ran somewhere inside its bracket, not always in the middle.
    const double centre = host + jitter(random) * half;
    anchor a;
    a.seq = static_cast<std::uint64_t>(k);
    a.link = k == 0 ? 0 : static_cast<std::uint64_t>(k);
    a.since_previous_ns = k == 0 ? 0 : std::llround(period);
    a.host_before_ns = std::llround(centre - half);
    a.host_after_ns = std::llround(centre + half);
    out.push_back(a);
  }
  return out;
}

double true_host(double gpu, double offset, double drift) { return offset + gpu / (1 + drift); }

}  // namespace

TEST_CASE("gpu clock: offset and drift are fitted; one bad anchor is rejected") {
  const double offset = 5e9, drift = 150e-6, period = 1e9;
  auto anchors = synthetic(30, period, offset, drift, 3000, 1);
  anchors[12].host_before_ns += 1000000;  // the flusher was preempted: 1 ms late
  anchors[12].host_after_ns += 1000000;
  edgetrace::reader::gpu_clock clock;
  clock.build(anchors);
  CHECK(clock.anchors_rejected() == 1);
  CHECK(clock.chains() == 1);
  CHECK(clock.drift_ppm() == doctest::Approx(150).epsilon(0.01));
  for (double gpu : {0.0, 1.5e9, 12.25e9, 29e9, 31e9}) {
    const auto k = static_cast<std::uint64_t>(std::min(29.0, std::floor(gpu / period)));
    std::int64_t host = 0;
    REQUIRE(clock.to_host_ns(k, gpu - k * period, host));
    CHECK(std::fabs(static_cast<double>(host) - true_host(gpu, offset, drift)) < 1500);  // half the bracket
  }
  CHECK(clock.residual_max_ns() < 3000);
}

TEST_CASE("gpu clock: a short chain fits the offset only; a broken link starts a new chain") {
  auto anchors = synthetic(3, 100e6, 2e9, 80e-6, 1000, 2);  // 200 ms: too short to see 80 ppm
  edgetrace::reader::gpu_clock clock;
  clock.build(anchors);
  CHECK(clock.drift_ppm() == 0);
  std::int64_t host = 0;
  REQUIRE(clock.to_host_ns(1, 0, host));
  CHECK(std::fabs(static_cast<double>(host) - true_host(100e6, 2e9, 80e-6)) < 2000);
  // Anchor 1's chunk was lost: anchor 2 links to nothing known.
  anchors.erase(anchors.begin() + 1);
  clock.build(anchors);
  CHECK(clock.chains() == 2);
  REQUIRE(clock.to_host_ns(2, 0, host));
  CHECK(std::fabs(static_cast<double>(host) - true_host(200e6, 2e9, 80e-6)) < 2000);
  CHECK_FALSE(clock.to_host_ns(1, 0, host));
}

TEST_CASE("gpu clock: garbage anchors never overflow") {
  std::vector<anchor> anchors(3);
  anchors[0] = {0, 0, 0, -(std::int64_t{1} << 61), std::int64_t{1} << 61};
  anchors[1] = {1, 1, std::int64_t{1} << 62, 0, 10};
  anchors[2] = {2, 2, -(std::int64_t{1} << 62), 5, 6};
  edgetrace::reader::gpu_clock clock;
  clock.build(anchors);
  std::int64_t host = 0;
  CHECK(clock.to_host_ns(2, 1e30L, host));
  CHECK(host <= std::int64_t{1} << 61);
}

// ------------------------------------------------------------ child processes

namespace {

int count_lines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

std::string value_of(const std::string& out, const std::string& key) {
  const std::size_t at = out.find(key + "=");
  if (at == std::string::npos) return "";
  const std::size_t end = out.find('\n', at);
  return out.substr(at + key.size() + 1, end - at - key.size() - 1);
}

std::size_t host_spans(const std::string& dump, const std::string& name) {
  edgetrace::reader::dump_reader r;
  std::size_t n = 0;
  if (!r.open(dump)) return 0;
  r.read_events([&](const edgetrace::reader::event& e) {
    if (e.kind == edgetrace::reader::event_kind::span && e.site->name == name) ++n;
  });
  return n;
}

}  // namespace

TEST_CASE("gpu errors: a failing cudaEventRecord gives one line, host spans go on, no CUDA call after") {
  const std::string dump = edgetrace_test::fresh("gpu_fail_record.etr");
  const auto r = edgetrace_test::run({gpu_app(), "fail-record"}, {"EDGETRACE_OUTPUT=" + dump});
  CHECK(r.exit_code == 0);
  CHECK(count_lines(r.err, "edgetrace:") == 1);
  CHECK(count_lines(r.err, "CUDA error in cudaEventRecord: an illegal memory access was encountered (error 700)") == 1);
  CHECK(count_lines(r.err, "GPU spans are off, host spans continue") == 1);
  CHECK(value_of(r.out, "calls_after_off") == "0");
  CHECK(value_of(r.out, "calls_after_flush") == "0");
  CHECK(host_spans(dump, "step") == 10);
  CHECK(host_spans(dump, "after") == 10);
  edgetrace::reader::dump_reader reader;
  REQUIRE_MESSAGE(edgetrace_test::opened(reader, dump), reader.error());
  const auto& g = reader.writers_in_order().front()->gpu;
  CHECK(g.off_reason.find("cudaEventRecord") != std::string::npos);
}

TEST_CASE("gpu errors: no device, an old driver, EDGETRACE_CUDA=0") {
  struct expectation {
    const char* mode;
    const char* line;  ///< nullptr: no line at all
    std::vector<std::string> env;
  };
  const expectation cases[] = {
      {"no-device", "CUDA unavailable: cudaGetDeviceCount: no CUDA device (error 0; driver 13.0, runtime 13.0)", {}},
      {"old-driver",
       "CUDA unavailable: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (error 35; "
       "driver 11.4, runtime 13.0)",
       {}},
      {"cuda-off", nullptr, {"EDGETRACE_CUDA=0"}},
  };
  for (const expectation& c : cases) {
    CAPTURE(c.mode);
    const std::string dump = edgetrace_test::fresh(std::string("gpu_") + c.mode + ".etr");
    std::vector<std::string> env = c.env;
    env.push_back("EDGETRACE_OUTPUT=" + dump);
    const auto r = edgetrace_test::run({gpu_app(), c.mode}, env);
    CHECK(r.exit_code == 0);
    if (c.line != nullptr) {
      CHECK(count_lines(r.err, "edgetrace:") == 1);
      CHECK(count_lines(r.err, c.line) == 1);
    } else {
      CHECK(r.err.empty());
      CHECK(value_of(r.out, "calls") == "0");  // not a single CUDA call
    }
    CHECK(host_spans(dump, "step") == 5);
    edgetrace::reader::dump_reader reader;
    REQUIRE_MESSAGE(edgetrace_test::opened(reader, dump), reader.error());
    CHECK_FALSE(reader.writers_in_order().front()->gpu.off_reason.empty());
  }
}

TEST_CASE("gpu exit: work still queued at exit is resolved within the final wait") {
  const std::string dump = edgetrace_test::fresh("gpu_exit_pending.etr");
  const auto r = edgetrace_test::run({gpu_app(), "exit-pending"}, {"EDGETRACE_OUTPUT=" + dump});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(dump));
  std::size_t resolved = 0;
  reader.read_gpu_spans([&](const gpu_span& s) { resolved += s.resolved ? 1 : 0; });
  CHECK(resolved == 5);
  CHECK(reader.complete());
}

TEST_CASE("gpu steady: 10,000 scopes a second lose none, even with a 1 s flush period") {
  // 8 hand-off queues' worth at a steady rate: the queue would fill 9 times
  // over in one period. The thread wakes the flusher when its queue passes
  // half full, and the flusher comes back by the queue's fill. Half a queue
  // lasts 51 ms, time enough for the woken flusher under TSan beside
  // another test (at 50,000 a second, 10 ms was not: 132 of 8192 skipped
  // once).
  const std::string dump = edgetrace_test::fresh("gpu_steady.etr");
  const auto r = edgetrace_test::run({gpu_app(), "steady"}, {"EDGETRACE_OUTPUT=" + dump, "EDGETRACE_FLUSH_MS=1000"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto issued = std::stoull(value_of(r.out, "issued"));
  CHECK(issued == 8u * edgetrace::detail::gpu_pending_capacity);
  edgetrace::reader::dump_reader reader;
  REQUIRE_MESSAGE(edgetrace_test::opened(reader, dump), reader.error());
  const auto& g = reader.writers_in_order().front()->gpu;
  REQUIRE(g.has_stats);
  CHECK(g.skipped == 0);
  CHECK(g.unresolved == 0);
  CHECK(g.resolved == issued);
  const auto info = edgetrace_test::run({EDGETRACE_TEST_CLI, "info", dump});
  CHECK(info.out.find("; 8192 launches, 0 skipped, ") != std::string::npos);
}

TEST_CASE("gpu end to end: fake pipeline -> dump -> edgetrace json and info") {
  const std::string dump = edgetrace_test::fresh("gpu_pipeline.etr");
  const std::string json = edgetrace_test::fresh("gpu_pipeline.json");
  const auto app = edgetrace_test::run({gpu_app(), "pipeline"}, {"EDGETRACE_OUTPUT=" + dump});
  REQUIRE(app.exit_code == 0);
  CHECK(app.err.empty());
  CHECK(value_of(app.out, "captured_records") == "0");
  const auto conv = edgetrace_test::run({EDGETRACE_TEST_CLI, "json", dump, "-o", json});
  REQUIRE_MESSAGE(conv.exit_code == 0, conv.err);

  json_lite::value root;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(edgetrace_test::read_file(json), root, error), error);
  const auto& events = root["traceEvents"];
  std::uint64_t gpu_pid = 0, host_pid = 0, host_tid = 0;
  std::map<double, std::string> stream_names;  // tid -> name
  struct slice {
    std::string name, cat;
    double ts, dur;
    double gpu_us;
  };
  std::map<double, std::vector<slice>> gpu_slices;         // by tid
  std::map<std::string, std::vector<slice>> host_slices;   // by name
  std::vector<const json_lite::value*> flows;
  for (const auto& e : events.items) {
    const std::string ph = e["ph"].str();
    if (ph == "M" && e["name"].str() == "process_name" && e["args"]["name"].str() == "GPU")
      gpu_pid = static_cast<std::uint64_t>(e["pid"].num());
    if (ph == "M" && e["name"].str() == "thread_name" && e["args"]["name"].str() == "launcher") {
      host_pid = static_cast<std::uint64_t>(e["pid"].num());
      host_tid = static_cast<std::uint64_t>(e["tid"].num());
    }
    if (ph == "M" && e["name"].str() == "thread_name" && static_cast<std::uint64_t>(e["pid"].num()) == gpu_pid)
      stream_names[e["tid"].num()] = e["args"]["name"].str();
    if (ph == "X") {
      const slice s{e["name"].str(), e["cat"].str(), e["ts"].num(), e["dur"].num(), e["args"]["gpu_us"].num(-1)};
      if (static_cast<std::uint64_t>(e["pid"].num()) == gpu_pid && gpu_pid != 0)
        gpu_slices[e["tid"].num()].push_back(s);
      else
        host_slices[s.name].push_back(s);
    }
    if (ph == "s" || ph == "f") flows.push_back(&e);
  }
  REQUIRE(gpu_pid != 0);
  CHECK(gpu_pid == 1000000000u + host_pid);
  REQUIRE(stream_names.size() == 2);
  for (const auto& s : stream_names) CHECK(s.second.find("GPU 0 (Fake GPU 0) stream 0x") == 0);
  // Copy stream: h2d, kernel_a, d2h per frame; compute stream: kernel_b.
  std::map<std::string, std::vector<slice>> gpu_by_name;
  for (const auto& track : gpu_slices)
    for (const auto& s : track.second) gpu_by_name[s.name].push_back(s);
  // The simulated work lengths (gpu_app.cpp). A span measures exactly that
  // unless the host took longer between its two event records (the first
  // frame's warm-up; qemu): the median is exact.
  const std::map<std::string, double> lengths_us = {{"h2d", 3000}, {"kernel_a", 5000}, {"kernel_b", 4000}, {"d2h", 2000}};
  for (const auto& expected : lengths_us) {
    CAPTURE(expected.first);
    const auto& gpu = gpu_by_name[expected.first];
    const auto& host = host_slices[expected.first];
    REQUIRE(gpu.size() == 20);
    REQUIRE(host.size() == 20);
    std::vector<double> measured;
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      CHECK(gpu[i].gpu_us >= expected.second - 0.001);
      measured.push_back(gpu[i].gpu_us);
      // On the host clock the GPU's 150 ppm fast clock gives slightly less.
      CHECK(gpu[i].dur == doctest::Approx(gpu[i].gpu_us / (1 + 150e-6)).epsilon(5e-5));
      CHECK(gpu[i].cat == "gpu");
    }
    std::nth_element(measured.begin(), measured.begin() + 10, measured.end());
    CHECK(measured[10] == doctest::Approx(expected.second).epsilon(1e-6));
  }
  // Placement: an idle stream starts the work at its launch (within a few
  // µs of alignment error); queued work starts when the previous ends.
  for (std::size_t i = 0; i < 20; ++i) {
    CAPTURE(i);
    const auto& h2d = gpu_by_name["h2d"][i];
    const auto& host_h2d = host_slices["h2d"][i];
    CHECK(h2d.ts >= host_h2d.ts);
    CHECK(h2d.ts <= host_h2d.ts + host_h2d.dur + 200);  // generous: sanitizers, qemu
    // kernel_a waits for h2d on the same stream: it starts when h2d ends
    // (float ms from the latest anchor: within ~30 ns), unless the host
    // launched it later than that (slow warm-up, sanitizers), then at its
    // launch.
    const auto& kernel_a = gpu_by_name["kernel_a"][i];
    const auto& host_a = host_slices["kernel_a"][i];
    if (h2d.ts + h2d.dur >= host_a.ts + host_a.dur) {
      CHECK(std::fabs(kernel_a.ts - (h2d.ts + h2d.dur)) < 0.1);
    } else {
      CHECK(kernel_a.ts >= h2d.ts + h2d.dur);
      CHECK(kernel_a.ts >= host_a.ts);
      CHECK(kernel_a.ts <= host_a.ts + host_a.dur + 200);
    }
    const auto& kernel_b = gpu_by_name["kernel_b"][i];
    const auto& host_b = host_slices["kernel_b"][i];
    CHECK(kernel_b.ts >= host_b.ts);
    CHECK(kernel_b.ts <= host_b.ts + host_b.dur + 200);
  }
  // One arrow per GPU span: s on the launching host slice, f on the GPU slice.
  CHECK(flows.size() == 2 * 80);
  std::map<double, std::pair<const json_lite::value*, const json_lite::value*>> by_id;
  for (const json_lite::value* f : flows) (f->find("ph")->str() == "s" ? by_id[(*f)["id"].num()].first : by_id[(*f)["id"].num()].second) = f;
  for (const auto& pair : by_id) {
    REQUIRE(pair.second.first != nullptr);
    REQUIRE(pair.second.second != nullptr);
    const auto& s = *pair.second.first;
    const auto& f = *pair.second.second;
    CHECK(static_cast<std::uint64_t>(s["pid"].num()) == host_pid);
    CHECK(static_cast<std::uint64_t>(s["tid"].num()) == host_tid);
    CHECK(static_cast<std::uint64_t>(f["pid"].num()) == gpu_pid);
    CHECK(f["bp"].str() == "e");
    bool host_match = false, gpu_match = false;
    for (const auto& named_slices : host_slices)
      for (const auto& h : named_slices.second) host_match = host_match || (h.ts == s["ts"].num() && h.cat == s["cat"].str());
    for (const auto& h : gpu_slices[f["tid"].num()]) gpu_match = gpu_match || (h.ts == f["ts"].num() && h.cat == f["cat"].str());
    CHECK(host_match);
    CHECK(gpu_match);
  }
  // The captured launch: a host slice flagged, no GPU slice.
  REQUIRE(host_slices["captured_kernel"].size() == 1);
  CHECK(gpu_by_name["captured_kernel"].empty());
  bool flagged = false;
  for (const auto& e : events.items)
    if (e["name"].str() == "captured_kernel" && e["args"]["cuda_graph"].str() == "captured") flagged = true;
  CHECK(flagged);

  // summary: GPU time next to host time, per name.
  const auto summary = edgetrace_test::run({EDGETRACE_TEST_CLI, "summary", dump, "--format", "json"});
  REQUIRE(summary.exit_code == 0);
  json_lite::value table;
  REQUIRE_MESSAGE(json_lite::parse(summary.out, table, error), error);
  std::map<std::string, const json_lite::value*> rows;
  for (const auto& row : table["rows"].items) rows[row["key"].str()] = &row;
  for (const auto& expected : lengths_us) {
    CAPTURE(expected.first);
    REQUIRE(rows.count(expected.first) == 1);
    const auto& gpu = (*rows[expected.first])["gpu"];
    CHECK(gpu["calls"].num() == 20);
    CHECK(gpu["p50_ns"].num() == doctest::Approx(expected.second * 1000).epsilon(1e-6));
    CHECK(gpu["mean_ns"].num() >= expected.second * 1000 - 1);
    CHECK((*rows[expected.first])["calls"].num() == 20);
  }
  REQUIRE(rows.count("frame") == 1);
  CHECK_FALSE((*rows["frame"]).has("gpu"));

  const auto info = edgetrace_test::run({EDGETRACE_TEST_CLI, "info", dump});
  REQUIRE(info.exit_code == 0);
  CHECK(info.out.find("fake backend, driver 13.0, runtime 13.0, 1 device(s)") != std::string::npos);
  CHECK(info.out.find("gpu status     on") != std::string::npos);
  CHECK(info.out.find("80 resolved, 1 captured") != std::string::npos);
  CHECK(info.out.find("device 0       Fake GPU 0, compute 8.7; alignment:") != std::string::npos);
  const std::size_t drift = info.out.find("drift ");
  REQUIRE(drift != std::string::npos);
  CHECK(std::atof(info.out.c_str() + drift + 6) == doctest::Approx(150).epsilon(0.2));  // wide brackets under qemu
  CHECK(count_lines(info.out, "  0       stream 0x") == 2);
}

}  // namespace gpu_test
