// SPDX-License-Identifier: MIT
// Test helper: runs a program with extra environment variables and captures
// its exit status, stdout and stderr (fork/exec, no shell).
#pragma once

#include <support/files.hpp>
#include <support/sanitizers.hpp>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/resource.h>
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
  long max_rss_kb = 0;  ///< the child's peak resident memory (getrusage's ru_maxrss)
};

/// Forks and execs `argv` (no shell) with the current environment minus
/// every EDGETRACE_* variable, plus `env` ("NAME=value" entries, replacing an
/// inherited NAME). The child's stdout is `out_fd`, its stderr the file
/// `err_path`; `before_exec`, when given, runs in the child just before
/// execve (its output redirected already), and a non-zero return is the
/// child's exit code instead (e.g. dropping to an unprivileged user).
/// Returns the child's pid, or -1.
inline pid_t launch(const std::vector<std::string>& argv, const std::vector<std::string>& env, int out_fd,
                    const std::string& err_path, int (*before_exec)() = nullptr) {
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
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out_fd, 1);
    ::dup2(err, 2);
    if (before_exec != nullptr)
      if (const int code = before_exec(); code != 0) ::_exit(code);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

/// Exit status as tests compare it: the exit code, or 128 + signal.
inline int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

/// Runs `argv` as launch() does and waits for it; output goes through temp files.
inline process_result run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                          const std::string& tmpdir = scratch_dir(), int (*before_exec)() = nullptr) {
  static int counter = 0;
  const std::string base = tmpdir + "/proc_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  process_result result;
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = launch(argv, env, out, err_path, before_exec);
  if (out >= 0) ::close(out);
  int status = 0;
  struct rusage usage {};
  if (pid > 0 && ::wait4(pid, &status, 0, &usage) == pid) {
    result.exit_code = exit_code_of(status);
    result.max_rss_kb = usage.ru_maxrss;
  }
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
