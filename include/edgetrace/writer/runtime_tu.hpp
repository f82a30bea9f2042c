// SPDX-License-Identifier: MIT
// Guard of the runtime's rooms: with a separate runtime they compile in exactly one TU.
//
// That TU includes <edgetrace/runtime_impl.hpp>; anywhere else the runtime's
// entry points would be defined twice. Add-ons reach the runtime through
// declarations in the light headers (EDGETRACE_DETAIL_API), never by
// including a room.
#pragma once

#include <edgetrace/config.hpp>

#if EDGETRACE_SEPARATE_RUNTIME && !defined(EDGETRACE_DETAIL_RUNTIME_TU)
#error "with EDGETRACE_SEPARATE_RUNTIME=1 only <edgetrace/runtime_impl.hpp> may include <edgetrace/writer/runtime.hpp>"
#endif

#include <atomic>

// detail::atomic_cell (the light headers' atomics) takes std::memory_order
// values as the __atomic builtins' orders.
static_assert(static_cast<int>(std::memory_order_relaxed) == __ATOMIC_RELAXED &&
                  static_cast<int>(std::memory_order_acquire) == __ATOMIC_ACQUIRE &&
                  static_cast<int>(std::memory_order_release) == __ATOMIC_RELEASE &&
                  static_cast<int>(std::memory_order_acq_rel) == __ATOMIC_ACQ_REL &&
                  static_cast<int>(std::memory_order_seq_cst) == __ATOMIC_SEQ_CST,
              "std::memory_order values must be the __atomic builtins' orders");
