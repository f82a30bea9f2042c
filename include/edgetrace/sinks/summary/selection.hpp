// SPDX-License-Identifier: MIT
// Which spans a summary counts in one dump: thread selection, iterations, the warm-up cutoff, --phase ranges, --per windows and --by arg keys (internal to summary.hpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>
#include <edgetrace/sinks/summary/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// The part of summary_builder that decides what counts, before and while
/// a dump's spans are read. Holds the options and the result the builder
/// adds to; each prepare step runs once per dump.
class summary_selection {
 protected:
  explicit summary_selection(summary_options options) : options_(std::move(options)) {}

  /// The per-dump steps before any span is read, in order: what delimits
  /// iterations, the warm-up cutoff (a forward pre-pass), the --phase
  /// ranges, the --by arg keys, the --per windows (another pre-pass).
  /// False with `error` set when the dump cannot satisfy an option.
  bool prepare(dump_reader& r, std::int64_t& cutoff, std::string& error) {
    if (!prepare_iterations(r, error)) return false;
    cutoff = std::numeric_limits<std::int64_t>::min();
    if (options_.skip_warmup > 0 && !find_warmup_cutoff(r, cutoff, error)) return false;
    if (!prepare_phase(r, error)) return false;
    if (!check_arg_keys(r, error)) return false;
    return prepare_per(r, cutoff, error);
  }

  static bool fail(std::string& error, const std::string& what) {
    error = what;
    return false;
  }

  static std::string thread_label(const thread_info& t, const dump_reader& r) {
    std::string name = t.name.empty() ? "thread" : t.name;
    char text[96];
    if (r.writers().size() > 1 || multi_dump_labels_)
      std::snprintf(text, sizeof text, " (pid %llu, tid %llu)", static_cast<unsigned long long>(t.writer->pid),
                    static_cast<unsigned long long>(t.os_tid));
    else
      std::snprintf(text, sizeof text, " (tid %llu)", static_cast<unsigned long long>(t.os_tid));
    return name + text;
  }

  bool thread_selected(const thread_info& t, const dump_reader&) const {
    if (options_.threads.empty()) return true;
    const std::string tid = std::to_string(t.os_tid);
    for (const std::string& wanted : options_.threads)
      if (wanted == t.name || wanted == tid) return true;
    return false;
  }

  /// Whether time `ns` of writer `w` falls in the --phase (always without it).
  bool in_phase(const writer_info* w, std::int64_t ns) const {
    if (options_.phase.empty()) return true;
    const auto found = phase_ranges_.find(w);
    if (found == phase_ranges_.end()) return false;
    for (const auto& range : found->second)
      if (ns >= range.first && ns < range.second) return true;
    return false;
  }

  /// What counts as waiting, in words, for the header ("" = nothing).
  std::string wait_rule() const {
    std::string rule;
    if (options_.wait) rule = "names matching /" + options_.wait.text() + (options_.wait.ignores_case() ? "/i" : "/");
    if (!options_.wait_categories.empty()) {
      std::string list;
      for (const std::string& c : options_.wait_categories) list += (list.empty() ? "" : ",") + c;
      rule += (rule.empty() ? "" : " or ") + std::string("category ") + list;
    }
    return rule;
  }

  int iteration_row_for(const std::string& name, bool marks) {
    for (std::size_t i = 0; i < result_.iterations.size(); ++i)
      if (!result_.iterations[i].from_flow && result_.iterations[i].name == name) return static_cast<int>(i);
    iteration_row it;
    it.name = name;
    it.from_marks = marks;
    result_.iterations.push_back(std::move(it));
    return static_cast<int>(result_.iterations.size() - 1);
  }

  /// Decides what delimits iterations in this dump: the named mark or span,
  /// or every mark name.
  bool prepare_iterations(const dump_reader& r, std::string& error) {
    std::set<std::string> marks, spans;
    for (const auto& w : r.writers())
      for (const auto& s : w.second.sites) {
        if (s.second.kind == format::site_kind::mark) marks.insert(s.second.name);
        if (s.second.kind == format::site_kind::span) spans.insert(s.second.name);
      }
    iterations_are_spans_ = false;
    warmup_marks_.clear();
    // --skip-warmup K --per NAME: NAME's instances are the iterations to
    // skip, as they are the ones --per counts (no --iteration needed).
    iteration_name_ = options_.iteration.empty() && options_.skip_warmup > 0 ? options_.per : options_.iteration;
    if (!iteration_name_.empty()) {
      if (marks.count(iteration_name_)) {
        iteration_row_for(iteration_name_, true);
        warmup_marks_ = iteration_name_;
      } else if (spans.count(iteration_name_)) {
        iterations_are_spans_ = true;
        iteration_row_for(iteration_name_, false);
      } else {
        std::string known;
        for (const auto& m : marks) known += (known.empty() ? "" : ", ") + ("mark \"" + m + "\"");
        return fail(error, "no mark or span named \"" + iteration_name_ + "\" in the dump" +
                               (known.empty() ? std::string(" (it has no marks)") : " (marks: " + known + ")"));
      }
      return true;
    }
    for (const auto& m : marks) iteration_row_for(m, true);
    if (options_.skip_warmup > 0) {
      if (marks.empty())
        return fail(error, "--skip-warmup needs iterations: EDGETRACE_MARK marks in the dump, or --iteration "
                           "NAME naming a top-level span");
      if (marks.size() > 1)
        return fail(error, "--skip-warmup: the dump has several mark names; choose one with --iteration NAME");
      warmup_marks_ = *marks.begin();
    }
    return true;
  }

  /// Forward pre-pass: the time before which spans belong to the first K
  /// iterations (the (K+1)-th mark, or the end of the K-th iteration span).
  bool find_warmup_cutoff(dump_reader& r, std::int64_t& cutoff, std::string& error) {
    const std::uint64_t k = options_.skip_warmup;
    const bool spans = iterations_are_spans_;
    const std::size_t keep = static_cast<std::size_t>(spans ? k : k + 1);
    std::priority_queue<std::int64_t> smallest;  // max-heap of the `keep` smallest times
    const std::string& name = spans ? iteration_name_ : warmup_marks_;
    const bool ok = r.read_events([&](const event& e) {
      if (e.site == nullptr || e.site->name != name) return;
      std::int64_t t;
      if (spans && e.kind == event_kind::span) t = e.end_ns + 1;
      else if (!spans && e.kind == event_kind::instant && e.site->kind == format::site_kind::mark) t = e.begin_ns;
      else return;
      if (smallest.size() < keep) smallest.push(t);
      else if (t < smallest.top()) {
        smallest.pop();
        smallest.push(t);
      }
    });
    if (!ok) return fail(error, r.error());
    if (smallest.size() < keep) {
      cutoff = std::numeric_limits<std::int64_t>::max();
      result_.notes.push_back(r.path() + ": only " + std::to_string(smallest.size()) + " \"" + name +
                              "\" boundaries, fewer than --skip-warmup needs: everything was skipped");
    } else {
      cutoff = smallest.top();
    }
    return true;
  }

  /// --phase: the [begin, end) ranges of that phase per writer (a phase
  /// lasts until the writer's next one). Fails when no writer has it.
  bool prepare_phase(const dump_reader& r, std::string& error) {
    phase_ranges_.clear();
    if (options_.phase.empty()) return true;
    std::set<std::string> known;
    for (const auto& w : r.writers()) {
      const std::vector<phase_change>& phases = w.second.phases;
      for (std::size_t i = 0; i < phases.size(); ++i) {
        known.insert(phases[i].name);
        if (phases[i].name != options_.phase) continue;
        const std::int64_t end = i + 1 < phases.size() ? phases[i + 1].ns : std::numeric_limits<std::int64_t>::max();
        phase_ranges_[&w.second].emplace_back(phases[i].ns, end);
      }
    }
    if (!phase_ranges_.empty()) return true;
    std::string names;
    for (const auto& name : known) names += (names.empty() ? "" : ", ") + ("\"" + name + "\"");
    return fail(error, "no phase named \"" + options_.phase + "\" in the dump" +
                           (names.empty() ? std::string(" (it has no phases: see edgetrace::phase)")
                                          : " (phases: " + names + ")"));
  }

  /// --by arg:KEY: every key must name some span argument of the dump.
  bool check_arg_keys(const dump_reader& r, std::string& error) const {
    if (options_.by_args.empty()) return true;
    std::set<std::string> keys;
    for (const auto& w : r.writers())
      for (const auto& site : w.second.sites)
        if (format::is_argument(site.second.kind))
          keys.insert(site.second.name);
    for (const std::string& key : options_.by_args) {
      if (keys.count(key) != 0) continue;
      std::string known;
      for (const std::string& k : keys) known += (known.empty() ? "" : ", ") + ("\"" + k + "\"");
      return fail(error, "no span argument named \"" + key + "\" in the dump" +
                             (known.empty() ? std::string(" (it has none: see EDGETRACE_ARG)") : " (arguments: " + known + ")"));
    }
    return true;
  }

  /// --per: reads the dump's iterations (a forward pre-pass) under the
  /// thread, warm-up and phase filters, and adds them to the totals.
  bool prepare_per(dump_reader& r, std::int64_t cutoff, std::string& error) {
    per_active_ = !options_.per.empty();
    if (!per_active_) return true;
    per_ = iteration_windows();
    const bool ok = per_.collect(
        r, options_.per,
        [&](const thread_info* t, std::int64_t begin, std::int64_t end) {
          return thread_selected(*t, r) && end >= cutoff && in_phase(t->writer, begin);
        },
        error);
    if (!ok) return false;
    result_.per = options_.per;
    result_.per_from_marks = per_.from_marks();
    result_.per_count += per_.count();
    result_.per_total_ns += per_.total_ns();
    result_.per_latency.merge(per_.latency());
    result_.per_cut_at_pause += per_.cut_at_pause();
    return true;
  }

  summary_options options_;
  summary_result result_;
  bool iterations_are_spans_ = false;
  std::string iteration_name_;  ///< --iteration, or --per's name when --skip-warmup needs iterations
  std::string warmup_marks_;
  std::map<const writer_info*, std::vector<std::pair<std::int64_t, std::int64_t>>> phase_ranges_;
  bool per_active_ = false;
  iteration_windows per_;
  static constexpr bool multi_dump_labels_ = false;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
