// SPDX-License-Identifier: MIT
// Test helper: the scratch folder, whole-file reads, existence checks and
// `contains` (the one definition process.hpp, dump_builder.hpp and the
// analysis tests share).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace edgetrace_test {

/// This run's scratch folder: ETTEST_TMPDIR, which tests/CMakeLists.txt
/// gives every ctest entry (a folder of its own), else the build's
/// tests/tmp. Created when missing. Tests write fixed names in it, and ctest
/// runs entries side by side: in one shared folder, a decode entry's
/// hand-made "truncated.etr" once replaced a writer entry's dump between
/// its run and its reading (docs/TESTING.md, "CI time").
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* given = std::getenv("ETTEST_TMPDIR");
#ifdef EDGETRACE_TEST_TMPDIR
    std::string path = given != nullptr && *given != '\0' ? given : EDGETRACE_TEST_TMPDIR;
#else
    std::string path = given != nullptr && *given != '\0' ? given : "/tmp";
#endif
    ::mkdir(path.c_str(), 0755);  // EEXIST, the usual case, is fine
    return path;
  }();
  return dir;
}

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
