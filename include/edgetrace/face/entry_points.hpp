// SPDX-License-Identifier: MIT
// Part of <edgetrace/edgetrace.hpp> (include that): the runtime's entry
// points as the light header declares them (writer/api.hpp defines them;
// with EDGETRACE_SEPARATE_RUNTIME=1, the one TU that includes
// <edgetrace/runtime_impl.hpp>). Light: no standard header but <cstddef>
// and <cstdint>.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/config.hpp>

#include <cstddef>
#include <cstdint>

#if EDGETRACE_ENABLED

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

EDGETRACE_DETAIL_API name_handle intern(const char* name, std::size_t size);
EDGETRACE_DETAIL_API void flush() noexcept;
EDGETRACE_DETAIL_API void set_thread_name(const char* name) noexcept;
EDGETRACE_DETAIL_API bool active() noexcept;
/// edgetrace::snapshot(): hands the request to the flusher (flight mode).
EDGETRACE_DETAIL_API void snapshot_call(const char* reason, std::size_t size) noexcept;
/// Capture control (writer/runtime.hpp, "capture control"): pause/resume,
/// a mark counted while EDGETRACE_START_AFTER waits for N marks (returns
/// the clock to record that mark with, 0 for none), a labelled phase.
EDGETRACE_DETAIL_API void set_paused(bool paused) noexcept;
EDGETRACE_DETAIL_API std::uint8_t start_mark_seen() noexcept;
EDGETRACE_DETAIL_API void begin_phase(const char* name, std::size_t size) noexcept;
/// EDGETRACE_RECORD: a span timed elsewhere, in CLOCK_MONOTONIC ns, mapped
/// to the recording clock's ticks and pushed like any span.
EDGETRACE_DETAIL_API void record_measured(std::uint64_t word, std::uint64_t start_ns, std::uint64_t duration_ns,
                                          std::uint8_t mode) noexcept;
/// EDGETRACE_RECORD_ARG: an argument of a span timed elsewhere, at that
/// span's middle.
EDGETRACE_DETAIL_API void record_measured_arg(std::uint64_t word, std::uint64_t value, std::uint64_t start_ns,
                                              std::uint64_t duration_ns, std::uint8_t mode) noexcept;
/// EDGETRACE_ALLOC: pushes the allocation record and its bytes as one pair
/// (both or neither reach the ring).
EDGETRACE_DETAIL_API void record_alloc(std::uint64_t word, std::uint64_t address, std::uint64_t bytes,
                                       std::uint8_t mode) noexcept;

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#endif  // EDGETRACE_ENABLED
