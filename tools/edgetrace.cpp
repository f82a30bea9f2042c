// SPDX-License-Identifier: MIT
// The `edgetrace` command line: a thin, table-driven main over the header-only reader and its outputs.
#include <edgetrace/reader.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace et = edgetrace::reader;

/// Exit codes; `edgetrace help` documents them.
enum exit_code : int {
  exit_ok = 0,       ///< clean
  exit_usage = 1,    ///< bad command line
  exit_input = 2,    ///< input unreadable or output not writable
  exit_damaged = 3,  ///< converted, but the dump was damaged or incomplete
};

using arguments = std::vector<std::string>;

/// One subcommand. New ones (summary, csv, merge, diff) are one more row.
struct command {
  const char* name;
  const char* synopsis;  ///< arguments after the name
  const char* summary;   ///< one line for the command list
  const char* details;   ///< paragraph for `edgetrace help NAME`
  int (*run)(const char* name, const arguments& args);
};

int run_json(const char* name, const arguments& args);
int run_info(const char* name, const arguments& args);
int run_help(const char* name, const arguments& args);

const command commands[] = {
    {"json", "DUMP [-o OUT]", "convert a dump to Chrome trace JSON (Perfetto UI, chrome://tracing, speedscope)",
     "Writes OUT (default: DUMP with .etr replaced by .json; '-' for stdout).\n"
     "Every intact chunk is converted; damage is reported as warnings on stderr\n"
     "and with exit code 3.\n"
     "  -o, --output OUT   output file, '-' for standard output\n",
     run_json},
    {"info", "DUMP", "describe a dump: writers, clock, threads, event counts, drops, damage",
     "Prints the file's format version, each writer's process, clock source and\n"
     "fitted tick rate, calibration, duration, ring capacity and flush period,\n"
     "a table of threads with their span/instant/counter/drop counts checked\n"
     "against the writer's own totals, and every diagnostic.\n",
     run_info},
    {"help", "[COMMAND]", "show help for edgetrace or one command", "", run_help},
};

const char exit_codes_text[] =
    "exit codes:\n"
    "  0  success\n"
    "  1  usage error (unknown command or option, missing argument)\n"
    "  2  input unreadable (missing, empty, not a dump, newer format) or output not writable\n"
    "  3  converted, but the dump was damaged or incomplete (truncated, corrupt bytes\n"
    "     skipped, or a writer without an end record); warnings are on stderr\n";

const command* find_command(const std::string& name) {
  for (const command& c : commands)
    if (name == c.name) return &c;
  return nullptr;
}

/// Edit distance, for "did you mean".
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// The closest of `choices` to `word` when it is a plausible typo, else null.
const char* nearest(const std::string& word, const std::vector<const char*>& choices) {
  const char* best = nullptr;
  std::size_t best_distance = 3;  // at most two edits
  for (const char* c : choices) {
    const std::size_t d = distance(word, c);
    if (d < best_distance || (best == nullptr && std::strncmp(c, word.c_str(), word.size()) == 0 && !word.empty())) {
      best_distance = std::min(d, best_distance);
      best = c;
    }
  }
  return best;
}

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: edgetrace COMMAND [ARGS]   (edgetrace --help for more)\n");
}

void print_command_usage(std::FILE* out, const command& c) {
  std::fprintf(out, "usage: edgetrace %s %s\n", c.name, c.synopsis);
}

void print_help(std::FILE* out) {
  std::fprintf(out,
               "edgetrace %s: convert and inspect edgetrace dumps (.etr)\n\n"
               "usage: edgetrace COMMAND [ARGS]\n"
               "       edgetrace --help | --version\n\ncommands:\n",
               et::tool_version);
  for (const command& c : commands) {
    std::string head = std::string(c.name) + " " + c.synopsis;
    std::fprintf(out, "  %-22s %s\n", head.c_str(), c.summary);
  }
  std::fprintf(out, "\n%s", exit_codes_text);
}

int usage_error(const command* c, const std::string& message) {
  std::fprintf(stderr, "edgetrace: error: %s\n", message.c_str());
  if (c) print_command_usage(stderr, *c);
  else print_usage(stderr);
  return exit_usage;
}

int input_error(const std::string& file, const std::string& what) {
  std::fprintf(stderr, "edgetrace: error: %s: %s\n", file.c_str(), what.c_str());
  return exit_input;
}

/// Command-line of a subcommand taking one DUMP and, optionally, -o OUT.
struct dump_arguments {
  std::string dump;
  std::string output;
  bool has_output = false;
  bool help = false;
};

/// Parses DUMP [-o OUT]; returns exit_ok or prints a usage error.
int parse_dump_arguments(const command& c, const arguments& args, bool allow_output, dump_arguments& out) {
  std::vector<const char*> options = {"--help"};
  if (allow_output) options.push_back("--output");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out.help = true;
    } else if (allow_output && (a == "-o" || a == "--output")) {
      if (i + 1 == args.size()) return usage_error(&c, "option '" + a + "' needs a file name");
      out.output = args[++i];
      out.has_output = true;
    } else if (allow_output && a.rfind("--output=", 0) == 0) {
      out.output = a.substr(9);
      out.has_output = true;
    } else if (allow_output && a.size() > 2 && a.rfind("-o", 0) == 0) {
      out.output = a.substr(2);
      out.has_output = true;
    } else if (a.size() > 1 && a[0] == '-' && a != "--") {
      std::string message = "unknown option '" + a + "' for '" + c.name + "'";
      if (const char* near = nearest(a, options)) message += std::string("; did you mean '") + near + "'?";
      return usage_error(&c, message);
    } else if (out.dump.empty()) {
      out.dump = a;
    } else {
      return usage_error(&c, "unexpected argument '" + a + "' (one DUMP at a time)");
    }
  }
  if (out.help) return exit_ok;
  if (out.dump.empty()) return usage_error(&c, std::string("'") + c.name + "' needs a DUMP file");
  if (allow_output && out.has_output && out.output.empty()) return usage_error(&c, "empty output file name");
  return exit_ok;
}

/// Prints the reader's diagnostics as warnings (`all`) and, when the dump
/// was damaged, a last line saying what was lost. Returns the exit code.
int report(const et::dump_reader& r, const std::string& file, bool all, const std::string& outcome) {
  if (all) {
    for (const et::diagnostic& d : r.diagnostics())
      std::fprintf(stderr, "edgetrace: %s: %s: %s\n", d.level == et::diagnostic::severity::damage ? "warning" : "note",
                   file.c_str(), d.message.c_str());
    if (r.diagnostics_dropped() != 0)
      std::fprintf(stderr, "edgetrace: warning: %s: ... and %llu more diagnostics\n", file.c_str(),
                   static_cast<unsigned long long>(r.diagnostics_dropped()));
  }
  if (!r.damaged()) return exit_ok;
  const et::read_stats& s = r.stats();
  std::string lost;
  auto add = [&lost](const std::string& part) { lost += (lost.empty() ? "" : ", ") + part; };
  if (s.bytes_skipped) add(std::to_string(s.bytes_skipped) + " corrupt bytes skipped");
  if (s.bytes_truncated) add(std::to_string(s.bytes_truncated) + " bytes of a truncated chunk lost");
  if (s.events_chunks_damaged)
    add(std::to_string(s.events_chunks_damaged) + " events chunk(s) not fully decoded (" +
        std::to_string(s.events_bytes_undecoded) + " bytes)");
  std::size_t open_writers = 0;
  for (const auto& w : r.writers()) open_writers += w.second.has_end ? 0 : 1;
  if (open_writers) add(std::to_string(open_writers) + " writer(s) without an end record (tail of the trace missing)");
  if (lost.empty()) add(std::to_string(r.damage_count()) + " problem(s), see above");
  std::fprintf(stderr, "edgetrace: warning: %s: damaged or incomplete dump: %s; %s\n", file.c_str(), lost.c_str(),
               outcome.c_str());
  return exit_damaged;
}

std::string default_json_path(const std::string& dump) {
  const std::string ext = ".etr";
  if (dump.size() > ext.size() && dump.compare(dump.size() - ext.size(), ext.size(), ext) == 0)
    return dump.substr(0, dump.size() - ext.size()) + ".json";
  return dump + ".json";
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int run_json(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  dump_arguments a;
  if (const int rc = parse_dump_arguments(c, args, true, a); rc != exit_ok || a.help) {
    if (a.help && rc == exit_ok) run_help("help", {name});
    return rc;
  }
  const std::string output = a.has_output ? a.output : default_json_path(a.dump);
  if (output == a.dump) return usage_error(&c, "the output would overwrite the dump '" + a.dump + "'");

  et::dump_reader r;
  if (!r.open(a.dump) || !r.read_metadata()) return input_error(a.dump, r.error());

  const bool to_stdout = output == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(output.c_str(), "wb");
  if (!out) return input_error(output, std::string("cannot write: ") + std::strerror(errno));
  et::chrome_json_options options;
  options.source_name = base_name(a.dump);
  std::string error;
  const bool ok = et::write_chrome_json(r, out, options, nullptr, &error);
  const bool closed = to_stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
  if (!ok || !closed) {
    if (!to_stdout) std::remove(output.c_str());  // never leave half a JSON document behind
    const bool write_failed = ok || error.rfind("write", 0) == 0;
    return input_error(write_failed ? output : a.dump, error.empty() ? "write error" : error);
  }
  return report(r, a.dump, true, to_stdout ? "JSON written to stdout" : "JSON written to " + output);
}

int run_info(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  dump_arguments a;
  if (const int rc = parse_dump_arguments(c, args, false, a); rc != exit_ok || a.help) {
    if (a.help && rc == exit_ok) run_help("help", {name});
    return rc;
  }
  et::dump_reader r;
  if (!r.open(a.dump) || !r.read_metadata()) return input_error(a.dump, r.error());
  std::string error;
  if (!et::write_info(r, stdout, {}, &error)) return input_error(a.dump, error);
  // The diagnostics are in the report on stdout; stderr gets the verdict.
  return report(r, a.dump, false, "see the diagnostics above");
}

int run_help(const char*, const arguments& args) {
  if (args.empty()) {
    print_help(stdout);
    return exit_ok;
  }
  if (args.size() > 1) return usage_error(find_command("help"), "help takes at most one command name");
  const command* c = find_command(args[0]);
  if (!c) {
    std::vector<const char*> names;
    for (const command& k : commands) names.push_back(k.name);
    std::string message = "unknown command '" + args[0] + "'";
    if (const char* near = nearest(args[0], names)) message += std::string("; did you mean '") + near + "'?";
    return usage_error(nullptr, message);
  }
  print_command_usage(stdout, *c);
  std::printf("\n%s\n%s", c->summary, c->details);
  if (std::strcmp(c->name, "help") != 0) std::printf("\n%s", exit_codes_text);
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  const arguments args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (args.empty()) return usage_error(nullptr, "no command given");
  const std::string& first = args[0];
  if (first == "--help" || first == "-h") return run_help("help", {});
  if (first == "--version" || first == "-V") {
    std::printf("edgetrace %s (dump format %u.%u)\n", et::tool_version, edgetrace::format::version_major,
                edgetrace::format::version_minor);
    return exit_ok;
  }
  if (const command* c = find_command(first)) return c->run(c->name, arguments(args.begin() + 1, args.end()));

  std::vector<const char*> names;
  for (const command& c : commands) names.push_back(c.name);
  if (first[0] == '-') {
    std::string message = "unknown option '" + first + "'";
    if (const char* near = nearest(first, {"--help", "--version"})) message += std::string("; did you mean '") + near + "'?";
    return usage_error(nullptr, message);
  }
  std::string message = "unknown command '" + first + "'";
  if (const char* near = nearest(first, names)) message += std::string("; did you mean '") + near + "'?";
  return usage_error(nullptr, message);
}
