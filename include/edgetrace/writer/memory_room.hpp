// SPDX-License-Identifier: MIT
// How much more memory this process may take before the kernel kills it: the memory cgroup's limit less its use (v1 and v2, every level up to the root) and the system's MemAvailable. The flight recorder sizes its pre-faulted ring by it.
//
// A container on an edge box runs with a memory limit (docker --memory,
// a systemd MemoryMax=, Kubernetes limits). Pre-faulting a ring larger
// than what is left under that limit does not fail: the kernel's OOM
// killer ends the app, with no line from anyone. So before the flusher
// faults a large mapping in, it reads what is left, and takes at most
// half of it (the app needs the rest to grow). The threads' rings are
// sized by it too (writer/rings.hpp, ring_pool::records_for), read again
// every second.
//
// EDGETRACE_SYSFS_ROOT (telemetry/files.hpp) puts a folder in front
// of /sys and /proc/meminfo, so tests (and anyone) can replay a board's
// files; /proc/self/cgroup, the process's own, is always the real one.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE
#include <edgetrace/telemetry/files.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// What the process may still use, as read at one moment.
struct memory_room {
  static constexpr std::uint64_t unlimited = ~std::uint64_t{0};
  /// Bytes left: the least of (limit - use) over the memory cgroup's
  /// levels, and MemAvailable; `unlimited` when nothing says.
  std::uint64_t free = unlimited;
  /// The level that gave `free` (0 and 0 for MemAvailable or none): its
  /// limit and its use, for the report.
  std::uint64_t limit = 0, used = 0;
  bool from_cgroup = false;
};

namespace memory_room_detail {

using telemetry::read_small;
using telemetry::join;

/// A whole number at the start of `text` ("max", garbage, or a value past
/// 2^62, which the kernel writes for "no limit": `memory_room::unlimited`).
inline std::uint64_t read_number(const char* text) noexcept {
  if (*text < '0' || *text > '9') return memory_room::unlimited;
  std::uint64_t value = 0;
  for (; *text >= '0' && *text <= '9'; ++text) {
    if (value > (std::uint64_t{1} << 62) / 10) return memory_room::unlimited;
    value = value * 10 + static_cast<std::uint64_t>(*text - '0');
  }
  return value >= (std::uint64_t{1} << 62) ? memory_room::unlimited : value;
}

/// Takes one cgroup level into `room`: `directory` holds `limit_file` and
/// `usage_file`. Skipped when either is missing or says no limit.
inline void take_level(memory_room& room, const char* directory, const char* limit_file,
                       const char* usage_file) noexcept {
  char path[1024], text[64];
  if (!join(path, sizeof path, directory, "/", limit_file, "") || !read_small(path, text, sizeof text)) return;
  const std::uint64_t limit = read_number(text);
  if (limit == memory_room::unlimited) return;
  if (!join(path, sizeof path, directory, "/", usage_file, "") || !read_small(path, text, sizeof text)) return;
  const std::uint64_t used = read_number(text);
  if (used == memory_room::unlimited) return;
  const std::uint64_t left = limit > used ? limit - used : 0;
  if (left < room.free) {
    room.free = left;
    room.limit = limit;
    room.used = used;
    room.from_cgroup = true;
  }
}

/// Every level from `mount` + `path` up to `mount` itself.
inline void take_levels(memory_room& room, const char* mount, const char* path, const char* limit_file,
                        const char* usage_file) noexcept {
  char directory[1024];
  if (!join(directory, sizeof directory, mount, path, "", "")) return;
  const std::size_t base = std::strlen(mount);
  for (;;) {
    take_level(room, directory, limit_file, usage_file);
    char* slash = std::strrchr(directory + base, '/');
    if (slash == nullptr) break;
    *slash = '\0';
  }
}

}  // namespace memory_room_detail

using telemetry::sysfs_root;

/// Reads what the process may still use (flusher, once, before a large
/// mapping): the memory cgroup of /proc/self/cgroup, v2 ("0::PATH":
/// memory.max, memory.current) and v1 (the "memory" controller's line:
/// memory.limit_in_bytes, memory.usage_in_bytes), each level up to the
/// mount's root (a limit set on a parent holds for its children, and a
/// cgroup namespace shows its own root as "/"), and MemAvailable. Plain
/// open/read/close, no allocation. Cost: a few dozen small file reads.
inline memory_room read_memory_room() noexcept {
  using namespace memory_room_detail;
  memory_room room;
  const char* root = sysfs_root();
  char cgroups[4096];
  if (read_small("/proc/self/cgroup", cgroups, sizeof cgroups)) {
    for (char* line = cgroups; line != nullptr && *line != '\0';) {
      char* next = std::strchr(line, '\n');
      if (next != nullptr) *next++ = '\0';
      // "ID:CONTROLLERS:PATH"
      char* first = std::strchr(line, ':');
      char* second = first != nullptr ? std::strchr(first + 1, ':') : nullptr;
      if (second != nullptr) {
        *second = '\0';
        const char* controllers = first + 1;
        const char* path = std::strcmp(second + 1, "/") == 0 ? "" : second + 1;
        char mount[1024];
        if (*controllers == '\0') {
          for (const char* base : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"})
            if (join(mount, sizeof mount, root, base, "", ""))
              take_levels(room, mount, path, "memory.max", "memory.current");
        } else {
          for (const char* c = controllers; c != nullptr; c = std::strchr(c, ',') ? std::strchr(c, ',') + 1 : nullptr)
            if (std::strncmp(c, "memory", 6) == 0 && (c[6] == ',' || c[6] == '\0')) {
              if (join(mount, sizeof mount, root, "/sys/fs/cgroup/memory", "", ""))
                take_levels(room, mount, path, "memory.limit_in_bytes", "memory.usage_in_bytes");
              break;
            }
        }
      }
      line = next;
    }
  }
  char path[1024], text[4096];
  if (join(path, sizeof path, root, "/proc/meminfo", "", "") && read_small(path, text, sizeof text)) {
    if (const char* available = std::strstr(text, "MemAvailable:")) {
      available += std::strlen("MemAvailable:");
      while (*available == ' ' || *available == '\t') ++available;
      const std::uint64_t kib = memory_room_detail::read_number(available);
      if (kib != memory_room::unlimited && kib * 1024 < room.free) {
        room.free = kib * 1024;
        room.limit = room.used = 0;
        room.from_cgroup = false;
      }
    }
  }
  return room;
}

/// Where the room comes from, for a line: "its memory cgroup allows 256
/// MiB and uses 200 MiB" or "the system has 64 MiB available (MemAvailable)".
inline void describe_room(const memory_room& room, char* out, std::size_t capacity) noexcept {
  if (room.from_cgroup)
    std::snprintf(out, capacity, "its memory cgroup allows %llu MiB and uses %llu MiB",
                  static_cast<unsigned long long>(room.limit >> 20), static_cast<unsigned long long>(room.used >> 20));
  else
    std::snprintf(out, capacity, "the system has %llu MiB available (MemAvailable)",
                  static_cast<unsigned long long>(room.free >> 20));
}

/// How large a pre-faulted mapping of `wanted` bytes may be in `room`: at
/// most half of what is left (the app needs the rest to grow), in whole
/// MiB; `wanted` when it fits, 0 when not even 1 MiB does.
inline std::uint64_t fitting_bytes(std::uint64_t wanted, const memory_room& room) noexcept {
  if (room.free == memory_room::unlimited || wanted <= room.free / 2) return wanted;
  return (room.free / 2) & ~((std::uint64_t{1} << 20) - 1);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
