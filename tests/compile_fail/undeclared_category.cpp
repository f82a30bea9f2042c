// SPDX-License-Identifier: MIT
// Compile-fail probe: a scope naming a category that was never declared must not compile (built with and without -DDECLARE_IT).
#include <edgetrace/edgetrace.hpp>

#ifdef DECLARE_IT
EDGETRACE_CATEGORY(typo);  // the control build declares it, and must compile
#endif

int traced_function(int x) {
  EDGETRACE_SCOPE(typo, "x");  // without DECLARE_IT: 'edgetrace_category_typo' was not declared
  return x * 2;
}
