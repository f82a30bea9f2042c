// SPDX-License-Identifier: MIT
// Latency triggers of the flight recorder (EDGETRACE_TRIGGER): the parser, and the flusher's evaluator of spans and mark iterations against their limits.
#pragma once

#include <edgetrace/core/text.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/writer/encoding/site_watch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// EDGETRACE_TRIGGER="infer>20ms,frame>40ms": a comma list of NAME>LIMIT,
/// LIMIT a positive number (decimals allowed) with a unit ns, us, ms or s.
/// A span named NAME that lasts longer than LIMIT fires; so does an
/// iteration of a mark named NAME (the time from one EDGETRACE_MARK of that
/// name to the next on the same thread) that lasts longer than LIMIT.
///
/// Names match exactly (case-sensitive, the whole name; no patterns: a `*`
/// is an ordinary character). A name is everything before the item's last
/// `>`, spaces around it trimmed, so "a->b>5ms" names "a->b".
///
/// A pure class: no globals, no runtime, no clock. The flusher owns it and
/// feeds it what it decodes: every site as it is defined (define_site), the
/// tick rate as calibration pairs come (set_ticks_per_ns), recording pauses
/// (recording_stopped) and the records of triggered sites (evaluate).
/// Parsing fills fixed arrays; the only allocations afterwards are one byte
/// per site id when a site is defined and one entry per (thread, mark
/// trigger) when a thread first records such a mark: never per record.
class flight_triggers final : public site_watch {
 public:
  static constexpr std::size_t max_triggers = 16;
  static constexpr std::size_t max_name_size = 64;
  /// The longest limit: 10^7 s (about 4 months) keeps every product in range.
  static constexpr std::uint64_t max_limit_ns = 10000000ull * 1000000000ull;

  /// What evaluate() found over its limit.
  struct firing {
    std::size_t trigger;      ///< index into the parsed triggers
    bool mark;                ///< a mark's iteration rather than a span
    std::uint64_t elapsed;    ///< the span's or iteration's length, in ticks
    std::uint64_t tick;       ///< when it ended: the span's end, the closing mark
  };

  /// Parses `text` (EDGETRACE_TRIGGER's value). All or nothing: on a bad
  /// item, no trigger is set, false is returned and `error` holds one line
  /// naming the variable and the item (no trailing newline). Empty items
  /// (a trailing comma) are skipped. Parsing again replaces what was set.
  /// Out of line (it runs once): inlined where a caller's buffer size is
  /// known, g++ -O3 flags the intended truncation of a long item's message.
  EDGETRACE_DETAIL_NOINLINE bool parse(const char* text, char* error, std::size_t error_size) noexcept {
    count_ = 0;
    std::size_t count = 0;
    list_item item{nullptr, nullptr};
    for (const char* p = text; next_list_item(p, item);) {
      const char* begin = item.begin;
      const char* end = item.end;
      if (count == max_triggers) {
        std::snprintf(error, error_size, "EDGETRACE_TRIGGER: more than %zu triggers; no trigger set", max_triggers);
        return false;
      }
      if (!parse_item(begin, end, triggers_[count], error, error_size)) return false;
      for (std::size_t i = 0; i < count; ++i)
        if (triggers_[i].name_size == triggers_[count].name_size &&
            std::memcmp(triggers_[i].name, triggers_[count].name, triggers_[i].name_size) == 0) {
          std::snprintf(error, error_size, "EDGETRACE_TRIGGER: '%.*s' names %.*s a second time; no trigger set",
                        static_cast<int>(end - begin), begin, static_cast<int>(triggers_[i].name_size),
                        triggers_[i].name);
          return false;
        }
      ++count;
    }
    if (count == 0) {
      std::snprintf(error, error_size, "EDGETRACE_TRIGGER is empty; no trigger set");
      return false;
    }
    count_ = count;
    set_ticks_per_ns(ticks_per_ns_);
    return true;
  }

  /// Number of triggers set (0 until a parse succeeds).
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  /// The i-th trigger's name, its limit in ns, and the item as written
  /// with spaces removed ("infer>20ms").
  const char* name(std::size_t i) const noexcept { return triggers_[i].name; }
  std::uint64_t limit_ns(std::size_t i) const noexcept { return triggers_[i].limit_ns; }
  const char* text(std::size_t i) const noexcept { return triggers_[i].text; }
  /// The i-th limit in ticks at the rate set last (UINT64_MAX: no rate yet,
  /// nothing fires).
  std::uint64_t limit_ticks(std::size_t i) const noexcept { return triggers_[i].limit_ticks; }

  /// The tick rate the limits are converted with: exact for
  /// CLOCK_MONOTONIC (1), measured between calibration pairs for the CPU
  /// counter. 0 (or less) = unknown: nothing fires until a rate is set.
  /// Cost: one multiply per trigger.
  void set_ticks_per_ns(double rate) noexcept {
    ticks_per_ns_ = rate;
    for (std::size_t i = 0; i < count_; ++i) {
      const double ticks = static_cast<double>(triggers_[i].limit_ns) * rate;
      triggers_[i].limit_ticks = rate > 0 && ticks < 1.8e19 ? static_cast<std::uint64_t>(ticks) : ~std::uint64_t{0};
    }
  }
  double ticks_per_ns() const noexcept { return ticks_per_ns_; }

  /// Flusher, when it defines site `id` (once per id): remembers which
  /// trigger, if any, watches it. Spans match span triggers, marks mark
  /// triggers; other kinds never match. Cost: a compare per trigger, and
  /// growing the per-id table (one byte a site).
  void define_site(std::uint32_t id, format::site_kind kind, const char* name, std::size_t name_size) override {
    if (count_ == 0 || (kind != format::site_kind::span && kind != format::site_kind::mark)) return;
    for (std::size_t i = 0; i < count_; ++i) {
      trigger_entry& t = triggers_[i];
      if (t.name_size != name_size || std::memcmp(t.name, name, name_size) != 0) {
        // Not this one: the nearest name so far, for "did you mean".
        const std::size_t distance = t.matched ? 99 : edit_distance(t.name, t.name_size, name, name_size);
        if (distance < t.closest_distance && name_size <= max_name_size) {
          t.closest_distance = distance;
          std::memcpy(t.closest, name, name_size);
          t.closest[name_size] = '\0';
        }
        continue;
      }
      t.matched = true;
      if (id >= watched_.size()) watched_.resize(std::size_t{id} + 1 + watched_.size() / 2, 0);
      watched_[id] = static_cast<std::uint8_t>((i + 1) | (kind == format::site_kind::mark ? mark_bit : 0));
      return;
    }
  }

  /// After the run: true when the i-th trigger's name matched no span or
  /// mark the program recorded (a typo: it could never fire); `closest`
  /// is then the nearest name recorded within 3 edits, or null.
  bool never_matched(std::size_t i, const char*& closest) const noexcept {
    const trigger_entry& t = triggers_[i];
    closest = t.closest_distance <= 3 ? t.closest : nullptr;
    return !t.matched;
  }

  /// Flusher, for a record of a watched site on thread `thread_id`: a span
  /// [begin, end], or a mark at `begin`. True when it exceeds its limit;
  /// `out` then says what. A mark is compared with the previous mark of its
  /// name on that thread; an interval across a pause of recording
  /// (recording_stopped) is not an iteration and never fires.
  bool evaluate(std::uint32_t id, std::uint32_t thread_id, std::uint64_t begin, std::uint64_t end, firing& out) {
    if (!watches(id)) return false;
    const std::size_t trigger = (watched_[id] & ~mark_bit) - 1u;
    if ((watched_[id] & mark_bit) == 0) {
      const std::uint64_t elapsed = end >= begin ? end - begin : 0;
      if (elapsed <= triggers_[trigger].limit_ticks) return false;
      out = {trigger, false, elapsed, end};
      return true;
    }
    std::uint64_t& previous = last_mark(thread_id, trigger);
    const std::uint64_t earlier = previous;
    previous = begin;
    if (earlier == 0 || begin <= earlier) return false;  // the first mark, or a clock that went back
    const std::uint64_t elapsed = begin - earlier;
    if (elapsed <= triggers_[trigger].limit_ticks || paused_between(earlier, begin)) return false;
    out = {trigger, true, elapsed, begin};
    return true;
  }

  /// Flusher, for each "recording stopped" it writes (pause(), a toggle
  /// signal, EDGETRACE_DURATION): mark intervals across it do not fire.
  /// Keeps the last few stops (a fixed array; an interval would have to
  /// span more pauses than that, all still undrained, to be misjudged).
  void recording_stopped(std::uint64_t tick) noexcept {
    stops_[stop_count_ % max_stops] = tick;
    ++stop_count_;
  }

  /// Flusher, when a thread's ring is retired: its marks' state goes.
  void forget_thread(std::uint32_t thread_id) noexcept {
    for (std::size_t i = 0; i < marks_.size();)
      if (marks_[i].thread_id == thread_id) {
        marks_[i] = marks_.back();
        marks_.pop_back();
      } else {
        ++i;
      }
  }

  /// The snapshot reason for `f`, e.g. "infer>20ms: infer took 31.2 ms" or
  /// "frame>40ms: an iteration of frame took 52.3 ms", written to `out` (cut
  /// to `size` - 1 bytes, NUL-terminated). Returns its length.
  std::size_t describe(const firing& f, char* out, std::size_t size) const noexcept {
    if (size == 0) return 0;
    const trigger_entry& t = triggers_[f.trigger];
    const double ns = ticks_per_ns_ > 0 ? static_cast<double>(f.elapsed) / ticks_per_ns_ : 0;
    char amount[32];
    if (ns < 1e3) std::snprintf(amount, sizeof amount, "%.0f ns", ns);
    else if (ns < 1e6) std::snprintf(amount, sizeof amount, "%.1f us", ns / 1e3);
    else if (ns < 1e9) std::snprintf(amount, sizeof amount, "%.1f ms", ns / 1e6);
    else std::snprintf(amount, sizeof amount, "%.2f s", ns / 1e9);
    const int n = std::snprintf(out, size, f.mark ? "%s: an iteration of %s took %s" : "%s: %s took %s", t.text, t.name,
                                amount);
    if (n < 0) {
      out[0] = '\0';
      return 0;
    }
    return static_cast<std::size_t>(n) < size ? static_cast<std::size_t>(n) : size - 1;
  }

 private:
  static constexpr std::uint8_t mark_bit = 0x80;
  static constexpr std::size_t max_stops = 8;

  struct trigger_entry {
    char name[max_name_size + 1];
    std::size_t name_size;
    char text[max_name_size + 32];
    std::uint64_t limit_ns;
    std::uint64_t limit_ticks;
    bool matched;                      ///< a span or mark of this name was defined
    char closest[max_name_size + 1];   ///< else the nearest name defined
    std::size_t closest_distance;      ///< its edit distance (99: none yet)
  };
  struct mark_state {
    std::uint32_t thread_id;
    std::uint32_t trigger;
    std::uint64_t last;  ///< tick of the thread's previous mark of that name (0: none yet)
  };

  /// A limit's number: digits with at most one decimal point; decimals
  /// past the ns are cut.
  struct number {
    std::uint64_t whole = 0, fraction = 0, scale = 1;
    bool too_big = false;
  };

  /// Reads a number at `p` (advanced past it); false if it has no digit.
  static bool parse_number(const char*& p, const char* end, number& n) noexcept {
    bool digits = false, point = false;
    for (; p < end && ((*p >= '0' && *p <= '9') || (*p == '.' && !point)); ++p) {
      if (*p == '.') {
        point = true;
      } else if (!point) {
        digits = true;
        n.whole = n.whole * 10 + static_cast<std::uint64_t>(*p - '0');
        n.too_big = n.too_big || n.whole > max_limit_ns;
        if (n.too_big) n.whole = max_limit_ns + 1;
      } else {
        digits = true;
        if (n.scale < 1000000000u) {
          n.fraction = n.fraction * 10 + static_cast<std::uint64_t>(*p - '0');
          n.scale *= 10;
        }
      }
    }
    return digits;
  }

  /// ns per unit ("ns", "us", "ms", "s"); 0 for anything else.
  static std::uint64_t unit_ns_of(const char* unit, std::size_t size) noexcept {
    if (size == 2 && std::memcmp(unit, "ns", 2) == 0) return 1;
    if (size == 2 && std::memcmp(unit, "us", 2) == 0) return 1000;
    if (size == 2 && std::memcmp(unit, "ms", 2) == 0) return 1000000;
    if (size == 1 && *unit == 's') return 1000000000;
    return 0;
  }

  /// One item, [begin, end) without surrounding spaces, into `t`.
  static bool parse_item(const char* begin, const char* end, trigger_entry& t, char* error, std::size_t error_size) {
    const int item_size = static_cast<int>(end - begin);
    const char* arrow = end;
    while (arrow > begin && arrow[-1] != '>') --arrow;
    if (arrow == begin) {
      std::snprintf(error, error_size,
                    "EDGETRACE_TRIGGER: '%.*s' has no limit (write NAME>LIMIT, e.g. infer>20ms); no trigger set",
                    item_size, begin);
      return false;
    }
    const char* name_end = arrow - 1;
    while (name_end > begin && name_end[-1] == ' ') --name_end;
    if (name_end == begin) {
      std::snprintf(error, error_size, "EDGETRACE_TRIGGER: '%.*s' has no name before '>'; no trigger set", item_size,
                    begin);
      return false;
    }
    if (static_cast<std::size_t>(name_end - begin) > max_name_size) {
      std::snprintf(error, error_size, "EDGETRACE_TRIGGER: '%.*s' has a name longer than %zu bytes; no trigger set",
                    item_size, begin, max_name_size);
      return false;
    }
    const char* p = arrow;
    while (p < end && *p == ' ') ++p;
    number value;
    if (!parse_number(p, end, value)) {
      std::snprintf(error, error_size,
                    "EDGETRACE_TRIGGER: '%.*s' has no number after '>' (e.g. infer>20ms); no trigger set", item_size,
                    begin);
      return false;
    }
    const char* unit = p;
    while (unit < end && *unit == ' ') ++unit;
    const std::size_t unit_size = static_cast<std::size_t>(end - unit);
    std::uint64_t unit_ns = 0;
    if (unit_size == 0) {
      std::snprintf(error, error_size, "EDGETRACE_TRIGGER: '%.*s' has no unit (ns, us, ms, s); no trigger set",
                    item_size, begin);
      return false;
    }
    unit_ns = unit_ns_of(unit, unit_size);
    if (unit_ns == 0) {
      std::snprintf(error, error_size,
                    "EDGETRACE_TRIGGER: '%.*s' has an unknown unit '%.*s' (ns, us, ms, s); no trigger set", item_size,
                    begin, static_cast<int>(unit_size), unit);
      return false;
    }
    // whole × unit and fraction × unit / scale: below 2^64 since whole ≤ 10^16.
    const std::uint64_t limit = value.too_big || value.whole > max_limit_ns / unit_ns
                                    ? max_limit_ns + 1
                                    : value.whole * unit_ns + value.fraction * unit_ns / value.scale;
    if (limit > max_limit_ns) {
      std::snprintf(error, error_size, "EDGETRACE_TRIGGER: '%.*s' has a limit over 10000000 s; no trigger set",
                    item_size, begin);
      return false;
    }
    if (limit == 0) {
      std::snprintf(error, error_size, "EDGETRACE_TRIGGER: '%.*s' is not a positive limit (at least 1 ns); no trigger set",
                    item_size, begin);
      return false;
    }
    t.name_size = static_cast<std::size_t>(name_end - begin);
    std::memcpy(t.name, begin, t.name_size);
    t.name[t.name_size] = '\0';
    t.matched = false;
    t.closest[0] = '\0';
    t.closest_distance = 99;
    // The item as written, without spaces: the reason's prefix.
    std::size_t n = 0;
    for (const char* c = begin; c < end && n + 1 < sizeof t.text; ++c)
      if (*c != ' ' || (c > begin && c < name_end)) t.text[n++] = *c;  // spaces inside a name stay
    t.text[n] = '\0';
    t.limit_ns = limit;
    t.limit_ticks = ~std::uint64_t{0};
    return true;
  }

  /// The previous-mark tick of (thread, trigger), made on first use.
  std::uint64_t& last_mark(std::uint32_t thread_id, std::size_t trigger) {
    if (cached_ < marks_.size() && marks_[cached_].thread_id == thread_id && marks_[cached_].trigger == trigger)
      return marks_[cached_].last;
    for (cached_ = 0; cached_ < marks_.size(); ++cached_)
      if (marks_[cached_].thread_id == thread_id && marks_[cached_].trigger == trigger) return marks_[cached_].last;
    marks_.push_back({thread_id, static_cast<std::uint32_t>(trigger), 0});
    return marks_.back().last;
  }

  /// Whether a recording stop lies in [first, last).
  bool paused_between(std::uint64_t first, std::uint64_t last) const noexcept {
    const std::size_t kept = stop_count_ < max_stops ? stop_count_ : max_stops;
    for (std::size_t i = 0; i < kept; ++i)
      if (stops_[i] >= first && stops_[i] < last) return true;
    return false;
  }

  trigger_entry triggers_[max_triggers] = {};
  std::size_t count_ = 0;
  double ticks_per_ns_ = 0;
  // watched_ (site_watch): per site id, 0 unwatched, else (trigger index
  // + 1) | mark_bit for marks.
  std::vector<mark_state> marks_;
  std::size_t cached_ = 0;  ///< index in marks_ of the last lookup
  std::uint64_t stops_[max_stops] = {};
  std::size_t stop_count_ = 0;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
