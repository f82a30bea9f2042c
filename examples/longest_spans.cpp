// SPDX-License-Identifier: MIT
// A tool written on the reader: the longest spans of a dump (README.md, "Reading dumps in your own tools").
#include <edgetrace/decode/dump_reader.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace er = edgetrace::reader;

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: longest_spans DUMP.etr [COUNT]  (the COUNT longest spans, 10 by default)\n");
    return 2;
  }
  const char* path = argv[1];
  char* end = nullptr;
  const long count = argc == 3 ? std::strtol(argv[2], &end, 10) : 10;
  if (argc == 3 && (end == argv[2] || *end != '\0' || count < 1)) {
    std::fprintf(stderr, "longest_spans: error: COUNT must be a number of at least 1, not '%s'\n", argv[2]);
    return 2;
  }

  er::dump_reader r;
  if (!r.open(path) || !r.read_metadata()) {
    std::fprintf(stderr, "longest_spans: error: %s: %s\n", path, r.error().c_str());
    return 1;
  }
  std::vector<er::event> spans;
  const bool read = r.read_events([&spans](const er::event& e) {
    if (e.kind == er::event_kind::span && e.site != nullptr) spans.push_back(e);
  });
  if (!read) {
    std::fprintf(stderr, "longest_spans: error: %s: %s\n", path, r.error().c_str());
    return 1;
  }
  const auto longer = [](const er::event& a, const er::event& b) { return a.end_ns - a.begin_ns > b.end_ns - b.begin_ns; };
  const std::size_t shown = std::min(spans.size(), static_cast<std::size_t>(count));
  std::partial_sort(spans.begin(), spans.begin() + static_cast<std::ptrdiff_t>(shown), spans.end(), longer);
  std::printf("%12s  %-24s %s\n", "duration us", "thread", "span");
  for (std::size_t i = 0; i < shown; ++i) {
    const er::event& e = spans[i];
    const std::string thread = e.thread->name.empty() ? std::to_string(e.thread->os_tid) : e.thread->name;
    std::printf("%12.1f  %-24s %s/%s\n", static_cast<double>(e.end_ns - e.begin_ns) / 1000.0, thread.c_str(),
                e.site->category.c_str(), e.site->name.c_str());
  }
  if (r.damaged()) std::fprintf(stderr, "longest_spans: %s is damaged: `edgetrace info` says where\n", path);
  return 0;
}
