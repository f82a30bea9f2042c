// SPDX-License-Identifier: MIT
// Test helper: a fake GPU behind the gpu_backend seam. Streams run on a
// simulated GPU clock (offset and drift from the host's CLOCK_MONOTONIC);
// work is "launched" with a duration; events complete when the simulated
// clock passes them, or when a held stream is released. Every call is
// counted, and any call can be made to fail.
#pragma once

#include <edgetrace/gpu/backend.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace edgetrace_test {

namespace gpu = edgetrace::detail;

/// The fake device. One instance per process: fake_gpu::instance().
class fake_gpu {
 public:
  static fake_gpu& instance() {
    static fake_gpu* const gpu = new fake_gpu;
    return *gpu;
  }

  // ---- knobs (set before the first GPU scope)
  int devices = 1;
  int device_count_error = 0;  ///< non-zero: cudaGetDeviceCount fails with it
  double offset_ns = 0;        ///< GPU clock = offset + (1 + drift) * CLOCK_MONOTONIC
  double drift = 0;            ///< e.g. 100e-6 for 100 ppm
  int driver = 13000;
  int runtime = 13000;

  enum call {
    c_device_count, c_driver_version, c_runtime_version, c_device_properties, c_current_device, c_set_device,
    c_relax, c_stream_create, c_capture_status, c_event_create, c_event_record, c_event_query, c_elapsed,
    c_clear_error, c_error_string, c_count
  };

  /// Makes the next call of `which` (after `after` successful ones) fail with `error`.
  void fail(call which, int error, int after = 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_call_ = which;
    fail_error_ = error;
    fail_after_ = after;
  }
  long calls(call which) const { return calls_[which].load(); }
  long total_calls() const {
    long n = 0;
    for (const auto& c : calls_) n += c.load();
    return n;
  }
  /// Calls made by the calling thread (the app's, or the flusher's).
  static long calls_on_this_thread() { return thread_calls_; }
  /// Records into a capturing stream (must stay 0).
  long captured_records() const { return captured_records_.load(); }

  /// A stream handle for tests (never 0, 1 or 2: those are CUDA's own).
  static void* stream(int i) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x1000 + 16 * i)); }

  /// Enqueues `ns` of simulated work on `stream` (a kernel, a copy). It
  /// starts where the stream's last event or work ends (an event recorded
  /// on an idle stream completes at once), so a scope around one launch
  /// measures exactly `ns`.
  void launch(void* stream, double ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    cursor_[stream] += ns;
  }
  /// Held streams complete nothing until released (out-of-order completion).
  void hold(void* stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.insert(stream);
  }
  void release(void* stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.erase(stream);
  }
  void set_capturing(void* stream, bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (on)
      capturing_.insert(stream);
    else
      capturing_.erase(stream);
  }
  /// Simulated GPU time now (ns).
  double now() {
    std::lock_guard<std::mutex> lock(mutex_);
    return now_locked();
  }
  /// Events recorded and not yet complete.
  int pending_events() {
    std::lock_guard<std::mutex> lock(mutex_);
    int n = 0;
    for (const auto& e : events_)
      if (e.second.recorded && !complete_locked(e.second)) ++n;
    return n;
  }

  const gpu::gpu_backend& backend() const { return table_; }

 private:
  struct fake_event {
    bool recorded = false;
    void* stream = nullptr;
    double time = 0;  ///< simulated GPU ns at which it completes
  };

  fake_gpu() = default;

  static double monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  }
  double now_locked() const { return offset_ns + (1 + drift) * monotonic_ns(); }
  bool complete_locked(const fake_event& e) const {
    return held_.count(e.stream) == 0 && now_locked() >= e.time;
  }
  /// Counts the call; returns the error it must fail with (0: go on).
  int enter(call which) {
    calls_[which].fetch_add(1);
    ++thread_calls_;
    if (fail_call_ != which) return 0;
    if (fail_after_ > 0) {
      --fail_after_;
      return 0;
    }
    fail_call_ = c_count;
    return fail_error_;
  }

  static fake_gpu& self() { return instance(); }
  /// Every entry point: under the lock, the call counted (and failed
  /// when told to), then `body`.
  template <class Body>
  static int entered(call which, Body&& body) noexcept {
    fake_gpu& g = self();
    std::lock_guard<std::mutex> lock(g.mutex_);
    if (int e = g.enter(which)) return e;
    return body(g);
  }

  static int device_count(int* count) noexcept {
    return entered(c_device_count, [&](fake_gpu& g) -> int {
      if (g.device_count_error != 0) return g.device_count_error;
      *count = g.devices;
      return 0;
    });
  }
  static int driver_version(int* v) noexcept {
    return entered(c_driver_version, [&](fake_gpu& g) -> int {
      *v = g.driver;
      return 0;
    });
  }
  static int runtime_version(int* v) noexcept {
    return entered(c_runtime_version, [&](fake_gpu& g) -> int {
      *v = g.runtime;
      return 0;
    });
  }
  static int device_properties(int device, gpu::gpu_device_properties* out) noexcept {
    return entered(c_device_properties, [&](fake_gpu&) -> int {
      std::snprintf(out->name, sizeof out->name, "Fake GPU %d", device);
      out->major = 8;
      out->minor = 7;
      return 0;
    });
  }
  static int current_device(int* device) noexcept {
    return entered(c_current_device, [&](fake_gpu&) -> int {
      *device = 0;
      return 0;
    });
  }
  static int set_device(int) noexcept {
    return entered(c_set_device, [](fake_gpu&) { return 0; });
  }
  static int relax() noexcept {
    return entered(c_relax, [](fake_gpu&) { return 0; });
  }
  static int stream_create(void** stream) noexcept {
    return entered(c_stream_create, [&](fake_gpu& g) -> int {
      *stream = reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x900000 + 16 * g.next_stream_++));
      return 0;
    });
  }
  static int capture_status(void* stream, int* status) noexcept {
    return entered(c_capture_status, [&](fake_gpu& g) -> int {
      *status = g.capturing_.count(stream) ? gpu::gpu_capture_active : gpu::gpu_capture_none;
      return 0;
    });
  }
  static int event_create(void** event) noexcept {
    return entered(c_event_create, [&](fake_gpu& g) -> int {
      void* handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x100000 + 16 * g.events_.size()));
      g.events_[handle] = fake_event{};
      *event = handle;
      return 0;
    });
  }
  static int event_record(void* handle, void* stream) noexcept {
    return entered(c_event_record, [&](fake_gpu& g) -> int {
      auto it = g.events_.find(handle);
      if (it == g.events_.end()) return 400;  // cudaErrorInvalidResourceHandle
      if (g.capturing_.count(stream)) g.captured_records_.fetch_add(1);
      double& cursor = g.cursor_[stream];
      cursor = std::max(cursor, g.now_locked());
      it->second = fake_event{true, stream, cursor};
      return 0;
    });
  }
  static int event_query(void* handle) noexcept {
    return entered(c_event_query, [&](fake_gpu& g) -> int {
      auto it = g.events_.find(handle);
      if (it == g.events_.end()) return 400;
      return !it->second.recorded || g.complete_locked(it->second) ? 0 : gpu::gpu_not_ready;
    });
  }
  static int elapsed(float* ms, void* from, void* to) noexcept {
    return entered(c_elapsed, [&](fake_gpu& g) -> int {
      auto a = g.events_.find(from), b = g.events_.find(to);
      if (a == g.events_.end() || b == g.events_.end() || !a->second.recorded || !b->second.recorded) return 400;
      if (!g.complete_locked(a->second) || !g.complete_locked(b->second)) return gpu::gpu_not_ready;
      // Like the real call: float milliseconds.
      *ms = static_cast<float>((b->second.time - a->second.time) / 1e6);
      return 0;
    });
  }
  static int clear_error() noexcept {
    fake_gpu& g = self();
    std::lock_guard<std::mutex> lock(g.mutex_);
    g.enter(c_clear_error);
    return 0;
  }
  static const char* error_string(int error) noexcept {
    fake_gpu& g = self();
    std::lock_guard<std::mutex> lock(g.mutex_);
    g.enter(c_error_string);
    switch (error) {
      case 35: return "CUDA driver version is insufficient for CUDA runtime version";
      case 100: return "no CUDA-capable device is detected";
      case 400: return "invalid resource handle";
      case 700: return "an illegal memory access was encountered";
      default: return "fake error";
    }
  }

  const gpu::gpu_backend table_ = {
      "fake",         &device_count, &driver_version, &runtime_version, &device_properties, &current_device,
      &set_device,    &relax,        &stream_create,  &capture_status,  &event_create,      &event_record,
      &event_query,   &elapsed,      &clear_error,    &error_string,      &::dlopen,
  };

  mutable std::mutex mutex_;
  std::atomic<long> calls_[c_count] = {};
  static inline thread_local long thread_calls_ = 0;
  std::atomic<long> captured_records_{0};
  call fail_call_ = c_count;
  int fail_error_ = 0;
  int fail_after_ = 0;
  int next_stream_ = 0;
  std::map<void*, fake_event> events_;
  std::map<void*, double> cursor_;
  std::set<void*> held_;
  std::set<void*> capturing_;
};

/// The fake backend, for EDGETRACE_DETAIL_GPU_SCOPE's last argument.
inline const edgetrace::detail::gpu_backend* fake_backend() { return &fake_gpu::instance().backend(); }

}  // namespace edgetrace_test

/// A GPU scope on the fake GPU (what EDGETRACE_CUDA_SCOPE is on the real one).
#define FAKE_GPU_SCOPE(cat, name, stream) EDGETRACE_DETAIL_GPU_SCOPE(cat, name, stream, ::edgetrace_test::fake_backend())
