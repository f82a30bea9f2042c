// SPDX-License-Identifier: MIT
// The edgetrace::runtime library: the runtime compiled once, for programs
// whose TUs include <edgetrace/edgetrace.hpp> with
// EDGETRACE_SEPARATE_RUNTIME=1 (the target sets it for its users).
#include <edgetrace/runtime_impl.hpp>
