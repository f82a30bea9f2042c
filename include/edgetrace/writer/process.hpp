// SPDX-License-Identifier: MIT
// The process's life around the runtime: start from the environment, exit and quick_exit, fork (off or follow) and the restart in a forked child.
//
// The top room of the writer: it builds the runtime (writer/flusher.hpp),
// attaches the starting thread (writer/slow_path.hpp) and installs the
// handlers (writer/signals.hpp). The entry
// points the light headers declare are in writer/api.hpp.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/writer/exit_priority.hpp>
#include <edgetrace/writer/flusher.hpp>
#include <edgetrace/writer/registry.hpp>
#include <edgetrace/writer/signals.hpp>
#include <edgetrace/writer/slow_path.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include <pthread.h>
#include <unistd.h>

namespace edgetrace {
namespace abi {
/// Bit 1: a header-only runtime started; bit 2: a separate one. Outside the
/// ABI namespace on purpose, so both builds of the runtime share this one.
inline std::atomic<unsigned>& runtime_builds_started_word() noexcept {
  static std::atomic<unsigned> word{0};
  return word;
}
}  // namespace abi
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

// ------------------------------------------------------------ exit

/// The stream's end: recording stops and the flusher's final pass runs,
/// waited for at most 1 s (runtime::stop_at_exit).
inline void end_stream(runtime* rt) noexcept {
  {
    mutex_lock lock(category_mutex);
    report_unmatched_filter_locked();
    set_recording_locked(false);
  }
  // The exiting thread records nothing more that the final pass could
  // see: retiring its ring now gets its pending loss written too.
  if (thread_ring* ring = attached_ring) retire_ring(rt, ring, true);
  rt->stop_at_exit();
}

// ------------------------------------------------------------ the locks

/// Taken by the fork handlers so that the child never inherits one held.
inline mutex restart_mutex;

/// Every lock of the tracer, in the one order fork_prepare and
/// quick_exit_shutdown take them: the child restart, the categories, the
/// unloaded ranges (each never held with another lock), then the
/// runtime's own (runtime::lock_all). A fork must not copy one held into
/// the child; quick_exit must not wait for one its own thread holds.
inline std::array<mutex*, 3> process_locks() noexcept {
  return {&restart_mutex, &category_mutex, &unloaded_libraries.lock_for_fork()};
}
inline void lock_all(runtime* rt) noexcept {
  const std::array<mutex*, 3> locks = process_locks();
  lock_in_order(locks.data(), locks.size());
  if (rt != nullptr) rt->lock_all();
}
inline void unlock_all(runtime* rt) noexcept {
  if (rt != nullptr) rt->unlock_all();
  const std::array<mutex*, 3> locks = process_locks();
  unlock_in_reverse(locks.data(), locks.size());
}
/// lock_all, or nothing: false (none held) when one of them is held.
inline bool try_lock_all(runtime* rt) noexcept {
  const std::array<mutex*, 3> locks = process_locks();
  if (!try_lock_in_order(locks.data(), locks.size())) return false;
  if (rt == nullptr || rt->try_lock_all()) return true;
  unlock_in_reverse(locks.data(), locks.size());
  return false;
}

/// At exit, at quick_exit, and when the library that holds the runtime is
/// unloaded (its atexit handler runs at dlclose): the stream ends, then the
/// signal handlers the runtime installed go, where they are still the
/// installed ones. Left behind, a runtime's handlers pointed into its
/// unmapped library, and the next such signal crashed the app.
inline void shutdown() noexcept {
  runtime* rt = owned_runtime();
  if (rt == nullptr) return;
  if (rt->flusher_running()) end_stream(rt);
  restore_signal_handlers(rt->config().toggle_signal);
  if (rt->config().flight) restore_flight_handlers(rt->config().snapshot_signal);
}

/// at_quick_exit's handler: quick_exit() ends the stream as exit() does.
/// Unlike exit(), quick_exit() may be called from a signal handler, which
/// may have interrupted this very thread inside a lock that shutdown() or
/// the flusher's last pass takes (intern, pause, a thread's first event, a
/// category registering): shutdown() would then wait for itself forever.
/// So it runs only once those locks can be taken, trying for at most
/// ~100 ms (another thread, the flusher included, holds them for
/// microseconds); otherwise the dump is left as after a crash, every whole
/// chunk readable.
inline void quick_exit_shutdown() noexcept {
  runtime* rt = owned_runtime();
  if (rt == nullptr) return;
  for (int tries = 0; !try_lock_all(rt); ++tries) {
    if (tries == 100) return;
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  unlock_all(rt);
  shutdown();
}

// ------------------------------------------------------------ start-up

/// Child dump name under EDGETRACE_FORK=follow when EDGETRACE_OUTPUT has no
/// %p: "run.etr" becomes "run.<pid>.etr" (or "<path>.<pid>").
inline bool child_output_path(const char* parent_path, long pid, char* out, std::size_t size) noexcept {
  const std::size_t length = std::strlen(parent_path);
  int written;
  if (length > 4 && std::strcmp(parent_path + length - 4, ".etr") == 0)
    written = std::snprintf(out, size, "%.*s.%ld.etr", static_cast<int>(length - 4), parent_path, pid);
  else
    written = std::snprintf(out, size, "%s.%ld", parent_path, pid);
  return written > 0 && static_cast<std::size_t>(written) < size;
}


/// runtime::launch, then the runtime is published: the app's threads see it.
inline bool open_and_launch(runtime* rt) noexcept {
  if (!rt->launch()) return false;
  the_runtime.store(rt, std::memory_order_release);
  return true;
}

inline void switch_flags_on(const settings& config) noexcept {
  mutex_lock lock(category_mutex);
  category_filter = config.categories;
  recording_clock = config.clock;
  hooks_wanted = config.nvtx;
  for (const category_state* c = category_list; c != nullptr; c = c->next) mark_filter_matches_locked(c->name);
  tracing_on = true;
  // The window counts from here, not from before the file was opened (a
  // slow open, e.g. under an emulator, would otherwise shorten it).
  const format::capture_reason why = capture().start_locked(config, clock_ns(CLOCK_MONOTONIC));
  // Not recording from the start: the dump says so (and why) at once.
  update_capture_locked(why, owned_runtime() != nullptr);
}

inline void switch_flags_off() noexcept {
  mutex_lock lock(category_mutex);
  set_recording_locked(false);
}

/// EDGETRACE_CLOCK=auto (default) uses the CPU counter where it is
/// invariant and CLOCK_MONOTONIC elsewhere, saying so once on stderr;
/// counter/monotonic force one.
inline void choose_clock(settings& config) noexcept {
  const bool invariant = counter_invariant() && !config.assume_unstable_counter;
  if (config.clock_choice == settings::clock_auto) {
    config.clock = has_counter && invariant ? clock_counter : clock_monotonic;
    config.clock_fell_back = has_counter && !invariant;
    if (config.clock_fell_back)
      report("the CPU's time-stamp counter is not invariant; using CLOCK_MONOTONIC (~20 ns more per span; "
             "EDGETRACE_CLOCK=counter forces the counter)");
  } else if (config.clock_choice == settings::clock_force_counter) {
    config.clock = has_counter ? clock_counter : clock_monotonic;
    if (!has_counter) report("EDGETRACE_CLOCK=counter: no CPU counter on this architecture; using CLOCK_MONOTONIC");
  } else {
    config.clock = clock_monotonic;
  }
}

/// Reads the environment and, if EDGETRACE_OUTPUT is set, opens the dump,
/// writes its header, attaches the calling thread and starts the flusher.
/// Without EDGETRACE_OUTPUT: no file, no thread, no allocation.
inline void report_missing_hooks() noexcept {
  if (installed_hooks.load(std::memory_order_acquire) == nullptr)
    report("EDGETRACE_NVTX=1, but this program has no NVTX forwarding compiled in (include <edgetrace/nvtx.hpp> in "
           "one of its source files, or link edgetrace::nvtx); no NVTX ranges were emitted");
}

/// EDGETRACE_NVTX=1 without EDGETRACE_OUTPUT: scopes of the selected
/// categories call the hooks (NVTX ranges for Nsight) and record nothing.
/// No file, no thread, no allocation.
inline void start_hooks_only(const settings& config) noexcept {
  mutex_lock lock(category_mutex);
  category_filter = config.categories;
  hooks_wanted = true;
  apply_category_flags_locked();
  std::atexit(&report_missing_hooks);
}

// ------------------------------------------------------------ fork

inline void fork_prepare() noexcept { lock_all(the_runtime.load(std::memory_order_acquire)); }
inline void fork_parent() noexcept { unlock_all(the_runtime.load(std::memory_order_acquire)); }

/// EDGETRACE_FORK=follow: builds a fresh runtime in the child (the parent's
/// is left as it was copied: destroying it could wait on the parent's
/// threads, which do not exist here). The atexit and atfork handlers and
/// the thread-exit key were inherited. Runs once (pending_restart).
inline void restart_in_child() noexcept {
  mutex_lock lock(restart_mutex);
  if (pending_restart.exchange(nullptr, std::memory_order_acq_rel) == nullptr) return;
  // The child's runtime is built where the parent's copy is (runtime_storage):
  // what it takes from that copy is copied out first.
  runtime* parent = the_runtime.load(std::memory_order_acquire);
  const settings config = parent->config();
  const long pid = static_cast<long>(::getpid());
  char path[dump_file::path_capacity];
  const bool has_pid = std::strstr(config.output, "%p") != nullptr;
  const bool fits = has_pid ? expand_output_path(config.output, path, sizeof path, pid,
                                                 static_cast<long long>(std::time(nullptr)))
                            : child_output_path(parent->output_path(), pid, path, sizeof path);
  if (!fits) {
    report("the forked child's dump path is too long; tracing is off in pid %ld", pid);
    switch_flags_off();
    return;
  }
  {
    mutex_lock capture_lock(category_mutex);
    capture().restart_locked(clock_ns(CLOCK_MONOTONIC));
  }
  // Handles interned before fork() ("intern once at model load") are used
  // in the child too: it keeps the parent's names under the same ids. The
  // thread-exit key was inherited.
  runtime* rt = runtime::create(config, path, parent->exit_key(), parent->copy_names());
  if (!open_and_launch(rt)) switch_flags_off();
}

/// The child never writes to the parent's file: its copy of the flusher
/// thread does not exist and owner_pid_ no longer matches, which turns
/// flush(), shutdown and thread attach into no-ops. With EDGETRACE_FORK=
/// follow its flags stay on and its first event starts its own dump.
inline void fork_child() noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  const bool follow = rt != nullptr && rt->config().fork_follow && !rt->failed();
  current_ring = &sentinel_ring;  // the parent's ring copy is never drained here
  attached_ring = nullptr;
  if (follow) {
    pending_restart.store(&restart_in_child, std::memory_order_release);
  } else {
    set_recording_locked(false);  // category_mutex is held (lock_all)
  }
  if (rt != nullptr) rt->leave_in_child();  // its locks, and the child's copy of the dump's descriptor
  unloaded_libraries.lock_for_fork().unlock();
  category_mutex.unlock();
  restart_mutex.unlock();
}

/// Whether the other build of the runtime (header-only, or a separate
/// runtime) is already tracing in this process: files that disagree on
/// EDGETRACE_SEPARATE_RUNTIME link two runtimes (each name carries its
/// mode), and both would write EDGETRACE_OUTPUT. Called by each runtime
/// once, as it starts; the second to start says so and stays off.
inline bool other_runtime_started() noexcept {
  constexpr unsigned mine = EDGETRACE_SEPARATE_RUNTIME ? 2u : 1u;
  if ((abi::runtime_builds_started_word().fetch_or(mine) & ~mine) == 0) return false;
  report("this program mixes files built with and without EDGETRACE_SEPARATE_RUNTIME=1, so it holds two "
         "runtimes; only the first to start traces (build every file the same way)");
  return true;
}

inline bool start_from_environment() noexcept {
  check_unknown_variables();
  const char* output = std::getenv("EDGETRACE_OUTPUT");
  if (output == nullptr || *output == '\0') {
    if (output != nullptr) report("EDGETRACE_OUTPUT is empty; tracing is off");
    if (std::getenv("EDGETRACE_NVTX") != nullptr) {
      const settings config = read_settings();
      if (config.nvtx) start_hooks_only(config);
    }
    return false;
  }
  if (other_runtime_started()) return false;
  settings config = read_settings();
  choose_clock(config);
  char path[dump_file::path_capacity];
  if (!expand_output_path(config.output, path, sizeof path, static_cast<long>(::getpid()),
                          static_cast<long long>(std::time(nullptr)))) {
    report("EDGETRACE_OUTPUT is longer than %zu bytes; tracing is off", dump_file::path_capacity - 1);
    return false;
  }
  pthread_key_t exit_key;
  if (pthread_key_create(&exit_key, on_thread_exit) != 0) {
    report("cannot create a thread-exit key; tracing is off");
    return false;
  }
  if (!open_and_launch(runtime::create(config, path, exit_key))) return false;
  pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
  std::atexit(&shutdown);
  std::at_quick_exit(&quick_exit_shutdown);  // quick_exit() is a normal end too: the stream gets its end chunk
  if (config.nvtx) std::atexit(&report_missing_hooks);
  if (config.signal_flush) install_signal_flush();
  if (config.toggle_signal != 0 && !install_toggle_signal(config.toggle_signal)) config.toggle_signal = 0;
  if (config.flight) {
    install_crash_handlers();
    if (config.snapshot_signal != 0) install_snapshot_signal(config);
  }
  switch_flags_on(config);
  attach_current_thread();  // the starting thread (usually main) gets a ring now
  return true;
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

