// SPDX-License-Identifier: MIT
// The `edgetrace summary` subcommand: the per-operator table (text, CSV or JSON).
#include "cli.hpp"

#include <edgetrace/sinks/summary/format.hpp>
#include <edgetrace/sinks/summary/json.hpp>
#include <edgetrace/sinks/summary/slow_iterations.hpp>
#include <string>
#include <vector>

namespace edgetrace_cli {
namespace {

/// With --per: each dump's slowest iterations, the layers beyond their
/// usual time, what its device samples say differed, and the command that
/// writes each alone (docs/ANALYSIS.md, "Why was it slow?"). Printed when
/// the dump has device samples or --slowest asks for it; as text after the
/// table, or in JSON as "slowest_iterations" (one object per dump).
int explain_slowest(std::vector<std::unique_ptr<et::dump_reader>>& readers, const std::vector<std::string>& paths,
                    const std::string& per, std::size_t slowest, bool json, std::string& text) {
  if (per.empty()) return exit_ok;
  std::vector<std::string> objects;
  for (std::size_t i = 0; i < readers.size(); ++i) {
    bool has_device = false;
    for (const auto& w : readers[i]->writers()) has_device = has_device || !w.second.device.samples.empty();
    if (!has_device && slowest == 0) continue;
    et::slow_iterations_result result;
    std::string error;
    if (!et::explain_slow_iterations(*readers[i], per, slowest, result, error)) return input_error(paths[i], error);
    if (json) objects.push_back(et::slow_iterations_json(result));
    else text += "\n" + (readers.size() > 1 ? paths[i] + ": " : std::string()) + et::slow_iterations_text(result);
  }
  if (!json || objects.empty()) return exit_ok;
  text = ",\"slowest_iterations\":[";
  for (std::size_t i = 0; i < objects.size(); ++i) text += (i == 0 ? "" : ",\n") + objects[i];
  text += "]";
  return exit_ok;
}

}  // namespace

int run_summary(const command& c, const arguments& args) {
  parsed_options p;
  if (int rc; !parse_analysis_options(c, args, p, rc)) return rc;
  et::summary_options o;
  std::string format = "table";
  if (const int rc = summary_options_from(c, p, o, format); rc != exit_ok) return rc;
  std::size_t slowest = 0;
  if (const int rc = slowest_from(c, p, o.per, slowest); rc != exit_ok) return rc;
  if (slowest != 0 && format == "csv") return usage_error(&c, "--slowest applies to the table and json formats");
  const std::string* output = p.get("--output");
  if (const int rc = refuse_overwriting_inputs(p.positional, {output ? *output : ""}); rc != exit_ok) return rc;
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  et::summary_result result;
  if (const int rc = summarise(p.positional, o, readers, result); rc != exit_ok) return rc;
  const std::string source = joined(p.positional);
  std::string text = format == "csv"    ? et::summary_csv(result)
                           : format == "json" ? et::summary_json(result, source)
                                              : et::summary_table(result, source);
  std::string explained;
  if (format != "csv")
    if (const int rc = explain_slowest(readers, p.positional, o.per, slowest, format == "json", explained); rc != exit_ok)
      return rc;
  if (format == "json" && !explained.empty()) text.insert(text.rfind('}'), explained);  // a member of the document
  else text += explained;
  if (const int rc = write_text(output ? *output : "", text); rc != exit_ok) return rc;
  return report_all(readers, "summary written");
}

}  // namespace edgetrace_cli
