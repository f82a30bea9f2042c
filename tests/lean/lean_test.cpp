// SPDX-License-Identifier: MIT
// Lean-build check without doctest: records spans, named spans, counters and
// marks on four threads, then reads the dump back with the reader and checks
// every count. Builds under -fno-exceptions -fno-rtti -static etc.
//
//   lean_test record            (EDGETRACE_OUTPUT set by ctest)
//   lean_test check DUMP        exact counts; with drops (tiny rings), that
//                               decoded + dropped == recorded, nothing silent
//   lean_test check-none DUMP   the EDGETRACE_ENABLED=0 build wrote no file
//   lean_test expect DUMP NAME N  a complete, undamaged dump with N spans NAME
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/edgetrace.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

EDGETRACE_CATEGORY(lean);

namespace {

constexpr int thread_count = 4;   // main + 3 workers
constexpr int iterations = 300;
constexpr int mark_every = 100;

#if defined(EDGETRACE_LEAN_WITH_DSO)
constexpr std::uint64_t dso_spans_expected = 10;  // recorded by the shared library
#else
constexpr std::uint64_t dso_spans_expected = 0;
#endif

int failures = 0;
#define LEAN_CHECK(cond, ...)                                             \
  do {                                                                    \
    if (!(cond)) {                                                        \
      ++failures;                                                         \
      std::fprintf(stderr, "lean_test: FAILED %s (line %d): ", #cond, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                  \
      std::fputc('\n', stderr);                                           \
    }                                                                     \
  } while (false)

// Defined in lean_dso.cpp, a shared library, when the build has one.
#if defined(EDGETRACE_LEAN_WITH_DSO)
extern "C" int lean_dso_work(int n);
#endif

long work(edgetrace::name_handle layer, int n) {
  long sum = 0;
  for (int i = 0; i < iterations; ++i) {
    EDGETRACE_SCOPE(lean, "outer");
    {
      EDGETRACE_SCOPE_NAMED(lean, layer);
      for (int k = 0; k < n; ++k) sum += (k ^ i) & 7;
    }
    EDGETRACE_COUNTER(lean, "sum", sum);
    if ((i + 1) % mark_every == 0) EDGETRACE_MARK(lean, "frame");
  }
  return sum;
}

int record() {
  const edgetrace::name_handle layer = edgetrace::intern("inner_layer");
  EDGETRACE_THREAD_NAME("worker-0");
  std::vector<std::thread> workers;
  long sums[thread_count] = {};
  for (int t = 1; t < thread_count; ++t)
    workers.emplace_back([t, layer, &sums] {
      char name[16];
      std::snprintf(name, sizeof name, "worker-%d", t);
      EDGETRACE_THREAD_NAME(name);
      sums[t] = work(layer, 200);
    });
  sums[0] = work(layer, 200);
  for (auto& w : workers) w.join();
#if defined(EDGETRACE_LEAN_WITH_DSO)
  // On a thread of its own, whose ring never fills, so the count is exact.
  std::thread([] {
    EDGETRACE_THREAD_NAME("dso");
    LEAN_CHECK(lean_dso_work(static_cast<int>(dso_spans_expected)) >= 0, "dso");
  }).join();
#endif
  long total = 0;
  for (long s : sums) total += s;
  std::printf("lean_test: recorded (tracing %s), checksum %ld\n", edgetrace::tracing_active() ? "on" : "off", total);
  return 0;
}

struct per_thread {
  std::uint64_t outer = 0, inner = 0, sums = 0, frames = 0, dso = 0, lost = 0;
};

int check(const char* path) {
  edgetrace::reader::dump_reader reader;
  if (!reader.open(path)) {
    std::fprintf(stderr, "lean_test: %s: %s\n", path, reader.error().c_str());
    return 1;
  }
  std::map<std::string, per_thread> threads;
  reader.read_events([&](const edgetrace::reader::event& e) {
    per_thread& t = threads[e.thread != nullptr ? e.thread->name : std::string("?")];
    if (e.kind == edgetrace::reader::event_kind::loss) {
      t.lost += e.count;
      return;
    }
    const std::string& name = e.site->name;
    if (name == "outer") ++t.outer;
    else if (name == "inner_layer") ++t.inner;
    else if (name == "sum") ++t.sums;
    else if (name == "frame") ++t.frames;
    else if (name == "dso_span") ++t.dso;
  });
  // In-band loss records, or the thread's final stats when larger (a
  // thread still running at exit reports its last drops there).
  for (const edgetrace::reader::thread_info* t : reader.threads_in_order()) {
    per_thread& c = threads[t->name];
    if (t->dropped() > c.lost) c.lost = t->dropped();
  }
  for (const auto& d : reader.diagnostics()) std::fprintf(stderr, "lean_test: reader: %s\n", d.message.c_str());
  LEAN_CHECK(reader.complete(), "the dump has no end chunk");
  LEAN_CHECK(!reader.damaged(), "the reader reports damage");
  std::uint64_t dropped_total = 0;
  for (int t = 0; t < thread_count; ++t) {
    char name[16];
    std::snprintf(name, sizeof name, "worker-%d", t);
    const per_thread& c = threads[name];
    const std::uint64_t expected = 3u * iterations + iterations / mark_every;  // outer, inner, counter, marks
    const std::uint64_t decoded = c.outer + c.inner + c.sums + c.frames;
    std::printf("lean_test: %s: %llu outer, %llu inner, %llu counters, %llu marks, %llu lost\n", name,
                static_cast<unsigned long long>(c.outer), static_cast<unsigned long long>(c.inner),
                static_cast<unsigned long long>(c.sums), static_cast<unsigned long long>(c.frames),
                static_cast<unsigned long long>(c.lost));
    dropped_total += c.lost;
    if (c.lost == 0) {
      LEAN_CHECK(c.outer == iterations && c.inner == iterations && c.sums == iterations &&
                     c.frames == iterations / mark_every,
                 "%s: wrong counts", name);
    } else {
      LEAN_CHECK(decoded + c.lost == expected, "%s: %llu decoded + %llu lost != %llu recorded", name,
                 static_cast<unsigned long long>(decoded), static_cast<unsigned long long>(c.lost),
                 static_cast<unsigned long long>(expected));
    }
  }
#if defined(EDGETRACE_LEAN_WITH_DSO)
  std::uint64_t dso = 0;  // any thread: a DSO with its own runtime copy names threads itself
  for (const auto& t : threads) dso += t.second.dso;
  LEAN_CHECK(dso == dso_spans_expected, "%llu spans from the shared library, expected %llu",
             static_cast<unsigned long long>(dso), static_cast<unsigned long long>(dso_spans_expected));
#endif
  std::printf("lean_test: %s: %s (%llu records dropped in all)\n", path, failures == 0 ? "ok" : "FAILED",
              static_cast<unsigned long long>(dropped_total));
  return failures == 0 ? 0 : 1;
}

int expect(const char* path, const char* name, unsigned long long wanted) {
  edgetrace::reader::dump_reader reader;
  if (!reader.open(path)) {
    std::fprintf(stderr, "lean_test: %s: %s\n", path, reader.error().c_str());
    return 1;
  }
  unsigned long long found = 0;
  reader.read_events([&](const edgetrace::reader::event& e) {
    if (e.kind == edgetrace::reader::event_kind::span && e.site->name == name) ++found;
  });
  LEAN_CHECK(reader.complete() && !reader.damaged(), "%s: incomplete or damaged", path);
  LEAN_CHECK(found == wanted, "%s: %llu spans '%s', expected %llu", path, found, name, wanted);
  std::printf("lean_test: %s: %llu spans '%s'\n", path, found, name);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "record") == 0) return record();
  if (argc == 3 && std::strcmp(argv[1], "check") == 0) return check(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "check-none") == 0) {
    struct stat st;
    const bool exists = ::stat(argv[2], &st) == 0;
    LEAN_CHECK(!exists, "%s exists: a compiled-out build must not write a dump", argv[2]);
    return failures == 0 ? 0 : 1;
  }
  if (argc == 5 && std::strcmp(argv[1], "expect") == 0) return expect(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10));
  std::fprintf(stderr, "usage: lean_test record | check DUMP | check-none DUMP | expect DUMP NAME COUNT\n");
  return 2;
}
