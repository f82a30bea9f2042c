// SPDX-License-Identifier: MIT
// The `edgetrace` command line, shared part: exit codes, the row of the
// command table, option parsing, errors, and the output helpers every
// subcommand file (tools/edgetrace/<command>.cpp) uses.
#pragma once

#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/sinks/selection.hpp>
#include <edgetrace/sinks/summary/summary.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace edgetrace_cli {

namespace et = edgetrace::reader;

/// Exit codes; `edgetrace help` documents them.
enum exit_code : int {
  exit_ok = 0,       ///< clean
  exit_usage = 1,    ///< bad command line
  exit_input = 2,    ///< input unreadable or output not writable
  exit_damaged = 3,  ///< converted, but the dump was damaged or incomplete
};

using arguments = std::vector<std::string>;

/// One subcommand: a row of the table in edgetrace.cpp.
struct command {
  const char* name;
  const char* synopsis;  ///< arguments after the name
  const char* summary;   ///< one line for the command list
  const char* details;   ///< paragraph for `edgetrace help NAME`
  int (*run)(const command& c, const arguments& args);
};

// --- Usage and help text (options.cpp) ---------------------------------------
/// The closest of `choices` to `word` when it is a plausible typo, else null.
const char* nearest(const std::string& word, const std::vector<const char*>& choices);
void print_usage(std::FILE* out);
void print_command_usage(std::FILE* out, const command& c);
/// `edgetrace help C`: usage, summary, details (docs/ paths made real) and
/// the exit codes. Exit code 0.
int command_help(const command& c);
/// The exit codes, as `edgetrace help` lists them.
extern const char exit_codes_text[];
/// Where the documentation is (installed, or the sources' docs/); empty if neither.
std::string documentation_dir();

// --- The subcommands, a file each -------------------------------------------
int run_json(const command& c, const arguments& args);      // json.cpp
int run_perfetto(const command& c, const arguments& args);  // perfetto.cpp
int run_info(const command& c, const arguments& args);      // info.cpp
int run_summary(const command& c, const arguments& args);   // summary.cpp
int run_csv(const command& c, const arguments& args);       // csv.cpp
int run_merge(const command& c, const arguments& args);     // merge.cpp
int run_import(const command& c, const arguments& args);    // import.cpp
int run_diff(const command& c, const arguments& args);      // diff.cpp
int run_report(const command& c, const arguments& args);    // report.cpp
int run_top(const command& c, const arguments& args);       // top.cpp
int run_help(const command& c, const arguments& args);      // edgetrace.cpp: the table

// --- Errors and option parsing (options.cpp) --------------------------------
int usage_error(const command* c, const std::string& message);
int input_error(const std::string& file, const std::string& what);
/// An output that could not be opened or written, as an input_error.
int output_error(const std::string& file, const char* what);
/// Refuses (exit_usage) when an output is one of the inputs (same file).
int refuse_overwriting_inputs(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);

/// Command-line of a subcommand taking one DUMP and, optionally, -o OUT.
struct dump_arguments {
  std::string dump;
  std::string output;
  bool has_output = false;
  bool help = false;
};

/// Parses DUMP [-o OUT]; returns exit_ok or prints a usage error.
int parse_dump_arguments(const command& c, const arguments& args, bool allow_output, dump_arguments& out);

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

/// Parses `args`: the options named in `valued` take a value; exit code.
int parse_options(const command& c, const arguments& args, const std::vector<const char*>& valued, parsed_options& out);
/// A whole number (at most 18 digits).
bool parse_count(const std::string& text, std::uint64_t& value);
/// After read_metadata: moves a --window given from the first event onto
/// `r`'s clock, and for --focus slowest:N (with --per NAME) finds the
/// iterations to keep, saying so on stderr and in `s.focus_note`. --per
/// alone is a usage error unless `per_alone` (csv's iteration column). The
/// exit code (a usage or input error when the focus cannot be made).
int prepare_selection(const command& c, const parsed_options& p, et::dump_reader& r, et::event_selection& s,
                      bool per_alone = false);
/// DUMP, -o OUT and the selection of json and perfetto.
struct conversion_arguments {
  parsed_options options;
  std::string dump, output;
  et::event_selection selection;
};
/// The start of json and perfetto: parse_options with the selection flags,
/// -o and `valued`, --help answered, exactly one DUMP, OUT defaulting to
/// DUMP with `extension`, the selection parsed. False when the command is
/// done, with its exit code in `rc`.
bool parse_conversion(const command& c, const arguments& args, std::vector<const char*> valued, const char* extension,
                      conversion_arguments& a, int& rc);
/// "1.4 MB", "931.0 MB", "2.1 GB" (10^3 steps).
std::string size_text(std::uint64_t bytes);
/// Compiles a --filter regex once; a usage error (exit 1) when it is bad.
int compile_regex(const command& c, const std::string& text, et::name_pattern& out, const char* flag = "--filter");
/// The options summary, diff and report take.
extern const std::vector<const char*> summary_valued;
/// The start of summary and report: parse_options with summary_valued,
/// --help answered, a usage error without a DUMP. False when the command is
/// done, with its exit code in `rc`.
bool parse_analysis_options(const command& c, const arguments& args, parsed_options& p, int& rc);
/// Fills summary_options from parsed flags; a usage error code on a bad value.
int summary_options_from(const command& c, const parsed_options& p, et::summary_options& o, std::string& format);
/// --slowest N (summary, report): the slow iterations to explain, 0 when
/// not given (those at or above p99); needs --per.
int slowest_from(const command& c, const parsed_options& p, const std::string& per, std::size_t& slowest);

// --- Inputs and outputs (options.cpp) ---------------------------------------
/// The reader's diagnostics as warnings (`all`) and, for a damaged dump, a
/// line saying what was lost. The exit code.
int report(const et::dump_reader& r, const std::string& file, bool all, const std::string& outcome);
/// The end of a --split-mb conversion: report() with the files' list
/// ("N <kind> file(s) written: a, b"), then, on a terminal and when it went
/// well, "wrote FIRST .. LAST: N files, <totals>".
int report_split(const et::dump_reader& r, const std::string& dump, const std::vector<std::string>& paths,
                 const char* kind, const std::string& totals);
/// The worst exit code of the readers' damage reports.
int report_all(const std::vector<std::unique_ptr<et::dump_reader>>& readers, const std::string& outcome);
/// Opens the dumps; on failure prints the error and returns exit_input.
int open_dumps(const std::vector<std::string>& paths, std::vector<std::unique_ptr<et::dump_reader>>& readers);
/// Builds a summary over readers; exit_ok or an error code.
int build_summary(const std::vector<std::unique_ptr<et::dump_reader>>& readers, const et::summary_options& o,
                  et::summary_result& result);
/// Opens `paths` and builds one summary over them: open_dumps, then build_summary.
int summarise(const std::vector<std::string>& paths, const et::summary_options& o,
              std::vector<std::unique_ptr<et::dump_reader>>& readers, et::summary_result& result);
/// Writes `text` to `output` ("-" or empty: stdout). Exit code.
int write_text(const std::string& output, const std::string& text);
/// DUMP with .etr replaced by `ext` (or `ext` appended).
std::string with_extension(const std::string& dump, const char* ext);
std::string base_name(const std::string& path);
bool ends_with(const std::string& s, const char* suffix);
/// The base names of `items`, comma-separated.
std::string joined(const std::vector<std::string>& items);
/// Removes a half-written OUT, but only a regular file.
void remove_partial_output(const std::string& path);

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
  /// The callback for a conversion's progress option (empty off a terminal).
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

/// Writes OUT ('-': stdout) with `convert(FILE*, error) -> bool` from the
/// opened dump `r`. A failed conversion leaves no partial OUT behind.
/// `reading_line`: show progress_line while it runs (a conversion that
/// shows its own percent_line says false). exit_ok, or the error's exit
/// code (said on stderr).
template <class Convert>
int write_one_file(const std::string& output, const et::dump_reader& r, const std::string& dump, Convert&& convert,
                   bool reading_line = true) {
  const bool to_stdout = output == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(output.c_str(), "wb");
  if (!out) return output_error(output, "cannot write");
  std::string error;
  bool ok;
  if (reading_line) {
    progress_line progress("converting", r);
    ok = convert(out, error);
  } else {
    ok = convert(out, error);
  }
  const bool closed = to_stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
  if (!ok || !closed) {
    if (!to_stdout) remove_partial_output(output);  // never leave half a file behind
    return input_error(ok || error.rfind("write", 0) == 0 ? output : dump, error.empty() ? "write error" : error);
  }
  return exit_ok;
}

/// write_one_file, then report(): the exit code is report()'s (3 for a
/// damaged dump).
template <class Convert>
int write_one_output(const et::dump_reader& r, const std::string& dump, const std::string& output,
                     const std::string& what, Convert&& convert, bool reading_line = true) {
  if (const int rc = write_one_file(output, r, dump, convert, reading_line); rc != exit_ok) return rc;
  return report(r, dump, true, what + (output == "-" ? " written to stdout" : " written to " + output));
}

}  // namespace edgetrace_cli
