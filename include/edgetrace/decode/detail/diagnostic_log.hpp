// SPDX-License-Identifier: MIT
// The reader's diagnostics: stored up to a bound, counted past it, with the damage count that makes a dump "damaged".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <edgetrace/decode/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// Every diagnostic of one reader. A pass that runs again (pass 2) rolls
/// back to the mark taken after pass 1, so its diagnostics are not doubled.
class diagnostic_log {
 public:
  /// Diagnostics beyond this many are counted, not stored.
  static constexpr std::size_t max_stored = 200;

  /// Where the log stood (see rollback()).
  struct mark {
    std::size_t stored = 0;
    std::uint64_t dropped = 0;
    std::uint64_t damage = 0;
  };

  void add(diagnostic::severity level, std::uint64_t offset, std::string message) {
    if (level == diagnostic::severity::damage) ++damage_count_;
    if (diagnostics_.size() >= max_stored) {
      ++dropped_;
      return;
    }
    diagnostics_.push_back(diagnostic{level, offset, std::move(message)});
  }

  /// "malformed <what> chunk at offset N (<writer>); ignored", as damage.
  void malformed(const char* what, std::uint64_t offset, const writer_info& w) {
    char text[200];
    std::snprintf(text, sizeof text, "malformed %s chunk at offset %llu (%s); ignored", what,
                  static_cast<unsigned long long>(offset), w.label().c_str());
    add(diagnostic::severity::damage, offset, text);
  }

  void clear() noexcept {
    diagnostics_.clear();
    dropped_ = 0;
    damage_count_ = 0;
  }
  mark current() const noexcept { return mark{diagnostics_.size(), dropped_, damage_count_}; }
  void rollback(const mark& m) {
    diagnostics_.resize(m.stored);
    dropped_ = m.dropped;
    damage_count_ = m.damage;
  }

  const std::vector<diagnostic>& stored() const noexcept { return diagnostics_; }
  std::uint64_t dropped() const noexcept { return dropped_; }
  std::uint64_t damage_count() const noexcept { return damage_count_; }

 private:
  std::vector<diagnostic> diagnostics_;
  std::uint64_t dropped_ = 0, damage_count_ = 0;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
