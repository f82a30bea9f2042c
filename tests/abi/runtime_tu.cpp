// SPDX-License-Identifier: MIT
// The runtime compiled once, as edgetrace::runtime does (cmake/edgetrace_runtime.cpp).
#include <edgetrace/runtime_impl.hpp>
