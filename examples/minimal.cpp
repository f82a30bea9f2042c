// SPDX-License-Identifier: MIT
// Quick start: the smallest traced program (README.md shows this file verbatim).
#include <edgetrace/edgetrace.hpp>

#include <cstdio>

EDGETRACE_CATEGORY(app);  // declare each category once, at namespace scope

static long work(int n) {
  EDGETRACE_SCOPE(app, "work");  // a span from here to the closing brace
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += i % 7;
  return sum;
}

int main() {
  EDGETRACE_THREAD_NAME("main");
  long total = 0;
  for (int i = 0; i < 100; ++i) {
    total += work(10000);
    EDGETRACE_COUNTER(app, "total", total);
  }
  std::printf("total %ld\n", total);
}
// Run: EDGETRACE_OUTPUT=run.etr ./minimal && edgetrace json run.etr -o run.json
