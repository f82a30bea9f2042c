// SPDX-License-Identifier: MIT
// The `edgetrace json` subcommand: Chrome trace JSON, one file or split, with a size estimate and progress.
#include "cli.hpp"

#include <edgetrace/sinks/chrome_json/writer.hpp>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace edgetrace_cli {

namespace {

/// Every path `json --split-mb` may write for OUT (it never writes more
/// than chrome_json_max_parts files).
std::vector<std::string> split_part_paths(const std::string& output) {
  std::vector<std::string> paths;
  for (std::size_t i = 1; i <= et::chrome_json_max_parts; ++i) paths.push_back(et::chrome_json_part_path(output, i));
  return paths;
}

/// JSON bytes, for the size estimate made before converting: an event of
/// its own (span, instant, counter, flow step, memory sample) is ~81 bytes
/// plus its name and category (measured: 88 for "step"/"gen" spans); an
/// argument ~22 inside its span's "args" (8 M of them added 175 MB).
constexpr std::uint64_t json_bytes_per_event = 81;
constexpr std::uint64_t json_bytes_per_argument = 22;

/// What `json` will write for `r` (before filters), and how many events:
/// names and categories counted at the mean length of the dump's sites.
std::uint64_t json_estimate(const et::dump_reader& r, std::uint64_t& events) {
  events = r.event_records();
  std::uint64_t arguments = 0, name_bytes = 0, sites = 0;
  for (const auto& w : r.writers()) {
    const et::annotation_counts& n = w.second.annotations_read;
    events += n.flows + n.allocs + n.frees;
    arguments += n.args;
    for (const auto& s : w.second.sites) {
      name_bytes += s.second.name.size() + s.second.category.size();
      ++sites;
    }
  }
  const std::uint64_t per_event = json_bytes_per_event + (sites != 0 ? name_bytes / sites : 16);
  return events * per_event + arguments * json_bytes_per_argument;
}

/// Above this (estimated) size `json` warns: Perfetto UI and Chrome open a
/// JSON trace of up to about 1 GB (a browser's string and memory limits).
/// EDGETRACE_JSON_WARN_MB sets another figure (in MB; used by the tests).
std::uint64_t json_warn_bytes() {
  const char* v = std::getenv("EDGETRACE_JSON_WARN_MB");
  std::uint64_t mb = 0;
  if (v != nullptr && parse_count(v, mb)) return mb * 1000000;
  return 1000000000;
}

/// The warning for a JSON too big for a browser, with the ways out.
void warn_json_too_big(const std::string& dump, const char* how, std::uint64_t bytes, std::uint64_t records) {
  std::fprintf(stderr,
               "edgetrace: warning: %s: the JSON %s %s (%llu records), more than a browser opens (Perfetto UI and "
               "Chrome load JSON up to about %s): use --split-mb N for files of N MB, --min-dur T or --filter REGEX "
               "to leave events out, or `edgetrace perfetto` for Perfetto's own format (a fraction of the size)\n",
               dump.c_str(), how, size_text(bytes).c_str(), static_cast<unsigned long long>(records),
               size_text(json_warn_bytes()).c_str());
}

/// `json --split-mb`: the files, then one line naming them. Exit code.
int run_json_split(const command& c, et::dump_reader& r, const std::string& dump, const std::string& output,
                   et::chrome_json_options& options, std::uint64_t split_mb) {
  et::chrome_json_input in;
  in.reader = &r;
  std::vector<et::chrome_json_part> parts;
  std::string error;
  bool ok;
  {
    percent_line progress(dump);
    options.progress = progress.callback();
    ok = et::write_chrome_json_split({in}, output, split_mb * 1000000, options, parts, &error);
  }
  if (!ok) {
    for (const auto& part : parts) remove_partial_output(part.path);
    // A promise the split cannot keep is the option's value, not the input.
    if (parts.empty() && error.rfind("cannot split", 0) == 0) return usage_error(&c, dump + ": " + error);
    return input_error(dump, error);
  }
  std::vector<std::string> paths;
  std::uint64_t events = 0, bytes = 0, largest = 0;
  for (const auto& part : parts) {
    paths.push_back(part.path);
    events += part.result.events;
    bytes += part.bytes;
    largest = std::max(largest, part.bytes);
  }
  return report_split(r, dump, paths, "JSON",
                      std::to_string(events) + " events, " + size_text(bytes) + " (largest " + size_text(largest) + ")");
}

/// `json` into one document (a file, or stdout for "-"), with a warning
/// when it is bigger than a browser opens. Exit code.
int run_json_single(et::dump_reader& r, const std::string& dump, const std::string& output,
                    et::chrome_json_options& options) {
  // Warn before the work when the estimate is over what a browser opens.
  // With a selection, the estimate is scaled by the share of the records it
  // keeps, counted by the conversion's first pass before anything is
  // written.
  std::uint64_t records = 0;
  const std::uint64_t estimate = json_estimate(r, records);
  bool warned = !options.selects() && estimate > json_warn_bytes();
  if (warned) warn_json_too_big(dump, "will be about", estimate, records);
  options.selected = [&](std::uint64_t kept, std::uint64_t read) {
    if (read == 0) return;
    const auto share = static_cast<long double>(kept) / static_cast<long double>(read);
    const auto selected = static_cast<std::uint64_t>(static_cast<long double>(estimate) * share);
    if (selected <= json_warn_bytes()) return;
    warned = true;
    warn_json_too_big(dump, "will be about", selected, static_cast<std::uint64_t>(static_cast<long double>(records) * share));
  };
  const bool to_stdout = output == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(output.c_str(), "wb");
  if (!out) return output_error(output, "cannot write");
  std::string error;
  bool ok;
  et::chrome_json_result result;
  {
    percent_line progress(dump);
    options.progress = progress.callback();
    ok = et::write_chrome_json(r, out, options, &result, &error);
  }
  const bool closed = to_stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
  if (!ok || !closed) {
    if (!to_stdout) remove_partial_output(output);  // never leave half a JSON document behind
    const bool write_failed = ok || error.rfind("write", 0) == 0;
    return input_error(write_failed ? output : dump, error.empty() ? "write error" : error);
  }
  struct stat written {};
  const std::uint64_t bytes =
      !to_stdout && ::stat(output.c_str(), &written) == 0 ? static_cast<std::uint64_t>(written.st_size) : 0;
  if (!warned && bytes > json_warn_bytes()) warn_json_too_big(dump, "is", bytes, result.events);
  const int rc = report(r, dump, true, to_stdout ? "JSON written to stdout" : "JSON written to " + output);
  if (::isatty(2) == 1 && rc == exit_ok && !to_stdout)
    std::fprintf(stderr, "edgetrace: wrote %s: %llu events, %s\n", output.c_str(),
                 static_cast<unsigned long long>(result.events), size_text(bytes).c_str());
  return rc;
}

}  // namespace

int run_json(const command& c, const arguments& args) {
  conversion_arguments a;
  if (int rc; !parse_conversion(c, args, {"--split-mb"}, ".json", a, rc)) return rc;
  const parsed_options& p = a.options;
  const std::string& dump = a.dump;
  const std::string& output = a.output;
  et::chrome_json_options options;
  static_cast<et::event_selection&>(options) = a.selection;
  options.source_name = base_name(dump);
  std::uint64_t split_mb = 0;
  if (const std::string* v = p.get("--split-mb")) {
    if (!parse_count(*v, split_mb) || split_mb == 0)
      return usage_error(&c, "--split-mb needs a whole number of MB >= 1, not '" + *v + "'");
    if (output == "-") return usage_error(&c, "--split-mb writes several files; give -o OUT.json, not '-'");
  }
  {
    std::vector<std::string> outputs{output};
    if (split_mb != 0) outputs = split_part_paths(output);
    if (const int rc = refuse_overwriting_inputs({dump}, outputs); rc != exit_ok) return rc;
  }
  et::dump_reader r;
  if (!r.open(dump) || !r.read_metadata()) return input_error(dump, r.error());
  if (const int rc = prepare_selection(c, p, r, options); rc != exit_ok) return rc;
  return split_mb != 0 ? run_json_split(c, r, dump, output, options, split_mb) : run_json_single(r, dump, output, options);
}

}  // namespace edgetrace_cli
