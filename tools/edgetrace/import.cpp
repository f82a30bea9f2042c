// SPDX-License-Identifier: MIT
// The `edgetrace import` subcommand: an engine's own profile (ONNX Runtime's) into the app's dump, as spans of its threads.
#include "cli.hpp"

#include <edgetrace/import/add_spans.hpp>
#include <edgetrace/import/onnxruntime.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace edgetrace_cli {

int run_import(const command& c, const arguments& args) {
  parsed_options p;
  if (const int rc = parse_options(c, args, {"--output"}, p); rc != exit_ok) return rc;
  if (p.help) return command_help(c);
  if (p.positional.size() < 2) return usage_error(&c, "'import' needs a DUMP and at least one PROFILE.json");
  const std::string* output = p.get("--output");
  if (!output || output->empty()) return usage_error(&c, "'import' needs -o OUT.etr");
  if (!ends_with(*output, ".etr")) return usage_error(&c, "the output is a dump: -o OUT.etr, not '" + *output + "'");
  if (const int rc = refuse_overwriting_inputs(p.positional, {*output}); rc != exit_ok) return rc;
  const std::string& dump = p.positional[0];
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  if (const int rc = open_dumps({dump}, readers); rc != exit_ok) return rc;
  et::dump_reader& r = *readers[0];
  if (!r.unknown_rate().empty()) return input_error(dump, r.unknown_rate());
  for (const auto& w : r.writers())
    for (const auto& cat : w.second.categories)
      if (cat.second == "onnxruntime" || cat.second == "onnxruntime.session")
        return input_error(dump, "already holds ONNX Runtime spans (category " + cat.second +
                                     "): import into the app's own dump, once");

  // Every profile read first: they name the process, and the app's spans
  // are read once for all of them.
  std::vector<et::onnxruntime_profile> profiles(p.positional.size() - 1);
  std::uint32_t writer = 0;
  for (std::size_t i = 1; i < p.positional.size(); ++i) {
    const std::string& path = p.positional[i];
    et::onnxruntime_profile& profile = profiles[i - 1];
    std::string error;
    if (!et::read_onnxruntime_profile(path, profile, error)) return input_error(path, error);
    std::set<std::uint64_t> pids;
    for (const auto& e : profile.events) pids.insert(e.pid);
    if (pids.size() != 1)
      return input_error(path, "holds events of " + std::to_string(pids.size()) +
                                   " processes; ONNX Runtime writes one per profile");
    const std::uint64_t pid = *pids.begin();
    std::uint32_t found = 0;
    std::string dump_pids;
    for (const et::writer_info* w : r.writers_in_order()) {
      if (!w->has_process) continue;
      if (w->pid == pid && found == 0) found = w->id;
      dump_pids += (dump_pids.empty() ? "" : ", ") + std::to_string(w->pid);
    }
    if (found == 0)
      return input_error(path, "a profile of process " + std::to_string(pid) + "; " + dump + " traced process" +
                                   (dump_pids.find(',') != std::string::npos ? "es " : " ") +
                                   (dump_pids.empty() ? "(none)" : dump_pids));
    if (writer != 0 && found != writer)
      return input_error(path, "a profile of another process than " + p.positional[1] +
                                   ": import each process's profiles on their own");
    writer = found;
  }
  std::vector<const et::onnxruntime_profile*> all;
  for (const auto& profile : profiles) all.push_back(&profile);
  et::onnxruntime_alignment alignment;
  std::string error;
  if (!alignment.load(r, writer, all, error)) return input_error(dump, error);

  et::imported_spans spans;
  std::uint64_t clamped = 0, outside = 0;
  std::int64_t most_clamped = 0;
  for (const auto& profile : profiles) {
    et::onnxruntime_time_base base;
    if (!alignment.time_base(profile, base, error)) return input_error(profile.path, error);
    const et::onnxruntime_import_counts counts = alignment.add_spans(profile, base, spans);
    if (counts.events == 0)
      return input_error(profile.path, "every event lies outside the dump's time (" + base.describe() + ")");
    std::fprintf(stderr, "edgetrace: note: %s: %llu event(s); %s\n", base_name(profile.path).c_str(),
                 static_cast<unsigned long long>(counts.events), base.describe().c_str());
    if (base.enclosed * 100 < base.runs * 99)
      std::fprintf(stderr,
                   "edgetrace: warning: %s: only %llu of %llu runs lie inside an app span: trace the call to Run() "
                   "with EDGETRACE_SCOPE, or record %s (README, \"Engines you did not write\")\n",
                   base_name(profile.path).c_str(), static_cast<unsigned long long>(base.enclosed),
                   static_cast<unsigned long long>(base.runs), et::onnxruntime_anchor_key);
    if (base.guessed)
      std::fprintf(stderr,
                   "edgetrace: warning: %s: one run with no time of its own: placed in the slowest app span within the "
                   "ms its file name gives, a guess; mark the span around a profiled Run() with %s (README, \"Engines "
                   "you did not write\")\n",
                   base_name(profile.path).c_str(), et::onnxruntime_run_mark_key);
    clamped += counts.clamped;
    most_clamped = std::max(most_clamped, counts.most_clamped_ns);
    outside += counts.outside;
  }
  if (clamped != 0)
    std::fprintf(stderr,
                 "edgetrace: note: %llu event(s) moved into their parent by at most %.1f us (ONNX Runtime's whole-us "
                 "times)\n",
                 static_cast<unsigned long long>(clamped), static_cast<double>(most_clamped) / 1000.0);
  if (outside != 0)
    std::fprintf(stderr, "edgetrace: warning: %llu event(s) outside the dump's time left out\n",
                 static_cast<unsigned long long>(outside));

  std::FILE* out = std::fopen(output->c_str(), "wb");
  if (!out) return output_error(*output, "cannot write");
  et::added_spans added;
  const bool ok = et::write_dump_with_spans(r, writer, spans, out, added, error);
  const bool closed = std::fclose(out) == 0;
  if (!ok || !closed) {
    remove_partial_output(*output);
    return input_error(*output, error.empty() ? "write error" : error);
  }
  char line[200];
  std::snprintf(line, sizeof line, "%llu span(s) and %llu argument(s) imported into %s (%llu thread(s) of the app%s)",
                static_cast<unsigned long long>(added.spans), static_cast<unsigned long long>(added.args),
                output->c_str(), static_cast<unsigned long long>(added.threads_joined),
                added.threads_created ? (", " + std::to_string(added.threads_created) + " new track(s)").c_str() : "");
  return report_all(readers, line);
}

}  // namespace edgetrace_cli
