// SPDX-License-Identifier: MIT
// Test helper: tells whether the build runs under ASan or TSan, and what that changes for the tests.
#pragma once

#include <cstdlib>

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

#if defined(__SANITIZE_THREAD__)
#define EDGETRACE_TEST_THREAD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EDGETRACE_TEST_THREAD_SANITIZED 1
#endif
#endif
#ifndef EDGETRACE_TEST_THREAD_SANITIZED
#define EDGETRACE_TEST_THREAD_SANITIZED 0
#endif

#define EDGETRACE_TEST_SANITIZED (EDGETRACE_TEST_ADDRESS_SANITIZED || EDGETRACE_TEST_THREAD_SANITIZED)

namespace edgetrace_test {

inline constexpr bool address_sanitized_build = EDGETRACE_TEST_ADDRESS_SANITIZED != 0;
inline constexpr bool thread_sanitized_build = EDGETRACE_TEST_THREAD_SANITIZED != 0;

/// A forked child of a multi-threaded parent cannot allocate or start a
/// thread under the sanitizers of GCC 12 and clang 14: ASan does not lock
/// its allocator around fork(), so the child can deadlock on a lock a parent
/// thread held at fork time; TSan kills a child that starts a thread
/// (die_after_fork=1). Tests whose child must do so (EDGETRACE_FORK=follow
/// starts a dump and a flusher in the child) skip that part in sanitizer
/// builds.
inline constexpr bool sanitized_build = address_sanitized_build || thread_sanitized_build;

/// TSan runs one thread of its own, started with the process's first
/// pthread_create: thread counts of a process that started a thread (any
/// traced one: it has the flusher) include it under the tsan preset.
inline constexpr int sanitizer_threads = thread_sanitized_build ? 1 : 0;

/// Running under user-mode emulation (cmake/toolchains/qemu-aarch64-test.sh
/// exports QEMU_LD_PREFIX for the aarch64 suite): where the emulator, not
/// the program, decides something a test would check (library addresses).
inline bool emulated() { return std::getenv("QEMU_LD_PREFIX") != nullptr; }

}  // namespace edgetrace_test
