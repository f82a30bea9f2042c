// SPDX-License-Identifier: MIT
// Compile-fail probe: including edgetrace in a C++14 build stops with one message that says C++17 is needed (the control compiles it as C++17).
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/reader.hpp>

EDGETRACE_CATEGORY(app);

int traced_function(int x) {
  EDGETRACE_SCOPE(app, "x");
  return x * 2;
}
