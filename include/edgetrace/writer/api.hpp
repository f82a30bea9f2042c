// SPDX-License-Identifier: MIT
// The runtime's entry points that the light headers declare (EDGETRACE_DETAIL_API): registration, intern, flush, pause and phases, measured spans, allocations, snapshots.
//
// The one room that may start the runtime: an entry point that needs it
// calls ensure_initialized() first, then goes down to the registry, the
// slow path or the flusher. Nothing below calls up into this file.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/writer/platform/linux.hpp>
#include <edgetrace/writer/process.hpp>
#include <edgetrace/writer/registry.hpp>
#include <edgetrace/writer/slow_path.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Starts tracing once per process; every later call is a guard check.
inline void ensure_initialized() noexcept {
  static const bool started = start_from_environment();
  (void)started;
}

/// Static-initialisation trigger: every TU that includes edgetrace.hpp runs
/// it, the first one does the work.
inline const bool initialized_at_startup = (ensure_initialized(), true);

// ------------------------------------------------------------ categories

/// Registers a category, starting the runtime first if this is the first
/// thing the process traces (a category registering in a static
/// initialiser before the runtime's own trigger ran).
EDGETRACE_DETAIL_API bool register_category(category_state& state) noexcept {
  ensure_initialized();
  add_category(state);
  return true;
}

EDGETRACE_DETAIL_API std::uint8_t register_on_first_use(std::uint64_t word) noexcept {
  if (tag_of(word) != tag_site) return clock_off;  // a named word carries the index, still 0: nothing to register
  auto& state = const_cast<category_state&>(*site_of(word)->category);
  register_category(state);
  return state.enabled.load(std::memory_order_relaxed);
}

EDGETRACE_DETAIL_API void wake_flusher_early() noexcept {
  if (runtime* rt = owned_runtime()) rt->wake_flusher();
}

/// runtime::flush_if_pending with unload_flush_timeout; true without a runtime.
inline bool flush_if_pending() noexcept {
  runtime* rt = owned_runtime();
  return rt == nullptr || rt->flush_if_pending(unload_flush_timeout);
}

/// Undoes register_category when the object that declared the category is
/// unloaded (dlclose) or the process exits: records still in the rings are
/// written first (they point at this object's strings), waiting at most
/// unload_flush_timeout; if some are still unread then (a slow output), the
/// object's address range is marked unloaded and the flusher drops and
/// counts them instead of reading them. Then the category leaves the
/// registry, so nothing touches its memory afterwards.
EDGETRACE_DETAIL_API void unregister_category(category_state& state) noexcept {
  if (state.index == 0) return;
  // The executable is never unloaded: its category state (apart from this
  // registration) and strings stay until the process ends, after the
  // stream's end. So at its exit the category stays registered: no flush
  // (with hundreds of threads still recording, that flush took the
  // whole exit bound before the final pass began), and records still in
  // the rings keep their category's name.
  const unloaded_range range = object_range(&state);
  if (range.begin == range.end) return;
  if (!flush_if_pending()) unloaded_libraries.publish(range);
  remove_category(state);
}

// ------------------------------------------------------------ capture control

EDGETRACE_DETAIL_API void set_paused(bool paused) noexcept {
  const bool owned = owned_runtime() != nullptr;
  mutex_lock lock(category_mutex);
  if (capture().set_paused_locked(paused)) update_capture_locked(format::capture_reason::api, owned);
}

EDGETRACE_DETAIL_API std::uint8_t start_mark_seen() noexcept {
  runtime* rt = owned_runtime();
  if (rt == nullptr) return clock_off;
  // The first N marks close the first N iterations' warm-up; mark N+1
  // starts recording and is recorded.
  if (!capture().count_mark(rt->config().start_after_marks)) return clock_off;
  mutex_lock lock(category_mutex);
  if (capture().mark_window_locked()) update_capture_locked(format::capture_reason::start_after, true);
  return capturing_locked() ? recording_clock : std::uint8_t{clock_off};
}

EDGETRACE_DETAIL_API void begin_phase(const char* name, std::size_t size) noexcept {
  if (owned_runtime() == nullptr || name == nullptr) return;
  if (size > 255) size = 255;
  mutex_lock lock(category_mutex);
  if (!tracing_on) return;
  capture().log_phase_locked(ticks(recording_clock), name, size);
}

// ------------------------------------------------------------ records

EDGETRACE_DETAIL_API void record_measured(std::uint64_t word, std::uint64_t start_ns, std::uint64_t duration_ns,
                                          std::uint8_t mode) noexcept {
  if ((mode & mode_unregistered) != 0) mode = register_on_first_use(word);
  const std::uint8_t clock = mode & mode_clock_bits;
  if (clock == clock_off) return;  // hooks only, or waiting for marks: nothing is recorded
  push_measured(word, start_ns, duration_ns, clock);
}

EDGETRACE_DETAIL_API void record_measured_arg(std::uint64_t word, std::uint64_t value, std::uint64_t start_ns,
                                              std::uint64_t duration_ns, std::uint8_t mode) noexcept {
  if ((mode & mode_unregistered) != 0) mode = register_on_first_use(word);
  const std::uint8_t clock = mode & mode_clock_bits;
  if (clock == clock_off) return;  // hooks only, or waiting for marks: nothing is recorded
  push_measured_arg(word, value, start_ns, duration_ns, clock);
}

EDGETRACE_DETAIL_API void record_alloc(std::uint64_t word, std::uint64_t address, std::uint64_t bytes,
                                       std::uint8_t mode) noexcept {
  if ((mode & mode_unregistered) != 0) mode = register_on_first_use(word);
  const std::uint8_t clock = mode & mode_clock_bits;
  if (clock == clock_off) return;  // hooks only, or waiting for marks: nothing is recorded
  push_alloc_pair(word, ticks(clock), address, bytes);
}

// ------------------------------------------------------------ names, threads, flush

EDGETRACE_DETAIL_API name_handle intern(const char* data, std::size_t size) {
  ensure_initialized();
  restart_if_forked();
  std::string name(data == nullptr ? "" : data, data == nullptr ? 0 : size);
  runtime* rt = owned_runtime();
  if (rt == nullptr) {
    if (!hooks_only_active()) return {};  // tracing off: no allocation
    return {hook_only_names().intern(std::move(name))};
  }
  return {rt->intern(std::move(name))};
}

EDGETRACE_DETAIL_API void install_scope_hooks(const scope_hooks* hooks) noexcept {
  // Called from now on by every thread's scopes, when EDGETRACE_NVTX=1: a
  // library that installed them (nvtx.hpp in a plugin) and was unloaded
  // crashed the next scope. Here, at the installer's static
  // initialisation and before category_mutex, the loader's lock is free
  // or this thread's.
  const char* nvtx = std::getenv("EDGETRACE_NVTX");
  if (hooks != nullptr && nvtx != nullptr && std::strcmp(nvtx, "1") == 0)
    os::keep_loaded(os::code_address(hooks->begin), hooks->open_library);
  installed_hooks.store(hooks, std::memory_order_release);
  mutex_lock lock(category_mutex);
  apply_category_flags_locked();
}

EDGETRACE_DETAIL_API const char* interned_name(std::uint32_t id) noexcept {
  if (id == 0) return nullptr;
  runtime* rt = owned_runtime();
  return rt != nullptr ? rt->name(id) : hook_only_names().name(id);
}

EDGETRACE_DETAIL_API const char* category_name(std::uint32_t index) noexcept {
  mutex_lock lock(category_mutex);
  const category_state* state = find_category_locked(index);
  return state == nullptr ? nullptr : state->name;
}

EDGETRACE_DETAIL_API void set_thread_name(const char* name) noexcept {
  if (name == nullptr) return;
  thread_ring* ring = attached_ring != nullptr ? attached_ring : attach_current_thread();
  if (ring != nullptr) ring->set_name(name);
}

EDGETRACE_DETAIL_API void flush() noexcept {
  restart_if_forked();
  // Bounded wait: the app must never hang on the tracer.
  if (runtime* rt = owned_runtime()) rt->flush(std::chrono::seconds(5));
}


EDGETRACE_DETAIL_API void snapshot_call(const char* reason, std::size_t size) noexcept {
  runtime* rt = owned_runtime();
  if (rt != nullptr && rt->config().flight) rt->hand_snapshot_call(reason, size);
}

EDGETRACE_DETAIL_API bool active() noexcept {
  const runtime* rt = owned_runtime();
  return rt != nullptr && rt->active();
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
