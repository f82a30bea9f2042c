// SPDX-License-Identifier: MIT
// The seam through which the device sampler reads NVIDIA GPUs (NVML): a provider that <edgetrace/nvml.hpp> registers, so that only programs which include it (and link dlopen) load libnvidia-ml.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <atomic>
#include <cstddef>
#include <cstdint>

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

/// What the sampler asks of NVML (flusher thread only).
struct nvml_provider {
  /// Loads and initialises NVML; false with `why` set (one line) when it
  /// cannot. Then `devices` GPUs are there (at most 16 are read).
  bool (*open)(unsigned& devices, char* why, std::size_t why_size) noexcept;
  /// GPU `device`'s name (`NVIDIA GeForce RTX 4090`) and its highest SM clock (MHz, 0 unknown).
  void (*describe)(unsigned device, char* name, std::size_t name_size, std::int64_t& max_sm_mhz) noexcept;
  /// GPU `device`'s readings now.
  void (*read)(unsigned device, nvml_reading& out) noexcept;
};

/// The provider <edgetrace/nvml.hpp> registers (null: none).
inline std::atomic<const nvml_provider*>& nvml_slot() noexcept {
  static std::atomic<const nvml_provider*> slot{nullptr};
  return slot;
}

/// Whether the registered provider's code is the main program's, which is
/// never unloaded. The sampler takes a provider registered after sampling
/// began only then: one registered by a library loaded during the run
/// (dlopen) could be unloaded before the sampler first calls it, and its
/// address would be left in the slot (device_sampler::look_for_nvml).
inline std::atomic<bool>& nvml_lasting() noexcept {
  static std::atomic<bool> lasting{false};
  return lasting;
}

/// Why NVML is not read when a library opened during the run registered it.
inline constexpr const char* nvml_opened_late =
    "not read: registered by a library opened during the run (it could be unloaded while sampled)";

/// Registers `provider` (<edgetrace/nvml.hpp>, at static initialisation).
inline void register_nvml(const nvml_provider* provider, bool lasting) noexcept {
  nvml_lasting().store(lasting, std::memory_order_relaxed);
  nvml_slot().store(provider, std::memory_order_release);  // publishes `lasting` too
}

}  // namespace telemetry
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
