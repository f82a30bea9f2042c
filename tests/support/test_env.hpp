// SPDX-License-Identifier: MIT
// Test helper: what every test program is given (the traced helper app, the
// CLI, its scratch folder) and a fresh path in that folder. The paths come
// from the build (tests/CMakeLists.txt; a knob configuration passes its own).
#pragma once

#include <string>

#include <support/files.hpp>
#include <support/process.hpp>

namespace edgetrace_test {

/// tests/support/trace_app.cpp as built for this program.
inline const std::string app = EDGETRACE_TEST_TRACE_APP;
/// The edgetrace command-line tool.
inline const std::string cli = EDGETRACE_TEST_CLI;
/// This program's scratch folder.
inline const std::string tmp = EDGETRACE_TEST_TMPDIR;

/// `tmp/name` with no file there (see fresh_file).
inline std::string fresh(const std::string& name) { return fresh_file(tmp + "/" + name); }

}  // namespace edgetrace_test
