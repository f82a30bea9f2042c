// SPDX-License-Identifier: MIT
// Environment settings, read once at start-up: parsing, validation and the
// one-line diagnostics for bad values and misspelt variable names.
#pragma once

#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <unistd.h>

#include <edgetrace/core/text.hpp>

extern char** environ;

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Prints "edgetrace: <message>\n" on stderr with a single write() (no
/// stdio buffers, no allocation), so it interleaves cleanly with the app.
inline void report(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
inline void report(const char* fmt, ...) noexcept {
  char line[512];
  int used = std::snprintf(line, sizeof line, "edgetrace: ");
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(line + used, sizeof line - static_cast<std::size_t>(used) - 1, fmt, args);
  va_end(args);
  if (n > 0) used += n;
  if (used > static_cast<int>(sizeof line) - 2) used = static_cast<int>(sizeof line) - 2;
  line[used++] = '\n';
  const ssize_t ignored = ::write(2, line, static_cast<std::size_t>(used));
  (void)ignored;
}

/// The variables edgetrace reads; anything else named EDGETRACE_* is reported.
inline constexpr const char* known_variables[] = {
    "EDGETRACE_OUTPUT", "EDGETRACE_CATEGORIES", "EDGETRACE_BUFFER_KB", "EDGETRACE_FLUSH_MS",
    "EDGETRACE_SIGNAL_FLUSH", "EDGETRACE_FORK", "EDGETRACE_CLOCK", "EDGETRACE_ASSUME_UNSTABLE_COUNTER",
    "EDGETRACE_NVTX", "EDGETRACE_START_AFTER", "EDGETRACE_DURATION", "EDGETRACE_TOGGLE_SIGNAL",
    "EDGETRACE_CUDA", "EDGETRACE_ON_FULL", "EDGETRACE_SAMPLE_MS", "EDGETRACE_NVML_LIBRARY",
    // The dump's room (writer/output.hpp).
    "EDGETRACE_MAX_MB", "EDGETRACE_MIN_FREE_MB",
    // Flight recorder (writer/flight/store.hpp); EDGETRACE_TRIGGER is parsed by writer/flight/triggers.hpp.
    "EDGETRACE_MODE", "EDGETRACE_FLIGHT_MB", "EDGETRACE_FLIGHT_AFTER_MS", "EDGETRACE_FLIGHT_MAX", "EDGETRACE_FLIGHT_KEEP",
    "EDGETRACE_FLIGHT_GAP_MS", "EDGETRACE_FLIGHT_AT_EXIT", "EDGETRACE_SNAPSHOT_SIGNAL", "EDGETRACE_TRIGGER",
    // A folder in front of /sys, /proc/stat and /proc/meminfo (telemetry/files.hpp): replayed board files.
    "EDGETRACE_SYSFS_ROOT",
};

struct settings {
  const char* output = nullptr;      ///< EDGETRACE_OUTPUT, unexpanded
  const char* categories = nullptr;  ///< EDGETRACE_CATEGORIES or nullptr (all)
  std::uint64_t ring_records = 43690;  ///< slots of 24 bytes (one stays free): 1 MiB
  std::uint32_t flush_ms = 10;
  /// EDGETRACE_SAMPLE_MS: the flusher samples the device (telemetry/sampler.hpp)
  /// this often; 0 (`off`): never.
  std::uint32_t sample_ms = 100;
  /// EDGETRACE_ON_FULL=wait (default): a thread the flusher cannot keep up
  /// with encodes its own records (writer/help.hpp), or waits for the
  /// flusher to drain its ring (bounded: slow_path.hpp, wait_for_room);
  /// drop: the record is dropped and counted at once.
  bool drop_when_full = false;
  bool signal_flush = false;  ///< EDGETRACE_SIGNAL_FLUSH=1: flush on SIGINT/SIGTERM
  bool fork_follow = false;   ///< EDGETRACE_FORK=follow: forked children trace to their own dump
  enum clock_choice_t : std::uint8_t { clock_auto, clock_force_counter, clock_force_monotonic };
  clock_choice_t clock_choice = clock_auto;  ///< EDGETRACE_CLOCK=auto|counter|monotonic
  /// EDGETRACE_ASSUME_UNSTABLE_COUNTER=1: behave as if the CPU reported no
  /// invariant counter (to test or demonstrate the automatic fallback).
  bool assume_unstable_counter = false;
  /// EDGETRACE_NVTX=1: scopes also become NVTX ranges (needs <edgetrace/nvtx.hpp>)
  bool nvtx = false;
  /// EDGETRACE_START_AFTER: record nothing until this many ns after start-up,
  /// or until this many EDGETRACE_MARK marks were seen (0 = from the start).
  std::uint64_t start_after_ns = 0;
  std::uint64_t start_after_marks = 0;
  /// EDGETRACE_DURATION: stop recording this many ns after it started (0 = never).
  std::uint64_t duration_ns = 0;
  /// EDGETRACE_TOGGLE_SIGNAL: SIGUSR1 or SIGUSR2 toggles recording (0 = none).
  int toggle_signal = 0;
  /// EDGETRACE_MODE=flight: chunks go to an in-memory ring and are written
  /// only as snapshots (writer/flight/store.hpp); normal (default): to the dump.
  bool flight = false;
  std::uint64_t flight_bytes = 16u << 20;   ///< EDGETRACE_FLIGHT_MB, in bytes
  std::uint32_t flight_after_ms = 100;      ///< EDGETRACE_FLIGHT_AFTER_MS: post-trigger window
  std::uint32_t flight_max = 10;            ///< EDGETRACE_FLIGHT_MAX: snapshots per run (rate limit)
  std::uint32_t flight_gap_ms = 1000;       ///< EDGETRACE_FLIGHT_GAP_MS: least time between two triggers written
  std::uint32_t flight_keep = 20;           ///< EDGETRACE_FLIGHT_KEEP: snapshot files OUTPUT.1..OUTPUT.K at most, across runs
  bool flight_at_exit = false;              ///< EDGETRACE_FLIGHT_AT_EXIT=1: one snapshot at exit
  int snapshot_signal = 0;                  ///< EDGETRACE_SNAPSHOT_SIGNAL: SIGUSR1 or SIGUSR2 (0 = none)
  /// EDGETRACE_MAX_MB: the dump's size bound in MiB (0 = none); writer/output.hpp.
  std::uint32_t max_mb = 0;
  /// EDGETRACE_MIN_FREE_MB: free space kept on the dump's file system, in
  /// MiB (0 = not guarded); unset (min_free_auto): 5 % of it, at most 512 MiB.
  std::uint32_t min_free_mb = 0;
  bool min_free_auto = true;
  std::uint8_t clock = 1;          ///< chosen clock_mode (runtime.hpp: choose_clock)
  bool clock_fell_back = false;    ///< auto found the counter unreliable
};

inline constexpr std::uint64_t default_buffer_kb = 1024;  // 43690 records per thread
inline constexpr std::uint64_t min_buffer_kb = 4;
/// 64 MiB per thread: rings are pre-faulted and two spares are kept, so a
/// bigger value could commit more memory than a small device has.
inline constexpr std::uint64_t max_buffer_kb = 64u << 10;
inline constexpr std::uint32_t default_flush_ms = 10;
inline constexpr std::uint32_t max_flush_ms = 60000;
/// EDGETRACE_SAMPLE_MS's default: docs/PERFORMANCE.md, "Device sampling", has its cost.
inline constexpr std::uint32_t default_sample_ms = 100;
/// EDGETRACE_FLIGHT_MB bounds: the ring is mapped and pre-faulted once, so
/// its size is committed memory for the whole run.
inline constexpr std::uint64_t min_flight_mb = 1;
inline constexpr std::uint64_t max_flight_mb = 4096;
inline constexpr std::uint64_t default_flight_mb = 16;
inline constexpr std::uint32_t default_flight_after_ms = 100;
inline constexpr std::uint32_t default_flight_max = 10;
/// Snapshot files never go past OUTPUT.20: a snapshot never replaces a
/// file, so an app that crashes and is restarted over and over would
/// otherwise add one (up to EDGETRACE_FLIGHT_MB) per run until the disk
/// is full. 20: a whole run's worth (10 + a crash + an exit) and more.
inline constexpr std::uint32_t default_flight_keep = 20;
/// One second: a storm of slow frames writes at most one snapshot a second
/// (each holds the seconds before it anyway).
inline constexpr std::uint32_t default_flight_gap_ms = 1000;

/// An unsigned decimal, blanks around it allowed, into `value`; false for
/// anything else (a sign, other characters, more than 64 bits).
inline bool parse_unsigned(const char* text, std::uint64_t& value) noexcept {
  const char* p = text;
  while (*p == ' ') ++p;
  if (*p < '0' || *p > '9') return false;
  value = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (value > (~std::uint64_t{0} - 9) / 10) return false;
    value = value * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  while (*p == ' ') ++p;
  return *p == '\0';
}

/// A *_MS setting: whole milliseconds, with or without the unit (`5`,
/// `5ms`), or whole seconds (`2s`), as the window settings take units.
inline bool parse_milliseconds(const char* text, std::uint64_t& ms) noexcept {
  char digits[32];
  std::size_t n = 0;
  const char* p = text;
  while (*p == ' ') ++p;
  while (*p >= '0' && *p <= '9' && n + 1 < sizeof digits) digits[n++] = *p++;
  digits[n] = '\0';
  while (*p == ' ') ++p;
  std::uint64_t scale = 1;
  if (std::strcmp(p, "s") == 0) scale = 1000;
  else if (*p != '\0' && std::strcmp(p, "ms") != 0) return false;
  if (!parse_unsigned(digits, ms) || ms > ~std::uint64_t{0} / scale) return false;
  ms *= scale;
  return true;
}

/// Parses an unsigned decimal in [lo, hi] (with `milliseconds`, also `5ms`
/// or `2s`: parse_milliseconds); on anything else reports one line naming
/// the variable and the default, and returns the default.
inline std::uint64_t env_unsigned(const char* name, std::uint64_t lo, std::uint64_t hi, std::uint64_t fallback,
                                  bool milliseconds = false) noexcept {
  const char* text = std::getenv(name);
  if (text == nullptr) return fallback;
  std::uint64_t value = 0;
  const bool parsed = milliseconds ? parse_milliseconds(text, value) : parse_unsigned(text, value);
  if (!parsed || value < lo || value > hi) {
    report("%s='%.64s' is not a whole number in %llu..%llu; using the default %llu", name, text,
           static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
           static_cast<unsigned long long>(fallback));
    return fallback;
  }
  return value;
}

/// The largest EDGETRACE_MAX_MB and EDGETRACE_MIN_FREE_MB: 1 TiB.
inline constexpr std::uint64_t max_space_mb = 1u << 20;

/// EDGETRACE_MAX_MB and EDGETRACE_MIN_FREE_MB: MiB in lo..max_space_mb; on
/// anything else one line saying what holds instead (`fallback`), and false.
inline bool env_space_mb(const char* name, std::uint64_t lo, std::uint32_t& mb, const char* fallback) noexcept {
  const char* text = std::getenv(name);
  if (text == nullptr) return false;
  std::uint64_t value = 0;
  if (parse_unsigned(text, value) && value >= lo && value <= max_space_mb) {
    mb = static_cast<std::uint32_t>(value);
    return true;
  }
  report("%s='%.64s' is not a whole number of MiB in %llu..%llu; %s", name, text, static_cast<unsigned long long>(lo),
         static_cast<unsigned long long>(max_space_mb), fallback);
  return false;
}

/// EDGETRACE_SAMPLE_MS: `off` (0), or milliseconds in 1..max_flush_ms
/// (`100`, `100ms`, `1s`); on anything else one line, and the default.
inline std::uint32_t env_sample_ms() noexcept {
  const char* text = std::getenv("EDGETRACE_SAMPLE_MS");
  if (text == nullptr) return default_sample_ms;
  if (std::strcmp(text, "off") == 0) return 0;
  std::uint64_t value = 0;
  if (parse_milliseconds(text, value) && value >= 1 && value <= max_flush_ms) return static_cast<std::uint32_t>(value);
  report("EDGETRACE_SAMPLE_MS='%.64s' is not a whole number in 1..%u or off; using the default %u", text, max_flush_ms,
         default_sample_ms);
  return default_sample_ms;
}

/// Parses a capture-window length: seconds (`2.5`, `2.5s`), milliseconds
/// (`500ms`) or, when `marks` is not null, a mark count (`100marks`). On
/// anything else reports one line naming the variable and what it does
/// instead (`fallback`), and leaves both outputs 0.
inline void env_window(const char* name, std::uint64_t& ns, std::uint64_t* marks, const char* fallback) noexcept {
  ns = 0;
  if (marks != nullptr) *marks = 0;
  const char* text = std::getenv(name);
  if (text == nullptr) return;
  const char* p = text;
  while (*p == ' ') ++p;
  // Digits with at most one decimal point, at most 9 decimals, below 10^7 s.
  std::uint64_t whole = 0, fraction = 0, scale = 1;
  bool digits = false, point = false, ok = true;
  for (; ok && ((*p >= '0' && *p <= '9') || (*p == '.' && !point)); ++p) {
    if (*p == '.') {
      point = true;
    } else if (!point) {
      digits = true;
      whole = whole * 10 + static_cast<std::uint64_t>(*p - '0');
      ok = whole < 10000000u;
    } else if (scale < 1000000000u) {
      digits = true;
      fraction = fraction * 10 + static_cast<std::uint64_t>(*p - '0');
      scale *= 10;
    }
  }
  while (*p == ' ') ++p;
  std::uint64_t unit_ns = 0;  // 0: a count of marks
  if (*p == '\0' || std::strcmp(p, "s") == 0) unit_ns = 1000000000u;
  else if (std::strcmp(p, "ms") == 0) unit_ns = 1000000u;
  else if (marks == nullptr || (std::strcmp(p, "marks") != 0 && std::strcmp(p, "mark") != 0) || point) ok = false;
  const std::uint64_t value = unit_ns == 0 ? whole : whole * unit_ns + fraction * (unit_ns / scale);
  if (!ok || !digits || value == 0) {
    report("%s='%.64s' is not %s; %s", name, text,
           marks != nullptr ? "a positive time (2.5, 2.5s, 500ms) or mark count (100marks)"
                            : "a positive time (2.5, 2.5s, 500ms)",
           fallback);
    return;
  }
  if (unit_ns == 0) *marks = value;
  else ns = value;
}

/// Reports every EDGETRACE_* variable that edgetrace does not know, with the
/// closest known name. Runs whether or not tracing is on: a misspelt
/// EDGETRACE_OUTPUT is exactly when the user needs to hear about it.
inline void check_unknown_variables() noexcept {
  if (environ == nullptr) return;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const char* var = *entry;
    if (std::strncmp(var, "EDGETRACE_", 10) != 0) continue;
    char name[72];
    std::size_t n = 0;
    while (var[n] != '\0' && var[n] != '=' && n + 1 < sizeof name) {
      name[n] = var[n];
      ++n;
    }
    name[n] = '\0';
    bool known = false;
    const char* closest = known_variables[0];
    std::size_t closest_distance = ~std::size_t{0};
    for (const char* candidate : known_variables) {
      if (std::strcmp(candidate, name) == 0) known = true;
      const std::size_t d = edit_distance(candidate, name);
      if (d < closest_distance) closest_distance = d, closest = candidate;
    }
    if (known) continue;
    if (closest_distance <= 3)
      report("unknown variable %s (did you mean %s?); ignored", name, closest);
    else
      report("unknown variable %s; ignored (known: EDGETRACE_OUTPUT, EDGETRACE_CATEGORIES, "
             "EDGETRACE_BUFFER_KB, EDGETRACE_FLUSH_MS, EDGETRACE_ON_FULL, EDGETRACE_SIGNAL_FLUSH, EDGETRACE_FORK, "
             "EDGETRACE_CLOCK, EDGETRACE_CUDA, EDGETRACE_MODE)", name);
  }
}

/// Parses a choice among `names` (first = default); on anything else reports
/// one line with the allowed values and returns the default's index.
inline int env_choice(const char* name, std::initializer_list<const char*> names) noexcept {
  const char* text = std::getenv(name);
  if (text == nullptr) return 0;
  int index = 0;
  for (const char* candidate : names) {
    if (std::strcmp(candidate, text) == 0) return index;
    ++index;
  }
  char allowed[128] = "";
  for (const char* candidate : names) {
    if (allowed[0] != '\0') std::strncat(allowed, ", ", sizeof allowed - std::strlen(allowed) - 1);
    std::strncat(allowed, candidate, sizeof allowed - std::strlen(allowed) - 1);
  }
  report("%s='%.64s' is not one of %s; using the default %s", name, text, allowed, *names.begin());
  return 0;
}

/// Reads the settings: when EDGETRACE_OUTPUT is set, or EDGETRACE_NVTX=1.
inline settings read_settings() noexcept {
  settings s;
  s.output = std::getenv("EDGETRACE_OUTPUT");
  s.categories = std::getenv("EDGETRACE_CATEGORIES");
  if (s.categories != nullptr && *s.categories == '\0') s.categories = nullptr;
  const std::uint64_t kb = env_unsigned("EDGETRACE_BUFFER_KB", min_buffer_kb, max_buffer_kb, default_buffer_kb);
  s.ring_records = kb * 1024 / 24;
  s.flush_ms = static_cast<std::uint32_t>(env_unsigned("EDGETRACE_FLUSH_MS", 1, max_flush_ms, default_flush_ms, true));
  s.sample_ms = env_sample_ms();
  s.drop_when_full = env_choice("EDGETRACE_ON_FULL", {"wait", "drop"}) == 1;
  s.signal_flush = env_choice("EDGETRACE_SIGNAL_FLUSH", {"0", "1"}) == 1;
  s.fork_follow = env_choice("EDGETRACE_FORK", {"off", "follow"}) == 1;
  s.clock_choice = static_cast<settings::clock_choice_t>(env_choice("EDGETRACE_CLOCK", {"auto", "counter", "monotonic"}));
  s.assume_unstable_counter = env_choice("EDGETRACE_ASSUME_UNSTABLE_COUNTER", {"0", "1"}) == 1;
  s.nvtx = env_choice("EDGETRACE_NVTX", {"0", "1"}) == 1;
  env_window("EDGETRACE_START_AFTER", s.start_after_ns, &s.start_after_marks, "recording from the start");
  env_window("EDGETRACE_DURATION", s.duration_ns, nullptr, "recording to the end");
  // The same spellings as EDGETRACE_SNAPSHOT_SIGNAL's.
  switch (env_choice("EDGETRACE_TOGGLE_SIGNAL", {"off", "SIGUSR1", "SIGUSR2", "USR1", "USR2"})) {
    case 1: case 3: s.toggle_signal = SIGUSR1; break;
    case 2: case 4: s.toggle_signal = SIGUSR2; break;
    default: break;
  }
  s.flight = env_choice("EDGETRACE_MODE", {"normal", "flight"}) == 1;
  env_space_mb("EDGETRACE_MAX_MB", 1, s.max_mb, "the dump has no size limit");
  s.min_free_auto = !env_space_mb("EDGETRACE_MIN_FREE_MB", 0, s.min_free_mb,
                                  "keeping the default: 5 % of the dump's file system, at most 512 MiB");
  s.flight_bytes = env_unsigned("EDGETRACE_FLIGHT_MB", min_flight_mb, max_flight_mb, default_flight_mb) << 20;
  s.flight_after_ms = static_cast<std::uint32_t>(
      env_unsigned("EDGETRACE_FLIGHT_AFTER_MS", 0, max_flush_ms, default_flight_after_ms, true));
  s.flight_max = static_cast<std::uint32_t>(env_unsigned("EDGETRACE_FLIGHT_MAX", 0, 1000000, default_flight_max));
  s.flight_keep = static_cast<std::uint32_t>(env_unsigned("EDGETRACE_FLIGHT_KEEP", 1, 1000000, default_flight_keep));
  s.flight_gap_ms = static_cast<std::uint32_t>(
      env_unsigned("EDGETRACE_FLIGHT_GAP_MS", 0, 24u * 3600 * 1000, default_flight_gap_ms, true));
  s.flight_at_exit = env_choice("EDGETRACE_FLIGHT_AT_EXIT", {"0", "1"}) == 1;
  switch (env_choice("EDGETRACE_SNAPSHOT_SIGNAL", {"off", "USR1", "USR2", "SIGUSR1", "SIGUSR2"})) {
    case 1: case 3: s.snapshot_signal = SIGUSR1; break;
    case 2: case 4: s.snapshot_signal = SIGUSR2; break;
    default: break;
  }
  if (!s.flight && (std::getenv("EDGETRACE_FLIGHT_MB") != nullptr || std::getenv("EDGETRACE_SNAPSHOT_SIGNAL") != nullptr ||
                    std::getenv("EDGETRACE_FLIGHT_AT_EXIT") != nullptr))
    report("EDGETRACE_FLIGHT_* and EDGETRACE_SNAPSHOT_SIGNAL apply only with EDGETRACE_MODE=flight; ignored");
  if (s.flight && (std::getenv("EDGETRACE_MAX_MB") != nullptr || std::getenv("EDGETRACE_MIN_FREE_MB") != nullptr))
    report("EDGETRACE_MAX_MB and EDGETRACE_MIN_FREE_MB bound the continuous dump; EDGETRACE_MODE=flight writes "
           "snapshots only (EDGETRACE_FLIGHT_MB, EDGETRACE_FLIGHT_KEEP bound them); ignored");
  return s;
}

/// Expands %p (pid), %t (start time, YYYYMMDD-HHMMSS) and %% in `pattern`.
/// Returns false if the result does not fit.
inline bool expand_output_path(const char* pattern, char* out, std::size_t out_size, long pid, long long start_time) noexcept {
  std::size_t n = 0;
  auto append = [&](const char* text) {
    for (; *text != '\0'; ++text) {
      if (n + 1 >= out_size) return false;
      out[n++] = *text;
    }
    return true;
  };
  for (const char* p = pattern; *p != '\0'; ++p) {
    char piece[32] = {p[0], '\0'};
    if (p[0] == '%' && p[1] == 'p') {
      std::snprintf(piece, sizeof piece, "%ld", pid);
      ++p;
    } else if (p[0] == '%' && p[1] == 't') {
      const time_t t = static_cast<time_t>(start_time);
      struct tm parts;
      gmtime_r(&t, &parts);
      std::strftime(piece, sizeof piece, "%Y%m%d-%H%M%S", &parts);
      ++p;
    } else if (p[0] == '%' && p[1] == '%') {
      ++p;
    }
    if (!append(piece)) return false;
  }
  out[n] = '\0';
  return true;
}

/// Run-time category filter: EDGETRACE_CATEGORIES is a comma list of names
/// to record ("*" = all); an item "-name" excludes. Unset = all.
inline bool runtime_category_selected(const char* filter, const char* name) noexcept {
  if (filter == nullptr) return true;
  bool selected = false;
  bool any_positive = false;
  bool excluded = false;
  for_each_list_item(filter, [&](list_item item) noexcept {
    const bool exclude = *item.begin == '-';
    if (exclude) ++item.begin;
    else any_positive = true;
    if (item.is("*") || item.is(name)) (exclude ? excluded : selected) = true;
  });
  return !excluded && (selected || !any_positive);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
