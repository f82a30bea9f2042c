// SPDX-License-Identifier: MIT
// Test helper: how many threads the calling process has now (from
// /proc/self/task). For the test programs as well as the doctest binaries.
#pragma once

#include <dirent.h>

namespace edgetrace_test {

inline int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

}  // namespace edgetrace_test
