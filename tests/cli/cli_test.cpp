// SPDX-License-Identifier: MIT
// Tests of the `edgetrace` command line (tools/edgetrace/): exit codes, messages, outputs, on crafted dumps.
#include <doctest/doctest.h>

#include <edgetrace/config.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <support/dump_builder.hpp>
#include <support/files.hpp>
#include <support/json_lite.hpp>

extern char** environ;

namespace cli_test {

using namespace edgetrace_test;

namespace {

struct run_result {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs the built CLI with `args`, capturing stdout and stderr in files.
run_result run_cli(const std::vector<std::string>& args) {
  const std::string out_path = temp_path("cli_stdout.txt");
  const std::string err_path = temp_path("cli_stderr.txt");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> storage{EDGETRACE_TEST_CLI};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(&s[0]);
  argv.push_back(nullptr);
  pid_t pid = 0;
  run_result r;
  const int rc = posix_spawn(&pid, EDGETRACE_TEST_CLI, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  r.code = WEXITSTATUS(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

std::string write_dump(const std::string& name, const bytes& b) {
  const std::string path = temp_path(name);
  REQUIRE(write_file(path, b));
  return path;
}

using edgetrace_test::contains;

bool valid_json(const std::string& text) {
  json_lite::value v;
  std::string error;
  const bool ok = json_lite::parse(text, v, error);
  if (!ok) MESSAGE("JSON error: " << error);
  return ok && v["traceEvents"].is_array();
}

}  // namespace

TEST_CASE("usage errors exit 1 with a usage line") {
  struct usage_case {
    const char* what;
    std::vector<std::string> args;
    std::vector<const char*> said, not_said;
  };
  const usage_case cases[] = {
      {"no command", {}, {"usage: edgetrace"}, {}},
      {"near-miss command", {"jsno", "x.etr"}, {"edgetrace: error: unknown command 'jsno'; did you mean 'json'?"}, {}},
      {"unrelated command", {"frobnicate"}, {"unknown command 'frobnicate'"}, {"did you mean"}},
      {"missing DUMP", {"json"}, {"'json' needs a DUMP file", "usage: edgetrace json DUMP [-o OUT]"}, {}},
      {"unknown option", {"json", "x.etr", "--ouput", "y.json"},
       {"unknown option '--ouput' for 'json'; did you mean '--output'?"}, {}},
      {"-o without a value", {"json", "x.etr", "-o"}, {"needs a file name"}, {}},
      {"two dumps to info", {"info", "a.etr", "b.etr"}, {}, {}},
      {"unknown help topic", {"help", "inof"}, {"did you mean 'info'?"}, {}},
      {"--slowest without --per", {"summary", "x.etr", "--slowest", "5"}, {"--slowest N goes with --per NAME"}, {}},
      {"--slowest 0", {"summary", "x.etr", "--per", "step", "--slowest", "0"}, {"--slowest needs a whole number >= 1, not '0'"}, {}},
      {"--slowest with --format csv", {"summary", "x.etr", "--per", "step", "--slowest", "3", "--format", "csv"},
       {"--slowest applies to the table and json formats"}, {}},
      {"--slowest to diff", {"diff", "a.etr", "b.etr", "--slowest", "3"}, {"--slowest applies to summary and report, not diff"}, {}},
  };
  for (const usage_case& c : cases) {
    CAPTURE(c.what);
    const run_result r = run_cli(c.args);
    CAPTURE(r.err);
    CHECK(r.code == 1);
    for (const char* text : c.said) CHECK_MESSAGE(contains(r.err, text), text);
    for (const char* text : c.not_said) CHECK_MESSAGE(!contains(r.err, text), text);
  }
}

TEST_CASE("help and version exit 0") {
  const run_result help = run_cli({"--help"});
  CHECK(help.code == 0);
  CHECK(contains(help.out, "json DUMP [-o OUT]"));
  CHECK(contains(help.out, "info DUMP"));
  CHECK(contains(help.out, "exit codes:"));
  CHECK(contains(help.out, "3  converted, but the dump was damaged or incomplete"));
  const run_result topic = run_cli({"help", "json"});
  CHECK(topic.code == 0);
  CHECK(contains(topic.out, "usage: edgetrace json DUMP [-o OUT]"));
  CHECK(contains(topic.out, "--output"));
  const run_result sub = run_cli({"info", "--help"});
  CHECK(sub.code == 0);
  CHECK(contains(sub.out, "usage: edgetrace info DUMP"));
  const run_result version = run_cli({"--version"});
  CHECK(version.code == 0);
  CHECK(contains(version.out, std::string("edgetrace ") + EDGETRACE_VERSION_STRING + " (dump format " + (std::to_string(edgetrace::format::version_major) + "." + std::to_string(edgetrace::format::version_minor)) + ")"));
}

TEST_CASE("unreadable inputs exit 2 with 'edgetrace: error: FILE: what'") {
  SUBCASE("missing") {
    const std::string path = temp_path("cli_missing.etr");
    const run_result r = run_cli({"json", path});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "edgetrace: error: " + path + ": No such file or directory"));
  }
  SUBCASE("empty") {
    const std::string path = write_dump("cli_empty.etr", {});
    const run_result r = run_cli({"info", path});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "edgetrace: error: " + path + ": empty file (0 bytes)"));
  }
  SUBCASE("not a dump") {
    const std::string text = "hello, world\n";
    const std::string path = write_dump("cli_text.etr", bytes(text.begin(), text.end()));
    const run_result r = run_cli({"json", path});
    CHECK(r.code == 2);
    CHECK(contains(r.err, path + ": not an edgetrace dump"));
    CHECK(read_file(temp_path("cli_text.json")).empty());  // nothing written for unreadable input
  }
  SUBCASE("a directory") {
    const run_result r = run_cli({"json", temp_path("")});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "is a directory"));
  }
  SUBCASE("newer major version") {
    dump_builder d = sample_dump();
    d.header(3, 0);
    const std::string path = write_dump("cli_v3.etr", d.build());
    const run_result r = run_cli({"json", path});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "dump format version 3.0 is newer than this reader (1.x); update edgetrace"));
  }
  SUBCASE("output not writable") {
    const std::string path = write_dump("cli_good_unwritable.etr", sample_dump().build());
    const run_result r = run_cli({"json", path, "-o", temp_path("no/such/dir/out.json")});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "edgetrace: error: " + temp_path("no/such/dir/out.json") + ": cannot write"));
  }
  SUBCASE("a failed write removes only a regular file, never a device or a link to one") {
    // The output is a symlink to /dev/full: every write fails. Removing the
    // half-written output must not remove the link (nor, run as root with
    // -o /dev/full itself, the device node).
    const std::string path = write_dump("cli_good_full.etr", sample_dump().build());
    const std::string link = temp_path("cli_full_link.json");
    std::remove(link.c_str());
    REQUIRE(::symlink("/dev/full", link.c_str()) == 0);
    for (const char* command : {"json", "csv", "perfetto"}) {
      CAPTURE(command);
      const run_result r = run_cli({command, path, "-o", link});
      CHECK(r.code == 2);
      CHECK(contains(r.err, "write error"));
      struct stat st;
      CHECK(::lstat(link.c_str(), &st) == 0);
    }
    std::remove(link.c_str());
  }
}

TEST_CASE("a clean dump converts with exit 0, to the default path or stdout") {
  const std::string path = write_dump("cli_good.etr", sample_dump().build());
  const std::string json_path = temp_path("cli_good.json");
  std::remove(json_path.c_str());
  const run_result r = run_cli({"json", path});
  CHECK(r.code == 0);
  // The sample's worker thread dropped 5 records: one note, nothing else.
  CHECK(r.err == "edgetrace: note: " + path +
": 5 records were dropped by the tracer (ring buffer full) on worker (tid 1235) 5; under EDGETRACE_ON_FULL=drop, "
                     "EDGETRACE_ON_FULL=wait (the default) or a larger EDGETRACE_BUFFER_KB keeps them; under wait the run's "
                     "stderr line names the cause\n");
  CHECK(r.out.empty());
  const std::string json = read_file(json_path);
  CHECK(valid_json(json));
  CHECK(contains(json, "\"name\":\"conv1\""));

  const run_result piped = run_cli({"json", path, "-o", "-"});
  CHECK(piped.code == 0);
  CHECK(piped.out == json);

  const std::string explicit_path = temp_path("cli_explicit.json");
  const run_result named = run_cli({"json", "--output=" + explicit_path, path});
  CHECK(named.code == 0);
  CHECK(read_file(explicit_path) == json);
}

TEST_CASE("damaged dumps convert with exit 3 and warnings") {
  dump_builder d = sample_dump();
  SUBCASE("truncated") {
    bytes b = d.build();
    truncate(b, b.size() - 5);
    const std::string path = write_dump("cli_truncated.etr", b);
    const run_result r = run_cli({"json", path, "-o", temp_path("cli_truncated.json")});
    CHECK(r.code == 3);
    CHECK(contains(r.err, "edgetrace: warning: " + path + ": truncated: the last chunk"));
    CHECK(contains(r.err, "incomplete: writer pid 1234 has no end record"));
    CHECK(contains(r.err, "damaged or incomplete dump: 11 bytes of a truncated chunk lost"));
    CHECK(contains(r.err, "JSON written to " + temp_path("cli_truncated.json")));
    CHECK(valid_json(read_file(temp_path("cli_truncated.json"))));
  }
  SUBCASE("bit-flipped") {
    bytes b = d.build();
    flip_bit(b, d.offset_of(5) + 20, 2);
    const std::string path = write_dump("cli_flipped.etr", b);
    const run_result r = run_cli({"json", path});
    CHECK(r.code == 3);
    CHECK(contains(r.err, "corrupt data: skipped " + std::to_string(d.size_of(5)) + " bytes at offset " +
                              std::to_string(d.offset_of(5))));
    CHECK(contains(r.err, std::to_string(d.size_of(5)) + " corrupt bytes skipped"));
    const std::string json = read_file(temp_path("cli_flipped.json"));
    CHECK(valid_json(json));
    CHECK(contains(json, "\"name\":\"edgetrace: 5 records lost\""));  // the other thread survived
  }
}

TEST_CASE("info describes the dump") {
  const std::string path = write_dump("cli_info.etr", sample_dump().build());
  const run_result r = run_cli({"info", path});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  for (const std::string& line : std::vector<std::string>{
           "file           " + path + "\n",
           "format " + (std::to_string(edgetrace::format::version_major) + "." + std::to_string(edgetrace::format::version_minor)),
           "status         complete\n",
           "writer 0xa1b2c3d4\n",
           "  process        app (pid 1234)\n",
           "  clock          CLOCK_MONOTONIC, 1000.000 MHz fitted from 2 calibration pairs\n",
           "  ring capacity  4096 records per thread\n",
           "  flush period   10000 us\n",
           "  duration       1.200 us\n",
           "  tid   name    spans  instants  counters  dropped  written  check\n",
           "  1234  main        2         1         1        0        4  ok\n",
           "  1235  worker      2         0         0        5        2  ok\n",
           "totals         4 spans, 1 instants, 1 counters, 5 dropped in 2 threads\n",
           "diagnostics (0)\n  none\n",
       })
    CHECK_MESSAGE(contains(r.out, line), line);

  bytes b = sample_dump().build();
  dump_builder d = sample_dump();
  flip_bit(b, d.offset_of(5) + 14, 0);
  const std::string damaged = write_dump("cli_info_damaged.etr", b);
  const run_result bad = run_cli({"info", damaged});
  CHECK(bad.code == 3);
  CHECK(contains(bad.out, "missing 4"));
  CHECK(contains(bad.out, "  warning: corrupt data: skipped"));
  CHECK(contains(bad.out, "status         damaged, 1 problem(s)"));
  CHECK(contains(bad.err, "damaged or incomplete dump"));
}

}  // namespace cli_test
