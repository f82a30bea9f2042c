// SPDX-License-Identifier: MIT
// Compile-fail probe: a span name known only at run time must not compile, and the error must point to intern() + EDGETRACE_SCOPE_NAMED (the control, -DLITERAL_NAME, compiles).
#include <edgetrace/edgetrace.hpp>

#include <string>

EDGETRACE_CATEGORY(app);

int traced_function(const std::string& layer_name, int x) {
#ifdef LITERAL_NAME
  static_cast<void>(layer_name);
  EDGETRACE_SCOPE(app, "layer");
#else
  EDGETRACE_SCOPE(app, layer_name.c_str());  // error: names must be string literals
#endif
  return x * 2;
}
