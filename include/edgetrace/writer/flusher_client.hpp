// SPDX-License-Identifier: MIT
// The flusher's one extension point. Code with data of its own to write
// (the GPU resolver of gpu/spans.hpp) registers a client; the flusher calls
// it after each drain. Everything client-specific stays with the client:
// the runtime knows only this interface, and the client only flusher_output
// (an interface the flusher implements), so an add-on works with a separate
// runtime too.
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/format.hpp>

#include <cstddef>
#include <cstdint>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Why the flusher calls a client.
enum class poll_reason : std::uint8_t {
  cycle,  ///< a periodic cycle: do a bounded amount of work
  flush,  ///< edgetrace::flush() or a non-fatal signal: write what is ready, do not wait
  final,  ///< shutdown or a terminating signal: the last call; may wait briefly
};

/// What a flusher client may do from its poll (flusher thread only). The
/// flusher implements it (writer/flusher.hpp); an add-on only calls it, so
/// it works with a separate runtime too.
class flusher_output {
 public:
  /// Dump site id of a record word (site pointer or named-span word, as a
  /// scope pushes it), defining the site in the dump if it is new.
  virtual std::uint32_t site_id(std::uint64_t word) = 0;
  /// Appends one chunk of `type` with `payload`, after pending definitions.
  /// A no-op once the output failed or the stream ended.
  virtual void emit(format::chunk_type type, const unsigned char* payload, std::size_t size) = 0;
  /// The clock_mode host ticks are recorded with (ticks(mode) in tick.hpp).
  virtual std::uint8_t clock() const noexcept = 0;
  /// False once output failed or the stream ended (emit() then drops).
  virtual bool writable() const noexcept = 0;

 protected:
  ~flusher_output() = default;
};

/// A client of the flusher, in static storage, never unregistered.
struct flusher_client {
  /// Called on the flusher thread only (never concurrently with itself),
  /// whether or not the output still works: a client may have resources
  /// to recycle. Must not block for long except with poll_reason::final.
  void (*poll)(flusher_client& self, flusher_output& out, poll_reason why) noexcept = nullptr;
  flusher_client* next = nullptr;  ///< written once, before publication
  /// Set by poll (flusher thread): how full the client's fullest hand-off
  /// queue was when it looked, 0..1. The flusher sets its next period by
  /// it as by its own rings, so a client's queue is not left to fill up
  /// while the rings are quiet.
  double backlog = 0;
};

/// Adds `client` (once; later calls are no-ops). Any thread, any time.
EDGETRACE_DETAIL_API void register_flusher_client(flusher_client& client) noexcept;

/// Any thread: asks the flusher for a cycle now rather than at the end of
/// its period (one futex wake). For an app thread whose hand-off queue to
/// a client is filling: once when it passes half full, not per record.
EDGETRACE_DETAIL_API void wake_flusher_early() noexcept;

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
