// SPDX-License-Identifier: MIT
// The `edgetrace top` subcommand: the hottest spans of a recent window, once or following a live dump.
#include "cli.hpp"

#include <edgetrace/decode/follow.hpp>
#include <edgetrace/sinks/latency.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/format.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>
#include <edgetrace/sinks/top.hpp>
#include <csignal>
#include <chrono>
#include <ctime>
#include <thread>
#include <algorithm>
#include <string>

namespace edgetrace_cli {

namespace {

/// Seconds for --window and --interval: "5", "2.5", or a duration with a
/// unit ("500ms"); more than 0 and at most a day.
bool parse_seconds(const std::string& text, std::uint64_t& ns) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size()) {
    if (!(v > 0) || v > 86400) return false;
    ns = static_cast<std::uint64_t>(v * 1e9);
    return ns != 0;
  }
  return et::parse_duration(text, ns) && ns != 0 && ns <= 86400000000000ull;
}

/// Set by SIGINT or SIGTERM: `top --follow` stops after the refresh under way.
volatile std::sig_atomic_t stop_following = 0;
extern "C" void on_stop_signal(int) { stop_following = 1; }

/// `top --follow` marks the table stale after this long without new data.
constexpr double stale_after_seconds = 5.0;
/// ... and ends, its writer's process gone, after this long without new data.
constexpr double gone_after_seconds = 3.0;

/// `top --follow`: polls the dump and redraws until its writer ends, its
/// process is gone, or a signal stops it.
int follow_top(const std::string& dump, const et::top_options& options, std::uint64_t interval_ns) {
  et::dump_follower follower;
  if (!follower.open(dump)) return input_error(dump, follower.error());
  struct sigaction action {};
  action.sa_handler = on_stop_signal;  // no SA_RESTART: the sleep below ends at once
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  const bool terminal = ::isatty(1) == 1;
  et::top_window window(options);
  std::uint64_t spans = 0;
  for (;;) {
    const bool polled = follower.poll([&](const et::followed_span& s) {
      const bool iteration = !options.per.empty() && *s.name == options.per;
      if (s.mark) {
        if (iteration) window.add_iteration_mark(std::uint64_t{s.writer} << 40 ^ s.thread_id, s.end_ns);
        return;
      }
      ++spans;
      window.add(s.key, *s.name, s.end_ns, static_cast<std::uint64_t>(s.end_ns - s.begin_ns));
      if (iteration) window.add_iteration_span(s.end_ns, static_cast<std::uint64_t>(s.end_ns - s.begin_ns));
    });
    if (!polled) return input_error(dump, follower.error());
    const bool done = follower.finished();
    // A writer killed (kill -9) or crashed writes no end record: its table
    // would be redrawn forever as if live. Gone: say so and end. Quiet
    // for longer than a live writer ever is (its calibration chunk comes
    // every second): mark the table stale, and go on (a stopped process
    // may resume).
    const double quiet = follower.seconds_without_data();
    // Only after a quiet spell: a writer in another pid namespace (a
    // container writing to a shared folder) has a pid that this machine
    // may not know, but its file grows every second.
    const std::uint64_t gone = done || quiet < gone_after_seconds ? 0 : follower.gone_writer();
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char clock[16];
    std::strftime(clock, sizeof clock, "%H:%M:%S", &tm);
    // A pipe gets "== ... ==" lines that separate one refresh from the
    // next; a terminal, redrawn in place, a plain status line.
    std::string head = (terminal ? std::string() : std::string("== ")) + clock + " UTC " + dump + ": " +
                       std::to_string(spans) + " span(s) read";
    if (follower.restarts() != 0) head += ", file restarted " + std::to_string(follower.restarts()) + " time(s)";
    if (follower.bytes_skipped() != 0) head += ", " + std::to_string(follower.bytes_skipped()) + " corrupt bytes skipped";
    if (done)
      head += ", writer finished";
    else if (gone != 0)
      head += ", writer gone: process " + std::to_string(gone) + " has ended without an end record (killed or "
              "crashed?); no data since " + std::to_string(static_cast<long long>(quiet)) + " s ago";
    else if (quiet >= stale_after_seconds)
      head += ", STALE: no data for " + std::to_string(static_cast<long long>(quiet)) + " s (writer stopped or stuck?)";
    else if (terminal)
      head += " (Ctrl-C stops)";
    head += terminal ? "\n" : " ==\n";
    std::string text = head;
    for (const et::writer_info* w : follower.devices()) text += et::device_line(*w);
    text += et::top_table(window.table(), options);
    if (terminal) text = "\033[H\033[2J" + text;  // home, clear: redraw in place
    else text += "\n";
    if (std::string error; !et::detail::write_text(stdout, text, &error)) return input_error("stdout", error);
    if (gone != 0) {
      std::fprintf(stderr, "edgetrace: %s: its writer (process %llu) has ended without an end record (killed or "
                   "crashed?); stopped following\n", dump.c_str(), static_cast<unsigned long long>(gone));
      return exit_ok;
    }
    if (done || stop_following) return exit_ok;
    // Sleep in short steps: a signal (or the writer's end) is seen promptly.
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(interval_ns);
    while (!stop_following && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(50),
                                                                      until - std::chrono::steady_clock::now()));
    if (stop_following) return exit_ok;
  }
}

}  // namespace

int run_top(const command& c, const arguments& args) {
  arguments rest;
  bool follow = false;
  for (const std::string& a : args)
    if (a == "--follow" || a == "-f") follow = true;
    else rest.push_back(a);
  parsed_options p;
  if (const int rc = parse_options(c, rest, {"--window", "--interval", "--top", "--per"}, p); rc != exit_ok) return rc;
  if (p.help) return command_help(c);
  if (p.positional.empty()) return usage_error(&c, "'top' needs a DUMP file");
  if (p.positional.size() > 1) return usage_error(&c, "unexpected argument '" + p.positional[1] + "' (one DUMP at a time)");
  const std::string& dump = p.positional[0];
  et::top_options options;
  if (const std::string* v = p.get("--window"))
    if (!parse_seconds(*v, options.window_ns))
      return usage_error(&c, "--window needs a number of seconds > 0 and at most 86400 (e.g. 5, 2.5, 500ms), not '" + *v + "'");
  std::uint64_t interval_ns = 1000000000u;
  if (const std::string* v = p.get("--interval")) {
    if (!follow) return usage_error(&c, "--interval applies only with --follow");
    if (!parse_seconds(*v, interval_ns))
      return usage_error(&c, "--interval needs a number of seconds > 0 and at most 86400 (e.g. 1, 0.5), not '" + *v + "'");
  }
  if (const std::string* v = p.get("--top")) {
    std::uint64_t n = 0;
    if (!parse_count(*v, n) || n == 0) return usage_error(&c, "--top needs a whole number >= 1, not '" + *v + "'");
    options.rows = static_cast<std::size_t>(n);
  }
  if (const std::string* v = p.get("--per")) {
    if (v->empty()) return usage_error(&c, "--per needs a span or mark name (e.g. --per frame)");
    options.per = *v;
  }
  if (follow) return follow_top(dump, options, interval_ns);
  et::dump_reader r;
  if (!r.open(dump) || !r.read_metadata()) return input_error(dump, r.error());
  if (bool span = false, mark = false; !options.per.empty()) {
    std::string error;
    if (!et::iteration_windows::named(r, options.per, span, mark, error)) return input_error(dump, error);
  }
  et::top_window window(options);
  if (!r.read_events([&](const et::event& e) {
        const bool iteration = !options.per.empty() && e.site != nullptr && e.site->name == options.per;
        if (e.kind == et::event_kind::span) {
          window.add(e.site, e.site->name, e.end_ns, static_cast<std::uint64_t>(e.end_ns - e.begin_ns));
          if (iteration) window.add_iteration_span(e.end_ns, static_cast<std::uint64_t>(e.end_ns - e.begin_ns));
        } else if (iteration && e.kind == et::event_kind::instant && e.site->kind == edgetrace::format::site_kind::mark) {
          window.add_iteration_mark(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(e.thread)), e.end_ns);
        }
      }))
    return input_error(dump, r.error());
  if (const int rc = write_text("", et::top_table(window.table(), options)); rc != exit_ok) return rc;
  return report(r, dump, true, "table written");
}

}  // namespace edgetrace_cli
