// SPDX-License-Identifier: MIT
// What a thread that runs GPU scopes shares with the flusher: its queue of
// finished scopes (owner -> flusher), the stack of event pairs the flusher
// hands back (flusher -> owner), the process-wide GPU state, and the
// tracker's entry points (declarations only, so GPU scopes work with a
// separate runtime: gpu/tracker.hpp defines them).
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/face/spsc.hpp>
#include <edgetrace/gpu/backend.hpp>
#include <edgetrace/writer/flusher_client.hpp>

#include <atomic>
#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Two timing events created together on one device, reused for ever.
struct gpu_event_pair {
  void* start;
  void* end;
  int device;
  gpu_event_pair* next;  ///< free-list / returned-stack link
};

/// One GPU scope as its thread hands it to the flusher (at scope end).
struct gpu_launch {
  gpu_event_pair* pair;      ///< null: no GPU time (the stream was capturing)
  void* stream;
  std::uint64_t word;        ///< the host span's record word (site pointer or named word)
  std::uint64_t begin_tick;  ///< the host span
  std::uint64_t end_tick;
  std::int32_t device;
  std::uint32_t flags;       ///< format::gpu_span_flag
};

/// Scopes a thread can hand over between two flusher cycles (slots of its
/// pending queue, 48 bytes each). A scope that finds no slot records its
/// host span only and is counted as skipped.
inline constexpr std::uint32_t gpu_pending_capacity = 1024;
/// Event pairs one thread may own (in flight plus idle): bounds what a
/// stalled GPU can make the tracker allocate.
inline constexpr std::uint32_t gpu_max_pairs_per_thread = 4096;
inline constexpr int gpu_max_devices_per_thread = 8;

/// What one thread shares with the flusher. Created on the thread's first
/// GPU scope (slow path), never freed: when the thread exits it goes to a
/// pool, events included, for the next thread.
///
/// Hand-off: `pending` is a single-producer/single-consumer queue of
/// launches (owner -> flusher; face/spsc.hpp, the primitive under the
/// record rings too). Events come back through `returned`, a stack the
/// flusher pushes onto and the owner empties whole: with a single consumer
/// that only ever takes everything, there is no ABA problem and no lock.
struct gpu_thread {
  /// Launches of finished scopes. Owner: refresh_room (reserve) and
  /// publish_one; flusher: consume (drain). Its own cache lines.
  spsc_queue<gpu_launch, gpu_pending_capacity> pending;

  // ---- owner side: written by the owning thread only.
  alignas(cache_line) std::uint32_t reserved = 0;  ///< slots held by scopes still open (nesting)
  /// The queue passed half full and the flusher was woken; cleared once
  /// it is below half again (one wake per filling, not per scope).
  bool woke_flusher = false;
  /// Pairs this state ever created. Owner: relaxed load + store; flusher:
  /// relaxed load for stats.
  std::atomic<std::uint32_t> pairs_created{0};
  /// Scopes that got no GPU time for lack of a slot or a pair, and of
  /// those, the ones for lack of a pair (all of the thread's pairs in
  /// flight: the GPU, or the flusher's resolution, is far behind). Owner:
  /// relaxed load + store (one writer); flusher: relaxed load for stats.
  std::atomic<std::uint64_t> skipped{0};
  std::atomic<std::uint64_t> skipped_no_pair{0};
  /// Owner's idle pairs, one list per device (owner only).
  struct device_free {
    int device;
    gpu_event_pair* head;
  };
  device_free free_lists[gpu_max_devices_per_thread] = {};
  int device_count = 0;
  /// Written under the registry mutex before the state is handed out, read
  /// by the flusher after taking the registry snapshot under that mutex.
  std::uint64_t os_tid = 0;

  // ---- flusher side.
  /// Pairs the flusher is done with: flusher pushes (CAS, release), owner
  /// takes the whole list (exchange, acquire).
  alignas(cache_line) std::atomic<gpu_event_pair*> returned{nullptr};

  // ---- rarely written.
  /// Set (release) by the owner's thread-exit hook; once the flusher sees
  /// it (acquire) and drained `pending`, the state is idle and may be pooled.
  alignas(cache_line) std::atomic<bool> retired{false};
  gpu_thread* next_free = nullptr;  ///< pool link (registry mutex)

  /// Owner: holds a slot for a scope until it ends, so nested scopes never
  /// find the queue full at their end. Cost: one acquire load; and when
  /// the queue passes half full, one wake of the flusher (a burst between
  /// two of its periods would fill it up otherwise).
  bool reserve() noexcept {
    const std::size_t room = refresh_room(pending);
    if (room <= reserved) return false;
    const bool filling = room < gpu_pending_capacity / 2;
    if (filling && !woke_flusher) wake_flusher_early();
    woke_flusher = filling;
    ++reserved;
    return true;
  }
  /// Owner: fills the reserved slot and publishes it.
  void publish(const gpu_launch& launch) noexcept {
    publish_one(pending, launch);
    --reserved;
  }
  void unreserve() noexcept { --reserved; }

  /// Flusher: calls `visit(const gpu_launch&)` for every published launch
  /// in order, then frees their slots. Returns how many there were.
  template <class Visit>
  std::size_t drain(Visit&& visit) {
    return consume(pending, visit);
  }

  /// Owner: counts a scope that got no GPU time (one writer: no RMW);
  /// `no_pair`: every pair was in flight (else the queue was full).
  void skip(bool no_pair = false) noexcept {
    skipped.store(skipped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (no_pair)
      skipped_no_pair.store(skipped_no_pair.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  device_free* free_list(int device, bool add) noexcept {
    for (int i = 0; i < device_count; ++i)
      if (free_lists[i].device == device) return &free_lists[i];
    if (!add || device_count == gpu_max_devices_per_thread) return nullptr;
    free_lists[device_count] = {device, nullptr};
    return &free_lists[device_count++];
  }
  /// Owner: an idle pair goes back on its device's list.
  void keep(gpu_event_pair* pair) noexcept {
    if (device_free* list = free_list(pair->device, true)) {
      pair->next = list->head;
      list->head = pair;
    }
  }
  /// Owner: an idle pair for `device`, from the free list, else from what
  /// the flusher returned; null when there is none.
  gpu_event_pair* reuse(int device) noexcept {
    device_free* list = free_list(device, false);
    if (list == nullptr || list->head == nullptr) {
      gpu_event_pair* back = returned.exchange(nullptr, std::memory_order_acquire);
      while (back != nullptr) {
        gpu_event_pair* next = back->next;
        keep(back);
        back = next;
      }
      list = free_list(device, false);
      if (list == nullptr || list->head == nullptr) return nullptr;
    }
    gpu_event_pair* pair = list->head;
    list->head = pair->next;
    return pair;
  }
  /// Flusher: hands a pair back to its owner.
  void give_back(gpu_event_pair* pair) noexcept {
    pair->next = returned.load(std::memory_order_relaxed);
    while (!returned.compare_exchange_weak(pair->next, pair, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }
};

/// The calling thread's state; null until its first GPU scope.
inline thread_local gpu_thread* current_gpu_thread EDGETRACE_DETAIL_TLS_MODEL = nullptr;

enum gpu_state_value : std::uint8_t {
  gpu_unknown = 0,  ///< no GPU scope ran yet
  gpu_on = 1,       ///< GPU spans are recorded
  gpu_off = 2,      ///< for good: no GPU, no driver, EDGETRACE_CUDA=0, an error, or exit
};

/// GPU spans' state. Scopes load it with acquire (it publishes gpu_api);
/// it only ever moves from unknown to on or off, and to off.
inline std::atomic<std::uint8_t> gpu_state{gpu_unknown};

/// The backend every GPU call goes through: written once by gpu_start,
/// before gpu_state turns on (release) and before the tracker registers
/// with the flusher (release); scopes read it after loading gpu_on
/// (acquire), the flusher after its registration.
inline const gpu_backend* gpu_api = nullptr;

// ---- The tracker's entry points (gpu/tracker.hpp; with
// EDGETRACE_SEPARATE_RUNTIME=1 compiled once, in the runtime's TU).

/// The first GPU scope of the process (callers are serialised here): when
/// tracing is active, checks that the GPU works through `backend` and
/// turns GPU spans on or off (one stderr line). Returns gpu_state.
EDGETRACE_DETAIL_API std::uint8_t gpu_start(const gpu_backend* backend) noexcept;
/// Gives the calling thread its state (a pooled one, with its events, or a
/// new one), installs it in current_gpu_thread and arms a thread-exit hook
/// that retires it. Slow path, once per thread; null when out of memory.
EDGETRACE_DETAIL_API gpu_thread* gpu_attach_thread() noexcept;
/// Turns GPU spans off for good after `call` failed with `error`: one
/// stderr line, the error cleared from the calling thread, the reason
/// written to the dump.
EDGETRACE_DETAIL_API void gpu_turn_off(const char* call, int error) noexcept;

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
