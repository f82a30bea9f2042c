// SPDX-License-Identifier: MIT
// The `edgetrace perfetto` subcommand: Perfetto protobuf (TrackEvent), with json's selection (--min-dur, --filter, --window) and progress.
#include "cli.hpp"

#include <edgetrace/sinks/perfetto/writer.hpp>

namespace edgetrace_cli {

int run_perfetto(const command& c, const arguments& args) {
  conversion_arguments a;
  if (int rc; !parse_conversion(c, args, {}, ".pftrace", a, rc)) return rc;
  const std::string& dump = a.dump;
  const std::string& output = a.output;
  et::perfetto_options options;
  static_cast<et::event_selection&>(options) = a.selection;
  if (const int rc = refuse_overwriting_inputs({dump}, {output}); rc != exit_ok) return rc;
  et::dump_reader r;
  if (!r.open(dump) || !r.read_metadata()) return input_error(dump, r.error());
  anchor_window(options, r);
  et::perfetto_result result;
  const int rc = write_one_output(r, dump, output, "Perfetto trace", [&](std::FILE* out, std::string& error) {
    percent_line progress(dump);
    options.progress = progress.callback();
    return et::write_perfetto(r, out, options, &result, &error);
  });
  if (rc != exit_ok || output == "-" || ::isatty(2) != 1) return rc;
  struct stat written {};
  const std::uint64_t bytes = ::stat(output.c_str(), &written) == 0 ? static_cast<std::uint64_t>(written.st_size) : 0;
  std::string left_out;
  if (result.filtered != 0) left_out = ", " + std::to_string(result.filtered) + " left out by the selection";
  std::fprintf(stderr, "edgetrace: wrote %s: %llu packets (%llu slices%s), %s\n", output.c_str(),
               static_cast<unsigned long long>(result.packets),
               static_cast<unsigned long long>(result.slices + result.gpu_slices), left_out.c_str(),
               size_text(bytes).c_str());
  return rc;
}

}  // namespace edgetrace_cli
