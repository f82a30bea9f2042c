// SPDX-License-Identifier: MIT
// The `edgetrace perfetto` subcommand: Perfetto protobuf (TrackEvent).
#include "cli.hpp"

#include <edgetrace/sinks/perfetto/writer.hpp>

namespace edgetrace_cli {

int run_perfetto(const command& c, const arguments& args) {
  return convert_one_dump(c, args, ".pftrace", "Perfetto trace", [](et::dump_reader& r, std::FILE* out, std::string& error) {
    return et::write_perfetto(r, out, nullptr, &error);
  });
}

}  // namespace edgetrace_cli
