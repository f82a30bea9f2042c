// SPDX-License-Identifier: MIT
// Codegen probe: edgetrace_probe() is compiled with and without macros; compiled-out macros must leave identical machine code.
//
// EDGETRACE_PROBE_SCOPE / _INSTANT / _COUNTER (0 or 1) put that macro, of
// category cold_cat, in the function; check_codegen.cmake builds it with
// cold_cat excluded at compile time or with EDGETRACE_ENABLED=0, and without
// any macro, and compares the bytes of section .text.edgetrace_probe.
#include <edgetrace/edgetrace.hpp>

#include <type_traits>

#ifndef EDGETRACE_PROBE_SCOPE
#define EDGETRACE_PROBE_SCOPE 0
#endif
#ifndef EDGETRACE_PROBE_INSTANT
#define EDGETRACE_PROBE_INSTANT 0
#endif
#ifndef EDGETRACE_PROBE_COUNTER
#define EDGETRACE_PROBE_COUNTER 0
#endif
#define EDGETRACE_PROBE_MACROS (EDGETRACE_PROBE_SCOPE || EDGETRACE_PROBE_INSTANT || EDGETRACE_PROBE_COUNTER)

EDGETRACE_CATEGORY(cold_cat);

#if EDGETRACE_ENABLED
static_assert(!edgetrace_category_cold_cat::compiled_in || !EDGETRACE_PROBE_MACROS,
              "the probe with macros must be built with EDGETRACE_EXCLUDED_CATEGORIES=\"cold_cat\"");
static_assert(!edgetrace_category_cold_cat::compiled_in ||
                  !std::is_empty_v<::edgetrace::detail::scope_t<edgetrace_category_cold_cat>>,
              "a compiled-in scope has state");
static_assert(edgetrace_category_cold_cat::compiled_in ||
                  std::is_empty_v<::edgetrace::detail::scope_t<edgetrace_category_cold_cat>>,
              "a compiled-out scope must be an empty object");
#endif

extern "C" int edgetrace_probe(int x) {
  int acc = x;
#if EDGETRACE_PROBE_SCOPE
  EDGETRACE_SCOPE(cold_cat, "x");
#endif
  for (int i = 0; i < x; ++i) {
    acc = acc * 31 + (i ^ (acc >> 3));
#if EDGETRACE_PROBE_INSTANT
    EDGETRACE_INSTANT(cold_cat, "step");
#endif
#if EDGETRACE_PROBE_COUNTER
    EDGETRACE_COUNTER(cold_cat, "acc", acc);
#endif
  }
  return acc;
}
