// SPDX-License-Identifier: MIT
// What every run of nvtx_app (tests/nvtx/nvtx_app.cpp) records, whatever
// the categories and whichever runtime: for the tests that trace it.
#pragma once

#include <doctest/doctest.h>

#include <support/read_dump.hpp>

#include <string>

namespace nvtx_app_dump {

/// Loads the dump an nvtx_app run wrote, and checks that it is whole and
/// holds the app's three "work" spans, its "outer" span and "conv_7" (the
/// interned name).
inline edgetrace_test::loaded_dump load(const std::string& path) {
  edgetrace_test::loaded_dump dump = edgetrace_test::load_dump(path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  CHECK(dump.named("work").size() == 3);
  CHECK(dump.named("outer").size() == 1);
  CHECK(dump.named("conv_7").size() == 1);
  return dump;
}

}  // namespace nvtx_app_dump
