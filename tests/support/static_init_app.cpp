// SPDX-License-Identifier: MIT
// A traced program whose other TU (static_init_early.cpp, initialised first)
// records into this TU's category during static initialisation, before this
// TU's initialisers (its category registration, edgetrace's start-up) ran.
// tests/writer/process_life_test.cpp checks that every such record is in the dump.
#include <edgetrace/edgetrace.hpp>

EDGETRACE_CATEGORY(later);

void traced_in_main_tu(int count, bool from_priority_constructor) {
  for (int i = 0; i < count; ++i) {
    if (from_priority_constructor) {
      EDGETRACE_SCOPE(later, "priority_constructor_span");
    } else {
      EDGETRACE_SCOPE(later, "other_tu_span");
    }
  }
}

void instant_in_main_tu() { EDGETRACE_INSTANT(later, "static_init_instant"); }

int main() {
  { EDGETRACE_SCOPE(later, "main_span"); }
  return 0;
}
