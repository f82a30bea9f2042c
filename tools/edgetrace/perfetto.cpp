// SPDX-License-Identifier: MIT
// The `edgetrace perfetto` subcommand: Perfetto protobuf (TrackEvent), compressed with zlib where the CLI has it, with json's selection (--min-dur, --filter, --window) and progress.
#include "cli.hpp"

#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/perfetto/split.hpp>
#include <edgetrace/sinks/perfetto/writer.hpp>

#include <cstdlib>
#include <string>
#include <vector>

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

/// Above this many bytes of packets (before deflate) `perfetto` warns: the
/// in-browser Perfetto UI holds about 2 GB at run time, 2 to 4 times the
/// packets (Perfetto's "Visualising large traces").
/// EDGETRACE_PERFETTO_WARN_MB sets another figure (in MB; the tests use it).
std::uint64_t perfetto_warn_bytes() {
  const char* v = std::getenv("EDGETRACE_PERFETTO_WARN_MB");
  std::uint64_t mb = 0;
  if (v != nullptr && parse_count(v, mb)) return mb * 1000000;
  return 500000000;
}

/// `perfetto --split-mb`: the files, then what was written. Exit code.
int run_perfetto_split(const command& c, et::dump_reader& r, const std::string& dump, const std::string& output,
                       et::perfetto_options& options, std::uint64_t split_mb) {
  std::vector<et::perfetto_part> parts;
  std::string error;
  bool ok;
  {
    percent_line progress(dump);
    options.progress = progress.callback();
    ok = et::write_perfetto_split(r, output, split_mb * 1000000, options, parts, &error);
  }
  if (!ok) {
    // A promise the split cannot keep is the option's value, not the input.
    if (error.rfind("cannot split", 0) == 0) return usage_error(&c, dump + ": " + error);
    return input_error(error.find(": write error") != std::string::npos ? output : dump, error);
  }
  std::vector<std::string> paths;
  std::uint64_t slices = 0, bytes = 0, plain = 0, largest = 0;
  for (const et::perfetto_part& part : parts) {
    paths.push_back(part.path);
    slices += part.result.slices + part.result.gpu_slices;
    bytes += part.bytes;
    plain += part.plain_bytes;
    largest = std::max(largest, part.plain_bytes);
  }
  return report_split(r, dump, paths, "Perfetto",
                      std::to_string(slices) + " slices, " + size_text(bytes) + " (" + size_text(plain) +
                          " of packets, largest " + size_text(largest) + ")");
}

}  // namespace

int run_perfetto(const command& c, const arguments& args) {
  conversion_arguments a;
  if (int rc; !parse_conversion(c, args, {"--compress", "--split-mb"}, ".pftrace", a, rc)) return rc;
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
  std::uint64_t split_mb = 0;
  std::vector<std::string> outputs{output};
  if (const std::string* v = a.options.get("--split-mb")) {
    if (!parse_count(*v, split_mb) || split_mb == 0)
      return usage_error(&c, "--split-mb needs a whole number of MB >= 1, not '" + *v + "'");
    if (output == "-") return usage_error(&c, "--split-mb writes several files; give -o OUT.pftrace, not '-'");
    outputs.clear();
    for (std::size_t i = 1; i <= et::perfetto_max_parts; ++i) outputs.push_back(et::detail::numbered_path(output, i));
  }
  if (const int rc = refuse_overwriting_inputs({dump}, outputs); rc != exit_ok) return rc;
  et::dump_reader r;
  if (!r.open(dump) || !r.read_metadata()) return input_error(dump, r.error());
  if (const int rc = prepare_selection(c, a.options, r, options); rc != exit_ok) return rc;
  if (split_mb != 0) return run_perfetto_split(c, r, dump, output, options, split_mb);
  et::perfetto_result result;
  const int rc = write_one_output(
      r, dump, output, "Perfetto trace",
      [&](std::FILE* out, std::string& error) {
        percent_line progress(dump);
        options.progress = progress.callback();
        return et::write_perfetto(r, out, options, &result, &error);
      },
      false);  // its percent line is its progress
  if (rc != exit_ok && rc != exit_damaged) return rc;
  struct stat written {};
  const std::uint64_t bytes =
      output != "-" && ::stat(output.c_str(), &written) == 0 ? static_cast<std::uint64_t>(written.st_size) : 0;
  const std::uint64_t packets = result.compressed_packets != 0 ? result.plain_bytes : bytes;
  if (packets > perfetto_warn_bytes())
    std::fprintf(stderr,
                 "edgetrace: warning: %s: the trace holds %s of packets, more than ui.perfetto.dev may hold in a "
                 "browser (about 2 GB at run time, 2 to 4 times the packets): use --split-mb N for files of N MB, "
                 "--min-dur T, --filter REGEX or --window FROM:TO to leave events out, or open it with "
                 "`trace_processor --httpd %s` and the UI\n",
                 dump.c_str(), size_text(packets).c_str(), output.c_str());
  if (output == "-" || ::isatty(2) != 1 || rc != exit_ok) return rc;
  std::string details = std::to_string(result.slices + result.gpu_slices) + " slices";
  if (result.filtered != 0) details += ", " + std::to_string(result.filtered) + " left out by the selection";
  if (result.compressed_packets != 0) details += ", deflate: " + size_text(result.plain_bytes) + " before";
  std::fprintf(stderr, "edgetrace: wrote %s: %llu packets (%s), %s\n", output.c_str(),
               static_cast<unsigned long long>(result.packets), details.c_str(), size_text(bytes).c_str());
  return rc;
}

}  // namespace edgetrace_cli
