// SPDX-License-Identifier: MIT
// The process's life around the runtime: start from the environment, exit and quick_exit, fork (off or follow) and the restart in a forked child.
//
// The top room of the writer: it builds the runtime (writer/flusher.hpp),
// attaches the starting thread (writer/slow_path.hpp) and installs the
// handlers (writer/signals.hpp, writer/flight/runtime.hpp). The entry
// points the light headers declare are in writer/api.hpp.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/writer/exit_priority.hpp>
#include <edgetrace/writer/flight/runtime.hpp>
#include <edgetrace/writer/flusher.hpp>
#include <edgetrace/writer/registry.hpp>
#include <edgetrace/writer/signals.hpp>
#include <edgetrace/writer/slow_path.hpp>
#include <edgetrace/writer/platform/linux.hpp>

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
/// waited for at most 1 s (shutdown).
inline void end_stream(runtime* rt) noexcept {
  {
    mutex_lock lock(category_mutex);
    report_unmatched_filter_locked();
    set_recording_locked(false);
  }
  // The exiting thread records nothing more that the final pass could
  // see: retiring its ring now gets its pending loss written too.
  if (thread_ring* ring = attached_ring) {
    pthread_setspecific(rt->exit_key_, nullptr);
    retire_ring(rt, ring);
  }
  if (!rt->control_.stop()) return;
  // The final pass needs a CPU, which the app's busy threads would share
  // out among themselves (writer/exit_priority.hpp).
  static exit_priority others;  // static: 64 KiB, and shutdown runs once
  others.lower_others(rt->flusher_.tid());
  // Bounded: a reader that stopped reading, or a stuck file system, must
  // not hold the app's exit. After 1 s the app goes on exiting (the
  // flusher, stuck in the kernel, goes with the process).
  const bool done = rt->control_.wait_finished();
  const std::size_t lowered = others.lowered();
  const std::size_t kept = others.kept();
  others.restore();
  if (done) {
    rt->flusher_.join();
  } else if (rt->config_.flight && !rt->flight_ready()) {
    // The ring holds no record before it is faulted in (they wait in the
    // threads' rings), so there is nothing a snapshot could be made of.
    const std::size_t ring = rt->flight_faulting_bytes();
    const unsigned long long run_ms = (clock_ns(CLOCK_MONOTONIC) - rt->first_calibration().monotonic_ns) / 1000000u;
    if (ring == 0)
      report("EDGETRACE_MODE=flight: the flight ring was not mapped yet at exit, %llu ms after tracing began (the "
             "flusher had not reached it: memory was slow to come); no snapshot was written",
             run_ms);
    else
      report("EDGETRACE_MODE=flight: the %llu MiB ring was still being faulted in at exit, %llu MiB of it after %llu "
             "ms of the run; it holds no record until it is whole, so no snapshot was written (a smaller "
             "EDGETRACE_FLIGHT_MB is ready sooner)",
             static_cast<unsigned long long>(ring >> 20),
             static_cast<unsigned long long>(rt->flight_faulted_bytes() >> 20), run_ms);
  } else if (!rt->control_.opened()) {
    report("EDGETRACE_OUTPUT '%s' never opened (a FIFO that no process reads, or a stuck file system); nothing "
           "was written",
           rt->file_.path());
  } else if (rt->output_stalled(500000000u)) {
    report("EDGETRACE_OUTPUT '%s' took no data for 1 s at exit (a reader that stopped reading, or a stuck file "
           "system); the dump may lack its end",
           rt->file_.path());
  } else {
    report("the final pass over EDGETRACE_OUTPUT '%s' did not end within 1 s of exit, though the output took data "
           "(%zu other threads were still running on %d CPUs%s); the dump lacks its end: everything up to its last "
           "flush is there",
           rt->file_.path(), lowered + kept, rt->cpus(),
           kept != 0 ? ", at their own priority: without CAP_SYS_NICE it could not have been put back" : "");
  }
}

/// At exit, at quick_exit, and when the library that holds the runtime is
/// unloaded (its atexit handler runs at dlclose): the stream ends, then the
/// signal handlers the runtime installed go, where they are still the
/// installed ones. Left behind, a runtime's handlers pointed into its
/// unmapped library, and the next such signal crashed the app.
inline void shutdown() noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) return;
  if (rt->flusher_.running()) end_stream(rt);
  restore_signal_handlers(rt->config_.toggle_signal);
  if (rt->config_.flight) restore_flight_handlers(rt->config_.snapshot_signal);
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
inline void quick_exit_shutdown() noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) return;
  mutex* const locks[] = {&category_mutex, &rt->control_.lock_for_exit(), &rt->rings_.list_mutex(), &rt->names_.table_mutex()};
  for (int tries = 0;; ++tries) {
    std::size_t taken = 0;
    while (taken < 4 && locks[taken]->try_lock()) ++taken;
    for (std::size_t i = taken; i > 0; --i) locks[i - 1]->unlock();
    if (taken == 4) break;
    if (tries == 100) return;
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  shutdown();
}

// ------------------------------------------------------------ start-up

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


/// Prepares the process chunk and the first calibration pair, starts the
/// flusher, which opens rt->path_ (open_output), and waits at most
/// flusher_control::open_wait for the open. On failure: one stderr line, false. A
/// FIFO without a reader, or an open still blocked after the wait, does not
/// hold the app: tracing goes on into the rings and the flusher writes once
/// the output opens (exit then waits at most 1 s: shutdown).
inline bool open_and_launch(runtime* rt) noexcept {
  const std::uint64_t seed = clock_ns(CLOCK_MONOTONIC) ^ (static_cast<std::uint64_t>(rt->owner_pid_) << 32) ^
                             reinterpret_cast<std::uintptr_t>(rt);
  rt->set_writer_id(static_cast<std::uint32_t>((seed * 0x9E3779B97F4A7C15ull) >> 32) | 1u);
  {
    // Until the flusher starts, the starting thread holds the stream's
    // flusher-side state: nothing else runs on it yet.
    const playing_role starting(flusher_role);
    rt->read_triggers();
    rt->write_process_chunk();  // into the output buffer: the flusher writes it after the file header
    rt->write_calibration();
  }
  // The flusher blocks every signal: the app's handlers must run on the
  // app's threads, SIGINT/SIGTERM must not land on ours, and a SIGXFSZ from
  // a file-size limit must turn into EFBIG (reported) rather than a kill.
  const int error = rt->flusher_.start(&runtime::flusher_main, rt, "edgetrace");
  if (error != 0) {
    report("cannot start the flusher thread: %s; tracing is off", std::strerror(error));
    return false;
  }
  if (rt->control_.wait_open_failed()) {  // said so already (open_output); the flusher only ends
    rt->flusher_.join();
    return false;
  }
  rt->flusher_.running_for_good();
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
  update_capture_locked(why, owns_runtime(the_runtime.load(std::memory_order_acquire)));
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

/// Taken by the fork handlers so that the child never inherits one held.
inline mutex restart_mutex;

inline void fork_prepare() noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  restart_mutex.lock();
  category_mutex.lock();
  unloaded_mutex.lock();  // never held with another lock: any place in the order
  if (runtime* rt = the_runtime.load(std::memory_order_acquire)) {
    rt->names_.table_mutex().lock();
    rt->rings_.list_mutex().lock();
  }
}
inline void fork_parent() noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  if (runtime* rt = the_runtime.load(std::memory_order_acquire)) {
    rt->rings_.list_mutex().unlock();
    rt->names_.table_mutex().unlock();
  }
  unloaded_mutex.unlock();
  category_mutex.unlock();
  restart_mutex.unlock();
}

/// EDGETRACE_FORK=follow: builds a fresh runtime in the child (the parent's
/// is left as it was copied: destroying it could wait on the parent's
/// threads, which do not exist here). The atexit and atfork handlers and
/// the thread-exit key were inherited. Runs once (pending_restart).
inline void restart_in_child() noexcept {
  mutex_lock lock(restart_mutex);
  if (pending_restart.exchange(nullptr, std::memory_order_acq_rel) == nullptr) return;
  runtime* parent = the_runtime.load(std::memory_order_acquire);
  const settings config = parent->config_;
  const pthread_key_t exit_key = parent->exit_key_;
  char parent_path[dump_file::path_capacity];
  std::memcpy(parent_path, parent->file_.path(), sizeof parent_path);
  // Handles interned before fork() ("intern once at model load") are used
  // in the child too: it keeps the parent's names under the same ids.
  std::vector<std::string> names = parent->names_.copy_all();
  auto* rt = new (runtime_storage) runtime(config);
  rt->owner_pid_ = ::getpid();
  {
    mutex_lock capture_lock(category_mutex);
    capture().restart_locked(clock_ns(CLOCK_MONOTONIC));
  }
  rt->exit_key_ = exit_key;
  rt->names_.adopt_all(std::move(names));
  char* path = rt->file_.path();
  const bool has_pid = std::strstr(config.output, "%p") != nullptr;
  const bool fits = has_pid ? expand_output_path(config.output, path, dump_file::path_capacity,
                                                 static_cast<long>(rt->owner_pid_),
                                                 static_cast<long long>(std::time(nullptr)))
                            : child_output_path(parent_path, static_cast<long>(rt->owner_pid_), path,
                                                dump_file::path_capacity);
  if (!fits) report("the forked child's dump path is too long; tracing is off in pid %ld", static_cast<long>(rt->owner_pid_));
  if (!fits || !open_and_launch(rt)) switch_flags_off();
}

/// The child never writes to the parent's file: its copy of the flusher
/// thread does not exist and owner_pid_ no longer matches, which turns
/// flush(), shutdown and thread attach into no-ops. With EDGETRACE_FORK=
/// follow its flags stay on and its first event starts its own dump.
inline void fork_child() noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
  bool follow = false;
  if (runtime* rt = the_runtime.load(std::memory_order_acquire)) {
    rt->rings_.list_mutex().unlock();
    rt->names_.table_mutex().unlock();
    rt->file_.close();  // the child's copy (not a number the app reused)
    follow = rt->config_.fork_follow && !rt->failed();
  }
  current_ring = &sentinel_ring;  // the parent's ring copy is never drained here
  attached_ring = nullptr;
  if (follow) {
    pending_restart.store(&restart_in_child, std::memory_order_release);
  } else {
    set_recording_locked(false);
  }
  unloaded_mutex.unlock();
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
  auto* rt = new (runtime_storage) runtime(config);
  rt->owner_pid_ = ::getpid();
  if (!expand_output_path(config.output, rt->file_.path(), dump_file::path_capacity, static_cast<long>(rt->owner_pid_),
                          static_cast<long long>(std::time(nullptr)))) {
    report("EDGETRACE_OUTPUT is longer than %zu bytes; tracing is off", dump_file::path_capacity - 1);
    return false;
  }
  if (pthread_key_create(&rt->exit_key_, on_thread_exit) != 0) {
    report("cannot create a thread-exit key; tracing is off");
    return false;
  }
  if (!open_and_launch(rt)) return false;
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

