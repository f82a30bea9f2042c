// SPDX-License-Identifier: MIT
// Signal handling: installing handlers over the app's (never over SIG_IGN), EDGETRACE_TOGGLE_SIGNAL and EDGETRACE_SIGNAL_FLUSH's SIGINT/SIGTERM hand-off to the flusher.
//
// Handlers take no lock: they post to the runtime through atomics and
// chain to the disposition they replaced. Flight mode's snapshot and crash
// handlers are in writer/flight/signals.hpp.
#pragma once

#include <edgetrace/writer/capture_control.hpp>
#include <edgetrace/writer/env.hpp>
#include <edgetrace/writer/flusher.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>

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

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
