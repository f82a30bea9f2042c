// SPDX-License-Identifier: MIT
// A shared library that traces too: with -fvisibility=hidden it carries its
// own copy of the runtime, which must share the dump with the program's.
#include <edgetrace/edgetrace.hpp>

EDGETRACE_CATEGORY(lean_dso);

extern "C" __attribute__((visibility("default"))) int lean_dso_work(int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    EDGETRACE_SCOPE(lean_dso, "dso_span");
    sum += i;
  }
  return sum;
}
