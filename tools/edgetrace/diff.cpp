// SPDX-License-Identifier: MIT
// The `edgetrace diff` subcommand: two runs (or two sets of runs) row by row, with a noise verdict.
#include "cli.hpp"

#include <edgetrace/sinks/diff.hpp>
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace edgetrace_cli {

namespace {

/// One summary per dump (the per-run means diff's noise is measured on).
int build_run_summaries(const std::vector<std::string>& paths, const et::summary_options& o,
                        std::vector<et::summary_result>& runs) {
  for (const std::string& path : paths) {
    std::vector<std::unique_ptr<et::dump_reader>> one;
    if (const int rc = open_dumps({path}, one); rc != exit_ok) return rc;
    runs.emplace_back();
    if (const int rc = build_summary(one, o, runs.back()); rc != exit_ok) return rc;
  }
  return exit_ok;
}

}  // namespace

int run_diff(const command& c, const arguments& args) {
  // BASE... --vs NEW...: options may stand on either side of --vs.
  const auto vs = std::find(args.begin(), args.end(), std::string("--vs"));
  parsed_options p, p_new;
  if (const int rc = parse_options(c, arguments(args.begin(), vs), summary_valued, p); rc != exit_ok) return rc;
  if (vs != args.end()) {
    if (const int rc = parse_options(c, arguments(vs + 1, args.end()), summary_valued, p_new); rc != exit_ok) return rc;
    p.values.insert(p.values.end(), p_new.values.begin(), p_new.values.end());
    p.help = p.help || p_new.help;
  }
  if (p.help) return command_help(c);
  if (p.get("--slowest") != nullptr) return usage_error(&c, "--slowest applies to summary and report, not diff");
  std::vector<std::string> base_paths = p.positional, new_paths = p_new.positional;
  if (vs == args.end()) {
    if (p.positional.size() != 2)
      return usage_error(&c, "'diff' needs two dumps (BASE NEW), or repeated runs: BASE... --vs NEW...");
    base_paths = {p.positional[0]};
    new_paths = {p.positional[1]};
  } else if (base_paths.empty() || new_paths.empty()) {
    return usage_error(&c, "'diff BASE... --vs NEW...' needs at least one dump on each side of --vs");
  }
  if (p.get("--sort-by")) return usage_error(&c, "diff sorts by impact; --sort-by does not apply");
  for (const char* option : {"--wait", "--wait-category"})
    if (p.get(option))
      return usage_error(&c, std::string(option) + " changes only summary's share column, which diff does not show");
  et::summary_options o;
  std::string format = "table";
  if (const int rc = summary_options_from(c, p, o, format); rc != exit_ok) return rc;
  const std::size_t top = o.top;
  o.top = 0;
  const std::string* output = p.get("--output");
  std::vector<std::string> all_paths = base_paths;
  all_paths.insert(all_paths.end(), new_paths.begin(), new_paths.end());
  if (const int rc = refuse_overwriting_inputs(all_paths, {output ? *output : ""}); rc != exit_ok) return rc;
  std::vector<std::unique_ptr<et::dump_reader>> base_readers, new_readers;
  if (const int rc = open_dumps(base_paths, base_readers); rc != exit_ok) return rc;
  if (const int rc = open_dumps(new_paths, new_readers); rc != exit_ok) return rc;
  for (const auto& r : new_readers)
    if (r->version_major() != base_readers[0]->version_major())
      return input_error(r->path(), "format version differs from " + base_paths[0]);
  et::summary_result base, next;
  if (const int rc = build_summary(base_readers, o, base); rc != exit_ok) return rc;
  if (const int rc = build_summary(new_readers, o, next); rc != exit_ok) return rc;
  auto rows = et::diff_summaries(base, next);
  et::diff_row iteration = et::diff_iteration(base, next);  // empty key without --per
  if (base_paths.size() > 1 || new_paths.size() > 1) {
    std::vector<et::summary_result> base_runs, new_runs;
    if (const int rc = build_run_summaries(base_paths, o, base_runs); rc != exit_ok) return rc;
    if (const int rc = build_run_summaries(new_paths, o, new_runs); rc != exit_ok) return rc;
    et::add_run_noise(rows, base_runs, new_runs);
    if (!iteration.key.empty()) et::add_iteration_noise(iteration, base_runs, new_runs);
  }
  auto side = [](const std::vector<std::string>& paths) {
    std::string text;
    for (const std::string& path : paths) text += (text.empty() ? "" : " ") + path;
    return paths.size() > 1 ? text + " (" + std::to_string(paths.size()) + " runs)" : text;
  };
  const std::string text =
      format == "csv"    ? et::diff_csv(rows, top, &iteration)
      : format == "json" ? et::diff_json(rows, side(base_paths), side(new_paths), top, &iteration)
                         : et::diff_table(rows, side(base_paths), side(new_paths), top, et::detail::group_label(base),
                                          &iteration, base.per_from_marks);
  if (const int rc = write_text(output ? *output : "", text); rc != exit_ok) return rc;
  base_readers.insert(base_readers.end(), std::make_move_iterator(new_readers.begin()),
                      std::make_move_iterator(new_readers.end()));
  return report_all(base_readers, "diff written");
}

}  // namespace edgetrace_cli
