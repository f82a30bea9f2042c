// SPDX-License-Identifier: MIT
// The `edgetrace csv` subcommand: one row per span, and the marks, counters and allocations as tables of their own.
#include "cli.hpp"

#include <edgetrace/sinks/csv/tables.hpp>
#include <edgetrace/sinks/summary/iterations.hpp>

#include <string>
#include <vector>

namespace edgetrace_cli {

namespace {

/// Parses --tables LIST (spans, marks, counters, allocs or all) in the
/// order the tables are listed above; a usage error on an unknown name.
int parse_tables(const command& c, const std::string& text, std::vector<et::csv_table>& tables) {
  const std::vector<et::csv_table> known = {et::csv_table::spans, et::csv_table::marks, et::csv_table::counters,
                                            et::csv_table::allocs};
  std::vector<bool> wanted(known.size(), false);
  for (const std::string& item : et::split_list(text)) {
    const bool all = item == "all";
    bool found = all;
    for (std::size_t i = 0; i < known.size(); ++i)
      if (all || item == et::csv_table_name(known[i])) wanted[i] = found = true;
    if (!found) {
      std::string message = "--tables takes spans, marks, counters, allocs or all, not '" + item + "'";
      if (const char* near = nearest(item, {"spans", "marks", "counters", "allocs", "all"}))
        message += std::string("; did you mean '") + near + "'?";
      return usage_error(&c, message);
    }
  }
  for (std::size_t i = 0; i < known.size(); ++i)
    if (wanted[i]) tables.push_back(known[i]);
  if (tables.empty()) return usage_error(&c, "--tables needs at least one of spans, marks, counters, allocs, all");
  return exit_ok;
}

/// Where each table goes: OUT when it is the only one; with several, the
/// spans to OUT and each other table to OUT with ".csv" replaced by
/// ".TABLE.csv" (run.csv, run.marks.csv, ...).
std::vector<std::string> table_outputs(const std::string& output, const std::vector<et::csv_table>& tables) {
  if (tables.size() == 1) return {output};
  const std::string stem = ends_with(output, ".csv") ? output.substr(0, output.size() - 4) : output;
  std::vector<std::string> outputs;
  for (et::csv_table t : tables)
    outputs.push_back(t == et::csv_table::spans ? output : stem + "." + et::csv_table_name(t) + ".csv");
  return outputs;
}

}  // namespace

int run_csv(const command& c, const arguments& args) {
  conversion_arguments a;
  int rc = exit_ok;
  if (!parse_conversion(c, args, {"--tables"}, ".csv", a, rc)) return rc;
  if (a.options.get("--focus"))
    return usage_error(&c, "--focus applies to json and perfetto; csv writes every row its selection keeps (--per "
                           "NAME adds the iteration column)");
  std::vector<et::csv_table> tables;
  const std::string* list = a.options.get("--tables");
  if (const int r = parse_tables(c, list ? *list : "spans", tables); r != exit_ok) return r;
  if (tables.size() > 1 && a.output == "-")
    return usage_error(&c, "-o - takes one table; several --tables go to files of their own (run.csv, run.marks.csv, ...)");
  const std::vector<std::string> outputs = table_outputs(a.output, tables);
  if (const int r = refuse_overwriting_inputs({a.dump}, outputs); r != exit_ok) return r;
  et::dump_reader r;
  if (!r.open(a.dump) || !r.read_metadata()) return input_error(a.dump, r.error());
  if (const int code = prepare_selection(c, a.options, r, a.selection, true); code != exit_ok) return code;
  et::csv_options options;
  options.selection = a.selection;
  et::iteration_windows iterations;
  if (const std::string* per = a.options.get("--per")) {
    std::string error;
    if (!iterations.collect(r, *per, [](const et::thread_info*, std::int64_t, std::int64_t) { return true; }, error))
      return input_error(a.dump, error);
    options.iterations = &iterations;
    // One budget: the rows sorted in memory make room for the windows
    // (1.5 M iterations: 24 MB), down to half.
    options.sort_memory -= std::min(options.sort_memory / 2, iterations.bytes());
  }
  std::string written, wrote;  // for report(), and the terminal's "wrote" line
  for (std::size_t i = 0; i < tables.size(); ++i) {
    std::uint64_t rows = 0;
    const int code = write_one_file(outputs[i], r, a.dump, [&](std::FILE* out, std::string& error) {
      return et::write_csv_table(r, tables[i], out, options, &rows, &error);
    });
    if (code != exit_ok) return code;
    written += (written.empty() ? "" : ", ") + (outputs[i] == "-" ? std::string("stdout") : outputs[i]);
    struct stat file {};
    wrote += (wrote.empty() ? "" : "; ") + outputs[i] + ": " + std::to_string(rows) + " " +
             "rows, " +
             size_text(::stat(outputs[i].c_str(), &file) == 0 ? static_cast<std::uint64_t>(file.st_size) : 0);
  }
  rc = report(r, a.dump, true, "CSV written to " + written);
  if (::isatty(2) == 1 && rc == exit_ok && a.output != "-") std::fprintf(stderr, "edgetrace: wrote %s\n", wrote.c_str());
  return rc;
}

}  // namespace edgetrace_cli
