// SPDX-License-Identifier: MIT
// Test helper: whole-file reads, existence checks and `contains` (the one definition
// process.hpp, dump_builder.hpp and the analysis tests share).
#pragma once

#include <cstdio>
#include <string>
#include <unistd.h>

namespace edgetrace_test {

/// Reads a whole (small, test) file; empty when missing.
inline std::string read_file(const std::string& path) {
  std::string text;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buffer[65536];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
    std::fclose(f);
  }
  return text;
}

/// Whether `text` holds `what` (stdout, stderr or a file's text).
inline bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

inline bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

/// `path` with nothing there: a test about to create that file removes any
/// stale one first, so a previous run can never make a check pass.
inline std::string fresh_file(const std::string& path) {
  ::unlink(path.c_str());
  return path;
}

}  // namespace edgetrace_test
