// SPDX-License-Identifier: MIT
// Part of <edgetrace/edgetrace.hpp> (include that): instants, marks,
// counters and annotations as one push of (site, tick, value), and how
// EDGETRACE_ARG stores a value of each type. Light: no standard header
// but <cstdint>.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/config.hpp>
#include <edgetrace/core/kinds.hpp>
#include <edgetrace/face/hooks.hpp>
#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/face/tick.hpp>

#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// An instant, mark or counter sample in any mode but the plain counter.
template <class = void>
EDGETRACE_DETAIL_NOINLINE void event_slow(std::uint64_t word, std::uint64_t value, std::uint8_t mode) noexcept {
  if (EDGETRACE_DETAIL_UNLIKELY((mode & mode_unregistered) != 0)) mode = register_on_first_use(word);
  if ((mode & mode_count_marks) != 0) {
    // Waiting for EDGETRACE_START_AFTER=N marks: count this one if it is a
    // mark; the mark that starts recording is itself recorded.
    const bool is_mark = tag_of(word) == tag_site && site_of(word)->kind == format::site_kind::mark;
    mode = static_cast<std::uint8_t>((mode & mode_hooks) | (is_mark ? start_mark_seen() : 0));
  }
  if ((mode & mode_hooks) != 0 && tag_of(word) == tag_site) {
    // Instants and marks only: counters and annotations have no hook.
    const format::site_kind kind = site_of(word)->kind;
    if (kind == format::site_kind::instant || kind == format::site_kind::mark) {
      if (const scope_hooks* hooks = installed_hooks.load(order_acquire)) hooks->instant(word);
    }
  }
  const std::uint8_t clock = mode & mode_clock_bits;
  if (clock != clock_off) push(word, ticks(clock), value);
}

/// The record word of site `site_fn()`.
template <class SiteFn>
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t site_word(SiteFn site_fn) noexcept {
  return pack_site(&site_fn());
}

/// Records an instant, mark or counter sample of site `site_fn()`.
template <class SiteFn>
EDGETRACE_DETAIL_ALWAYS_INLINE void event(SiteFn site_fn, std::uint64_t value, std::uint8_t mode) noexcept {
  const std::uint64_t word = site_word(site_fn);
  if (EDGETRACE_DETAIL_LIKELY(mode == clock_counter)) {
    push(word, ticks(), value);
  } else {
    event_slow(word, value, mode);
  }
}

template <class Category, class SiteFn>
EDGETRACE_DETAIL_ALWAYS_INLINE void instant(SiteFn site_fn) noexcept {
  if constexpr (Category::compiled_in) {
    const std::uint8_t mode = Category::state.enabled.load(order_relaxed);
    if (mode != clock_off) event(site_fn, 0, mode);
  }
}

/// The bit pattern a counter sample is stored with.
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t counter_bits(double value) noexcept {
  std::uint64_t bits;
  __builtin_memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// How EDGETRACE_ARG stores a value of type `T`, chosen at compile time:
/// its site kind and the 64-bit value its record carries. Anything else
/// than a bool or a floating-point type is an integer, converted with
/// static_cast<std::int64_t> (integers, enums, as before format 1.5).
template <class T>
struct arg_value {
  static constexpr format::site_kind kind = format::site_kind::arg;
  static EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t bits(const T& v) noexcept {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
  }
};
template <>
struct arg_value<bool> {
  static constexpr format::site_kind kind = format::site_kind::arg_bool;
  static EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t bits(bool v) noexcept { return v ? 1 : 0; }
};
/// Floating-point values are kept as a double (long double is rounded).
template <class T>
struct arg_float_value {
  static constexpr format::site_kind kind = format::site_kind::arg_float;
  static EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t bits(T v) noexcept { return counter_bits(static_cast<double>(v)); }
};
template <>
struct arg_value<float> : arg_float_value<float> {};
template <>
struct arg_value<double> : arg_float_value<double> {};
template <>
struct arg_value<long double> : arg_float_value<long double> {};
/// A volatile variable: its type's encoding, read once.
template <class T>
struct arg_value<volatile T> {
  static constexpr format::site_kind kind = arg_value<T>::kind;
  static EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t bits(T v) noexcept { return arg_value<T>::bits(v); }
};

/// A site kind as a type, for the site lambda of EDGETRACE_ARG.
template <format::site_kind Kind>
struct kind_constant {
  static constexpr format::site_kind value = Kind;
};

/// Records argument `value` at the site `site_fn(kind_constant<K>{})`,
/// where K is the value type's kind. After inlining it is event() with a
/// constant site: an integer argument costs exactly what it did before
/// typed arguments, a double adds a register move.
template <class SiteFn, class T>
EDGETRACE_DETAIL_ALWAYS_INLINE void arg_event(SiteFn site_fn, const T& value, std::uint8_t mode) noexcept {
  using traits = arg_value<T>;
  event([site_fn]() noexcept -> const site& { return site_fn(kind_constant<traits::kind>{}); }, traits::bits(value),
        mode);
}

/// EDGETRACE_RECORD_ARG: argument `value` of the span measured from
/// `start_ns` for `duration_ns`, at the site of its value type's kind. An
/// out-of-line call (record_measured_arg), like EDGETRACE_RECORD.
template <class SiteFn, class T>
EDGETRACE_DETAIL_ALWAYS_INLINE void measured_arg_event(SiteFn site_fn, const T& value, std::uint64_t start_ns,
                                                       std::uint64_t duration_ns, std::uint8_t mode) noexcept {
  using traits = arg_value<T>;
  record_measured_arg(pack_site(&site_fn(kind_constant<traits::kind>{})), traits::bits(value), start_ns, duration_ns,
                      mode);
}

/// An address as EDGETRACE_ALLOC / EDGETRACE_FREE record it: a pointer, or
/// an integer handle (a CUdeviceptr, an offset into an arena).
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t address(const volatile void* pointer) noexcept {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(pointer));
}
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t address(unsigned long long handle) noexcept { return handle; }
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t address(unsigned long handle) noexcept { return handle; }
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t address(decltype(nullptr)) noexcept { return 0; }

/// The category's clock mode, 0 when not recording.
template <class Category>
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint8_t recording() noexcept {
  return Category::state.enabled.load(order_relaxed);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
