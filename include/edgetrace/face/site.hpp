// SPDX-License-Identifier: MIT
// Part of <edgetrace/edgetrace.hpp> (include that): what every scope and
// event macro expands around, its own and the GPU scopes' (gpu/spans.hpp):
// the static site of one expansion, the checks on a macro's arguments, the
// empty object a compiled-out scope becomes, and the tag of a scope named
// at run time. Light: no standard header but <cstddef> and <cstdint>.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/config.hpp>

#include <cstddef>
#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// What a compiled-out scope becomes: an empty object whose constructor
/// accepts (and never calls) whatever the macro passes.
struct null_scope {
  template <class... Args>
  constexpr explicit null_scope(Args&&...) noexcept {}
};
static_assert(__is_empty(null_scope), "a compiled-out scope must be an empty object");

struct named_tag {};

/// A macro's name (or key) is stored by address in a static site, so it
/// must be a string literal. `decltype("x")` is `const char (&)[2]`; a
/// run-time string (`s.c_str()`, a `std::string`) is not an array.
template <class Name>
struct is_literal_name {
  static constexpr bool value = false;
};
template <std::size_t N>
struct is_literal_name<const char (&)[N]> {
  static constexpr bool value = true;
};
template <std::size_t N>
struct is_literal_name<const char[N]> {
  static constexpr bool value = true;
};
/// Instantiated (by sizeof) for every macro name: a compile error that says
/// what to do instead, before the compiler's own about lambda captures.
template <class Name>
struct require_literal_name {
  static_assert(is_literal_name<Name>::value,
                "edgetrace: this macro takes a string literal as its name. For a name known only at run time, "
                "intern it once, outside the hot loop (auto handle = edgetrace::intern(name);), then use "
                "EDGETRACE_SCOPE_NAMED(cat, handle) (or EDGETRACE_ARG_NAMED for a string argument value)");
};
#define EDGETRACE_DETAIL_REQUIRE_LITERAL(name) \
  static_cast<void>(sizeof(::edgetrace::detail::require_literal_name<decltype(name)>))

/// Only declared: used in unevaluated operands to type-check macro arguments.
const char* check_name(const char* name) noexcept;
name_handle check_handle(name_handle handle) noexcept;
double check_value(double value) noexcept;
std::uint64_t check_address(const volatile void* pointer) noexcept;
std::uint64_t check_address(unsigned long long handle) noexcept;
std::uint64_t check_address(unsigned long handle) noexcept;
std::uint64_t check_address(decltype(nullptr)) noexcept;

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

/// Type-checks a macro's category without evaluating anything (an
/// undeclared category is a compile error that names it).
#define EDGETRACE_DETAIL_CHECK_CATEGORY(cat) static_cast<void>(sizeof(EDGETRACE_DETAIL_CATEGORY_TYPE(cat)))

/// The static site descriptor of one macro expansion, behind a lambda so a
/// compiled-out or runtime-disabled scope never materialises it.
#define EDGETRACE_DETAIL_SITE(cat, name, kind)                                                          \
  []() noexcept -> const ::edgetrace::detail::site& {                                                 \
    EDGETRACE_DETAIL_REQUIRE_LITERAL(name);                                                           \
    static constexpr ::edgetrace::detail::site edgetrace_site{&EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::state, \
                                                              name, __FILE__, __LINE__, kind};          \
    return edgetrace_site;                                                                            \
  }
