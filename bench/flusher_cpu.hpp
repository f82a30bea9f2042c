// SPDX-License-Identifier: MIT
// The flusher thread's CPU time as a traced program sees it, for the
// programs that report what the flusher cost: bench/overload_bench.cpp and
// tools/gpu_check (its load check).
#pragma once

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace edgetrace_bench {

/// CPU time the flusher thread (named "edgetrace") has run so far, in ns,
/// from /proc/self/task/*/schedstat; 0 when there is none.
inline double flusher_cpu_ns() {
  double total = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return 0;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + entry->d_name;
    char comm[32] = {};
    if (FILE* f = std::fopen((dir + "/comm").c_str(), "r")) {
      if (std::fgets(comm, sizeof comm, f) == nullptr) comm[0] = '\0';
      std::fclose(f);
    }
    if (std::strcmp(comm, "edgetrace\n") != 0) continue;  // not this program's own "edgetrace_overl"
    if (FILE* f = std::fopen((dir + "/schedstat").c_str(), "r")) {
      unsigned long long ns = 0;
      if (std::fscanf(f, "%llu", &ns) == 1) total += static_cast<double>(ns);
      std::fclose(f);
    }
  }
  closedir(tasks);
  return total;
}

}  // namespace edgetrace_bench
