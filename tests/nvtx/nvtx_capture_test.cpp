// SPDX-License-Identifier: MIT
// NVTX capture (libedgetrace-nvtx.so, tools/nvtx_capture): a program that
// uses NVTX only (nvtx_engine_app) runs with NVTX_INJECTION64_PATH naming
// the library, and its dump holds every range, mark, thread name, domain
// and payload, counted exactly. No GPU or NVIDIA tool needed.
#include <doctest/doctest.h>

#include <support/process.hpp>
#include <support/read_dump.hpp>

#include "nvtx_app_dump.hpp"

#include <edgetrace/decode/span_walker.hpp>

#include <map>
#include <string>
#include <vector>

#include <unistd.h>

using edgetrace_test::load_dump;
using edgetrace_test::run;

namespace {

const std::string engine_app = EDGETRACE_TEST_NVTX_ENGINE_APP;
const std::string capture = EDGETRACE_TEST_NVTX_CAPTURE;
const std::string cli = EDGETRACE_TEST_CLI;
const std::string tmp = edgetrace_test::scratch_dir();
constexpr int iterations = 2000;

/// Per span name: count, and the set of depths and threads it was seen at.
struct span_facts {
  std::size_t count = 0;
  std::map<std::uint32_t, std::size_t> depths;
  std::map<std::string, std::size_t> threads;
  std::map<std::string, std::size_t> categories;
};

std::map<std::string, span_facts> walk(const std::string& path) {
  std::map<std::string, span_facts> facts;
  edgetrace::reader::dump_reader r;
  REQUIRE(edgetrace_test::opened(r, path));
  REQUIRE(edgetrace::reader::walk_spans(
      r,
      [&](const edgetrace::reader::span_record& s) {
        span_facts& f = facts[s.site->name];
        ++f.count;
        ++f.depths[s.depth];
        ++f.threads[s.thread->name];
        ++f.categories[s.site->category];
      },
      [](const edgetrace::reader::event&) {}));
  return facts;
}

}  // namespace

TEST_CASE("nvtx capture: an NVTX-only program's ranges, marks, names and payloads, counted exactly") {
  const std::string dump_path = tmp + "/nvtx_capture.etr";
  ::unlink(dump_path.c_str());
  const auto r = run({engine_app, std::to_string(iterations)},
                     {"NVTX_INJECTION64_PATH=" + capture, "EDGETRACE_OUTPUT=" + dump_path});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());

  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  CHECK_FALSE(dump.damaged);
  const std::size_t per_worker = iterations;
  CHECK(dump.named("frame").size() == 2 * per_worker);
  CHECK(dump.named("layer").size() == 2 * per_worker);
  CHECK(dump.named("post").size() == 2 * per_worker);
  for (int k = 0; k < 10; ++k) CHECK(dump.named("conv_" + std::to_string(k)).size() == 2 * per_worker);
  CHECK(dump.named("tick").size() == 2 * per_worker);
  for (const auto& e : dump.named("tick")) CHECK(e.site_kind == edgetrace::format::site_kind::instant);
  CHECK(dump.named("async").size() == 3);
  CHECK(dump.named("same_thread").size() == 1);
  for (const char* name : {"dyn_0", "dyn_1", "dyn_2"}) CHECK(dump.named(name).size() == 1);
  CHECK(dump.named("left_open").empty());

  // Thread names: one given by the thread itself, one by another thread.
  CHECK(dump.thread_named("main-engine") != nullptr);
  CHECK(dump.thread_named("worker-0") != nullptr);
  CHECK(dump.thread_named("worker-1") != nullptr);

  // Nesting, threads and categories (domains).
  const auto facts = walk(dump_path);
  const auto& frame = facts.at("frame");
  CHECK(frame.depths.size() == 1);
  CHECK(frame.depths.count(0) == 1);
  CHECK(frame.threads.at("worker-0") == per_worker);
  CHECK(frame.threads.at("worker-1") == per_worker);
  CHECK(frame.categories.at("nvtx") == 2 * per_worker);
  CHECK(facts.at("layer").depths.at(1) == 2 * per_worker);
  CHECK(facts.at("layer").categories.at("engine") == 2 * per_worker);
  CHECK(facts.at("conv_3").depths.at(2) == 2 * per_worker);
  CHECK(facts.at("post").depths.at(1) == 2 * per_worker);
  // Start/end ranges (started on main, ended on worker 1, or on one thread)
  // have a track of their own, outside every thread's call stack.
  CHECK(facts.at("async").threads.at("NVTX start/end ranges") == 3);
  CHECK(facts.at("same_thread").threads.at("NVTX start/end ranges") == 1);

  // Payloads: "layer" carries its iteration (int64), conv_0 0.5 (double).
  edgetrace::reader::dump_reader reader;
  REQUIRE(edgetrace_test::opened(reader, dump_path));
  std::size_t ints = 0, reals = 0;
  std::int64_t int_sum = 0;
  for (const auto& a : edgetrace_test::all_annotations(reader)) {
    if (a.site == nullptr || a.site->name != "payload") continue;
    if (a.is_real()) {
      ++reals;
      CHECK(a.real_value() == 0.5);
    } else {
      ++ints;
      int_sum += a.int_value();
    }
  }
  CHECK(ints == 2 * per_worker);
  CHECK(reals == 2 * per_worker);
  CHECK(int_sum == 2 * static_cast<std::int64_t>(per_worker) * (per_worker - 1) / 2);

  // The mistakes are counted, and `info` says them.
  const auto info = run({cli, "info", dump_path});
  CHECK(info.exit_code == 0);
  CHECK(info.out.find("NVTX capture") != std::string::npos);
  CHECK(info.out.find("1 pops without a push") != std::string::npos);
  CHECK(info.out.find("2 ends of a range not started, or ended twice") != std::string::npos);
  CHECK(info.out.find("1 ranges still open at exit") != std::string::npos);
  // `summary --by category` groups by domain.
  const auto summary = run({cli, "summary", dump_path, "--by", "category"});
  CHECK(summary.exit_code == 0);
  CHECK(summary.out.find("engine") != std::string::npos);
}

TEST_CASE("nvtx capture: without EDGETRACE_OUTPUT one line says so and the program runs as before") {
  const auto r = run({engine_app, "10"}, {"NVTX_INJECTION64_PATH=" + capture});
  CHECK(r.exit_code == 0);
  CHECK(edgetrace_test::line_count(r.err) == 1);
  CHECK(r.err.find("EDGETRACE_OUTPUT is not set") != std::string::npos);
}

TEST_CASE("nvtx capture: EDGETRACE_CATEGORIES filters domains like categories") {
  const std::string dump_path = tmp + "/nvtx_capture_filtered.etr";
  ::unlink(dump_path.c_str());
  const auto r = run({engine_app, "50"}, {"NVTX_INJECTION64_PATH=" + capture, "EDGETRACE_OUTPUT=" + dump_path,
                                          "EDGETRACE_CATEGORIES=engine"});
  CHECK(r.exit_code == 0);
  const auto dump = load_dump(dump_path);
  REQUIRE(dump.opened);
  CHECK(dump.named("layer").size() == 100);
  CHECK(dump.named("conv_9").size() == 100);
  CHECK(dump.named("frame").empty());
  CHECK(dump.named("tick").empty());
}

TEST_CASE("nvtx capture: beside an app that traces and forwards to NVTX itself, one runtime and nothing twice") {
  // nvtx_app traces with edgetrace and forwards its scopes to NVTX
  // (EDGETRACE_NVTX=1, domain "edgetrace"): the capture library skips that
  // domain (no loop, no duplicate), records the app's own NVTX range, and
  // shares the app's runtime: the header-only one, or in the presets that
  // link helpers to edgetrace::runtime, the compiled one
  // (libedgetrace-nvtx-separate.so).
  const std::string dump_path = tmp + "/nvtx_capture_beside.etr";
  ::unlink(dump_path.c_str());
  const auto r = run({EDGETRACE_TEST_NVTX_APP}, {"NVTX_INJECTION64_PATH=" + capture, "EDGETRACE_OUTPUT=" + dump_path,
                                                 "EDGETRACE_NVTX=1", "NVTX_APP_OWN_RANGE=1"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto dump = nvtx_app_dump::load(dump_path);
  CHECK(dump.named("ready").size() == 1);
  CHECK(dump.named("own_range").size() == 1);
  CHECK(edgetrace_test::writer_count(dump_path) == 1);
}
