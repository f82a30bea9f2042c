// SPDX-License-Identifier: MIT
// Categories: declared once with EDGETRACE_CATEGORY(name), filtered at
// compile time (EDGETRACE_COMPILED_CATEGORIES / _EXCLUDED_) and at run time
// (EDGETRACE_CATEGORIES), each with the one flag the hot path loads.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/core/atomic.hpp>
#include <edgetrace/core/kinds.hpp>
#include <edgetrace/core/text.hpp>

#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {

/// A run-time span name obtained once from edgetrace::intern(); copying it
/// is free and using it costs the same as a string literal.
struct name_handle {
  std::uint32_t id = 0;  ///< 0: tracing was off when interned (recorded as "(unnamed)")
};

namespace detail {

/// Is `name` an item of the comma-separated `list`? Spaces around items are
/// ignored; an item "*" matches every name. Usable in constant expressions.
constexpr bool list_contains(const char* list, const char* name) noexcept {
  list_item item{nullptr, nullptr};
  for (const char* p = list; next_list_item(p, item);)
    if (item.is("*") || item.is(name)) return true;
  return false;
}

/// Compile-time filter applied to every EDGETRACE_CATEGORY.
constexpr bool category_compiled_in(const char* name) noexcept {
  return EDGETRACE_ENABLED && list_contains(EDGETRACE_COMPILED_CATEGORIES, name) &&
         !list_contains(EDGETRACE_EXCLUDED_CATEGORIES, name);
}

/// The mode byte (category_state::enabled) of a compiled-in category whose
/// registration has not run yet: static initialisation elsewhere (another
/// TU's static object, an __attribute__((constructor))) reached its code
/// first. Scopes then take the slow path, which registers the category (and
/// starts tracing) and records with the mode it gets. Registration replaces
/// it for good, so the plain scope never sees it.
inline constexpr std::uint8_t mode_unregistered = 16;

/// Run-time state of one category; one per process (an inline variable, so
/// every shared object that includes the header shares it).
struct category_state {
  /// The flag every scope of this category loads: 0 = not recording, else
  /// the clock_mode to record with (writer/clock.hpp), so one load answers both
  /// questions. Relaxed: it only gates recording; a scope racing with a
  /// change records or not, both fine. Written by the runtime at start, on
  /// failure and after fork; mode_unregistered until registration.
  atomic_cell<std::uint8_t> enabled{0};
  /// Dense id ≥ 1, assigned at registration (static init); 0 = unregistered.
  std::uint32_t index = 0;
  const char* name;
  /// Registry link, written under the registry mutex only.
  category_state* next = nullptr;

  constexpr explicit category_state(const char* category_name, bool compiled_in = false) noexcept
      : enabled(compiled_in ? mode_unregistered : std::uint8_t{0}), name(category_name) {}
};

/// A call site: one static constexpr instance per macro expansion, so the
/// hot path stores only its address. 8-byte aligned: the low two bits of a
/// record word are its tag.
struct alignas(8) site {
  const category_state* category;
  const char* name;
  const char* file;
  std::uint32_t line;
  format::site_kind kind;
};

/// Links a category into the process registry and applies the run-time
/// filter if tracing already started. Defined in writer/runtime.hpp.
bool register_category(category_state& state) noexcept;
/// Registers the category of record word `word` (a site's; an interned-name
/// word names no category yet and gets 0) on its first use before its
/// registration ran, and returns its mode byte (writer/runtime.hpp).
std::uint8_t register_on_first_use(std::uint64_t word) noexcept;
/// Unlinks it again (writer/runtime.hpp).
void unregister_category(category_state& state) noexcept;

/// Registers a category for the lifetime of the object (executable or
/// shared library) that declares it: its destructor runs at exit or at
/// dlclose, so an unloaded library's category leaves the registry.
struct category_registration {
  category_state& state;
  explicit category_registration(category_state& category) noexcept : state(category) { register_category(state); }
  ~category_registration() { unregister_category(state); }
  category_registration(const category_registration&) = delete;
  category_registration& operator=(const category_registration&) = delete;
};

/// What a compiled-out category registers: nothing.
struct no_registration {
  constexpr explicit no_registration(category_state&) noexcept {}
};

/// std::conditional_t without <type_traits> (compile cost).
template <bool Condition, class Then, class Else>
struct select_type {
  using type = Then;
};
template <class Then, class Else>
struct select_type<false, Then, Else> {
  using type = Else;
};
template <bool Condition, class Then, class Else>
using select_t = typename select_type<Condition, Then, Else>::type;

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#define EDGETRACE_DETAIL_CATEGORY_TYPE(cat) edgetrace_category_##cat

#if EDGETRACE_ENABLED
/// Declares category `cat` (an identifier) at namespace scope. Using a
/// category that was never declared is a compile error, so a typo cannot
/// silently compile a scope out.
#define EDGETRACE_CATEGORY(cat)                                                                   \
  struct EDGETRACE_DETAIL_CATEGORY_TYPE(cat) {                                                    \
    static constexpr bool compiled_in = ::edgetrace::detail::category_compiled_in(#cat);          \
    static inline ::edgetrace::detail::category_state state{#cat, compiled_in};                   \
    static inline const ::edgetrace::detail::select_t<compiled_in, ::edgetrace::detail::category_registration, \
                                                      ::edgetrace::detail::no_registration>                \
        registration{state};                                                                               \
  }
#else
#define EDGETRACE_CATEGORY(cat)                 \
  struct EDGETRACE_DETAIL_CATEGORY_TYPE(cat) {  \
    static constexpr bool compiled_in = false;  \
  }
#endif
