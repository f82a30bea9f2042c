// SPDX-License-Identifier: MIT
// CUDA event-pair spans: EDGETRACE_CUDA_SCOPE records a host span plus the
// GPU time of what the scope enqueues on a stream. The only header of
// edgetrace that includes the CUDA runtime; link CUDA::cudart and, before
// glibc 2.34, -ldl (or use the CMake target edgetrace::cuda). It includes
// <edgetrace/nvml.hpp>: the device samples then hold each GPU's load, SM
// clock, temperature and power.
//
//   #include <edgetrace/cuda.hpp>
//   EDGETRACE_CATEGORY(gpu);
//
//   {
//     EDGETRACE_CUDA_SCOPE(gpu, "conv1", stream);   // host span + GPU span on `stream`
//     conv1<<<grid, block, 0, stream>>>(...);
//   }
//   {
//     EDGETRACE_CUDA_SCOPE(gpu, "infer", stream);   // a graph launch is timed whole
//     cudaGraphLaunch(graph_exec, stream);
//   }
//
// Cost per scope after warm-up: a plain scope plus cudaGetDevice, two
// cudaStreamIsCapturing and two cudaEventRecord calls; events come from a
// per-thread pool and are resolved by the flusher thread, never by the app.
// While `stream` is capturing a CUDA graph only the host span is recorded
// (flagged as captured): nothing is added to the graph. With no GPU, no
// driver, a stub driver or any CUDA error, one stderr line says so, GPU
// spans stop and host spans go on. EDGETRACE_CUDA=0 turns GPU spans off.
#pragma once

// nvcc's front end warns about the core headers where g++ and clang++ do
// not: tls_model "does not apply" (it passes the attribute to the host
// compiler anyway), and cpuid outputs "set but never used" (the macro's).
#if defined(__NVCC__)
#pragma nv_diag_suppress 1835
#pragma nv_diag_suppress 550
#endif
// First: NVML then usually registers before sampling begins (it joins later otherwise: nvml.hpp).
#include <edgetrace/nvml.hpp>  // the GPUs' load, clock, temperature, power in the device samples
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/gpu/backend.hpp>
#include <edgetrace/gpu/spans.hpp>
#if defined(__NVCC__)
#pragma nv_diag_default 1835
#pragma nv_diag_default 550
#endif

#include <cstddef>
#include <cstring>

#include <dlfcn.h>

#include <cuda_runtime_api.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// The stream argument of EDGETRACE_CUDA_SCOPE, type-checked as a stream.
inline void* cuda_stream_handle(cudaStream_t stream) noexcept { return static_cast<void*>(stream); }

/// gpu_backend over the CUDA runtime. Each function returns the
/// cudaError_t value as is.
struct cudart_calls {
  static int device_count(int* count) noexcept { return cudaGetDeviceCount(count); }
  static int driver_version(int* version) noexcept { return cudaDriverGetVersion(version); }
  static int runtime_version(int* version) noexcept { return cudaRuntimeGetVersion(version); }
  static int device_properties(int device, gpu_device_properties* out) noexcept {
    cudaDeviceProp properties;
    const cudaError_t error = cudaGetDeviceProperties(&properties, device);
    if (error != cudaSuccess) return error;
    // Both are char[256]; the device name is NUL-terminated within it.
    const std::size_t length = ::strnlen(properties.name, sizeof properties.name);
    const std::size_t kept = length < sizeof out->name - 1 ? length : sizeof out->name - 1;
    std::memcpy(out->name, properties.name, kept);
    out->name[kept] = '\0';
    out->major = properties.major;
    out->minor = properties.minor;
    return cudaSuccess;
  }
  static int current_device(int* device) noexcept { return cudaGetDevice(device); }
  static int set_device(int device) noexcept { return cudaSetDevice(device); }
  static int relax_capture_mode() noexcept {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    return cudaThreadExchangeStreamCaptureMode(&mode);
  }
  static int stream_create(void** stream) noexcept {
    cudaStream_t created = nullptr;
    const cudaError_t error = cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
    *stream = created;
    return error;
  }
  static int stream_capture_status(void* stream, int* status) noexcept {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    const cudaError_t error = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture);
    *status = static_cast<int>(capture);
    return error;
  }
  static int event_create(void** event) noexcept {
    cudaEvent_t created = nullptr;
    const cudaError_t error = cudaEventCreateWithFlags(&created, cudaEventDefault);
    *event = created;
    return error;
  }
  static int event_record(void* event, void* stream) noexcept {
    return cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream));
  }
  static int event_query(void* event) noexcept { return cudaEventQuery(static_cast<cudaEvent_t>(event)); }
  static int event_elapsed_ms(float* ms, void* from, void* to) noexcept {
    return cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(from), static_cast<cudaEvent_t>(to));
  }
  static int clear_error() noexcept { return cudaGetLastError(); }
  static const char* error_string(int error) noexcept { return cudaGetErrorString(static_cast<cudaError_t>(error)); }
};

/// The backend EDGETRACE_CUDA_SCOPE uses.
inline constexpr gpu_backend cudart_backend = {
    "cudart",
    &cudart_calls::device_count,
    &cudart_calls::driver_version,
    &cudart_calls::runtime_version,
    &cudart_calls::device_properties,
    &cudart_calls::current_device,
    &cudart_calls::set_device,
    &cudart_calls::relax_capture_mode,
    &cudart_calls::stream_create,
    &cudart_calls::stream_capture_status,
    &cudart_calls::event_create,
    &cudart_calls::event_record,
    &cudart_calls::event_query,
    &cudart_calls::event_elapsed_ms,
    &cudart_calls::clear_error,
    &cudart_calls::error_string,
    &::dlopen,
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

/// Records a span named by the string literal `name` until the end of the
/// enclosing scope, plus the GPU time between its start and its end on
/// `stream` (a cudaStream_t; 0 is the default stream): a GPU span on that
/// stream's track, linked to the host span.
#define EDGETRACE_CUDA_SCOPE(cat, name, stream) \
  EDGETRACE_DETAIL_GPU_SCOPE(cat, name, ::edgetrace::detail::cuda_stream_handle(stream), &::edgetrace::detail::cudart_backend)

/// The same with a run-time name (an edgetrace::name_handle from
/// edgetrace::intern()), e.g. a layer name read from a model file.
#define EDGETRACE_CUDA_SCOPE_NAMED(cat, handle, stream)                                              \
  EDGETRACE_DETAIL_GPU_SCOPE_NAMED(cat, handle, ::edgetrace::detail::cuda_stream_handle(stream), \
                                   &::edgetrace::detail::cudart_backend)
