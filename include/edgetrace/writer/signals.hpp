// SPDX-License-Identifier: MIT
// Signal handling: installing handlers over the app's (never over SIG_IGN), EDGETRACE_TOGGLE_SIGNAL, EDGETRACE_SIGNAL_FLUSH's SIGINT/SIGTERM hand-off to the flusher, and flight mode's snapshot signal and crash handlers.
//
// Handlers take no lock: they post to the runtime through atomics and
// chain to the disposition they replaced.
#pragma once

#include <edgetrace/writer/capture_control.hpp>
#include <edgetrace/writer/env.hpp>
#include <edgetrace/writer/flusher.hpp>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <iterator>

#include <pthread.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// True if `signo` is ignored now (an inherited SIG_IGN: nohup, a shell's
/// background job, a supervisor). A handler installed over it would change
/// what the signal does, here and in every program this one execs (exec
/// keeps SIG_IGN but resets a handler to SIG_DFL), so none is installed.
inline bool signal_ignored(int signo) noexcept {
  struct sigaction current;
  return sigaction(signo, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
         current.sa_handler == SIG_IGN;
}

/// Installs `handler` (an SA_SIGINFO handler, no signal masked while it
/// runs) for `signo` with `flags`, saving the old disposition in `previous`.
inline void install_handler(int signo, void (*handler)(int, siginfo_t*, void*), int flags,
                            struct sigaction* previous) noexcept {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | flags;
  sigemptyset(&action.sa_mask);
  sigaction(signo, &action, previous);
}

/// Puts `previous` back for `signo` where `ours` is still the installed
/// handler (one the app installed since stays). At the stream's end: a
/// runtime in a library that dlclose then unmaps must leave no handler
/// pointing into it.
inline void restore_handler(int signo, void (*ours)(int, siginfo_t*, void*), const struct sigaction& previous) noexcept {
  struct sigaction now;
  if (sigaction(signo, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == ours)
    sigaction(signo, &previous, nullptr);
}

/// EDGETRACE_TOGGLE_SIGNAL's handler: counts the signal for the flusher
/// (which applies it within EDGETRACE_FLUSH_MS) and chains to the handler
/// that was there before, if any. Async-signal-safe: one atomic add.
inline struct sigaction previous_toggle_action;

inline void toggle_signal_handler(int signo, siginfo_t* info, void* context) noexcept {
  const int saved_errno = errno;
  if (owned_runtime() != nullptr) capture().toggle_from_signal();
  const struct sigaction& previous = previous_toggle_action;
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signo, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signo);
  }
  errno = saved_errno;
}

/// Installs the toggle handler; false (and one stderr line) when the signal
/// is ignored (SIG_IGN inherited): that disposition is left alone, and
/// recording then starts at once rather than wait for a toggle that cannot
/// come.
inline bool install_toggle_signal(int signo) noexcept {
  if (signal_ignored(signo)) {
    report("EDGETRACE_TOGGLE_SIGNAL: %s is ignored in this process (SIG_IGN inherited), so it cannot toggle "
           "recording; recording from the start",
           signo == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
    return false;
  }
  install_handler(signo, &toggle_signal_handler, SA_RESTART, &previous_toggle_action);
  return true;
}

// ------------------------------------------------------------ signals

/// Dispositions that were in place before EDGETRACE_SIGNAL_FLUSH installed
/// its handler (written once at start-up, before the handler can run).
inline struct sigaction previous_sigint;
inline struct sigaction previous_sigterm;

/// SIGINT/SIGTERM handler: asks the flusher to write everything (it polls
/// the request at least every EDGETRACE_FLUSH_MS), waits at most 2 s, then
/// lets the previous disposition happen: the app's own handler is called,
/// or the default action (termination) proceeds via re-raise.
/// Async-signal-safe: atomics, nanosleep, sigaction, raise only.
inline void signal_flush_handler(int signo, siginfo_t* info, void* context) noexcept {
  const int saved_errno = errno;
  struct sigaction& previous = signo == SIGINT ? previous_sigint : previous_sigterm;
  const bool has_action = (previous.sa_flags & SA_SIGINFO) != 0;
  const bool is_default = !has_action && previous.sa_handler == SIG_DFL;
  runtime* rt = owned_runtime();
  if (rt != nullptr && rt->flusher_running() && !rt->failed()) rt->hand_signal(signo, is_default, 2000);
  if (has_action) {
    previous.sa_sigaction(signo, info, context);
  } else if (is_default) {
    sigaction(signo, &previous, nullptr);
    raise(signo);  // pending until this handler returns, then the default action
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signo);
  }
  errno = saved_errno;
}

inline void install_signal_flush() noexcept {
  if (!signal_ignored(SIGINT)) install_handler(SIGINT, &signal_flush_handler, SA_RESTART, &previous_sigint);
  if (!signal_ignored(SIGTERM)) install_handler(SIGTERM, &signal_flush_handler, SA_RESTART, &previous_sigterm);
}

/// The stream's end: the toggle and flush handlers go (flight mode's:
/// restore_flight_handlers).
inline void restore_signal_handlers(int toggle_signal) noexcept {
  if (toggle_signal != 0) restore_handler(toggle_signal, &toggle_signal_handler, previous_toggle_action);
  restore_handler(SIGINT, &signal_flush_handler, previous_sigint);
  restore_handler(SIGTERM, &signal_flush_handler, previous_sigterm);
}

// ------------------------------------------------------------ flight mode: the snapshot signal, crashes

/// The snapshot signal's disposition before its handler (restore_flight_handlers).
inline struct sigaction previous_snapshot_action;

/// EDGETRACE_SNAPSHOT_SIGNAL's handler (runtime_stream::snapshot_signal_received).
inline void snapshot_signal_handler(int, siginfo_t*, void*) noexcept {
  const int saved_errno = errno;
  if (runtime* rt = owned_runtime()) rt->snapshot_signal_received();
  errno = saved_errno;
}

/// Installs the snapshot signal's handler; false (and one stderr line) when
/// the signal is ignored (SIG_IGN inherited: left alone, as for
/// EDGETRACE_TOGGLE_SIGNAL) or already toggles recording.
inline bool install_snapshot_signal(const settings& config) noexcept {
  const char* name = config.snapshot_signal == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
  if (config.snapshot_signal == config.toggle_signal) {
    report("EDGETRACE_SNAPSHOT_SIGNAL: %s already toggles recording (EDGETRACE_TOGGLE_SIGNAL); no snapshot signal",
           name);
    return false;
  }
  if (signal_ignored(config.snapshot_signal)) {
    report("EDGETRACE_SNAPSHOT_SIGNAL: %s is ignored in this process (SIG_IGN inherited); no snapshot signal", name);
    return false;
  }
  install_handler(config.snapshot_signal, &snapshot_signal_handler, SA_RESTART, &previous_snapshot_action);
  return true;
}

/// The signals a flight recorder writes a crash snapshot on, and the
/// dispositions that were there before (written once at start-up, before
/// the handler can run).
inline constexpr int crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE};
inline struct sigaction previous_crash_actions[std::size(crash_signals)];

/// Whether `action` is a handler of the app's (not the default, not ignored).
inline bool app_handles(const struct sigaction& action) noexcept {
  if ((action.sa_flags & SA_SIGINFO) != 0) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

/// Runs the app's handler `action` as the kernel would have, with its mask.
inline void call_previous(const struct sigaction& action, int signo, siginfo_t* info, void* context) noexcept {
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &action.sa_mask, &before);
  if ((action.sa_flags & SA_SIGINFO) != 0)
    action.sa_sigaction(signo, info, context);
  else
    action.sa_handler(signo);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

/// Crash handler (flight mode): the snapshot (runtime::snapshot_on_crash),
/// then the previous disposition is put back and the signal takes its
/// course: a fault returns to the faulting instruction, which faults again
/// under the old disposition (a core dump, or the app's or a sanitizer's
/// handler); a sent signal (kill, raise, abort) is raised again, pending
/// until this handler returns. So the process dies as it would have.
/// A fault (SIGSEGV, SIGBUS) with a handler the app installed before
/// edgetrace goes to that handler first: see the body.
/// Async-signal-safe: atomics, nanosleep, open/write/close, sigaction, raise.
inline void crash_handler(int signo, siginfo_t* info, void* context) noexcept {
  const int saved_errno = errno;
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  std::size_t slot = 0;
  while (slot + 1 < std::size(crash_signals) && crash_signals[slot] != signo) ++slot;
  const struct sigaction& previous = previous_crash_actions[slot];
  if (info != nullptr && info->si_code > 0 && (signo == SIGSEGV || signo == SIGBUS) && app_handles(previous)) {
    // A fault, and the app had a handler of its own before edgetrace
    // started: it goes first, for it may repair the fault (memory mapped
    // lazily, a garbage collector's barrier, a JIT's guard page) and
    // return, and then nothing crashed. Still installed after it: handled
    // (the instruction runs again; a real crash comes back here). It put
    // the default action back to die of the fault: a crash, snapshot now.
    call_previous(previous, signo, info, context);
    struct sigaction now;
    const bool still_ours = sigaction(signo, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) != 0 &&
                            now.sa_sigaction == &crash_handler;
    if (!still_ours && owns_runtime(rt) && rt->flusher_running()) rt->snapshot_on_crash(signo);
    errno = saved_errno;
    return;
  }
  if (owns_runtime(rt) && rt->flusher_running()) rt->snapshot_on_crash(signo);
  sigaction(signo, &previous, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(signo);  // sent, not a fault: send it again
  errno = saved_errno;
}

/// The stream's end: the crash and snapshot handlers go where they are
/// still installed (signals.hpp, restore_handler).
inline void restore_flight_handlers(int snapshot_signal) noexcept {
  for (std::size_t i = 0; i < std::size(crash_signals); ++i)
    restore_handler(crash_signals[i], &crash_handler, previous_crash_actions[i]);
  if (snapshot_signal != 0) restore_handler(snapshot_signal, &snapshot_signal_handler, previous_snapshot_action);
}

/// Installs the crash handler on its own stack if the thread has one
/// (sigaltstack: a stack overflow needs it), leaving ignored signals alone.
inline void install_crash_handlers() noexcept {
  for (std::size_t i = 0; i < std::size(crash_signals); ++i)
    if (!signal_ignored(crash_signals[i]))
      install_handler(crash_signals[i], &crash_handler, SA_ONSTACK, &previous_crash_actions[i]);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
