// SPDX-License-Identifier: MIT
// Test helper: this process's cgroup paths, a memory cgroup below its own
// that a test may limit (root and the v1 memory controller), and small
// files written for a replayed /sys (EDGETRACE_SYSFS_ROOT).
#pragma once

#include <doctest/doctest.h>

#include <support/files.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace edgetrace_test {

/// The cgroup paths of this process: v2 ("0::PATH") and the v1 memory
/// controller's (empty when there is none). A child inherits them.
struct cgroup_paths {
  std::string v2, v1_memory;
  bool has_v1_memory = false;
};

inline cgroup_paths own_cgroups() {
  cgroup_paths paths;
  const std::string text = read_file("/proc/self/cgroup");
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    if (controllers.empty()) paths.v2 = path == "/" ? "" : path;
    if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      paths.v1_memory = path == "/" ? "" : path;
      paths.has_v1_memory = true;
    }
  }
  return paths;
}

inline void write_text(const std::string& path, const std::string& text) {
  REQUIRE(std::system(("mkdir -p '" + path.substr(0, path.rfind('/')) + "'").c_str()) == 0);
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

/// Whether this process may make a memory cgroup below its own (v1), and
/// where: root, and a kernel with the v1 memory controller mounted.
inline std::string writable_memory_cgroup() {
  const cgroup_paths paths = own_cgroups();
  if (!paths.has_v1_memory) return "";
  const std::string probe =
      "/sys/fs/cgroup/memory" + paths.v1_memory + "/edgetrace-probe-" + std::to_string(::getpid());
  if (::mkdir(probe.c_str(), 0755) != 0) return "";
  const bool usable = ::access((probe + "/memory.limit_in_bytes").c_str(), W_OK) == 0 &&
                      ::access((probe + "/cgroup.procs").c_str(), W_OK) == 0;
  ::rmdir(probe.c_str());
  return usable ? "/sys/fs/cgroup/memory" + paths.v1_memory : "";
}

}  // namespace edgetrace_test
