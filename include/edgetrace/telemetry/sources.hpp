// SPDX-License-Identifier: MIT
// The device's sources, found once at start-up: per-CPU clock and busy share, thermal zones, throttling counts, the cgroup's CPU quota, memory, Jetson GPU load and clock, EMC clock, INA3221 power rails, NVIDIA GPUs through NVML. Each is optional; a missing one is listed, never an error.
//
// Discovery opens every file it will sample and keeps the descriptor, so a
// sample is one pread per file and no path is built again, within a budget
// of descriptors drawn from RLIMIT_NOFILE (descriptor_budget). It may
// allocate (opendir); sampling never does. Paths go through
// EDGETRACE_SYSFS_ROOT (telemetry/files.hpp) except /proc/self, which is
// always the process's own.
#pragma once

#include <edgetrace/format.hpp>
#include <edgetrace/telemetry/files.hpp>
#include <edgetrace/telemetry/nvml_source.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace telemetry {

inline constexpr std::size_t max_tracks = 512;  ///< system-wide tracks (threads' are on top)
inline constexpr std::size_t max_files = 384;
inline constexpr std::size_t max_cpus = 256;
inline constexpr std::size_t max_missing = 16;

/// How a sampled file is read.
enum class file_kind : std::uint8_t {
  level,           ///< one non-negative number: its track's value
  signed_level,    ///< one number that may be negative (a temperature)
  total,           ///< one non-negative number that only grows
  power,           ///< a rail's mV (fd) and mA (fd2): mW
  proc_stat,       ///< /proc/stat: each CPU's busy share, and other processes' load
  self_stat,       ///< /proc/self/stat: RSS and major faults (and the process's CPU time)
  meminfo,         ///< /proc/meminfo: MemAvailable
  cgroup_cpu_stat, ///< the cgroup's cpu.stat: nr_throttled, throttled_usec
  nvml,            ///< an NVIDIA GPU through NVML (no descriptor): load, SM clock, temperature, power
};

/// One sampled quantity, as the dump describes it.
struct track {
  format::device_quantity quantity = format::device_quantity::cpu_khz;
  std::uint32_t index = 0;      ///< CPU number, zone or rail number
  std::uint32_t thread_id = 0;  ///< the traced thread's dump id; 0: system-wide
  std::int64_t maximum = 0;     ///< the largest value possible (cpuinfo_max_freq), 0 when unknown
  char name[40] = "";           ///< "cpu2", a zone's type, a rail's label
  char source[96] = "";         ///< the file, as under the real /sys or /proc
};

struct sampled_file {
  file_kind kind = file_kind::level;
  int fd = -1;
  int fd2 = -1;               ///< power: the current
  file_identity identity, identity2;  ///< what fd and fd2 named when opened
  std::uint32_t track = 0;    ///< its (first) track id
  std::uint32_t device = 0;   ///< nvml: the GPU's NVML index
};

/// A source looked for and not found (listed once, by `edgetrace info`).
struct missing_source {
  char name[32] = "";
  char why[112] = "";
};

/// The descriptors the sampler may hold, from RLIMIT_NOFILE's soft limit
/// at discovery: at most an eighth of it, and none numbered in its upper
/// half (the lowest free number is what open() returns, so a number that
/// high means the app already holds half its table). A thread's files are
/// opened at each sample and closed at once, so the sampler holds the same
/// number of descriptors for 1 traced thread as for 256; an app that needs
/// most of its limit gets it, traced as untraced.
struct descriptor_budget {
  std::size_t most = 2 * max_files;
  long ceiling = 1L << 20;  ///< descriptor numbers from here are not held
  std::size_t held = 0, refused = 0;
  long limit = 0;  ///< the soft limit read (0: none)

  static descriptor_budget from_limit() noexcept {
    descriptor_budget b;
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur > (1u << 20)) return b;
    b.limit = static_cast<long>(r.rlim_cur);
    b.most = static_cast<std::size_t>(b.limit / 8) < b.most ? static_cast<std::size_t>(b.limit / 8) : b.most;
    b.ceiling = b.limit / 2;
    return b;
  }
  /// Keeps `fd` (true) or closes it as over the budget (false).
  bool keep(int fd) noexcept {
    if (held < most && fd < ceiling) {
      ++held;
      return true;
    }
    ::close(fd);
    ++refused;
    return false;
  }
  /// Closes a kept descriptor found useless before it was ever shared.
  void give_back(int fd) noexcept {
    ::close(fd);
    --held;
  }
};

/// What discovery found. Track ids are index + 1.
struct source_set {
  track tracks[max_tracks];
  std::size_t track_count = 0;
  sampled_file files[max_files];
  std::size_t file_count = 0;
  missing_source missing[max_missing];
  std::size_t missing_count = 0;
  /// /proc/stat's track per CPU (0: none), the "others" track and the
  /// hypervisor's steal.
  std::uint32_t cpu_busy_track[max_cpus] = {};
  std::uint32_t others_track = 0;
  std::uint32_t steal_track = 0;
  std::uint32_t cpus_in_stat = 0;
  /// NVML was not registered at discovery: the sampler looks again at
  /// each sample (device_sampler::look_for_nvml).
  bool nvml_unregistered = false;
  descriptor_budget descriptors;

  ~source_set() { close_all(); }

  /// Closes what is still the sampler's (close_if_still).
  void close_all() noexcept {
    for (std::size_t i = 0; i < file_count; ++i) {
      close_if_still(files[i].fd, files[i].identity);
      close_if_still(files[i].fd2, files[i].identity2);
    }
    file_count = 0;
    descriptors.held = 0;
  }

  /// Opens `root` + `path` to hold (open_sampled) within the budget; -1
  /// when it cannot be opened or the budget is spent.
  int open_held(const char* root, const char* path, file_identity& identity) noexcept {
    char full[700];
    if (!join(full, sizeof full, root, path)) return -1;
    const int fd = open_sampled(full, &identity);
    return fd >= 0 && descriptors.keep(fd) ? fd : -1;
  }

  /// A new track; 0 when the table is full.
  std::uint32_t add_track(format::device_quantity q, std::uint32_t index, const char* name, const char* source,
                          std::int64_t maximum = 0) noexcept {
    if (track_count == max_tracks) return 0;
    track& t = tracks[track_count++];
    t.quantity = q;
    t.index = index;
    t.maximum = maximum;
    copy_text(t.name, sizeof t.name, name);
    copy_text(t.source, sizeof t.source, source);
    return static_cast<std::uint32_t>(track_count);
  }

  /// Opens `root` + `path` as a file of `kind` with a new track; false when
  /// it cannot be opened (nothing is added then).
  bool add_file(file_kind kind, const char* root, const char* path, format::device_quantity q, std::uint32_t index,
                const char* name, std::int64_t maximum = 0) noexcept {
    if (file_count == max_files || track_count == max_tracks) return false;
    const int fd = open_held(root, path, files[file_count].identity);
    if (fd < 0) return false;
    files[file_count].kind = kind;
    files[file_count].fd = fd;
    files[file_count].fd2 = -1;
    files[file_count].track = add_track(q, index, name, path, maximum);
    ++file_count;
    return true;
  }

  void add_missing(const char* name, const char* why) noexcept {
    if (missing_count == max_missing) return;
    copy_text(missing[missing_count].name, sizeof missing[missing_count].name, name);
    copy_text(missing[missing_count].why, sizeof missing[missing_count].why, why);
    ++missing_count;
  }
};

/// A small file under `root` as one number (cpuinfo_max_freq); `fallback`
/// when absent or garbage.
inline std::int64_t read_number_once(const char* root, const char* path, std::int64_t fallback) noexcept {
  char full[512], text[64];
  std::int64_t value = 0;
  if (!join(full, sizeof full, root, path) || !read_small(full, text, sizeof text) || !parse_whole(text, false, value))
    return fallback;
  return value;
}

/// A small file under `root` as a name (a zone's type, a rail's label),
/// first line only; `fallback` when absent.
inline void read_name_once(const char* root, const char* path, char* out, std::size_t capacity,
                           const char* fallback) noexcept {
  char full[512], text[64];
  if (!join(full, sizeof full, root, path) || !read_small(full, text, sizeof text)) text[0] = '\0';
  text[std::strcspn(text, "\r\n")] = '\0';
  if (text[0] != '\0') copy_text(out, capacity, text);
  else if (out != fallback) copy_text(out, capacity, fallback);
}

/// Per CPU: cpufreq's clock (with its maximum) and x86's thermal throttling count.
inline void find_cpus(source_set& s, const char* root) noexcept {
  std::size_t clocks = 0, throttles = 0;
  for (std::uint32_t cpu = 0, misses = 0; cpu < max_cpus && misses < 64; ++cpu) {
    char dir[96], path[160], name[16];
    std::snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu%u", cpu);
    std::snprintf(name, sizeof name, "cpu%u", cpu);
    std::snprintf(path, sizeof path, "%s/cpufreq/cpuinfo_max_freq", dir);
    const std::int64_t max_khz = read_number_once(root, path, 0);
    std::snprintf(path, sizeof path, "%s/cpufreq/scaling_cur_freq", dir);
    const bool clock = s.add_file(file_kind::level, root, path, format::device_quantity::cpu_khz, cpu, name, max_khz);
    std::snprintf(path, sizeof path, "%s/thermal_throttle/core_throttle_count", dir);
    const bool throttle = s.add_file(file_kind::total, root, path, format::device_quantity::throttle_total, cpu, name);
    clocks += clock ? 1 : 0;
    throttles += throttle ? 1 : 0;
    misses = clock || throttle ? 0 : misses + 1;
  }
  if (clocks == 0) s.add_missing("cpufreq", "no /sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq (a VM or a container without /sys)");
  if (throttles == 0) s.add_missing("thermal_throttle", "no /sys/devices/system/cpu/cpu*/thermal_throttle (x86 only)");
}

/// /proc/stat: a busy-share track per CPU line, other processes' load, and
/// the time a hypervisor took (steal).
/// `text` (of `capacity`) is room to read it.
inline void find_proc_stat(source_set& s, const char* root, char* text, std::size_t capacity) noexcept {
  const int fd = s.file_count < max_files ? s.open_held(root, "/proc/stat", s.files[s.file_count].identity) : -1;
  if (fd < 0 || read_at_start(fd, text, capacity) <= 0) {
    if (fd >= 0) s.descriptors.give_back(fd);
    s.add_missing("/proc/stat", "not readable: no CPU busy shares, no other processes' load");
    return;
  }
  for (const char* line = std::strstr(text, "\ncpu"); line != nullptr; line = std::strstr(line + 1, "\ncpu")) {
    const char* p = line + 4;
    std::int64_t cpu = 0;
    if (!parse_number(p, false, cpu) || cpu < 0 || static_cast<std::uint64_t>(cpu) >= max_cpus) continue;
    char name[16];
    std::snprintf(name, sizeof name, "cpu%u", static_cast<unsigned>(cpu));
    s.cpu_busy_track[cpu] = s.add_track(format::device_quantity::cpu_busy_permille, static_cast<std::uint32_t>(cpu), name, "/proc/stat");
    ++s.cpus_in_stat;
  }
  s.others_track = s.add_track(format::device_quantity::others_busy_permille, 0, "other processes", "/proc/stat");
  s.steal_track = s.add_track(format::device_quantity::steal_permille, 0, "hypervisor", "/proc/stat");
  s.files[s.file_count].kind = file_kind::proc_stat;
  s.files[s.file_count].fd = fd;
  s.files[s.file_count].track = s.others_track;
  ++s.file_count;
}

/// Numbered sysfs entries (thermal_zone0.., hwmon0..) may have gaps (a
/// removed device): calls `probe(n, name)` with the first line of entry n's
/// name file (`name_format`, %u for n; `fallback` when absent) for n below
/// `limit`, until `probe` said false 8 times in a row.
template <typename Probe>
void for_each_numbered(const char* root, const char* name_format, std::uint32_t limit, const char* fallback,
                       Probe&& probe) noexcept {
  for (std::uint32_t n = 0, misses = 0; n < limit && misses < 8; ++n) {
    char path[160], name[40];
    std::snprintf(path, sizeof path, name_format, n);
    read_name_once(root, path, name, sizeof name, fallback);
    misses = probe(n, static_cast<const char*>(name)) ? 0 : misses + 1;
  }
}

/// Thermal zones by type.
inline void find_thermal(source_set& s, const char* root) noexcept {
  std::size_t found = 0;
  for_each_numbered(root, "/sys/class/thermal/thermal_zone%u/type", 64, "zone", [&](std::uint32_t zone, const char* name) {
    char path[160];
    std::snprintf(path, sizeof path, "/sys/class/thermal/thermal_zone%u/temp", zone);
    const bool ok = s.add_file(file_kind::signed_level, root, path, format::device_quantity::temperature_mc, zone, name);
    found += ok ? 1 : 0;
    return ok;
  });
  if (found == 0) s.add_missing("thermal", "no /sys/class/thermal/thermal_zone*/temp");
}

/// The cgroup (v2) of the process: its cpu.stat counts quota throttling.
inline void find_cgroup_cpu(source_set& s, const char* root) noexcept {
  char cgroups[4096], path[600];
  const char* dir = nullptr;
  if (read_small("/proc/self/cgroup", cgroups, sizeof cgroups)) {
    for (char* line = cgroups; line != nullptr && *line != '\0';) {
      char* next = std::strchr(line, '\n');
      if (next != nullptr) *next++ = '\0';
      if (std::strncmp(line, "0::", 3) == 0) dir = std::strcmp(line + 3, "/") == 0 ? "" : line + 3;
      line = next;
    }
  }
  char text[1024];
  std::int64_t value = 0;
  if (dir == nullptr || !join(path, sizeof path, "/sys/fs/cgroup", dir, "/cpu.stat") || s.file_count == max_files) {
    s.add_missing("cgroup cpu.stat", "no cgroup v2 in /proc/self/cgroup");
    return;
  }
  const int fd = s.open_held(root, path, s.files[s.file_count].identity);
  if (fd < 0 || read_at_start(fd, text, sizeof text) <= 0 || !parse_keyed(text, "nr_throttled ", value)) {
    if (fd >= 0) s.descriptors.give_back(fd);
    s.add_missing("cgroup cpu.stat", "no nr_throttled in the cgroup's cpu.stat (no CPU controller)");
    return;
  }
  s.files[s.file_count].kind = file_kind::cgroup_cpu_stat;
  s.files[s.file_count].fd = fd;
  s.files[s.file_count].track = s.add_track(format::device_quantity::cgroup_throttled_total, 0, "cgroup", path);
  s.add_track(format::device_quantity::cgroup_throttled_us_total, 0, "cgroup", path);
  ++s.file_count;
}

/// Memory: the process's RSS and major faults, the system's MemAvailable.
inline void find_memory(source_set& s, const char* root) noexcept {
  if (s.add_file(file_kind::self_stat, "", "/proc/self/stat", format::device_quantity::rss_kb, 0, "process"))
    s.add_track(format::device_quantity::major_faults_total, 0, "process", "/proc/self/stat");
  else
    s.add_missing("/proc/self/stat", "not readable: no RSS or page faults");
  if (!s.add_file(file_kind::meminfo, root, "/proc/meminfo", format::device_quantity::mem_available_kb, 0, "system"))
    s.add_missing("/proc/meminfo", "not readable: no MemAvailable");
}

/// Whether a devfreq device is a GPU (Jetson's gk20a, gp10b, gv11b, ga10b,
/// gpu.0, 17000000.gpu...) or the memory controller.
inline bool is_gpu_devfreq(const char* name) noexcept {
  for (const char* part : {"gpu", "gk20a", "gm20b", "gp10b", "gv11b", "ga10b"})
    if (std::strstr(name, part) != nullptr) return true;
  return false;
}

/// Jetson: devfreq's GPU and EMC clocks, the GPU's load file.
inline void find_devfreq(source_set& s, const char* root) noexcept {
  char dir_path[512];
  std::size_t gpus = 0, emcs = 0, loads = 0;
  DIR* dir = join(dir_path, sizeof dir_path, root, "/sys/class/devfreq") ? ::opendir(dir_path) : nullptr;
  for (const dirent* e = dir != nullptr ? ::readdir(dir) : nullptr; e != nullptr; e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const bool gpu = is_gpu_devfreq(e->d_name), emc = std::strstr(e->d_name, "emc") != nullptr;
    if (!gpu && !emc) continue;
    char path[400];
    std::snprintf(path, sizeof path, "/sys/class/devfreq/%.200s/max_freq", e->d_name);
    const std::int64_t max_hz = read_number_once(root, path, 0);
    std::snprintf(path, sizeof path, "/sys/class/devfreq/%.200s/cur_freq", e->d_name);
    const std::uint32_t index = static_cast<std::uint32_t>(gpu ? gpus : emcs);
    if (!s.add_file(file_kind::level, root, path, gpu ? format::device_quantity::gpu_hz : format::device_quantity::emc_hz,
                    index, e->d_name, max_hz))
      continue;
    (gpu ? gpus : emcs) += 1;
    std::snprintf(path, sizeof path, "/sys/class/devfreq/%.200s/device/load", e->d_name);
    if (gpu && s.add_file(file_kind::level, root, path, format::device_quantity::gpu_load_permille, index, e->d_name)) ++loads;
  }
  if (dir != nullptr) ::closedir(dir);
  // Older Jetsons: the GPU's load file without a devfreq link to it.
  for (const char* path : {"/sys/devices/gpu.0/load", "/sys/devices/platform/gpu.0/load"})
    if (loads == 0 && s.add_file(file_kind::level, root, path, format::device_quantity::gpu_load_permille, 0, "gpu")) ++loads;
  if (gpus == 0 && loads == 0) s.add_missing("GPU (devfreq)", "no GPU in /sys/class/devfreq (Jetson boards have one)");
  if (emcs == 0) s.add_missing("EMC (devfreq)", "no memory-controller clock in /sys/class/devfreq");
}

/// The labelled channels of INA3221 number `hw`: a track each, mV × mA.
/// How many were added.
inline std::size_t add_ina3221_rails(source_set& s, const char* root, std::uint32_t hw) noexcept {
  std::size_t rails = 0;
  for (std::uint32_t channel = 1; channel <= 3 && s.file_count < max_files; ++channel) {
    char path[160], label[40], volts[160], amps[160];
    std::snprintf(path, sizeof path, "/sys/class/hwmon/hwmon%u/in%u_label", hw, channel);
    std::snprintf(label, sizeof label, "rail %u.%u", hw, channel);
    read_name_once(root, path, label, sizeof label, label);
    std::snprintf(volts, sizeof volts, "/sys/class/hwmon/hwmon%u/in%u_input", hw, channel);
    std::snprintf(amps, sizeof amps, "/sys/class/hwmon/hwmon%u/curr%u_input", hw, channel);
    file_identity identity;
    const int current = s.open_held(root, amps, identity);
    if (current < 0) continue;
    if (!s.add_file(file_kind::power, root, volts, format::device_quantity::power_mw, hw * 4 + channel, label)) {
      s.descriptors.give_back(current);
      continue;
    }
    s.files[s.file_count - 1].identity2 = identity;
    s.files[s.file_count - 1].fd2 = current;
    ++rails;
  }
  return rails;
}

/// INA3221 power monitors (Jetson), among the hwmon devices.
inline void find_power(source_set& s, const char* root) noexcept {
  std::size_t rails = 0;
  for_each_numbered(root, "/sys/class/hwmon/hwmon%u/name", 32, "", [&](std::uint32_t hw, const char* name) {
    if (name[0] == '\0') return false;
    if (std::strncmp(name, "ina3221", 7) == 0) rails += add_ina3221_rails(s, root, hw);
    return true;
  });
  if (rails == 0) s.add_missing("power (INA3221)", "no ina3221 in /sys/class/hwmon (Jetson boards have one)");
}

/// NVIDIA GPUs through NVML, when an object that includes
/// <edgetrace/nvml.hpp> (which registers dlopen and dlsym) is loaded and
/// the driver's library opens: a file and four tracks per GPU, or NVML
/// listed missing with the reason. False when nothing is registered yet:
/// NVML is listed missing then too, and the sampler looks again at each
/// sample (device_sampler::look_for_nvml); a reader drops the entry once
/// its tracks are defined (docs/FORMAT.md, 1.12).
inline bool find_nvml(source_set& s) noexcept {
  const nvml_registry& loader = nvml_registered();
  if (loader.loaded.load(std::memory_order_acquire) == 0) {
    s.add_missing("NVML", nvml_unregistered_why());
    return false;
  }
  unsigned devices = 0;
  char why[112] = "";
  if (!nvml_open(loader, devices, why, sizeof why)) {
    s.add_missing("NVML", why);
    return true;
  }
  for (unsigned d = 0; d < devices && s.file_count < max_files && s.track_count + 4 <= max_tracks; ++d) {
    char name[40] = "";
    std::int64_t max_mhz = 0;
    nvml_describe(d, name, sizeof name, max_mhz);
    sampled_file& f = s.files[s.file_count++];
    f.kind = file_kind::nvml;
    f.device = d;
    f.track = s.add_track(format::device_quantity::gpu_load_permille, d, name, "NVML");
    s.add_track(format::device_quantity::gpu_hz, d, name, "NVML", max_mhz * 1000000);
    s.add_track(format::device_quantity::temperature_mc, d, name, "NVML");
    s.add_track(format::device_quantity::power_mw, d, name, "NVML");
  }
  return true;
}

/// Finds every source under `root` ("" for the machine's own); `text` (of
/// `capacity`) is room to read the largest file sampled, /proc/stat.
inline void discover(source_set& s, const char* root, char* text, std::size_t capacity) noexcept {
  s.close_all();
  s.descriptors = descriptor_budget::from_limit();
  s.track_count = s.missing_count = 0;
  s.others_track = s.steal_track = s.cpus_in_stat = 0;
  s.nvml_unregistered = false;
  std::memset(s.cpu_busy_track, 0, sizeof s.cpu_busy_track);
  find_cpus(s, root);
  find_proc_stat(s, root, text, capacity);
  find_thermal(s, root);
  find_cgroup_cpu(s, root);
  find_memory(s, root);
  find_devfreq(s, root);
  find_power(s, root);
  s.nvml_unregistered = !find_nvml(s);
  if (s.descriptors.refused != 0) {
    char why[112];
    std::snprintf(why, sizeof why, "%zu file%s not sampled: %zu descriptors held at most (RLIMIT_NOFILE %ld)",
                  s.descriptors.refused, s.descriptors.refused == 1 ? "" : "s", s.descriptors.most, s.descriptors.limit);
    s.add_missing("descriptors", why);
  }
}

}  // namespace telemetry
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
