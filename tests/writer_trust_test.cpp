// SPDX-License-Identifier: MIT
// Issue 13, "writer trust": what production does to a traced app, each case
// a real process (tests/support/writer_trust_modes.hpp through trace_app)
// read back with the real reader. docs/RELIABILITY.md links each promise
// to its test here.
#include <doctest/doctest.h>

#include <support/files.hpp>
#include <support/process.hpp>
#include <support/sanitizers.hpp>

#include <edgetrace/reader/dump_reader.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

using edgetrace_test::run;

namespace {
const std::string app = EDGETRACE_TEST_TRACE_APP;
const std::string cli = EDGETRACE_TEST_CLI;
const std::string tmp = EDGETRACE_TEST_TMPDIR;

std::string fresh(const std::string& name) { return edgetrace_test::fresh_file(tmp + "/" + name); }

/// Written and dropped records over every thread of a dump, with the loss
/// the dump shows in-band; the dump must read whole.
struct dump_totals {
  std::uint64_t records = 0, handler_spans = 0, in_band_loss = 0, stats_written = 0, stats_dropped = 0;
};
dump_totals read_totals(const std::string& path) {
  dump_totals totals;
  edgetrace::reader::dump_reader reader;
  REQUIRE(reader.open(path));
  REQUIRE(reader.read_events([&](const edgetrace::reader::event& e) {
    using edgetrace::reader::event_kind;
    if (e.kind == event_kind::loss) totals.in_band_loss += e.count;
    if (e.kind == event_kind::span || e.kind == event_kind::instant) ++totals.records;
    if (e.kind == event_kind::span && e.site != nullptr && e.site->name == "in_handler") ++totals.handler_spans;
  }));
  CHECK(reader.complete());
  CHECK_FALSE(reader.damaged());
  for (const auto* t : reader.threads_in_order()) {
    CHECK(t->has_stats);
    totals.stats_written += t->stats_written;
    totals.stats_dropped += t->stats_dropped;
  }
  return totals;
}
}  // namespace

// ------------------------------------------------------------ signal handlers

// SIGALRM every 20 us records a span and an instant from its handler while
// the interrupted code is inside its own scopes, with 4 KiB rings (so the
// handler also lands in wraps, full rings and a new thread's first record).
// Before: SIGSEGV in push() within 1.3 s, every run.
TEST_CASE("writer trust: spans recorded in a signal handler never crash; every record is written or counted") {
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    const std::string dump_path = fresh("signal-spans.etr");
    const auto r = run({app, "signal-spans", "0.7"}, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_BUFFER_KB=4"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    unsigned long long issued = 0, handler = 0;
    REQUIRE(std::sscanf(r.out.c_str(), "issued %llu handler %llu", &issued, &handler) == 2);
    CHECK(handler > 1000);  // the handler really ran, many times
    const dump_totals totals = read_totals(dump_path);
    CHECK(totals.records == totals.stats_written);
    CHECK(totals.in_band_loss == totals.stats_dropped);  // every drop is also in-band
    CHECK(totals.stats_written + totals.stats_dropped == issued);
    CHECK(totals.handler_spans > 0);
    MESSAGE("round " << round << ": issued " << issued << " (" << handler << " from the handler), written "
                     << totals.stats_written << ", dropped " << totals.stats_dropped);
    ::unlink(dump_path.c_str());
  }
}

// ------------------------------------------------------------ thread churn

namespace {
struct churn_figures {
  long peak_rss_kb = 0;
  double per_thread_us = 0;
};
churn_figures churn(int threads, const std::vector<std::string>& env) {
  const auto r = run({app, "churn", std::to_string(threads)}, env);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  churn_figures f;
  REQUIRE(std::sscanf(r.out.c_str(), "peak_rss_kb=%ld per_thread_us=%lf", &f.peak_rss_kb, &f.per_thread_us) == 2);
  return f;
}
}  // namespace

// 20,000 threads one after another, one alive at a time. Before: 73 MB of
// RSS (183 MB with 16 MiB rings) against 3 MB untraced, and thread start
// 10x slower. Rings now go back to the pool as soon as the flusher has
// drained them; live rings + 2 spares + 2 waiting bound the memory.
TEST_CASE("writer trust: thread churn keeps memory within a few rings of the live threads") {
  const int threads = edgetrace_test::thread_sanitized_build ? 2000 : edgetrace_test::sanitized_build ? 5000 : 20000;
  const churn_figures untraced = churn(threads, {});
  const std::string dump_path = fresh("churn.etr");
  const churn_figures traced = churn(threads, {"EDGETRACE_OUTPUT=" + dump_path, "EDGETRACE_BUFFER_KB=1024"});
  MESSAGE(threads << " threads, 1 MiB rings: peak RSS " << untraced.peak_rss_kb << " kB untraced, "
                  << traced.peak_rss_kb << " kB traced; " << untraced.per_thread_us << " us per thread untraced, "
                  << traced.per_thread_us << " us traced");
  // Main's ring, the live worker's, 2 spares, 2 waiting for the flusher,
  // and 2 more of slack for a flusher that was descheduled: 8 MiB.
  if (!edgetrace_test::sanitized_build) CHECK(traced.peak_rss_kb - untraced.peak_rss_kb <= 8 * 1024);
  if (!edgetrace_test::sanitized_build) CHECK(traced.per_thread_us < 4 * untraced.per_thread_us);
  const dump_totals totals = read_totals(dump_path);
  CHECK(totals.records == static_cast<std::uint64_t>(threads) + 1);
  CHECK(totals.stats_dropped == 0);
  ::unlink(dump_path.c_str());
}
