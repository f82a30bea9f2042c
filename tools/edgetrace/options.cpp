// SPDX-License-Identifier: MIT
// The `edgetrace` command line: errors, option parsing and the input and output helpers the subcommands share.
#include "cli.hpp"

#include <edgetrace/decode/snapshot.hpp>
#include <edgetrace/sinks/output.hpp>
#include <edgetrace/sinks/summary/format.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace edgetrace_cli {

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

const char exit_codes_text[] =
    "exit codes:\n"
    "  0  success\n"
    "  1  usage error (unknown command or option, missing argument)\n"
    "  2  input unreadable (missing, empty, not a dump, newer format) or output not writable;\n"
    "     also a dump whose tick rate is unknown (durations cannot be computed)\n"
    "  3  converted, but the dump was damaged or incomplete (truncated, corrupt bytes\n"
    "     skipped, or a writer without an end record); warnings are on stderr\n";

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

namespace {
/// Help text with each "docs/NAME.md" replaced by the file's real path.
std::string with_documentation_paths(std::string text) {
  const std::string dir = documentation_dir();
  if (dir.empty()) return text;
  for (std::size_t at = text.find("docs/"); at != std::string::npos; at = text.find("docs/", at + dir.size())) {
    text.replace(at, 4, dir);
  }
  return text;
}
}  // namespace

int command_help(const command& c) {
  print_command_usage(stdout, c);
  std::printf("\n%s\n%s", c.summary, with_documentation_paths(c.details).c_str());
  if (std::strcmp(c.name, "help") != 0) std::printf("\n%s", exit_codes_text);
  return exit_ok;
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

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

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
/// --min-dur T, --filter REGEX and --window FROM:TO (json and perfetto)
/// into `s`; the window is from the dump's first event until anchor_window
/// moves it onto the dump's clock. A usage error code on a bad value.
static int selection_from(const command& c, const parsed_options& p, et::event_selection& s) {
  if (const std::string* v = p.get("--min-dur"))
    if (!et::parse_duration(*v, s.min_dur_ns))
      return usage_error(&c, "--min-dur needs a duration with a unit (ns, us, ms, s), not '" + *v + "'");
  if (const std::string* v = p.get("--filter"))
    if (const int rc = compile_regex(c, *v, s.filter); rc != exit_ok) return rc;
  if (const std::string* v = p.get("--window")) {
    const std::size_t colon = v->find(':');
    const std::string from = colon == std::string::npos ? "" : v->substr(0, colon);
    const std::string to = colon == std::string::npos ? "" : v->substr(colon + 1);
    std::uint64_t from_ns = 0, to_ns = 0;
    const bool ok = colon != std::string::npos && (!from.empty() || !to.empty()) &&
                    (from.empty() || et::parse_duration(from, from_ns)) && (to.empty() || et::parse_duration(to, to_ns)) &&
                    (to.empty() || from_ns < to_ns) && from_ns < (std::uint64_t{1} << 62) && to_ns < (std::uint64_t{1} << 62);
    if (!ok)
      return usage_error(&c, "--window needs FROM:TO, times from the first event with a unit, FROM before TO, either "
                             "may be left out (e.g. 1.5s:2s, 2s:, :500ms), not '" + *v + "'");
    if (!from.empty()) s.window_begin_ns = static_cast<std::int64_t>(from_ns);
    if (!to.empty()) s.window_end_ns = static_cast<std::int64_t>(to_ns);
  }
  return exit_ok;
}

int prepare_selection(const command& c, const parsed_options& p, et::dump_reader& r, et::event_selection& s,
                      bool per_alone) {
  if (s.window_begin_ns != std::numeric_limits<std::int64_t>::min()) s.window_begin_ns += r.first_ns();
  if (s.window_end_ns != std::numeric_limits<std::int64_t>::max()) s.window_end_ns += r.first_ns();
  const std::string* focus = p.get("--focus");
  const std::string* per = p.get("--per");
  if (focus == nullptr)
    return p.get("--other-marks") != nullptr ? usage_error(&c, "--other-marks goes with --focus slowest:N --per MARK")
           : per == nullptr || per_alone     ? exit_ok
                                             : usage_error(&c, "--per NAME goes with --focus slowest:N here");
  std::uint64_t n = 0;
  if (focus->rfind("slowest:", 0) != 0 || !parse_count(focus->substr(8), n) || n == 0)
    return usage_error(&c, "--focus needs slowest:N (N >= 1: the N slowest iterations in full), not '" + *focus + "'");
  if (per == nullptr || per->empty())
    return usage_error(&c, "--focus slowest:N needs --per NAME, the span or mark of one iteration (e.g. --per frame)");
  if (const std::string* v = p.get("--other-marks")) {
    if (*v != "keep" && *v != "drop") return usage_error(&c, "--other-marks needs keep or drop, not '" + *v + "'");
    s.focus_other_marks = *v == "keep";
  }
  et::focus_result found;
  std::string error;
  if (!et::focus_slowest(r, *per, static_cast<std::size_t>(n), s, found, error))
    return error.rfind("--focus", 0) == 0 ? usage_error(&c, error) : input_error(r.path(), error);
  s.focus_note = "the " + std::to_string(found.slowest) + " slowest of " + std::to_string(found.iterations) +
                 " iterations of \"" + *per + "\" (" + et::detail::format_duration(static_cast<std::uint64_t>(found.threshold_ns)) +
                 " or longer) and one either side of each, " + std::to_string(found.kept) + " in all, in full; the other " +
                 std::to_string(found.iterations - found.kept) +
                 (!found.marks                ? " as one slice each"
                  : s.focus_other_marks ? " as their marks alone"
                                        : " left out, their marks too (--other-marks keep keeps them)");
  std::fprintf(stderr, "edgetrace: --focus: %s\n", s.focus_note.c_str());
  return exit_ok;
}

std::string size_text(std::uint64_t bytes) {
  char text[32];
  if (bytes >= 1000000000) std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  else if (bytes >= 1000000) std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  else std::snprintf(text, sizeof text, "%.1f kB", static_cast<double>(bytes) / 1e3);
  return text;
}

int compile_regex(const command& c, const std::string& text, et::name_pattern& out, const char* flag) {
  std::string error;
  // `error` is "bad regex 'TEXT': why", said as "bad --filter regex 'TEXT': why"
  if (!out.compile(text, false, &error)) return usage_error(&c, std::string("bad ") + flag + error.substr(3));
  return exit_ok;
}

const std::vector<const char*> summary_valued = {"--by",       "--top",      "--filter",    "--category",
                                                 "--thread",   "--sort-by",  "--min-time",  "--max-time",
                                                 "--iteration", "--skip-warmup", "--phase",   "--format",
                                                 "--output",    "--per",         "--wait",    "--wait-category",
                                                 "--slowest",  "--columns"};

bool parse_conversion(const command& c, const arguments& args, std::vector<const char*> valued, const char* extension,
                      conversion_arguments& a, int& rc) {
  valued.insert(valued.end(), {"--output", "--min-dur", "--filter", "--window", "--focus", "--per", "--other-marks"});
  rc = parse_options(c, args, valued, a.options);
  if (rc != exit_ok) return false;
  const std::vector<std::string>& positional = a.options.positional;
  if (a.options.help) rc = command_help(c);
  else if (positional.empty()) rc = usage_error(&c, std::string("'") + c.name + "' needs a DUMP file");
  else if (positional.size() > 1) rc = usage_error(&c, "unexpected argument '" + positional[1] + "' (one DUMP at a time)");
  if (a.options.help || positional.size() != 1) return false;
  a.dump = positional[0];
  a.output = with_extension(a.dump, extension);
  if (const std::string* v = a.options.get("--output")) {
    if (v->empty()) {
      rc = usage_error(&c, "empty output file name");
      return false;
    }
    a.output = *v;
  }
  rc = selection_from(c, a.options, a.selection);
  return rc == exit_ok;
}

bool parse_analysis_options(const command& c, const arguments& args, parsed_options& p, int& rc) {
  rc = parse_options(c, args, summary_valued, p);
  if (rc != exit_ok) return false;
  if (p.help) {
    rc = command_help(c);
    return false;
  }
  if (p.positional.empty()) {
    rc = usage_error(&c, std::string("'") + c.name + "' needs at least one DUMP file");
    return false;
  }
  return true;
}

int slowest_from(const command& c, const parsed_options& p, const std::string& per, std::size_t& slowest) {
  const std::string* v = p.get("--slowest");
  if (v == nullptr) return exit_ok;
  std::uint64_t n = 0;
  if (!parse_count(*v, n) || n == 0) return usage_error(&c, "--slowest needs a whole number >= 1, not '" + *v + "'");
  if (per.empty()) return usage_error(&c, "--slowest N goes with --per NAME: it explains the N slowest iterations");
  slowest = static_cast<std::size_t>(n);
  return exit_ok;
}

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
  if (const std::string* v = p.get("--columns")) {
    for (const std::string& item : et::split_list(*v)) {
      const std::string key = et::detail::summary_column_key(item);
      const auto& known = et::detail::summary_column_keys();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string names;
        for (const std::string& k : known) names += (names.empty() ? "" : ",") + k;
        return usage_error(&c, "--columns: no column '" + item + "' (the columns: " + names + ")");
      }
      o.columns.push_back(key);
    }
    if (o.columns.empty()) return usage_error(&c, "--columns needs a list of columns, e.g. --columns calls,total,self,p50,p99,max");
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
    o.wait = et::name_pattern();
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

/// The end of a --split-mb conversion: the files' list, then one line on a terminal.
int report_split(const et::dump_reader& r, const std::string& dump, const std::vector<std::string>& paths,
                 const char* kind, const std::string& totals) {
  std::string list;
  for (const std::string& path : paths) list += (list.empty() ? "" : ", ") + path;
  const int rc = report(r, dump, true, std::to_string(paths.size()) + " " + kind + " file(s) written: " + list);
  if (::isatty(2) == 1 && rc == exit_ok)
    std::fprintf(stderr, "edgetrace: wrote %s .. %s: %zu files, %s\n", paths.front().c_str(), paths.back().c_str(),
                 paths.size(), totals.c_str());
  return rc;
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

int summarise(const std::vector<std::string>& paths, const et::summary_options& o,
              std::vector<std::unique_ptr<et::dump_reader>>& readers, et::summary_result& result) {
  if (const int rc = open_dumps(paths, readers); rc != exit_ok) return rc;
  return build_summary(readers, o, result);
}

/// Removes a half-written OUT, but only a regular file: an output that is
/// a device (/dev/full), a FIFO or a symlink is never removed.
void remove_partial_output(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(path.c_str());
}

}  // namespace edgetrace_cli
