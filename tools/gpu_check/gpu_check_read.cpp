// SPDX-License-Identifier: MIT
// The judging side of tools/gpu_check.sh: reads a dump that
// edgetrace_gpu_check_app (or examples/cuda_pipeline) wrote, and what the
// app printed of its own measurements, and prints one verdict line per
// check: "PASS|FAIL|NOTE <item>: <what was measured>". Exit 0 when no
// check failed, 1 when one did, 2 on bad usage or an unreadable dump.
//
// usage: edgetrace_gpu_check_read MODE DUMP [APP_OUTPUT | EXPECTED_SPANS]
//   example   DUMP EXPECTED  examples/cuda_pipeline: every GPU span inside
//             [its launch, the end of the next "wait" span of its thread],
//             none overlapping on a stream, EXPECTED resolved
//   accuracy  DUMP APP_OUTPUT  span length against the events' own elapsed
//             time and the kernel's own clock, per kernel length, on an
//             idle stream and queued behind another kernel
//   alignment DUMP APP_OUTPUT  the aligned GPU time of an empty stream's
//             event pair against [launch, the instant after the sync]
//   cost      DUMP APP_OUTPUT  a CUDA scope against a bare event pair, every
//             timed scope resolved (none skipped)
//   load      DUMP APP_OUTPUT  written + dropped = issued, the event pool
//   graph     DUMP APP_OUTPUT  captured scopes flagged, every replay timed
//   nvtx      DUMP APP_OUTPUT  NVTX capture: every frame and layer range of
//             the app's own NVTX calls, one writer, each CUDA scope nested in
//             its layer and its GPU span resolved
//   device    DUMP SMI_VALUES  NVML's tracks in the device samples: each GPU
//             nvidia-smi lists has its load, SM clock, temperature and
//             power, within nvidia-smi's own figures (SMI_VALUES: a line per
//             GPU, "index, clocks.max.sm, temperature.gpu, power.limit",
//             csv without units)
#include <edgetrace/decode/dump_reader.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace rd = edgetrace::reader;

int failed = 0;

void verdict(bool pass, const std::string& item, const std::string& text) {
  std::printf("%s %s: %s\n", pass ? "PASS" : "FAIL", item.c_str(), text.c_str());
  failed += pass ? 0 : 1;
}
void note(const std::string& item, const std::string& text) { std::printf("NOTE %s: %s\n", item.c_str(), text.c_str()); }

std::string us(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", ns / 1000.0);
  return text;
}

/// The value of `key=` in the first line of `lines` that starts with
/// `prefix` (0 when absent).
double app_value(const std::vector<std::string>& lines, const std::string& prefix, const std::string& key) {
  for (const auto& line : lines) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    const auto at = line.find(" " + key + "=");
    if (at != std::string::npos) return std::atof(line.c_str() + at + key.size() + 2);
  }
  return 0;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// Median and worst (largest) of `v`.
std::pair<double, double> median_worst(std::vector<double> v) {
  if (v.empty()) return {0, 0};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.back()};
}

/// A dump read whole: its writer, host spans and instants by name, GPU spans.
struct dump {
  rd::dump_reader reader;
  const rd::writer_info* writer = nullptr;
  std::map<std::string, std::vector<rd::event>> host;  // spans and instants by site name, end order
  std::vector<rd::gpu_span> gpu;

  bool load(const std::string& path) {
    if (!reader.open(path) || !reader.read_metadata() || reader.writers().empty()) {
      std::fprintf(stderr, "gpu_check_read: %s: %s\n", path.c_str(), reader.error().c_str());
      return false;
    }
    writer = &reader.writers().begin()->second;
    reader.read_events([&](const rd::event& e) {
      if (e.site != nullptr && (e.kind == rd::event_kind::span || e.kind == rd::event_kind::instant))
        host[e.site->name].push_back(e);
    });
    reader.read_gpu_spans([&](const rd::gpu_span& g) { gpu.push_back(g); });
    return true;
  }
  std::vector<const rd::gpu_span*> named(const std::string& name, bool resolved_only = true) const {
    std::vector<const rd::gpu_span*> out;
    for (const auto& g : gpu)
      if (g.site != nullptr && g.site->name == name && (g.resolved || !resolved_only)) out.push_back(&g);
    std::sort(out.begin(), out.end(),
              [](const rd::gpu_span* a, const rd::gpu_span* b) { return a->host_begin_ns < b->host_begin_ns; });
    return out;
  }
  /// GPU spans stayed on for the whole run.
  void stayed_on(const std::string& item) const {
    const std::string& off = writer->gpu.off_reason;
    if (!writer->gpu.present) verdict(false, item, "the dump holds no GPU record: the app made no GPU scope");
    else verdict(off.empty(), item, off.empty() ? "GPU spans stayed on" : "GPU spans went off: " + off);
  }
};

/// Item 2: examples/cuda_pipeline.
int example(const dump& d, std::uint64_t expected) {
  const auto& waits = d.host.count("wait") != 0 ? d.host.at("wait") : std::vector<rd::event>{};
  std::size_t resolved = 0, outside = 0, moved = 0, overlaps = 0;
  double worst_move = 0;
  std::map<const rd::gpu_stream_info*, std::vector<const rd::gpu_span*>> by_stream;
  for (const auto& g : d.gpu) {
    if (!g.resolved) continue;
    ++resolved;
    by_stream[g.stream].push_back(&g);
    // The first "wait" of the launching thread that ends after the launch.
    std::int64_t sync_end = INT64_MAX;
    for (const auto& w : waits)
      if (w.thread == g.thread && w.end_ns >= g.host_end_ns) sync_end = std::min(sync_end, w.end_ns);
    outside += g.begin_ns < g.host_begin_ns || g.end_ns > sync_end;
    // (Back-to-back spans are 1 ns apart by design: not a move.)
    if (g.placed_at_launch || std::llabs(g.begin_ns - g.aligned_begin_ns) > 1) {
      ++moved;
      worst_move = std::max(worst_move, std::fabs(static_cast<double>(g.begin_ns - g.aligned_begin_ns)));
    }
  }
  for (auto& s : by_stream) {
    std::sort(s.second.begin(), s.second.end(),
              [](const rd::gpu_span* a, const rd::gpu_span* b) { return a->begin_ns < b->begin_ns; });
    for (std::size_t i = 1; i < s.second.size(); ++i) overlaps += s.second[i]->begin_ns < s.second[i - 1]->end_ns;
  }
  const auto& gpu = d.writer->gpu;
  d.stayed_on("2 example");
  verdict(resolved == expected && gpu.launches == expected + gpu.captured, "2 example count",
          std::to_string(resolved) + " resolved GPU spans, " + std::to_string(expected) + " launches timed; " +
              std::to_string(gpu.captured) + " captured, " + std::to_string(gpu.unresolved) + " unresolved");
  verdict(outside == 0, "2 example inside",
          std::to_string(outside) + " of " + std::to_string(resolved) +
              " GPU spans outside [launch, end of the next wait]");
  verdict(worst_move <= 2000, "2 example moved",
          std::to_string(moved) + " starts moved by the reader (to the launch or past the previous span), at most " +
              us(worst_move));
  verdict(overlaps == 0, "2 example overlap",
          std::to_string(overlaps) + " overlaps between GPU spans of one stream (" + std::to_string(by_stream.size()) +
              " streams)");
  return 0;
}

/// Item 3: span length against the events and the kernel's clock. The
/// events are what a span can be held to (its two events, exactly); the
/// kernel's clock holds it to the kernel alone where the stream was busy
/// (queued: the start event completes as the kernel before it ends, just
/// before this one starts). On an idle stream the start event completes
/// while the host is still submitting the launch: that gap is part of the
/// span, and is reported, not judged.
void accuracy(const dump& d, const std::vector<std::string>& app) {
  // (target, queued) -> (kernel ns, events ns) per span, in run order
  std::map<std::pair<long long, int>, std::vector<std::pair<double, double>>> measured;
  for (const auto& line : app) {
    long long target = 0;
    int queued = 0;
    unsigned long long kernel = 0;
    double events = 0;
    if (std::sscanf(line.c_str(), "span target_ns=%lld queued=%d kernel_ns=%llu events_ns=%lf", &target, &queued,
                    &kernel, &events) == 4)
      measured[{target, queued}].push_back({static_cast<double>(kernel), events});
  }
  struct site_info {
    long long target;
    int queued;
    const char* name;
  };
  const site_info sites[] = {{10000, 0, "spin_10us"},          {10000, 1, "spin_10us_queued"},
                             {100000, 0, "spin_100us"},        {100000, 1, "spin_100us_queued"},
                             {1000000, 0, "spin_1ms"},         {1000000, 1, "spin_1ms_queued"}};
  d.stayed_on("3 accuracy");
  for (const auto& site : sites) {
    const auto spans = d.named(site.name);
    const auto& own = measured[{site.target, site.queued}];
    const std::string item = std::string("3 accuracy ") + site.name;
    if (spans.size() != own.size() || spans.empty()) {
      verdict(false, item, std::to_string(spans.size()) + " resolved spans, " + std::to_string(own.size()) +
                               " measured by the app");
      continue;
    }
    std::vector<double> vs_events, vs_kernel, bias;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const double length = static_cast<double>(spans[i]->end_ns - spans[i]->begin_ns);
      vs_events.push_back(std::fabs(length - own[i].second));
      vs_kernel.push_back(std::fabs(length - own[i].first));
      bias.push_back(length - own[i].first);
    }
    const double bound = 1000 + 0.01 * static_cast<double>(site.target);
    const auto e = median_worst(vs_events), k = median_worst(vs_kernel), b = median_worst(bias);
    verdict(e.second <= bound, item + " vs events",
            "|span - cudaEventElapsedTime| median " + us(e.first) + ", worst " + us(e.second) + " (bound " +
                us(bound) + ", " + std::to_string(spans.size()) + " spans)");
    const std::string kernel = "|span - kernel's %globaltimer| median " + us(k.first) + ", worst " + us(k.second) +
                               "; span - kernel median " + us(b.first);
    if (site.queued != 0)
      verdict(k.second <= bound, item + " vs kernel clock", kernel + " (bound " + us(bound) + ")");
    else
      note(item + " vs kernel clock", kernel + " (idle stream: the span includes the launch's submission)");
  }
}

/// Item 5: a CUDA scope against a bare cudaEventRecord pair, every timed
/// scope with its events (a skipped scope costs less and would flatter the
/// ratio), and the host-only scope against the floor.
void cost(const dump& d, const std::vector<std::string>& app) {
  const double ratio = app_value(app, "cost rounds", "ratio");
  const auto scopes = static_cast<std::uint64_t>(app_value(app, "cost scopes", "scopes"));
  const auto& g = d.writer->gpu;
  d.stayed_on("5 cost");
  verdict(scopes != 0 && g.skipped == 0 && g.unresolved == 0 && g.resolved == scopes, "5 cost timed",
          std::to_string(g.resolved) + " of " + std::to_string(scopes) + " scopes resolved, " +
              std::to_string(g.skipped) + " skipped, " + std::to_string(g.unresolved) + " unresolved");
  char text[160];
  std::snprintf(text, sizeof text, "bare pair %.1f ns, CUDA scope %.1f ns: ratio %.3f, worst round %.3f (bound 1.2)",
                app_value(app, "cost rounds", "bare_pair_ns"), app_value(app, "cost rounds", "cuda_scope_ns"), ratio,
                app_value(app, "cost rounds", "ratio_worst"));
  verdict(ratio > 0 && ratio <= 1.2, "5 cost", text);
  std::snprintf(text, sizeof text, "floor %.2f ns, host-only scope %.2f ns: ratio %.3f",
                app_value(app, "cost floor_ns", "floor_ns"), app_value(app, "cost floor_ns", "host_scope_ns"),
                app_value(app, "cost floor_ns", "host_ratio"));
  note("5 cost host", text);
}

/// Item 4: an empty stream's event pair against [launch, after the sync].
void alignment(const dump& d) {
  const auto spans = d.named("empty");
  const auto& synced = d.host.count("synced") != 0 ? d.host.at("synced") : std::vector<rd::event>{};
  std::vector<double> error, window, position;
  std::size_t placed = 0;
  for (const rd::gpu_span* g : spans) {
    std::int64_t after = INT64_MAX;
    for (const auto& s : synced)
      if (s.thread == g->thread && s.begin_ns >= g->host_end_ns) after = std::min(after, s.begin_ns);
    if (after == INT64_MAX) continue;
    const std::int64_t begin = g->aligned_begin_ns, end = begin + static_cast<std::int64_t>(g->gpu_duration_ns);
    const std::int64_t early = g->host_begin_ns - begin, late = end - after;
    error.push_back(static_cast<double>(std::max<std::int64_t>({0, early, late})));
    window.push_back(static_cast<double>(after - g->host_begin_ns));
    position.push_back(static_cast<double>(begin - g->host_begin_ns));
    placed += g->placed_at_launch;
  }
  d.stayed_on("4 alignment");
  const auto e = median_worst(error), w = median_worst(window), p = median_worst(position);
  verdict(!error.empty() && e.second <= 2000, "4 alignment",
          "GPU time outside [launch, host time after the sync]: median " + us(e.first) + ", worst " + us(e.second) +
              " (bound 2 us, " + std::to_string(error.size()) + " spans, " + std::to_string(placed) +
              " moved to their launch); window median " + us(w.first) + ", GPU start after launch median " +
              us(p.first));
}

/// Item 6: 8 threads x 4 streams of scopes, nothing lost.
void load(const dump& d, const std::vector<std::string>& app) {
  const auto issued = static_cast<std::uint64_t>(app_value(app, "load", "issued"));
  const auto rss_kb = static_cast<std::uint64_t>(app_value(app, "load", "max_rss_kb"));
  const auto& g = d.writer->gpu;
  std::uint64_t host_spans = d.host.count("load") != 0 ? d.host.at("load").size() : 0;
  const std::uint64_t dropped = g.skipped + g.unresolved;
  d.stayed_on("6 load");
  verdict(issued != 0 && g.launches + g.skipped == issued && host_spans == issued, "6 load accounted",
          std::to_string(issued) + " issued: " + std::to_string(g.launches) + " GPU spans written (" +
              std::to_string(g.resolved) + " resolved) + " + std::to_string(g.skipped) + " skipped; " +
              std::to_string(host_spans) + " host spans");
  const std::string why = g.has_skip_reasons ? " (" + std::to_string(g.skipped - g.skipped_no_pair) +
                                                  " hand-off queue full, " + std::to_string(g.skipped_no_pair) +
                                                  " every event pair in flight)"
                                            : " (hand-off queue full or every pair in flight)";
  verdict(dropped == 0, "6 load lost",
          std::to_string(g.skipped) + " skipped" + why + ", " + std::to_string(g.unresolved) + " unresolved");
  verdict(g.event_pairs <= 8u * 4096u, "6 load pool",
          std::to_string(g.event_pairs) + " event pairs created (high-water; bound 8 threads x 4096), app max RSS " +
              std::to_string(rss_kb / 1024) + " MiB");
  const double flusher_ms = app_value(app, "load", "flusher_cpu_ms");
  if (flusher_ms > 0 && g.resolved != 0) {  // 0: no schedstat, or no flusher thread found
    char text[160];
    std::snprintf(text, sizeof text, "the flusher's CPU %.0f ms for %llu resolved spans: %.2f us a span", flusher_ms,
                  static_cast<unsigned long long>(g.resolved), flusher_ms * 1000.0 / static_cast<double>(g.resolved));
    note("6 load flusher", text);
  }
}

/// Item 10: NVTX capture around GPU work.
void nvtx(dump& d, const std::vector<std::string>& app) {
  const auto frames = static_cast<std::uint64_t>(app_value(app, "nvtx", "frames"));
  auto count = [&d](const std::string& name) -> std::uint64_t {
    return d.host.count(name) != 0 ? d.host.at(name).size() : 0;
  };
  const std::uint64_t layers = count("nvtx_layer_0") + count("nvtx_layer_1") + count("nvtx_layer_2");
  verdict(frames != 0 && count("nvtx_frame") == frames && layers == 3 * frames, "10 nvtx ranges",
          std::to_string(count("nvtx_frame")) + " frames and " + std::to_string(layers) + " layers captured of " +
              std::to_string(frames) + " and " + std::to_string(3 * frames));
  verdict(d.reader.writers().size() == 1, "10 nvtx one writer",
          std::to_string(d.reader.writers().size()) + " writer(s): the library shares the app's runtime");
  // Each CUDA scope lies inside a layer range of its thread.
  std::uint64_t inside = 0;
  const auto& kernels = d.host["nvtx_kernel"];
  for (const auto& k : kernels) {
    bool found = false;
    for (const char* layer : {"nvtx_layer_0", "nvtx_layer_1", "nvtx_layer_2"})
      for (const auto& l : d.host[layer])
        found = found || (l.thread == k.thread && l.begin_ns <= k.begin_ns && k.end_ns <= l.end_ns);
    inside += found ? 1 : 0;
  }
  verdict(!kernels.empty() && inside == kernels.size(), "10 nvtx nesting",
          std::to_string(inside) + " of " + std::to_string(kernels.size()) + " CUDA scopes inside their layer range");
  verdict(d.named("nvtx_kernel").size() == 3 * frames, "10 nvtx gpu spans",
          std::to_string(d.named("nvtx_kernel").size()) + " GPU spans resolved of " + std::to_string(3 * frames));
}

/// Item 7: captured scopes and graph replays.
void graph(const dump& d, const std::vector<std::string>& app) {
  const auto replays = static_cast<std::uint64_t>(app_value(app, "graph", "replays"));
  const auto runs = static_cast<std::uint64_t>(app_value(app, "graph", "kernel_runs"));
  const auto expected = static_cast<std::uint64_t>(app_value(app, "graph", "expected"));
  std::uint64_t flagged = 0;
  for (const rd::gpu_span* g : d.named("in_capture", false)) flagged += (g->flags & edgetrace::format::gpu_span_captured) != 0;
  const auto timed = d.named("replay").size();
  d.stayed_on("7 graph");
  verdict(runs == expected && expected != 0, "7 graph runs",
          std::to_string(runs) + " kernel runs seen by the device, " + std::to_string(expected) + " expected");
  verdict(flagged == 3 && d.writer->gpu.captured == 3, "7 graph captured",
          std::to_string(flagged) + " scopes inside the capture flagged captured (3 expected), nothing added to the graph");
  verdict(timed == replays && replays != 0, "7 graph replays",
          std::to_string(timed) + " of " + std::to_string(replays) + " replays timed, " +
              std::to_string(d.writer->gpu.unresolved) + " unresolved");
}

}  // namespace

/// Check 9: what NVML said while the app ran, against nvidia-smi.
void device(const dump& d, const std::vector<std::string>& smi_lines) {
  namespace fmt = edgetrace::format;
  std::vector<std::string> smi;
  for (const std::string& line : smi_lines)
    if (line.find(',') != std::string::npos) smi.push_back(line);
  const rd::writer_device& dev = d.writer->device;
  for (const rd::device_missing& m : dev.missing)
    if (m.name == "NVML") verdict(false, "9 device nvml", "not sampled: " + m.why);
  struct gpu_reading {
    const rd::device_track* track[4] = {};  // load, SM clock, temperature, power
    std::int64_t low[4] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX}, high[4] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
    std::size_t count[4] = {};
  };
  const fmt::device_quantity order[4] = {fmt::device_quantity::gpu_load_permille, fmt::device_quantity::gpu_hz,
                                         fmt::device_quantity::temperature_mc, fmt::device_quantity::power_mw};
  std::map<std::uint64_t, gpu_reading> gpus;
  for (const rd::device_track& t : dev.tracks)
    for (int k = 0; k < 4; ++k)
      if (t.source == "NVML" && t.quantity == order[k]) gpus[t.index].track[k] = &t;
  for (const rd::device_sample& s : dev.samples) {
    const rd::device_track& t = dev.tracks[s.track];
    if (t.source != "NVML") continue;
    gpu_reading& g = gpus[t.index];
    for (int k = 0; k < 4; ++k)
      if (g.track[k] == &t) {
        g.low[k] = std::min(g.low[k], s.value);
        g.high[k] = std::max(g.high[k], s.value);
        ++g.count[k];
      }
  }
  verdict(!gpus.empty() && gpus.size() == smi.size(), "9 device gpus",
          std::to_string(gpus.size()) + " GPU(s) sampled through NVML, nvidia-smi lists " + std::to_string(smi.size()) +
              "; " + std::to_string(dev.samples_taken) + " samples every " + std::to_string(dev.period_us / 1000) + " ms");
  for (const std::string& line : smi) {
    std::istringstream in(line);
    std::string field[4];
    for (std::string& f : field) std::getline(in, f, ',');
    const std::uint64_t index = std::strtoull(field[0].c_str(), nullptr, 10);
    const double max_mhz = std::atof(field[1].c_str()), celsius = std::atof(field[2].c_str()),
                 limit_w = std::atof(field[3].c_str());
    const auto found = gpus.find(index);
    const std::string item = "9 device gpu" + std::to_string(index);
    if (found == gpus.end()) {
      verdict(false, item, "no NVML track");
      continue;
    }
    const gpu_reading& g = found->second;
    bool all = true;
    for (int k = 0; k < 4; ++k) all = all && g.track[k] != nullptr && g.count[k] > 0;
    if (!all) {
      verdict(false, item, "a quantity has no track or no value (load, SM clock, temperature, power)");
      continue;
    }
    char text[400];
    std::snprintf(text, sizeof text, "load %.0f..%.0f %%, SM clock %.0f..%.0f MHz (maximum %.0f, nvidia-smi %.0f)",
                  g.low[0] / 10.0, g.high[0] / 10.0, g.low[1] / 1e6, g.high[1] / 1e6, g.track[1]->maximum / 1e6, max_mhz);
    verdict(g.low[0] >= 0 && g.high[0] <= 1000 && g.high[0] > 0 && g.low[1] > 0 &&
                g.high[1] <= g.track[1]->maximum && std::fabs(g.track[1]->maximum / 1e6 - max_mhz) <= 1,
            item + " load and clock", text);
    std::snprintf(text, sizeof text, "temperature %.1f..%.1f C (nvidia-smi after the run: %.0f), power %.1f..%.1f W (limit %.0f)",
                  g.low[2] / 1000.0, g.high[2] / 1000.0, celsius, g.low[3] / 1000.0, g.high[3] / 1000.0, limit_w);
    verdict(std::fabs(g.high[2] / 1000.0 - celsius) <= 15 && g.low[3] > 0 && g.high[3] / 1000.0 <= limit_w * 1.25,
            item + " temperature and power", text);
  }
  if (dev.samples_taken > 0)
    note("9 device cost", "the flusher's CPU per sample " + us(static_cast<double>(dev.cpu_ns) / static_cast<double>(dev.samples_taken)) +
                              ", " + std::to_string(dev.ignored) + " values ignored");
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: edgetrace_gpu_check_read example|accuracy|alignment|cost|load|graph|device|nvtx DUMP APP_OUTPUT|EXPECTED|SMI_VALUES\n");
    return 2;
  }
  const std::string mode = argv[1];
  dump d;
  if (!d.load(argv[2])) return 2;
  const auto app = read_lines(argv[3]);
  std::size_t cuda_errors = 0;
  for (const auto& line : app)
    if (line.compare(0, 11, "cuda_error ") == 0 && cuda_errors++ == 0) verdict(false, mode + " cuda", line.substr(11));
  if (cuda_errors > 1) note(mode + " cuda", std::to_string(cuda_errors) + " failed CUDA calls of the app's own in all");
  if (mode == "example") example(d, std::strtoull(argv[3], nullptr, 10));
  else if (mode == "accuracy") accuracy(d, app);
  else if (mode == "alignment") alignment(d);
  else if (mode == "cost") cost(d, app);
  else if (mode == "load") load(d, app);
  else if (mode == "graph") graph(d, app);
  else if (mode == "device") device(d, app);
  else if (mode == "nvtx") nvtx(d, app);
  else {
    std::fprintf(stderr, "gpu_check_read: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  note(mode, "gpu backend " + d.writer->gpu.backend + ", driver " + std::to_string(d.writer->gpu.driver_version) +
                 ", runtime " + std::to_string(d.writer->gpu.runtime_version));
  return failed == 0 ? 0 : 1;
}
