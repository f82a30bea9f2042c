// SPDX-License-Identifier: MIT
// Test helper: a small tmpfs of the test's own (disk full, the dump's room),
// where this process may mount one (root with CAP_SYS_ADMIN).
#pragma once

#include <support/files.hpp>

#include <cerrno>
#include <cstring>
#include <string>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace edgetrace_test {

/// Can this process mount a tmpfs? Tried once, on a mount point of its own.
inline bool tmpfs_mountable() {
  static const bool mountable = [] {
    const std::string probe = scratch_dir() + "/tmpfs-probe." + std::to_string(::getpid());
    ::mkdir(probe.c_str(), 0755);
    const bool mounted = ::mount("edgetrace-test", probe.c_str(), "tmpfs", 0, "size=4k") == 0;
    if (mounted) ::umount(probe.c_str());
    ::rmdir(probe.c_str());
    return mounted;
  }();
  return mountable;
}

/// A tmpfs of `size` ("256k", "4m") at scratch_dir()/NAME for the scope's
/// life; error() says why mounting failed (empty when mounted).
class small_tmpfs {
 public:
  small_tmpfs(const std::string& name, const std::string& size) : path_(scratch_dir() + "/" + name) {
    ::mkdir(path_.c_str(), 0755);
    if (::mount("edgetrace-test", path_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) error_ = std::strerror(errno);
  }
  ~small_tmpfs() {
    if (error_.empty()) ::umount(path_.c_str());
    ::rmdir(path_.c_str());
  }
  small_tmpfs(const small_tmpfs&) = delete;
  small_tmpfs& operator=(const small_tmpfs&) = delete;

  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }
  /// Bytes free for an unprivileged writer (statvfs f_bavail).
  unsigned long long free_bytes() const {
    struct statvfs fs;
    return ::statvfs(path_.c_str(), &fs) == 0 ? static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize : 0;
  }

 private:
  std::string path_;
  std::string error_;
};

}  // namespace edgetrace_test
