// SPDX-License-Identifier: MIT
// Compiled-out scopes are empty objects and their macros evaluate nothing (built with EDGETRACE_EXCLUDED_CATEGORIES="cold_cat").
#include <edgetrace/edgetrace.hpp>

#include <doctest/doctest.h>

#include <type_traits>

EDGETRACE_CATEGORY(cold_cat);
EDGETRACE_CATEGORY(hot_cat);

#if EDGETRACE_ENABLED
static_assert(!edgetrace_category_cold_cat::compiled_in, "cold_cat is excluded at compile time");
static_assert(edgetrace_category_hot_cat::compiled_in, "hot_cat is compiled in");
static_assert(std::is_empty_v<::edgetrace::detail::scope_t<edgetrace_category_cold_cat>>,
              "a compiled-out scope must be an empty object");
static_assert(!std::is_empty_v<::edgetrace::detail::scope_t<edgetrace_category_hot_cat>>,
              "a compiled-in scope carries its state");
#endif

// Not in an anonymous namespace: with everything compiled out it is only
// named inside unevaluated operands, which clang reports for internal names.
int side_effects = 0;
int touch() { return ++side_effects; }

TEST_CASE("macros of a compiled-out category never evaluate their arguments") {
  side_effects = 0;
  {
    EDGETRACE_SCOPE(cold_cat, "x");
    EDGETRACE_INSTANT(cold_cat, "instant");
    EDGETRACE_COUNTER(cold_cat, "value", touch());
  }
  CHECK(side_effects == 0);
}
