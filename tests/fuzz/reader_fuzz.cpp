// SPDX-License-Identifier: MIT
// libFuzzer target for the dump reader and its outputs. The input
// is written to a memfd (the reader opens paths; a memfd is a regular,
// seekable file reachable as /proc/self/fd/N), then read as a dump: both
// passes (and the GPU pass), Chrome JSON, info, the summary, the CSV and top's follower, to /dev/null. Any crash, hang, sanitizer
// report or unbounded allocation is a bug; see docs/RELIABILITY.md.
//
// Built as reader_fuzz (clang, -fsanitize=fuzzer,address,undefined), which
// also replays tests/fuzz/regressions/* for ctest (libFuzzer runs each file
// it is given once), and, where there is no libFuzzer, as reader_fuzz_replay
// (any compiler, with replay_main.cpp: runs the files it is given).
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/follow.hpp>
#include <edgetrace/sinks/chrome_json/writer.hpp>
#include <edgetrace/sinks/csv/spans.hpp>
#include <edgetrace/sinks/info.hpp>
#include <edgetrace/sinks/summary/format.hpp>
#include <edgetrace/sinks/summary/summary.hpp>
#include <edgetrace/sinks/top.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {
std::FILE* dev_null() {
  static std::FILE* f = std::fopen("/dev/null", "w");
  return f;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("edgetrace-fuzz", 0);
  if (fd < 0) return 0;
  if (::ftruncate(fd, 0) != 0) return 0;
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) return 0;
    done += static_cast<std::size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  {
    edgetrace::reader::dump_reader r;
    // Every pass and sink also runs on a dump whose tick rate is unknown
    // (the tools refuse it; the library must still survive it).
    r.allow_unknown_rate();
    if (r.open(path) && r.read_metadata()) {
      std::uint64_t events = 0;
      r.read_events([&](const edgetrace::reader::event&) { ++events; });
      r.read_events([&](const edgetrace::reader::event&) { --events; });  // a second pass must agree
      if (events != 0) __builtin_trap();
      std::uint64_t gpu_spans = 0;
      r.read_gpu_spans([&](const edgetrace::reader::gpu_span& g) {
        ++gpu_spans;
        if (g.resolved && (g.begin_ns < g.host_begin_ns || g.end_ns < g.begin_ns)) __builtin_trap();
      });
      r.read_gpu_spans([&](const edgetrace::reader::gpu_span&) { --gpu_spans; });
      if (gpu_spans != 0) __builtin_trap();
      for (const auto* t : r.threads_in_order()) (void)t->dropped();
      (void)r.complete();
      (void)r.damaged();
    }
  }
  {
    edgetrace::reader::dump_reader r;
    r.allow_unknown_rate();
    if (r.open(path)) {
      edgetrace::reader::chrome_json_options options;
      options.source_name = "fuzz.etr";
      edgetrace::reader::write_chrome_json(r, dev_null(), options);
    }
  }
  {
    edgetrace::reader::dump_reader r;
    if (r.open(path)) edgetrace::reader::write_info(r, dev_null());
  }
  {
    // The summary: span walk, arguments, flows and memory peaks (1.3).
    edgetrace::reader::dump_reader r;
    r.allow_unknown_rate();
    std::string error;
    edgetrace::reader::summary_builder builder{edgetrace::reader::summary_options{}};
    if (r.open(path) && builder.add(r, error)) {
      const std::string table = edgetrace::reader::summary_table(builder.finish(), "fuzz.etr");
      std::fwrite(table.data(), 1, table.size(), dev_null());
    }
  }
  {
    // The CSV: argument columns from whatever annotations survived, and
    // its sort through temporary files (a small limit makes it spill).
    edgetrace::reader::dump_reader r;
    if (r.open(path)) {
      edgetrace::reader::csv_options options;
      options.sort_memory = 16u << 10;
      edgetrace::reader::write_spans_csv(r, dev_null(), nullptr, nullptr, options);
    }
  }
  {
    // `top --follow`'s incremental reader and its table: two polls (the
    // second finds nothing new) must agree with one.
    edgetrace::reader::dump_follower follower;
    edgetrace::reader::top_window window;
    std::uint64_t spans = 0;
    if (follower.open(path)) {
      auto add = [&](const edgetrace::reader::followed_span& f) {
        ++spans;
        if (f.end_ns < f.begin_ns) __builtin_trap();
        window.add(f.key, *f.name, f.end_ns, static_cast<std::uint64_t>(f.end_ns - f.begin_ns));
      };
      follower.poll(add);
      const std::uint64_t first = spans;
      follower.poll(add);
      if (spans != first) __builtin_trap();
      const std::string table = edgetrace::reader::top_table(window.table(), window.options());
      std::fwrite(table.data(), 1, table.size(), dev_null());
    }
  }
  return 0;
}
