// SPDX-License-Identifier: MIT
// The GPU side of the process: start-up (is there a working GPU?), the
// registry of threads that run GPU scopes, and the flusher client that
// takes their launches, resolves event pairs per stream in FIFO order,
// takes clock anchors and writes gpu chunks. Header-only builds compile it
// inline (gpu/spans.hpp includes it); with EDGETRACE_SEPARATE_RUNTIME=1 it
// is compiled once, in the runtime's TU (runtime_impl.hpp).
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/face/entry_points.hpp>
#include <edgetrace/face/tick.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/gpu/backend.hpp>
#include <edgetrace/gpu/handoff.hpp>
#include <edgetrace/gpu/records.hpp>
#include <edgetrace/writer/env.hpp>
#include <edgetrace/writer/flusher_client.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <utility>
#include <vector>

#include <pthread.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Spans the flusher resolves in one periodic cycle (2 CUDA calls each).
inline constexpr std::uint32_t gpu_resolve_budget = 4096;
/// Spans resolved between two looks at the threads' launch queues.
inline constexpr std::uint32_t gpu_resolve_batch = 512;
/// Anchor samples per measurement: the tightest bracket wins.
inline constexpr int gpu_anchor_samples = 5;
/// How long one anchor sample may take to complete before it is dropped.
inline constexpr std::uint64_t gpu_anchor_timeout_ns = 2000000;
/// At exit: how long the flusher waits for events still in flight.
inline constexpr std::uint64_t gpu_final_wait_ns = 500000000;

/// The GPU side of the process: start-up, the thread registry, and the
/// flusher client that resolves events and writes gpu chunks.
class gpu_tracker : public flusher_client {
 public:
  gpu_tracker() noexcept { poll = &poll_entry; }

  // ---- set once by start() before the client is registered and gpu_state
  // turns on (both release), then read-only
  pid_t owner_pid_ = 0;
  int device_count_ = 0;
  int driver_version_ = 0;
  int runtime_version_ = 0;

  // ---- thread registry (mutex_)
  std::mutex mutex_;
  std::vector<gpu_thread*> threads_;  ///< active, read by the flusher
  std::vector<gpu_thread*> all_;      ///< every state ever created (stats)
  gpu_thread* pool_ = nullptr;        ///< states of exited threads

  /// Why GPU spans are off: written once by whoever switched them off,
  /// before the release store of off_reason_ready_; the flusher reads it
  /// after an acquire load and writes it to the dump.
  char off_reason_[320] = {};
  std::atomic<bool> off_reason_ready_{false};
  /// Set (release) by the atexit handler: resolve what is left, then stop.
  std::atomic<bool> final_requested_{false};
  /// The tracker start() ran on (the process's one), for at_exit.
  static inline gpu_tracker* started_ = nullptr;

  // ------------------------------------------------------------ any thread

  /// Turns GPU spans off for good. The first caller clears the CUDA error
  /// its failed call left in its thread (so the app does not see it as its
  /// own) and, unless `quiet`, says so in one stderr line.
  void turn_off(const char* call, int error, bool quiet = false) noexcept {
    if (gpu_state.exchange(gpu_off, std::memory_order_acq_rel) == gpu_off) return;
    const char* text = nullptr;
    if (gpu_api != nullptr && error != gpu_success) {
      gpu_api->clear_error();
      text = gpu_api->error_string(error);
    }
    if (error == gpu_success)
      std::snprintf(off_reason_, sizeof off_reason_, "%s", call);
    else
      std::snprintf(off_reason_, sizeof off_reason_, "CUDA error in %s: %s (error %d)", call,
                    text != nullptr ? text : "unknown error", error);
    off_reason_ready_.store(true, std::memory_order_release);
    if (!quiet) report("%s; GPU spans are off, host spans continue", off_reason_);
  }

  /// At exit (registered by start()): the flusher's final pass waits for
  /// events still in flight.
  static void at_exit() noexcept {
    if (gpu_state.load(std::memory_order_acquire) != gpu_on || started_ == nullptr) return;
    started_->final_requested_.store(true, std::memory_order_release);
    flush();
  }

  /// A forked child never touches the parent's CUDA state.
  static void fork_child() noexcept {
    gpu_state.store(gpu_off, std::memory_order_relaxed);
    current_gpu_thread = nullptr;
  }

  /// The first GPU scope of the process: checks that CUDA works. On any
  /// failure one stderr line, and GPU spans stay off (host spans go on).
  void start(const gpu_backend* backend) noexcept {
    owner_pid_ = ::getpid();
    keep_loaded(*backend);  // before any registration: the flusher calls this code from then on
    if (env_choice("EDGETRACE_CUDA", {"1", "0"}) == 1) {
      turn_off("EDGETRACE_CUDA=0", gpu_success, true);
      register_flusher_client(*this);  // writes the reason to the dump
      return;
    }
    gpu_api = backend;
    int count = 0;
    const int error = backend->device_count(&count);
    if (backend->driver_version(&driver_version_) != gpu_success) driver_version_ = 0;
    if (backend->runtime_version(&runtime_version_) != gpu_success) runtime_version_ = 0;
    if (error != gpu_success || count <= 0) return unavailable(*backend, error);
    device_count_ = count;
    pthread_atfork(nullptr, nullptr, &fork_child);
    // Registered after the CUDA runtime initialised, so it runs before
    // the runtime's own teardown (atexit order is last in, first out).
    started_ = this;
    std::atexit(&at_exit);
    // Every field above is written before registration publishes the
    // client (release), so the flusher sees them all.
    register_flusher_client(*this);
    gpu_state.store(gpu_on, std::memory_order_release);
  }

  /// Gives the calling thread its state: a pooled one (with its events) or
  /// a new one. Slow path, once per thread.
  gpu_thread* attach() noexcept {
    gpu_thread* t = nullptr;
    const auto tid = static_cast<std::uint64_t>(os::thread_id());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pool_ != nullptr) {
        t = pool_;
        pool_ = t->next_free;
        t->next_free = nullptr;
        t->retired.store(false, std::memory_order_relaxed);
      }
    }
    if (t == nullptr) {
      t = new (std::nothrow) gpu_thread;
      if (t == nullptr) return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    t->os_tid = tid;
    if (std::find(all_.begin(), all_.end(), t) == all_.end()) all_.push_back(t);
    threads_.push_back(t);
    return t;
  }

  // ------------------------------------------------------------ flusher

 private:
  struct stream_key {
    int device;
    std::uintptr_t handle;
    std::uint64_t owner_tid;  ///< the per-thread default stream is one stream per thread
    bool operator<(const stream_key& o) const noexcept {
      return std::tie(device, handle, owner_tid) < std::tie(o.device, o.handle, o.owner_tid);
    }
  };
  struct stream_state {
    std::uint32_t id = 0;
    std::deque<gpu_in_flight> queue;  ///< in record order: the stream completes them in this order
  };
  struct device_state {
    bool ready = false;  ///< private stream and events exist, device record written
    void* stream = nullptr;
    void* anchor = nullptr;  ///< event of the latest anchor: spans are timed from it
    bool has_anchor = false;
    std::uint64_t anchor_seq = 0;
    std::uint64_t next_seq = 0;
    void* samples[gpu_anchor_samples] = {};
    std::uint64_t next_anchor_ns = 0;
  };

  // ---- flusher only
  std::vector<gpu_thread*> snapshot_;
  std::map<stream_key, stream_state> streams_;
  std::map<int, device_state> devices_;
  std::uint32_t next_stream_id_ = 1;
  gpu_totals totals_;
  gpu_chunk_writer records_;
  bool header_written_ = false;      ///< runtime record
  bool off_written_ = false;         ///< off record
  bool flusher_ready_ = false;       ///< capture mode relaxed on the flusher thread
  bool closed_ = false;              ///< final pass done: no CUDA call any more
  std::uint64_t stats_written_ns_ = 0;
  bool stats_dirty_ = false;

  static void poll_entry(flusher_client& self, flusher_output& out, poll_reason why) noexcept {
    static_cast<gpu_tracker&>(self).serve(out, why);
  }

  /// Keeps the objects whose code the flusher calls from now on (this
  /// tracker's poll and the backend's calls; a library that includes the
  /// GPU scopes holds both, header-only) loaded until the process ends
  /// (RTLD_NODELETE). Otherwise dlclose of such a library, opened with
  /// dlopen, unmapped them under the flusher, which died of SIGSEGV once
  /// the threads that ran its GPU scopes had exited (until then their
  /// thread_local destructors keep it). The executable is never unloaded.
  void keep_loaded(const gpu_backend& backend) noexcept {
    os::keep_loaded(os::code_address(poll), backend.open_library);
    os::keep_loaded(os::code_address(backend.event_query), backend.open_library);
  }

  bool on() const noexcept { return gpu_state.load(std::memory_order_acquire) == gpu_on && !closed_; }

  /// start() found no usable GPU: the reason (with the versions) goes to
  /// stderr and into the dump; GPU spans stay off.
  void unavailable(const gpu_backend& backend, int error) noexcept {
    char versions[96];
    std::snprintf(versions, sizeof versions, "driver %d.%d, runtime %d.%d", driver_version_ / 1000,
                  driver_version_ % 1000 / 10, runtime_version_ / 1000, runtime_version_ % 1000 / 10);
    if (driver_version_ == 0)
      std::snprintf(versions, sizeof versions, "no driver, runtime %d.%d", runtime_version_ / 1000,
                    runtime_version_ % 1000 / 10);
    const char* text = error != gpu_success ? backend.error_string(error) : "no CUDA device";
    if (error != gpu_success) backend.clear_error();
    std::snprintf(off_reason_, sizeof off_reason_, "CUDA unavailable: cudaGetDeviceCount: %s (error %d; %s)",
                  text != nullptr ? text : "unknown error", error, versions);
    off_reason_ready_.store(true, std::memory_order_release);
    gpu_state.store(gpu_off, std::memory_order_release);
    report("%s; GPU spans are off, host spans continue", off_reason_);
    register_flusher_client(*this);
  }

  void write_runtime(flusher_output& out) {
    if (header_written_) return;
    header_written_ = true;
    records_.runtime(out, driver_version_, runtime_version_, device_count_, gpu_api != nullptr ? gpu_api->name : "none");
  }

  void write_off(flusher_output& out) {
    if (off_written_ || !off_reason_ready_.load(std::memory_order_acquire)) return;
    off_written_ = true;
    records_.off(out, off_reason_);
  }

  void write_stats(flusher_output& out) {
    std::uint64_t skipped = 0, no_pair = 0, pairs = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const gpu_thread* t : all_) {
        skipped += t->skipped.load(std::memory_order_relaxed);
        no_pair += t->skipped_no_pair.load(std::memory_order_relaxed);
        pairs += t->pairs_created.load(std::memory_order_relaxed);
      }
    }
    records_.stats(out, totals_, skipped, pairs, no_pair);
    stats_dirty_ = false;
  }

  void write_span(flusher_output& out, std::uint32_t flags, std::uint32_t stream, const gpu_in_flight& f,
                  std::uint64_t anchor_seq = 0, std::int64_t offset_ns = 0, std::uint64_t duration_ns = 0) {
    records_.span(out, flags, stream, f, anchor_seq, offset_ns, duration_ns);
    stats_dirty_ = true;
  }

  stream_state& stream_for(flusher_output& out, int device, void* handle, std::uint64_t os_tid) {
    const auto value = reinterpret_cast<std::uintptr_t>(handle);
    const stream_key key{device, value, value == format::gpu_stream_per_thread ? os_tid : 0};
    stream_state& s = streams_[key];
    if (s.id == 0) {
      s.id = next_stream_id_++;
      devices_[device];  // known from now on: gets a private stream and anchors
      records_.stream(out, s.id, device, value, key.owner_tid);
    }
    return s;
  }

  /// Moves every launch the threads published into the stream queues.
  /// Returns how full the fullest thread's queue was (0..1).
  double intake(flusher_output& out) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      snapshot_ = threads_;
    }
    double fullest = 0;
    for (gpu_thread* t : snapshot_) {
      // Acquire pairs with the exit hook's release: every launch published
      // before the thread retired is visible below.
      const bool retired = t->retired.load(std::memory_order_acquire);
      const std::size_t taken = t->drain([&](const gpu_launch& launch) { accept(out, *t, launch); });
      fullest = std::max(fullest, static_cast<double>(taken) / static_cast<double>(gpu_pending_capacity));
      if (retired) {
        std::lock_guard<std::mutex> lock(mutex_);
        threads_.erase(std::find(threads_.begin(), threads_.end(), t));
        t->next_free = pool_;
        pool_ = t;
      }
    }
    return fullest;
  }

  void accept(flusher_output& out, gpu_thread& owner, const gpu_launch& launch) {
    stream_state& s = stream_for(out, launch.device, launch.stream, owner.os_tid);
    const gpu_in_flight f{launch.pair,      &owner, out.site_id(launch.word), owner.os_tid, launch.begin_tick,
                          launch.end_tick};
    ++totals_.launches;
    if (launch.pair == nullptr && (launch.flags & format::gpu_span_captured) != 0) {
      ++totals_.captured;
      write_span(out, launch.flags, s.id, f);
    } else if (launch.pair == nullptr) {  // GPU spans went off while the scope was open
      ++totals_.unresolved;
      write_span(out, launch.flags | format::gpu_span_unresolved, s.id, f);
    } else if (!on()) {
      ++totals_.unresolved;
      write_span(out, launch.flags | format::gpu_span_unresolved, s.id, f);
      owner.give_back(launch.pair);
    } else {
      s.queue.push_back(f);
    }
  }

  /// Flusher thread, once: stream capture in other threads must never make
  /// the flusher's calls illegal (or invalidate their capture).
  bool prepare_flusher() {
    if (flusher_ready_) return true;
    const int error = gpu_api->relax_capture_mode();
    if (error != gpu_success) {
      turn_off("cudaThreadExchangeStreamCaptureMode", error);
      return false;
    }
    flusher_ready_ = true;
    return true;
  }

  bool check(const char* call, int error) noexcept {
    if (error == gpu_success) return true;
    // At exit the CUDA runtime may already be gone: not worth a warning.
    turn_off(call, error, error == gpu_error_cudart_unloading);
    return false;
  }

  /// A device's private stream, anchor events and device record.
  bool prepare_device(flusher_output& out, int device, device_state& d) {
    if (d.ready) return true;
    if (!check("cudaSetDevice", gpu_api->set_device(device))) return false;
    gpu_device_properties properties{};
    if (!check("cudaGetDeviceProperties", gpu_api->device_properties(device, &properties))) return false;
    if (!check("cudaStreamCreateWithFlags", gpu_api->stream_create(&d.stream))) return false;
    if (!check("cudaEventCreate", gpu_api->event_create(&d.anchor))) return false;
    for (void*& sample : d.samples)
      if (!check("cudaEventCreate", gpu_api->event_create(&sample))) return false;
    properties.name[sizeof properties.name - 1] = '\0';
    records_.device(out, device, properties);
    d.ready = true;
    return true;
  }

  /// The tightest of gpu_anchor_samples brackets: the host ticks before an
  /// event's record call and when it is first seen complete. -1 when none
  /// completed in time; false on a CUDA error.
  bool sample_anchor(flusher_output& out, device_state& d, int& best, std::uint64_t& best_before,
                     std::uint64_t& best_after) {
    for (int i = 0; i < gpu_anchor_samples; ++i) {
      const std::uint64_t before = ticks(out.clock());
      if (!check("cudaEventRecord", gpu_api->event_record(d.samples[i], d.stream))) return false;
      const std::uint64_t give_up = clock_ns(CLOCK_MONOTONIC) + gpu_anchor_timeout_ns;
      for (;;) {
        const int state = gpu_api->event_query(d.samples[i]);
        const std::uint64_t after = ticks(out.clock());
        if (state == gpu_success) {
          if (best < 0 || after - before < best_after - best_before) {
            best = i;
            best_before = before;
            best_after = after;
          }
          break;
        }
        if (state != gpu_not_ready) return check("cudaEventQuery", state);
        if (clock_ns(CLOCK_MONOTONIC) > give_up) break;
      }
    }
    return true;
  }

  /// One anchor: an event on the private stream, bracketed by host ticks
  /// (sample_anchor). Its GPU time is measured from the previous anchor
  /// (short float intervals: cudaEventElapsedTime returns float ms).
  bool take_anchor(flusher_output& out, int device, device_state& d) {
    if (!check("cudaSetDevice", gpu_api->set_device(device))) return false;
    int best = -1;
    std::uint64_t best_before = 0, best_after = 0;
    if (!sample_anchor(out, d, best, best_before, best_after)) return false;
    if (best < 0) return true;  // the GPU is slow to answer: try again next cycle
    std::int64_t since_previous = 0;
    if (d.has_anchor) {
      float ms = 0;
      if (!check("cudaEventElapsedTime", gpu_api->event_elapsed_ms(&ms, d.anchor, d.samples[best]))) return false;
      since_previous = std::llround(static_cast<double>(ms) * 1e6);
    }
    const std::uint64_t link = d.has_anchor ? d.anchor_seq + 1 : 0;
    std::swap(d.anchor, d.samples[best]);  // the kept event times later spans and the next anchor
    d.anchor_seq = d.next_seq++;
    d.has_anchor = true;
    records_.anchor(out, device, d.anchor_seq, best_before, best_after, link, since_previous);
    // A second anchor soon fixes the drift early; then one a second.
    d.next_anchor_ns = clock_ns(CLOCK_MONOTONIC) + (d.anchor_seq == 0 ? 100000000u : 1000000000u);
    return true;
  }

  bool anchors(flusher_output& out, bool force) {
    for (auto& entry : devices_) {
      device_state& d = entry.second;
      if (!prepare_device(out, entry.first, d)) return false;
      if ((force || !d.has_anchor || clock_ns(CLOCK_MONOTONIC) >= d.next_anchor_ns) &&
          !take_anchor(out, entry.first, d))
        return false;
    }
    return true;
  }

  /// Resolves completed spans, per stream in FIFO order: a stream's events
  /// complete in record order, so its first pending span blocks only that
  /// stream. Two CUDA calls a span, plus one query a stream: the query of
  /// the newest end event reports the GPU's errors, and a span's own
  /// cudaEventElapsedTime says cudaErrorNotReady until its end completed
  /// (the legacy stream's queue mixes threads, so that is asked of each
  /// span, not inferred). `budget` spans at most; returns how many were
  /// resolved, or -1 on a CUDA error (GPU spans are off then).
  long resolve(flusher_output& out, std::uint32_t budget) {
    long resolved = 0;
    for (auto& entry : streams_) {
      stream_state& s = entry.second;
      device_state& d = devices_[entry.first.device];
      if (!d.has_anchor || s.queue.empty() || budget == 0) continue;
      const int newest = gpu_api->event_query(s.queue.back().pair->end);
      if (newest != gpu_not_ready && !check("cudaEventQuery", newest)) return -1;
      while (!s.queue.empty() && budget != 0) {
        const gpu_in_flight& f = s.queue.front();
        float to_start = 0, length = 0;
        const int state = gpu_api->event_elapsed_ms(&length, f.pair->start, f.pair->end);
        if (state == gpu_not_ready) break;
        if (!check("cudaEventElapsedTime", state) ||
            !check("cudaEventElapsedTime", gpu_api->event_elapsed_ms(&to_start, d.anchor, f.pair->start)))
          return -1;
        const std::int64_t duration = std::llround(static_cast<double>(length) * 1e6);
        write_span(out, format::gpu_span_resolved, s.id, f, d.anchor_seq,
                   std::llround(static_cast<double>(to_start) * 1e6),
                   duration > 0 ? static_cast<std::uint64_t>(duration) : 0);
        ++totals_.resolved;
        f.owner->give_back(f.pair);
        s.queue.pop_front();
        --budget;
        ++resolved;
      }
    }
    return resolved;
  }

  /// A cycle's resolution: batches of gpu_resolve_batch spans, the threads'
  /// queues taken in again between batches (a long pass must not leave
  /// them to fill up). Returns the fullest queue those intakes saw.
  double resolve_cycle(flusher_output& out, std::uint32_t budget) {
    double fullest = 0;
    while (budget != 0) {
      const std::uint32_t batch = budget < gpu_resolve_batch ? budget : gpu_resolve_batch;
      const long resolved = resolve(out, batch);
      // A CUDA error (GPU spans are off), or nothing more is complete.
      if (resolved < 0 || static_cast<std::uint32_t>(resolved) < batch) break;
      budget -= static_cast<std::uint32_t>(resolved);
      fullest = std::max(fullest, intake(out));
    }
    return fullest;
  }

  bool in_flight_left() const noexcept {
    for (const auto& entry : streams_)
      if (!entry.second.queue.empty()) return true;
    return false;
  }

  /// Writes everything still queued as unresolved (GPU spans are off).
  void abandon(flusher_output& out) {
    for (auto& entry : streams_) {
      for (const gpu_in_flight& f : entry.second.queue) {
        write_span(out, format::gpu_span_unresolved, entry.second.id, f);
        ++totals_.unresolved;
        f.owner->give_back(f.pair);
      }
      entry.second.queue.clear();
    }
  }

  /// Last pass: waits a bounded time for what is in flight, takes a last
  /// anchor on every device, then makes no CUDA call any more.
  void finish(flusher_output& out) {
    const std::uint64_t give_up = clock_ns(CLOCK_MONOTONIC) + gpu_final_wait_ns;
    while (on() && resolve(out, ~std::uint32_t{0}) >= 0 && in_flight_left() && clock_ns(CLOCK_MONOTONIC) < give_up) {
      timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    }
    if (on()) anchors(out, true);
    closed_ = true;
  }

  /// One flusher visit: intake, anchors, resolution, records.
  void serve(flusher_output& out, poll_reason why) {
    if (owner_pid_ != ::getpid()) return;  // a forked child's copy: the parent's business
    write_runtime(out);
    double fullest = intake(out);
    const bool final = why == poll_reason::final || (final_requested_.load(std::memory_order_acquire) && !closed_);
    if (on() && prepare_flusher() && anchors(out, false)) {
      const std::uint32_t budget = why == poll_reason::cycle ? gpu_resolve_budget : ~std::uint32_t{0};
      if (final)
        finish(out);
      else
        fullest = std::max(fullest, resolve_cycle(out, budget));
    }
    backlog = fullest;
    if (final) closed_ = true;
    if (!on()) abandon(out);
    write_off(out);
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (final || why == poll_reason::flush || (stats_dirty_ && now - stats_written_ns_ > 1000000000u)) {
      write_stats(out);
      stats_written_ns_ = now;
    }
    records_.seal(out);
  }
};

/// The process's tracker: built on the first GPU scope, never destroyed
/// (the flusher may poll it until the very end).
inline gpu_tracker& gpu() noexcept {
  static gpu_tracker* const tracker = new gpu_tracker;
  return *tracker;
}

/// Retires the thread's state when the thread exits (a thread_local's
/// destructor, which runs before the ring's exit hook).
struct gpu_thread_exit {
  gpu_thread* state = nullptr;
  ~gpu_thread_exit() {
    if (state == nullptr) return;
    current_gpu_thread = nullptr;
    // Release: the flusher's acquire sees every launch published before.
    state->retired.store(true, std::memory_order_release);
  }
};
inline thread_local gpu_thread_exit gpu_thread_exit_hook;

// ---- The entry points GPU scopes call (declared in gpu/handoff.hpp).

EDGETRACE_DETAIL_API std::uint8_t gpu_start(const gpu_backend* backend) noexcept {
  static std::mutex start_mutex;
  std::lock_guard<std::mutex> lock(start_mutex);
  if (gpu_state.load(std::memory_order_acquire) == gpu_unknown && active()) gpu().start(backend);
  return gpu_state.load(std::memory_order_acquire);
}

EDGETRACE_DETAIL_API gpu_thread* gpu_attach_thread() noexcept {
  gpu_thread* t = gpu().attach();
  if (t == nullptr) return nullptr;
  current_gpu_thread = t;
  gpu_thread_exit_hook.state = t;
  return t;
}

EDGETRACE_DETAIL_API void gpu_turn_off(const char* call, int error) noexcept { gpu().turn_off(call, error); }

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
