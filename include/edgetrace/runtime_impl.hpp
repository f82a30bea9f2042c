// SPDX-License-Identifier: MIT
// The runtime's one translation unit when it is compiled separately.
//
// By default edgetrace is header-only: every TU that includes
// <edgetrace/edgetrace.hpp> also compiles the runtime (flusher, encoder,
// environment parsing), a few seconds of compile time per TU at -O2. With
// EDGETRACE_SEPARATE_RUNTIME=1 on every TU of the program, the header
// keeps only what a scope compiles to, and exactly one .cpp does
//
//   #include <edgetrace/runtime_impl.hpp>
//
// (CMake: link edgetrace::runtime instead, which does both). Forgetting it
// is a link error naming edgetrace::v1_rt::detail::push_slow and friends.
#pragma once

#ifndef EDGETRACE_SEPARATE_RUNTIME
#define EDGETRACE_SEPARATE_RUNTIME 1
#endif
#if !EDGETRACE_SEPARATE_RUNTIME
#error "<edgetrace/runtime_impl.hpp> is for EDGETRACE_SEPARATE_RUNTIME=1 builds (define it for every TU of the program)"
#endif

#include <edgetrace/edgetrace.hpp>

#if EDGETRACE_ENABLED
#define EDGETRACE_DETAIL_RUNTIME_TU 1
#include <edgetrace/writer/runtime.hpp>
// GPU scopes (gpu/spans.hpp) reach their tracker through declarations; it
// is compiled here unless the build gives it a TU of its own (the
// edgetrace::runtime library does, so a program without GPU scopes does
// not link it).
#ifndef EDGETRACE_DETAIL_GPU_TRACKER_APART
#include <edgetrace/gpu/tracker.hpp>
#endif

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
template void push_slow<void>(thread_ring* ring, std::uint64_t word, std::uint64_t a, std::uint64_t b) noexcept;
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif
