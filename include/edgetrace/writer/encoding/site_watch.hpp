// SPDX-License-Identifier: MIT
// Which sites' records the encoder hands to its host, and who learns every site it defines: the encoder's one view of the flight recorder's latency triggers.
#pragma once

#include <edgetrace/format.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// A watcher of sites (flight/triggers.hpp's flight_triggers is the one):
/// it learns every site as the encoder defines it, and marks the ids whose
/// records the encoder then hands to encoder_host::watched_record. The
/// encoder includes this, not the watcher: encoding/ knows nothing of
/// flight/. Used on the encoding thread only.
class site_watch {
 public:
  /// Learns site `id` as the encoder defines it (once per id). Not on the
  /// hot path: one call per site.
  virtual void define_site(std::uint32_t id, format::site_kind kind, const char* name, std::size_t name_size) = 0;

  /// Whether site `id` is watched: one bounds check and one load, inline,
  /// so the encoder pays a call only for the records of watched sites.
  bool watches(std::uint32_t id) const noexcept { return id < watched_.size() && watched_[id] != 0; }

 protected:
  ~site_watch() = default;
  /// Per site id: 0 when not watched, else a byte of the watcher's own.
  std::vector<std::uint8_t> watched_;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
