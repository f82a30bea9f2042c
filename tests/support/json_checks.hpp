// SPDX-License-Identifier: MIT
// Test helper: parses the JSON the tool printed (the test stops with the parser's message when it is not JSON) and reads integers from it.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <support/json_lite.hpp>

namespace edgetrace_test {

inline json_lite::value parse_json(const std::string& text) {
  json_lite::value v;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(text, v, error), error);
  return v;
}

/// A JSON number as an unsigned integer (ns, counts).
inline std::uint64_t u(const json_lite::value& v) { return static_cast<std::uint64_t>(v.num()); }

}  // namespace edgetrace_test
