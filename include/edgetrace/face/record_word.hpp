// SPDX-License-Identifier: MIT
// The one codec of a ring record's first word (its low two bits are the
// tag, face/ring.hpp): every writer, hook and encoder reads and packs
// words through these, never with `word & 3` or shifts of its own.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/face/ring.hpp>

#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

constexpr record_tag tag_of(std::uint64_t word) noexcept { return static_cast<record_tag>(word & 3); }

/// tag_site: the word is the call-site descriptor's address.
inline std::uint64_t pack_site(const site* s) noexcept {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s));
}
inline const site* site_of(std::uint64_t word) noexcept {
  return reinterpret_cast<const site*>(static_cast<std::uintptr_t>(word));
}

/// tag_named: a span named at run time, name_id << 32 | category << 2 | 1.
constexpr std::uint64_t pack_named(std::uint32_t name_id, std::uint32_t category_index) noexcept {
  return (std::uint64_t{name_id} << 32) | (std::uint64_t{category_index & 0x3FFFFFFFu} << 2) | tag_named;
}
constexpr std::uint32_t named_id(std::uint64_t word) noexcept { return static_cast<std::uint32_t>(word >> 32); }
constexpr std::uint32_t named_category(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>((word >> 2) & 0x3FFFFFFFu);
}
/// The named word without its tag: (name, category), a lookup key.
constexpr std::uint64_t named_key(std::uint64_t word) noexcept { return word >> 2; }

/// tag_loss: count << 2 | 2 (t_begin/t_end: the first and last tick lost).
constexpr std::uint64_t pack_loss(std::uint64_t count) noexcept { return (count << 2) | tag_loss; }
constexpr std::uint64_t loss_count(std::uint64_t word) noexcept { return word >> 2; }

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
