// SPDX-License-Identifier: MIT
// Part of <edgetrace/edgetrace.hpp> (include that): the span scope
// EDGETRACE_SCOPE compiles to, and the out-of-line begin and end a scope
// takes in any mode but "record with the CPU counter". Light: no standard
// header but <cstdint>.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/config.hpp>
#include <edgetrace/face/hooks.hpp>
#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/site.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/face/tick.hpp>

#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// A span's begin value when its mode is anything but "record with the CPU
/// counter" (CLOCK_MONOTONIC, scope hooks, hooks without recording): bit 63
/// set, the mode in bits 60-62, the begin tick in the low 60 bits (2^60 ns
/// is 36 years). So the scope object carries no mode of its own and
/// span_end() tells the common case from the rest by the sign bit.
inline constexpr std::uint64_t slow_begin_flag = std::uint64_t{1} << 63;
inline constexpr unsigned slow_begin_mode_shift = 60;
inline constexpr std::uint64_t slow_begin_tick_mask = (std::uint64_t{1} << slow_begin_mode_shift) - 1;

/// The begin of a span in any mode but the plain counter. Out of line and
/// shared by all sites.
template <class = void>
EDGETRACE_DETAIL_NOINLINE std::uint64_t span_begin_slow(std::uint64_t word, std::uint8_t mode) noexcept {
  if (EDGETRACE_DETAIL_UNLIKELY((mode & mode_unregistered) != 0)) mode = register_on_first_use(word);
  mode &= mode_hooks | mode_clock_bits;  // mode_count_marks: nothing to do for a span
  if ((mode & mode_hooks) != 0) {
    if (const scope_hooks* hooks = installed_hooks.load(order_acquire)) hooks->begin(word);
  }
  const std::uint8_t clock = mode & mode_clock_bits;
  const std::uint64_t tick = clock == clock_off ? 0 : ticks(clock);
  return slow_begin_flag | (std::uint64_t{mode} << slow_begin_mode_shift) | (tick & slow_begin_tick_mask);
}

/// The end of a span begun by span_begin_slow. Returns the end tick pushed
/// (0 when nothing is recorded).
template <class = void>
EDGETRACE_DETAIL_NOINLINE std::uint64_t span_end_slow(std::uint64_t word, std::uint64_t begin) noexcept {
  const auto mode = static_cast<std::uint8_t>((begin >> slow_begin_mode_shift) & 7);
  const std::uint8_t clock = mode & mode_clock_bits;
  const std::uint64_t end = clock == clock_off ? 0 : ticks(clock);
  if ((mode & mode_hooks) != 0) {
    if (const scope_hooks* hooks = installed_hooks.load(order_acquire)) hooks->end(word);
  }
  if (clock != clock_off) push(word, begin & slow_begin_tick_mask, end);
  return end;
}

/// The begin of a span in compact mode (EDGETRACE_COMPACT_SCOPES=1): out of
/// line, so a site's inline code is the flag test and two calls.
template <class = void>
EDGETRACE_DETAIL_NOINLINE std::uint64_t span_begin(std::uint64_t word, std::uint8_t mode) noexcept {
  if (EDGETRACE_DETAIL_LIKELY(mode == clock_counter)) return ticks();
  return span_begin_slow(word, mode);
}

/// The end of a span in compact mode: one call shared by all sites. Reads
/// the end tick and pushes.
template <class = void>
EDGETRACE_DETAIL_NOINLINE void span_end(std::uint64_t word, std::uint64_t begin) noexcept {
  if (EDGETRACE_DETAIL_LIKELY((begin & slow_begin_flag) == 0)) {
    push(word, begin, ticks());
    return;
  }
  span_end_slow(word, begin);
}

/// The record word of an interned-name span of category `Category`.
template <class Category>
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint64_t named_word(name_handle handle) noexcept {
  return pack_named(handle.id, Category::state.index);
}

/// A span from construction to destruction, of category `Category`.
/// Enabled cost: 1 relaxed load + 1 branch + 2 tick reads + push() (with
/// EDGETRACE_COMPACT_SCOPES=1: two calls around the same work). Runtime-
/// disabled: the load and the branch (the destructor tests a register).
template <class Category>
class span_scope {
 public:
  template <class SiteFn>
  EDGETRACE_DETAIL_ALWAYS_INLINE explicit span_scope(SiteFn site_fn) noexcept {
    const std::uint8_t mode = Category::state.enabled.load(order_relaxed);
    if (mode != clock_off) start(pack_site(&site_fn()), mode);
  }
  EDGETRACE_DETAIL_ALWAYS_INLINE span_scope(named_tag, name_handle handle) noexcept {
    const std::uint8_t mode = Category::state.enabled.load(order_relaxed);
    if (mode != clock_off)
      start(named_word<Category>(handle), mode);
  }
  EDGETRACE_DETAIL_ALWAYS_INLINE ~span_scope() {
    if (word_ == 0) return;
#if EDGETRACE_COMPACT_SCOPES
    span_end(word_, begin_);
#else
    // Tested on mode_ (not on begin_'s flag bit) so the compiler threads the
    // constructor's mode test through: the common path has one compare.
    if (EDGETRACE_DETAIL_LIKELY(mode_ == clock_counter)) {
      push(word_, begin_, ticks());
    } else {
      span_end_slow(word_, begin_);
    }
#endif
  }
  span_scope(const span_scope&) = delete;
  span_scope& operator=(const span_scope&) = delete;

 private:
  EDGETRACE_DETAIL_ALWAYS_INLINE void start(std::uint64_t word, std::uint8_t mode) noexcept {
    word_ = word;
#if !EDGETRACE_COMPACT_SCOPES
    mode_ = mode;
#endif
#if EDGETRACE_COMPACT_SCOPES
    begin_ = span_begin(word, mode);
#else
    begin_ = EDGETRACE_DETAIL_LIKELY(mode == clock_counter) ? ticks() : span_begin_slow(word, mode);
#endif
  }

  std::uint64_t word_ = 0;  ///< 0 = not recording
  std::uint64_t begin_ = 0;  ///< a tick, or a slow_begin_flag value
#if !EDGETRACE_COMPACT_SCOPES
  std::uint8_t mode_ = clock_off;
#endif
};

template <class Category>
using scope_t = select_t<Category::compiled_in, span_scope<Category>, null_scope>;

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
