// SPDX-License-Identifier: MIT
// The GPU tracker of the edgetrace::runtime library, in an object of its
// own: a program links it only when one of its TUs runs GPU scopes (they
// call the tracker's entry points, gpu/handoff.hpp).
#include <edgetrace/edgetrace.hpp>

#if EDGETRACE_ENABLED
#include <edgetrace/gpu/tracker.hpp>
#endif
