// SPDX-License-Identifier: MIT
// "The CLI destroys its own input" no more: every `edgetrace`
// subcommand that writes refuses an output that is one of its input dumps,
// whatever the name it goes by (the same name, "./name", a symlink, a hard
// link, a default output path, standard output appending to the dump), and
// leaves the dump byte for byte as it was.
#include <doctest/doctest.h>

#include <support/dump_builder.hpp>
#include <support/files.hpp>
#include <support/process.hpp>
#include <support/test_env.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace cli_overwrite_test {

using edgetrace_test::cli;
using edgetrace_test::line_count;
using edgetrace_test::process_result;
using edgetrace_test::read_file;
using edgetrace_test::tmp;

namespace {

using edgetrace_test::contains;

/// Runs the tests in tmp/overwrite (relative names like "./ow.etr" are
/// what users type), and goes back on destruction.
struct in_scratch_dir {
  std::string previous;
  std::string dir = tmp + "/overwrite";
  in_scratch_dir() {
    char cwd[4096];
    REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
    previous = cwd;
    ::mkdir(dir.c_str(), 0755);
    REQUIRE(::chdir(dir.c_str()) == 0);
  }
  ~in_scratch_dir() { (void)::chdir(previous.c_str()); }
  in_scratch_dir(const in_scratch_dir&) = delete;
  in_scratch_dir& operator=(const in_scratch_dir&) = delete;
};

/// Writes the sample dump (5 dropped records on one thread) at `path`.
std::string write_sample(const std::string& path) {
  ::unlink(path.c_str());
  REQUIRE(edgetrace_test::write_file(path, edgetrace_test::sample_dump().build()));
  return read_file(path);
}

/// Makes `alias` name the file `target` when `kind` is a link; the other
/// kinds are spellings of the name itself.
void make_alias(const std::string& kind, const std::string& target, const std::string& alias) {
  if (kind != "symlink" && kind != "hard link") return;
  ::unlink(alias.c_str());
  if (kind == "symlink") REQUIRE(::symlink(target.c_str(), alias.c_str()) == 0);
  if (kind == "hard link") REQUIRE(::link(target.c_str(), alias.c_str()) == 0);
}

/// The refusal: a usage error, one line naming both files, the input intact.
void check_refused(const process_result& r, const std::string& input, const std::string& before) {
  CHECK(r.exit_code == 1);
  CHECK(line_count(r.err) == 1);
  CHECK(contains(r.err, "edgetrace: error: "));
  CHECK(contains(r.err, "is the input dump '" + input + "' (the same file)"));
  CHECK(contains(r.err, "would destroy the dump"));
  CHECK(r.out.empty());
  CHECK(read_file(input) == before);
}

struct writing_command {
  const char* name;
  /// The arguments for `input` and `output` (an extra, different dump is
  /// "other.etr" for merge and diff).
  std::vector<std::string> (*arguments)(const std::string& input, const std::string& output);
  const char* extension;  ///< of the good output
};

const writing_command writing_commands[] = {
    {"json", [](const std::string& in, const std::string& out) { return std::vector<std::string>{"json", in, "-o", out}; },
     ".json"},
    {"csv", [](const std::string& in, const std::string& out) { return std::vector<std::string>{"csv", in, "-o", out}; },
     ".csv"},
    {"summary",
     [](const std::string& in, const std::string& out) { return std::vector<std::string>{"summary", in, "-o", out}; },
     ".txt"},
    {"report",
     [](const std::string& in, const std::string& out) { return std::vector<std::string>{"report", in, "-o", out}; },
     ".html"},
    {"diff",
     [](const std::string& in, const std::string& out) {
       return std::vector<std::string>{"diff", "other.etr", in, "-o", out};
     },
     ".txt"},
    {"merge",
     [](const std::string& in, const std::string& out) {
       return std::vector<std::string>{"merge", "other.etr", in, "-o", out};
     },
     ".etr"},
};

}  // namespace

TEST_CASE("cli overwrite: -o onto the input by name, ./name, symlink or hard link is refused, input intact") {
  in_scratch_dir scratch;
  const std::string input = "ow.etr";
  const std::string before = write_sample(input);
  write_sample("other.etr");
  REQUIRE(!before.empty());
  struct alias {
    const char* kind;
    std::string output;
  };
  const alias aliases[] = {{"same name", "ow.etr"},
                           {"./name", "./ow.etr"},
                           {"absolute path", scratch.dir + "/ow.etr"},
                           {"symlink", "ow-symlink.etr"},
                           {"hard link", "ow-hardlink.etr"}};
  for (const writing_command& c : writing_commands) {
    const std::string command_name = c.name;
    CAPTURE(command_name);
    for (const alias& a : aliases) {
      const std::string kind = a.kind;
      CAPTURE(kind);
      make_alias(a.kind, input, a.output);
      const process_result r = edgetrace_test::run([&] {
        std::vector<std::string> argv{cli};
        for (const std::string& arg : c.arguments(input, a.output)) argv.push_back(arg);
        return argv;
      }());
      check_refused(r, input, before);
      CHECK(contains(r.err, "the output '" + a.output + "'"));
    }
    // The same command to another file works, and still leaves the input alone.
    const std::string good = std::string("ow-good-") + c.name + c.extension;
    ::unlink(good.c_str());
    std::vector<std::string> argv{cli};
    for (const std::string& arg : c.arguments(input, good)) argv.push_back(arg);
    const process_result ok = edgetrace_test::run(argv);
    CHECK(ok.exit_code == 0);
    CHECK(!contains(ok.err, "error"));
    CHECK(!read_file(good).empty());
    CHECK(read_file(input) == before);
    ::unlink(good.c_str());
  }
  // diff and merge guard their first input as well as their second.
  for (const std::string command : {"diff", "merge"}) {
    CAPTURE(command);
    make_alias("symlink", input, "ow-symlink.etr");
    const process_result r = edgetrace_test::run({cli, command, input, "other.etr", "-o", "ow-symlink.etr"});
    check_refused(r, input, before);
  }
  ::unlink("ow-symlink.etr");
  ::unlink("ow-hardlink.etr");
  ::unlink("other.etr");
  ::unlink(input.c_str());
}

TEST_CASE("cli overwrite: json --split-mb refuses when one of its part files is the input") {
  in_scratch_dir scratch;
  // Part N of "-o part.json" is "part-00N.json": a dump by that name (or
  // reached through a link by that name) must not be written over.
  const std::string input = "part-001.json";
  const std::string before = write_sample(input);
  struct alias {
    const char* kind;
    std::string part, output;
  };
  const alias aliases[] = {{"same name", "part-001.json", "part.json"},
                           {"./name", "./part-001.json", "./part.json"},
                           {"symlink", "link-001.json", "link.json"},
                           {"hard link", "hard-001.json", "hard.json"}};
  for (const alias& a : aliases) {
    const std::string kind = a.kind;
    CAPTURE(kind);
    make_alias(a.kind, input, a.part);
    const process_result r = edgetrace_test::run({cli, "json", input, "--split-mb", "1", "-o", a.output});
    check_refused(r, input, before);
    CHECK(contains(r.err, "the output '" + a.part + "'"));
    CHECK(!edgetrace_test::file_exists("part-002.json"));  // nothing written, not even other parts
  }
  const process_result ok = edgetrace_test::run({cli, "json", input, "--split-mb", "1", "-o", "good.json"});
  CHECK(ok.exit_code == 0);
  CHECK(!read_file("good-001.json").empty());
  CHECK(read_file(input) == before);
  for (const char* path : {"good-001.json", "link-001.json", "hard-001.json", "part-001.json"}) ::unlink(path);
}

TEST_CASE("cli overwrite: a default output path that links to the input is refused") {
  in_scratch_dir scratch;
  const std::string input = "dflt.etr";
  const std::string before = write_sample(input);
  for (const std::string command : {"json", "csv", "report"}) {
    CAPTURE(command);
    const std::string output = "dflt." + (command == "report" ? std::string("html") : command);
    make_alias("symlink", input, output);
    const process_result r = edgetrace_test::run({cli, command, input});
    check_refused(r, input, before);
    CHECK(contains(r.err, "the output '" + output + "'"));
    ::unlink(output.c_str());
  }
  ::unlink(input.c_str());
}

TEST_CASE("cli overwrite: standard output appending to the input dump is refused (summary, diff, info, json -o -)") {
  in_scratch_dir scratch;
  const std::string input = "stdout.etr";
  const std::string before = write_sample(input);
  const std::vector<std::vector<std::string>> commands = {{cli, "summary", input},
                                                          {cli, "diff", input, input},
                                                          {cli, "info", input},
                                                          {cli, "json", input, "-o", "-"},
                                                          {cli, "csv", input, "-o", "-"}};
  for (const auto& argv : commands) {
    CAPTURE(argv[1]);
    // `edgetrace summary stdout.etr >> stdout.etr`
    const int out = ::open(input.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    REQUIRE(out >= 0);
    const std::string err_path = "stdout.err";
    const pid_t pid = edgetrace_test::launch(argv, {}, out, err_path);
    ::close(out);
    int status = 0;
    REQUIRE(pid > 0);
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    process_result r;
    r.exit_code = edgetrace_test::exit_code_of(status);
    r.err = read_file(err_path);
    check_refused(r, input, before);
    CHECK(contains(r.err, "standard output is the input dump"));
    ::unlink(err_path.c_str());
  }
  // To a terminal, a pipe or another file, standard output is fine.
  const process_result ok = edgetrace_test::run({cli, "summary", input});
  CHECK(ok.exit_code == 0);
  CHECK(contains(ok.out, "conv1"));
  ::unlink(input.c_str());
}

}  // namespace cli_overwrite_test
