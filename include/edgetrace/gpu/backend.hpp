// SPDX-License-Identifier: MIT
// The seam between GPU spans and the CUDA runtime: the few calls the
// tracker makes, as a table of function pointers. cuda.hpp fills it with
// the real CUDA runtime, tests with a fake GPU; nothing here needs CUDA.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <cstddef>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Result codes: the CUDA runtime's own cudaError_t values, so a real
/// backend passes them through and a fake one returns the same numbers.
enum gpu_result : int {
  gpu_success = 0,
  gpu_error_cudart_unloading = 4,   ///< cudaErrorCudartUnloading: the process is exiting
  gpu_error_stub_library = 34,      ///< cudaErrorStubLibrary: libcuda is the toolkit's stub
  gpu_error_insufficient_driver = 35,  ///< cudaErrorInsufficientDriver: no driver, or too old
  gpu_error_no_device = 100,        ///< cudaErrorNoDevice
  gpu_not_ready = 600,              ///< cudaErrorNotReady: not an error, the work is pending
  gpu_error_capture_implicit = 906, ///< cudaErrorStreamCaptureImplicit: legacy stream during a capture
};

/// Capture status of a stream (cudaStreamCaptureStatus values).
enum gpu_capture_status : int { gpu_capture_none = 0, gpu_capture_active = 1, gpu_capture_invalidated = 2 };

/// What the tracker writes about a device.
struct gpu_device_properties {
  char name[256];
  int major;  ///< compute capability
  int minor;
};

/// The CUDA calls GPU spans make, one pointer each; every function returns
/// a gpu_result (cudaError_t) value. Which thread calls what:
///  * the scope's thread: current_device, stream_capture_status,
///    event_create (warm-up only), event_record, clear_error;
///  * the flusher: the rest, after relax_capture_mode (so another thread's
///    stream capture never makes its calls illegal).
/// The first scope's thread also calls device_count and the versions.
struct gpu_backend {
  const char* name;                                  ///< "cudart", "fake": written to the dump
  int (*device_count)(int* count) noexcept;          ///< cudaGetDeviceCount
  int (*driver_version)(int* version) noexcept;      ///< cudaDriverGetVersion
  int (*runtime_version)(int* version) noexcept;     ///< cudaRuntimeGetVersion
  int (*device_properties)(int device, gpu_device_properties* out) noexcept;  ///< cudaGetDeviceProperties
  int (*current_device)(int* device) noexcept;       ///< cudaGetDevice
  int (*set_device)(int device) noexcept;            ///< cudaSetDevice (flusher thread only)
  int (*relax_capture_mode)() noexcept;              ///< cudaThreadExchangeStreamCaptureMode(relaxed)
  int (*stream_create)(void** stream) noexcept;      ///< cudaStreamCreateWithFlags(cudaStreamNonBlocking)
  int (*stream_capture_status)(void* stream, int* status) noexcept;  ///< cudaStreamIsCapturing
  int (*event_create)(void** event) noexcept;        ///< cudaEventCreateWithFlags(cudaEventDefault)
  int (*event_record)(void* event, void* stream) noexcept;  ///< cudaEventRecord
  int (*event_query)(void* event) noexcept;          ///< cudaEventQuery: gpu_success or gpu_not_ready
  int (*event_elapsed_ms)(float* ms, void* from, void* to) noexcept;  ///< cudaEventElapsedTime
  int (*clear_error)() noexcept;                     ///< cudaGetLastError: drops the error a failed call left
  const char* (*error_string)(int error) noexcept;   ///< cudaGetErrorString
  /// The C library's dlopen (null: none), with which the tracker keeps the
  /// objects whose code the flusher calls loaded (gpu_tracker::keep_loaded).
  void* (*open_library)(const char* path, int flags);
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
