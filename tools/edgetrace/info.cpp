// SPDX-License-Identifier: MIT
// The `edgetrace info` subcommand: what a dump holds, and its diagnostics.
#include "cli.hpp"

#include <edgetrace/sinks/info.hpp>
#include <string>

namespace edgetrace_cli {

int run_info(const command& c, const arguments& args) {
  dump_arguments a;
  if (const int rc = parse_dump_arguments(c, args, false, a); rc != exit_ok || a.help) {
    if (a.help && rc == exit_ok) command_help(c);
    return rc;
  }
  if (const int rc = refuse_overwriting_inputs({a.dump}, {"-"}); rc != exit_ok) return rc;
  et::dump_reader r;
  if (!r.open(a.dump) || !r.read_metadata()) return input_error(a.dump, r.error());
  std::string error;
  if (!et::write_info(r, stdout, {}, &error)) return input_error(a.dump, error);
  // The diagnostics are in the report on stdout; stderr gets the verdict.
  return report(r, a.dump, false, "see the diagnostics above");
}

}  // namespace edgetrace_cli
