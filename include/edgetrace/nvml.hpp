// SPDX-License-Identifier: MIT
// NVIDIA GPUs in the device samples (EDGETRACE_SAMPLE_MS): each GPU's load, SM clock, temperature and power, read by the flusher through NVML, loaded with dlopen when the program starts tracing.
//
//   #include <edgetrace/nvml.hpp>   // in one source file of the program;
//                                   // <edgetrace/cuda.hpp> includes it
//                                   // (CMake: edgetrace::cuda, or link ${CMAKE_DL_LIBS})
//
// Nothing is linked against NVML: libnvidia-ml.so.1 (the driver's; or the
// file EDGETRACE_NVML_LIBRARY names) is opened by the flusher as sampling
// starts. Without it, or without a GPU, `edgetrace info` lists NVML as not
// sampled and everything else goes on. Needs dlopen (in glibc from 2.34;
// -ldl before). Jetson boards have no NVML: their GPU is read from sysfs
// without this header.
//
// What this header adds to a program is one registration (a static
// initialiser): the C library's dlopen and dlsym, through which the
// sampler opens NVML. Where it is included does not matter, nor when it
// registers: before sampling begins, or later (tracing started in another
// file's static initialiser, such as a global model loader's scope; or a
// shared library that includes it opened during the run), when the
// sampler finds it at its next sample and the GPUs' tracks begin there
// (docs/FORMAT.md, 1.12). The sampler never calls code of the object that
// includes it, so a shared library that includes it may be unloaded at any
// time: the GPUs are read on.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE
#include <edgetrace/telemetry/nvml_source.hpp>

#include <dlfcn.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace telemetry {

/// Registered while the object that includes this header is loaded: from
/// its static initialisation to its unloading (dlclose) or the process's exit.
struct nvml_registration {
  nvml_registration() noexcept { register_nvml(&::dlopen, &::dlsym); }
  ~nvml_registration() { unregister_nvml(); }
  nvml_registration(const nvml_registration&) = delete;
  nvml_registration& operator=(const nvml_registration&) = delete;
};

inline nvml_registration nvml_registered_here;

}  // namespace telemetry
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
