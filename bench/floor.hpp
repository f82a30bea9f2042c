// SPDX-License-Identifier: MIT
// The floor every benchmark compares with: what any tracer must at least do
// per span, two raw ticks and one 24-byte store to an array of the thread's
// own. Shared by hot_path_bench.cpp and overload_bench.cpp.
#pragma once

#include <edgetrace/edgetrace.hpp>

#include <cstddef>
#include <cstdint>

namespace edgetrace_bench {

struct floor_record {
  std::uint64_t word, t_begin, t_end;
};
inline constexpr std::size_t floor_slots = 4096;
inline thread_local floor_record floor_buffer[floor_slots];
inline thread_local std::size_t floor_index = 0;

/// The floor's store: one record into the thread's array.
inline void floor_store(std::uint64_t word, std::uint64_t begin, std::uint64_t end) noexcept {
  floor_record& r = floor_buffer[floor_index++ & (floor_slots - 1)];
  r.word = word;
  r.t_begin = begin;
  r.t_end = end;
}

}  // namespace edgetrace_bench
