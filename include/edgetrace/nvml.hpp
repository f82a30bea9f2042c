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
// Where it is included in the program does not matter. Its registration
// (a static initialiser) usually runs before sampling begins; when it runs
// later (tracing started in another file's static initialiser, such as a
// global model loader's scope), the sampler finds it at its next sample and
// the GPUs' tracks begin there (docs/FORMAT.md, 1.12). A shared library
// that includes it counts when it is loaded before sampling begins (linked
// to the program, or opened early); one opened with dlopen during the run
// is listed as not read: it could be unloaded under the sampler.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE
#include <edgetrace/telemetry/nvml_source.hpp>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <sys/auxv.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace telemetry {

/// NVML's entry points this uses (NVML's C API: 0 is NVML_SUCCESS; a
/// device handle is an opaque pointer).
struct nvml_api {
  int (*init)();
  int (*count)(unsigned*);
  int (*handle)(unsigned, void**);
  int (*name)(void*, char*, unsigned);
  int (*utilization)(void*, unsigned*);  ///< nvmlUtilization_t: {gpu, memory}, two unsigned
  int (*clock)(void*, int, unsigned*);
  int (*max_clock)(void*, int, unsigned*);
  int (*temperature)(void*, int, unsigned*);
  int (*power)(void*, unsigned*);
  void* devices[16];
  int handle_error[16];  ///< NVML's error for a GPU it gave no handle (lost, no permission), else 0
};

inline nvml_api& nvml() noexcept {
  static nvml_api api{};
  return api;
}

template <class Fn>
bool nvml_symbol(void* library, const char* name, Fn& out) noexcept {
  void* symbol = ::dlsym(library, name);
  out = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

inline bool nvml_open(unsigned& devices, char* why, std::size_t why_size) noexcept {
  const char* path = std::getenv("EDGETRACE_NVML_LIBRARY");
  if (path == nullptr || *path == '\0') path = "libnvidia-ml.so.1";
  void* library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::snprintf(why, why_size, "%s not found (no NVIDIA driver; Jetson boards' GPU comes from sysfs)", path);
    return false;
  }
  nvml_api& a = nvml();
  if (!nvml_symbol(library, "nvmlInit_v2", a.init) || !nvml_symbol(library, "nvmlDeviceGetCount_v2", a.count) ||
      !nvml_symbol(library, "nvmlDeviceGetHandleByIndex_v2", a.handle) ||
      !nvml_symbol(library, "nvmlDeviceGetName", a.name) ||
      !nvml_symbol(library, "nvmlDeviceGetUtilizationRates", a.utilization) ||
      !nvml_symbol(library, "nvmlDeviceGetClockInfo", a.clock) ||
      !nvml_symbol(library, "nvmlDeviceGetMaxClockInfo", a.max_clock) ||
      !nvml_symbol(library, "nvmlDeviceGetTemperature", a.temperature) ||
      !nvml_symbol(library, "nvmlDeviceGetPowerUsage", a.power)) {
    std::snprintf(why, why_size, "%s lacks an NVML entry point this needs", path);
    return false;  // left loaded: unloading a driver library is not worth the risk
  }
  unsigned count = 0;
  int error = a.init();
  if (error == 0) error = a.count(&count);
  if (error != 0 || count == 0) {
    std::snprintf(why, why_size, error != 0 ? "NVML did not start (error %d)" : "NVML sees no GPU", error);
    return false;
  }
  devices = 0;
  for (unsigned i = 0; i < count && i < 16; ++i) {
    a.handle_error[i] = a.handle(i, &a.devices[i]);
    if (a.handle_error[i] != 0)
      a.devices[i] = nullptr;  // what NVML leaves there on failure is not a handle
    else
      devices = i + 1;
  }
  return devices != 0;
}

/// A GPU NVML gave no handle (one before a GPU it did: lost, or no
/// permission) keeps its tracks, named so that their lack of values says why.
inline void nvml_describe(unsigned device, char* name, std::size_t name_size, std::int64_t& max_sm_mhz) noexcept {
  nvml_api& a = nvml();
  max_sm_mhz = 0;
  if (a.devices[device] == nullptr) {
    std::snprintf(name, name_size, "GPU %u (NVML gave no handle: error %d)", device, a.handle_error[device]);
    return;
  }
  if (a.name(a.devices[device], name, static_cast<unsigned>(name_size)) != 0) std::snprintf(name, name_size, "GPU %u", device);
  unsigned mhz = 0;
  max_sm_mhz = a.max_clock(a.devices[device], 1 /* NVML_CLOCK_SM */, &mhz) == 0 ? mhz : 0;
}

inline void nvml_read(unsigned device, nvml_reading& out) noexcept {
  nvml_api& a = nvml();
  void* d = a.devices[device];
  if (d == nullptr) return;  // no handle: nothing to ask NVML
  unsigned rates[2] = {0, 0}, value = 0;
  if (a.utilization(d, rates) == 0) out.load_percent = rates[0];
  if (a.clock(d, 1 /* NVML_CLOCK_SM */, &value) == 0) out.sm_mhz = value;
  if (a.temperature(d, 0 /* NVML_TEMPERATURE_GPU */, &value) == 0) out.temperature_c = value;
  if (a.power(d, &value) == 0) out.power_mw = value;
}

inline constexpr nvml_provider nvml_calls = {&nvml_open, &nvml_describe, &nvml_read};

/// Whether this copy of the provider is the main program's (never
/// unloaded), rather than a shared library's: the object that holds it
/// starts where the one holding the program's headers (AT_PHDR) starts.
inline bool nvml_in_main_program() noexcept {
  const unsigned long headers = ::getauxval(AT_PHDR);
  Dl_info program{}, provider{};
  return headers != 0 && ::dladdr(reinterpret_cast<void*>(headers), &program) != 0 &&
         ::dladdr(static_cast<const void*>(&nvml_calls), &provider) != 0 && provider.dli_fbase == program.dli_fbase;
}

/// Registered before main(): the sampler finds it when tracing starts (or
/// later, if it lives in the main program: nvml_lasting).
inline const bool nvml_registered = (register_nvml(&nvml_calls, nvml_in_main_program()), true);

}  // namespace telemetry
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
