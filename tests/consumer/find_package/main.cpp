// SPDX-License-Identifier: MIT
// Consumer program for the packaging tests: links edgetrace::edgetrace, records a few events, exits 0.
#include <edgetrace/edgetrace.hpp>

#include <cstdio>

EDGETRACE_CATEGORY(consumer);

int main() {
  EDGETRACE_THREAD_NAME("consumer");
  int sum = 0;
  for (int i = 0; i < 1000; ++i) {
    EDGETRACE_SCOPE(consumer, "step");
    sum += i;
  }
  EDGETRACE_COUNTER(consumer, "sum", sum);
  edgetrace::flush();
  std::printf("consumer ok %d\n", sum);
  return sum == 499500 ? 0 : 1;
}
