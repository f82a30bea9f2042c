// SPDX-License-Identifier: MIT
// The flight recorder's signal handlers (EDGETRACE_MODE=flight): the snapshot signal, and the crash signals that write the window as the process dies.
//
// The recorder itself is a service of the runtime (writer/flight/service.hpp);
// its memory, rate limit and snapshot writer are in writer/flight/store.hpp.
#pragma once

#include <edgetrace/writer/flusher.hpp>
#include <edgetrace/writer/signals.hpp>

#include <cerrno>
#include <csignal>
#include <iterator>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

// ------------------------------------------------------------ flight recorder signals

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
