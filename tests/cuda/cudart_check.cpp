// SPDX-License-Identifier: MIT
// ctest driver for GPU spans through the real CUDA runtime (cudart_app):
//   stub     libcuda is the toolkit's stub: one stderr line, host spans go on
//   no-driver  no libcuda at all (skips, exit 77, where a driver is installed)
//   gpu      a real GPU (label cuda; skips, exit 77, without one): GPU spans
//            resolved, on their stream's track, after their launch
//   example  examples/cuda_pipeline.cu on a real GPU (label cuda; skips
//            without one): every step resolved, the capture flagged
// Usage: cudart_check MODE CUDART_APP EDGETRACE_CLI TMPDIR [STUB_DIR | EXAMPLE]
#include <edgetrace/decode/dump_reader.hpp>
#include <support/json_lite.hpp>
#include <support/process.hpp>

#include <cstdio>
#include <string>

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct spans {
  std::size_t host_memset = 0, host_only = 0, gpu_resolved = 0, gpu_after_launch = 0;
  std::string off_reason;
};
spans read(const std::string& dump) {
  spans s;
  edgetrace::reader::dump_reader r;
  if (!r.open(dump) || !r.read_metadata()) return s;
  r.read_events([&](const edgetrace::reader::event& e) {
    if (e.kind != edgetrace::reader::event_kind::span) return;
    s.host_memset += e.site->name == "memset";
    s.host_only += e.site->name == "host_only";
  });
  r.read_gpu_spans([&](const edgetrace::reader::gpu_span& g) {
    if (!g.resolved) return;
    ++s.gpu_resolved;
    s.gpu_after_launch += g.begin_ns >= g.host_begin_ns && !g.placed_at_launch;
  });
  if (!r.writers().empty()) s.off_reason = r.writers().begin()->second.gpu.off_reason;
  return s;
}

/// The CUDA example, 5 frames: 25 GPU steps and 10 graph launches
/// resolved, 2 captured launches.
int check_example(const std::string& example, const std::string& dump, const std::vector<std::string>& env,
                  const std::string& tmp) {
  const auto r = edgetrace_test::run({example, "--frames", "5"}, env, tmp);
  std::printf("exit %d\nstdout:\n%sstderr:\n%s", r.exit_code, r.out.c_str(), r.err.c_str());
  check(r.exit_code == 0 && r.err.empty(), "the example runs cleanly");
  edgetrace::reader::dump_reader reader;
  std::size_t resolved = 0, captured = 0, graphs = 0;
  check(reader.open(dump) && reader.read_gpu_spans([&](const edgetrace::reader::gpu_span& g) {
    resolved += g.resolved;
    captured += (g.flags & edgetrace::format::gpu_span_captured) != 0;
    graphs += g.resolved && g.site != nullptr && g.site->name == "graph";
  }), "the dump reads");
  check(resolved == 35, "35 resolved GPU spans (5 frames x 5 steps + 10 graph launches)");
  check(graphs == 10, "10 graph launches timed");
  check(captured == 2, "2 launches flagged as captured");
  std::printf("%s\n", failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const std::string mode = argv[1], app = argv[2], cli = argv[3], tmp = argv[4];
  const std::string stub_dir = argc > 5 ? argv[5] : "";
  const std::string dump = tmp + "/cudart_" + mode + ".etr";
  const auto probe = edgetrace_test::run({app, "probe"}, {}, tmp);
  const bool gpu_present = probe.out.find("devices=0") == std::string::npos;
  const bool driver_present = probe.out.find("error=35") == std::string::npos;  // cudaErrorInsufficientDriver
  std::vector<std::string> env = {"EDGETRACE_OUTPUT=" + dump};
  if (mode == "stub") {
    env.push_back("LD_LIBRARY_PATH=" + stub_dir);
  } else if (mode == "no-driver") {
    if (driver_present) {
      std::printf("a CUDA driver is installed here (%s): nothing to check\n", probe.out.c_str());
      return 77;
    }
  } else if (mode == "gpu" || mode == "example") {
    if (!gpu_present) {
      std::printf("no usable GPU here (%s): skipped\n", probe.out.c_str());
      return 77;
    }
  } else {
    return 2;
  }
  if (mode == "example") return check_example(stub_dir, dump, env, tmp);
  const auto r = edgetrace_test::run({app, "run"}, env, tmp);
  std::printf("exit %d\nstdout:\n%sstderr:\n%s", r.exit_code, r.out.c_str(), r.err.c_str());
  check(r.exit_code == 0, "the app exits 0");
  const spans s = read(dump);
  check(s.host_memset == 20, "20 host spans of the CUDA scope");
  check(s.host_only == 20, "20 plain host spans after it");
  if (mode == "gpu") {
    check(count(r.err, "edgetrace:") == 0, "no edgetrace line on stderr");
    check(s.gpu_resolved == 20, "20 resolved GPU spans");
    check(s.gpu_after_launch == 20, "every GPU span starts after its launch without being moved there");
    const auto conv = edgetrace_test::run({cli, "json", dump, "-o", tmp + "/cudart_gpu.json"}, {}, tmp);
    json_lite::value root;
    std::string error;
    check(conv.exit_code == 0 && json_lite::parse(edgetrace_test::read_file(tmp + "/cudart_gpu.json"), root, error),
          "edgetrace json converts the dump");
    std::size_t flows = 0;
    for (const auto& e : root["traceEvents"].items) flows += e["ph"].str() == "f";
    check(flows == 20, "20 flow arrows from launches to GPU spans");
  } else {
    const std::string expected = mode == "stub" ? "CUDA unavailable: cudaGetDeviceCount: CUDA driver is a stub library"
                                                : "CUDA unavailable: cudaGetDeviceCount: CUDA driver version is insufficient";
    check(count(r.err, "edgetrace:") == 1, "exactly one edgetrace line on stderr");
    check(count(r.err, expected) == 1, "the line says: " + expected);
    check(count(r.err, "GPU spans are off, host spans continue") == 1, "the line says host spans continue");
    check(s.gpu_resolved == 0, "no GPU span");
    check(s.off_reason.find("CUDA unavailable") == 0, "the dump says why GPU spans are off");
  }
  std::printf("%s\n", failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}
