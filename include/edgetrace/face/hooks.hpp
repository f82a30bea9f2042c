// SPDX-License-Identifier: MIT
// Scope hooks: an optional table of functions every recording scope also
// calls (begin and end of a span, an instant or mark), installed by an
// add-on such as <edgetrace/nvtx.hpp> and switched on at run time
// (EDGETRACE_NVTX=1). With no hooks switched on the hot path never looks
// at them: the category's mode byte says whether to.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/core/atomic.hpp>

#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// What a hook receives is the record word (face/ring.hpp): a
/// `const site*` (tag bits 00) or an interned-name word
/// (name_id << 32 | category index << 2 | 1). Hooks run on the app's
/// thread, inside its scope: keep them cheap and never throw.
struct scope_hooks {
  const char* name;                              ///< for messages, e.g. "NVTX"
  void (*begin)(std::uint64_t word) noexcept;    ///< a span starts
  void (*end)(std::uint64_t word) noexcept;      ///< the innermost span of this thread ends
  void (*instant)(std::uint64_t word) noexcept;  ///< an instant or a mark
  /// The C library's dlopen (null: none), with which the runtime keeps the
  /// object holding the hooks loaded while they are called (EDGETRACE_NVTX=1).
  void* (*open_library)(const char* path, int flags);
};

/// Mode-byte bit (category_state::enabled): call the installed hooks. The
/// low two bits stay the clock_mode (face/tick.hpp); a mode of just
/// `mode_hooks` calls the hooks without recording (hooks on, no dump).
inline constexpr std::uint8_t mode_hooks = 4;
inline constexpr std::uint8_t mode_clock_bits = 3;
/// Mode-byte bit: recording waits for EDGETRACE_START_AFTER=N marks. Instants
/// and marks take event_slow, which counts the marks; spans take the slow
/// path and record nothing. Set only while waiting (runtime.hpp), so the
/// plain scope never sees it.
inline constexpr std::uint8_t mode_count_marks = 8;

/// Installs `hooks` (at static initialisation, by the add-on) and gives
/// them to the selected categories if EDGETRACE_NVTX=1 asked for them.
EDGETRACE_DETAIL_API void install_scope_hooks(const scope_hooks* hooks) noexcept;

/// For hooks that need names: the string of an interned name id (null if
/// unknown), and a registered category's name by index (null if none).
/// Both take a lock: hooks should cache what they derive from them.
EDGETRACE_DETAIL_API const char* interned_name(std::uint32_t id) noexcept;
EDGETRACE_DETAIL_API const char* category_name(std::uint32_t index) noexcept;

/// The installed table, or null. Written once at static initialisation by
/// the add-on (release), read by the runtime at start-up and by hooked
/// scopes (acquire).
inline atomic_cell<const scope_hooks*> installed_hooks{nullptr};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
