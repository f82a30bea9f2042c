// SPDX-License-Identifier: MIT
// The text helpers every layer shares: the comma-list tokenizer (the
// compile-time category filter, EDGETRACE_CATEGORIES, EDGETRACE_TRIGGER,
// the converter's --category/--thread/--by lists), the edit distance
// behind every "did you mean", and UTF-8 encoding (NVTX's wide names, JSON
// escapes in imported profiles). Light: constexpr, no standard header but
// <cstddef>, so category.hpp can use it on the hot path's include line.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <cstddef>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// One item of a comma-separated list: [begin, end), spaces around it
/// trimmed, never empty.
struct list_item {
  const char* begin;
  const char* end;
  constexpr std::size_t size() const noexcept { return static_cast<std::size_t>(end - begin); }
  constexpr bool is(const char* word) const noexcept {
    const char* i = begin;
    while (i != end && *word != '\0' && *i == *word) ++i, ++word;
    return i == end && *word == '\0';
  }
};

/// Takes the next non-empty item of the comma list at `cursor` (advanced
/// past it). Empty items (",,", a trailing comma, spaces only) are skipped.
/// Returns false at the end of the text.
constexpr bool next_list_item(const char*& cursor, list_item& item) noexcept {
  const char* p = cursor;
  while (true) {
    while (*p == ' ' || *p == ',') ++p;
    if (*p == '\0') {
      cursor = p;
      return false;
    }
    const char* begin = p;
    while (*p != '\0' && *p != ',') ++p;
    const char* end = p;
    while (end > begin && end[-1] == ' ') --end;
    if (end != begin) {
      cursor = p;
      item = list_item{begin, end};
      return true;
    }
  }
}

/// Calls visit(list_item) for each non-empty item of `list` (null: none).
template <class Visit>
constexpr void for_each_list_item(const char* list, Visit&& visit) noexcept(noexcept(visit(list_item{}))) {
  if (list == nullptr) return;
  list_item item{nullptr, nullptr};
  for (const char* p = list; next_list_item(p, item);) visit(item);
}

/// Edit distance (insertions, deletions, substitutions) between two short
/// strings, for "did you mean". Bounded work: either longer than 64
/// characters gives 99, never a suggestion.
constexpr std::size_t edit_distance(const char* a, std::size_t la, const char* b, std::size_t lb) noexcept {
  if (la > 64 || lb > 64) return 99;
  std::size_t row[65] = {};
  for (std::size_t j = 0; j <= lb; ++j) row[j] = j;
  for (std::size_t i = 1; i <= la; ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= lb; ++j) {
      const std::size_t up = row[j];
      std::size_t best = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diagonal = up;
    }
  }
  return row[lb];
}

constexpr std::size_t text_length(const char* s) noexcept {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

constexpr std::size_t edit_distance(const char* a, const char* b) noexcept {
  return edit_distance(a, text_length(a), b, text_length(b));
}

/// Writes code point `c` as UTF-8 into `out` (room for 4 bytes) and returns
/// the bytes written; a surrogate or a value past U+10FFFF (not a code
/// point) is written as U+FFFD, the replacement character.
constexpr std::size_t encode_utf8(unsigned long c, char* out) noexcept {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
  if (c < 0x80) {
    out[0] = static_cast<char>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<char>(0xC0 | (c >> 6));
    out[1] = static_cast<char>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (c >> 12));
    out[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (c >> 18));
  out[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (c & 0x3F));
  return 4;
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
