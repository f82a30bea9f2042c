// SPDX-License-Identifier: MIT
// A Jetson-like board's files under a test folder, for EDGETRACE_SYSFS_ROOT
// (tests/telemetry/): four CPUs with cpufreq and a throttling count, two
// thermal zones, a GPU and an EMC in devfreq (the GPU's load file too),
// an INA3221 with two rails, /proc/stat, /proc/meminfo, and the cgroup's
// cpu.stat where this process's /proc/self/cgroup says it is.
#pragma once

#include <support/files.hpp>

#include <cstdio>
#include <fcntl.h>
#include <initializer_list>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace edgetrace_test {

/// Writes `text` to `root` + `path`, making its folders. In place, as the
/// kernel's files change (the sampler keeps its descriptor: a file renamed
/// over would never be seen), and never empty on the way: the new bytes go
/// over the old, then the file is cut to their length (a sampler reading
/// between the two sees the new value and the old one's last bytes, a
/// newline when both end with one and the new is not longer).
inline void put_file(const std::string& root, const std::string& path, const std::string& text) {
  const std::string full = root + path;
  for (std::size_t slash = full.find('/', 1); slash != std::string::npos; slash = full.find('/', slash + 1))
    ::mkdir(full.substr(0, slash).c_str(), 0755);
  const int fd = ::open(full.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
    if (::ftruncate(fd, static_cast<off_t>(text.size())) != 0) std::perror("put_file: ftruncate");
  ::close(fd);
}

/// The cgroup v2 path of this process ("" for the root), as the sampler finds it.
/// Each CPU's scaling_cur_freq on the board at `root`, cpu0 first.
inline void put_cpu_clocks(const std::string& root, std::initializer_list<const char*> texts) {
  int cpu = 0;
  for (const char* text : texts)
    put_file(root, "/sys/devices/system/cpu/cpu" + std::to_string(cpu++) + "/cpufreq/scaling_cur_freq", text);
}

inline std::string own_cgroup() {
  const std::string text = read_file("/proc/self/cgroup");
  const std::size_t at = text.find("0::");
  if (at == std::string::npos) return "-";  // no cgroup v2: the sampler lists cpu.stat as missing
  std::string path = text.substr(at + 3, text.find('\n', at) - at - 3);
  return path == "/" ? "" : path;
}

/// The /proc/stat of a four-CPU board whose CPUs have been busy `busy`
/// (user time), idle `idle` and stolen by a hypervisor `steal` jiffies each.
inline std::string proc_stat(long busy, long idle, long steal = 0) {
  const std::string rest = " 0 0 0 " + std::to_string(steal) + " 0 0\n";
  std::string text = "cpu  " + std::to_string(4 * busy) + " 0 0 " + std::to_string(4 * idle) + " 0 0 0 " +
                     std::to_string(4 * steal) + " 0 0\n";
  for (int cpu = 0; cpu < 4; ++cpu)
    text += "cpu" + std::to_string(cpu) + " " + std::to_string(busy) + " 0 0 " + std::to_string(idle) + rest;
  return text + "intr 0\nctxt 0\nbtime 0\n";
}

/// Builds the board under `root` (a fresh folder).
inline void fake_board(const std::string& root) {
  ::mkdir(root.c_str(), 0755);
  for (int cpu = 0; cpu < 4; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
    put_file(root, dir + "/cpufreq/scaling_cur_freq", "1984000\n");
    put_file(root, dir + "/cpufreq/cpuinfo_max_freq", "1984000\n");
    put_file(root, dir + "/thermal_throttle/core_throttle_count", "0\n");
  }
  put_file(root, "/sys/class/thermal/thermal_zone0/type", "CPU-therm\n");
  put_file(root, "/sys/class/thermal/thermal_zone0/temp", "45500\n");
  put_file(root, "/sys/class/thermal/thermal_zone1/type", "GPU-therm\n");
  put_file(root, "/sys/class/thermal/thermal_zone1/temp", "43000\n");
  put_file(root, "/sys/class/devfreq/17000000.ga10b/cur_freq", "918000000\n");
  put_file(root, "/sys/class/devfreq/17000000.ga10b/max_freq", "918000000\n");
  put_file(root, "/sys/class/devfreq/17000000.ga10b/device/load", "250\n");
  put_file(root, "/sys/class/devfreq/bpmp-emc/cur_freq", "2133000000\n");
  put_file(root, "/sys/class/hwmon/hwmon0/name", "ina3221\n");
  put_file(root, "/sys/class/hwmon/hwmon0/in1_label", "VDD_IN\n");
  put_file(root, "/sys/class/hwmon/hwmon0/in1_input", "5000\n");
  put_file(root, "/sys/class/hwmon/hwmon0/curr1_input", "1200\n");
  put_file(root, "/sys/class/hwmon/hwmon0/in2_label", "VDD_CPU_GPU_CV\n");
  put_file(root, "/sys/class/hwmon/hwmon0/in2_input", "5000\n");
  put_file(root, "/sys/class/hwmon/hwmon0/curr2_input", "400\n");
  put_file(root, "/proc/stat", proc_stat(100, 900));
  put_file(root, "/proc/meminfo", "MemTotal:        7620000 kB\nMemFree:  100 kB\nMemAvailable:    5000000 kB\n");
  const std::string cgroup = own_cgroup();
  if (cgroup != "-") put_file(root, "/sys/fs/cgroup" + cgroup + "/cpu.stat", "usage_usec 10\nnr_periods 5\nnr_throttled 2\nthrottled_usec 300\n");
}

}  // namespace edgetrace_test
