// SPDX-License-Identifier: MIT
// The site kinds of the dump format, on their own so the light hot-path
// headers need not include all of format.hpp (docs/FORMAT.md has the rest).
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace format {

/// What a site records. A mark is an iteration/frame boundary (1.1); it is
/// encoded as an instant event, so a 1.0 reader shows it as an instant.
/// Kinds 4-8 (1.3) are annotations, written to annotations chunks (an older
/// reader skips them): an argument of the innermost open span (integer, or
/// an interned string), that span's step in a flow, and allocations and
/// frees of a memory pool. Kinds 9-10 (1.5) are floating-point and bool
/// arguments.
enum class site_kind : unsigned char {
  span = 0,
  instant = 1,
  counter = 2,
  mark = 3,
  arg = 4,       ///< EDGETRACE_ARG: name = key, value = signed integer
  arg_name = 5,  ///< EDGETRACE_ARG_NAMED: name = key, value = an interned name
  flow = 6,      ///< EDGETRACE_FLOW: name = flow name, value = flow id
  alloc = 7,     ///< EDGETRACE_ALLOC: name = pool, address and bytes
  free = 8,      ///< EDGETRACE_FREE: address
  arg_float = 9,  ///< (1.5) EDGETRACE_ARG with a floating-point value: name = key, value = a double
  arg_bool = 10,  ///< (1.5) EDGETRACE_ARG with a bool value: name = key, value = 0 or 1
};

/// True for the kinds of span arguments (integer, named, floating, bool).
constexpr bool is_argument(site_kind kind) noexcept {
  return kind == site_kind::arg || kind == site_kind::arg_name || kind == site_kind::arg_float ||
         kind == site_kind::arg_bool;
}

/// True for the kinds recorded as annotations (kinds 4 and up).
constexpr bool is_annotation(site_kind kind) noexcept { return static_cast<unsigned char>(kind) >= 4; }

}  // namespace format
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
