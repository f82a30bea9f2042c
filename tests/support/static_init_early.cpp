// SPDX-License-Identifier: MIT
// The first TU of static_init_app (linked first, so its static initialisers
// run before those of static_init_app.cpp): a static object and a priority
// constructor that trace before the other TU's category has registered and,
// for the priority constructor, before any edgetrace initialiser has run.
#include <edgetrace/edgetrace.hpp>

void traced_in_main_tu(int count, bool from_priority_constructor);
void instant_in_main_tu();

EDGETRACE_CATEGORY(early);

namespace {
// Runs before every default-priority initialiser of the program: nothing of
// edgetrace has started yet.
__attribute__((constructor(101))) void priority_constructor() { traced_in_main_tu(5, true); }

struct early_object {
  early_object() {
    for (int i = 0; i < 10; ++i) {
      EDGETRACE_SCOPE(early, "early_own_span");  // this TU's category: registered just before
    }
    traced_in_main_tu(20, false);  // the other TU's category: not registered yet
    instant_in_main_tu();
  }
} early_instance;
}  // namespace
