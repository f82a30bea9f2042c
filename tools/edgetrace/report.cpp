// SPDX-License-Identifier: MIT
// The `edgetrace report` subcommand: the summary as one HTML page.
#include "cli.hpp"

#include <edgetrace/sinks/report.hpp>
#include <edgetrace/sinks/report_device.hpp>
#include <string>

namespace edgetrace_cli {

int run_report(const command& c, const arguments& args) {
  parsed_options p;
  if (int rc; !parse_analysis_options(c, args, p, rc)) return rc;
  if (p.get("--format")) return usage_error(&c, "a report is HTML; --format does not apply");
  if (p.get("--columns")) return usage_error(&c, "a report shows every column; --columns is for summary's table");
  et::summary_options o;
  o.top = 30;
  std::string format;
  if (const int rc = summary_options_from(c, p, o, format); rc != exit_ok) return rc;
  // A table in network order (or by name) is a walk through every layer:
  // cut at 30 it dropped a 33-layer model's last three. Every row, unless --top.
  if (!p.get("--top") && (o.sort_by == et::summary_column::order || o.sort_by == et::summary_column::key)) o.top = 0;
  const std::string* given = p.get("--output");
  const std::string output = given ? *given : with_extension(p.positional[0], ".html");
  if (output.empty()) return usage_error(&c, "empty output file name");
  if (const int rc = refuse_overwriting_inputs(p.positional, {output}); rc != exit_ok) return rc;
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  et::summary_result result;
  if (const int rc = summarise(p.positional, o, readers, result); rc != exit_ok) return rc;
  et::report_options ro;
  // The device's tracks, under the iteration latency with --per.
  std::size_t slowest = 0;
  if (const int rc = slowest_from(c, p, o.per, slowest); rc != exit_ok) return rc;
  for (std::size_t i = 0; i < readers.size(); ++i) {
    std::string html, error;
    if (!et::report_device_html(*readers[i], o.per, slowest, html, error)) return input_error(p.positional[i], error);
    ro.sections += html;
  }
  ro.source = joined(p.positional);
  ro.title = "edgetrace report: " + ro.source;
  if (const int rc = write_text(output, et::report_html(result, ro)); rc != exit_ok) return rc;
  return report_all(readers, "report written to " + output);
}

}  // namespace edgetrace_cli
