// SPDX-License-Identifier: MIT
// GPU spans without CUDA headers: a GPU scope records its host span plus a
// pair of GPU events, hands them to the flusher through a per-thread
// lock-free queue, and the flusher resolves them per stream, in FIFO order,
// into the dump's gpu chunks, with clock anchors that let the reader place
// GPU time on the host timeline. Every CUDA call goes through the
// gpu_backend table; cuda.hpp plugs in the CUDA runtime.
#pragma once

#include <edgetrace/detail/env.hpp>
#include <edgetrace/detail/flusher_client.hpp>
#include <edgetrace/detail/gpu_backend.hpp>
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/format.hpp>

#if EDGETRACE_ENABLED

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <vector>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace edgetrace {
inline namespace v1 {
namespace detail {

// ------------------------------------------------------------ limits

/// Scopes a thread can hand over between two flusher cycles (slots of its
/// pending queue, 48 bytes each). A scope that finds no slot records its
/// host span only and is counted as skipped.
inline constexpr std::uint32_t gpu_pending_capacity = 1024;
static_assert((gpu_pending_capacity & (gpu_pending_capacity - 1)) == 0, "a power of two");
/// Event pairs one thread may own (in flight plus idle): bounds what a
/// stalled GPU can make the tracker allocate.
inline constexpr std::uint32_t gpu_max_pairs_per_thread = 4096;
inline constexpr int gpu_max_devices_per_thread = 8;
/// Spans the flusher resolves in one periodic cycle (3 CUDA calls each).
inline constexpr std::uint32_t gpu_resolve_budget = 4096;
/// Anchor samples per measurement: the tightest bracket wins.
inline constexpr int gpu_anchor_samples = 5;
/// How long one anchor sample may take to complete before it is dropped.
inline constexpr std::uint64_t gpu_anchor_timeout_ns = 2000000;
/// At exit: how long the flusher waits for events still in flight.
inline constexpr std::uint64_t gpu_final_wait_ns = 500000000;
/// Gpu chunks are sealed near this payload size.
inline constexpr std::size_t gpu_chunk_target = 60u << 10;

// ------------------------------------------------------------ hand-off

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

/// What one thread shares with the flusher. Created on the thread's first
/// GPU scope (slow path), never freed: when the thread exits it goes to a
/// pool, events included, for the next thread.
///
/// Hand-off: `pending` is a single-producer/single-consumer queue of
/// launches (owner → flusher) with free-running indices. Events come back
/// through `returned`, a stack the flusher pushes onto and the owner empties
/// whole: with a single consumer that only ever takes everything, there is
/// no ABA problem and no lock.
struct gpu_thread {
  // ---- owner side: written by the owning thread only.
  /// Next slot to fill. Owner: relaxed load, release store after filling
  /// the slot; flusher: acquire load, so the slot's fields are visible.
  std::atomic<std::uint32_t> write_index{0};
  std::uint32_t reserved = 0;  ///< slots held by scopes still open (nesting)
  /// Pairs this state ever created. Owner: relaxed load + store; flusher:
  /// relaxed load for stats.
  std::atomic<std::uint32_t> pairs_created{0};
  /// Scopes that got no GPU time for lack of a slot or a pair. Owner:
  /// relaxed load + store (one writer); flusher: relaxed load for stats.
  std::atomic<std::uint64_t> skipped{0};
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
  /// Next slot to read. Flusher: release store once it copied the slots
  /// out; owner: acquire load before it reuses them.
  alignas(cache_line) std::atomic<std::uint32_t> read_index{0};
  /// Pairs the flusher is done with: flusher pushes (CAS, release), owner
  /// takes the whole list (exchange, acquire).
  std::atomic<gpu_event_pair*> returned{nullptr};

  // ---- rarely written.
  /// Set (release) by the owner's thread-exit hook; once the flusher sees
  /// it (acquire) and drained `pending`, the state is idle and may be pooled.
  alignas(cache_line) std::atomic<bool> retired{false};
  gpu_thread* next_free = nullptr;  ///< pool link (registry mutex)

  gpu_launch pending[gpu_pending_capacity];

  /// Owner: holds a slot for a scope until it ends. Cost: one acquire load.
  bool reserve() noexcept {
    const std::uint32_t used = write_index.load(std::memory_order_relaxed) - read_index.load(std::memory_order_acquire);
    if (used + reserved >= gpu_pending_capacity) return false;
    ++reserved;
    return true;
  }
  /// Owner: fills the reserved slot and publishes it.
  void publish(const gpu_launch& launch) noexcept {
    const std::uint32_t index = write_index.load(std::memory_order_relaxed);
    pending[index & (gpu_pending_capacity - 1)] = launch;
    write_index.store(index + 1, std::memory_order_release);
    --reserved;
  }
  void unreserve() noexcept { --reserved; }

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

// ------------------------------------------------------------ state

enum gpu_state_value : std::uint8_t {
  gpu_unknown = 0,  ///< no GPU scope ran yet
  gpu_on = 1,       ///< GPU spans are recorded
  gpu_off = 2,      ///< for good: no GPU, no driver, EDGETRACE_CUDA=0, an error, or exit
};

/// GPU spans' state. Scopes load it with acquire (it publishes the backend
/// pointer); it only ever moves from unknown to on or off, and to off.
inline std::atomic<std::uint8_t> gpu_state{gpu_unknown};

inline void gpu_at_exit() noexcept;
inline void gpu_fork_child() noexcept;

/// The GPU side of the process: start-up, the thread registry, and the
/// flusher client that resolves events and writes gpu chunks.
class gpu_tracker : public flusher_client {
 public:
  gpu_tracker() noexcept { poll = &poll_entry; }

  // ---- set once by start() before the client is registered and gpu_state
  // turns on (both release), then read-only
  const gpu_backend* api_ = nullptr;
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

  // ------------------------------------------------------------ any thread

  /// Turns GPU spans off for good. The first caller clears the CUDA error
  /// its failed call left in its thread (so the app does not see it as its
  /// own) and, unless `quiet`, says so in one stderr line.
  void turn_off(const char* call, int error, bool quiet = false) noexcept {
    if (gpu_state.exchange(gpu_off, std::memory_order_acq_rel) == gpu_off) return;
    const char* text = nullptr;
    if (api_ != nullptr && error != gpu_success) {
      api_->clear_error();
      text = api_->error_string(error);
    }
    if (error == gpu_success)
      std::snprintf(off_reason_, sizeof off_reason_, "%s", call);
    else
      std::snprintf(off_reason_, sizeof off_reason_, "CUDA error in %s: %s (error %d)", call,
                    text != nullptr ? text : "unknown error", error);
    off_reason_ready_.store(true, std::memory_order_release);
    if (!quiet) report("%s; GPU spans are off, host spans continue", off_reason_);
  }

  /// The first GPU scope of the process: checks that CUDA works. On any
  /// failure one stderr line, and GPU spans stay off (host spans go on).
  void start(const gpu_backend* backend) noexcept {
    owner_pid_ = ::getpid();
    if (env_choice("EDGETRACE_CUDA", {"1", "0"}) == 1) {
      turn_off("EDGETRACE_CUDA=0", gpu_success, true);
      register_flusher_client(*this);  // writes the reason to the dump
      return;
    }
    api_ = backend;
    int count = 0;
    const int error = backend->device_count(&count);
    if (backend->driver_version(&driver_version_) != gpu_success) driver_version_ = 0;
    if (backend->runtime_version(&runtime_version_) != gpu_success) runtime_version_ = 0;
    if (error != gpu_success || count <= 0) {
      char versions[96];
      std::snprintf(versions, sizeof versions, "driver %d.%d, runtime %d.%d", driver_version_ / 1000,
                    driver_version_ % 1000 / 10, runtime_version_ / 1000, runtime_version_ % 1000 / 10);
      if (driver_version_ == 0)
        std::snprintf(versions, sizeof versions, "no driver, runtime %d.%d", runtime_version_ / 1000,
                      runtime_version_ % 1000 / 10);
      const char* text = error != gpu_success ? backend->error_string(error) : "no CUDA device";
      if (error != gpu_success) backend->clear_error();
      std::snprintf(off_reason_, sizeof off_reason_, "CUDA unavailable: cudaGetDeviceCount: %s (error %d; %s)",
                    text != nullptr ? text : "unknown error", error, versions);
      off_reason_ready_.store(true, std::memory_order_release);
      gpu_state.store(gpu_off, std::memory_order_release);
      report("%s; GPU spans are off, host spans continue", off_reason_);
      register_flusher_client(*this);
      return;
    }
    device_count_ = count;
    pthread_atfork(nullptr, nullptr, &gpu_fork_child);
    // Registered after the CUDA runtime initialised, so it runs before
    // the runtime's own teardown (atexit order is last in, first out).
    std::atexit(&gpu_at_exit);
    // Every field above is written before registration publishes the
    // client (release), so the flusher sees them all.
    register_flusher_client(*this);
    gpu_state.store(gpu_on, std::memory_order_release);
  }

  /// Gives the calling thread its state: a pooled one (with its events) or
  /// a new one. Slow path, once per thread.
  gpu_thread* attach() noexcept {
    gpu_thread* t = nullptr;
    const auto tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
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
  struct in_flight {
    gpu_event_pair* pair;
    gpu_thread* owner;
    std::uint32_t site;
    std::uint64_t os_tid;
    std::uint64_t begin_tick;
    std::uint64_t end_tick;
  };
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
    std::deque<in_flight> queue;  ///< in record order: the stream completes them in this order
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
  struct totals {
    std::uint64_t launches = 0, resolved = 0, captured = 0, unresolved = 0;
  };

  // ---- flusher only
  std::vector<gpu_thread*> snapshot_;
  std::map<stream_key, stream_state> streams_;
  std::map<int, device_state> devices_;
  std::uint32_t next_stream_id_ = 1;
  totals totals_;
  bool header_written_ = false;      ///< runtime record
  bool off_written_ = false;         ///< off record
  bool flusher_ready_ = false;       ///< capture mode relaxed on the flusher thread
  bool closed_ = false;              ///< final pass done: no CUDA call any more
  std::uint64_t stats_written_ns_ = 0;
  bool stats_dirty_ = false;
  std::vector<unsigned char> chunk_;   ///< gpu records not yet sealed
  std::vector<unsigned char> record_;  ///< one record's body

  static void poll_entry(flusher_client& self, flusher_output& out, poll_reason why) noexcept {
    static_cast<gpu_tracker&>(self).serve(out, why);
  }

  bool on() const noexcept { return gpu_state.load(std::memory_order_acquire) == gpu_on && !closed_; }

  // ---- record encoding: u8 tag, varint body size, body
  static void put_varint(std::vector<unsigned char>& b, std::uint64_t v) {
    unsigned char bytes[format::max_varint_size];
    b.insert(b.end(), bytes, format::put_varint(bytes, v));
  }
  static void put_u64(std::vector<unsigned char>& b, std::uint64_t v) {
    unsigned char bytes[8];
    format::put_u64(bytes, v);
    b.insert(b.end(), bytes, bytes + 8);
  }
  /// A NUL-terminated string (every caller's buffer is).
  static void put_string(std::vector<unsigned char>& b, const char* text) {
    const std::size_t size = std::strlen(text);
    put_varint(b, size);
    b.insert(b.end(), text, text + size);
  }
  std::vector<unsigned char>& begin_record() {
    record_.clear();
    return record_;
  }
  void end_record(flusher_output& out, format::gpu_record tag) {
    chunk_.push_back(static_cast<unsigned char>(tag));
    put_varint(chunk_, record_.size());
    chunk_.insert(chunk_.end(), record_.begin(), record_.end());
    if (chunk_.size() >= gpu_chunk_target) seal(out);
  }
  void seal(flusher_output& out) {
    if (!chunk_.empty()) out.emit(format::chunk_type::gpu, chunk_.data(), chunk_.size());
    chunk_.clear();
  }

  void write_runtime(flusher_output& out) {
    if (header_written_) return;
    header_written_ = true;
    auto& b = begin_record();
    put_varint(b, static_cast<std::uint64_t>(driver_version_));
    put_varint(b, static_cast<std::uint64_t>(runtime_version_));
    put_varint(b, static_cast<std::uint64_t>(device_count_));
    put_string(b, api_ != nullptr ? api_->name : "none");
    end_record(out, format::gpu_record::runtime);
  }

  void write_off(flusher_output& out) {
    if (off_written_ || !off_reason_ready_.load(std::memory_order_acquire)) return;
    off_written_ = true;
    auto& b = begin_record();
    put_string(b, off_reason_);
    end_record(out, format::gpu_record::off);
  }

  void write_stats(flusher_output& out) {
    std::uint64_t skipped = 0, pairs = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const gpu_thread* t : all_) {
        skipped += t->skipped.load(std::memory_order_relaxed);
        pairs += t->pairs_created.load(std::memory_order_relaxed);
      }
    }
    auto& b = begin_record();
    put_varint(b, totals_.launches);
    put_varint(b, totals_.resolved);
    put_varint(b, totals_.captured);
    put_varint(b, totals_.unresolved);
    put_varint(b, skipped);
    put_varint(b, pairs);
    end_record(out, format::gpu_record::stats);
    stats_dirty_ = false;
  }

  void write_span(flusher_output& out, std::uint32_t flags, std::uint32_t stream, const in_flight& f,
                  std::uint64_t anchor_seq = 0, std::int64_t offset_ns = 0, std::uint64_t duration_ns = 0) {
    auto& b = begin_record();
    put_varint(b, flags);
    put_varint(b, stream);
    put_varint(b, f.site);
    put_varint(b, f.os_tid);
    put_varint(b, f.begin_tick);
    put_varint(b, f.end_tick >= f.begin_tick ? f.end_tick - f.begin_tick : 0);
    if (flags & format::gpu_span_resolved) {
      put_varint(b, anchor_seq);
      put_varint(b, format::zigzag(offset_ns));
      put_varint(b, duration_ns);
    }
    end_record(out, format::gpu_record::span);
    stats_dirty_ = true;
  }

  stream_state& stream_for(flusher_output& out, int device, void* handle, std::uint64_t os_tid) {
    const auto value = reinterpret_cast<std::uintptr_t>(handle);
    const stream_key key{device, value, value == format::gpu_stream_per_thread ? os_tid : 0};
    stream_state& s = streams_[key];
    if (s.id == 0) {
      s.id = next_stream_id_++;
      devices_[device];  // known from now on: gets a private stream and anchors
      auto& b = begin_record();
      put_varint(b, s.id);
      put_varint(b, static_cast<std::uint64_t>(device));
      put_u64(b, value);
      put_varint(b, key.owner_tid);
      end_record(out, format::gpu_record::stream);
    }
    return s;
  }

  /// Moves every launch the threads published into the stream queues.
  void intake(flusher_output& out) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      snapshot_ = threads_;
    }
    for (gpu_thread* t : snapshot_) {
      // Acquire pairs with the exit hook's release: every launch published
      // before the thread retired is visible below.
      const bool retired = t->retired.load(std::memory_order_acquire);
      const std::uint32_t end = t->write_index.load(std::memory_order_acquire);
      std::uint32_t index = t->read_index.load(std::memory_order_relaxed);
      for (; index != end; ++index) accept(out, *t, t->pending[index & (gpu_pending_capacity - 1)]);
      t->read_index.store(index, std::memory_order_release);
      if (retired) {
        std::lock_guard<std::mutex> lock(mutex_);
        threads_.erase(std::find(threads_.begin(), threads_.end(), t));
        t->next_free = pool_;
        pool_ = t;
      }
    }
  }

  void accept(flusher_output& out, gpu_thread& owner, const gpu_launch& launch) {
    stream_state& s = stream_for(out, launch.device, launch.stream, owner.os_tid);
    const in_flight f{launch.pair, &owner, out.site_id(launch.word), owner.os_tid, launch.begin_tick, launch.end_tick};
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
    const int error = api_->relax_capture_mode();
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
    if (!check("cudaSetDevice", api_->set_device(device))) return false;
    gpu_device_properties properties{};
    if (!check("cudaGetDeviceProperties", api_->device_properties(device, &properties))) return false;
    if (!check("cudaStreamCreateWithFlags", api_->stream_create(&d.stream))) return false;
    if (!check("cudaEventCreate", api_->event_create(&d.anchor))) return false;
    for (void*& sample : d.samples)
      if (!check("cudaEventCreate", api_->event_create(&sample))) return false;
    properties.name[sizeof properties.name - 1] = '\0';
    auto& b = begin_record();
    put_varint(b, static_cast<std::uint64_t>(device));
    put_string(b, properties.name);
    put_varint(b, static_cast<std::uint64_t>(properties.major));
    put_varint(b, static_cast<std::uint64_t>(properties.minor));
    end_record(out, format::gpu_record::device);
    d.ready = true;
    return true;
  }

  /// One anchor: an event on the private stream, bracketed by the host
  /// tick before its record call and the tick at which it is first seen
  /// complete. Of several samples the tightest bracket is kept; its GPU
  /// time is measured from the previous anchor (short float intervals:
  /// cudaEventElapsedTime returns float ms).
  bool take_anchor(flusher_output& out, int device, device_state& d) {
    if (!check("cudaSetDevice", api_->set_device(device))) return false;
    int best = -1;
    std::uint64_t best_before = 0, best_after = 0;
    for (int i = 0; i < gpu_anchor_samples; ++i) {
      const std::uint64_t before = ticks(out.clock());
      if (!check("cudaEventRecord", api_->event_record(d.samples[i], d.stream))) return false;
      const std::uint64_t give_up = clock_ns(CLOCK_MONOTONIC) + gpu_anchor_timeout_ns;
      for (;;) {
        const int state = api_->event_query(d.samples[i]);
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
    if (best < 0) return true;  // the GPU is slow to answer: try again next cycle
    std::int64_t since_previous = 0;
    if (d.has_anchor) {
      float ms = 0;
      if (!check("cudaEventElapsedTime", api_->event_elapsed_ms(&ms, d.anchor, d.samples[best]))) return false;
      since_previous = std::llround(static_cast<double>(ms) * 1e6);
    }
    const std::uint64_t link = d.has_anchor ? d.anchor_seq + 1 : 0;
    std::swap(d.anchor, d.samples[best]);  // the kept event times later spans and the next anchor
    d.anchor_seq = d.next_seq++;
    d.has_anchor = true;
    auto& b = begin_record();
    put_varint(b, static_cast<std::uint64_t>(device));
    put_varint(b, d.anchor_seq);
    put_u64(b, best_before);
    put_u64(b, best_after);
    put_varint(b, link);
    put_varint(b, format::zigzag(since_previous));
    end_record(out, format::gpu_record::anchor);
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
  /// stream. Returns false on a CUDA error (GPU spans are off then).
  bool resolve(flusher_output& out, std::uint32_t budget) {
    for (auto& entry : streams_) {
      stream_state& s = entry.second;
      device_state& d = devices_[entry.first.device];
      if (!d.has_anchor) continue;
      while (!s.queue.empty() && budget != 0) {
        const in_flight& f = s.queue.front();
        const int state = api_->event_query(f.pair->end);
        if (state == gpu_not_ready) break;
        if (!check("cudaEventQuery", state)) return false;
        float to_start = 0, length = 0;
        if (!check("cudaEventElapsedTime", api_->event_elapsed_ms(&to_start, d.anchor, f.pair->start)) ||
            !check("cudaEventElapsedTime", api_->event_elapsed_ms(&length, f.pair->start, f.pair->end)))
          return false;
        const std::int64_t duration = std::llround(static_cast<double>(length) * 1e6);
        write_span(out, format::gpu_span_resolved, s.id, f, d.anchor_seq,
                   std::llround(static_cast<double>(to_start) * 1e6),
                   duration > 0 ? static_cast<std::uint64_t>(duration) : 0);
        ++totals_.resolved;
        f.owner->give_back(f.pair);
        s.queue.pop_front();
        --budget;
      }
    }
    return true;
  }

  bool in_flight_left() const noexcept {
    for (const auto& entry : streams_)
      if (!entry.second.queue.empty()) return true;
    return false;
  }

  /// Writes everything still queued as unresolved (GPU spans are off).
  void abandon(flusher_output& out) {
    for (auto& entry : streams_) {
      for (const in_flight& f : entry.second.queue) {
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
    while (on() && resolve(out, ~std::uint32_t{0}) && in_flight_left() && clock_ns(CLOCK_MONOTONIC) < give_up) {
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
    intake(out);
    const bool final = why == poll_reason::final || (final_requested_.load(std::memory_order_acquire) && !closed_);
    if (on() && prepare_flusher() && anchors(out, false)) {
      if (final)
        finish(out);
      else
        resolve(out, why == poll_reason::cycle ? gpu_resolve_budget : ~std::uint32_t{0});
    }
    if (final) closed_ = true;
    if (!on()) abandon(out);
    write_off(out);
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (final || why == poll_reason::flush || (stats_dirty_ && now - stats_written_ns_ > 1000000000u)) {
      write_stats(out);
      stats_written_ns_ = now;
    }
    seal(out);
  }
};

/// The process's tracker: built on the first GPU scope, never destroyed
/// (the flusher may poll it until the very end).
inline gpu_tracker& gpu() noexcept {
  static gpu_tracker* const tracker = new gpu_tracker;
  return *tracker;
}

inline void gpu_at_exit() noexcept {
  if (gpu_state.load(std::memory_order_acquire) != gpu_on) return;
  gpu().final_requested_.store(true, std::memory_order_release);
  flush();
}

/// A forked child never touches the parent's CUDA state.
inline void gpu_fork_child() noexcept {
  gpu_state.store(gpu_off, std::memory_order_relaxed);
  current_gpu_thread = nullptr;
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

// ------------------------------------------------------------ scope

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

/// Start of a GPU scope, after its host begin tick: reserves a hand-off
/// slot and records the start event on `stream`, unless the stream is
/// capturing a CUDA graph (then only the host span is recorded, flagged).
/// Cost after warm-up: cudaGetDevice, cudaStreamIsCapturing and
/// cudaEventRecord, no lock, no allocation. A template so it can be
/// noinline in a header.
template <class = void>
EDGETRACE_DETAIL_NOINLINE void gpu_scope_begin(gpu_scope_state& s, void* stream, const gpu_backend* backend) noexcept {
  std::uint8_t state = gpu_state.load(std::memory_order_acquire);
  if (EDGETRACE_DETAIL_UNLIKELY(state == gpu_unknown)) {
    static std::mutex start_mutex;
    std::lock_guard<std::mutex> lock(start_mutex);
    if (gpu_state.load(std::memory_order_acquire) == gpu_unknown && active()) gpu().start(backend);
    state = gpu_state.load(std::memory_order_acquire);
  }
  if (state != gpu_on) return;
  gpu_tracker& g = gpu();
  gpu_thread* t = current_gpu_thread;
  if (EDGETRACE_DETAIL_UNLIKELY(t == nullptr)) {
    t = g.attach();
    if (t == nullptr) return;
    current_gpu_thread = t;
    gpu_thread_exit_hook.state = t;
  }
  const gpu_backend& api = *g.api_;
  int device = 0;
  int error = api.current_device(&device);
  if (error != gpu_success) return g.turn_off("cudaGetDevice", error);
  int capture = gpu_capture_none;
  error = api.stream_capture_status(stream, &capture);
  if (error == gpu_error_capture_implicit) {
    capture = gpu_capture_active;  // the legacy stream while another stream captures
  } else if (error != gpu_success) {
    return g.turn_off("cudaStreamIsCapturing", error);
  }
  if (!t->reserve()) {
    t->skipped.store(t->skipped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  s.stream = stream;
  s.device = device;
  s.active = true;
  if (capture != gpu_capture_none) {
    s.flags = format::gpu_span_captured;  // never record into a capture: it would become part of the graph
    return;
  }
  gpu_event_pair* pair = t->reuse(device);
  const std::uint32_t created = t->pairs_created.load(std::memory_order_relaxed);
  if (pair == nullptr && created < gpu_max_pairs_per_thread) {
    // Warm-up: this thread has no idle pair for this device yet.
    void* start = nullptr;
    void* end = nullptr;
    error = api.event_create(&start);
    if (error == gpu_success) error = api.event_create(&end);
    if (error != gpu_success) {
      t->unreserve();
      s.active = false;
      return g.turn_off("cudaEventCreate", error);
    }
    pair = new (std::nothrow) gpu_event_pair{start, end, device, nullptr};
    if (pair != nullptr) t->pairs_created.store(created + 1, std::memory_order_relaxed);
  }
  if (pair == nullptr) {  // every pair in flight: the GPU is far behind
    t->unreserve();
    s.active = false;
    t->skipped.store(t->skipped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  error = api.event_record(pair->start, stream);
  if (error != gpu_success) {
    t->keep(pair);
    t->unreserve();
    s.active = false;
    return g.turn_off("cudaEventRecord", error);
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
      gpu_tracker& g = gpu();
      int capture = gpu_capture_none;
      int error = g.api_->stream_capture_status(s.stream, &capture);
      if (error == gpu_error_capture_implicit) {
        capture = gpu_capture_active;
        error = gpu_success;
      }
      if (error != gpu_success) {
        g.turn_off("cudaStreamIsCapturing", error);
      } else if (capture != gpu_capture_none) {
        s.flags |= format::gpu_span_captured;
      } else if ((error = g.api_->event_record(s.pair->end, s.stream)) != gpu_success) {
        g.turn_off("cudaEventRecord", error);
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
}  // namespace v1
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

#else  // EDGETRACE_ENABLED == 0: type-check, never evaluate, generate nothing.

#define EDGETRACE_DETAIL_GPU_SCOPE(cat, name, stream, backend)                                              \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(name))),   \
      static_cast<void>(sizeof(static_cast<void*>(stream))), static_cast<void>(sizeof(backend))
#define EDGETRACE_DETAIL_GPU_SCOPE_NAMED(cat, handle, stream, backend)                                          \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_handle(handle))),   \
      static_cast<void>(sizeof(static_cast<void*>(stream))), static_cast<void>(sizeof(backend))

#endif
