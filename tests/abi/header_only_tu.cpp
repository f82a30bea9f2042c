// SPDX-License-Identifier: MIT
// A TU compiled header-only (EDGETRACE_SEPARATE_RUNTIME=0): at -O0 it emits
// its inline copies of the runtime's entry points (push_slow, register_category...).
#include <edgetrace/edgetrace.hpp>

EDGETRACE_CATEGORY(abi_header_only);

void header_only_work() {
  EDGETRACE_SCOPE(abi_header_only, "header_only_span");
  EDGETRACE_COUNTER(abi_header_only, "value", 1);
}
