// SPDX-License-Identifier: MIT
// The site kinds of the dump format, on their own so the light hot-path
// headers need not include all of format.hpp (docs/FORMAT.md has the rest).
#pragma once

namespace edgetrace {
inline namespace v1 {
namespace format {

/// What a site records. A mark is an iteration/frame boundary (1.1); it is
/// encoded as an instant event, so a 1.0 reader shows it as an instant.
enum class site_kind : unsigned char { span = 0, instant = 1, counter = 2, mark = 3 };

}  // namespace format
}  // namespace v1
}  // namespace edgetrace
