// SPDX-License-Identifier: MIT
// The `edgetrace perfetto` subcommand: Perfetto protobuf (TrackEvent), compressed with zlib where the CLI has it, with json's selection (--min-dur, --filter, --window) and progress.
#include "cli.hpp"

#include <edgetrace/sinks/perfetto/writer.hpp>

#if EDGETRACE_CLI_ZLIB
#include <zlib.h>
#endif

namespace edgetrace_cli {

namespace {

#if EDGETRACE_CLI_ZLIB
/// zlib deflate, as Perfetto's own service compresses packets.
bool deflate_packets(std::string_view plain, std::string& compressed) {
  uLongf size = compressBound(static_cast<uLong>(plain.size()));
  compressed.resize(size);
  const int rc = compress2(reinterpret_cast<Bytef*>(compressed.data()), &size,
                           reinterpret_cast<const Bytef*>(plain.data()), static_cast<uLong>(plain.size()), 6);
  if (rc != Z_OK) return false;
  compressed.resize(size);
  return true;
}
constexpr bool have_zlib = true;
#else
constexpr bool have_zlib = false;
#endif

}  // namespace

int run_perfetto(const command& c, const arguments& args) {
  conversion_arguments a;
  if (int rc; !parse_conversion(c, args, {"--compress"}, ".pftrace", a, rc)) return rc;
  const std::string& dump = a.dump;
  const std::string& output = a.output;
  et::perfetto_options options;
  static_cast<et::event_selection&>(options) = a.selection;
  bool compress = have_zlib;
  if (const std::string* v = a.options.get("--compress")) {
    if (*v != "deflate" && *v != "none")
      return usage_error(&c, "--compress takes deflate or none, not '" + *v + "'");
    compress = *v == "deflate";
    if (compress && !have_zlib)
      return usage_error(&c, "--compress deflate: this edgetrace was built without zlib (Debian: zlib1g-dev, then "
                             "rebuild); --compress none writes the same trace uncompressed");
  }
#if EDGETRACE_CLI_ZLIB
  if (compress) options.compress = deflate_packets;
#endif
  if (const int rc = refuse_overwriting_inputs({dump}, {output}); rc != exit_ok) return rc;
  et::dump_reader r;
  if (!r.open(dump) || !r.read_metadata()) return input_error(dump, r.error());
  if (const int rc = prepare_selection(c, a.options, r, options); rc != exit_ok) return rc;
  et::perfetto_result result;
  const int rc = write_one_output(r, dump, output, "Perfetto trace", [&](std::FILE* out, std::string& error) {
    percent_line progress(dump);
    options.progress = progress.callback();
    return et::write_perfetto(r, out, options, &result, &error);
  });
  if (rc != exit_ok || output == "-" || ::isatty(2) != 1) return rc;
  struct stat written {};
  const std::uint64_t bytes = ::stat(output.c_str(), &written) == 0 ? static_cast<std::uint64_t>(written.st_size) : 0;
  std::string details = std::to_string(result.slices + result.gpu_slices) + " slices";
  if (result.filtered != 0) details += ", " + std::to_string(result.filtered) + " left out by the selection";
  if (result.compressed_packets != 0) details += ", deflate: " + size_text(result.plain_bytes) + " before";
  std::fprintf(stderr, "edgetrace: wrote %s: %llu packets (%s), %s\n", output.c_str(),
               static_cast<unsigned long long>(result.packets), details.c_str(), size_text(bytes).c_str());
  return rc;
}

}  // namespace edgetrace_cli
