// SPDX-License-Identifier: MIT
// The `edgetrace csv` subcommand: one row per span.
#include "cli.hpp"

#include <edgetrace/sinks/csv.hpp>

namespace edgetrace_cli {

int run_csv(const command& c, const arguments& args) {
  return convert_one_dump(c, args, ".csv", "CSV", [](et::dump_reader& r, std::FILE* out, std::string& error) {
    return et::write_spans_csv(r, out, nullptr, &error);
  });
}

}  // namespace edgetrace_cli
