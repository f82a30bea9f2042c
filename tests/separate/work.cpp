// SPDX-License-Identifier: MIT
// The second TU of the separate-runtime test program (see main.cpp).
#include <edgetrace/edgetrace.hpp>

EDGETRACE_CATEGORY(separate);

void work(int i) {
  EDGETRACE_SCOPE(separate, "work");
  volatile int sink = i;
  (void)sink;
}
