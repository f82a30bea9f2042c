// SPDX-License-Identifier: MIT
// The device sampler on its own (telemetry/sampler.hpp): a fake Jetson-like board's files become tracks with their values, changes are seen at the next sample, garbage is ignored and counted, a sandbox without /sys lists every source as missing, and sampling allocates nothing after start-up.
#include <doctest/doctest.h>

#include <support/fake_board.hpp>
#include <support/sanitizers.hpp>
#include <support/spawn.hpp>  // monotonic_ns
#include <support/test_env.hpp>

#include <edgetrace/decode/detail/device_chunks.hpp>
#include <edgetrace/nvml.hpp>  // registers NVML: this program loads support/fake_nvml.cpp's stand-in
#include <edgetrace/reader.hpp>
#include <edgetrace/telemetry/sampler.hpp>

#include <atomic>
#include <condition_variable>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

// Every allocation of this program is counted while `counting` is on (the
// telemetry room's program): sampling must make none after start-up.
#include <support/count_allocations.hpp>

namespace sampler_test {

using namespace edgetrace_test;
namespace er = edgetrace::reader;
namespace tm = edgetrace::detail::telemetry;
using Q = edgetrace::format::device_quantity;

/// What sampling wrote, decoded by the reader's own functions.
struct decoded {
  er::writer_info writer;
  er::detail::diagnostic_log log;
  std::uint64_t chunks = 0;

  void take(edgetrace::format::chunk_type type, const unsigned char* payload, std::size_t size) {
    ++chunks;
    er::detail::payload_cursor in{payload, payload + size};
    if (type == edgetrace::format::chunk_type::device_tracks) er::detail::read_device_tracks(log, writer, in, 0);
    else if (type == edgetrace::format::chunk_type::device_samples) er::detail::read_device_samples(log, writer, in, 0);
  }

  /// The track of `q` named `name` (any name when empty); null when none.
  const er::device_track* track(Q q, const std::string& name = "") const {
    for (const er::device_track& t : writer.device.tracks)
      if (t.quantity == q && (name.empty() || t.name == name)) return &t;
    return nullptr;
  }
  /// Why `source` is listed missing, each time it is (none: not missing).
  std::vector<std::string> missing_why(const std::string& source) const {
    std::vector<std::string> why;
    for (const er::device_missing& m : writer.device.missing)
      if (m.name == source) why.push_back(m.why);
    return why;
  }
  /// The last value sampled of a track, by its id; `missing` when none.
  std::int64_t last(const er::device_track* t, std::int64_t missing = -999) const {
    std::int64_t value = missing;
    if (t == nullptr) return value;
    const std::size_t index = writer.device.track_index.at(t->id);
    for (const er::device_sample& s : writer.device.samples)
      if (s.track == index) value = s.value;
    return value;
  }
  std::size_t values_of(const er::device_track* t, std::uint64_t tick) const {
    std::size_t n = 0;
    for (const er::device_sample& s : writer.device.samples)
      n += t != nullptr && s.tick == tick && s.track == writer.device.track_index.at(t->id) ? 1 : 0;
    return n;
  }
};

std::uint64_t own_tid() { return static_cast<std::uint64_t>(::syscall(SYS_gettid)); }

/// One sample at `tick` (and ns = tick ms) with this thread as traced thread 1
/// (or, with `traced_thread` false, no traced thread).
void sample(tm::device_sampler& s, decoded& out, std::uint64_t tick, bool traced_thread = true) {
  s.sample({tick, monotonic_ns()}, tick * 1000000u, [traced_thread](auto&& add) { if (traced_thread) add(1, own_tid()); },
           [&out](edgetrace::format::chunk_type type, const unsigned char* p, std::size_t n) { out.take(type, p, n); });
}

/// The files one sample at `tick` reads system-wide, as its stats record
/// counts them: with no traced thread, whose status file is read only when
/// it waited on a run queue since the last sample (timing, not the board).
std::uint64_t system_files(tm::device_sampler& s, std::uint64_t tick) {
  decoded out;
  sample(s, out, tick, false);
  return out.writer.device.files_last;
}

/// A sampler started on the board at `root` (10 ms), its first sample
/// (tick 1) in `d`.
std::unique_ptr<tm::device_sampler> first_sample(const std::string& root, decoded& d) {
  auto sampler = std::make_unique<tm::device_sampler>();
  sampler->start(root.c_str(), 10);
  sample(*sampler, d, 1);
  return sampler;
}

std::string board(const char* name) {
  const std::string root = tmp + "/" + name + "_" + std::to_string(::getpid());
  std::system(("rm -rf '" + root + "'").c_str());
  fake_board(root);
  return root;
}

TEST_CASE("a fake Jetson board's files become tracks with their values") {
  const std::string root = board("board_values");
  decoded d;
  const auto sampler = first_sample(root, d);
  put_file(root, "/proc/stat", proc_stat(160, 940));  // 60 busy, 40 idle jiffies per CPU since
  sample(*sampler, d, 2);
  CHECK(d.log.damage_count() == 0);
  const er::writer_device& dev = d.writer.device;
  CHECK(dev.period_us == 10000);
  CHECK(dev.samples_taken == 2);
  CHECK(dev.ignored == 0);
  CHECK(dev.failed == 0);
  // The longest sample (1.11): from its tick to its last read, here two
  // samples of a few dozen files with nothing else to do.
  CHECK(dev.longest_ns > 0);
  CHECK(dev.longest_ns < 2000000000u);
  for (const char* cpu : {"cpu0", "cpu1", "cpu2", "cpu3"}) {
    CAPTURE(cpu);
    const er::device_track* clock = d.track(Q::cpu_khz, cpu);
    REQUIRE(clock != nullptr);
    CHECK(clock->maximum == 1984000);
    CHECK(d.last(clock) == 1984000);
    CHECK(d.last(d.track(Q::throttle_total, cpu)) == 0);
    CHECK(d.values_of(d.track(Q::cpu_busy_permille, cpu), 1) == 0);  // a share needs two samples
    CHECK(d.last(d.track(Q::cpu_busy_permille, cpu)) == 600);
  }
  CHECK(d.last(d.track(Q::temperature_mc, "CPU-therm")) == 45500);
  CHECK(d.last(d.track(Q::temperature_mc, "GPU-therm")) == 43000);
  CHECK(d.last(d.track(Q::gpu_hz, "17000000.ga10b")) == 918000000);
  CHECK(d.track(Q::gpu_hz)->maximum == 918000000);
  CHECK(d.last(d.track(Q::gpu_load_permille, "17000000.ga10b")) == 250);
  CHECK(d.last(d.track(Q::emc_hz, "bpmp-emc")) == 2133000000);
  CHECK(d.last(d.track(Q::power_mw, "VDD_IN")) == 6000);
  CHECK(d.last(d.track(Q::power_mw, "VDD_CPU_GPU_CV")) == 2000);
  CHECK(d.last(d.track(Q::mem_available_kb)) == 5000000);
  // qemu-user answers /proc/self/stat itself, with 0 for the RSS.
  if (!emulated()) CHECK(d.last(d.track(Q::rss_kb)) > 0);
  CHECK(d.last(d.track(Q::major_faults_total)) >= 0);
  CHECK(d.track(Q::others_busy_permille) != nullptr);
  if (own_cgroup() != "-") {
    CHECK(d.last(d.track(Q::cgroup_throttled_total)) == 2);
    CHECK(d.last(d.track(Q::cgroup_throttled_us_total)) == 300);
  }
  // This thread, as traced thread 1: its CPU time, run-queue wait and switches.
  const er::device_track* cpu = nullptr;
  for (const er::device_track& t : dev.tracks)
    if (t.quantity == Q::thread_cpu_ns_total && t.thread_id == 1) cpu = &t;
  REQUIRE(cpu != nullptr);
  CHECK(d.last(cpu) > 0);
  // Only NVML is missing from this board.
  REQUIRE(dev.missing.size() == 1);
  CHECK(dev.missing[0].name == "NVML");
}

TEST_CASE("other processes' load waits for 10 jiffies per CPU: a stray jiffy in a short interval is no CPU's worth") {
  const std::string root = board("board_others");
  decoded d;
  const auto sampler = first_sample(root, d);  // /proc/stat: 100 busy, 900 idle jiffies per CPU
  put_file(root, "/proc/stat", proc_stat(101, 901));  // 2 jiffies per CPU since: too few to judge
  sample(*sampler, d, 2);
  const er::device_track* others = d.track(Q::others_busy_permille);
  REQUIRE(others != nullptr);
  CHECK(d.values_of(others, 2) == 0);
  put_file(root, "/proc/stat", proc_stat(106, 906));  // 12 per CPU since the first sample: judged over all 12
  sample(*sampler, d, 3);
  CHECK(d.values_of(others, 3) == 1);
  // 4 CPUs busy 6 of 12 jiffies: 2 CPUs' worth, less this process's own
  // CPU time meanwhile (a few jiffies; more under qemu, which it counts).
  CHECK(d.last(others) <= 2000);
  if (!emulated()) CHECK(d.last(others) > 1000);
}

TEST_CASE("a hypervisor's steal is a track of its own, and not other processes' load") {
  const std::string root = board("board_steal");
  decoded d;
  const auto sampler = first_sample(root, d);  // /proc/stat: 100 busy, 900 idle jiffies per CPU, no steal
  // 20 jiffies per CPU since: 10 stolen, 10 idle, none busy.
  put_file(root, "/proc/stat", proc_stat(100, 910, 10));
  sample(*sampler, d, 2);
  const er::device_track* steal = d.track(Q::steal_permille, "hypervisor");
  REQUIRE(steal != nullptr);
  CHECK(steal->source == "/proc/stat");
  REQUIRE(d.values_of(steal, 2) == 1);
  CHECK(d.last(steal) == 2000);  // 4 CPUs half stolen: two CPUs' worth
  // The steal is not other processes' CPU: at most this process's own
  // jiffies (none here, or a few) less, so 0.
  CHECK(d.last(d.track(Q::others_busy_permille)) == 0);
  CHECK(er::device_track_label(d.writer, *steal) == "hypervisor CPU stolen (%)");
}

TEST_CASE("changes show at the next sample; garbage, empty, huge and negative values are ignored and counted") {
  const std::string root = board("board_garbage");
  decoded d;
  const auto sampler = first_sample(root, d);
  const std::string cpu = "/sys/devices/system/cpu/cpu";
  put_file(root, cpu + "0/cpufreq/scaling_cur_freq", "1190400\n");  // a real change
  put_file(root, "/sys/class/thermal/thermal_zone0/temp", "-5000\n");  // a cold board: negative is a temperature
  sample(*sampler, d, 2);
  CHECK(d.last(d.track(Q::cpu_khz, "cpu0")) == 1190400);
  CHECK(d.last(d.track(Q::temperature_mc, "CPU-therm")) == -5000);
  CHECK(d.writer.device.ignored == 0);
  // Memory's files are read every fifth sample (sampler.hpp, slow_every):
  // the garbage below is met by the sixth.
  for (std::uint64_t tick = 3; tick <= 5; ++tick) sample(*sampler, d, tick);
  CHECK(d.values_of(d.track(Q::mem_available_kb), 5) == 0);
  CHECK(d.values_of(d.track(Q::cpu_khz, "cpu1"), 5) == 1);

  put_cpu_clocks(root, {"garbage\n", "", "99999999999999999999999\n", "-1984000\n"});
  put_file(root, "/sys/class/hwmon/hwmon0/curr1_input", "12x\n");
  put_file(root, "/proc/meminfo", "MemTotal: 1 kB\n");
  put_file(root, "/proc/stat", "cpu0 not numbers\n");
  sample(*sampler, d, 6);
  for (const char* name : {"cpu0", "cpu1", "cpu2", "cpu3"}) {
    CAPTURE(name);
    CHECK(d.values_of(d.track(Q::cpu_khz, name), 6) == 0);
  }
  CHECK(d.values_of(d.track(Q::power_mw, "VDD_IN"), 6) == 0);
  CHECK(d.values_of(d.track(Q::power_mw, "VDD_CPU_GPU_CV"), 6) == 1);
  CHECK(d.values_of(d.track(Q::mem_available_kb), 6) == 0);
  CHECK(d.values_of(d.track(Q::rss_kb), 6) == 1);
  CHECK(d.values_of(d.track(Q::gpu_hz), 6) == 1);  // the others go on
  CHECK(d.writer.device.ignored == 7);  // 4 clocks, 1 rail, MemAvailable, /proc/stat's line

  fake_board(root);  // sane again
  sample(*sampler, d, 7);
  CHECK(d.last(d.track(Q::cpu_khz, "cpu2")) == 1984000);
  CHECK(d.writer.device.ignored == 7);
  CHECK(d.log.damage_count() == 0);
}

TEST_CASE("a sandbox without /sys: every source is listed as missing, once, and sampling goes on") {
  const std::string root = tmp + "/empty_root_" + std::to_string(::getpid());
  std::system(("rm -rf '" + root + "' && mkdir -p '" + root + "'").c_str());
  decoded d;
  const auto sampler = first_sample(root, d);
  sample(*sampler, d, 2);
  std::map<std::string, int> missing;
  for (const er::device_missing& m : d.writer.device.missing) ++missing[m.name];
  for (const char* name : {"cpufreq", "thermal_throttle", "/proc/stat", "thermal", "cgroup cpu.stat", "/proc/meminfo",
                           "GPU (devfreq)", "EMC (devfreq)", "power (INA3221)", "NVML"}) {
    CAPTURE(name);
    CHECK(missing[name] == 1);
  }
  // The process's own files are not under the root: RSS and this thread remain.
  CHECK(d.track(Q::rss_kb) != nullptr);
  CHECK(d.track(Q::cpu_khz) == nullptr);
  CHECK(d.writer.device.samples_taken == 2);
  CHECK(d.writer.device.failed == 0);
}

/// The fake NVML (support/fake_nvml.cpp) as the library NVML opens, its two
/// GPUs' first readings written to the returned file (a line per GPU: load
/// clock_mhz temperature_c power_mw, `-` for what it refuses).
std::string fake_nvml(const char* name) {
  const std::string values = tmp + "/" + name + "_" + std::to_string(::getpid());
  put_file("", values, "37 1410 61 215000\n5 210 40 -\n");
  ::setenv("FAKE_NVML_VALUES", values.c_str(), 1);
  ::setenv("EDGETRACE_NVML_LIBRARY", EDGETRACE_TEST_FAKE_NVML, 1);
  return values;
}

/// After sampling with fake_nvml: the library setting gone again, NVML not
/// listed missing, and the first GPU's clock track (with NVML's maximum).
const er::device_track* nvml_clock(const decoded& d) {
  ::unsetenv("EDGETRACE_NVML_LIBRARY");
  CHECK(d.missing_why("NVML").empty());
  const er::device_track* clock = d.track(Q::gpu_hz, "Fake GPU 0");
  if (clock != nullptr) CHECK(clock->maximum == 2520000000);
  return clock;
}

TEST_CASE("NVIDIA GPUs through NVML: each GPU's load, SM clock, temperature and power; what NVML refuses is absent") {
  const std::string root = board("board_nvml");
  const std::string values = fake_nvml("fake_nvml_values");
  decoded d;
  const auto sampler = first_sample(root, d);
  put_file("", values, "99 705 84 350000\n5 210 40 -\n");  // the first GPU throttles
  sample(*sampler, d, 2);
  const er::device_track* clock = nvml_clock(d);
  REQUIRE(clock != nullptr);
  CHECK(clock->source == "NVML");
  CHECK(d.values_of(clock, 1) == 1);
  CHECK(d.last(clock) == 705000000);
  CHECK(d.last(d.track(Q::gpu_load_permille, "Fake GPU 0")) == 990);
  CHECK(d.last(d.track(Q::temperature_mc, "Fake GPU 0")) == 84000);
  CHECK(d.last(d.track(Q::power_mw, "Fake GPU 0")) == 350000);
  CHECK(d.last(d.track(Q::gpu_hz, "Fake GPU 1")) == 210000000);
  CHECK(d.values_of(d.track(Q::power_mw, "Fake GPU 1"), 2) == 0);  // NVML_ERROR_NOT_SUPPORTED
  // Without the library: listed, once, with the reason.
  ::setenv("EDGETRACE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto without = std::make_unique<tm::device_sampler>();
  without->start(root.c_str(), 10);
  ::unsetenv("EDGETRACE_NVML_LIBRARY");
  decoded none;
  sample(*without, none, 1);
  REQUIRE(none.writer.device.missing.size() == 1);
  CHECK(none.writer.device.missing[0].name == "NVML");
  CHECK(contains(none.writer.device.missing[0].why, "/nonexistent/libnvidia-ml.so.1 not found"));
}

// A GPU NVML gives no handle (lost, or no permission) before one it does:
// its tracks used to be named "GPU 0", empty with no reason given, and
// every sample asked NVML about a handle it never gave (the fake, asked
// about that, reads its file for GPU 2^32-1: the case hung).
TEST_CASE("NVML: a GPU it gives no handle keeps tracks named with NVML's error, never read; the next GPU is") {
  const std::string root = board("board_nvml_lost");
  fake_nvml("fake_nvml_lost_values");
  ::setenv("FAKE_NVML_LOST", "0", 1);
  decoded d;
  const auto sampler = first_sample(root, d);
  sample(*sampler, d, 2);
  const std::uint64_t lost_files = system_files(*sampler, 3);
  ::unsetenv("FAKE_NVML_LOST");
  CHECK(nvml_clock(d) == nullptr);  // no "Fake GPU 0": NVML gave it no handle to name it by
  for (Q q : {Q::gpu_load_permille, Q::gpu_hz, Q::temperature_mc, Q::power_mw}) {
    const er::device_track* lost = d.track(q, "GPU 0 (NVML gave no handle: error 15)");
    REQUIRE(lost != nullptr);
    CHECK(lost->maximum == 0);
    CHECK(d.last(lost) == -999);  // no value at either sample
  }
  CHECK(d.last(d.track(Q::gpu_hz, "Fake GPU 1")) == 210000000);
  CHECK(d.last(d.track(Q::temperature_mc, "Fake GPU 1")) == 40000);
  // Nothing is read for it, and it is not counted as read (it was, at
  // every sample): one source fewer than with both GPUs there.
  fake_nvml("fake_nvml_both_values");
  decoded both;
  const auto both_sampler = first_sample(root, both);
  const std::uint64_t both_files = system_files(*both_sampler, 2);
  ::unsetenv("EDGETRACE_NVML_LIBRARY");
  CHECK(lost_files + 1 == both_files);
}

/// NVML's registration taken away for a case (as if no object that
/// includes <edgetrace/nvml.hpp> had been loaded yet), made by later() (as
/// a library opened during the run makes it), and put back at the end.
struct nvml_unregistered {
  const unsigned loaded = tm::nvml_registered().loaded.exchange(0);
  void later() { tm::register_nvml(&::dlopen, &::dlsym); }
  ~nvml_unregistered() { tm::nvml_registered().loaded.store(loaded); }
};

// Tracing begun in an earlier static initialiser (a global model loader's
// scope), or nvml.hpp in a library opened during the run: before, NVML was listed
// as "need <edgetrace/nvml.hpp>" for the whole run of a program that
// included it.
TEST_CASE("NVML registered after sampling began: its GPUs join at the next sample and it is no longer missing") {
  const std::string root = board("board_nvml_late");
  fake_nvml("fake_nvml_late_values");
  decoded d;
  std::unique_ptr<tm::device_sampler> sampler;
  {
    nvml_unregistered registration;
    sampler = first_sample(root, d);
    sample(*sampler, d, 2);
    // Said at once: a run that ends (or crashes) now says why it has no GPU.
    const std::vector<std::string> why = d.missing_why("NVML");
    REQUIRE(why.size() == 1);
    CHECK(contains(why[0], "nvml.hpp"));
    CHECK(d.track(Q::gpu_hz, "Fake GPU 0") == nullptr);  // the board's own GPU (devfreq) has one
    registration.later();
    sample(*sampler, d, 3);
  }
  const er::device_track* clock = nvml_clock(d);
  REQUIRE(clock != nullptr);
  CHECK(d.values_of(clock, 2) == 0);
  CHECK(d.values_of(clock, 3) == 1);
  CHECK(d.last(clock) == 1410000000);
  CHECK(d.last(d.track(Q::power_mw, "Fake GPU 0")) == 215000);
  CHECK(d.last(d.track(Q::gpu_hz, "Fake GPU 1")) == 210000000);
  // The board's tracks and this thread's kept their ids and values.
  CHECK(d.writer.device.undefined == 0);
  CHECK(d.values_of(d.track(Q::cpu_khz), 3) >= 1);
  CHECK(d.values_of(d.track(Q::thread_cpu_ns_total), 3) == 1);

  // Registered late, and the library does not open: the later reason holds.
  ::setenv("EDGETRACE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  decoded failed;
  {
    nvml_unregistered registration;
    sampler = first_sample(root, failed);
    registration.later();
    sample(*sampler, failed, 2);
  }
  ::unsetenv("EDGETRACE_NVML_LIBRARY");
  const std::vector<std::string> failed_why = failed.missing_why("NVML");
  REQUIRE(failed_why.size() == 1);
  CHECK(contains(failed_why[0], "/nonexistent/libnvidia-ml.so.1 not found"));
  CHECK(failed.track(Q::gpu_hz, "Fake GPU 0") == nullptr);

  // Registered, and every object that registered unloaded before sampling
  // began: NVML's dlopen may have gone with them (libdl, before glibc
  // 2.34), so it is not called, and said so.
  fake_nvml("fake_nvml_unloaded_values");
  decoded unloaded;
  {
    nvml_unregistered registration;
    sampler = first_sample(root, unloaded);
    sample(*sampler, unloaded, 2);
  }
  ::unsetenv("EDGETRACE_NVML_LIBRARY");
  CHECK(unloaded.track(Q::gpu_hz, "Fake GPU 0") == nullptr);
  CHECK(unloaded.missing_why("NVML") ==
        std::vector<std::string>{"not read: the library that included <edgetrace/nvml.hpp> was unloaded before sampling began"});
}

TEST_CASE("nvml.hpp registers the C library's dlopen and dlsym, once for this program") {
  const tm::nvml_registry& r = tm::nvml_registered();
  CHECK(r.loaded.load() == 1);
  CHECK((r.open_library.load() == static_cast<tm::library_open_fn>(&::dlopen)));  // (()): doctest prints no function pointer
  CHECK((r.find_symbol.load() == static_cast<tm::symbol_find_fn>(&::dlsym)));
}

TEST_CASE("two zones of one name get their index in outputs; a thread's tracks its name") {
  er::writer_info w;
  for (std::uint64_t zone : {1, 3}) {
    er::device_track t;
    t.id = zone;
    t.quantity = Q::temperature_mc;
    t.index = zone;
    t.name = "acpitz";
    w.device.tracks.push_back(t);
  }
  er::device_track cpu;
  cpu.quantity = Q::cpu_khz;
  cpu.name = "acpitz";  // another quantity: no index needed
  w.device.tracks.push_back(cpu);
  er::device_track wait;
  wait.quantity = Q::thread_wait_ns_total;
  wait.thread_id = 7;
  w.device.tracks.push_back(wait);
  w.threads[7].name = "infer";
  w.threads[7].os_tid = 1234;
  CHECK(er::device_track_label(w, w.device.tracks[0]) == "acpitz #1 temperature (°C)");
  CHECK(er::device_track_label(w, w.device.tracks[1]) == "acpitz #3 temperature (°C)");
  CHECK(er::device_track_label(w, w.device.tracks[2]) == "acpitz clock (MHz)");
  CHECK(er::device_track_label(w, w.device.tracks[3]) == "thread infer (1234) run-queue wait (%)");
}

TEST_CASE("sampling allocates nothing after start-up") {
  const std::string root = board("board_alloc");
  auto sampler = std::make_unique<tm::device_sampler>();
  sampler->start(root.c_str(), 10);
  std::uint64_t bytes = 0;
  const auto count = [&bytes](edgetrace::format::chunk_type, const unsigned char*, std::size_t n) { bytes += n; };
  sampler->sample({1, monotonic_ns()}, 1000000, [](auto&& add) { add(1, own_tid()); }, count);  // opens the files
  const long before = allocations.load();
  counting = true;
  for (std::uint64_t tick = 2; tick < 200; ++tick)
    sampler->sample({tick, monotonic_ns()}, tick * 1000000u, [](auto&& add) { add(1, own_tid()); }, count);
  counting = false;
  CHECK(allocations.load() == before);
  CHECK(sampler->samples_taken() == 199);
  CHECK(bytes > 199 * 20);
}

/// The descriptors this process holds now, numbered below `below`.
int open_descriptors(int below = 1 << 30) {
  int n = 0, own = -1;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    own = ::dirfd(d);
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.' && std::atoi(e->d_name) != own && std::atoi(e->d_name) < below) ++n;
    ::closedir(d);
  }
  return n;
}

TEST_CASE("256 traced threads: the sampler holds no descriptor for any of them, and reads each one") {
  const std::string root = board("board_threads");
  constexpr int threads = 256;
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::uint64_t> tids;
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&] {
      std::unique_lock<std::mutex> lock(m);
      tids.push_back(own_tid());
      cv.notify_all();
      cv.wait(lock, [&] { return done; });
    });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return tids.size() == threads; });
  }
  const int before = open_descriptors();
  auto sampler = std::make_unique<tm::device_sampler>();
  sampler->start(root.c_str(), 10);
  const int held = open_descriptors() - before;
  CHECK(held == static_cast<int>(sampler->sources().descriptors.held));
  decoded d;
  int during = 0;
  for (std::uint64_t tick = 1; tick <= 3; ++tick) {
    sampler->sample({tick, monotonic_ns()}, tick * 1000000u,
                    [&tids](auto&& add) {
                      for (std::size_t i = 0; i < tids.size(); ++i) add(static_cast<std::uint32_t>(i + 1), tids[i]);
                    },
                    [&](edgetrace::format::chunk_type type, const unsigned char* p, std::size_t n) {
                      during = open_descriptors();  // while a sample is being written
                      d.take(type, p, n);
                    });
  }
  // Before, 2 per thread: 512 more.
  CHECK(during - before == held);
  std::size_t cpu_read = 0;
  for (const er::device_track& t : d.writer.device.tracks)
    if (t.quantity == Q::thread_cpu_ns_total && d.last(&t) > 0) ++cpu_read;
  CHECK(cpu_read == threads);
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_all();
  for (std::thread& w : workers) w.join();
  sample(*sampler, d, 4, false);  // the threads are gone: their slots are freed, nothing is closed
  CHECK(open_descriptors() - before == held);
  sampler.reset();
  CHECK(open_descriptors() == before);
}

/// RLIMIT_NOFILE's soft limit set to `soft` for a scope.
struct soft_descriptor_limit {
  rlimit saved{};
  explicit soft_descriptor_limit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved);
    rlimit r = saved;
    r.rlim_cur = soft;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  ~soft_descriptor_limit() { ::setrlimit(RLIMIT_NOFILE, &saved); }
};

TEST_CASE("near RLIMIT_NOFILE the sampler holds an eighth of it at most, none in its upper half, and says what it left") {
  const std::string root = board("board_nofile");
  constexpr int limit = 128;  // numbers 0..127; a descriptor inherited above it takes no room
  const int base = open_descriptors(limit);
  REQUIRE(base < limit / 4);
  {
    soft_descriptor_limit soft(limit);
    auto sampler = std::make_unique<tm::device_sampler>();
    sampler->start(root.c_str(), 10);
    const tm::descriptor_budget& budget = sampler->sources().descriptors;
    CHECK(budget.most == limit / 8);
    CHECK(budget.held == budget.most);  // the board has more files than that
    CHECK(open_descriptors(limit) - base == static_cast<int>(budget.held));
    for (std::size_t i = 0; i < sampler->sources().file_count; ++i)
      CHECK(sampler->sources().files[i].fd < limit / 2);
    decoded d;
    sample(*sampler, d, 1);
    const std::vector<std::string> why = d.missing_why("descriptors");
    REQUIRE(why.size() == 1);
    CHECK(why[0].find(" files not sampled: 16 descriptors held at most") != std::string::npos);
    CHECK(why[0].find("RLIMIT_NOFILE 128") != std::string::npos);
    CHECK(d.last(d.track(Q::cpu_khz, "cpu0")) == 1984000);  // what it holds, it reads
    // The app can open every number but the sampler's eighth.
    std::vector<int> mine;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) mine.push_back(fd);
    CHECK(static_cast<int>(mine.size()) == limit - base - static_cast<int>(budget.held));
    for (int fd : mine) ::close(fd);
  }
  {
    // The app already holds half its table: the sampler holds nothing.
    soft_descriptor_limit soft(limit);
    std::vector<int> mine;
    for (int fd = 0; fd >= 0 && fd < limit / 2;) mine.push_back(fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC));
    auto sampler = std::make_unique<tm::device_sampler>();
    sampler->start(root.c_str(), 10);
    CHECK(sampler->sources().descriptors.held == 0);
    decoded d;
    sample(*sampler, d, 1);
    CHECK(d.missing_why("descriptors").size() == 1);
    CHECK(d.last(d.track(Q::thread_cpu_ns_total)) > 0);  // a thread's files are opened and closed at each sample
    for (int fd : mine) ::close(fd);
  }
}

TEST_CASE("a descriptor the app took over (closefrom, then its own file on the number) is never closed by the sampler") {
  const std::string root = board("board_taken");
  auto sampler = std::make_unique<tm::device_sampler>();
  sampler->start(root.c_str(), 10);
  REQUIRE(sampler->sources().file_count > 2);
  const int taken = sampler->sources().files[1].fd;
  REQUIRE(taken >= 0);
  const int mine = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(::dup2(mine, taken) == taken);  // the sampler's number now names the app's /dev/null
  ::close(mine);
  decoded d;
  sample(*sampler, d, 1);
  sampler.reset();  // closes what is still its own
  CHECK(::fcntl(taken, F_GETFD) != -1);  // before: closed under the app
  struct stat st {};
  REQUIRE(::fstat(taken, &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  ::close(taken);
}

}  // namespace sampler_test
