// SPDX-License-Identifier: MIT
// Test helper: runs a program with extra environment variables and captures
// its exit status, stdout and stderr (fork/exec, no shell).
#pragma once

#include <support/sanitizers.hpp>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

extern char** environ;

namespace edgetrace_test {

struct process_result {
  int exit_code = -1;   ///< exit status, or 128 + signal
  std::string out;
  std::string err;
};

inline std::string read_file(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buffer[65536];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
    std::fclose(f);
  }
  return text;
}

inline bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

/// Runs `argv` with the current environment minus every EDGETRACE_* variable,
/// plus `env` ("NAME=value" entries, replacing an inherited NAME). Output
/// goes through temp files.
inline process_result run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                          const std::string& tmpdir = EDGETRACE_TEST_TMPDIR) {
  static int counter = 0;
  const std::string base = tmpdir + "/proc_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  std::vector<std::string> environment;
  auto overridden = [&](const std::string& entry) {
    for (const auto& e : env)
      if (entry.compare(0, e.find('=') + 1, e, 0, e.find('=') + 1) == 0) return true;
    return false;
  };
  for (char** e = ::environ; *e != nullptr; ++e)
    if (std::string(*e).rfind("EDGETRACE_", 0) != 0 && !overridden(*e)) environment.emplace_back(*e);
  for (const auto& e : env) environment.push_back(e);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  process_result result;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  return result;
}

/// Number of lines in `text` (a last line without '\n' counts).
inline int line_count(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines;
}

}  // namespace edgetrace_test
