// SPDX-License-Identifier: MIT
// ONNX Runtime's profiles (SessionOptions / RunOptions profiling) as spans of the app's own threads: reading, the time base, and the spans with their typed arguments.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/import/add_spans.hpp>
#include <edgetrace/import/json_events.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// The argument by which an app gives the importer ONNX Runtime's profiling
/// start exactly: `SessionGetProfilingStartTimeNs()` (CLOCK_REALTIME ns)
/// recorded with EDGETRACE_ARG on the thread that created the session.
inline constexpr const char* onnxruntime_anchor_key = "onnxruntime.profiling_start_ns";

/// The argument by which an app marks the span around a Run() it profiles
/// through RunOptions (any value): such a profile holds one run and no
/// absolute time (its file name has the ms), and the importer puts it in
/// the marked span near that time.
inline constexpr const char* onnxruntime_run_mark_key = "onnxruntime.run_profiled";

/// One ONNX Runtime profile as read: its complete events (whole µs from the
/// profiler's start), their arguments typed, and what the file name says.
struct onnxruntime_profile {
  struct event {
    std::int64_t ts_us = 0;
    std::int64_t dur_us = 0;
    std::uint64_t pid = 0;
    std::uint64_t tid = 0;
    std::string category;  ///< "onnxruntime" (a Node) or "onnxruntime.session" ...
    std::string name;      ///< a node's name without "_kernel_time"
    bool model_run = false;
    std::size_t first_arg = 0, arg_count = 0;
  };
  struct arg {
    std::string key;
    enum class type : std::uint8_t { integer, real, boolean, text } kind = type::integer;
    std::int64_t integer = 0;
    double real = 0;
    std::string text;
  };
  std::string path;
  std::vector<event> events;
  std::vector<arg> args;
  std::uint64_t other_phases = 0;  ///< events that are not complete ("ph" other than "X"): left out
  /// The file name's stamp (`prefix_YYYY-MM-DD_HH-MM-SS_mmm.json`, ONNX
  /// Runtime's local time when profiling began) read as if it were UTC, ms.
  bool has_stamp = false;
  std::int64_t stamp_ms = 0;
};

namespace detail {

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
inline std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

/// Reads `..._YYYY-MM-DD_HH-MM-SS_mmm.json` at the end of `path`.
inline bool onnxruntime_file_stamp(const std::string& path, std::int64_t& ms) {
  const std::string tail = "_0000-00-00_00-00-00_000.json";
  if (path.size() < tail.size()) return false;
  const std::string s = path.substr(path.size() - tail.size());
  for (std::size_t i = 0; i < tail.size(); ++i)
    if ((tail[i] == '0') != (s[i] >= '0' && s[i] <= '9') || (tail[i] != '0' && tail[i] != s[i])) return false;
  const auto num = [&](std::size_t at, std::size_t n) { return std::atoi(s.substr(at, n).c_str()); };
  const int year = num(1, 4), month = num(6, 2), day = num(9, 2), hour = num(12, 2), minute = num(15, 2),
            second = num(18, 2), milli = num(21, 3);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return false;
  ms = ((days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 24 + hour) * 60 + minute) *
           60000 +
       second * 1000 + milli;
  return true;
}

/// `[{"float":[1,3,64,64]},{"float":[16]}]` (ONNX Runtime's type_shape lists)
/// as "float[1,3,64,64] float[16]"; other values as compact JSON.
inline std::string onnxruntime_value_text(const json_value& v) {
  if (v.kind == json_value::type::string) return v.text;
  if (v.kind != json_value::type::array) return v.dump();
  std::string out;
  for (const json_value& item : v.items) {
    if (item.kind != json_value::type::object || item.keys.size() != 1 || item.values[0].kind != json_value::type::array)
      return v.dump();
    if (!out.empty()) out += ' ';
    out += item.keys[0] + item.values[0].dump();
  }
  return out;
}

/// Adds `v` under `key` to `p`'s arguments: numbers (or strings that hold
/// an integer) typed, objects flattened into `key.member` (three levels),
/// the rest as text. ONNX Runtime writes its figures as strings of digits.
inline void onnxruntime_add_arg(onnxruntime_profile& p, const std::string& key, const json_value& v, int depth) {
  onnxruntime_profile::arg a;
  a.key = key;
  switch (v.kind) {
    case json_value::type::null: return;
    case json_value::type::boolean:
      a.kind = onnxruntime_profile::arg::type::boolean;
      a.integer = v.boolean;
      break;
    case json_value::type::number:
      if (!v.integer(a.integer)) {
        a.kind = onnxruntime_profile::arg::type::real;
        a.real = std::strtod(v.text.c_str(), nullptr);
      }
      break;
    case json_value::type::string:
      if (v.text.empty()) return;
      if (key == "op_name" || key == "provider" || !v.integer(a.integer)) {
        a.kind = onnxruntime_profile::arg::type::text;
        a.text = v.text;
      }
      break;
    case json_value::type::object:
      if (depth < 3) {
        for (std::size_t i = 0; i < v.keys.size(); ++i) onnxruntime_add_arg(p, key + "." + v.keys[i], v.values[i], depth + 1);
        return;
      }
      a.kind = onnxruntime_profile::arg::type::text;
      a.text = v.dump();
      break;
    case json_value::type::array:
      a.kind = onnxruntime_profile::arg::type::text;
      a.text = onnxruntime_value_text(v);
      break;
  }
  p.args.push_back(std::move(a));
}

}  // namespace detail

/// Reads an ONNX Runtime profile. False with `error` (one line, without the
/// path) when the file cannot be read, is not JSON trace events, or holds
/// no event of ONNX Runtime's (a complete event with `cat` "Node" or
/// "Session", whole-µs `ts` and `dur`, and `pid`/`tid`).
inline bool read_onnxruntime_profile(const std::string& path, onnxruntime_profile& p, std::string& error) {
  p = onnxruntime_profile{};
  p.path = path;
  std::FILE* in = std::fopen(path.c_str(), "rb");
  if (in == nullptr) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  json_event_reader json(in);
  json_value e;
  std::uint64_t ours = 0, others = 0;
  bool ok = json.start();
  while (ok && json.next(e)) {
    const json_value* ph = e.find("ph");
    const json_value* cat = e.find("cat");
    const json_value* name = e.find("name");
    const json_value* ts = e.find("ts");
    const json_value* dur = e.find("dur");
    const json_value* pid = e.find("pid");
    const json_value* tid = e.find("tid");
    if (ph == nullptr || ph->text != "X") {
      ++p.other_phases;
      continue;
    }
    onnxruntime_profile::event ev;
    std::int64_t pid_value = 0, tid_value = 0;
    if (cat == nullptr || name == nullptr || name->kind != json_value::type::string || ts == nullptr ||
        dur == nullptr || !ts->integer(ev.ts_us) || !dur->integer(ev.dur_us) || ev.ts_us < 0 || ev.dur_us < 0 ||
        pid == nullptr || tid == nullptr || !pid->integer(pid_value) || !tid->integer(tid_value) || pid_value < 0 ||
        tid_value < 0) {
      ++others;
      continue;
    }
    if (cat->text == "Node") {
      ev.category = "onnxruntime";
      ev.name = name->text;
      const std::string suffix = "_kernel_time";
      if (ev.name.size() > suffix.size() && ev.name.compare(ev.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        ev.name.resize(ev.name.size() - suffix.size());
    } else if (cat->text == "Session") {
      ev.category = "onnxruntime.session";
      ev.name = name->text;
      ev.model_run = ev.name == "model_run";
    } else {
      ++others;
      continue;
    }
    ++ours;
    ev.pid = static_cast<std::uint64_t>(pid_value);
    ev.tid = static_cast<std::uint64_t>(tid_value);
    ev.first_arg = p.args.size();
    if (const json_value* args = e.find("args"))
      for (std::size_t i = 0; i < args->keys.size(); ++i) detail::onnxruntime_add_arg(p, args->keys[i], args->values[i], 0);
    ev.arg_count = p.args.size() - ev.first_arg;
    p.events.push_back(std::move(ev));
  }
  const bool read_error = std::ferror(in) != 0;
  std::fclose(in);
  if (read_error) {
    error = "read error";
    return false;
  }
  if (!json.error().empty()) {
    error = "not an ONNX Runtime profile: " + json.error();
    return false;
  }
  if (ours == 0) {
    error = others == 0 && p.other_phases == 0
                ? "not an ONNX Runtime profile: no events"
                : "not an ONNX Runtime profile: no complete event with cat \"Node\" or \"Session\", whole-us ts/dur and pid/tid (" +
                      std::to_string(others + p.other_phases) + " other events)";
    return false;
  }
  p.has_stamp = detail::onnxruntime_file_stamp(path, p.stamp_ms);
  return true;
}

/// How a profile's times were put on the dump's: the CLOCK_MONOTONIC ns of
/// ONNX Runtime's time 0 (its profiler's start), where it came from, and
/// how well its `model_run` events then fit in the app's spans.
struct onnxruntime_time_base {
  enum class source : std::uint8_t { anchor, fit, file_name };
  source from = source::fit;
  std::int64_t start_ns = 0;      ///< CLOCK_MONOTONIC of ts 0
  bool guessed = false;           ///< one unmarked run: placed in the slowest app span near the file's time
  std::uint64_t runs = 0;         ///< model_run events (or every event when none)
  std::uint64_t enclosed = 0;     ///< of them, inside an app span of their thread
  /// fit: the width of the starts that keep every enclosed run inside its
  /// span (negative: no start keeps them all inside, by as much)
  std::int64_t window_ns = 0;
  /// One line: which base, and the fit.
  std::string describe() const {
    char text[320];
    const char* how = from == source::anchor ? "the app's onnxruntime.profiling_start_ns argument"
                      : from == source::file_name
                          ? "the profile's file name (its local time, to the ms), refined by fitting model_run into the app's spans"
                          : "fitting model_run into the app's spans";
    std::snprintf(text, sizeof text, "time base from %s: %llu of %llu runs inside an app span", how,
                  static_cast<unsigned long long>(enclosed), static_cast<unsigned long long>(runs));
    std::string out = text;
    if (from != source::anchor && enclosed != 0) {
      if (window_ns >= 0)
        std::snprintf(text, sizeof text, "; start known to +-%.1f us", static_cast<double>(window_ns) / 2000.0);
      else
        std::snprintf(text, sizeof text, "; the runs' fits disagree by %.1f us", static_cast<double>(-window_ns) / 1000.0);
      out += text;
    }
    return out;
  }
};

namespace detail {

/// The app's spans of some threads, with the parent of each: what the
/// time-base fit tests runs against. Only spans at least `min_ns` long are
/// kept (a run fits in nothing shorter).
class enclosing_spans {
 public:
  struct span {
    std::int64_t begin, end;
    std::int64_t parent;  ///< index in the same thread's list, -1 when none
  };

  bool load(dump_reader& r, std::uint32_t writer, const std::set<std::uint64_t>& tids, std::int64_t min_ns) {
    std::map<const thread_info*, std::vector<span>> raw;
    const bool ok = r.read_events([&](const event& e) {
      if (e.kind != event_kind::span || e.writer == nullptr || e.writer->id != writer || e.thread == nullptr) return;
      if (!tids.count(e.thread->os_tid) || e.end_ns - e.begin_ns < min_ns) return;
      raw[e.thread].push_back(span{e.begin_ns, e.end_ns, -1});
    });
    for (auto& entry : raw) {
      std::vector<span>& list = threads_[entry.first->os_tid];
      list.insert(list.end(), entry.second.begin(), entry.second.end());
    }
    for (auto& entry : threads_) {
      std::vector<span>& list = entry.second;
      std::sort(list.begin(), list.end(),
                [](const span& a, const span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end > b.end; });
      std::vector<std::int64_t> stack;
      for (std::size_t i = 0; i < list.size(); ++i) {
        while (!stack.empty() && list[static_cast<std::size_t>(stack.back())].end < list[i].end) stack.pop_back();
        list[i].parent = stack.empty() ? -1 : stack.back();
        stack.push_back(static_cast<std::int64_t>(i));
      }
    }
    return ok;
  }

  /// The innermost kept span of `tid` holding [begin, end]; null when none.
  const span* innermost(std::uint64_t tid, std::int64_t begin, std::int64_t end) const {
    const auto t = threads_.find(tid);
    if (t == threads_.end()) return nullptr;
    const std::vector<span>& list = t->second;
    auto it = std::upper_bound(list.begin(), list.end(), begin, [](std::int64_t b, const span& s) { return b < s.begin; });
    if (it == list.begin()) return nullptr;
    std::int64_t i = static_cast<std::int64_t>(it - list.begin()) - 1;
    // The spans that begin at or before `begin` and hold it are i's
    // ancestors (or i); the innermost that reaches `end` holds the run.
    for (int steps = 0; i >= 0 && steps < 4096; ++steps) {
      const span& s = list[static_cast<std::size_t>(i)];
      if (s.end >= end && s.begin <= begin) return &s;
      i = s.parent;
    }
    return nullptr;
  }
  /// The spans of `tid` at least `min_ns` long (sorted by begin).
  const std::vector<span>* of(std::uint64_t tid) const {
    const auto t = threads_.find(tid);
    return t == threads_.end() ? nullptr : &t->second;
  }

 private:
  std::map<std::uint64_t, std::vector<span>> threads_;
};

/// A run in ns from ts 0 (so a candidate start adds to both ends).
struct run_interval {
  std::uint64_t tid;
  std::int64_t begin, end;
};

}  // namespace detail

/// What converting one profile did.
struct onnxruntime_import_counts {
  std::uint64_t events = 0;   ///< spans added
  std::uint64_t clamped = 0;  ///< moved into their parent (whole-µs rounding): an ORT event, or the app's span around Run()
  std::int64_t most_clamped_ns = 0;  ///< the most one of them moved
  std::uint64_t outside = 0;  ///< left out: outside the dump's time
};

/// Puts ONNX Runtime profiles of one process on its dump's timeline: finds
/// each profile's time base against the app's spans, then adds its events
/// as spans (add_spans.hpp) nested in them.
class onnxruntime_alignment {
 public:
  /// ONNX Runtime measures in whole µs from a start it reads once, so its
  /// events can stick out of the app's span around Run() by up to a µs.
  static constexpr std::int64_t rounding_ns = 1000;

  /// Reads writer `writer`'s spans on the profiles' threads (those long
  /// enough to hold one of their runs). False with `error` on a read error.
  bool load(dump_reader& r, std::uint32_t writer, const std::vector<const onnxruntime_profile*>& profiles,
            std::string& error) {
    w_ = &r.writers().at(writer);
    std::set<std::uint64_t> tids;
    std::int64_t shortest = INT64_MAX;
    for (const auto* p : profiles)
      for (const auto& m : runs_of(*p)) {
        tids.insert(m.tid);
        shortest = std::min(shortest, m.end - m.begin);
      }
    if (!app_.load(r, writer, tids, std::max<std::int64_t>(0, shortest - 2 * rounding_ns))) {
      error = r.error();
      return false;
    }
    // One pass over the arguments for both kinds the time base uses (each
    // profile's time_base() looked again for the anchors before).
    r.for_each_annotation([&](const annotation& a) {
      if (a.type != format::annotation_record::arg || a.thread == nullptr || a.thread->writer != w_) return;
      if (a.has_name(onnxruntime_run_mark_key)) marks_[a.thread->os_tid].push_back(a.ns);
      else if (a.value_type == format::arg_type::integer && a.has_name(onnxruntime_anchor_key))
        anchors_.push_back(a.int_value());
    });
    for (auto& m : marks_) std::sort(m.second.begin(), m.second.end());
    return true;
  }

  /// Finds ONNX Runtime's start on the dump's CLOCK_MONOTONIC axis for
  /// profile `p`, in this order: an anchor argument the app recorded
  /// (onnxruntime_anchor_key; with several, the one that fits best), else
  /// the start that puts the most `model_run` events inside the app's spans
  /// of their thread, searched near the file name's stamp (any time zone, in
  /// quarter hours) or, without one, over the whole dump. False with
  /// `error` when no start puts a run inside an app span.
  bool time_base(const onnxruntime_profile& p, onnxruntime_time_base& base, std::string& error) const {
    const std::vector<detail::run_interval> runs = runs_of(p);
    const std::size_t stride = std::max<std::size_t>(1, runs.size() / 256);
    // One run (RunOptions profiling): the app's marked spans, when it marks.
    const std::vector<std::int64_t>* marks = nullptr;
    if (runs.size() == 1) {
      const auto m = marks_.find(runs[0].tid);
      if (m != marks_.end()) marks = &m->second;
    }
    const bool most_slack = runs.size() == 1 && marks == nullptr;
    const auto marked = [&](const detail::enclosing_spans::span& s) {
      if (marks == nullptr) return true;
      const auto it = std::lower_bound(marks->begin(), marks->end(), s.begin);
      return it != marks->end() && *it <= s.end;
    };
    std::pair<std::uint64_t, std::int64_t> best_score{0, INT64_MIN};
    std::int64_t best_start = 0;
    bool found = false;
    const auto consider = [&](std::int64_t start) {
      const auto score = score_of(runs, start, stride, most_slack);
      if (!found || score > best_score) {
        best_score = score;
        best_start = start;
        found = true;
      }
    };
    // 1. Anchors.
    for (const std::int64_t a : anchors_) {
      std::int64_t start;
      if (monotonic_of(a, start)) consider(start);
    }
    if (found) {
      base.from = onnxruntime_time_base::source::anchor;
    } else {
      // 2./3. Candidates: for a few of the longest runs, each placement in
      // an app span of their thread that a window allows; the best scored.
      std::vector<std::pair<std::int64_t, std::int64_t>> windows;  // allowed starts
      if (p.has_stamp) {
        base.from = onnxruntime_time_base::source::file_name;
        for (int quarter = -14 * 4; quarter <= 14 * 4; ++quarter) {
          std::int64_t start;
          const std::int64_t realtime = (p.stamp_ms - std::int64_t{quarter} * 15 * 60000) * 1000000;
          // The stamp is the profiler's start cut to the ms.
          if (monotonic_of(realtime, start)) windows.push_back({start - 100000, start + 1100000});
        }
      } else {
        base.from = onnxruntime_time_base::source::fit;
        windows.push_back({w_->first_ns - runs.back().end, w_->last_ns});
      }
      std::vector<std::size_t> longest(runs.size());
      for (std::size_t i = 0; i < runs.size(); ++i) longest[i] = i;
      std::sort(longest.begin(), longest.end(), [&](std::size_t a, std::size_t b) {
        return runs[a].end - runs[a].begin > runs[b].end - runs[b].begin;
      });
      longest.resize(std::min<std::size_t>(longest.size(), 4));
      std::size_t tried = 0;
      for (const auto& window : windows) {
        if (window.second < w_->first_ns - runs.back().end || window.first > w_->last_ns) continue;  // outside the dump
        for (const std::size_t k : longest) {
          const detail::run_interval& m = runs[k];
          const auto* list = app_.of(m.tid);
          if (list == nullptr) continue;
          for (const auto& s : *list) {
            if (!marked(s)) continue;
            const std::int64_t lo = std::max(window.first, s.begin - m.begin - rounding_ns);
            const std::int64_t hi = std::min(window.second, s.end - m.end + rounding_ns);
            if (lo > hi || ++tried > 400000) continue;
            consider(lo + (hi - lo) / 2);
          }
        }
      }
      if (!found || best_score.first == 0) {
        error = p.has_stamp
                    ? "no model_run of the profile fits in the app's spans near its file name's time: a profile of "
                      "another run, or the dump does not trace the thread that called Run()"
                    : std::string("no model_run of the profile fits in the app's spans of its thread: a profile of ") +
                          "another run, or the dump does not trace the thread that called Run() (record " +
                          onnxruntime_anchor_key + " to give the time base)";
        return false;
      }
      // Refine: the starts that keep every enclosed run inside its span
      // form an interval (when they agree); take its middle.
      std::int64_t lo = INT64_MIN, hi = INT64_MAX;
      for (const auto& m : runs)
        if (const auto* s = enclosing(m.tid, best_start + m.begin, best_start + m.end)) {
          lo = std::max(lo, s->begin - m.begin);
          hi = std::min(hi, s->end - m.end);
        }
      if (lo != INT64_MIN) {
        if (lo <= hi) best_start = lo + (hi - lo) / 2;
        base.window_ns = hi - lo;  // negative: the runs disagree (rounding), by as much
      }
    }
    base.start_ns = best_start;
    base.guessed = base.from != onnxruntime_time_base::source::anchor && most_slack;
    base.runs = runs.size();
    base.enclosed = 0;
    std::set<const detail::enclosing_spans::span*> hosts;
    for (const auto& m : runs)
      if (const auto* s = enclosing(m.tid, best_start + m.begin, best_start + m.end)) {
        ++base.enclosed;
        hosts.insert(s);
      }
    if (base.from != onnxruntime_time_base::source::anchor && hosts.size() * 2 < runs.size()) {
      error = "the profile does not fit this dump: at best " + std::to_string(hosts.size()) + " of its " +
              std::to_string(runs.size()) +
              " runs lie in app spans of their own (a profile of another run?); if the app traces no span "
              "per Run(), record " + onnxruntime_anchor_key + " to give the time base";
      return false;
    }
    return true;
  }

  /// Adds profile `p`'s events to `out` with ts 0 at `base.start_ns`. Each
  /// span keeps ONNX Runtime's whole-µs times moved 100 ns inward at both
  /// ends (ts + 0.1 µs to ts + dur - 0.1 µs; an event of 0 µs stays a
  /// point), so that events that touch in the profile stay apart; then it is
  /// clamped into its parent: the ORT event that holds it, or for an
  /// outermost event the app's span that holds it to within rounding_ns
  /// (ONNX Runtime's µs are truncated). Events outside the dump's time (more
  /// than a second out) are left out and counted.
  onnxruntime_import_counts add_spans(const onnxruntime_profile& p, const onnxruntime_time_base& base,
                                      imported_spans& out) const {
    onnxruntime_import_counts counts;
    std::vector<std::size_t> order(p.events.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const auto& x = p.events[a];
      const auto& y = p.events[b];
      if (x.tid != y.tid) return x.tid < y.tid;
      if (x.ts_us != y.ts_us) return x.ts_us < y.ts_us;
      return x.dur_us > y.dur_us;
    });
    struct open_event {
      std::int64_t end_us, begin_ns, end_ns;
    };
    std::vector<open_event> stack;
    std::uint64_t stack_tid = ~std::uint64_t{0};
    constexpr std::int64_t second = 1000000000;
    for (const std::size_t i : order) {
      const auto& e = p.events[i];
      if (e.tid != stack_tid) {
        stack.clear();
        stack_tid = e.tid;
      }
      // The parent, by ORT's own µs: an event that ends at or before this
      // one begins is a sibling (a point event at another's end is its child).
      while (!stack.empty() && stack.back().end_us <= e.ts_us && !(e.dur_us == 0 && stack.back().end_us == e.ts_us))
        stack.pop_back();
      std::int64_t end_us = std::min(e.ts_us + e.dur_us, stack.empty() ? INT64_MAX : stack.back().end_us);
      std::int64_t begin = base.start_ns + e.ts_us * 1000, end = base.start_ns + end_us * 1000;
      if (end - begin >= 1000) {
        begin += 100;
        end -= 100;
      }
      std::int64_t lo = INT64_MIN, hi = INT64_MAX;
      if (!stack.empty()) {
        lo = stack.back().begin_ns;
        hi = stack.back().end_ns;
      } else if (const auto* s = enclosing(e.tid, begin, end)) {
        lo = s->begin;
        hi = s->end;
      }
      const std::int64_t clamped_begin = std::min(std::max(begin, lo), hi);
      const std::int64_t clamped_end = std::max(std::min(end, hi), clamped_begin);
      if (clamped_begin != begin || clamped_end != end) {
        ++counts.clamped;
        counts.most_clamped_ns =
            std::max({counts.most_clamped_ns, clamped_begin - begin, end - clamped_end});
      }
      stack.push_back(open_event{end_us, clamped_begin, clamped_end});
      if (clamped_end < w_->first_ns - second || clamped_begin > w_->last_ns + second) {
        ++counts.outside;
        continue;
      }
      out.add_span(e.tid, e.category, e.name, clamped_begin, clamped_end);
      for (std::size_t k = e.first_arg; k < e.first_arg + e.arg_count; ++k) {
        const auto& a = p.args[k];
        switch (a.kind) {
          case onnxruntime_profile::arg::type::integer: out.add_int(a.key, a.integer); break;
          case onnxruntime_profile::arg::type::real: out.add_real(a.key, a.real); break;
          case onnxruntime_profile::arg::type::boolean: out.add_bool(a.key, a.integer != 0); break;
          case onnxruntime_profile::arg::type::text: out.add_text(a.key, a.text); break;
        }
      }
      ++counts.events;
    }
    return counts;
  }

 private:
  /// The runs a time base is fitted with: model_run events, or every event
  /// of a profile that has none; in ns from ORT's ts 0.
  static std::vector<detail::run_interval> runs_of(const onnxruntime_profile& p) {
    std::vector<detail::run_interval> runs;
    for (const auto& e : p.events)
      if (e.model_run) runs.push_back({e.tid, e.ts_us * 1000, (e.ts_us + e.dur_us) * 1000});
    if (runs.empty())
      for (const auto& e : p.events) runs.push_back({e.tid, e.ts_us * 1000, (e.ts_us + e.dur_us) * 1000});
    return runs;
  }

  /// The innermost app span of `tid` that holds [begin, end] to within
  /// rounding_ns at each end.
  const detail::enclosing_spans::span* enclosing(std::uint64_t tid, std::int64_t begin, std::int64_t end) const {
    const std::int64_t mid = begin + (end - begin) / 2;
    return app_.innermost(tid, std::min(begin + rounding_ns, mid), std::max(end - rounding_ns, mid));
  }

  /// How well `start` puts the runs in the app's spans: the app spans that
  /// hold a run (each Run() has its own: a long span such as the app's
  /// set-up could otherwise swallow a whole profile of another run), then
  /// how snugly: the app's spans least longer than the runs. With
  /// `most_slack` (one run the app did not mark) the opposite: that Run()
  /// also started and wrote the profile, so its app span is far longer than
  /// its model_run (measured: 107-209 us around a 63-93 us model_run, where
  /// unprofiled runs took 21-71 us); a guess (a slow first run, or a long
  /// span that ends in that ms, fits as well), which the output says.
  std::pair<std::uint64_t, std::int64_t> score_of(const std::vector<detail::run_interval>& runs, std::int64_t start,
                                                  std::size_t stride, bool most_slack) const {
    std::set<const detail::enclosing_spans::span*> hosts;
    std::int64_t slack = 0;
    for (std::size_t i = 0; i < runs.size(); i += stride) {
      const detail::run_interval& m = runs[i];
      if (const auto* s = enclosing(m.tid, start + m.begin, start + m.end)) {
        if (hosts.insert(s).second) slack += std::abs((s->end - s->begin) - (m.end - m.begin));
      }
    }
    return {hosts.size(), most_slack ? slack : -slack};
  }

  /// CLOCK_REALTIME -> CLOCK_MONOTONIC through the calibration pair nearest
  /// in time (the offset drifts with NTP slewing over a long run).
  bool monotonic_of(std::int64_t realtime_ns, std::int64_t& out) const {
    const calibration_pair* best = nullptr;
    for (const calibration_pair& c : w_->calibration)
      if (best == nullptr || std::llabs(static_cast<std::int64_t>(c.realtime_ns) - realtime_ns) <
                                 std::llabs(static_cast<std::int64_t>(best->realtime_ns) - realtime_ns))
        best = &c;
    if (best == nullptr) return false;
    out = realtime_ns - static_cast<std::int64_t>(best->realtime_ns) + static_cast<std::int64_t>(best->monotonic_ns);
    return true;
  }

  const writer_info* w_ = nullptr;
  detail::enclosing_spans app_;
  std::map<std::uint64_t, std::vector<std::int64_t>> marks_;  ///< per OS tid: onnxruntime_run_mark_key's times
  std::vector<std::int64_t> anchors_;  ///< onnxruntime_anchor_key values the app recorded (CLOCK_REALTIME ns)
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
