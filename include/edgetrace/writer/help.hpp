// SPDX-License-Identifier: MIT
// Overload, EDGETRACE_ON_FULL=wait: a thread whose ring fills faster than the flusher drains it encodes its own records for a while, instead of waiting for the flusher.
//
// When every core produces, the flusher's encoding is taken from the
// producers' cores anyway, with its wake-ups and the cache lines it pulls
// from another core on top; and a thread that sleeps until the flusher has
// room for it idles a core meanwhile. A thread that encodes its own
// records, while they are still in its cache, spends less and never idles
// (docs/PERFORMANCE.md, "Overload"). So a ring that passes half full (the
// flusher fell behind) is encoded by its own thread for help_window_ns,
// every help_batch records, through the same loop the flusher runs
// (ring_encoding::encode_known) and into the ring's own chunk buffers; the
// flusher then only seals and writes what it hands over. What a thread
// cannot encode alone (a site the flusher has not defined yet, an
// argument, an allocation) stops it: the flusher takes the ring back. A
// thread that has its ring's drain lock is no signal handler's to
// interrupt: signals are blocked for that time (microseconds), so a handler
// that waits for the flusher never waits for its own thread.
#pragma once

#include <edgetrace/face/ring.hpp>
#include <edgetrace/writer/encoding/ring_encoding.hpp>
#include <edgetrace/writer/flusher.hpp>

#include <csignal>
#include <cstddef>
#include <cstdint>

#include <pthread.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// How long a thread encodes its own records once its ring filled up: then
/// the flusher gets the ring back, and keeps it as long as it keeps up. A
/// ring that fills again soon after (within twice the window) gets twice
/// the window, up to help_window_max_ns: where the flusher has no core of
/// its own the thread ends up encoding all along, and where it has one a
/// passing hiccup costs the thread a few milliseconds of encoding.
inline constexpr std::uint64_t help_window_min_ns = 2000000u;
inline constexpr std::uint64_t help_window_max_ns = 1000000000u;
/// While it helps, a thread encodes its records every this many (384 KiB
/// of records: still in its L2 cache), so its ring stays mostly empty;
/// the two sigprocmask calls of a batch cost ~0.05 ns a span.
inline constexpr std::size_t help_batch = 16384;

/// What a helping drain came to.
enum class help_result {
  done,     ///< every published record encoded
  stopped,  ///< a record it cannot encode alone: the flusher's turn
  no_room,  ///< every chunk buffer waits for the flusher to write it
  busy,     ///< the flusher holds the ring now
};

/// help() with the ring's drain lock held.
inline help_result help_locked(runtime& rt, thread_ring& ring, ring_encoding& enc, bool& handed)
    EDGETRACE_DETAIL_REQUIRES(enc) {
  // The cache is trusted only as the flusher left it: same site table, no
  // library unloaded since (a record pushed after an unload must be read
  // with that unload's sites forgotten, which only the flusher does).
  if (!rt.may_help() || enc.generation != rt.site_generation() ||
      unloaded_libraries.epoch() != enc.unloaded_epoch)
    return help_result::stopped;
  std::uint64_t encoded = 0;
  bool ended_early = false;
  consume_runs_to(
      ring, ring.write_pos.own(),
      [&](record* first, record* last) EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
        const record* at = enc.encode_alone(first, last, ring.thread_id, encoded, handed);
        ended_early = at != last;
        return first + (at - first);
      },
      [] {});
  ring.written.store(ring.written.load(std::memory_order_relaxed) + encoded, std::memory_order_relaxed);
  ring.helped.store(ring.helped.load(std::memory_order_relaxed) + encoded, std::memory_order_relaxed);
  if (!ended_early) return help_result::done;
  return !enc.open() && !enc.can_start() ? help_result::no_room : help_result::stopped;
}

/// Encodes what the calling thread published in its own `ring`, as the
/// flusher would, and wakes the flusher when it has chunks to write or a
/// record to encode. Async-signal-safe (atomics, two sigprocmask and at
/// most one futex call); allocates nothing; never waits.
inline help_result help(runtime& rt, thread_ring& ring) noexcept {
  ring_encoding& enc = encoding_of(ring);
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  help_result result = help_result::busy;
  bool handed = false;
  if (enc.try_lock()) {
    result = help_locked(rt, ring, enc, handed);
    enc.unlock();
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if ((handed && enc.waiting() >= ring_encoding::buffer_count / 2) || result == help_result::stopped ||
      result == help_result::no_room)
    rt.wake_flusher();
  return result;
}

/// A full ring (wait_for_room): the flusher is behind, so this thread
/// encodes its own records now and, unless it met one it cannot encode
/// alone, for a window from now (help mode: help_window_min_ns, doubled
/// when the ring filled again soon after the last one). The room then.
inline std::size_t help_when_full(runtime& rt, thread_ring& ring) noexcept {
  const help_result result = help(rt, ring);
  if (result == help_result::stopped) {
    ring.help_until_ns.store(0, std::memory_order_relaxed);  // the flusher's again
  } else if (result != help_result::busy && ring.help_until_ns.load(std::memory_order_relaxed) == 0) {
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    const bool again = ring.help_ended_ns != 0 && now - ring.help_ended_ns < 2 * ring.help_window_ns;
    ring.help_window_ns = !again ? help_window_min_ns
                          : ring.help_window_ns < help_window_max_ns / 2 ? 2 * ring.help_window_ns
                                                                         : help_window_max_ns;
    ring.help_until_ns.store(now + ring.help_window_ns, std::memory_order_relaxed);
  }
  return refresh_room(ring);
}

/// After a slow push published its records: in help mode, or when every
/// CPU the process may use is busy (cpu_load: the flusher's encoding would
/// be taken from the app's threads anyway), encodes them and sets the
/// next slow path help_batch records on. Leaves help mode (false: the ring
/// is the flusher's again) when the CPUs are not all busy and the window
/// ran out, or when the thread met a record it cannot encode alone.
inline bool keep_helping(runtime& rt, thread_ring& ring) noexcept {
  std::uint64_t until = ring.help_until_ns.load(std::memory_order_relaxed);
  const bool saturated = rt.cpu_saturated();
  if ((until == 0 && !saturated) || on_flusher_thread) return false;  // the flusher's own records are its anyway
  const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
  if (saturated) {
    // Until two looks at the CPUs from now: a batch may take longer than
    // help_window_min_ns at a thread's own pace (16384 spans of ~1 us).
    until = now + 2 * cpu_load::sample_ns;
    ring.help_until_ns.store(until, std::memory_order_relaxed);
  } else if (now >= until) {
    ring.help_ended_ns = now;  // the window ran out: the next one may be longer
  }
  if (!rt.may_help() || now >= until || help(rt, ring) == help_result::stopped) {
    ring.help_until_ns.store(0, std::memory_order_relaxed);
    return false;
  }
  const std::size_t room = refresh_room(ring);
  record* const pos = ring.write_pos.load(std::memory_order_relaxed);
  if (room > help_batch && static_cast<std::size_t>(ring.write_limit - pos) > help_batch)
    ring.write_limit = pos + help_batch;
  return true;
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
