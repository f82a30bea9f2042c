// SPDX-License-Identifier: MIT
// A TU compiled with EDGETRACE_SEPARATE_RUNTIME=1: it only declares the
// runtime's entry points and needs edgetrace::runtime (or one TU that
// includes <edgetrace/runtime_impl.hpp>) to define them.
#include <edgetrace/edgetrace.hpp>

EDGETRACE_CATEGORY(abi_separate);

void header_only_work();

int main() {
#ifndef ABI_NO_HEADER_ONLY_TU
  header_only_work();
#endif
  EDGETRACE_SCOPE(abi_separate, "separate_span");
  EDGETRACE_COUNTER(abi_separate, "value", 2);
  return 0;
}
