// SPDX-License-Identifier: MIT
// The version is written once (config.hpp): the string, the number, CMake's
// project version and the installed package's version all agree with it.
// (`edgetrace --version` and the JSON metadata: cli_test.)
#include <doctest/doctest.h>

#include <edgetrace/config.hpp>

#include <string>

namespace version_test {

TEST_CASE("version: the string and the number are made from the three parts") {
  const std::string expected = std::to_string(EDGETRACE_VERSION_MAJOR) + "." + std::to_string(EDGETRACE_VERSION_MINOR) +
                               "." + std::to_string(EDGETRACE_VERSION_PATCH);
  CHECK(std::string(EDGETRACE_VERSION_STRING) == expected);
  CHECK(EDGETRACE_VERSION ==
        EDGETRACE_VERSION_MAJOR * 10000 + EDGETRACE_VERSION_MINOR * 100 + EDGETRACE_VERSION_PATCH);
}

TEST_CASE("version: CMake's project version is config.hpp's (read by CMakeLists.txt)") {
  CHECK(std::string(EDGETRACE_TEST_PROJECT_VERSION) == EDGETRACE_VERSION_STRING);
}

}  // namespace version_test
