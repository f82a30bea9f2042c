// SPDX-License-Identifier: MIT
// A stand-in for libnvidia-ml.so.1 (tests/telemetry/sampler_test.cpp, via
// EDGETRACE_NVML_LIBRARY): two GPUs whose readings come from the file named
// by FAKE_NVML_VALUES, read at every call: a line per GPU, "load clock_mhz
// temperature_c power_mw", where `-` makes that call fail as NVML does for
// what a GPU does not support. FAKE_NVML_LOST=N: GPU N gets no handle
// (NVML_ERROR_GPU_IS_LOST).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int not_supported = 3;  // NVML_ERROR_NOT_SUPPORTED

unsigned index_of(void* handle) { return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(handle) - 1); }

/// Field `field` (0..3) of GPU `gpu`'s line; false for `-` or no file.
bool reading(unsigned gpu, int field, unsigned* out) {
  const char* path = std::getenv("FAKE_NVML_VALUES");
  std::FILE* f = path != nullptr ? std::fopen(path, "r") : nullptr;
  if (f == nullptr) return false;
  char line[128] = "";
  for (unsigned i = 0; i <= gpu; ++i)
    if (std::fgets(line, sizeof line, f) == nullptr) line[0] = '\0';
  std::fclose(f);
  char* p = line;
  for (int i = 0; i < field && p != nullptr; ++i) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return false;
  while (*p == ' ') ++p;
  if (*p < '0' || *p > '9') return false;
  *out = static_cast<unsigned>(std::strtoul(p, nullptr, 10));
  return true;
}

}  // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlDeviceGetCount_v2(unsigned* count) { return *count = 2, 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** handle) {
  const char* lost = std::getenv("FAKE_NVML_LOST");
  if (lost != nullptr && *lost != '\0' && std::strtoul(lost, nullptr, 10) == index) return 15;  // NVML_ERROR_GPU_IS_LOST
  *handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(index) + 1);
  return 0;
}
int nvmlDeviceGetName(void* handle, char* name, unsigned size) {
  std::snprintf(name, size, "Fake GPU %u", index_of(handle));
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* handle, unsigned* rates) {
  rates[1] = 0;
  return reading(index_of(handle), 0, &rates[0]) ? 0 : not_supported;
}
int nvmlDeviceGetClockInfo(void* handle, int, unsigned* mhz) { return reading(index_of(handle), 1, mhz) ? 0 : not_supported; }
int nvmlDeviceGetMaxClockInfo(void*, int, unsigned* mhz) { return *mhz = 2520, 0; }
int nvmlDeviceGetTemperature(void* handle, int, unsigned* c) { return reading(index_of(handle), 2, c) ? 0 : not_supported; }
int nvmlDeviceGetPowerUsage(void* handle, unsigned* mw) { return reading(index_of(handle), 3, mw) ? 0 : not_supported; }
}
