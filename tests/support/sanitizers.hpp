// SPDX-License-Identifier: MIT
// Test helper: tells whether the build runs under ASan or TSan.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EDGETRACE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EDGETRACE_TEST_SANITIZED 1
#endif
#endif
#ifndef EDGETRACE_TEST_SANITIZED
#define EDGETRACE_TEST_SANITIZED 0
#endif

// AddressSanitizer (and with it LeakSanitizer) in particular.
#if defined(__SANITIZE_ADDRESS__)
#define EDGETRACE_TEST_ADDRESS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EDGETRACE_TEST_ADDRESS_SANITIZED 1
#endif
#endif
#ifndef EDGETRACE_TEST_ADDRESS_SANITIZED
#define EDGETRACE_TEST_ADDRESS_SANITIZED 0
#endif

namespace edgetrace_test {

/// ASan's and TSan's allocators (GCC 12, clang 14) are not fork-safe: a
/// child of a multi-threaded parent that allocates can deadlock on a lock a
/// parent thread held at fork time. Tests whose child must allocate (start
/// a thread, start its own dump) skip that part in sanitizer builds.
inline constexpr bool sanitized_build = EDGETRACE_TEST_SANITIZED != 0;

}  // namespace edgetrace_test
