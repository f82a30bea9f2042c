// SPDX-License-Identifier: MIT
// Counts every allocation of the program while `counting` is on: a replaced
// operator new, or under a sanitizer (whose runtime brings its own operator
// new; TSan's cannot be replaced) its allocation hook, which sees operator
// new and malloc alike. Include it in exactly one file of a program
// (trace_app.cpp; the telemetry room's sampler_test.cpp).
#pragma once

#include <support/allocation_count.hpp>
#include <support/sanitizers.hpp>

#include <cstddef>
#include <cstdlib>
#include <new>

#if EDGETRACE_TEST_SANITIZED
#include <sanitizer/allocator_interface.h>
namespace {
void count_allocation(const volatile void*, std::size_t) {
  if (edgetrace_test::counting.load(std::memory_order_relaxed)) edgetrace_test::allocations.fetch_add(1);
}
void ignore_free(const volatile void*) {}
[[maybe_unused]] const bool allocation_hook_installed =
    __sanitizer_install_malloc_and_free_hooks(&count_allocation, &ignore_free) != 0;
}  // namespace
#else
void* operator new(std::size_t size) {
  if (edgetrace_test::counting.load(std::memory_order_relaxed)) edgetrace_test::allocations.fetch_add(1);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// GCC flags free() of memory from a replaced operator new; here both are ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
