// SPDX-License-Identifier: MIT
// The `edgetrace` command line: a thin, table-driven main over the header-only reader and its outputs.
#include <edgetrace/reader.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <thread>
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
int run_perfetto(const char* name, const arguments& args);
int run_info(const char* name, const arguments& args);
int run_summary(const char* name, const arguments& args);
int run_csv(const char* name, const arguments& args);
int run_merge(const char* name, const arguments& args);
int run_diff(const char* name, const arguments& args);
int run_report(const char* name, const arguments& args);
int run_top(const char* name, const arguments& args);
int run_help(const char* name, const arguments& args);

const command commands[] = {
    {"json", "DUMP [-o OUT] [--split-mb N] [--min-dur T] [--filter REGEX]",
     "convert a dump to Chrome trace JSON (Perfetto UI, chrome://tracing, speedscope)",
     "Writes OUT (default: DUMP with .etr replaced by .json; '-' for stdout).\n"
     "Every intact chunk is converted; damage is reported as warnings on stderr\n"
     "and with exit code 3.\n"
     "  -o, --output OUT   output file, '-' for standard output\n"
     "  --split-mb N       write OUT-001.json, OUT-002.json, ... one time window per file,\n"
     "                     each loadable on its own: every file at most N MB (10^6 bytes),\n"
     "                     at most 256 files, each but the last nearly full; a split that\n"
     "                     would need more is refused before anything is written, with\n"
     "                     the smallest N that fits\n"
     "  --min-dur T        leave out spans shorter than T (e.g. 50us, 1ms)\n"
     "  --filter REGEX     keep only spans, instants and counters whose name matches\n"
     "A JSON estimated (about 100 bytes an event, 22 an argument; not with --min-dur\n"
     "or --filter) or found to be over 1 GB, more than Perfetto UI or Chrome open,\n"
     "gets a warning naming --split-mb, --min-dur, --filter and `edgetrace perfetto`\n"
     "(EDGETRACE_JSON_WARN_MB sets the figure).\n"
     "On a terminal: progress in percent, then one line: file, events, size.\n"
     "Flows: bind_id/flow_in/flow_out on the steps' spans (Perfetto), and s/t/f\n"
     "events (DevTools).\n",
     run_json},
    {"perfetto", "DUMP [-o OUT]", "convert a dump to a Perfetto protobuf trace (.pftrace): smaller, for big traces",
     "Writes OUT (default: DUMP with .etr replaced by .pftrace; '-' for stdout)\n"
     "in Perfetto's own format, which ui.perfetto.dev and trace_processor load\n"
     "natively: tracks per process and thread, slices, instants, counter tracks,\n"
     "flows, GPU streams. Several times smaller than the JSON, and written in\n"
     "bounded memory; prefer it for traces too big for a JSON viewer. Damage is\n"
     "reported as warnings on stderr and with exit code 3.\n"
     "  -o, --output OUT   output file, '-' for standard output\n",
     run_perfetto},
    {"summary", "DUMP... [options]", "per-name table: calls, total, self, mean, min, percentiles, max, share",
     "One row per span name (or category, or thread) over all DUMPs; iteration\n"
     "latency from EDGETRACE_MARK marks or --iteration. See docs/ANALYSIS.md.\n"
     "  --by name|category|thread   what a row stands for (default name); add arg:KEY items\n"
     "                              to split names by span arguments (--by name,arg:batch),\n"
     "                              or give only arg:KEY items to group by their values\n"
     "                              whatever the name (--by arg:op: one row per op type)\n"
     "  --top N                     keep the first N rows after sorting\n"
     "  --filter REGEX              keep span names matching REGEX (ECMAScript, searched)\n"
     "  --category LIST             keep these categories (comma list)\n"
     "  --thread LIST               keep these threads, by name or OS tid (comma list)\n"
     "  --sort-by COLUMN            total (default), self, calls, mean, min, p50, p90, p95,\n"
     "                              p99, p99.9, max, share, name (numbers in names sort by\n"
     "                              value: layer_2 before layer_10), order (first begin:\n"
     "                              network order); '+COLUMN' ascending, '-COLUMN' descending\n"
     "  --min-time T, --max-time T  count only spans whose duration is within [T, T]\n"
     "  --iteration NAME            a mark or top-level span name that delimits iterations\n"
     "  --skip-warmup K             leave out the first K iterations (--iteration's, else\n"
     "                              --per's), and every span that ended before the (K+1)-th\n"
     "                              iteration started\n"
     "  --phase NAME                keep spans that began in phase NAME (edgetrace::phase)\n"
     "  --per NAME                  iterations are the instances of span NAME (or the time\n"
     "                              between NAME marks): rows count only spans inside them\n"
     "                              and add avg/iter (total / iterations) and % iter (total\n"
     "                              / summed iteration time)\n"
     "  --wait REGEX                span names that are waiting, not work (default ^wait, any\n"
     "                              case; 'off' for none): their self time is left out of\n"
     "                              share and of the threads' busy time\n"
     "  --wait-category LIST        spans of these categories are waiting too (comma list)\n"
     "  --format table|csv|json     output format (default table)\n"
     "  -o, --output OUT            write to OUT instead of standard output\n",
     run_summary},
    {"csv", "DUMP [-o OUT]", "one CSV line per span in time order (times, depth, phase, flow, arguments)",
     "Writes OUT (default: DUMP with .etr replaced by .csv; '-' for stdout);\n"
     "loads with pandas.read_csv(OUT). Rows come in time order (start, then\n"
     "pid and tid, then depth). After the span's own columns: phase, flow,\n"
     "flow_id, then one column per argument key (arg:KEY, empty when the\n"
     "span has no such argument), so df.groupby('arg:op') works. Columns\n"
     "are in docs/ANALYSIS.md.\n"
     "  -o, --output OUT   output file, '-' for standard output\n",
     run_csv},
    {"merge", "DUMP DUMP... -o OUT.etr|OUT.json [--clock auto|monotonic|realtime]",
     "put several processes' dumps on one timeline",
     "Writes one .etr (whole validated chunks of every input after one header)\n"
     "or one Chrome JSON document, chosen by OUT's extension. Processes of one\n"
     "boot share CLOCK_MONOTONIC; dumps from different boots or machines are\n"
     "aligned through their CLOCK_REALTIME calibration (auto picks; stderr says\n"
     "which). Colliding pids and writer ids are renumbered, and said so.\n"
     "  -o, --output OUT   the merged file (.etr, or .json)\n"
     "  --clock MODE       auto (default), monotonic or realtime\n",
     run_merge},
    {"diff", "BASE NEW [options] | BASE... --vs NEW... [options]", "per-name change between two runs, sorted by impact",
     "Compares two dumps by span name: calls, mean, p50, p99 and total, with\n"
     "the change from BASE to NEW, biggest change in total time first.\n"
     "With several dumps per side (repeated runs: BASE... --vs NEW...), each side\n"
     "is pooled, and each row's mean change is set against run-to-run noise (the\n"
     "larger max - min of the per-run means): 'within noise' or 'beyond noise'.\n"
     "See docs/ANALYSIS.md.\n"
     "  --by name|arg:KEY|name,arg:KEY   what a row stands for, as for summary\n"
     "  --top N, --filter REGEX, --category LIST, --thread LIST, --skip-warmup K,\n"
     "  --iteration NAME, --phase NAME, --min-time T, --max-time T   as for summary\n"
     "                              (both dumps)\n"
     "  --format table|csv|json     output format (default table)\n"
     "  -o, --output OUT            write to OUT instead of standard output\n",
     run_diff},
    {"report", "DUMP... -o OUT.html [options]", "self-contained HTML report: table, histograms, thread use",
     "One HTML file with inline CSS and SVG (no network): the summary table,\n"
     "a latency histogram for each of the first rows, and per-thread\n"
     "utilisation (busy = inside top-level spans minus waiting, see --wait).\n"
     "Takes the summary's options (--top defaults to 30).\n"
     "  -o, --output OUT   output file (default: DUMP with .etr replaced by .html)\n",
     run_report},
    {"info", "DUMP", "describe a dump: writers, clock, threads, event counts, drops, damage",
     "Prints the file's format version, each writer's process, clock source and\n"
     "fitted tick rate, calibration, duration, ring capacity and flush period,\n"
     "a table of threads with their span/instant/counter/drop counts checked\n"
     "against the writer's own totals, and every diagnostic.\n"
     "A flight recorder's snapshot also shows its trigger and reason, the\n"
     "trigger's time (from the window start, and on the wall clock), the window\n"
     "it holds, its sequence number, the snapshots skipped by the rate limit, the\n"
     "ring's size and the chunks it overwrote; records before the window are\n"
     "not counted as missing (docs/ANALYSIS.md).\n",
     run_info},
    {"top", "DUMP [--follow] [--window SECONDS] [--interval SECONDS] [--top N]",
     "per-name table over the last seconds of a trace; --follow watches a live dump",
     "One row per span name: calls, calls/s, mean, p50, p99 and max of the spans\n"
     "that ended in the last SECONDS of the trace (up to its latest span), the\n"
     "most total time first. See docs/ANALYSIS.md.\n"
     "  --follow, -f         keep reading DUMP as its app appends to it (normal mode),\n"
     "                       refreshing the table; whole chunks only (a chunk being\n"
     "                       written is waited for); a file truncated under it is\n"
     "                       read again from its start. Ends by itself when the\n"
     "                       writer's end record arrives, or on Ctrl-C (exit 0).\n"
     "                       On a terminal the table is redrawn in place; otherwise\n"
     "                       each refresh is printed after a line\n"
     "                       '== HH:MM:SS UTC DUMP: ... =='\n"
     "  --window SECONDS     how far back the table looks (default 5; e.g. 2.5, 500ms)\n"
     "  --interval SECONDS   time between refreshes with --follow (default 1)\n"
     "  --top N              rows shown (default 20)\n"
     "Memory: the spans of the window, at most about 1M (24 MB); past that the\n"
     "window is shortened and the table says so.\n",
     run_top},
    {"help", "[COMMAND]", "show help for edgetrace or one command", "", run_help},
};

const char exit_codes_text[] =
    "exit codes:\n"
    "  0  success\n"
    "  1  usage error (unknown command or option, missing argument)\n"
    "  2  input unreadable (missing, empty, not a dump, newer format) or output not writable;\n"
    "     also a dump whose tick rate is unknown (durations cannot be computed)\n"
    "  3  converted, but the dump was damaged or incomplete (truncated, corrupt bytes\n"
    "     skipped, or a writer without an end record); warnings are on stderr\n";

const command* find_command(const std::string& name) {
  for (const command& c : commands)
    if (name == c.name) return &c;
  return nullptr;
}

/// The closest of `choices` to `word` when it is a plausible typo, else null.
const char* nearest(const std::string& word, const std::vector<const char*>& choices) {
  const char* best = nullptr;
  std::size_t best_distance = 3;  // at most two edits
  for (const char* c : choices) {
    const std::size_t d = edgetrace::detail::edit_distance(word.c_str(), word.size(), c, std::strlen(c));
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

#ifndef EDGETRACE_DOCS_FROM_BIN
#define EDGETRACE_DOCS_FROM_BIN "../share/doc/edgetrace"
#endif
#ifndef EDGETRACE_SOURCE_DOCS
#define EDGETRACE_SOURCE_DOCS ""
#endif

/// Where the documentation is: the installed copy next to this executable
/// (bin/../share/doc/edgetrace), else the sources' docs/ this binary was
/// built from; empty when neither exists (a copied binary).
std::string documentation_dir() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  struct stat st{};
  if (n > 0) {
    std::string dir(exe, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/') + 1) + EDGETRACE_DOCS_FROM_BIN;
    if (::stat((dir + "/ANALYSIS.md").c_str(), &st) == 0) {
      char resolved[4096];
      return ::realpath(dir.c_str(), resolved) ? std::string(resolved) : dir;
    }
  }
  const std::string source = EDGETRACE_SOURCE_DOCS;
  if (!source.empty() && ::stat((source + "/ANALYSIS.md").c_str(), &st) == 0) return source;
  return {};
}

/// Help text with each "docs/NAME.md" replaced by the file's real path.
std::string with_documentation_paths(std::string text) {
  const std::string dir = documentation_dir();
  if (dir.empty()) return text;
  for (std::size_t at = text.find("docs/"); at != std::string::npos; at = text.find("docs/", at + dir.size())) {
    text.replace(at, 4, dir);
  }
  return text;
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
  const std::string docs = documentation_dir();
  std::fprintf(out, "\ndocumentation: %s\n",
               docs.empty() ? "README.md and docs/ in the edgetrace sources" : docs.c_str());
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

/// An output that could not be opened or written: the reader's write-error
/// line ("WHAT: strerror(errno)") as an input_error. Exit code.
int output_error(const std::string& file, const char* what) {
  std::string line;
  et::detail::fail_write(&line, what);
  return input_error(file, line);
}

/// The one guard against a command destroying its own input: refuses
/// (exit_usage, one line) when any of `outputs` names the same file as any
/// of `inputs`. Compared by device and inode, not by name, so "./run.etr",
/// a symlink and a hard link are caught too; an output of "-" or "" is
/// standard output (`>> run.etr` would append to the dump). Only regular
/// files count: a terminal or a pipe on both sides is not overwriting.
/// An output that does not exist yet cannot be an input. Every subcommand
/// calls this before it opens anything for writing.
int refuse_overwriting_inputs(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  for (const std::string& output : outputs) {
    struct stat out {};
    const bool to_stdout = output.empty() || output == "-";
    if ((to_stdout ? ::fstat(1, &out) : ::stat(output.c_str(), &out)) != 0 || !S_ISREG(out.st_mode)) continue;
    for (const std::string& input : inputs) {
      struct stat in {};
      if (::stat(input.c_str(), &in) != 0 || in.st_dev != out.st_dev || in.st_ino != out.st_ino) continue;
      const std::string what = to_stdout ? "standard output" : "the output '" + output + "'";
      std::fprintf(stderr,
                   "edgetrace: error: %s is the input dump '%s' (the same file); writing it would destroy the "
                   "dump, so nothing was written: choose another output\n",
                   what.c_str(), input.c_str());
      return exit_usage;
    }
  }
  return exit_ok;
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
    // Lost records change every count and table: say so on stderr too, in
    // the words the summary uses (info shows them in its thread table).
    const et::dropped_records dropped = et::count_dropped(r, [](const et::thread_info& t) {
      return (t.name.empty() ? std::string("thread") : t.name) + " (tid " + std::to_string(t.os_tid) + ")";
    });
    if (dropped.count != 0)
      std::fprintf(stderr,
                   "edgetrace: note: %s: %s; %s\n", file.c_str(), et::dropped_records_text(dropped).c_str(),
                   et::keep_dropped_advice(r).c_str());
    for (const et::writer_info* w : r.writers_in_order())
      if (w->snapshot.present)
        std::fprintf(stderr, "edgetrace: note: %s: %s\n", file.c_str(), et::snapshot_text(w->snapshot).c_str());
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
  if (s.headerless_start) add("no file header at the start (truncated under its writer)");
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

/// Options of the analysis commands: positional arguments, and values of
/// the options named in `valued` (the rest are unknown).
struct parsed_options {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> values;  // in order; later wins
  bool help = false;

  const std::string* get(const char* name) const {
    for (auto it = values.rbegin(); it != values.rend(); ++it)
      if (it->first == name) return &it->second;
    return nullptr;
  }
};

int parse_options(const command& c, const arguments& args, const std::vector<const char*>& valued, parsed_options& out) {
  std::vector<const char*> known = valued;
  known.push_back("--help");
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    if (a == "--") {
      for (++i; i < args.size(); ++i) out.positional.push_back(args[i]);
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    std::string value;
    bool has_value = false;
    if (a.rfind("-o", 0) == 0 && a.rfind("--", 0) != 0) {  // -o OUT, -oOUT
      if (a.size() > 2) {
        value = a.substr(2);
        has_value = true;
      }
      a = "--output";
    } else if (const auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    if (std::find_if(valued.begin(), valued.end(), [&](const char* v) { return a == v; }) == valued.end()) {
      std::string message = "unknown option '" + args[i] + "' for '" + c.name + "'";
      if (const char* near = nearest(a, known)) message += std::string("; did you mean '") + near + "'?";
      return usage_error(&c, message);
    }
    if (!has_value) {
      if (i + 1 == args.size())
        return usage_error(&c, "option '" + args[i] + (a == "--output" ? "' needs a file name" : "' needs a value"));
      value = args[++i];
    }
    out.values.emplace_back(a, value);
  }
  return exit_ok;
}

bool parse_count(const std::string& text, std::uint64_t& value) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  value = std::stoull(text);
  return true;
}

/// Compiles a --filter regex once; a usage error (exit 1) when it is bad.
int compile_regex(const command& c, const std::string& text, std::shared_ptr<const std::regex>& out,
                  const char* flag = "--filter") {
  try {
    out = std::make_shared<const std::regex>(text, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return usage_error(&c, std::string("bad ") + flag + " regex '" + text + "': " + e.what());
  }
  return exit_ok;
}

const std::vector<const char*> summary_valued = {"--by",       "--top",      "--filter",    "--category",
                                                 "--thread",   "--sort-by",  "--min-time",  "--max-time",
                                                 "--iteration", "--skip-warmup", "--phase",   "--format",
                                                 "--output",    "--per",         "--wait",    "--wait-category"};

/// Fills summary_options from parsed flags; a usage error code on a bad value.
int summary_options_from(const command& c, const parsed_options& p, et::summary_options& o, std::string& format) {
  if (const std::string* v = p.get("--by")) {
    bool base_seen = false;
    for (const std::string& item : et::split_list(*v)) {
      if (item.compare(0, 4, "arg:") == 0) {
        if (item.size() == 4) return usage_error(&c, "--by arg: needs an argument key, e.g. --by name,arg:batch");
        o.by_args.push_back(item.substr(4));
        continue;
      }
      if (base_seen) return usage_error(&c, "--by takes one of name, category or thread (plus arg:KEY items), not '" + *v + "'");
      base_seen = true;
      if (item == "name") o.by = et::group_by::name;
      else if (item == "category") o.by = et::group_by::category;
      else if (item == "thread") o.by = et::group_by::thread;
      else return usage_error(&c, "--by must be name, category or thread, optionally with arg:KEY items (e.g. name,arg:batch), not '" + item + "'");
    }
    o.by_args_only = !base_seen && !o.by_args.empty();
    if (!o.by_args.empty() && o.by != et::group_by::name)
      return usage_error(&c, "--by arg:KEY splits rows by name; it does not combine with --by " + std::string(o.by == et::group_by::category ? "category" : "thread"));
  }
  std::uint64_t n = 0;
  if (const std::string* v = p.get("--top")) {
    if (!parse_count(*v, n) || n == 0) return usage_error(&c, "--top needs a whole number >= 1, not '" + *v + "'");
    o.top = static_cast<std::size_t>(n);
  }
  if (const std::string* v = p.get("--filter"))
    if (const int rc = compile_regex(c, *v, o.filter); rc != exit_ok) return rc;
  if (const std::string* v = p.get("--category")) o.categories = et::split_list(*v);
  if (const std::string* v = p.get("--thread")) o.threads = et::split_list(*v);
  if (const std::string* v = p.get("--sort-by"))
    if (!et::parse_sort_column(*v, o.sort_by, o.ascending))
      return usage_error(&c, "unknown column '" + *v + "' for --sort-by; columns: " + et::summary_column_names() +
                                 " ('+' in front for ascending)");
  if (const std::string* v = p.get("--min-time"))
    if (!et::parse_duration(*v, o.min_time_ns))
      return usage_error(&c, "--min-time needs a duration with a unit (ns, us, ms, s), not '" + *v + "'");
  if (const std::string* v = p.get("--max-time"))
    if (!et::parse_duration(*v, o.max_time_ns))
      return usage_error(&c, "--max-time needs a duration with a unit (ns, us, ms, s), not '" + *v + "'");
  if (o.min_time_ns > o.max_time_ns) return usage_error(&c, "--min-time is larger than --max-time");
  if (const std::string* v = p.get("--iteration")) {
    if (v->empty()) return usage_error(&c, "--iteration needs a name");
    o.iteration = *v;
  }
  if (const std::string* v = p.get("--skip-warmup"))
    if (!parse_count(*v, o.skip_warmup)) return usage_error(&c, "--skip-warmup needs a whole number, not '" + *v + "'");
  if (const std::string* v = p.get("--phase")) {
    if (v->empty()) return usage_error(&c, "--phase needs a name");
    o.phase = *v;
  }
  if (const std::string* v = p.get("--per")) {
    if (v->empty()) return usage_error(&c, "--per needs a span or mark name");
    o.per = *v;
  }
  if (const std::string* v = p.get("--wait")) {
    o.wait_pattern = *v;
    o.wait = nullptr;
    if (*v != "off")
      if (const int rc = compile_regex(c, *v, o.wait, "--wait"); rc != exit_ok) return rc;
  }
  if (const std::string* v = p.get("--wait-category")) o.wait_categories = et::split_list(*v);
  if (const std::string* v = p.get("--format")) {
    if (*v != "table" && *v != "csv" && *v != "json")
      return usage_error(&c, "--format must be table, csv or json, not '" + *v + "'");
    format = *v;
  }
  return exit_ok;
}

/// Writes `text` to `output` ("-" or empty: stdout). Exit code.
int write_text(const std::string& output, const std::string& text) {
  const bool to_stdout = output.empty() || output == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(output.c_str(), "wb");
  if (!out) return output_error(output, "cannot write");
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  const bool closed = to_stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
  if (!ok || !closed) return output_error(to_stdout ? "stdout" : output, "write error");
  return exit_ok;
}

/// "edgetrace: reading X (1.2 GB)" on a terminal, for big inputs only;
/// cleared by the destructor. Nothing when stderr is a file or a pipe.
class progress_line {
 public:
  progress_line(const std::string& what, const et::dump_reader& r) {
    if (::isatty(2) != 1 || r.stats().file_size < (std::uint64_t{256} << 20)) return;
    std::fprintf(stderr, "edgetrace: %s %s (%.1f MB)...\r", what.c_str(), r.path().c_str(),
                 static_cast<double>(r.stats().file_size) / 1e6);
    std::fflush(stderr);
    shown_ = true;
  }
  ~progress_line() {
    if (shown_) std::fprintf(stderr, "\033[2K\r");
  }
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

 private:
  bool shown_ = false;
};

/// Opens the dumps; on failure prints the error and returns exit_input.
int open_dumps(const std::vector<std::string>& paths, std::vector<std::unique_ptr<et::dump_reader>>& readers) {
  for (const std::string& path : paths) {
    auto r = std::make_unique<et::dump_reader>();
    if (!r->open(path) || !r->read_metadata()) return input_error(path, r->error());
    readers.push_back(std::move(r));
  }
  return exit_ok;
}

/// Builds a summary over readers; exit_ok or an error code.
int build_summary(const std::vector<std::unique_ptr<et::dump_reader>>& readers, const et::summary_options& o,
                  et::summary_result& result) {
  et::summary_builder builder(o);
  for (const auto& r : readers) {
    progress_line progress("summarising", *r);
    std::string error;
    if (!builder.add(*r, error)) {
      if (!r->error().empty()) return input_error(r->path(), error);
      std::fprintf(stderr, "edgetrace: error: %s: %s\n", r->path().c_str(), error.c_str());
      return exit_usage;
    }
  }
  result = builder.finish();
  return exit_ok;
}

/// The worst exit code of the readers' damage reports.
int report_all(const std::vector<std::unique_ptr<et::dump_reader>>& readers, const std::string& outcome) {
  int rc = exit_ok;
  for (const auto& r : readers) rc = std::max(rc, report(*r, r->path(), true, outcome));
  return rc;
}

std::string with_extension(const std::string& dump, const char* ext) {
  const std::string etr = ".etr";
  if (dump.size() > etr.size() && dump.compare(dump.size() - etr.size(), etr.size(), etr) == 0)
    return dump.substr(0, dump.size() - etr.size()) + ext;
  return dump + ext;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + base_name(i);
  return out;
}

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

std::string size_text(std::uint64_t bytes) {
  char text[32];
  if (bytes >= 1000000000) std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  else if (bytes >= 1000000) std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  else std::snprintf(text, sizeof text, "%.1f kB", static_cast<double>(bytes) / 1e3);
  return text;
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

/// "edgetrace: converting run.etr: 42%" on one line of a terminal, ended by
/// a newline; nothing when stderr is a file or a pipe.
class percent_line {
 public:
  explicit percent_line(const std::string& dump) : dump_(dump), shown_(::isatty(2) == 1) {}
  ~percent_line() {
    if (started_) std::fputc('\n', stderr);
  }
  percent_line(const percent_line&) = delete;
  percent_line& operator=(const percent_line&) = delete;
  /// The callback for chrome_json_options::progress (empty off a terminal).
  std::function<void(unsigned)> callback() {
    if (!shown_) return {};
    return [this](unsigned percent) {
      std::fprintf(stderr, "\redgetrace: converting %s: %u%%", dump_.c_str(), percent);
      std::fflush(stderr);
      started_ = true;
    };
  }

 private:
  std::string dump_;
  bool shown_ = false;
  bool started_ = false;
};

/// Removes a half-written OUT, but only a regular file: an output that is
/// a device (/dev/full), a FIFO or a symlink is never removed.
void remove_partial_output(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(path.c_str());
}

/// Writes OUT ('-': stdout) with `convert(FILE*, error) -> bool` from the
/// opened dump `r`. A failed conversion leaves no partial OUT behind; the
/// exit code is report()'s (3 for a damaged dump).
template <class Convert>
int write_one_output(const et::dump_reader& r, const std::string& dump, const std::string& output,
                     const std::string& what, Convert&& convert) {
  const bool to_stdout = output == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(output.c_str(), "wb");
  if (!out) return output_error(output, "cannot write");
  std::string error;
  bool ok;
  {
    progress_line progress("converting", r);
    ok = convert(out, error);
  }
  const bool closed = to_stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
  if (!ok || !closed) {
    if (!to_stdout) remove_partial_output(output);  // never leave half a file behind
    return input_error(ok || error.rfind("write", 0) == 0 ? output : dump, error.empty() ? "write error" : error);
  }
  return report(r, dump, true, what + (to_stdout ? " written to stdout" : " written to " + output));
}

/// A command that converts one DUMP to one OUT (default: DUMP with .etr
/// replaced by `extension`) with `convert(reader, FILE*, error) -> bool`.
template <class Convert>
int convert_one_dump(const char* name, const arguments& args, const char* extension, const std::string& what,
                     Convert&& convert) {
  const command& c = *find_command(name);
  dump_arguments a;
  if (const int rc = parse_dump_arguments(c, args, true, a); rc != exit_ok || a.help) {
    if (a.help && rc == exit_ok) run_help("help", {name});
    return rc;
  }
  const std::string output = a.has_output ? a.output : with_extension(a.dump, extension);
  if (const int rc = refuse_overwriting_inputs({a.dump}, {output}); rc != exit_ok) return rc;
  et::dump_reader r;
  if (!r.open(a.dump) || !r.read_metadata()) return input_error(a.dump, r.error());
  return write_one_output(r, a.dump, output, what, [&](std::FILE* out, std::string& error) { return convert(r, out, error); });
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
  std::string list;
  std::uint64_t events = 0, bytes = 0, largest = 0;
  for (const auto& part : parts) {
    list += (list.empty() ? "" : ", ") + part.path;
    events += part.result.events;
    bytes += part.bytes;
    largest = std::max(largest, part.bytes);
  }
  const int rc = report(r, dump, true, std::to_string(parts.size()) + " JSON file(s) written: " + list);
  if (::isatty(2) == 1 && rc == exit_ok)
    std::fprintf(stderr, "edgetrace: wrote %s .. %s: %zu files, %llu events, %s (largest %s)\n",
                 parts.front().path.c_str(), parts.back().path.c_str(), parts.size(),
                 static_cast<unsigned long long>(events), size_text(bytes).c_str(), size_text(largest).c_str());
  return rc;
}

/// `json` into one document (a file, or stdout for "-"), with a warning
/// when it is bigger than a browser opens. Exit code.
int run_json_single(et::dump_reader& r, const std::string& dump, const std::string& output,
                    et::chrome_json_options& options) {
  // Warn before the work when the estimate is over what a browser opens;
  // with --min-dur or --filter the output may be far smaller, so only the
  // size written is judged (after).
  std::uint64_t records = 0;
  const std::uint64_t estimate = json_estimate(r, records);
  const bool filtered = options.min_dur_ns != 0 || options.filter != nullptr;
  const bool warned = !filtered && estimate > json_warn_bytes();
  if (warned) warn_json_too_big(dump, "will be about", estimate, records);
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

int run_json(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  parsed_options p;
  if (const int rc = parse_options(c, args, {"--output", "--split-mb", "--min-dur", "--filter"}, p); rc != exit_ok)
    return rc;
  if (p.help) return run_help("help", {name});
  if (p.positional.empty()) return usage_error(&c, "'json' needs a DUMP file");
  if (p.positional.size() > 1) return usage_error(&c, "unexpected argument '" + p.positional[1] + "' (one DUMP at a time)");
  const std::string dump = p.positional[0];
  std::string output = default_json_path(dump);
  if (const std::string* v = p.get("--output")) {
    if (v->empty()) return usage_error(&c, "empty output file name");
    output = *v;
  }
  et::chrome_json_options options;
  options.source_name = base_name(dump);
  if (const std::string* v = p.get("--min-dur"))
    if (!et::parse_duration(*v, options.min_dur_ns))
      return usage_error(&c, "--min-dur needs a duration with a unit (ns, us, ms, s), not '" + *v + "'");
  if (const std::string* v = p.get("--filter"))
    if (const int rc = compile_regex(c, *v, options.filter); rc != exit_ok) return rc;
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
  return split_mb != 0 ? run_json_split(c, r, dump, output, options, split_mb) : run_json_single(r, dump, output, options);
}

int run_perfetto(const char* name, const arguments& args) {
  return convert_one_dump(name, args, ".pftrace", "Perfetto trace", [](et::dump_reader& r, std::FILE* out, std::string& error) {
    return et::write_perfetto(r, out, nullptr, &error);
  });
}

int run_summary(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  parsed_options p;
  if (const int rc = parse_options(c, args, summary_valued, p); rc != exit_ok) return rc;
  if (p.help) return run_help("help", {name});
  if (p.positional.empty()) return usage_error(&c, "'summary' needs at least one DUMP file");
  et::summary_options o;
  std::string format = "table";
  if (const int rc = summary_options_from(c, p, o, format); rc != exit_ok) return rc;
  const std::string* output = p.get("--output");
  if (const int rc = refuse_overwriting_inputs(p.positional, {output ? *output : ""}); rc != exit_ok) return rc;
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  if (const int rc = open_dumps(p.positional, readers); rc != exit_ok) return rc;
  et::summary_result result;
  if (const int rc = build_summary(readers, o, result); rc != exit_ok) return rc;
  const std::string source = joined(p.positional);
  const std::string text = format == "csv"    ? et::summary_csv(result)
                           : format == "json" ? et::summary_json(result, source)
                                              : et::summary_table(result, source);
  if (const int rc = write_text(output ? *output : "", text); rc != exit_ok) return rc;
  return report_all(readers, "summary written");
}

/// One summary per dump (the per-run means diff's noise is measured on).
int build_run_summaries(const std::vector<std::string>& paths, const et::summary_options& o,
                        std::vector<et::summary_result>& runs) {
  for (const std::string& path : paths) {
    std::vector<std::unique_ptr<et::dump_reader>> one;
    if (const int rc = open_dumps({path}, one); rc != exit_ok) return rc;
    runs.emplace_back();
    if (const int rc = build_summary(one, o, runs.back()); rc != exit_ok) return rc;
  }
  return exit_ok;
}

int run_diff(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  // BASE... --vs NEW...: options may stand on either side of --vs.
  const auto vs = std::find(args.begin(), args.end(), std::string("--vs"));
  parsed_options p, p_new;
  if (const int rc = parse_options(c, arguments(args.begin(), vs), summary_valued, p); rc != exit_ok) return rc;
  if (vs != args.end()) {
    if (const int rc = parse_options(c, arguments(vs + 1, args.end()), summary_valued, p_new); rc != exit_ok) return rc;
    p.values.insert(p.values.end(), p_new.values.begin(), p_new.values.end());
    p.help = p.help || p_new.help;
  }
  if (p.help) return run_help("help", {name});
  std::vector<std::string> base_paths = p.positional, new_paths = p_new.positional;
  if (vs == args.end()) {
    if (p.positional.size() != 2)
      return usage_error(&c, "'diff' needs two dumps (BASE NEW), or repeated runs: BASE... --vs NEW...");
    base_paths = {p.positional[0]};
    new_paths = {p.positional[1]};
  } else if (base_paths.empty() || new_paths.empty()) {
    return usage_error(&c, "'diff BASE... --vs NEW...' needs at least one dump on each side of --vs");
  }
  if (p.get("--sort-by")) return usage_error(&c, "diff sorts by impact; --sort-by does not apply");
  for (const char* option : {"--per", "--wait", "--wait-category"})
    if (p.get(option))
      return usage_error(&c, std::string(option) + " changes only summary's per-iteration and share columns, which diff does not show");
  et::summary_options o;
  std::string format = "table";
  if (const int rc = summary_options_from(c, p, o, format); rc != exit_ok) return rc;
  const std::size_t top = o.top;
  o.top = 0;
  const std::string* output = p.get("--output");
  std::vector<std::string> all_paths = base_paths;
  all_paths.insert(all_paths.end(), new_paths.begin(), new_paths.end());
  if (const int rc = refuse_overwriting_inputs(all_paths, {output ? *output : ""}); rc != exit_ok) return rc;
  std::vector<std::unique_ptr<et::dump_reader>> base_readers, new_readers;
  if (const int rc = open_dumps(base_paths, base_readers); rc != exit_ok) return rc;
  if (const int rc = open_dumps(new_paths, new_readers); rc != exit_ok) return rc;
  for (const auto& r : new_readers)
    if (r->version_major() != base_readers[0]->version_major())
      return input_error(r->path(), "format version differs from " + base_paths[0]);
  et::summary_result base, next;
  if (const int rc = build_summary(base_readers, o, base); rc != exit_ok) return rc;
  if (const int rc = build_summary(new_readers, o, next); rc != exit_ok) return rc;
  auto rows = et::diff_summaries(base, next);
  if (base_paths.size() > 1 || new_paths.size() > 1) {
    std::vector<et::summary_result> base_runs, new_runs;
    if (const int rc = build_run_summaries(base_paths, o, base_runs); rc != exit_ok) return rc;
    if (const int rc = build_run_summaries(new_paths, o, new_runs); rc != exit_ok) return rc;
    et::add_run_noise(rows, base_runs, new_runs);
  }
  auto side = [](const std::vector<std::string>& paths) {
    std::string text;
    for (const std::string& path : paths) text += (text.empty() ? "" : " ") + path;
    return paths.size() > 1 ? text + " (" + std::to_string(paths.size()) + " runs)" : text;
  };
  const std::string text = format == "csv"    ? et::diff_csv(rows, top)
                           : format == "json" ? et::diff_json(rows, side(base_paths), side(new_paths), top)
                                              : et::diff_table(rows, side(base_paths), side(new_paths), top,
                                                               et::detail::group_label(base));
  if (const int rc = write_text(output ? *output : "", text); rc != exit_ok) return rc;
  base_readers.insert(base_readers.end(), std::make_move_iterator(new_readers.begin()),
                      std::make_move_iterator(new_readers.end()));
  return report_all(base_readers, "diff written");
}

int run_report(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  parsed_options p;
  if (const int rc = parse_options(c, args, summary_valued, p); rc != exit_ok) return rc;
  if (p.help) return run_help("help", {name});
  if (p.positional.empty()) return usage_error(&c, "'report' needs at least one DUMP file");
  if (p.get("--format")) return usage_error(&c, "a report is HTML; --format does not apply");
  et::summary_options o;
  o.top = 30;
  std::string format;
  if (const int rc = summary_options_from(c, p, o, format); rc != exit_ok) return rc;
  const std::string* given = p.get("--output");
  const std::string output = given ? *given : with_extension(p.positional[0], ".html");
  if (output.empty()) return usage_error(&c, "empty output file name");
  if (const int rc = refuse_overwriting_inputs(p.positional, {output}); rc != exit_ok) return rc;
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  if (const int rc = open_dumps(p.positional, readers); rc != exit_ok) return rc;
  et::summary_result result;
  if (const int rc = build_summary(readers, o, result); rc != exit_ok) return rc;
  et::report_options ro;
  ro.source = joined(p.positional);
  ro.title = "edgetrace report: " + ro.source;
  if (const int rc = write_text(output, et::report_html(result, ro)); rc != exit_ok) return rc;
  return report_all(readers, "report written to " + output);
}

int run_csv(const char* name, const arguments& args) {
  return convert_one_dump(name, args, ".csv", "CSV", [](et::dump_reader& r, std::FILE* out, std::string& error) {
    return et::write_spans_csv(r, out, nullptr, &error);
  });
}

int run_merge(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  parsed_options p;
  if (const int rc = parse_options(c, args, {"--output", "--clock"}, p); rc != exit_ok) return rc;
  if (p.help) return run_help("help", {name});
  if (p.positional.size() < 2) return usage_error(&c, "'merge' needs at least two dumps");
  const std::string* output = p.get("--output");
  if (!output || output->empty()) return usage_error(&c, "'merge' needs -o OUT.etr or -o OUT.json");
  const bool etr = ends_with(*output, ".etr");
  if (!etr && !ends_with(*output, ".json"))
    return usage_error(&c, "the output's extension picks the format: .etr or .json, not '" + *output + "'");
  if (const int rc = refuse_overwriting_inputs(p.positional, {*output}); rc != exit_ok) return rc;
  et::merge_clock clock = et::merge_clock::automatic;
  if (const std::string* v = p.get("--clock")) {
    if (*v == "auto") clock = et::merge_clock::automatic;
    else if (*v == "monotonic") clock = et::merge_clock::monotonic;
    else if (*v == "realtime") clock = et::merge_clock::realtime;
    else return usage_error(&c, "--clock must be auto, monotonic or realtime, not '" + *v + "'");
  }
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  if (const int rc = open_dumps(p.positional, readers); rc != exit_ok) return rc;
  for (std::size_t i = 1; i < readers.size(); ++i)
    if (readers[i]->version_major() != readers[0]->version_major())
      return input_error(p.positional[i], "dump format " + std::to_string(readers[i]->version_major()) +
                                              ".x cannot be merged with " + p.positional[0]);
  if (!etr)  // a .etr merge copies chunks; JSON needs times
    for (const auto& r : readers)
      if (!r->unknown_rate().empty()) return input_error(r->path(), r->unknown_rate());
  std::vector<et::dump_reader*> inputs;
  for (auto& r : readers) inputs.push_back(r.get());
  et::merge_plan plan;
  std::string error;
  if (!et::plan_merge(inputs, p.positional, clock, plan, error)) return input_error("merge", error);
  for (const std::string& note : plan.notes) std::fprintf(stderr, "edgetrace: note: %s\n", note.c_str());
  std::FILE* out = std::fopen(output->c_str(), "wb");
  if (!out) return output_error(*output, "cannot write");
  bool ok;
  if (etr) {
    ok = et::write_merged_dump(inputs, plan, out, error);
  } else {
    et::chrome_json_options options;
    options.source_name = joined(p.positional);
    ok = et::write_chrome_json(et::merged_json_inputs(inputs, plan), out, options, nullptr, &error);
  }
  const bool closed = std::fclose(out) == 0;
  if (!ok || !closed) {
    remove_partial_output(*output);
    return input_error(*output, error.empty() ? "write error" : error);
  }
  return report_all(readers, "merged into " + *output);
}

int run_info(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  dump_arguments a;
  if (const int rc = parse_dump_arguments(c, args, false, a); rc != exit_ok || a.help) {
    if (a.help && rc == exit_ok) run_help("help", {name});
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

/// Seconds for --window and --interval: "5", "2.5", or a duration with a
/// unit ("500ms"); more than 0 and at most a day.
bool parse_seconds(const std::string& text, std::uint64_t& ns) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size()) {
    if (!(v > 0) || v > 86400) return false;
    ns = static_cast<std::uint64_t>(v * 1e9);
    return ns != 0;
  }
  return et::parse_duration(text, ns) && ns != 0 && ns <= 86400000000000ull;
}

/// Set by SIGINT or SIGTERM: `top --follow` stops after the refresh under way.
volatile std::sig_atomic_t stop_following = 0;
extern "C" void on_stop_signal(int) { stop_following = 1; }

/// `top --follow` marks the table stale after this long without new data.
constexpr double stale_after_seconds = 5.0;
/// ... and ends, its writer's process gone, after this long without new data.
constexpr double gone_after_seconds = 3.0;

/// `top --follow`: polls the dump and redraws until its writer ends, its
/// process is gone, or a signal stops it.
int follow_top(const std::string& dump, const et::top_options& options, std::uint64_t interval_ns) {
  et::dump_follower follower;
  if (!follower.open(dump)) return input_error(dump, follower.error());
  struct sigaction action {};
  action.sa_handler = on_stop_signal;  // no SA_RESTART: the sleep below ends at once
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  const bool terminal = ::isatty(1) == 1;
  et::top_window window(options);
  std::uint64_t spans = 0;
  for (;;) {
    const bool polled = follower.poll([&](const et::followed_span& s) {
      ++spans;
      window.add(s.key, *s.name, s.end_ns, static_cast<std::uint64_t>(s.end_ns - s.begin_ns));
    });
    if (!polled) return input_error(dump, follower.error());
    const bool done = follower.finished();
    // A writer killed (kill -9) or crashed writes no end record: its table
    // would be redrawn forever as if live. Gone: say so and end. Quiet
    // for longer than a live writer ever is (its calibration chunk comes
    // every second): mark the table stale, and go on (a stopped process
    // may resume).
    const double quiet = follower.seconds_without_data();
    // Only after a quiet spell: a writer in another pid namespace (a
    // container writing to a shared folder) has a pid that this machine
    // may not know, but its file grows every second.
    const std::uint64_t gone = done || quiet < gone_after_seconds ? 0 : follower.gone_writer();
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char clock[16];
    std::strftime(clock, sizeof clock, "%H:%M:%S", &tm);
    std::string head = std::string("== ") + clock + " UTC " + dump + ": " + std::to_string(spans) + " span(s) read";
    if (follower.restarts() != 0) head += ", file restarted " + std::to_string(follower.restarts()) + " time(s)";
    if (follower.bytes_skipped() != 0) head += ", " + std::to_string(follower.bytes_skipped()) + " corrupt bytes skipped";
    if (done)
      head += ", writer finished ==\n";
    else if (gone != 0)
      head += ", writer gone: process " + std::to_string(gone) + " has ended without an end record (killed or "
              "crashed?); no data since " + std::to_string(static_cast<long long>(quiet)) + " s ago ==\n";
    else if (quiet >= stale_after_seconds)
      head += ", STALE: no data for " + std::to_string(static_cast<long long>(quiet)) + " s (writer stopped or stuck?) ==\n";
    else
      head += " ==\n";
    std::string text = head + et::top_table(window.table(), options);
    if (terminal) text = "\033[H\033[2J" + text;  // home, clear: redraw in place
    else text += "\n";
    if (std::string error; !et::detail::write_text(stdout, text, &error)) return input_error("stdout", error);
    if (gone != 0) {
      std::fprintf(stderr, "edgetrace: %s: its writer (process %llu) has ended without an end record (killed or "
                   "crashed?); stopped following\n", dump.c_str(), static_cast<unsigned long long>(gone));
      return exit_ok;
    }
    if (done || stop_following) return exit_ok;
    // Sleep in short steps: a signal (or the writer's end) is seen promptly.
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(interval_ns);
    while (!stop_following && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(50),
                                                                      until - std::chrono::steady_clock::now()));
    if (stop_following) return exit_ok;
  }
}

int run_top(const char* name, const arguments& args) {
  const command& c = *find_command(name);
  arguments rest;
  bool follow = false;
  for (const std::string& a : args)
    if (a == "--follow" || a == "-f") follow = true;
    else rest.push_back(a);
  parsed_options p;
  if (const int rc = parse_options(c, rest, {"--window", "--interval", "--top"}, p); rc != exit_ok) return rc;
  if (p.help) return run_help("help", {name});
  if (p.positional.empty()) return usage_error(&c, "'top' needs a DUMP file");
  if (p.positional.size() > 1) return usage_error(&c, "unexpected argument '" + p.positional[1] + "' (one DUMP at a time)");
  const std::string& dump = p.positional[0];
  et::top_options options;
  if (const std::string* v = p.get("--window"))
    if (!parse_seconds(*v, options.window_ns))
      return usage_error(&c, "--window needs a number of seconds > 0 and at most 86400 (e.g. 5, 2.5, 500ms), not '" + *v + "'");
  std::uint64_t interval_ns = 1000000000u;
  if (const std::string* v = p.get("--interval")) {
    if (!follow) return usage_error(&c, "--interval applies only with --follow");
    if (!parse_seconds(*v, interval_ns))
      return usage_error(&c, "--interval needs a number of seconds > 0 and at most 86400 (e.g. 1, 0.5), not '" + *v + "'");
  }
  if (const std::string* v = p.get("--top")) {
    std::uint64_t n = 0;
    if (!parse_count(*v, n) || n == 0) return usage_error(&c, "--top needs a whole number >= 1, not '" + *v + "'");
    options.rows = static_cast<std::size_t>(n);
  }
  if (follow) return follow_top(dump, options, interval_ns);
  et::dump_reader r;
  if (!r.open(dump) || !r.read_metadata()) return input_error(dump, r.error());
  et::top_window window(options);
  if (!r.read_events([&](const et::event& e) {
        if (e.kind == et::event_kind::span)
          window.add(e.site, e.site->name, e.end_ns, static_cast<std::uint64_t>(e.end_ns - e.begin_ns));
      }))
    return input_error(dump, r.error());
  if (const int rc = write_text("", et::top_table(window.table(), options)); rc != exit_ok) return rc;
  return report(r, dump, true, "table written");
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
  std::printf("\n%s\n%s", c->summary, with_documentation_paths(c->details).c_str());
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
