// SPDX-License-Identifier: MIT
// The GPU scope: a host span plus a pair of GPU events around what the
// scope enqueues on a stream, handed to the flusher at scope end
// (gpu/handoff.hpp). Its begin and end are out of line; they reach
// the tracker only through its declared entry points.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/site.hpp>
#include <edgetrace/face/span_scope.hpp>
#include <edgetrace/face/tick.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/gpu/backend.hpp>
#include <edgetrace/gpu/handoff.hpp>

#include <atomic>
#include <cstdint>
#include <new>
#include <type_traits>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Ends a host span begun in `mode` with begin value `begin` (a tick, or
/// a span_begin_slow value when the mode has other bits than the clock's);
/// returns the end tick.
inline std::uint64_t host_span_end(std::uint64_t word, std::uint64_t begin, std::uint8_t mode) noexcept {
  if ((mode & ~mode_clock_bits) != 0) return span_end_slow(word, begin);  // hooks, and the push when recording
  const std::uint64_t end = ticks(mode);
  push(word, begin, end);
  return end;
}

/// What a GPU scope carries from its start to its end.
struct gpu_scope_state {
  gpu_event_pair* pair = nullptr;
  void* stream = nullptr;
  std::int32_t device = 0;
  std::uint32_t flags = 0;
  bool active = false;  ///< a pending slot is reserved: the end publishes
};

/// The capture status of `stream`, the legacy stream during another
/// stream's capture counting as capturing. Returns the CUDA error.
inline int gpu_capture_status(void* stream, int& capture) noexcept {
  capture = gpu_capture_none;
  const int error = gpu_api->stream_capture_status(stream, &capture);
  if (error != gpu_error_capture_implicit) return error;
  capture = gpu_capture_active;
  return gpu_success;
}

/// An idle event pair of `device` for the owner thread `t`: a pooled one,
/// else (warm-up, within gpu_max_pairs_per_thread) a new one. Null when
/// every pair is in flight, or after turning GPU spans off when creating
/// the events failed (`failed` is set then).
inline gpu_event_pair* gpu_take_pair(gpu_thread& t, int device, bool& failed) noexcept {
  gpu_event_pair* pair = t.reuse(device);
  const std::uint32_t created = t.pairs_created.load(std::memory_order_relaxed);
  if (pair != nullptr || created >= gpu_max_pairs_per_thread) return pair;
  void* start = nullptr;
  void* end = nullptr;
  int error = gpu_api->event_create(&start);
  if (error == gpu_success) error = gpu_api->event_create(&end);
  if (error != gpu_success) {
    failed = true;
    gpu_turn_off("cudaEventCreate", error);
    return nullptr;
  }
  pair = new (std::nothrow) gpu_event_pair{start, end, device, nullptr};
  if (pair != nullptr) t.pairs_created.store(created + 1, std::memory_order_relaxed);
  return pair;
}

/// Start of a GPU scope, after its host begin tick: reserves a hand-off
/// slot and records the start event on `stream`, unless the stream is
/// capturing a CUDA graph (then only the host span is recorded, flagged).
/// Cost after warm-up: cudaGetDevice, cudaStreamIsCapturing and
/// cudaEventRecord, no lock, no allocation. A template so it can be
/// noinline in a header.
template <class = void>
EDGETRACE_DETAIL_NOINLINE void gpu_scope_begin(gpu_scope_state& s, void* stream, const gpu_backend* backend) noexcept {
  std::uint8_t state = gpu_state.load(std::memory_order_acquire);
  if (EDGETRACE_DETAIL_UNLIKELY(state == gpu_unknown)) state = gpu_start(backend);
  if (state != gpu_on) return;
  gpu_thread* t = current_gpu_thread;
  if (EDGETRACE_DETAIL_UNLIKELY(t == nullptr)) {
    t = gpu_attach_thread();
    if (t == nullptr) return;
  }
  int device = 0;
  int error = gpu_api->current_device(&device);
  if (error != gpu_success) return gpu_turn_off("cudaGetDevice", error);
  int capture = gpu_capture_none;
  error = gpu_capture_status(stream, capture);
  if (error != gpu_success) return gpu_turn_off("cudaStreamIsCapturing", error);
  if (!t->reserve()) return t->skip();
  s.stream = stream;
  s.device = device;
  s.active = true;
  if (capture != gpu_capture_none) {
    s.flags = format::gpu_span_captured;  // never record into a capture: it would become part of the graph
    return;
  }
  bool failed = false;
  gpu_event_pair* pair = gpu_take_pair(*t, device, failed);
  if (pair == nullptr) {
    t->unreserve();
    s.active = false;
    if (!failed) t->skip(true);  // every pair in flight: the GPU is far behind
    return;
  }
  error = gpu_api->event_record(pair->start, stream);
  if (error != gpu_success) {
    t->keep(pair);
    t->unreserve();
    s.active = false;
    return gpu_turn_off("cudaEventRecord", error);
  }
  s.pair = pair;
}

/// End of a GPU scope that reserved a slot: records the end event (unless
/// the stream started capturing meanwhile), takes the host end tick, ends
/// the host span (scope hooks included) and publishes the launch to the
/// flusher. `begin` is the scope's begin value: a tick, or a slow_begin_flag
/// value when the mode has hooks.
template <class = void>
EDGETRACE_DETAIL_NOINLINE void gpu_scope_end(gpu_scope_state& s, std::uint64_t word, std::uint64_t begin,
                                             std::uint8_t mode) noexcept {
  gpu_thread* t = current_gpu_thread;
  if (t == nullptr) {  // a forked child ending a scope its parent began
    host_span_end(word, begin, mode);
    return;
  }
  if (s.pair != nullptr) {
    bool recorded = false;
    if (gpu_state.load(std::memory_order_acquire) == gpu_on) {
      int capture = gpu_capture_none;
      int error = gpu_capture_status(s.stream, capture);
      if (error != gpu_success) {
        gpu_turn_off("cudaStreamIsCapturing", error);
      } else if (capture != gpu_capture_none) {
        s.flags |= format::gpu_span_captured;
      } else if ((error = gpu_api->event_record(s.pair->end, s.stream)) != gpu_success) {
        gpu_turn_off("cudaEventRecord", error);
      } else {
        recorded = true;
      }
    }
    if (!recorded) {
      t->keep(s.pair);
      s.pair = nullptr;
      if ((s.flags & format::gpu_span_captured) == 0) s.flags |= format::gpu_span_unresolved;
    }
  }
  // The launch repeats the host span's exact ticks: that is how a reader
  // links the two.
  const std::uint64_t end = host_span_end(word, begin, mode);
  t->publish(gpu_launch{s.pair, s.stream, word, begin & slow_begin_tick_mask, end, s.device, s.flags});
}

/// A span of category `Category` plus, when GPU spans are on, the GPU time
/// of what the scope enqueued on `stream`. Disabled category: one relaxed
/// load and a branch, no CUDA call. Scope hooks (NVTX) see it as a span;
/// while nothing is recorded (hooks only, or EDGETRACE_START_AFTER waiting
/// for marks) no CUDA call is made either.
template <class Category>
class gpu_span_scope {
 public:
  template <class SiteFn>
  EDGETRACE_DETAIL_ALWAYS_INLINE gpu_span_scope(SiteFn site_fn, void* stream, const gpu_backend* backend) noexcept {
    const std::uint8_t mode = Category::state.enabled.load(order_relaxed);
    if (mode != clock_off) start(pack_site(&site_fn()), mode, stream, backend);
  }
  EDGETRACE_DETAIL_ALWAYS_INLINE gpu_span_scope(named_tag, name_handle handle, void* stream,
                                                const gpu_backend* backend) noexcept {
    const std::uint8_t mode = Category::state.enabled.load(order_relaxed);
    if (mode != clock_off)
      start(named_word<Category>(handle), mode, stream, backend);
  }
  EDGETRACE_DETAIL_ALWAYS_INLINE ~gpu_span_scope() {
    if (word_ == 0) return;
    if (gpu_.active)
      gpu_scope_end(gpu_, word_, begin_, mode_);
    else
      host_span_end(word_, begin_, mode_);
  }
  gpu_span_scope(const gpu_span_scope&) = delete;
  gpu_span_scope& operator=(const gpu_span_scope&) = delete;

 private:
  EDGETRACE_DETAIL_ALWAYS_INLINE void start(std::uint64_t word, std::uint8_t mode, void* stream,
                                            const gpu_backend* backend) noexcept {
    word_ = word;
    mode_ = mode;
    begin_ = (mode & ~mode_clock_bits) == 0 ? ticks(mode) : span_begin_slow(word, mode);
    if ((mode & mode_clock_bits) != clock_off && (mode & mode_count_marks) == 0)
      gpu_scope_begin(gpu_, stream, backend);
  }

  std::uint64_t word_ = 0;  ///< 0 = not recording
  std::uint64_t begin_ = 0;  ///< a tick, or a slow_begin_flag value (span_begin_slow)
  std::uint8_t mode_ = clock_off;
  gpu_scope_state gpu_;
};

template <class Category>
using gpu_scope_t = std::conditional_t<Category::compiled_in, gpu_span_scope<Category>, null_scope>;

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

/// A span named by the literal `name` plus the GPU time of the work the
/// scope enqueues on `stream` (a void*), measured through `backend`.
/// cuda.hpp's EDGETRACE_CUDA_SCOPE is the user-facing form.
#define EDGETRACE_DETAIL_GPU_SCOPE(cat, name, stream, backend)                                                       \
  [[maybe_unused]] const ::edgetrace::detail::gpu_scope_t<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)>                      \
      EDGETRACE_DETAIL_UNIQUE(edgetrace_gpu_scope_) {                                                                \
    EDGETRACE_DETAIL_SITE(cat, name, ::edgetrace::format::site_kind::span),                                          \
        EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::compiled_in ? static_cast<void*>(stream) : nullptr, (backend)          \
  }

/// The same with a run-time name from edgetrace::intern().
#define EDGETRACE_DETAIL_GPU_SCOPE_NAMED(cat, handle, stream, backend)                                               \
  [[maybe_unused]] const ::edgetrace::detail::gpu_scope_t<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)>                      \
      EDGETRACE_DETAIL_UNIQUE(edgetrace_gpu_scope_) {                                                                \
    ::edgetrace::detail::named_tag{},                                                                                \
        EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::compiled_in ? ::edgetrace::name_handle(handle)                         \
                                                         : ::edgetrace::name_handle{},                               \
        EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::compiled_in ? static_cast<void*>(stream) : nullptr, (backend)          \
  }
