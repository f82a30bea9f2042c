// SPDX-License-Identifier: MIT
// NVIDIA GPUs (NVML) for the device sampler: libnvidia-ml is opened through the C library's dlopen and dlsym, which <edgetrace/nvml.hpp> registers, so that only programs which include it need dlopen; after that the sampler calls NVML itself, never code of the object that registered (a library unloaded during the run leaves nothing behind that the sampler calls).
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <dlfcn.h>  // RTLD_NOW, RTLD_LOCAL only: the calls are the registered ones

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace telemetry {

/// One GPU's readings; a field is -1 when NVML did not give it.
struct nvml_reading {
  std::int64_t load_percent = -1;  ///< nvmlDeviceGetUtilizationRates().gpu
  std::int64_t sm_mhz = -1;        ///< nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  std::int64_t temperature_c = -1; ///< nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)
  std::int64_t power_mw = -1;      ///< nvmlDeviceGetPowerUsage
};

using library_open_fn = void* (*)(const char* path, int flags);  ///< dlopen
using symbol_find_fn = void* (*)(void* library, const char* name);  ///< dlsym

/// What <edgetrace/nvml.hpp> registers: the C library's dlopen and dlsym
/// (the same functions whoever registers), and how many loaded objects
/// that include it registered them. A count back at 0 means the last such
/// object was unloaded: before glibc 2.34 its dlopen was libdl's, which may
/// have gone with it, so the sampler does not call it then.
struct nvml_registry {
  std::atomic<library_open_fn> open_library{nullptr};
  std::atomic<symbol_find_fn> find_symbol{nullptr};
  std::atomic<unsigned> loaded{0};
};

inline nvml_registry& nvml_registered() noexcept {
  static nvml_registry registry;
  return registry;
}

/// At an object's static initialisation (<edgetrace/nvml.hpp>).
inline void register_nvml(library_open_fn open_library, symbol_find_fn find_symbol) noexcept {
  nvml_registry& r = nvml_registered();
  r.open_library.store(open_library, std::memory_order_relaxed);
  r.find_symbol.store(find_symbol, std::memory_order_relaxed);
  r.loaded.fetch_add(1, std::memory_order_release);  // publishes both
}

/// When that object is unloaded (dlclose) or the process exits.
inline void unregister_nvml() noexcept { nvml_registered().loaded.fetch_sub(1, std::memory_order_release); }

/// Why NVML is not read when no object that includes nvml.hpp is loaded.
inline const char* nvml_unregistered_why() noexcept {
  return nvml_registered().open_library.load(std::memory_order_relaxed) != nullptr
             ? "not read: the library that included <edgetrace/nvml.hpp> was unloaded before sampling began"
             : "not read: a desktop GPU's load, clock and power need <edgetrace/nvml.hpp> (cuda.hpp includes it)";
}

/// NVML's entry points this uses (NVML's C API: 0 is NVML_SUCCESS; a
/// device handle is an opaque pointer). Flusher thread only.
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
bool nvml_symbol(symbol_find_fn find_symbol, void* library, const char* name, Fn& out) noexcept {
  void* symbol = find_symbol(library, name);
  out = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

/// Loads and initialises NVML (libnvidia-ml.so.1, or the file
/// EDGETRACE_NVML_LIBRARY names) through the registered dlopen and dlsym,
/// which the caller loaded with `loaded` above 0. False with `why` set (one
/// line) when it cannot; then `devices` GPUs are there (at most 16).
inline bool nvml_open(const nvml_registry& loader, unsigned& devices, char* why, std::size_t why_size) noexcept {
  const library_open_fn open_library = loader.open_library.load(std::memory_order_relaxed);
  const symbol_find_fn find_symbol = loader.find_symbol.load(std::memory_order_relaxed);
  const char* path = std::getenv("EDGETRACE_NVML_LIBRARY");
  if (path == nullptr || *path == '\0') path = "libnvidia-ml.so.1";
  void* library = open_library(path, RTLD_NOW | RTLD_LOCAL);  // never closed: its calls stay valid for the run
  if (library == nullptr) {
    std::snprintf(why, why_size, "%s not found (no NVIDIA driver; Jetson boards' GPU comes from sysfs)", path);
    return false;
  }
  nvml_api& a = nvml();
  if (!nvml_symbol(find_symbol, library, "nvmlInit_v2", a.init) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetCount_v2", a.count) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetHandleByIndex_v2", a.handle) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetName", a.name) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetUtilizationRates", a.utilization) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetClockInfo", a.clock) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetMaxClockInfo", a.max_clock) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetTemperature", a.temperature) ||
      !nvml_symbol(find_symbol, library, "nvmlDeviceGetPowerUsage", a.power)) {
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

/// GPU `device`'s name (`NVIDIA GeForce RTX 4090`) and its highest SM clock
/// (MHz, 0 unknown). A GPU NVML gave no handle (one before a GPU it did:
/// lost, or no permission) keeps its tracks, named so that their lack of
/// values says why.
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

/// GPU `device`'s readings now; false for a GPU NVML gave no handle (then
/// nothing is asked).
inline bool nvml_read(unsigned device, nvml_reading& out) noexcept {
  nvml_api& a = nvml();
  void* d = a.devices[device];
  if (d == nullptr) return false;
  unsigned rates[2] = {0, 0}, value = 0;
  if (a.utilization(d, rates) == 0) out.load_percent = rates[0];
  if (a.clock(d, 1 /* NVML_CLOCK_SM */, &value) == 0) out.sm_mhz = value;
  if (a.temperature(d, 0 /* NVML_TEMPERATURE_GPU */, &value) == 0) out.temperature_c = value;
  if (a.power(d, &value) == 0) out.power_mw = value;
  return true;
}

}  // namespace telemetry
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
