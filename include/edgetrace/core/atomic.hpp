// SPDX-License-Identifier: MIT
// A minimal std::atomic look-alike for the structures the hot path touches
// (category flags, ring positions), built on the compiler's __atomic
// builtins so that <edgetrace/edgetrace.hpp> pulls in no <atomic>: that
// header alone costs a translation unit more than the whole light path
// (docs/PERFORMANCE.md, "Compile cost").
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Memory orders for the light headers, with the values the builtins take.
/// std::memory_order_* (same values in libstdc++ and libc++; runtime.hpp
/// checks) are accepted too, so runtime code reads like std::atomic code.
enum memory_order_value : int {
  order_relaxed = __ATOMIC_RELAXED,
  order_acquire = __ATOMIC_ACQUIRE,
  order_release = __ATOMIC_RELEASE,
  order_acq_rel = __ATOMIC_ACQ_REL,
  order_seq_cst = __ATOMIC_SEQ_CST,
};

/// An atomic T (T: an integer, bool or pointer) with the std::atomic
/// member functions edgetrace uses. Lock-free by construction: only types
/// the builtins handle natively are used with it. Constant-initialisable.
template <class T>
class atomic_cell {
 public:
  constexpr atomic_cell() noexcept = default;
  constexpr atomic_cell(T value) noexcept : value_(value) {}  // NOLINT: mirrors std::atomic
  atomic_cell(const atomic_cell&) = delete;
  atomic_cell& operator=(const atomic_cell&) = delete;

  template <class Order>
  T load(Order order) const noexcept {
    return __atomic_load_n(&value_, static_cast<int>(order));
  }
  T load() const noexcept { return __atomic_load_n(&value_, __ATOMIC_SEQ_CST); }
  template <class Order>
  void store(T value, Order order) noexcept {
    __atomic_store_n(&value_, value, static_cast<int>(order));
  }
  void store(T value) noexcept { __atomic_store_n(&value_, value, __ATOMIC_SEQ_CST); }
  template <class Order>
  T exchange(T value, Order order) noexcept {
    return __atomic_exchange_n(&value_, value, static_cast<int>(order));
  }
  template <class Order>
  T fetch_add(T value, Order order) noexcept {
    return __atomic_fetch_add(&value_, value, static_cast<int>(order));
  }

 private:
  T value_{};
};

/// A spin lock for rarely contended, very short critical sections (a
/// thread renaming itself while the flusher copies the 64-byte name).
/// Usable with std::lock_guard.
class spin_lock {
 public:
  void lock() noexcept {
    while (held_.exchange(true, order_acquire)) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
  }
  void unlock() noexcept { held_.store(false, order_release); }

 private:
  atomic_cell<bool> held_{false};
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
