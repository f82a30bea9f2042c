// SPDX-License-Identifier: MIT
// The `edgetrace` command line: the table of subcommands (one file each in
// this folder), help, and main. Shared parsing and errors: options.cpp.
#include "cli.hpp"

#include <edgetrace/format.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace edgetrace_cli {

namespace {

/// The selection options json and perfetto share (one text, in both helps).
#define SELECTION_HELP                                                                  \
  "  --min-dur T        leave out spans shorter than T (e.g. 50us, 1ms)\n"               \
  "  --filter REGEX     keep only spans, instants and counters whose name matches\n"     \
  "  --window FROM:TO   keep what lies between two times from the first event\n"        \
  "                     (e.g. 1.5s:2s; 2s: to the end; :500ms from the start):\n"       \
  "                     spans that overlap it, whole; instants and counters in it\n"    \
  "  --focus slowest:N --per NAME   the N slowest iterations (instances of span\n"      \
  "                     NAME, or the time between marks NAME) and one either side\n"  \
  "                     of each in full; every other iteration as its one NAME\n"     \
  "                     slice, or left out with its marks (said on stderr and in\n"   \
  "                     the output's metadata)\n"                                      \
  "  --other-marks keep with --focus and a mark NAME: keep every iteration's marks\n"

const command commands[] = {
    {"json", "DUMP [-o OUT] [--split-mb N] [--min-dur T] [--filter REGEX] [--window FROM:TO] [--focus slowest:N --per NAME [--other-marks keep]]",
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
     SELECTION_HELP
     "A JSON estimated (about 100 bytes an event, 22 an argument; with a selection,\n"
     "of what it keeps) or found to be over 1 GB, more than Perfetto UI or Chrome open,\n"
     "gets a warning naming --split-mb, --min-dur, --filter and `edgetrace perfetto`\n"
     "(EDGETRACE_JSON_WARN_MB sets the figure).\n"
     "On a terminal: progress in percent, then one line: file, events, size.\n"
     "Flows: bind_id/flow_in/flow_out on the steps' spans (Perfetto), and s/t/f\n"
     "events (DevTools).\n",
     run_json},
    {"perfetto",
     "DUMP [-o OUT] [--compress deflate|none] [--split-mb N] [--min-dur T] [--filter REGEX] [--window FROM:TO] [--focus slowest:N --per NAME [--other-marks keep]]",
     "convert a dump to a Perfetto protobuf trace (.pftrace): smaller, for big traces",
     "Writes OUT (default: DUMP with .etr replaced by .pftrace; '-' for stdout)\n"
     "in Perfetto's own format, which ui.perfetto.dev and trace_processor load\n"
     "natively: tracks per process and thread, slices, instants, counter tracks,\n"
     "flows, GPU streams. Several times smaller than the JSON, and written in\n"
     "bounded memory; prefer it for traces too big for a JSON viewer. Damage is\n"
     "reported as warnings on stderr and with exit code 3.\n"
     "  -o, --output OUT   output file, '-' for standard output\n"
     "  --compress deflate|none  deflate the packets (TracePacket.compressed_packets,\n"
     "                     as Perfetto's own service does; trace_processor and the\n"
     "                     UI expand them): 8 to 70 times smaller (dense spans: 12\n"
     "                     bytes an event plain, 0.2 deflated). The default where\n"
     "                     this edgetrace was built with zlib, else none\n"
     "  --split-mb N       write OUT-001.pftrace, OUT-002.pftrace, ... one time window\n"
     "                     per file, each loadable on its own, each at most N MB\n"
     "                     (10^6 bytes) of packets as a viewer loads them (before\n"
     "                     deflate: the files are smaller), at most 64 files; a split\n"
     "                     that cannot keep that is refused, nothing written\n"
     SELECTION_HELP
     "A span left out keeps its own arguments and flow steps. On a terminal:\n"
     "progress in percent, then one line: file, packets, slices, size. Over 500 MB\n"
     "of packets, more than Perfetto UI may hold in a browser, a warning names the\n"
     "ways out (EDGETRACE_PERFETTO_WARN_MB sets the figure).\n",
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
     "                              / summed iteration time); with device samples in the\n"
     "                              dump (EDGETRACE_SAMPLE_MS), the slowest iterations follow\n"
     "                              the table, each with what the device's state had that\n"
     "                              the run's usual iteration had not (run-queue wait, CPU\n"
     "                              clock, temperature, other processes' load, ...)\n"
     "  --slowest N                 with --per: explain the N slowest iterations (default:\n"
     "                              those at or above p99, at most 10)\n"
     "  --wait REGEX                span names that are waiting, not work (default ^wait, any\n"
     "                              case; 'off' for none): their self time is left out of\n"
     "                              share and of the threads' busy time\n"
     "  --wait-category LIST        spans of these categories are waiting too (comma list)\n"
     "  --columns LIST              the table's columns besides the name, in its order\n"
     "                              (e.g. calls,total,self,p50,p99,max,share; also mean,\n"
     "                              min, p90, p95, p99.9, avg/iter, %iter, the gpu and\n"
     "                              peak mem columns); csv and json keep every field\n"
     "  --format table|csv|json     output format (default table)\n"
     "  -o, --output OUT            write to OUT instead of standard output\n",
     run_summary},
    {"csv", "DUMP [-o OUT] [--tables LIST] [--per NAME] [selection]",
     "one CSV line per span in time order; marks, counters, allocations as tables",
     "Writes OUT (default: DUMP with .etr replaced by .csv; '-' for stdout);\n"
     "loads with pandas.read_csv(OUT). Rows come in time order (start, then\n"
     "pid and tid, then depth). After the span's own columns: phase, flow,\n"
     "flow_id, then one column per argument key (arg:KEY, empty when the\n"
     "span has no such argument), so df.groupby('arg:op') works. Columns\n"
     "are in docs/ANALYSIS.md.\n"
     "  -o, --output OUT     output file, '-' for standard output (one table)\n"
     "  --tables LIST        which tables: spans (default), marks (marks and\n"
     "                       instants), counters (counter samples), allocs\n"
     "                       (EDGETRACE_ALLOC/FREE with live bytes), or all.\n"
     "                       One table goes to OUT; with several, spans go to\n"
     "                       OUT and each other table to its own file beside\n"
     "                       it: run.csv, run.marks.csv, run.counters.csv,\n"
     "                       run.allocs.csv\n"
     "  --per NAME           adds an 'iteration' column to every table: the\n"
     "                       number (from 0, in order of begin) of the iteration\n"
     "                       the row lies in, each outermost span NAME on its\n"
     "                       thread or the time between marks NAME; empty outside\n"
     "  --min-dur T          leave out spans shorter than T (e.g. 20us)\n"
     "  --filter REGEX       keep spans, marks and counters whose name matches\n"
     "  --window FROM:TO     keep what lies in [FROM, TO], times from the first\n"
     "                       event (spans that overlap it, whole), as for json\n",
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
    {"import", "DUMP PROFILE.json... -o OUT.etr",
     "add ONNX Runtime's profile to the app's dump, as spans of its threads",
     "Writes OUT.etr: DUMP with the events of ONNX Runtime profiles\n"
     "(SessionOptions or RunOptions profiling) added as spans of the threads\n"
     "that ran them: nodes (category onnxruntime, the node's name, every ORT\n"
     "argument typed: op_name, provider, shapes, sizes, arena figures) inside\n"
     "model_run and SequentialExecutor::Execute (onnxruntime.session), inside\n"
     "the app's span around Run(). Time base, said on stderr: the argument\n"
     "onnxruntime.profiling_start_ns if the app recorded it, else the start\n"
     "that puts model_run inside the app's spans (near the file name's time\n"
     "when it has one). A file that is not an ORT profile, a profile of\n"
     "another process or of another run: one line, exit 2, nothing written.\n"
     "  -o, --output OUT   the dump to write (.etr)\n",
     run_import},
    {"diff", "BASE NEW [options] | BASE... --vs NEW... [options]", "per-name change between two runs, sorted by impact",
     "Compares two dumps by span name: calls, mean, p50, p99 and total, with\n"
     "the change from BASE to NEW, biggest change in total time first.\n"
     "With several dumps per side (repeated runs: BASE... --vs NEW...), each side\n"
     "is pooled, and each row's mean change is set against run-to-run noise (the\n"
     "larger max - min of the per-run means): 'within noise' or 'beyond noise'.\n"
     "See docs/ANALYSIS.md.\n"
     "  --per NAME                  compare the iteration itself (each outermost span\n"
     "                              NAME, or the time between marks NAME): count, mean,\n"
     "                              p50, p99 and max, its p50 set against noise (the\n"
     "                              spread of the per-run p50); rows count only spans\n"
     "                              inside iterations and gain '% iter' (total / the\n"
     "                              iterations' time) with its change in points\n"
     "  --by name|arg:KEY|name,arg:KEY   what a row stands for, as for summary\n"
     "  --top N, --filter REGEX, --category LIST, --thread LIST, --skip-warmup K,\n"
     "  --iteration NAME, --phase NAME, --min-time T, --max-time T   as for summary\n"
     "                              (both dumps)\n"
     "  --format table|csv|json     output format (default table); csv has a row per\n"
     "                              name (kind 'row') and, with --per, the iteration\n"
     "                              first (kind 'iteration'); json has it as 'iteration'\n"
     "  -o, --output OUT            write to OUT instead of standard output\n",
     run_diff},
    {"report", "DUMP... -o OUT.html [options]", "self-contained HTML report: table, histograms, thread use",
     "One HTML file with inline CSS and SVG (no network): the summary table,\n"
     "a latency histogram for each of the first rows, and per-thread\n"
     "utilisation (busy = inside top-level spans minus waiting, see --wait).\n"
     "Takes the summary's options (--top defaults to 30). With device samples\n"
     "(EDGETRACE_SAMPLE_MS): a plot of each device track over the run, under the\n"
     "iteration latency and the slowest iterations explained when --per is given.\n"
     "  -o, --output OUT   output file (default: DUMP with .etr replaced by .html)\n",
     run_report},
    {"info", "DUMP", "describe a dump: writers, clock, threads, event counts, drops, damage, device sources",
     "Prints the file's format version, each writer's process, clock source and\n"
     "fitted tick rate, calibration, duration, ring capacity and flush period,\n"
     "a table of threads with their span/instant/counter/drop counts checked\n"
     "against the writer's own totals, and every diagnostic.\n"
     "A flight recorder's snapshot also shows its trigger and reason, the\n"
     "trigger's time (from the window start, and on the wall clock), the window\n"
     "it holds, its sequence number, the snapshots skipped by the rate limit, the\n"
     "ring's size and the chunks it overwrote; records before the window are\n"
     "not counted as missing (docs/ANALYSIS.md).\n"
     "With device samples: the sampling period, the tracks, what sampling cost,\n"
     "values ignored, and each source not found on the machine.\n",
     run_info},
    {"top", "DUMP [--follow] [--window SECONDS] [--interval SECONDS] [--top N] [--per NAME]",
     "per-name table over the last seconds of a trace; --follow watches a live dump",
     "One row per span name: calls, calls/s, mean, p50, p99 and max of the spans\n"
     "that ended in the last SECONDS of the trace (up to its latest span), the\n"
     "most total time first. See docs/ANALYSIS.md.\n"
     "  --follow, -f         keep reading DUMP as its app appends to it (normal mode),\n"
     "                       refreshing the table; whole chunks only (a chunk being\n"
     "                       written is waited for); a file truncated under it is\n"
     "                       read again from its start. Ends by itself when the\n"
     "                       writer's end record arrives, or on Ctrl-C (exit 0).\n"
     "                       On a terminal the table is redrawn in place under a\n"
     "                       status line; otherwise each refresh is printed after\n"
     "                       a line '== HH:MM:SS UTC DUMP: ... =='; with device\n"
     "                       samples (EDGETRACE_SAMPLE_MS), a line 'device: ...' of\n"
     "                       the latest values comes first (slowest CPU clock, busy,\n"
     "                       other processes, memory, GPU, power, temperature)\n"
     "  --window SECONDS     how far back the table looks (default 5; e.g. 2.5, 500ms)\n"
     "  --interval SECONDS   time between refreshes with --follow (default 1)\n"
     "  --top N              rows shown (default 20)\n"
     "  --per NAME           a line above the table for the iteration: how many\n"
     "                       ended in the window, per second, p50, p99 and max;\n"
     "                       an iteration is each span NAME (nested ones too), or\n"
     "                       the time between two marks NAME of one thread\n"
     "Memory: the spans of the window, at most about 1M (24 MB); past that the\n"
     "window is shortened and the table says so.\n",
     run_top},
    {"help", "[COMMAND]", "show help for edgetrace or one command", "", run_help},
};

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

const command* find_command(const std::string& name) {
  for (const command& c : commands)
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

int run_help(const command&, const arguments& args) {
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
  return command_help(*c);
}

}  // namespace edgetrace_cli

using namespace edgetrace_cli;

int main(int argc, char** argv) {
  const arguments args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (args.empty()) return usage_error(nullptr, "no command given");
  const std::string& first = args[0];
  if (first == "--help" || first == "-h") return run_help(*find_command("help"), {});
  if (first == "--version" || first == "-V") {
    std::printf("edgetrace %s (dump format %u.%u)\n", et::tool_version, edgetrace::format::version_major,
                edgetrace::format::version_minor);
    return exit_ok;
  }
  if (const command* c = find_command(first)) return c->run(*c, arguments(args.begin() + 1, args.end()));

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
