// SPDX-License-Identifier: MIT
// The `edgetrace summary` subcommand: the per-operator table (text, CSV or JSON).
#include "cli.hpp"

#include <edgetrace/sinks/summary/format.hpp>
#include <string>
#include <vector>

namespace edgetrace_cli {

int run_summary(const command& c, const arguments& args) {
  parsed_options p;
  if (int rc; !parse_analysis_options(c, args, p, rc)) return rc;
  et::summary_options o;
  std::string format = "table";
  if (const int rc = summary_options_from(c, p, o, format); rc != exit_ok) return rc;
  const std::string* output = p.get("--output");
  if (const int rc = refuse_overwriting_inputs(p.positional, {output ? *output : ""}); rc != exit_ok) return rc;
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  et::summary_result result;
  if (const int rc = summarise(p.positional, o, readers, result); rc != exit_ok) return rc;
  const std::string source = joined(p.positional);
  const std::string text = format == "csv"    ? et::summary_csv(result)
                           : format == "json" ? et::summary_json(result, source)
                                              : et::summary_table(result, source);
  if (const int rc = write_text(output ? *output : "", text); rc != exit_ok) return rc;
  return report_all(readers, "summary written");
}

}  // namespace edgetrace_cli
