// SPDX-License-Identifier: MIT
// The writer's Linux calls, in one place: the thread id, thread names, the
// CPUs the process may run on, the futexes the flusher and full rings sleep
// on, the process name, the listing of the process's threads, and the
// shared object that holds an address (kept loaded on request). A port replaces this file (with the
// counter in face/tick.hpp, the clock in writer/clock.hpp and the CRC probe
// in core/crc32.hpp); the rest of the writer calls only these.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <dlfcn.h>  // RTLD_* only: keep_loaded calls the dlopen it is given
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace os {

/// The calling thread's kernel id. Async-signal-safe.
inline long thread_id() noexcept { return static_cast<long>(::syscall(SYS_gettid)); }

/// The calling thread's name (pthread_setname_np's, or the program's) into
/// `name` (`size` bytes, NUL-terminated).
inline void thread_name(char* name, std::size_t size) noexcept { pthread_getname_np(pthread_self(), name, size); }

/// Names thread `thread` (at most 15 characters are kept).
inline void name_thread(pthread_t thread, const char* name) noexcept { pthread_setname_np(thread, name); }

/// The CPUs this process may run on, into `set`: the main thread's affinity
/// mask with the calling thread's. A thread inherits its creator's mask, so
/// the process's own mask is not the calling thread's when an app pinned
/// the thread that started tracing. False when neither could be read.
inline bool process_cpus(cpu_set_t& set) noexcept {
  cpu_set_t own;
  CPU_ZERO(&set);
  CPU_ZERO(&own);
  const bool main_read = sched_getaffinity(getpid(), sizeof set, &set) == 0;
  const bool own_read = sched_getaffinity(0, sizeof own, &own) == 0;
  if (own_read) CPU_OR(&set, &set, &own);
  return (main_read || own_read) && CPU_COUNT(&set) > 0;
}

/// Lets the calling thread run on every CPU of process_cpus (a `taskset`
/// of the whole process is kept). Nothing when it cannot be read or set.
inline void run_on_process_cpus() noexcept {
  cpu_set_t set;
  if (process_cpus(set)) sched_setaffinity(0, sizeof set, &set);
}

/// Wakes up to `count` threads sleeping on `word` in futex_wait.
/// Async-signal-safe: one system call.
inline void futex_wake(std::atomic<std::uint32_t>& word, int count) noexcept {
  ::syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

/// Sleeps until futex_wake on `word`, or for `ns`, unless `word` no longer
/// holds `seen` (then it returns at once: a wake-up in between is not lost).
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen, std::uint64_t ns) noexcept {
  timespec timeout{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
  ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
}

/// Sleeps a millisecond at a time while `waiting()` holds, at most
/// `max_ms` times. Async-signal-safe when `waiting` is (nanosleep only):
/// the bounded waits of signal and crash handlers.
template <class Waiting>
inline void wait_ms_while(int max_ms, Waiting&& waiting) noexcept {
  const timespec pause{0, 1000000};
  for (int waited_ms = 0; waited_ms < max_ms && waiting(); ++waited_ms) nanosleep(&pause, nullptr);
}

/// Reads the start of a small /proc file into `text` (`size` > 1 bytes),
/// terminated; returns the bytes read, 0 when it cannot be read (`text`
/// left as it is).
inline std::size_t read_proc_file(const char* path, char* text, std::size_t size) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, text, size - 1);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  return static_cast<std::size_t>(n);
}

/// The process's name (/proc/self/comm, without its newline) into `name`
/// (`size` > 1 bytes); `name` is left as it is when the file cannot be read.
inline void process_name(char* name, std::size_t size) noexcept {
  const std::size_t n = read_proc_file("/proc/self/comm", name, size);
  if (n > 0 && name[n - 1] == '\n') name[n - 1] = '\0';
}

/// The process's start, in clock ticks after boot (/proc/self/stat field
/// 22, which exec keeps); false without /proc.
inline bool process_start_ticks(std::uint64_t& ticks) noexcept {
  char stat[1024];
  if (read_proc_file("/proc/self/stat", stat, sizeof stat) == 0) return false;
  const char* p = std::strrchr(stat, ')');  // the name may hold spaces and parentheses
  // Fields after the name: 3 state ... 22 starttime, so 20 spaces on.
  for (int field = 2; p != nullptr && field < 22; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return false;
  ticks = std::strtoull(p + 1, nullptr, 10);
  return true;
}

/// By when this process had begun (its fork: an exec keeps it), as
/// CLOCK_REALTIME ns: /proc/self/stat's start time is in clock ticks since
/// boot (10 ms), rounded down, so one tick is added. 0 if unknown.
inline std::uint64_t process_began_by_realtime_ns() noexcept {
  std::uint64_t start_ticks = 0;
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (!process_start_ticks(start_ticks) || hz <= 0) return 0;
  timespec realtime{}, boottime{};
  if (::clock_gettime(CLOCK_REALTIME, &realtime) != 0 || ::clock_gettime(CLOCK_BOOTTIME, &boottime) != 0) return 0;
  const auto ns = [](const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + static_cast<std::int64_t>(t.tv_nsec);
  };
  const std::int64_t tick_ns = 1000000000 / static_cast<std::int64_t>(hz);
  const std::int64_t started = ns(realtime) - ns(boottime) + (static_cast<std::int64_t>(start_ticks) + 1) * tick_ns;
  return started > 0 ? static_cast<std::uint64_t>(started) : 0;
}

/// What names this process across exec() and apart from every other
/// process, even one of the same pid in another pid namespace or after the
/// pid was reused: its start time in clock ticks after boot (/proc/self/stat
/// field 22, which exec keeps) and the boot's id. `known` false when
/// /proc is not there.
struct process_identity {
  std::uint64_t start_ticks = 0;
  unsigned char boot_id[16] = {};
  bool known = false;
};

inline process_identity own_identity() noexcept {
  process_identity id;
  char boot[64];
  if (!process_start_ticks(id.start_ticks)) return id;
  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": 32 hex digits.
  if (read_proc_file("/proc/sys/kernel/random/boot_id", boot, sizeof boot) == 0) return id;
  int digits = 0;
  for (const char* c = boot; *c != '\0' && *c != '\n' && digits < 32; ++c) {
    const int v = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
    if (v < 0) continue;
    id.boot_id[digits / 2] = static_cast<unsigned char>(id.boot_id[digits / 2] << 4 | v);
    ++digits;
  }
  id.known = digits == 32;
  return id;
}

/// Calls `f(tid)` for each thread of the process (/proc/self/task). Allocates
/// nothing: the listing is read with getdents64 into a stack buffer, not
/// opendir (which mallocs), since shutdown also runs from quick_exit(),
/// which a signal handler may call while its thread is inside malloc.
/// False when the listing cannot be opened.
template <class F>
bool for_each_thread(F&& f) noexcept {
  const int tasks = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (tasks < 0) return false;
  alignas(8) char listing[4096];
  for (long got; (got = ::syscall(SYS_getdents64, tasks, listing, sizeof listing)) > 0;) {
    for (long at = 0; at < got;) {
      // struct linux_dirent64: u64 inode, s64 offset, u16 record length, u8 type, name.
      unsigned short length;
      std::memcpy(&length, listing + at + 16, sizeof length);
      const char* name = listing + at + 19;
      char* end = nullptr;
      const long tid = std::strtol(name, &end, 10);
      if (end != name && *end == '\0') f(tid);  // "." and ".." are no threads
      at += length;
    }
  }
  ::close(tasks);
  return true;
}

/// Whether the process holds capability `bit` in its effective set
/// (/proc/self/status CapEff; 23 is CAP_SYS_NICE). False when it cannot
/// be read. No allocation.
inline bool has_effective_capability(unsigned bit) noexcept {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[4096];
  std::size_t got = 0;
  for (ssize_t n; got + 1 < sizeof text && (n = ::read(fd, text + got, sizeof text - 1 - got)) > 0;)
    got += static_cast<std::size_t>(n);
  ::close(fd);
  text[got] = '\0';
  const char* line = std::strstr(text, "\nCapEff:");
  if (line == nullptr) return false;
  const unsigned long long caps = std::strtoull(line + 8, nullptr, 16);
  return bit < 64 && ((caps >> bit) & 1u) != 0;
}

/// A shared object that holds an address: its addresses (every PT_LOAD
/// segment: code, call-site descriptors, string literals) and its file
/// (the loader's string, valid while the object is loaded).
struct loaded_object {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  const char* path = nullptr;
};

/// The shared object holding `address`; none (empty, no path) for the
/// executable, which is never unloaded, or if none holds it.
inline loaded_object object_holding(std::uintptr_t address) noexcept {
  struct search {
    std::uintptr_t address;
    bool first;
    loaded_object found;
  } s{address, true, {}};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        search& s = *static_cast<search*>(data);
        const bool executable = s.first;  // glibc lists the executable first
        s.first = false;
        std::uintptr_t low = UINTPTR_MAX, high = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD) continue;
          low = std::min<std::uintptr_t>(low, info->dlpi_addr + segment.p_vaddr);
          high = std::max<std::uintptr_t>(high, info->dlpi_addr + segment.p_vaddr + segment.p_memsz);
        }
        if (s.address < low || s.address >= high) return 0;
        if (!executable) s.found = {low, high, info->dlpi_name};
        return 1;
      },
      &s);
  return s.found;
}

/// The address a function pointer holds (for object_holding).
template <class Fn>
inline std::uintptr_t code_address(Fn function) noexcept {
  static_assert(sizeof function == sizeof(std::uintptr_t), "a function pointer is an address here");
  std::uintptr_t address = 0;
  std::memcpy(&address, &function, sizeof address);
  return address;
}

/// Keeps the shared object holding `address` loaded until the process ends
/// (RTLD_NODELETE: its dlclose then leaves it mapped), through
/// `open_library`, the C library's dlopen as the object's own code gave it
/// (the writer links no dlopen); nothing for the executable, or without
/// one. For code that other threads call from then on: the flusher's GPU
/// tracker, scope hooks. Takes the loader's lock: never call it holding a
/// lock that code run under the loader's lock (static initialisers) takes.
inline void keep_loaded(std::uintptr_t address, void* (*open_library)(const char*, int)) noexcept {
  if (open_library == nullptr) return;
  const loaded_object object = object_holding(address);
  if (object.path != nullptr && object.path[0] != '\0') open_library(object.path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

}  // namespace os
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
