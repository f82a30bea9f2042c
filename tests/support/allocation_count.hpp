// SPDX-License-Identifier: MIT
// The allocation counter's state (support/count_allocations.hpp counts).
#pragma once

#include <atomic>

namespace edgetrace_test {
/// Allocations made while `counting` is on.
inline std::atomic<long> allocations{0};
inline std::atomic<bool> counting{false};
}  // namespace edgetrace_test
