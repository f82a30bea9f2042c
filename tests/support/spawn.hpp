// SPDX-License-Identifier: MIT
// Test helper: starts a program whose stdout is a pipe the test reads while
// it runs (process.hpp's run() waits for the end), and waits for it with a
// time limit, so a deadlocked child fails the test instead of hanging it.
#pragma once

#include <support/process.hpp>

#include <chrono>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace edgetrace_test {

struct spawned {
  pid_t pid = -1;
  int out = -1;          ///< read end of the child's stdout
  std::string err_path;  ///< the child's stderr goes here
};

/// Starts `argv` like run() (environment minus EDGETRACE_*, plus `env`),
/// stdout to a pipe, stderr to a temp file.
inline spawned spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                     const std::string& tmpdir = scratch_dir()) {
  static int counter = 0;
  spawned s;
  s.err_path = tmpdir + "/spawn_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".err";
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return s;
  s.pid = launch(argv, env, fds[1], s.err_path);
  ::close(fds[1]);
  s.out = fds[0];
  return s;
}

/// Reads whatever the child wrote within `timeout_ms` (0: what is there now).
/// Returns false at end of file.
inline bool read_some(const spawned& s, std::string& into, int timeout_ms) {
  pollfd p{s.out, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return true;
  char buffer[65536];
  const ssize_t n = ::read(s.out, buffer, sizeof buffer);
  if (n <= 0) return false;
  into.append(buffer, static_cast<std::size_t>(n));
  return true;
}

/// Waits at most `timeout_s` for the child (draining its stdout into `out`);
/// on timeout kills it with SIGKILL and returns -2. Else as run(): the exit
/// status, or 128 + signal.
inline int wait_for(spawned& s, double timeout_s, std::string* out = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string ignored;
  bool open = s.out >= 0;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(s.pid, &status, WNOHANG);
    if (done == s.pid) {
      while (open && read_some(s, out ? *out : ignored, 0)) {
        pollfd p{s.out, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) break;
      }
      if (s.out >= 0) ::close(s.out);
      s.out = -1;
      return exit_code_of(status);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(s.pid, SIGKILL);
      ::waitpid(s.pid, &status, 0);
      if (s.out >= 0) ::close(s.out);
      s.out = -1;
      return -2;
    }
    if (open)
      open = read_some(s, out ? *out : ignored, 10);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

inline std::uint64_t monotonic_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace edgetrace_test
