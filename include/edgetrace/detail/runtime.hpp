// SPDX-License-Identifier: MIT
// The process-wide runtime: start-up from the environment, thread rings and
// their recycling, interned names, and the flusher thread that encodes rings
// into dump chunks. Nothing here runs on the hot path except push_slow.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/detail/clock.hpp>
#include <edgetrace/config.hpp>
#include <edgetrace/detail/env.hpp>
#include <edgetrace/detail/flight.hpp>
#include <edgetrace/detail/flight_triggers.hpp>
#include <edgetrace/detail/flusher_client.hpp>
#include <edgetrace/detail/hooks.hpp>
#include <edgetrace/detail/ring.hpp>
#include <edgetrace/format.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// With a separate runtime, this header is compiled in exactly one TU (the one
// that includes <edgetrace/runtime_impl.hpp>): anywhere else its entry points
// would be defined twice. Add-ons reach the runtime through declarations in
// the light headers (EDGETRACE_DETAIL_API), never by including this file.
#if EDGETRACE_SEPARATE_RUNTIME && !defined(EDGETRACE_DETAIL_RUNTIME_TU)
#error "with EDGETRACE_SEPARATE_RUNTIME=1 only <edgetrace/runtime_impl.hpp> may include <edgetrace/detail/runtime.hpp>"
#endif

// detail::atomic_cell (the light headers' atomics) takes std::memory_order
// values as the __atomic builtins' orders.
static_assert(static_cast<int>(std::memory_order_relaxed) == __ATOMIC_RELAXED &&
                  static_cast<int>(std::memory_order_acquire) == __ATOMIC_ACQUIRE &&
                  static_cast<int>(std::memory_order_release) == __ATOMIC_RELEASE &&
                  static_cast<int>(std::memory_order_acq_rel) == __ATOMIC_ACQ_REL &&
                  static_cast<int>(std::memory_order_seq_cst) == __ATOMIC_SEQ_CST,
              "std::memory_order values must be the __atomic builtins' orders");

namespace edgetrace {
inline namespace v1 {

namespace detail {

// ------------------------------------------------------------ categories

/// Registry of categories. Constant-initialised, so usable from any static
/// initialiser. Guarded by category_mutex.
inline std::mutex category_mutex;
inline category_state* category_list = nullptr;
inline std::uint32_t category_count = 0;
/// Run-time filter in force once tracing started (nullptr = all). Written
/// once under category_mutex before tracing_on is set.
inline const char* category_filter = nullptr;
inline bool tracing_on = false;  ///< guarded by category_mutex
/// The clock_mode recording categories get (set once at start-up, under
/// category_mutex, before tracing_on).
inline std::uint8_t recording_clock = clock_counter;

/// Sets every registered category's flag to `on` (filtered). Caller holds
/// category_mutex.
/// Bit i set: item i of EDGETRACE_CATEGORIES matched a category that
/// registered at some point (kept as bits, not names: a category's name
/// goes away with an unloaded library). Guarded by category_mutex.
inline std::uint64_t filter_items_matched = 0;

/// Calls visit(index, item, length) for each item of the run-time filter
/// (a leading '-' stripped; "*" and empty items skipped); 64 items at most.
template <class Visit>
void for_each_filter_item(const char* filter, Visit&& visit) noexcept {
  unsigned index = 0;
  for_each_list_item(filter, [&](list_item item) noexcept {
    if (index < 64) {
      if (*item.begin == '-') ++item.begin;
      if (item.size() != 0 && !item.is("*")) visit(index, item.begin, item.size());
    }
    ++index;
  });
}

/// Copies of the names of every category that registered, each followed by
/// a NUL (a library's own strings go away at dlclose, and every category
/// unregisters before the exit-time line that lists them). Names that do
/// not fit are left out. Guarded by category_mutex.
inline char registered_names[1024];
inline std::size_t registered_names_used = 0;

inline void remember_category_name_locked(const char* name) noexcept {
  const std::size_t length = std::strlen(name);
  for (std::size_t at = 0; at < registered_names_used; at += std::strlen(registered_names + at) + 1)
    if (std::strcmp(registered_names + at, name) == 0) return;
  if (registered_names_used + length + 1 > sizeof registered_names) return;
  std::memcpy(registered_names + registered_names_used, name, length + 1);
  registered_names_used += length + 1;
}

inline void mark_filter_matches_locked(const char* name) noexcept {
  for_each_filter_item(category_filter, [&](unsigned index, const char* item, std::size_t length) {
    if (std::strlen(name) == length && std::strncmp(name, item, length) == 0) filter_items_matched |= 1ull << index;
  });
}

/// EDGETRACE_NVTX=1 (scope hooks, detail/hooks.hpp) was asked for: selected
/// categories also get mode_hooks once a hook table is installed, with or
/// without recording. Guarded by category_mutex.
inline bool hooks_wanted = false;

/// Capture control: recording happens while tracing_on and no source holds
/// it back. All guarded by category_mutex; see "capture control" below.
inline bool paused_by_api = false;      ///< edgetrace::pause()
inline bool window_waiting = false;     ///< EDGETRACE_START_AFTER not reached yet
inline bool waiting_for_marks = false;  ///< ... and it counts marks (mode_count_marks)
inline bool window_over = false;        ///< EDGETRACE_DURATION ran out (for good)
inline bool signal_paused = false;      ///< EDGETRACE_TOGGLE_SIGNAL: off until toggled on

inline bool capturing_locked() noexcept {
  return tracing_on && !paused_by_api && !window_waiting && !window_over && !signal_paused;
}

/// The mode byte category `name` should have now. Caller holds category_mutex.
inline std::uint8_t category_flag_locked(const char* name) noexcept {
  if (!runtime_category_selected(category_filter, name)) return clock_off;
  std::uint8_t flag = capturing_locked() ? recording_clock : std::uint8_t{clock_off};
  if (tracing_on && window_waiting && waiting_for_marks) flag |= mode_count_marks;
  if (hooks_wanted && installed_hooks.load(std::memory_order_acquire) != nullptr) flag |= mode_hooks;
  return flag;
}

/// Sets every registered category's flag from the state above. Caller
/// holds category_mutex.
inline void apply_category_flags_locked() noexcept {
  for (category_state* c = category_list; c != nullptr; c = c->next)
    c->enabled.store(category_flag_locked(c->name), std::memory_order_relaxed);
}

/// Starts or stops recording in every category (scope hooks keep their
/// state). Caller holds category_mutex.
inline void set_recording_locked(bool on) noexcept {
  tracing_on = on;
  apply_category_flags_locked();
}

inline void ensure_initialized() noexcept;

EDGETRACE_DETAIL_API bool register_category(category_state& state) noexcept {
  ensure_initialized();
  std::lock_guard<std::mutex> lock(category_mutex);
  if (state.index != 0) return true;  // a second DSO's copy of the same inline variable
  state.index = ++category_count;
  state.next = category_list;
  category_list = &state;
  mark_filter_matches_locked(state.name);
  remember_category_name_locked(state.name);
  state.enabled.store(category_flag_locked(state.name), std::memory_order_relaxed);
  return true;
}

EDGETRACE_DETAIL_API std::uint8_t register_on_first_use(std::uint64_t word) noexcept {
  if (tag_of(word) != tag_site) return clock_off;  // a named word carries the index, still 0: nothing to register
  auto& state = const_cast<category_state&>(*site_of(word)->category);
  register_category(state);
  return state.enabled.load(std::memory_order_relaxed);
}

/// Set when a category (and so possibly a shared object with its sites)
/// goes away; the flusher then forgets every site address it cached, since
/// a library loaded later may reuse them. Release/acquire.
inline std::atomic<bool> forget_sites{false};

inline bool flush_if_pending() noexcept;

/// How long unregister_category waits for the flusher to encode what the
/// rings hold. Short: a dlclose must not stall the app on a slow output,
/// and what is still unread after it is dropped and counted, never read.
inline constexpr std::chrono::milliseconds unload_flush_timeout{1000};

/// Address range of a shared object unloaded while its records may still
/// sit in a ring (unregister_category's flush timed out, e.g. on a slow
/// output). The flusher reads a call-site descriptor only under
/// unloaded_mutex, after checking these ranges, and drops (and counts) a
/// record whose site lies in one: it never reads an unloaded object's
/// memory. A range is retired once a whole flusher cycle has begun after it
/// was published (every ring was then drained past the unload), so a
/// library loaded later at the same address is read normally again.
struct unloaded_range {
  std::uintptr_t begin;
  std::uintptr_t end;
  std::uint64_t epoch;  ///< unloaded_epoch when published
};
inline constexpr std::size_t max_unloaded_ranges = 16;
inline std::mutex unloaded_mutex;
inline unloaded_range unloaded_ranges[max_unloaded_ranges] = {};  ///< guarded by unloaded_mutex
inline std::size_t unloaded_count = 0;                             ///< guarded by unloaded_mutex
/// Bumped with each range published (under unloaded_mutex; release). The
/// flusher loads it (acquire) after a ring's write position, so a record
/// pushed after an unload is seen with that unload's range.
inline std::atomic<std::uint64_t> unloaded_epoch{0};

inline bool in_unloaded_range_locked(const void* address) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  for (std::size_t i = 0; i < unloaded_count; ++i)
    if (a >= unloaded_ranges[i].begin && a < unloaded_ranges[i].end) return true;
  return false;
}

/// The addresses of the shared object holding `address` (every PT_LOAD
/// segment: code, call-site descriptors, string literals); empty for the
/// executable, which is never unloaded, or if none holds it.
inline unloaded_range object_range(const void* address) noexcept {
  struct search {
    std::uintptr_t address;
    bool first;
    unloaded_range found;
  } s{reinterpret_cast<std::uintptr_t>(address), true, {0, 0, 0}};
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
        if (!executable) s.found = {low, high, 0};
        return 1;
      },
      &s);
  return s.found;
}

/// Marks `range` unloaded. Called by the unloading thread while the object
/// is still mapped; once this returns (the flusher's site reads hold
/// unloaded_mutex) no read of the range can start.
inline void publish_unloaded(unloaded_range range) noexcept {
  if (range.begin == range.end) return;
  std::lock_guard<std::mutex> lock(unloaded_mutex);
  range.epoch = unloaded_epoch.load(std::memory_order_relaxed) + 1;
  if (unloaded_count < max_unloaded_ranges) {
    unloaded_ranges[unloaded_count++] = range;
  } else {  // full: widen the last one (drops more, never reads more)
    unloaded_range& last = unloaded_ranges[max_unloaded_ranges - 1];
    last = {std::min(last.begin, range.begin), std::max(last.end, range.end), range.epoch};
  }
  unloaded_epoch.store(range.epoch, std::memory_order_release);
}

/// Undoes register_category when the object that declared the category is
/// unloaded (dlclose) or the process exits: records still in the rings are
/// written first (they point at this object's strings), waiting at most
/// unload_flush_timeout; if some are still unread then (a slow output), the
/// object's address range is marked unloaded and the flusher drops and
/// counts them instead of reading them. Then the category leaves the
/// registry, so nothing touches its memory afterwards.
EDGETRACE_DETAIL_API void unregister_category(category_state& state) noexcept {
  if (state.index == 0) return;
  if (!flush_if_pending()) publish_unloaded(object_range(&state));
  std::lock_guard<std::mutex> lock(category_mutex);
  state.enabled.store(clock_off, std::memory_order_relaxed);
  for (category_state** link = &category_list; *link != nullptr; link = &(*link)->next) {
    if (*link == &state) {
      *link = state.next;
      break;
    }
  }
  state.next = nullptr;
  forget_sites.store(true, std::memory_order_release);
}

inline category_state* find_category_locked(std::uint32_t index) noexcept {
  for (category_state* c = category_list; c != nullptr; c = c->next)
    if (c->index == index) return c;
  return nullptr;
}

// ------------------------------------------------------------ rings

inline thread_ring* map_ring(std::uint64_t records) noexcept {
  const std::size_t header = (sizeof(thread_ring) + 4095) & ~std::size_t{4095};
  const std::size_t bytes = header + static_cast<std::size_t>(records) * sizeof(record);
  // MAP_POPULATE faults every page in here, off the hot path, in one batch.
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  auto* ring = new (memory) thread_ring;
  ring->reset(reinterpret_cast<record*>(static_cast<unsigned char*>(memory) + header),
              static_cast<std::size_t>(records));
  ring->mapping_size = bytes;
  return ring;
}

inline void unmap_ring(thread_ring* ring) noexcept {
  const std::size_t bytes = ring->mapping_size;
  ring->~thread_ring();
  ::munmap(ring, bytes);
}

// ------------------------------------------------------------ flusher clients
// (detail/flusher_client.hpp)

/// Client list. register_flusher_client pushes under client_mutex and
/// publishes with a release store; the flusher's acquire load then sees
/// every field of each client it reaches. Clients are never removed.
inline std::mutex client_mutex;
inline std::atomic<flusher_client*> client_list{nullptr};

EDGETRACE_DETAIL_API void register_flusher_client(flusher_client& client) noexcept {
  std::lock_guard<std::mutex> lock(client_mutex);
  for (flusher_client* c = client_list.load(std::memory_order_relaxed); c != nullptr; c = c->next)
    if (c == &client) return;
  client.next = client_list.load(std::memory_order_relaxed);
  client_list.store(&client, std::memory_order_release);
}

// ------------------------------------------------------------ runtime

/// EDGETRACE_ON_FULL=wait: how long a thread waits for room while the
/// flusher drains nothing of its ring (a stuck output, a flusher blocked
/// in write): then it drops, counted, until the flusher moves again.
inline constexpr std::uint64_t max_wait_without_progress_ns = 250000000u;

/// True on the flusher thread (a hook it runs may record): it never waits
/// for room in a ring, since only it makes room.
inline thread_local bool on_flusher_thread = false;

/// Everything that exists only while tracing is (or was) on. Built once in
/// static storage (no heap allocation before tracing is enabled) and never
/// destroyed: threads may still be tracing while static destructors run.
class runtime {
 public:
  explicit runtime(const settings& config) noexcept : config_(config) {}

  // ---- set once during start-up, then read-only
  settings config_;
  /// The dump's descriptor: opened, written and closed by the flusher
  /// (open_output); atomic because a forked child's fork handler reads it.
  std::atomic<int> fd_{-1};
  std::uint32_t writer_id_ = 0;
  pid_t owner_pid_ = 0;
  pthread_key_t exit_key_{};
  pthread_t flusher_{};
  bool flusher_started_ = false;
  char path_[4096] = {};

  // ---- interned names (any thread; intern_mutex)
  std::mutex intern_mutex_;
  std::unordered_map<std::string, std::uint32_t> intern_ids_;
  std::vector<const std::string*> intern_names_;  ///< id - 1 → name

  // ---- rings. Attaching a thread takes no lock and allocates nothing, so
  // a thread's first record may come from a signal handler (attach_thread).
  /// Attached rings, newest first. attach_thread pushes with a CAS on the
  /// head (acq_rel: a walker that reaches a ring sees its fields); only the
  /// flusher unlinks, holding ring_mutex_, which every other walker holds.
  std::atomic<thread_ring*> attached_{nullptr};
  std::mutex ring_mutex_;
  /// Pre-faulted spares, one per slot (null = empty). take_ring exchanges a
  /// slot with null; the flusher refills and recycles with a CAS null→ring.
  /// Lock-free both ways and free of ABA (a slot is never popped twice).
  static constexpr std::size_t pool_slots = 2;
  std::atomic<thread_ring*> pool_[pool_slots] = {};
  /// Rings whose thread exited and that the flusher has not recycled yet
  /// (exit hook adds, flusher subtracts). An exiting thread waits a little
  /// while more than retiring_limit are pending, so threads that come and
  /// go faster than the flusher runs do not each map a fresh ring.
  std::atomic<std::uint32_t> retiring_{0};
  static constexpr std::uint32_t retiring_limit = 2;

  // ---- flusher control (control_mutex)
  std::mutex control_mutex_;
  /// The flusher sleeps on this word (a futex); wake_flusher() bumps it.
  /// A futex, not a condition variable: waking must be async-signal-safe
  /// (a ring that fills up inside a signal handler wakes the flusher).
  std::atomic<std::uint32_t> wake_word_{0};
  std::atomic<bool> flusher_sleeping_{false};
  /// EDGETRACE_ON_FULL=wait: threads whose ring is full sleep on room_word_
  /// (a futex), which the flusher bumps after each ring it drained, waking
  /// them if room_waiters_ says someone sleeps (wait_for_room).
  std::atomic<std::uint32_t> room_word_{0};
  std::atomic<std::uint32_t> room_waiters_{0};
  std::condition_variable flushed_;     ///< flush() callers wait here
  bool stop_ = false;
  bool flusher_done_ = false;
  std::uint64_t flush_requested_ = 0;
  std::uint64_t flush_completed_ = 0;

  /// Set when output failed; the flusher then only discards.
  std::atomic<bool> failed_{false};
  /// Set by shutdown before the flusher's final pass.
  std::atomic<bool> stopping_{false};
  /// Signal flush hand-off (EDGETRACE_SIGNAL_FLUSH): the handler stores the
  /// signal number (release) and waits; the flusher (acquire) drains
  /// everything, ends the stream if the process is about to die, and
  /// stores signal_done_ (release). Only atomics: the handler may not lock.
  std::atomic<int> signal_pending_{0};
  std::atomic<bool> signal_terminates_{false};
  std::atomic<bool> signal_done_{false};
  /// Flusher only: the end chunk was written; nothing more may follow.
  bool ended_ = false;

  // ---- flight recorder (EDGETRACE_MODE=flight): detail/flight.hpp holds
  // the memory and the writer; these are the hand-offs to the flusher.
  flight_recorder flight_;
  flight_schedule schedule_;  ///< flusher only
  /// edgetrace::snapshot(): a caller claims the slot (0 -> 1, acquire),
  /// fills the three fields, publishes it (2, release); the flusher reads
  /// them after its acquire of 2, then frees the slot (0, release). Calls
  /// that find it taken only count (calls_coalesced_): the one in the slot
  /// covers them, and they are reported as skipped.
  std::atomic<int> call_slot_{0};
  char call_reason_[format::snapshot_reason_max] = {};
  std::size_t call_reason_size_ = 0;
  std::uint64_t call_tick_ = 0;
  std::atomic<std::uint64_t> calls_coalesced_{0};
  /// EDGETRACE_SNAPSHOT_SIGNAL: signals received (the handler adds, the
  /// flusher takes; relaxed, a count) and the tick of the latest.
  std::atomic<std::uint32_t> snapshot_signals_{0};
  std::atomic<std::uint64_t> snapshot_signal_tick_{0};
  /// Crash hand-off: the first crashing thread stores its signal (CAS from
  /// 0) after the tick; whoever moves crash_state_ from 0 to 1 (the flusher
  /// when it answers, else the handler) writes the snapshot, then stores 2
  /// (release). crash_skipped_ mirrors schedule_.skipped for the handler.
  std::atomic<int> crash_signal_{0};
  std::atomic<std::uint64_t> crash_tick_{0};
  std::atomic<int> crash_state_{0};
  std::atomic<std::uint64_t> crash_skipped_{0};
  /// Flusher only: chunks emitted now are a snapshot's tail, not the ring's.
  bool collecting_tail_ = false;

  // ---- flusher-only state (no lock: one thread)
  std::vector<unsigned char> out_;      ///< sealed chunks waiting for write()
  std::vector<unsigned char> chunk_;    ///< events chunk being built
  std::vector<unsigned char> defs_;     ///< definitions chunk being built
  std::vector<unsigned char> annotations_;  ///< annotations chunk being built (1.3)
  /// An allocation record whose bytes (the next record, tag_more) have not
  /// been read yet; thread_id 0 = none.
  struct pending_alloc {
    std::uint32_t thread_id;
    std::uint32_t site_id;
    std::uint64_t tick;
    std::uint64_t address;
  } pending_alloc_ = {};
  // Scratch space reused by the flusher. Members rather than locals: a
  // fork() can snapshot the flusher mid-cycle, and memory reachable only
  // from its stack would look leaked in the child.
  std::vector<unsigned char> scratch_;
  std::string name_scratch_;
  struct site_cache_entry {
    const site* key;
    std::uint32_t id;  ///< 0: the site's library was unloaded (the record is dropped)
    std::uint32_t category : 24;  ///< 16 bytes an entry keep encoding fast; indexes stay far below 2^24
    format::site_kind kind;
  };
  static_assert(sizeof(site_cache_entry) == 16, "the site cache is sized for 16-byte entries");
  /// Literal sites seen, with what encoding needs, so that the descriptor
  /// is read only once (it may belong to a library unloaded since).
  std::unordered_map<const site*, site_cache_entry> site_ids_;
  std::unordered_map<std::uint64_t, std::uint32_t> named_ids_;
  std::vector<bool> category_defined_;
  std::uint32_t next_site_id_ = 1;
  std::uint32_t next_thread_id_ = 1;
  site_cache_entry site_cache_[256] = {};
  /// What site_entry returns for a site in an unloaded library's range.
  static constexpr site_cache_entry unloaded_site{nullptr, 0, 0, static_cast<format::site_kind>(255)};
  /// unloaded_epoch values this flusher has acted on: sites cached from
  /// ranges published up to `seen` are forgotten; ranges up to `retired`
  /// are retired.
  std::uint64_t unloaded_seen_ = 0;
  std::uint64_t unloaded_retired_ = 0;
  /// The in-band loss record of the last records of unloaded libraries
  /// dropped in a row: where it starts and ends in the events chunk, the
  /// reference tick before it, and what it says (ticks: the records' first
  /// values). A drop right after it rewrites it, one more; so coalescing
  /// costs the drain loop nothing.
  struct {
    unsigned char* at;
    unsigned char* end;  ///< null: nothing to extend
    std::uint64_t ref, count, first, last;
  } unloaded_loss_ = {};
  struct named_cache_entry {
    std::uint64_t key;
    std::uint32_t id;  ///< 0 = empty (site ids start at 1)
  };
  named_cache_entry named_cache_[256] = {};
  /// Records written and dropped by threads whose rings were retired (their
  /// counters are reset when the ring is recycled), for the exit report.
  std::uint64_t retired_written_ = 0;
  std::uint64_t retired_dropped_ = 0;
  std::uint64_t last_calibration_ns_ = 0;
  int calibrations_ = 0;
  /// The stream's first calibration pair: record_measured's reference for
  /// CLOCK_MONOTONIC ns → ticks. Written before the_runtime is published.
  calibration_pair first_calibration_ = {};
  std::vector<unsigned char> client_chunk_;  ///< flusher clients' chunk being sealed

  // ---- latency triggers (EDGETRACE_TRIGGER; detail/flight_triggers.hpp).
  // Set before the flusher starts, then the flusher's alone.
  flight_triggers triggers_;
  /// Any trigger set: the one branch the drain loop pays per record without.
  bool triggers_set_ = false;

  // ---- capture control (docs/FORMAT.md, chunk 9)
  /// A recording change or a phase, waiting for the flusher to write it.
  struct capture_entry {
    format::capture_record type;
    std::uint64_t tick;
    bool on;
    format::capture_reason reason;
    std::string name;  ///< phases
  };
  /// Written by any thread under category_mutex; the flusher swaps it out
  /// under the same lock.
  std::vector<capture_entry> capture_pending_;
  std::vector<capture_entry> capture_out_;  ///< flusher only
  /// CLOCK_MONOTONIC when tracing came on: the origin of
  /// EDGETRACE_START_AFTER (set again under category_mutex as the "off"
  /// record is queued, so the window is timed from what the dump shows).
  std::uint64_t started_ns_ = 0;
  /// CLOCK_MONOTONIC when recording first came on, 0 before (category_mutex).
  std::uint64_t first_capture_ns_ = 0;
  /// Toggle signals received and not yet applied (the handler adds, the
  /// flusher takes: relaxed, it is a count and nothing else hangs on it).
  std::atomic<std::uint32_t> toggles_pending_{0};

  // ------------------------------------------------------------ output

  // The flusher owns the output. It opens it (open_output), so a FIFO that
  // nobody reads or a stuck file system blocks the flusher, never the app;
  // before every write it checks that its descriptor still names the file
  // it opened (an app that closes every fd and opens its own file gets the
  // same number) and that nobody truncated the file (log rotation).
  // docs/RELIABILITY.md, "Outputs that block, vanish or change".

  /// How opening went (the flusher stores with release; the starting
  /// thread waits for anything but `pending`, at most open_wait).
  enum open_state : int { open_pending, open_done, open_waiting_for_reader, open_failed };
  std::atomic<int> open_state_{open_pending};
  static constexpr std::chrono::milliseconds open_wait{1000};
  std::condition_variable opened_;  ///< open_state_ changed (control_mutex_)
  /// Flusher only, set by open_output: what the descriptor named then.
  dev_t output_dev_ = 0;
  ino_t output_ino_ = 0;
  bool output_regular_ = false;
  /// Flusher only: false once the descriptor's number names another file
  /// (the app closed ours and reused it): never write to or close it.
  bool fd_ours_ = true;
  /// Flusher only: the file's size can be no smaller than this after our
  /// writes (other writers only append); smaller means truncated.
  std::uint64_t expected_size_ = 0;
  bool truncation_reported_ = false;
  /// CLOCK_MONOTONIC ns when the write() in progress began, 0 between
  /// writes (flusher stores; exit and unload read it to see a stall).
  std::atomic<std::uint64_t> write_since_ns_{0};
  /// A wait for the flusher ran out (a library unloading at exit, before
  /// shutdown): shutdown then waits only briefly, so exit stays ~1 s.
  std::atomic<bool> gave_up_waiting_{false};

  /// Writes all of [data, data+size) with as many write() calls as the
  /// kernel needs; on failure reports once and turns tracing off.
  bool write_all(const unsigned char* data, std::size_t size) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return false;
    const int fd = fd_.load(std::memory_order_relaxed);
    write_since_ns_.store(clock_ns(CLOCK_MONOTONIC), std::memory_order_relaxed);
    const std::size_t total = size;
    while (size > 0) {
      const ssize_t n = ::write(fd, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_since_ns_.store(0, std::memory_order_relaxed);
        fail("writing", n < 0 ? errno : ENOSPC);
        return false;
      }
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    write_since_ns_.store(0, std::memory_order_relaxed);
    expected_size_ += total;
    return true;
  }

  void fail(const char* what, int error) noexcept {
    char message[4400];
    std::snprintf(message, sizeof message, "%s '%s' failed: %s; tracing is off", what, path_, std::strerror(error));
    fail_with(message);
  }

  /// Turns tracing off with one line (the first failure wins).
  void fail_with(const char* message) noexcept {
    if (failed_.exchange(true)) return;
    report("%s", message);
    std::lock_guard<std::mutex> lock(category_mutex);
    set_recording_locked(false);
  }

  /// True when the output took no data for at least `ns` (a write stuck
  /// that long, or a file not opened yet): exit and unload stop waiting.
  bool output_stalled(std::uint64_t ns) const noexcept {
    if (open_state_.load(std::memory_order_acquire) != open_done) return !failed_.load(std::memory_order_relaxed);
    const std::uint64_t since = write_since_ns_.load(std::memory_order_relaxed);
    return since != 0 && clock_ns(CLOCK_MONOTONIC) - since >= ns;
  }

  /// Checks, before a write, that the descriptor still names the dump and
  /// that the dump was not truncated under us. One fstat.
  bool output_is_ours() noexcept {
    if (!fd_ours_) return false;
    char message[4400];
    struct stat st;
    if (::fstat(fd_.load(std::memory_order_relaxed), &st) != 0) {
      fd_ours_ = false;
      std::snprintf(message, sizeof message,
                    "the descriptor of EDGETRACE_OUTPUT '%s' was closed by the application; tracing is off", path_);
      fail_with(message);
      return false;
    }
    if (st.st_dev != output_dev_ || st.st_ino != output_ino_) {
      fd_ours_ = false;
      std::snprintf(message, sizeof message,
                    "descriptor %d no longer names EDGETRACE_OUTPUT '%s' (the application closed it and opened "
                    "another file under that number); nothing more is written to it; tracing is off",
                    fd_.load(std::memory_order_relaxed), path_);
      fail_with(message);
      return false;
    }
    if (st.st_nlink == 0) {
      fail_deleted();
      return false;
    }
    if (output_regular_ && static_cast<std::uint64_t>(st.st_size) < expected_size_) start_again(st);
    return true;
  }

  /// The file was truncated by someone else (copytruncate log rotation, `:
  /// > run.etr`): say so once, and begin a self-contained stream at the new
  /// end (file header, process chunk, calibration, definitions again), so
  /// what follows reads on its own. Anything already on its way may land
  /// without its definitions; the reader skips it (docs/FORMAT.md).
  void start_again(const struct stat& st) {
    if (!truncation_reported_) {
      truncation_reported_ = true;
      report("EDGETRACE_OUTPUT '%s' was truncated by another process (%llu bytes left of at least %llu; log "
             "rotation?); the trace goes on after a new file header",
             path_, static_cast<unsigned long long>(st.st_size), static_cast<unsigned long long>(expected_size_));
    }
    expected_size_ = static_cast<std::uint64_t>(st.st_size);
    std::vector<unsigned char> pending;
    pending.swap(out_);
    unsigned char header[format::file_header_size];
    format::write_file_header(header);
    out_.insert(out_.end(), header, header + sizeof header);
    write_process_chunk();
    emit_calibration(first_calibration_);
    write_calibration();
    forget_definitions();
    out_.insert(out_.end(), pending.begin(), pending.end());
  }

  /// Literal sites are looked up (and defined) again on next sight.
  void forget_site_cache() noexcept {
    site_ids_.clear();
    for (site_cache_entry& entry : site_cache_) entry = {};
  }

  /// Every site, category and thread is defined again before its next use.
  void forget_definitions() noexcept {
    forget_site_cache();
    named_ids_.clear();
    for (named_cache_entry& entry : named_cache_) entry = {};
    category_defined_.clear();
    for (thread_ring* ring = attached_.load(std::memory_order_acquire); ring != nullptr;
         ring = ring->next_attached.load(std::memory_order_acquire)) {
      ring->announced = false;
      ring->written = 0;
    }
  }

  /// Opens the dump (flusher thread). A FIFO without a reader first fails
  /// at once (O_NONBLOCK): the starting thread is told and goes on, and
  /// the flusher then waits for a reader. The first live writer of a
  /// regular file truncates it and writes the file header (claim_file).
  bool open_output() noexcept {
    int fd = ::open(path_, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0 && errno == ENXIO) {
      set_open_state(open_waiting_for_reader);
      do fd = ::open(path_, O_WRONLY | O_APPEND | O_CLOEXEC);
      while (fd < 0 && errno == EINTR);
    }
    if (fd < 0) {
      char message[4400];
      std::snprintf(message, sizeof message, "cannot open EDGETRACE_OUTPUT='%s': %s; tracing is off", path_,
                    std::strerror(errno));
      fail_with(message);
      set_open_state(open_failed);
      return false;
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK) != 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // writes wait (here)
    struct stat st;
    if (::fstat(fd, &st) == 0) {
      output_dev_ = st.st_dev;
      output_ino_ = st.st_ino;
      output_regular_ = S_ISREG(st.st_mode);
    }
    fd_.store(fd, std::memory_order_release);
    const bool holds_init_lock = output_regular_ && file_lock(fd, F_WRLCK, 0, true);
    if (claim_file(fd)) {
      const int ignored = ::ftruncate(fd, 0);  // fails harmlessly on /dev/null, FIFOs
      (void)ignored;
      unsigned char header[format::file_header_size];
      format::write_file_header(header);
      out_.insert(out_.begin(), header, header + sizeof header);
    } else if (::fstat(fd, &st) == 0) {
      expected_size_ = static_cast<std::uint64_t>(st.st_size);
    }
    flush_output();
    if (holds_init_lock) file_lock(fd, F_UNLCK, 0, false);
    set_open_state(failed_.load() ? open_failed : open_done);
    return !failed_.load();
  }

  /// Takes (or, with F_UNLCK, releases) a one-byte open-file-description
  /// lock at `offset`; with `wait`, retries for at most 200 ms.
  static bool file_lock(int fd, short type, off_t offset, bool wait) noexcept {
    struct flock lock;
    std::memset(&lock, 0, sizeof lock);
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = offset;
    lock.l_len = 1;
    for (int tries = 0;; ++tries) {
      if (::fcntl(fd, F_OFD_SETLK, &lock) == 0) return true;
      if (!wait || (errno != EAGAIN && errno != EACCES) || tries >= 200) return false;
      timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    }
  }

  /// Whether this process is the file's first live writer, so the one to
  /// truncate it and write its header. Every writer holds a lock on a byte
  /// of its own past offset 0 for its lifetime (released when it exits,
  /// however it exits; write locks, as the descriptor is write-only); the
  /// first is the one that finds none, under the byte-0 lock that orders
  /// writers starting together. So staggered writers (A starts, B starts,
  /// A exits, C starts) all append to one dump: C sees B's lock and
  /// destroys nothing. Without locks (some network file systems) every
  /// writer is first, as with an O_TRUNC open. FIFOs and devices: nothing
  /// to claim.
  bool claim_file(int fd) noexcept {
    if (!output_regular_) return true;
    struct flock probe;
    std::memset(&probe, 0, sizeof probe);
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_start = 1;
    probe.l_len = 0;  // to the end of any offset
    const bool others = ::fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
    for (off_t offset = 1 + static_cast<off_t>(writer_id_ & 0x3FFFFFFFu), tries = 0; tries < 64; ++offset, ++tries)
      if (file_lock(fd, F_WRLCK, offset, false)) break;  // taken by a writer with the same number: the next one
    return !others;
  }

  void set_open_state(open_state state) noexcept {
    {
      std::lock_guard<std::mutex> lock(control_mutex_);
      open_state_.store(state, std::memory_order_release);
    }
    opened_.notify_all();
  }

  /// Closes the dump unless its number now names someone else's file
  /// (async-signal-safe: the fork child's handler calls it too).
  void close_output() noexcept {
    const int fd = fd_.exchange(-1, std::memory_order_acq_rel);
    struct stat st;
    if (fd >= 0 && fd_ours_ && ::fstat(fd, &st) == 0 && st.st_dev == output_dev_ && st.st_ino == output_ino_)
      ::close(fd);
  }

  /// Frames `payload` (already in `buffer` after chunk_header_size bytes of
  /// room) as a chunk and appends it to the output buffer. Sealed chunks are
  /// written whole: a crash leaves whole chunks and at most one partial.
  void emit_chunk(std::vector<unsigned char>& buffer, format::chunk_type type) noexcept {
    const auto payload = static_cast<std::uint32_t>(buffer.size() - format::chunk_header_size);
    buffer.resize(buffer.size() + format::chunk_trailer_size);
    format::seal_chunk(buffer.data(), type, writer_id_, payload);
    out_.insert(out_.end(), buffer.begin(), buffer.end());
    if (out_.size() >= (256u << 10)) flush_output();
  }

  void flush_output() noexcept {
    if (config_.flight) {  // the ring, not the file: snapshots write it (detail/flight.hpp)
      if (collecting_tail_) return;
      flight_.take(out_.data(), out_.size());
      out_.clear();
      if (flight_.sticky_just_filled())
        report("EDGETRACE_MODE=flight: the definitions and threads of this run passed %zu MiB; snapshots lack the "
               "later ones",
               flight_recorder::sticky_reserve >> 20);
      return;
    }
    if (!out_.empty() && !failed_.load(std::memory_order_relaxed) && output_is_ours())
      write_all(out_.data(), out_.size());
    out_.clear();
  }

  static void begin_chunk(std::vector<unsigned char>& buffer) noexcept { buffer.assign(format::chunk_header_size, 0); }

  static void put_varint(std::vector<unsigned char>& buffer, std::uint64_t value) {
    unsigned char bytes[format::max_varint_size];
    buffer.insert(buffer.end(), bytes, format::put_varint(bytes, value));
  }

  static void put_string(std::vector<unsigned char>& buffer, const char* text, std::size_t size) {
    if (size > format::max_string_size) size = format::max_string_size;
    put_varint(buffer, size);
    buffer.insert(buffer.end(), text, text + size);
  }
  static void put_string(std::vector<unsigned char>& buffer, const char* text) {
    put_string(buffer, text != nullptr ? text : "", text != nullptr ? std::strlen(text) : 0);
  }

  void write_process_chunk() {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, static_cast<std::uint64_t>(owner_pid_));
    b.push_back(static_cast<unsigned char>(tick_source(config_.clock)));
    b.push_back(tick_flags(counter_invariant(), config_.clock_fell_back));
    put_varint(b, nominal_tick_rate(config_.clock));
    put_varint(b, config_.ring_records);
    put_varint(b, std::uint64_t{config_.flush_ms} * 1000);
    char comm[64] = "process";
    const int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      const ssize_t n = ::read(fd, comm, sizeof comm - 1);
      if (n > 0) {
        comm[n] = '\0';
        if (comm[n - 1] == '\n') comm[n - 1] = '\0';
      }
      ::close(fd);
    }
    put_string(b, comm);
    emit_chunk(b, format::chunk_type::process);
  }

  void write_calibration() {
    const calibration_pair pair = calibrate(config_.clock);
    emit_calibration(pair);
    last_calibration_ns_ = pair.monotonic_ns;
    if (calibrations_ == 0) first_calibration_ = pair;  // before the runtime is published
    ++calibrations_;
    if (triggers_set_) set_trigger_rate(pair);
  }

  /// Converts the triggers' limits to ticks with the rate the dump will
  /// show: exact for CLOCK_MONOTONIC and aarch64's stated counter rate,
  /// else measured from the first calibration pair to `latest` (the
  /// second comes before anything is drained: take_rate_pair).
  void set_trigger_rate(const calibration_pair& latest) noexcept {
    const std::uint64_t nominal = nominal_tick_rate(config_.clock);
    double rate = static_cast<double>(nominal) / 1e9;
    if (nominal == 0 && latest.tick > first_calibration_.tick && latest.monotonic_ns > first_calibration_.monotonic_ns)
      rate = static_cast<double>(latest.tick - first_calibration_.tick) /
             static_cast<double>(latest.monotonic_ns - first_calibration_.monotonic_ns);
    triggers_.set_ticks_per_ns(rate);
  }

  /// Reads EDGETRACE_TRIGGER (before the flusher starts); a bad value, or
  /// one outside flight mode (where a trigger has nothing to write), is
  /// one stderr line and no trigger.
  void read_triggers() noexcept {
    const char* spec = std::getenv("EDGETRACE_TRIGGER");
    if (spec == nullptr) return;
    if (!config_.flight) {
      report("EDGETRACE_TRIGGER needs EDGETRACE_MODE=flight (a trigger writes a snapshot of the flight recorder); "
             "no trigger set");
      return;
    }
    char error[256];
    triggers_set_ = triggers_.parse(spec, error, sizeof error);
    if (!triggers_set_) report("%s", error);
  }

  /// A record of a watched site (flight_triggers::watches): over its
  /// limit, a snapshot is requested (the rate limit is request_snapshot's).
  EDGETRACE_DETAIL_NOINLINE void check_trigger(const thread_ring& ring, std::uint32_t id, const record& r) noexcept {
    flight_triggers::firing fired;
    if (!triggers_.evaluate(id, ring.thread_id, r.t_begin, r.t_end, fired)) return;
    char reason[format::snapshot_reason_max + 1];
    const std::size_t size = triggers_.describe(fired, reason, sizeof reason);
    request_snapshot(format::snapshot_trigger::latency, reason, size, fired.tick);
  }

  void emit_calibration(const calibration_pair& pair) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    b.resize(b.size() + 24);
    format::put_u64(b.data() + format::chunk_header_size, pair.tick);
    format::put_u64(b.data() + format::chunk_header_size + 8, pair.monotonic_ns);
    format::put_u64(b.data() + format::chunk_header_size + 16, pair.realtime_ns);
    emit_chunk(b, format::chunk_type::calibration);
  }

  /// Least gap between the first calibration pair and the second: the
  /// pairs' jitter (tens of ns) then makes a rate error of a few 1e-5,
  /// and a process dying at start-up has both. The flusher's first look
  /// comes 1 ms after start (flusher_loop), so it normally waits for nothing.
  static constexpr std::uint64_t rate_pair_gap_ns = 1000000;

  /// Flusher only, before anything timed is written: the second calibration
  /// pair, so that every dump holding events holds a measured tick rate
  /// (one pair alone gives the reader no rate where the CPU states none,
  /// e.g. an AMD CPU or a KVM guest). More pairs follow at 20 ms and then
  /// every second. `may_wait`: when woken early (a flush() right after
  /// start), sleep until the gap is reached (once, less than
  /// rate_pair_gap_ns); at exit take it now: exit must not wait, and the
  /// end's own pair follows.
  void take_rate_pair(bool may_wait) noexcept {
    if (calibrations_ >= 2 || failed_.load() || ended_) return;
    if (may_wait) {
      const std::uint64_t since = clock_ns(CLOCK_MONOTONIC) - first_calibration_.monotonic_ns;
      if (since < rate_pair_gap_ns) {
        const timespec pause{0, static_cast<long>(rate_pair_gap_ns - since)};
        nanosleep(&pause, nullptr);
      }
    }
    write_calibration();
  }

  // ------------------------------------------------------------ definitions

  void define_category(std::uint32_t index, const char* name) {
    if (index < category_defined_.size() && category_defined_[index]) return;
    if (index >= category_defined_.size()) category_defined_.resize(index + 1, false);
    category_defined_[index] = true;
    if (defs_.empty()) begin_chunk(defs_);
    defs_.push_back(static_cast<unsigned char>(format::definition_tag::category));
    put_varint(defs_, index);
    put_string(defs_, name);
  }

  void define_site(std::uint32_t id, format::site_kind kind, std::uint32_t category, const char* name,
                   std::size_t name_size, const char* file, std::uint32_t line) {
    if (defs_.empty()) begin_chunk(defs_);
    defs_.push_back(static_cast<unsigned char>(format::definition_tag::site));
    put_varint(defs_, id);
    defs_.push_back(static_cast<unsigned char>(kind));
    put_varint(defs_, category);
    put_string(defs_, name, name_size);
    put_string(defs_, file);
    put_varint(defs_, line);
    if (triggers_set_) triggers_.define_site(id, kind, name, name_size);
  }

  /// Dump id of a literal site; defines it on first sight. A direct-mapped
  /// cache in front of the hash map keeps dense loops cheap to encode.
  /// 0 if the site's library was unloaded before it was first read.
  EDGETRACE_DETAIL_NOINLINE std::uint32_t site_id(const site* s) {
    site_cache_entry& slot = site_cache_[(reinterpret_cast<std::uintptr_t>(s) >> 3) & 255];
    if (slot.key == s) return slot.id;
    auto found = site_ids_.find(s);
    if (found != site_ids_.end()) {
      slot = found->second;
      return slot.id;
    }
    site_cache_entry entry;
    {
      // The only read of a descriptor, under unloaded_mutex: its library
      // cannot be marked unloaded (and so cannot be unmapped) meanwhile.
      std::lock_guard<std::mutex> lock(unloaded_mutex);
      if (in_unloaded_range_locked(s)) return 0;
      entry = {s, next_site_id_++, s->category->index, s->kind};
      define_category(s->category->index, s->category->name);
      define_site(entry.id, s->kind, s->category->index, s->name, std::strlen(s->name), s->file, s->line);
    }
    site_ids_.emplace(s, entry);
    slot = entry;
    return entry.id;
  }

  /// The cache entry (dump id, category, kind) of the literal site in
  /// record word `word`, defining the site on first sight; unloaded_site if
  /// its library is gone. Direct-mapped: a dense loop of one site costs one
  /// compare.
  EDGETRACE_DETAIL_ALWAYS_INLINE const site_cache_entry& site_entry(std::uint64_t word) {
    const site* s = site_of(word);
    const site_cache_entry& slot = site_cache_[(word >> 3) & 255];
    if (EDGETRACE_DETAIL_UNLIKELY(slot.key != s) && site_id(s) == 0) return unloaded_site;  // else fills the slot
    return slot;
  }

  /// Forgets cached sites in the unloaded ranges published since the last
  /// call: their records must not be read, and a library loaded later may
  /// reuse the addresses.
  void forget_unloaded_sites() {
    unloaded_range ranges[max_unloaded_ranges];
    std::size_t count;
    {
      std::lock_guard<std::mutex> lock(unloaded_mutex);
      count = unloaded_count;
      std::copy(unloaded_ranges, unloaded_ranges + count, ranges);
      unloaded_seen_ = unloaded_epoch.load(std::memory_order_relaxed);
    }
    const auto unloaded = [&](const site* s) {
      const auto a = reinterpret_cast<std::uintptr_t>(s);
      for (std::size_t i = 0; i < count; ++i)
        if (a >= ranges[i].begin && a < ranges[i].end) return true;
      return false;
    };
    for (site_cache_entry& entry : site_cache_)
      if (entry.key != nullptr && unloaded(entry.key)) entry = {};
    for (auto it = site_ids_.begin(); it != site_ids_.end();) it = unloaded(it->first) ? site_ids_.erase(it) : ++it;
  }

  /// Retires the ranges published up to `epoch`: a whole drain_all cycle
  /// began after this flusher saw them, so no ring holds their records.
  void retire_unloaded(std::uint64_t epoch) noexcept {
    std::lock_guard<std::mutex> lock(unloaded_mutex);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < unloaded_count; ++i)
      if (unloaded_ranges[i].epoch > epoch) unloaded_ranges[kept++] = unloaded_ranges[i];
    unloaded_count = kept;
    unloaded_retired_ = epoch;
  }

  /// Drops a record of an unloaded library (cold): counted in the thread's
  /// total and in an in-band loss record at its place in the stream.
  EDGETRACE_DETAIL_NOINLINE void drop_unloaded(thread_ring& ring, const record& r) {
    ++ring.unloaded_dropped;
    // If it was an allocation, its second record (tag_more) goes too.
    pending_alloc_ = {ring.thread_id, 0, 0, 0};
    if (cursor_ != nullptr && cursor_ == unloaded_loss_.end) {  // nothing encoded since the last drop
      cursor_ = unloaded_loss_.at;
      ref_ = unloaded_loss_.ref;
      ++unloaded_loss_.count;
      if (r.t_begin > unloaded_loss_.last) unloaded_loss_.last = r.t_begin;
    } else {
      if (cursor_ == nullptr) {
        start_events_chunk(ring, r.t_begin);
      } else if (static_cast<std::size_t>(cursor_ - chunk_.data()) >
                 format::chunk_header_size + format::target_event_payload) {
        finish_events_chunk();
        start_events_chunk(ring, r.t_begin);
      }
      unloaded_loss_ = {cursor_, nullptr, ref_, 1, r.t_begin, r.t_begin};
    }
    encode(ring, record{pack_loss(unloaded_loss_.count), unloaded_loss_.first, unloaded_loss_.last}, nullptr);
    unloaded_loss_.end = cursor_;
  }

  /// Dump id of a (category, interned name) span site.
  std::uint32_t named_site_id(std::uint64_t word) {
    const std::uint64_t key = named_key(word);
    // Same direct-mapped cache as for literal sites: a hash lookup per
    // record would let a fast producer outrun the flusher.
    named_cache_entry& slot = named_cache_[(key ^ (key >> 30)) & 255];
    if (slot.key == key && slot.id != 0) return slot.id;
    auto found = named_ids_.find(key);
    if (found != named_ids_.end()) {
      slot = {key, found->second};
      return found->second;
    }
    const std::uint32_t id = next_site_id_++;
    named_ids_.emplace(key, id);
    slot = {key, id};
    const std::uint32_t category_index = named_category(word);
    const std::uint32_t name_id = named_id(word);
    {
      // Copied under the lock: an unregistered category's name may be in
      // an unloaded library.
      std::lock_guard<std::mutex> lock(category_mutex);
      const category_state* c = find_category_locked(category_index);
      name_scratch_ = c != nullptr ? c->name : "unknown";
    }
    define_category(category_index, name_scratch_.c_str());
    std::string& name = name_scratch_;
    name = "(unnamed)";
    {
      std::lock_guard<std::mutex> lock(intern_mutex_);
      if (name_id >= 1 && name_id <= intern_names_.size()) name = *intern_names_[name_id - 1];
    }
    define_site(id, format::site_kind::span, category_index, name.data(), name.size(), "", 0);
    return id;
  }

  // ------------------------------------------------------------ capture

  /// Writes the recording changes and phases queued since the last cycle
  /// as one capture chunk (records: u8 tag, varint size, body).
  void write_capture() {
    {
      std::lock_guard<std::mutex> lock(category_mutex);
      capture_out_.swap(capture_pending_);
    }
    if (capture_out_.empty() || failed_.load(std::memory_order_relaxed) || ended_) {
      capture_out_.clear();
      return;
    }
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    std::vector<unsigned char> body;
    for (const capture_entry& e : capture_out_) {
      body.clear();
      put_varint(body, e.tick);
      if (e.type == format::capture_record::recording) {
        if (triggers_set_ && !e.on) triggers_.recording_stopped(e.tick);  // no mark iteration across it
        body.push_back(e.on ? 1 : 0);
        body.push_back(static_cast<unsigned char>(e.reason));
      } else {
        put_string(body, e.name.data(), e.name.size());
      }
      b.push_back(static_cast<unsigned char>(e.type));
      put_varint(b, body.size());
      b.insert(b.end(), body.begin(), body.end());
    }
    capture_out_.clear();
    emit_chunk(b, format::chunk_type::capture);
  }

  /// Applies what only the flusher watches: EDGETRACE_START_AFTER's and
  /// EDGETRACE_DURATION's times and toggle signals. Returns the ns until the
  /// next deadline (or `longest`), so the flusher wakes up in time for it.
  std::uint64_t check_capture(std::uint64_t now, std::uint64_t longest) noexcept;

  // ------------------------------------------------------------ flusher clients

  /// Dump site id of a record word (a site pointer or a named-span word),
  /// defined on first sight like the rings' own records.
  std::uint32_t word_site_id(std::uint64_t word) {
    if (tag_of(word) == tag_named) return named_site_id(word);
    return site_id(site_of(word));
  }

  /// Seals a client's payload as a chunk, after any pending definitions it
  /// may refer to. Nothing once output failed or the stream ended.
  void emit_client_chunk(format::chunk_type type, const unsigned char* payload, std::size_t size) {
    if (failed_.load(std::memory_order_relaxed) || ended_ || size > format::max_chunk_payload) return;
    if (!defs_.empty()) {
      emit_chunk(defs_, format::chunk_type::definitions);
      defs_.clear();
    }
    begin_chunk(client_chunk_);
    client_chunk_.insert(client_chunk_.end(), payload, payload + size);
    emit_chunk(client_chunk_, type);
  }

  /// Calls every registered client (defined after flusher_output).
  void poll_clients(poll_reason why) noexcept;

  // ------------------------------------------------------------ draining

  void announce_thread(thread_ring& ring) {
    const std::uint32_t version = ring.name_version.load(std::memory_order_acquire);
    if (ring.announced && version == ring.name_version_seen) return;
    if (!ring.announced) ring.thread_id = next_thread_id_++;
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, ring.thread_id);
    put_varint(b, ring.os_tid);
    {
      std::lock_guard<spin_lock> lock(ring.name_mutex);
      put_string(b, ring.name, strnlen(ring.name, sizeof ring.name));
      ring.name_version_seen = ring.name_version.load(std::memory_order_relaxed);
    }
    emit_chunk(b, format::chunk_type::thread);
    ring.announced = true;
  }

  void write_thread_stats(const thread_ring& ring) {
    std::vector<unsigned char>& b = scratch_;
    begin_chunk(b);
    put_varint(b, ring.thread_id);
    put_varint(b, ring.written);
    put_varint(b, dropped_records(ring));
    put_varint(b, ring.rejected.load(std::memory_order_relaxed));  // 1.3: older readers skip it
    emit_chunk(b, format::chunk_type::thread_stats);
  }

  /// A thread's dropped total: full ring, signal handlers that landed
  /// inside the thread's own push, and records of an unloaded library
  /// (the last two as written so far).
  static std::uint64_t dropped_records(const thread_ring& ring) noexcept {
    return ring.drop_count.load(std::memory_order_relaxed) + ring.signal_dropped + ring.unloaded_dropped;
  }

  // ---- events chunk being built (flusher only). The buffer is sized once
  // to hold a full chunk plus one worst-case event, so encoding writes
  // through a raw cursor with no per-byte capacity checks.
  std::uint64_t ref_ = 0;
  unsigned char* cursor_ = nullptr;  ///< next byte of the events payload; null = no chunk open
  static constexpr std::size_t max_event_size = 1 + 3 * format::max_varint_size + 8;

  void start_events_chunk(const thread_ring& ring, std::uint64_t base) {
    if (chunk_.size() != format::chunk_header_size + format::target_event_payload + 2 * max_event_size +
                             format::chunk_trailer_size)
      chunk_.assign(format::chunk_header_size + format::target_event_payload + 2 * max_event_size +
                        format::chunk_trailer_size,
                    0);
    cursor_ = chunk_.data() + format::chunk_header_size;
    unloaded_loss_.end = nullptr;  // a loss record is only extended in its own chunk
    cursor_ = format::put_varint(cursor_, ring.thread_id);
    cursor_ = format::put_varint(cursor_, base);
    ref_ = base;
  }

  void finish_events_chunk() {
    if (cursor_ == nullptr) return;
    const auto payload = static_cast<std::uint32_t>(cursor_ - chunk_.data() - format::chunk_header_size);
    cursor_ = nullptr;
    // Definitions first: a reader meets every site before its first use.
    if (!defs_.empty()) {
      emit_chunk(defs_, format::chunk_type::definitions);
      defs_.clear();
    }
    const std::size_t size = format::seal_chunk(chunk_.data(), format::chunk_type::events, writer_id_, payload);
    out_.insert(out_.end(), chunk_.data(), chunk_.data() + size);
    if (out_.size() >= (256u << 10)) flush_output();
  }

  // ---- annotations (1.3): arguments, flow steps, allocations, frees. They
  // go to their own chunk (an older reader skips it), written after the
  // definitions they use.

  /// An allocation's bytes (tag_more): the pair is complete.
  EDGETRACE_DETAIL_NOINLINE void allocation_bytes(thread_ring& ring, const record& r) {
    if (EDGETRACE_DETAIL_UNLIKELY(pending_alloc_.thread_id == ring.thread_id && pending_alloc_.site_id == 0)) {
      drop_unloaded(ring, r);  // its allocation's library was unloaded
      pending_alloc_.thread_id = 0;
      return;
    }
    ++ring.written;
    if (pending_alloc_.thread_id == ring.thread_id) {
      unsigned char body[5 * format::max_varint_size];
      unsigned char* p = annotation_head(body, pending_alloc_.thread_id, pending_alloc_.tick, pending_alloc_.site_id);
      p = format::put_varint(p, pending_alloc_.address);
      p = format::put_varint(p, r.t_begin);
      put_annotation(format::annotation_record::alloc, body, p);
    }
    pending_alloc_.thread_id = 0;
  }

  /// A literal-site record whose kind is an annotation (or whose library
  /// was unloaded: unloaded_site's kind counts as one, so it comes here).
  EDGETRACE_DETAIL_NOINLINE void annotation(thread_ring& ring, const record& r, const site_cache_entry& slot) {
    const format::site_kind kind = slot.kind;
    if (EDGETRACE_DETAIL_UNLIKELY(slot.id == 0)) {  // unloaded_site
      drop_unloaded(ring, r);
      return;
    }
    ++ring.written;
    const std::uint32_t id = slot.id;
    if (kind == format::site_kind::alloc) {
      pending_alloc_ = {ring.thread_id, id, r.t_begin, r.t_end};
      return;
    }
    if (kind == format::site_kind::arg) {
      put_argument(ring.thread_id, r.t_begin, id, format::arg_type::integer, r.t_end);
      return;
    }
    if (kind == format::site_kind::arg_float || kind == format::site_kind::arg_bool) {
      const format::arg_type type = kind == format::site_kind::arg_float ? format::arg_type::real
                                    : r.t_end != 0                       ? format::arg_type::bool_true
                                                                         : format::arg_type::bool_false;
      put_argument(ring.thread_id, r.t_begin, id, type, r.t_end);
      return;
    }
    unsigned char body[4 * format::max_varint_size];
    unsigned char* p = annotation_head(body, ring.thread_id, r.t_begin, id);
    format::annotation_record type = format::annotation_record::free;
    switch (kind) {
      case format::site_kind::arg_name:
        type = format::annotation_record::arg_name;
        p = format::put_varint(p, named_site_id(pack_named(static_cast<std::uint32_t>(r.t_end), slot.category)));
        break;
      case format::site_kind::flow:
        type = format::annotation_record::flow;
        p = format::put_varint(p, r.t_end);
        break;
      default:  // free
        p = format::put_varint(p, r.t_end);
        break;
    }
    put_annotation(type, body, p);
  }

  static unsigned char* annotation_head(unsigned char* p, std::uint32_t thread_id, std::uint64_t tick,
                                        std::uint32_t site) noexcept {
    p = format::put_varint(p, thread_id);
    p = format::put_varint(p, tick);
    return format::put_varint(p, site);
  }

  // ---- argument runs (1.4): a thread's consecutive arguments as one
  // record, each after the first as (site, tick delta, value): 3 bytes for
  // a small value recorded within ~50 ns of the previous one, where a
  // record of its own costs ~12 (docs/FORMAT.md, annotations tag 6). A
  // float or bool argument (1.5) opens a typed run (tag 7) instead, whose
  // entries carry their type in the site field; integers that follow join
  // it. Integer-only runs stay tag 6, so a 1.4 reader reads them as before.
  struct {
    std::size_t at;  ///< offset of the run's tag byte in annotations_
    std::uint64_t tick;  ///< the last entry's tick
    std::uint32_t thread_id;  ///< 0: no run open
    std::uint32_t entries;
    bool typed;  ///< tag 7 (typed sites) rather than tag 6
  } arg_run_ = {};
  /// The run's size field: a varint padded to 3 bytes (up to 2 MiB; an
  /// annotations chunk is sealed past 60 KiB), filled in when it closes.
  static constexpr std::size_t run_size_bytes = 3;

  /// One argument: `value` is the int64's bits (integer), the double's bits
  /// (real) or unused (the bool is in `type`).
  void put_argument(std::uint32_t thread_id, std::uint64_t tick, std::uint32_t site, format::arg_type type,
                    std::uint64_t value) {
    unsigned char entry[4 * format::max_varint_size];
    unsigned char* p = entry;
    const bool joins = arg_run_.thread_id == thread_id && tick >= arg_run_.tick &&
                       (arg_run_.typed || type == format::arg_type::integer);
    const bool typed = joins ? arg_run_.typed : type != format::arg_type::integer;
    const std::uint64_t site_field = typed ? (std::uint64_t{site} << 2) | static_cast<std::uint8_t>(type) : site;
    if (joins) {
      p = format::put_varint(p, site_field);
      p = format::put_varint(p, tick - arg_run_.tick);
    } else {
      close_arg_run();
      if (annotations_.empty()) begin_chunk(annotations_);
      arg_run_ = {annotations_.size(), tick, thread_id, 0, typed};
      annotations_.push_back(static_cast<unsigned char>(typed ? format::annotation_record::typed_arg_run
                                                              : format::annotation_record::arg_run));
      annotations_.insert(annotations_.end(), run_size_bytes, 0);
      p = annotation_head(p, thread_id, tick, site_field);
    }
    if (type == format::arg_type::integer) {
      p = format::put_varint(p, format::zigzag(static_cast<std::int64_t>(value)));
    } else if (type == format::arg_type::real) {
      format::put_u64(p, value);
      p += 8;
    }
    annotations_.insert(annotations_.end(), entry, p);
    arg_run_.tick = tick;
    ++arg_run_.entries;
    if (annotations_.size() > format::target_event_payload) emit_annotations();
  }

  /// Fills in the open run's size. A run of one argument becomes a plain
  /// argument record (1.3's, two bytes shorter); a typed run of one keeps
  /// its tag with a one-byte size.
  void close_arg_run() noexcept {
    if (arg_run_.thread_id == 0) return;
    arg_run_.thread_id = 0;
    unsigned char* tag = annotations_.data() + arg_run_.at;
    unsigned char* body = tag + 1 + run_size_bytes;
    const std::size_t size = static_cast<std::size_t>(annotations_.data() + annotations_.size() - body);
    if (arg_run_.entries == 1) {  // four varints (or three and an f64) at most: < 128 bytes
      if (!arg_run_.typed) tag[0] = static_cast<unsigned char>(format::annotation_record::arg);
      tag[1] = static_cast<unsigned char>(size);
      std::memmove(tag + 2, body, size);
      annotations_.resize(annotations_.size() - (run_size_bytes - 1));
      return;
    }
    tag[1] = static_cast<unsigned char>(0x80 | (size & 0x7F));
    tag[2] = static_cast<unsigned char>(0x80 | ((size >> 7) & 0x7F));
    tag[3] = static_cast<unsigned char>(size >> 14);
  }

  void put_annotation(format::annotation_record type, const unsigned char* body, const unsigned char* end) {
    close_arg_run();
    if (annotations_.empty()) begin_chunk(annotations_);
    annotations_.push_back(static_cast<unsigned char>(type));
    put_varint(annotations_, static_cast<std::uint64_t>(end - body));
    annotations_.insert(annotations_.end(), body, end);
    if (annotations_.size() > format::target_event_payload) emit_annotations();
  }

  /// Seals the annotations chunk, after the definitions it refers to.
  void emit_annotations() {
    if (annotations_.empty()) return;
    close_arg_run();
    if (!defs_.empty()) {
      emit_chunk(defs_, format::chunk_type::definitions);
      defs_.clear();
    }
    emit_chunk(annotations_, format::chunk_type::annotations);
    annotations_.clear();
  }

  static constexpr std::uint64_t special_code(format::special_type type) noexcept {
    return (std::uint64_t{static_cast<std::uint8_t>(type)} << 2) | 3;
  }

  /// Makes `t` the new reference, with a rebase event if ticks went back
  /// (another core's clock, a signal handler recording mid-push).
  EDGETRACE_DETAIL_ALWAYS_INLINE void advance(std::uint64_t t) {
    if (EDGETRACE_DETAIL_UNLIKELY(t < ref_)) {
      cursor_ = format::put_varint(cursor_, special_code(format::special_type::rebase));
      cursor_ = format::put_varint(cursor_, t);
      ref_ = t;
    }
  }

  /// Encodes one record at cursor_ (at most max_event_size bytes). `slot`:
  /// the record's site_entry for a literal site (tag_site), else null.
  EDGETRACE_DETAIL_ALWAYS_INLINE void encode(thread_ring& ring, const record& r, const site_cache_entry* slot) {
    const record_tag tag = tag_of(r.word);
    std::uint32_t id;
    format::site_kind kind = format::site_kind::span;
    if (EDGETRACE_DETAIL_LIKELY(slot != nullptr)) {
      id = slot->id;
      kind = slot->kind;
    } else if (tag == tag_named) {
      id = named_site_id(r.word);
    } else {
      advance(r.t_begin);
      cursor_ = format::put_varint(cursor_, special_code(format::special_type::loss));
      cursor_ = format::put_varint(cursor_, r.t_begin - ref_);
      cursor_ = format::put_varint(cursor_, r.t_end >= r.t_begin ? r.t_end - r.t_begin : 0);
      cursor_ = format::put_varint(cursor_, loss_count(r.word));
      ref_ = r.t_end >= r.t_begin ? r.t_end : r.t_begin;
      return;
    }
    ++ring.written;
    // Latency triggers: without any, this branch is all a record pays.
    if (EDGETRACE_DETAIL_UNLIKELY(triggers_set_) && triggers_.watches(id)) check_trigger(ring, id, r);
    if (EDGETRACE_DETAIL_LIKELY(kind == format::site_kind::span)) {
      advance(r.t_end);
      cursor_ = format::put_varint(cursor_, std::uint64_t{id} << 2);
      cursor_ = format::put_varint(cursor_, r.t_end - ref_);
      cursor_ = format::put_varint(cursor_, r.t_end >= r.t_begin ? r.t_end - r.t_begin : 0);
      ref_ = r.t_end;
    } else {
      advance(r.t_begin);
      const auto type = kind == format::site_kind::counter ? format::event_type::counter : format::event_type::instant;
      cursor_ = format::put_varint(cursor_, (std::uint64_t{id} << 2) | static_cast<std::uint8_t>(type));
      cursor_ = format::put_varint(cursor_, r.t_begin - ref_);
      ref_ = r.t_begin;
      if (kind == format::site_kind::counter) {
        format::put_u64(cursor_, r.t_end);
        cursor_ += 8;
      }
    }
  }

  /// The tick an events chunk starting with `r` takes as its base.
  static std::uint64_t reference_tick(const record& r, const site_cache_entry* slot) noexcept {
    if (tag_of(r.word) == tag_loss) return r.t_begin;
    if (tag_of(r.word) == tag_named) return r.t_end;
    return slot->kind == format::site_kind::span ? r.t_end : r.t_begin;
  }

  /// Drains everything published in `ring`. Returns the number of records.
  std::uint64_t drain(thread_ring& ring) {
    if (failed_.load(std::memory_order_relaxed) || ended_)  // discarded, but a waiting producer goes on at once
      return consume_to(ring, ring.write_pos.load(order_acquire), [](const record&) {}, [this] { wake_room_waiters(); });
    // The write position first, then the unload epoch: a record pushed
    // after an unload (by a library loaded since, maybe at the same
    // address) is then always read with that unload's sites forgotten.
    record* const published = ring.write_pos.load(order_acquire);
    if (EDGETRACE_DETAIL_UNLIKELY(unloaded_epoch.load(std::memory_order_acquire) != unloaded_seen_))
      forget_unloaded_sites();
    announce_thread(ring);
    const std::size_t count = consume_to(ring, published, [&](const record& r) EDGETRACE_DETAIL_INLINE_LAMBDA {
      // One site lookup per record: annotations (and unloaded sites) leave
      // here, spans, instants and counters go on to encode with it.
      const site_cache_entry* slot = nullptr;
      if (EDGETRACE_DETAIL_LIKELY(tag_of(r.word) == tag_site)) {
        slot = &site_entry(r.word);
        if (EDGETRACE_DETAIL_UNLIKELY(format::is_annotation(slot->kind))) return annotation(ring, r, *slot);
      } else if (EDGETRACE_DETAIL_UNLIKELY(tag_of(r.word) == tag_more)) {
        return allocation_bytes(ring, r);
      }
      if (cursor_ == nullptr) {
        start_events_chunk(ring, reference_tick(r, slot));
      } else if (EDGETRACE_DETAIL_UNLIKELY(static_cast<std::size_t>(cursor_ - chunk_.data()) >
                                           format::chunk_header_size + format::target_event_payload)) {
        finish_events_chunk();
        start_events_chunk(ring, reference_tick(r, slot));
      }
      encode(ring, r, slot);
    }, [this] { wake_room_waiters(); });
    finish_events_chunk();
    emit_annotations();
    if (EDGETRACE_DETAIL_UNLIKELY(ring.signal_drops.load(std::memory_order_relaxed) != 0)) write_signal_drops(ring);
    return count;
  }

  /// Writes, as an in-band loss at the current tick, the records this
  /// ring's signal handlers could not store (reserve_slots); the thread's
  /// dropped total includes them.
  void write_signal_drops(thread_ring& ring) {
    const std::uint64_t n = ring.signal_drops.exchange(0, std::memory_order_relaxed);
    ring.signal_dropped += n;
    const std::uint64_t now = ticks(config_.clock);
    start_events_chunk(ring, now);
    encode(ring, record{pack_loss(n), now, now}, nullptr);
    finish_events_chunk();
  }

  /// Writes the in-band loss a retired thread could not write itself.
  void drain_pending_loss(thread_ring& ring) {
    if (ring.pending_loss == 0 || failed_.load(std::memory_order_relaxed) || ended_) return;
    const record loss{pack_loss(ring.pending_loss), ring.loss_first, ring.loss_last};
    start_events_chunk(ring, loss.t_begin);
    encode(ring, loss, nullptr);
    finish_events_chunk();
    ring.pending_loss = 0;
  }

  /// Puts a drained ring back in the pool (empty, ready for a new thread),
  /// or unmaps it if the pool is full.
  void recycle(thread_ring* ring) noexcept {
    const std::size_t bytes = ring->mapping_size;
    record* slots = ring->begin;
    const std::size_t count = ring->slot_count();
    ring->~thread_ring();
    ring = new (ring) thread_ring;
    ring->reset(slots, count);
    ring->mapping_size = bytes;
    if (!offer_to_pool(ring)) unmap_ring(ring);
  }

  bool offer_to_pool(thread_ring* ring) noexcept {
    for (std::atomic<thread_ring*>& slot : pool_) {
      thread_ring* empty = nullptr;
      // Release: a thread that takes the ring sees it fully reset.
      if (slot.compare_exchange_strong(empty, ring, std::memory_order_release, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  /// Removes `ring` from the attached list; `previous` is the ring before
  /// it in the flusher's walk (null: it was the head then). Returns the
  /// ring now before the next one. Flusher only, under ring_mutex_.
  thread_ring* unlink(thread_ring* previous, thread_ring* ring) noexcept {
    thread_ring* next = ring->next_attached.load(std::memory_order_relaxed);
    if (previous == nullptr) {
      thread_ring* head = ring;
      if (attached_.compare_exchange_strong(head, next, std::memory_order_acq_rel)) return nullptr;
      // Threads attached since the walk began: `ring` is further down now.
      previous = head;
      while (previous->next_attached.load(std::memory_order_acquire) != ring)
        previous = previous->next_attached.load(std::memory_order_acquire);
    }
    previous->next_attached.store(next, std::memory_order_release);
    return previous;
  }

  /// One flusher cycle: drain every ring, retire those whose thread exited
  /// (their ring goes back to the pool at once, so thread churn costs no
  /// memory). Returns the fullest fill fraction seen (to adapt the period).
  double drain_all(bool final_pass) {
    // Every ring below is drained after this load: the unloaded ranges
    // published before it hold no records any more once the loop is done.
    const std::uint64_t unloaded_epoch_now = unloaded_epoch.load(std::memory_order_acquire);
    double fullest = 0;
    thread_ring* previous = nullptr;
    for (thread_ring* ring = attached_.load(std::memory_order_acquire); ring != nullptr;) {
      thread_ring* next = ring->next_attached.load(std::memory_order_acquire);
      // Acquire pairs with the exit hook's release: once retired is seen,
      // the owner's last records and loss fields are visible.
      const bool retired = ring->retired.load(std::memory_order_acquire);
      const std::uint64_t drained = drain(*ring);
      fullest = std::max(fullest, static_cast<double>(drained) / static_cast<double>(ring->slot_count()));
      if (retired) {
        drain(*ring);  // anything pushed between the two loads
        drain_pending_loss(*ring);
        if (ring->announced && !failed_.load(std::memory_order_relaxed) && !ended_) write_thread_stats(*ring);
        retired_written_ += ring->written;
        retired_dropped_ += dropped_records(*ring);
        if (triggers_set_) triggers_.forget_thread(ring->thread_id);
        {
          std::lock_guard<std::mutex> lock(ring_mutex_);
          previous = unlink(previous, ring);
        }
        recycle(ring);
        retiring_.fetch_sub(1, std::memory_order_release);
      } else {
        if (final_pass && ring->announced && !failed_.load(std::memory_order_relaxed) && !ended_)
          write_thread_stats(*ring);
        previous = ring;
      }
      ring = next;
    }
    if (EDGETRACE_DETAIL_UNLIKELY(unloaded_epoch_now != unloaded_retired_)) {
      if (unloaded_seen_ != unloaded_epoch_now) forget_unloaded_sites();  // no ring was drained
      retire_unloaded(unloaded_epoch_now);
    }
    return fullest;
  }

  /// Maps spares into empty pool slots, unless exited threads' rings are
  /// about to come back (thread churn would otherwise map and unmap a ring
  /// per thread).
  void refill_pool() noexcept {
    for (std::atomic<thread_ring*>& slot : pool_) {
      if (stopping_.load(std::memory_order_relaxed)) return;  // exit must not wait on page faults
      if (retiring_.load(std::memory_order_relaxed) != 0) return;
      if (slot.load(std::memory_order_relaxed) != nullptr) continue;
      thread_ring* ring = map_ring(config_.ring_records);
      if (ring == nullptr) return;
      if (!offer_to_pool(ring)) {
        unmap_ring(ring);
        return;
      }
    }
  }

  /// Takes a pre-faulted ring from the pool, or maps one if the pool ran
  /// dry. Lock-free and async-signal-safe (mmap is a system call).
  thread_ring* take_ring() noexcept {
    for (std::atomic<thread_ring*>& slot : pool_) {
      if (slot.load(std::memory_order_relaxed) == nullptr) continue;
      // Acquire pairs with offer_to_pool's release.
      if (thread_ring* ring = slot.exchange(nullptr, std::memory_order_acquire)) return ring;
    }
    return map_ring(config_.ring_records);
  }

  /// Wakes the flusher now rather than at its next period. Async-signal-
  /// safe: an atomic add and, if the flusher sleeps, one futex system call.
  void wake_flusher() noexcept {
    wake_word_.fetch_add(1, std::memory_order_seq_cst);
    if (flusher_sleeping_.load(std::memory_order_seq_cst))
      ::syscall(SYS_futex, &wake_word_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }

  /// Tells threads waiting for room (wait_for_room) that a ring was
  /// drained. The bump comes after the drain published its read position,
  /// and a waiter counts itself before it reads the word, so either the
  /// waiter sees the new word (and does not sleep) or we see the waiter.
  void wake_room_waiters() noexcept {
    room_word_.fetch_add(1, std::memory_order_seq_cst);
    if (room_waiters_.load(std::memory_order_seq_cst) != 0)
      ::syscall(SYS_futex, &room_word_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }

  /// Sleeps until wake_flusher() is called after `seen` was read, or for
  /// `ns`. Either the waker sees flusher_sleeping_ and wakes us, or the
  /// kernel sees the word changed and does not put us to sleep.
  void sleep_until_woken(std::uint32_t seen, std::uint64_t ns) noexcept {
    flusher_sleeping_.store(true, std::memory_order_seq_cst);
    timespec timeout{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
    ::syscall(SYS_futex, &wake_word_, FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
    flusher_sleeping_.store(false, std::memory_order_relaxed);
  }

  void flusher_loop() {
    const std::uint64_t period_ns = std::uint64_t{config_.flush_ms} * 1000000u;
    std::uint64_t wait_ns = period_ns < 1000000u ? period_ns : 1000000u;  // first look soon
    std::uint64_t last_drain_ns = clock_ns(CLOCK_MONOTONIC);
    refill_pool();  // here, not in start-up: page faults stay off the app's start
    for (;;) {
      const std::uint64_t wait = flight_wait(check_capture(clock_ns(CLOCK_MONOTONIC), wait_ns));
      // Read before looking for work: a wake-up after this read, however
      // early, makes the sleep below return at once.
      const std::uint32_t seen = wake_word_.load(std::memory_order_seq_cst);
      bool idle;
      {
        std::lock_guard<std::mutex> lock(control_mutex_);
        idle = !stop_ && flush_requested_ == flush_completed_;
      }
      if (idle) sleep_until_woken(seen, wait);
      std::uint64_t serving;
      bool flushing;
      {
        std::lock_guard<std::mutex> lock(control_mutex_);
        if (stop_) break;
        serving = flush_requested_;
        flushing = serving != flush_completed_;
      }
      if (forget_sites.exchange(false, std::memory_order_acq_rel)) forget_site_cache();
      take_rate_pair(true);  // before the first timed chunk
      // Before encoding: a truncation found now costs no record (the new
      // stream defines everything this cycle uses). One fstat.
      if (!failed_.load() && !ended_) check_output_still_there();
      const std::uint64_t drain_start_ns = clock_ns(CLOCK_MONOTONIC);
      check_capture(drain_start_ns, 0);
      write_capture();
      const double fullest = drain_all(false);
      poll_clients(flushing ? poll_reason::flush : poll_reason::cycle);
      // Adapt the period to the busiest ring: come back before it can fill
      // an eighth at the rate just seen (never sooner than 50 µs, never
      // later than EDGETRACE_FLUSH_MS), so bursts are not dropped. A ring
      // found more than half full says nothing about the rate (it may have
      // been full for most of the period): poll at the fastest then.
      // An empty ring only lets the period grow back gradually (doubling):
      // a quiet moment, or an early wake-up by flush(), must not send the
      // flusher to sleep for a whole period in the middle of a burst.
      const double elapsed_ns = static_cast<double>(drain_start_ns - last_drain_ns) + 1.0;
      last_drain_ns = drain_start_ns;
      wait_ns = wait_ns * 2 < period_ns ? wait_ns * 2 : period_ns;
      if (fullest > 0.5) {
        wait_ns = 50000u;
      } else if (fullest > 0) {
        const double eighth_ns = 0.125 * elapsed_ns / fullest;
        wait_ns = period_ns;
        if (eighth_ns < static_cast<double>(period_ns))
          wait_ns = eighth_ns < 50000.0 ? 50000u : static_cast<std::uint64_t>(eighth_ns);
      }
      const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
      if (!failed_.load() && !ended_ &&
          (calibrations_ < 3 ? now - last_calibration_ns_ > 20000000u : now - last_calibration_ns_ > 1000000000u))
        write_calibration();
      if (signal_pending_.load(std::memory_order_acquire) != 0) serve_signal();
      flush_output();
      if (config_.flight) serve_flight(false);
      refill_pool();
      {
        std::lock_guard<std::mutex> lock(control_mutex_);
        flush_completed_ = serving;
      }
      flushed_.notify_all();
    }
    if (config_.flight && !ended_) finish_flight();
    if (!ended_) end_stream();
    close_output();
    {
      std::lock_guard<std::mutex> lock(control_mutex_);
      flusher_done_ = true;
      flush_completed_ = flush_requested_;
    }
    flushed_.notify_all();
  }

  /// Final pass: everything drained, thread totals, a last calibration
  /// pair and the end chunk, written out.
  void end_stream() {
    take_rate_pair(false);
    write_capture();
    drain_all(true);
    poll_clients(poll_reason::final);
    if (!failed_.load()) {
      write_calibration();
      begin_chunk(scratch_);
      emit_chunk(scratch_, format::chunk_type::end);
    }
    flush_output();
    ended_ = true;
    report_drops();
  }

  /// At the end of the stream: if any thread's ring was full at some point,
  /// one stderr line with the count (the thread stats in the dump have the
  /// same numbers per thread) and what to do about it. Nothing otherwise.
  void report_drops() noexcept {
    if (failed_.load()) return;
    std::uint64_t written = retired_written_, dropped = retired_dropped_;
    {
      std::lock_guard<std::mutex> lock(ring_mutex_);
      for (const thread_ring* ring = attached_.load(std::memory_order_acquire); ring != nullptr;
           ring = ring->next_attached.load(std::memory_order_acquire)) {
        written += ring->written;
        dropped += dropped_records(*ring);
      }
    }
    if (dropped == 0) return;
    const double percent = 100.0 * static_cast<double>(dropped) / static_cast<double>(written + dropped);
    if (config_.drop_when_full)
      report("%llu of %llu records (%.1f%%) were dropped because a thread's ring was full (EDGETRACE_ON_FULL=drop); "
             "set EDGETRACE_ON_FULL=wait, or a larger EDGETRACE_BUFFER_KB (now %llu), to keep them",
             static_cast<unsigned long long>(dropped), static_cast<unsigned long long>(written + dropped), percent,
             static_cast<unsigned long long>((config_.ring_records * sizeof(record) + 1023) / 1024));
    else
      report("%llu of %llu records (%.1f%%) were dropped although EDGETRACE_ON_FULL=wait (an output that "
             "took no data for %llu ms, a signal handler inside its thread's own record, or records of an unloaded "
             "library; see docs/RELIABILITY.md)",
             static_cast<unsigned long long>(dropped), static_cast<unsigned long long>(written + dropped), percent,
             static_cast<unsigned long long>(max_wait_without_progress_ns / 1000000u));
  }

  /// Answers a signal handler waiting in signal_flush(): if the signal will
  /// end the process, end the stream now; else just drain and write.
  void serve_signal() {
    if (!ended_) {
      if (signal_terminates_.load(std::memory_order_relaxed)) {
        if (config_.flight) finish_flight();  // the process ends here: as at exit
        end_stream();
      } else {
        drain_all(false);
        poll_clients(poll_reason::flush);
        flush_output();
      }
    }
    signal_pending_.store(0, std::memory_order_relaxed);
    signal_done_.store(true, std::memory_order_release);
  }

  /// A dump deleted (or replaced) while the app runs would swallow every
  /// later write silently: say so once and stop.
  void check_output_still_there() {
    if (fd_ours_ && open_state_.load(std::memory_order_relaxed) == open_done) output_is_ours();
  }
  void fail_deleted() noexcept {
    char message[4400];
    std::snprintf(message, sizeof message, "output '%s' was deleted while tracing; tracing is off", path_);
    fail_with(message);
  }

  // ------------------------------------------------------------ flight recorder
  // EDGETRACE_MODE=flight. The bodies are in detail/flight_runtime.hpp.

  /// Flight mode's start, instead of open_output (flusher).
  void start_flight() noexcept;
  /// Schedules a snapshot (flusher only): applies the rate limit
  /// (EDGETRACE_FLIGHT_MAX, EDGETRACE_FLIGHT_GAP_MS; a skipped request is
  /// counted in the next snapshot written), and the snapshot is written
  /// EDGETRACE_FLIGHT_AFTER_MS later (crash and exit: at once, outside the
  /// limit). A no-op outside flight mode. Cost: a few compares; the reason
  /// (cut to 255 bytes) is copied.
  void request_snapshot(format::snapshot_trigger why, const char* reason, std::size_t reason_size,
                        std::uint64_t trigger_tick) noexcept;
  /// How long the flusher may sleep: no later than a pending snapshot's due time.
  std::uint64_t flight_wait(std::uint64_t wait) const noexcept;
  /// Takes the requests other threads handed over; writes a snapshot that is due (flusher).
  void serve_flight(bool now);
  /// Writes the pending snapshot (flusher).
  void write_snapshot();
  /// At exit, before the stream's end (flusher).
  void finish_flight();
  /// edgetrace::snapshot() on any thread. Async-signal-safe.
  void hand_snapshot_call(const char* reason, std::size_t size) noexcept;
  /// A crash handler's part, on any thread. Async-signal-safe.
  void snapshot_on_crash(int signo) noexcept;
  static const char* crash_signal_name(int signo) noexcept;

  static void* flusher_main(void* self) {
    auto* rt = static_cast<runtime*>(self);
    on_flusher_thread = true;  // never waits for room: only this thread makes it
    if (rt->config_.flight)
      rt->start_flight();  // no file: snapshots make their own
    else
      rt->open_output();  // on failure: one line, failed_, and the loop only discards
    rt->flusher_loop();
    return nullptr;
  }
};

EDGETRACE_DETAIL_API std::uint32_t flusher_output::site_id(std::uint64_t word) { return rt_.word_site_id(word); }
EDGETRACE_DETAIL_API void flusher_output::emit(format::chunk_type type, const unsigned char* payload, std::size_t size) {
  rt_.emit_client_chunk(type, payload, size);
}
EDGETRACE_DETAIL_API std::uint8_t flusher_output::clock() const noexcept { return rt_.config_.clock; }
EDGETRACE_DETAIL_API bool flusher_output::writable() const noexcept {
  return !rt_.failed_.load(std::memory_order_relaxed) && !rt_.ended_;
}

inline void runtime::poll_clients(poll_reason why) noexcept {
  flusher_output out(*this);
  for (flusher_client* c = client_list.load(std::memory_order_acquire); c != nullptr; c = c->next) c->poll(*c, out, why);
}

/// The runtime, once tracing started (acquire to read: release-published
/// after construction). Null while tracing is off.
inline std::atomic<runtime*> the_runtime{nullptr};
alignas(runtime) inline unsigned char runtime_storage[sizeof(runtime)];

inline bool owns_runtime(const runtime* rt) noexcept { return rt != nullptr && rt->owner_pid_ == ::getpid(); }

// ------------------------------------------------------------ capture control
//
// Pausing flips the categories' mode bytes, the one thing a scope loads, so
// a paused scope costs what a runtime-disabled one does. Every change of
// the effective state is queued with its tick and written in-band (capture
// chunk) by the flusher. The tick is read before recording comes on and
// after it goes off, so on the thread that made the change every recorded
// span begins inside a window; other threads see the flag a few ns later
// or sooner (a relaxed load), which the boundary cannot order.

/// Marks seen while EDGETRACE_START_AFTER=N marks waits (any mark name).
inline std::atomic<std::uint64_t> start_marks_seen{0};

/// Recomputes the mode bytes after a capture source changed, and queues a
/// recording record if the effective state changed. Caller holds
/// category_mutex.
inline void update_capture_locked(format::capture_reason reason) noexcept {
  static bool logged_on = true;  // what the dump says now (on at the start)
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  const bool on = capturing_locked();
  if (!tracing_on || !owns_runtime(rt)) {
    apply_category_flags_locked();
    return;
  }
  if (on && rt->first_capture_ns_ == 0) rt->first_capture_ns_ = clock_ns(CLOCK_MONOTONIC);  // EDGETRACE_DURATION starts
  if (on == logged_on) {
    apply_category_flags_locked();
    return;
  }
  std::uint64_t tick = on ? ticks(recording_clock) : 0;
  apply_category_flags_locked();
  if (!on) tick = ticks(recording_clock);
  logged_on = on;
  rt->capture_pending_.push_back({format::capture_record::recording, tick, on, reason, std::string()});
}

inline std::uint64_t runtime::check_capture(std::uint64_t now, std::uint64_t longest) noexcept {
  std::uint64_t wait = longest;
  const std::uint32_t toggles = toggles_pending_.exchange(0, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(category_mutex);
  if (toggles % 2 != 0) {
    signal_paused = !signal_paused;
    update_capture_locked(format::capture_reason::signal);
  }
  // True once `deadline` has come; until then the wait shrinks to reach it.
  const auto reached = [&](std::uint64_t deadline) {
    if (now >= deadline) return true;
    wait = std::min(wait, deadline - now);
    return false;
  };
  if (window_waiting && !waiting_for_marks && config_.start_after_ns != 0 &&
      reached(started_ns_ + config_.start_after_ns)) {
    window_waiting = false;
    update_capture_locked(format::capture_reason::start_after);
  }
  if (config_.duration_ns != 0 && first_capture_ns_ != 0 && !window_over &&
      reached(first_capture_ns_ + config_.duration_ns)) {
    window_over = true;
    update_capture_locked(format::capture_reason::duration);
  }
  return wait;
}

EDGETRACE_DETAIL_API void set_paused(bool paused) noexcept {
  std::lock_guard<std::mutex> lock(category_mutex);
  if (paused_by_api == paused) return;
  paused_by_api = paused;
  update_capture_locked(format::capture_reason::api);
}

EDGETRACE_DETAIL_API std::uint8_t start_mark_seen() noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) return clock_off;
  // The first N marks close the first N iterations' warm-up; mark N+1
  // starts recording and is recorded.
  if (start_marks_seen.fetch_add(1, std::memory_order_relaxed) < rt->config_.start_after_marks) return clock_off;
  std::lock_guard<std::mutex> lock(category_mutex);
  if (window_waiting && waiting_for_marks) {
    window_waiting = false;
    waiting_for_marks = false;
    update_capture_locked(format::capture_reason::start_after);
  }
  return capturing_locked() ? recording_clock : std::uint8_t{clock_off};
}

EDGETRACE_DETAIL_API void begin_phase(const char* name, std::size_t size) noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt) || name == nullptr) return;
  if (size > 255) size = 255;
  std::lock_guard<std::mutex> lock(category_mutex);
  if (!tracing_on) return;
  rt->capture_pending_.push_back(
      {format::capture_record::phase, ticks(recording_clock), false, format::capture_reason::api, std::string(name, size)});
}

/// How far outside the stream's time a recorded span may lie: it must
/// start no earlier than this before tracing started in the process (the
/// stream's first calibration pair) and end no later than this after the
/// EDGETRACE_RECORD call. A span is recorded after it was measured, so
/// anything else is a wrong value (another clock's time, a duration that
/// wrapped, an uninitialised field), which would otherwise stretch the
/// trace over years. docs/ANALYSIS.md, "Spans measured elsewhere".
inline constexpr std::uint64_t record_slack_ns = 1000000000u;

inline thread_ring* attach_current_thread() noexcept;

/// Counts a refused EDGETRACE_RECORD on the calling thread (thread stats,
/// written at thread exit and at the end) and says so once per process.
inline void reject_measured(std::uint64_t start_ns, std::uint64_t duration_ns, std::uint64_t now_ns) noexcept {
  thread_ring* ring = current_ring;
  if (ring == &sentinel_ring) ring = attach_current_thread();
  if (ring != nullptr && ring != &busy_ring)  // busy: a signal handler inside a push (not counted)
    ring->rejected.store(ring->rejected.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true, std::memory_order_relaxed))
    report("EDGETRACE_RECORD: a span starting at %llu ns and lasting %llu ns (CLOCK_MONOTONIC, now %llu ns) "
           "lies outside this process's trace by more than 1 s; it is not recorded (this and later ones are "
           "counted in the dump's thread stats)",
           static_cast<unsigned long long>(start_ns), static_cast<unsigned long long>(duration_ns),
           static_cast<unsigned long long>(now_ns));
}

/// EDGETRACE_RECORD: pushes a span timed elsewhere. Its CLOCK_MONOTONIC ns
/// become ticks of the recording clock: with CLOCK_MONOTONIC as the clock
/// they are ticks already; with the CPU counter, the tick rate is measured
/// between the stream's first calibration pair and a (tick, ns) pair read
/// now, and the start is placed that many ticks before now. The reader maps
/// ticks back through its own fit of the calibration pairs, so a recorded
/// span lands within about a microsecond of where it was measured (the
/// rate's error times the distance from now; tests/capture_test.cpp).
/// A span that starts more than record_slack_ns before tracing started, or
/// ends more than that after now, is refused and counted (reject_measured).
EDGETRACE_DETAIL_API void record_measured(std::uint64_t word, std::uint64_t start_ns, std::uint64_t duration_ns,
                                          std::uint8_t mode) noexcept {
  if ((mode & mode_unregistered) != 0) mode = register_on_first_use(word);
  const std::uint8_t clock = mode & mode_clock_bits;
  if (clock == clock_off) return;  // hooks only, or waiting for marks: nothing is recorded
  const runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (rt == nullptr) return;
  const calibration_pair& first = rt->first_calibration_;
  // (tick, ns) now: the tightest of three bracketed reads (a preemption
  // between the two clock reads would otherwise shift the span).
  std::uint64_t tick_now = 0, ns_now = 0, width = ~std::uint64_t{0};
  if (clock != clock_counter) {
    ns_now = clock_ns(CLOCK_MONOTONIC);
  } else {
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t before = ticks();
      const std::uint64_t ns = clock_ns(CLOCK_MONOTONIC);
      const std::uint64_t after = ticks();
      if (after >= before && after - before < width) {
        width = after - before;
        tick_now = before + (after - before) / 2;
        ns_now = ns;
      }
    }
  }
  if (ns_now == 0) return;  // no bracketed read held: nothing sound to compare with
  // No sum here can wrap: a start near 0 fails the first test, one near
  // UINT64_MAX the second, a huge (or wrapped) duration the third.
  const std::uint64_t earliest = first.monotonic_ns > record_slack_ns ? first.monotonic_ns - record_slack_ns : 0;
  if (start_ns < earliest || start_ns > ns_now + record_slack_ns ||
      duration_ns > ns_now + record_slack_ns - start_ns) {
    reject_measured(start_ns, duration_ns, ns_now);
    return;
  }
  if (clock != clock_counter) {
    push(word, start_ns, start_ns + duration_ns);
    return;
  }
  if (tick_now <= first.tick || ns_now <= first.monotonic_ns) return;  // a clock went back: nothing sound to record
  const double per_ns = static_cast<double>(tick_now - first.tick) / static_cast<double>(ns_now - first.monotonic_ns);
  // Signed: a start "in the future" (less than record_slack_ns) lands
  // after now rather than wrapping.
  const double back = (static_cast<double>(ns_now) - static_cast<double>(start_ns)) * per_ns;
  if (back >= static_cast<double>(tick_now)) return;  // before the counter's zero: not a CLOCK_MONOTONIC time
  const std::uint64_t begin = tick_now - static_cast<std::uint64_t>(static_cast<std::int64_t>(back));
  push(word, begin, begin + static_cast<std::uint64_t>(static_cast<double>(duration_ns) * per_ns + 0.5));
}

/// True if `signo` is ignored now (an inherited SIG_IGN: nohup, a shell's
/// background job, a supervisor). A handler installed over it would change
/// what the signal does, here and in every program this one execs (exec
/// keeps SIG_IGN but resets a handler to SIG_DFL), so none is installed.
inline bool signal_ignored(int signo) noexcept {
  struct sigaction current;
  return sigaction(signo, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
         current.sa_handler == SIG_IGN;
}

/// Installs `handler` (an SA_SIGINFO handler, no signal masked while it
/// runs) for `signo` with `flags`, saving the old disposition in `previous`.
inline void install_handler(int signo, void (*handler)(int, siginfo_t*, void*), int flags,
                            struct sigaction* previous) noexcept {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | flags;
  sigemptyset(&action.sa_mask);
  sigaction(signo, &action, previous);
}

/// EDGETRACE_TOGGLE_SIGNAL's handler: counts the signal for the flusher
/// (which applies it within EDGETRACE_FLUSH_MS) and chains to the handler
/// that was there before, if any. Async-signal-safe: one atomic add.
inline struct sigaction previous_toggle_action;

inline void toggle_signal_handler(int signo, siginfo_t* info, void* context) noexcept {
  const int saved_errno = errno;
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (owns_runtime(rt)) rt->toggles_pending_.fetch_add(1, std::memory_order_relaxed);
  const struct sigaction& previous = previous_toggle_action;
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signo, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signo);
  }
  errno = saved_errno;
}

/// Installs the toggle handler; false (and one stderr line) when the signal
/// is ignored (SIG_IGN inherited): that disposition is left alone, and
/// recording then starts at once rather than wait for a toggle that cannot
/// come.
inline bool install_toggle_signal(int signo) noexcept {
  if (signal_ignored(signo)) {
    report("EDGETRACE_TOGGLE_SIGNAL: %s is ignored in this process (SIG_IGN inherited), so it cannot toggle "
           "recording; recording from the start",
           signo == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
    return false;
  }
  install_handler(signo, &toggle_signal_handler, SA_RESTART, &previous_toggle_action);
  return true;
}

}  // namespace detail
}  // namespace v1
}  // namespace edgetrace

// The flight recorder's part of the runtime (bodies of the members declared
// above, and its signal handlers), kept in a file of its own.
#define EDGETRACE_DETAIL_IN_RUNTIME 1
#include <edgetrace/detail/flight_runtime.hpp>

namespace edgetrace {
inline namespace v1 {
namespace detail {

// ------------------------------------------------------------ threads

/// The ring this thread attached (null before, and after its exit hook).
/// Slow path only: the hot path knows nothing but current_ring.
inline thread_local thread_ring* attached_ring = nullptr;
/// True while this thread attaches: a signal handler's record in that
/// window is counted here and moved to the ring once it is attached.
inline thread_local bool attaching = false;
inline thread_local atomic_cell<std::uint64_t> attach_signal_drops{0};

/// Hands the calling thread's ring to the flusher for good: its last
/// records, its pending loss and its totals get written, then the ring is
/// recycled. A later record on the thread attaches a new ring.
inline void retire_ring(runtime* rt, thread_ring* ring) noexcept {
  current_ring = &sentinel_ring;
  attached_ring = nullptr;
  rt->retiring_.fetch_add(1, std::memory_order_relaxed);
  // Release: the flusher's acquire of `retired` sees every record and loss
  // field this thread wrote.
  ring->retired.store(true, std::memory_order_release);
}

inline void on_thread_exit(void* ring_pointer) noexcept {
  // No signal handler may record on this thread from here on: it would
  // attach a new ring and re-arm this hook, round after round of the
  // thread's key destructors. A signal sent to the process goes to another
  // thread; one sent to this thread while it ends waits for nothing.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) {  // a forked child's copy: never drained here
    current_ring = &sentinel_ring;
    attached_ring = nullptr;
    return;
  }
  retire_ring(rt, static_cast<thread_ring*>(ring_pointer));
  // The flusher retires the ring now, not at its next period, and a thread
  // that exits while several rings wait for it gives it up to 2 ms: threads
  // that come and go fast then reuse a few rings instead of each mapping a
  // new one (memory stays within a few rings of the live threads).
  rt->wake_flusher();
  for (int waited = 0; waited < 40 && rt->retiring_.load(std::memory_order_acquire) > runtime::retiring_limit &&
                       !rt->stopping_.load(std::memory_order_relaxed);
       ++waited) {
    timespec pause{0, 50000};
    nanosleep(&pause, nullptr);
  }
}

/// Gives the calling thread its ring (first traced event on the thread).
inline void restart_if_forked() noexcept;

/// Set on a thread whose ring could not be mapped: its events are ignored
/// without another attempt (slow path only, so a plain thread_local).
inline thread_local bool attach_failed = false;

/// Attaches a ring to the calling thread. No lock, no allocation, only
/// async-signal-safe system calls (mmap when the pool is empty, prctl for
/// the name, gettid), so it may run inside a signal handler: the pool and
/// the attached list are lock-free. pthread_setspecific (the exit hook) is
/// a plain store in glibc for the low key numbers edgetrace gets at start.
inline thread_ring* attach_thread() noexcept {
  if (attach_failed) return nullptr;
  restart_if_forked();
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt) || rt->failed_.load(std::memory_order_relaxed) ||
      rt->stopping_.load(std::memory_order_relaxed))  // shutting down: the flusher would never drain it
    return nullptr;
  attaching = true;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  thread_ring* ring = rt->take_ring();
  if (ring == nullptr) {
    // Out of memory (or address space): this thread goes untraced. Say it
    // once per process, and never retry on this thread (a failing mmap per
    // event would be a system call on the hot path).
    attach_failed = true;
    attaching = false;
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true))
      report("cannot map a %llu KiB ring for thread %ld: %s; that thread (and any other that fails) is not traced",
             static_cast<unsigned long long>(rt->config_.ring_records * sizeof(record) / 1024),
             static_cast<long>(::syscall(SYS_gettid)), std::strerror(errno));
    return nullptr;
  }
  ring->os_tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  pthread_getname_np(pthread_self(), ring->name, sizeof ring->name);
  pthread_setspecific(rt->exit_key_, ring);
  thread_ring* head = rt->attached_.load(std::memory_order_relaxed);
  do {
    ring->next_attached.store(head, std::memory_order_relaxed);
  } while (!rt->attached_.compare_exchange_weak(head, ring, std::memory_order_acq_rel, std::memory_order_relaxed));
  attached_ring = ring;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  attaching = false;
  ring->signal_drops.fetch_add(attach_signal_drops.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
  return ring;
}

/// attach_thread outside a push (start-up, naming a thread): current_ring
/// then points at the new ring.
inline thread_ring* attach_current_thread() noexcept {
  thread_ring* ring = attach_thread();
  if (ring != nullptr) current_ring = ring;
  return ring;
}

/// EDGETRACE_ON_FULL=wait: the calling thread's ring has fewer than
/// `needed` free slots. Wakes the flusher and sleeps (a futex, so a signal
/// handler may wait too) until it has drained this ring, handing the
/// flusher the thread's time slice when every core is busy producing.
/// Returns the room then; less than `needed` when waiting cannot help:
/// drop mode, the flusher itself, no flusher draining (output not open
/// yet, shutting down), or no progress for max_wait_without_progress_ns.
inline std::size_t wait_for_room(thread_ring& ring, std::size_t needed) noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (rt == nullptr || rt->config_.drop_when_full || on_flusher_thread || !owns_runtime(rt)) return 0;
  record* read = ring.read_pos.load(std::memory_order_relaxed);
  if (read == ring.gave_up_at) return 0;  // gave up, and the flusher has not moved since
  std::uint64_t progress_ns = clock_ns(CLOCK_MONOTONIC);
  std::size_t room = 0;
  for (;;) {
    if (rt->stopping_.load(std::memory_order_relaxed) ||
        rt->open_state_.load(std::memory_order_acquire) != runtime::open_done)
      return room;
    rt->room_waiters_.fetch_add(1, std::memory_order_seq_cst);
    const std::uint32_t seen = rt->room_word_.load(std::memory_order_seq_cst);
    room = refresh_room(ring);
    if (room < needed) {
      rt->wake_flusher();
      timespec timeout{0, 1000000};  // 1 ms: look at the conditions above again
      ::syscall(SYS_futex, &rt->room_word_, FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
      room = refresh_room(ring);
    }
    rt->room_waiters_.fetch_sub(1, std::memory_order_relaxed);
    if (room >= needed) return room;
    const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
    record* const moved = ring.read_pos.load(std::memory_order_relaxed);
    if (moved != read) {
      read = moved;
      progress_ns = now;
    } else if (now - progress_ns >= max_wait_without_progress_ns) {
      ring.gave_up_at = read;
      return room;
    }
  }
}

/// Counts `count` records dropped at `tick`: in-band (the loss record the
/// next successful push writes first) and in the thread's total.
inline void note_drops(thread_ring& ring, std::uint64_t tick, std::uint64_t count) noexcept {
  if (ring.pending_loss == 0) {
    ring.loss_first = tick;
    // The ring just filled up: wake the flusher now rather than at its next
    // period (one wake per overflow episode, not per dropped record).
    if (runtime* rt = the_runtime.load(std::memory_order_acquire); owns_runtime(rt)) rt->wake_flusher();
  }
  ring.loss_last = tick;
  ring.pending_loss += count;
  ring.drop_count.store(ring.drop_count.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
}

/// The slow path's common part. `ring` is what the push found in
/// current_ring before parking it on busy_ring (so a signal handler that
/// records meanwhile lands here with busy_ring). Returns the slot for the
/// first of `count` records, after the pending loss record if there is one
/// (written, not yet published), and sets `ring` to the ring to publish
/// in. Null when they cannot be stored: counted as dropped at `tick`, and
/// `ring` says where current_ring must point again (null: leave it alone,
/// the interrupted push of this thread restores it).
inline record* reserve_slots(thread_ring*& ring, std::size_t count, std::uint64_t tick) noexcept {
  if (ring == &busy_ring) {
    // A signal handler inside this thread's own push: the slot is in use.
    // The flusher writes the count in-band (runtime::drain).
    (attached_ring != nullptr ? attached_ring->signal_drops : attach_signal_drops)
        .fetch_add(count, std::memory_order_relaxed);
    ring = nullptr;
    return nullptr;
  }
  if (ring == &sentinel_ring) {
    // First use; or a signal handler attached this thread after the push
    // read the sentinel and before it parked on busy_ring (the handler has
    // finished: use its ring).
    ring = attached_ring != nullptr ? attached_ring : attach_thread();
    if (ring == nullptr) {
      ring = &sentinel_ring;
      return nullptr;
    }
  }
  const std::size_t needed = count + (ring->pending_loss != 0 ? 1 : 0);
  std::size_t room = refresh_room(*ring);
  if (room < needed) room = wait_for_room(*ring, needed);
  record* pos = ring->write_pos.load(std::memory_order_relaxed);
  if (room < needed) {
    note_drops(*ring, tick, count);
    ring->write_limit = pos;  // keep taking the slow path until there is room
    return nullptr;
  }
  if (ring->pending_loss != 0) {
    *pos = record{pack_loss(ring->pending_loss), ring->loss_first, ring->loss_last};
    ring->pending_loss = 0;
    if (++pos == ring->end) pos = ring->begin;
  }
  return pos;
}

/// Ends a slow path: the thread's ring pointer back from the sentinel.
inline void leave_slow_path(thread_ring* ring) noexcept {
  if (ring == nullptr) return;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  current_ring = ring;
}

/// Publishes everything written before `next` (one release store), and
/// sets the next slow path no later than the ring's half-way mark: a ring
/// that fills past half wakes the flusher then, while half of it is still
/// free, instead of at the flusher's next period, when it may be full.
/// Costs the fast path nothing (only write_limit moves).
inline void publish_slots(thread_ring& ring, record* next) noexcept {
  ring.write_pos.store(next, std::memory_order_release);
  const std::size_t room = refresh_room(ring);
  const std::size_t half = ring.slot_count() / 2;
  if (room > half) {
    record* pos = ring.write_pos.load(std::memory_order_relaxed);
    if (room - half < static_cast<std::size_t>(ring.write_limit - pos)) ring.write_limit = pos + (room - half);
  } else if (runtime* rt = the_runtime.load(std::memory_order_acquire); owns_runtime(rt)) {
    rt->wake_flusher();
  }
}

template <class>
EDGETRACE_DETAIL_NOINLINE void push_slow(thread_ring* ring, std::uint64_t word, std::uint64_t a,
                                         std::uint64_t b) noexcept {
  const bool is_span = tag_of(word) == tag_named ||
                       (tag_of(word) == tag_site && site_of(word)->kind == format::site_kind::span);
  if (record* pos = reserve_slots(ring, 1, is_span ? b : a)) {
    *pos = record{word, a, b};
    publish_slots(*ring, pos + 1);
  }
  leave_slow_path(ring);
}

/// Pushes an allocation and its bytes as two adjacent records, published
/// together: the flusher never sees one without the other, and a full ring
/// drops both (counted as two).
inline void push_alloc_pair(std::uint64_t word, std::uint64_t tick, std::uint64_t address, std::uint64_t bytes) noexcept {
  thread_ring* ring = current_ring;
  current_ring = &busy_ring;  // as push does: a signal handler's record meanwhile is counted, not written
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (record* pos = reserve_slots(ring, 2, tick)) {
    *pos = record{word, tick, address};
    if (++pos == ring->end) pos = ring->begin;
    *pos = record{tag_more, bytes, 0};
    publish_slots(*ring, pos + 1);
  }
  leave_slow_path(ring);
}

EDGETRACE_DETAIL_API void record_alloc(std::uint64_t word, std::uint64_t address, std::uint64_t bytes,
                                       std::uint8_t mode) noexcept {
  if ((mode & mode_unregistered) != 0) mode = register_on_first_use(word);
  const std::uint8_t clock = mode & mode_clock_bits;
  if (clock == clock_off) return;  // hooks only, or waiting for marks: nothing is recorded
  push_alloc_pair(word, ticks(clock), address, bytes);
}

// ------------------------------------------------------------ start / stop

/// Reports each EDGETRACE_CATEGORIES item that named no category (checked at
/// exit: categories register lazily, so at start-up not all are known), in
/// one line with the categories that registered (sorted: a typo shows at a
/// glance) and the nearest one by edit distance, the same "did you mean" as
/// for unknown variables (detail/env.hpp). No allocation.
inline void report_unmatched_filter_locked() noexcept {
  for_each_filter_item(category_filter, [](unsigned index, const char* item, std::size_t length) {
    if ((filter_items_matched & (1ull << index)) != 0) return;
    constexpr std::size_t max_names = 64;
    const char* names[max_names];
    std::size_t count = 0;
    for (std::size_t at = 0; at < registered_names_used && count < max_names;
         at += std::strlen(registered_names + at) + 1) {
      const char* name = registered_names + at;
      std::size_t slot = count++;
      for (; slot > 0 && std::strcmp(names[slot - 1], name) > 0; --slot) names[slot] = names[slot - 1];
      names[slot] = name;
    }
    char word[65];
    const std::size_t word_length = length < 64 ? length : 64;
    std::memcpy(word, item, word_length);
    word[word_length] = '\0';
    const char* nearest = nullptr;
    std::size_t nearest_distance = 4;  // at most three edits, and not every letter replaced
    char list[256];
    std::size_t used = 0;
    list[0] = '\0';
    bool list_full = false;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t d = edit_distance(word, names[i]);
      if (d < nearest_distance && d < std::max(word_length, std::strlen(names[i]))) nearest_distance = d, nearest = names[i];
      if (list_full) continue;
      const int n = std::snprintf(list + used, sizeof list - used, "%s%s", i == 0 ? "" : ", ", names[i]);
      if (n < 0 || used + static_cast<std::size_t>(n) >= sizeof list - 5) {
        std::snprintf(list + used, sizeof list - used, ", ...");  // 6 bytes: used <= sizeof list - 6
        list_full = true;
        continue;
      }
      used += static_cast<std::size_t>(n);
    }
    const int shown = static_cast<int>(word_length);
    if (count == 0)
      report("EDGETRACE_CATEGORIES names '%.*s', but no category of that name was compiled in (this program has none)",
             shown, item);
    else if (nearest != nullptr)
      report("EDGETRACE_CATEGORIES names '%.*s', but no category of that name was compiled in; did you mean '%s'? "
             "(compiled in: %s)", shown, item, nearest, list);
    else
      report("EDGETRACE_CATEGORIES names '%.*s', but no category of that name was compiled in (compiled in: %s)", shown,
             item, list);
  });
}

inline void shutdown() noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt) || !rt->flusher_started_) return;
  {
    std::lock_guard<std::mutex> lock(category_mutex);
    report_unmatched_filter_locked();
    set_recording_locked(false);
  }
  // The exiting thread records nothing more that the final pass could
  // see: retiring its ring now gets its pending loss written too.
  if (thread_ring* ring = attached_ring) {
    pthread_setspecific(rt->exit_key_, nullptr);
    retire_ring(rt, ring);
  }
  {
    std::lock_guard<std::mutex> lock(rt->control_mutex_);
    if (rt->stop_) return;
    rt->stop_ = true;
    rt->stopping_.store(true);
  }
  rt->wake_flusher();
  // Bounded: a reader that stopped reading, or a stuck file system, must
  // not hold the app's exit. After 1 s the app goes on exiting (the
  // flusher, stuck in the kernel, goes with the process).
  bool done;
  {
    std::unique_lock<std::mutex> lock(rt->control_mutex_);
    const auto bound = rt->gave_up_waiting_.load(std::memory_order_relaxed) ? std::chrono::milliseconds(100)
                                                                             : std::chrono::milliseconds(1000);
    done = rt->flushed_.wait_for(lock, bound, [&] { return rt->flusher_done_; });
  }
  if (done) {
    pthread_join(rt->flusher_, nullptr);
  } else if (rt->config_.flight && !rt->flight_.ready()) {
    report("EDGETRACE_MODE=flight: the %llu MiB ring (EDGETRACE_FLIGHT_MB) was still being faulted in at exit; no "
           "snapshot was written",
           static_cast<unsigned long long>(rt->config_.flight_bytes >> 20));
  } else if (rt->open_state_.load(std::memory_order_acquire) != runtime::open_done) {
    report("EDGETRACE_OUTPUT '%s' never opened (a FIFO that no process reads, or a stuck file system); nothing "
           "was written",
           rt->path_);
  } else {
    report("EDGETRACE_OUTPUT '%s' took no data for 1 s at exit (a reader that stopped reading, or a stuck file "
           "system); the dump may lack its end",
           rt->path_);
  }
}

/// at_quick_exit's handler: quick_exit() ends the stream as exit() does.
/// Unlike exit(), quick_exit() may be called from a signal handler, which
/// may have interrupted this very thread inside a lock that shutdown() or
/// the flusher's last pass takes (intern, pause, a thread's first event, a
/// category registering): shutdown() would then wait for itself forever.
/// So it runs only once those locks can be taken, trying for at most
/// ~100 ms (another thread, the flusher included, holds them for
/// microseconds); otherwise the dump is left as after a crash, every whole
/// chunk readable.
inline void quick_exit_shutdown() noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) return;
  std::mutex* const locks[] = {&category_mutex, &rt->control_mutex_, &rt->ring_mutex_, &rt->intern_mutex_};
  for (int tries = 0;; ++tries) {
    std::size_t taken = 0;
    while (taken < 4 && locks[taken]->try_lock()) ++taken;
    for (std::size_t i = taken; i > 0; --i) locks[i - 1]->unlock();
    if (taken == 4) break;
    if (tries == 100) return;
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  shutdown();
}

// ------------------------------------------------------------ signals

/// Dispositions that were in place before EDGETRACE_SIGNAL_FLUSH installed
/// its handler (written once at start-up, before the handler can run).
inline struct sigaction previous_sigint;
inline struct sigaction previous_sigterm;

/// SIGINT/SIGTERM handler: asks the flusher to write everything (it polls
/// the request at least every EDGETRACE_FLUSH_MS), waits at most 2 s, then
/// lets the previous disposition happen: the app's own handler is called,
/// or the default action (termination) proceeds via re-raise.
/// Async-signal-safe: atomics, nanosleep, sigaction, raise only.
inline void signal_flush_handler(int signo, siginfo_t* info, void* context) noexcept {
  const int saved_errno = errno;
  struct sigaction& previous = signo == SIGINT ? previous_sigint : previous_sigterm;
  const bool has_action = (previous.sa_flags & SA_SIGINFO) != 0;
  const bool is_default = !has_action && previous.sa_handler == SIG_DFL;
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (owns_runtime(rt) && rt->flusher_started_ && !rt->failed_.load(std::memory_order_relaxed)) {
    rt->signal_done_.store(false, std::memory_order_relaxed);
    rt->signal_terminates_.store(is_default, std::memory_order_relaxed);
    rt->signal_pending_.store(signo, std::memory_order_release);
    for (int waited_ms = 0; waited_ms < 2000 && !rt->signal_done_.load(std::memory_order_acquire); ++waited_ms) {
      timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    }
  }
  if (has_action) {
    previous.sa_sigaction(signo, info, context);
  } else if (is_default) {
    sigaction(signo, &previous, nullptr);
    raise(signo);  // pending until this handler returns, then the default action
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signo);
  }
  errno = saved_errno;
}

inline void install_signal_flush() noexcept {
  if (!signal_ignored(SIGINT)) install_handler(SIGINT, &signal_flush_handler, SA_RESTART, &previous_sigint);
  if (!signal_ignored(SIGTERM)) install_handler(SIGTERM, &signal_flush_handler, SA_RESTART, &previous_sigterm);
}

// ------------------------------------------------------------ fork

/// Set in a forked child when EDGETRACE_FORK=follow: the next traced event,
/// intern() or flush() in the child starts a runtime of its own.
inline std::atomic<bool> restart_pending{false};
inline std::mutex restart_mutex;

inline void fork_prepare() noexcept {
  restart_mutex.lock();
  category_mutex.lock();
  unloaded_mutex.lock();  // never held with another lock: any place in the order
  if (runtime* rt = the_runtime.load(std::memory_order_acquire)) {
    rt->intern_mutex_.lock();
    rt->ring_mutex_.lock();
  }
}
inline void fork_parent() noexcept {
  if (runtime* rt = the_runtime.load(std::memory_order_acquire)) {
    rt->ring_mutex_.unlock();
    rt->intern_mutex_.unlock();
  }
  unloaded_mutex.unlock();
  category_mutex.unlock();
  restart_mutex.unlock();
}
/// The child never writes to the parent's file: its copy of the flusher
/// thread does not exist and owner_pid_ no longer matches, which turns
/// flush(), shutdown and thread attach into no-ops. With EDGETRACE_FORK=
/// follow its flags stay on and its first event starts its own dump.
inline void fork_child() noexcept {
  bool follow = false;
  if (runtime* rt = the_runtime.load(std::memory_order_acquire)) {
    rt->ring_mutex_.unlock();
    rt->intern_mutex_.unlock();
    rt->close_output();  // the child's copy (not a number the app reused)
    follow = rt->config_.fork_follow && !rt->failed_.load(std::memory_order_relaxed);
  }
  current_ring = &sentinel_ring;  // the parent's ring copy is never drained here
  attached_ring = nullptr;
  if (follow) {
    restart_pending.store(true, std::memory_order_release);
  } else {
    set_recording_locked(false);
  }
  unloaded_mutex.unlock();
  category_mutex.unlock();
  restart_mutex.unlock();
}

// ------------------------------------------------------------ start-up

/// Child dump name under EDGETRACE_FORK=follow when EDGETRACE_OUTPUT has no
/// %p: "run.etr" becomes "run.<pid>.etr" (or "<path>.<pid>").
inline bool child_output_path(const char* parent_path, long pid, char* out, std::size_t size) noexcept {
  const std::size_t length = std::strlen(parent_path);
  int written;
  if (length > 4 && std::strcmp(parent_path + length - 4, ".etr") == 0)
    written = std::snprintf(out, size, "%.*s.%ld.etr", static_cast<int>(length - 4), parent_path, pid);
  else
    written = std::snprintf(out, size, "%s.%ld", parent_path, pid);
  return written > 0 && static_cast<std::size_t>(written) < size;
}

/// Prepares the process chunk and the first calibration pair, starts the
/// flusher, which opens rt->path_ (open_output), and waits at most
/// runtime::open_wait for the open. On failure: one stderr line, false. A
/// FIFO without a reader, or an open still blocked after the wait, does not
/// hold the app: tracing goes on into the rings and the flusher writes once
/// the output opens (exit then waits at most 1 s: shutdown).
inline bool open_and_launch(runtime* rt) noexcept {
  const std::uint64_t seed = clock_ns(CLOCK_MONOTONIC) ^ (static_cast<std::uint64_t>(rt->owner_pid_) << 32) ^
                             reinterpret_cast<std::uintptr_t>(rt);
  rt->writer_id_ = static_cast<std::uint32_t>((seed * 0x9E3779B97F4A7C15ull) >> 32) | 1u;
  rt->read_triggers();
  rt->write_process_chunk();  // into the output buffer: the flusher writes it after the file header
  rt->write_calibration();
  // The flusher blocks every signal: the app's handlers must run on the
  // app's threads, SIGINT/SIGTERM must not land on ours, and a SIGXFSZ from
  // a file-size limit must turn into EFBIG (reported) rather than a kill.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int error = pthread_create(&rt->flusher_, nullptr, &runtime::flusher_main, rt);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error != 0) {
    report("cannot start the flusher thread: %s; tracing is off", std::strerror(error));
    return false;
  }
#if defined(__linux__)
  pthread_setname_np(rt->flusher_, "edgetrace");
#endif
  bool failed;
  {
    std::unique_lock<std::mutex> lock(rt->control_mutex_);
    rt->opened_.wait_for(lock, runtime::open_wait, [&] {
      return rt->open_state_.load(std::memory_order_acquire) != runtime::open_pending;
    });
    failed = rt->open_state_.load(std::memory_order_acquire) == runtime::open_failed;
    if (failed) rt->stop_ = true;
  }
  if (failed) {  // said so already (open_output); the flusher only ends
    rt->wake_flusher();
    pthread_join(rt->flusher_, nullptr);
    return false;
  }
  rt->flusher_started_ = true;
  the_runtime.store(rt, std::memory_order_release);
  return true;
}

inline void switch_flags_on(const settings& config) noexcept {
  std::lock_guard<std::mutex> lock(category_mutex);
  category_filter = config.categories;
  recording_clock = config.clock;
  hooks_wanted = config.nvtx;
  for (const category_state* c = category_list; c != nullptr; c = c->next) mark_filter_matches_locked(c->name);
  window_waiting = config.start_after_ns != 0 || config.start_after_marks != 0;
  waiting_for_marks = config.start_after_marks != 0;
  signal_paused = config.toggle_signal != 0;
  tracing_on = true;
  // The window counts from here, not from before the file was opened (a
  // slow open, e.g. under an emulator, would otherwise shorten it).
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (owns_runtime(rt)) rt->started_ns_ = clock_ns(CLOCK_MONOTONIC);
  // Not recording from the start: the dump says so (and why) at once.
  update_capture_locked(window_waiting ? format::capture_reason::start_after : format::capture_reason::signal);
}

inline void switch_flags_off() noexcept {
  std::lock_guard<std::mutex> lock(category_mutex);
  set_recording_locked(false);
}

/// EDGETRACE_CLOCK=auto (default) uses the CPU counter where it is
/// invariant and CLOCK_MONOTONIC elsewhere, saying so once on stderr;
/// counter/monotonic force one.
inline void choose_clock(settings& config) noexcept {
  const bool invariant = counter_invariant() && !config.assume_unstable_counter;
  if (config.clock_choice == settings::clock_auto) {
    config.clock = has_counter && invariant ? clock_counter : clock_monotonic;
    config.clock_fell_back = has_counter && !invariant;
    if (config.clock_fell_back)
      report("the CPU's time-stamp counter is not invariant; using CLOCK_MONOTONIC (~20 ns more per span; "
             "EDGETRACE_CLOCK=counter forces the counter)");
  } else if (config.clock_choice == settings::clock_force_counter) {
    config.clock = has_counter ? clock_counter : clock_monotonic;
    if (!has_counter) report("EDGETRACE_CLOCK=counter: no CPU counter on this architecture; using CLOCK_MONOTONIC");
  } else {
    config.clock = clock_monotonic;
  }
}

/// Reads the environment and, if EDGETRACE_OUTPUT is set, opens the dump,
/// writes its header, attaches the calling thread and starts the flusher.
/// Without EDGETRACE_OUTPUT: no file, no thread, no allocation.
inline void report_missing_hooks() noexcept {
  if (installed_hooks.load(std::memory_order_acquire) == nullptr)
    report("EDGETRACE_NVTX=1, but this program has no NVTX forwarding compiled in (include <edgetrace/nvtx.hpp> in "
           "one of its source files, or link edgetrace::nvtx); no NVTX ranges were emitted");
}

/// EDGETRACE_NVTX=1 without EDGETRACE_OUTPUT: scopes of the selected
/// categories call the hooks (NVTX ranges for Nsight) and record nothing.
/// No file, no thread, no allocation.
inline void start_hooks_only(const settings& config) noexcept {
  std::lock_guard<std::mutex> lock(category_mutex);
  category_filter = config.categories;
  hooks_wanted = true;
  apply_category_flags_locked();
  std::atexit(&report_missing_hooks);
}

inline bool start_from_environment() noexcept {
  check_unknown_variables();
  const char* output = std::getenv("EDGETRACE_OUTPUT");
  if (output == nullptr || *output == '\0') {
    if (output != nullptr) report("EDGETRACE_OUTPUT is empty; tracing is off");
    if (std::getenv("EDGETRACE_NVTX") != nullptr) {
      const settings config = read_settings();
      if (config.nvtx) start_hooks_only(config);
    }
    return false;
  }
  settings config = read_settings();
  choose_clock(config);
  auto* rt = new (runtime_storage) runtime(config);
  rt->owner_pid_ = ::getpid();
  rt->started_ns_ = clock_ns(CLOCK_MONOTONIC);
  if (!expand_output_path(config.output, rt->path_, sizeof rt->path_, static_cast<long>(rt->owner_pid_),
                          static_cast<long long>(std::time(nullptr)))) {
    report("EDGETRACE_OUTPUT is longer than %zu bytes; tracing is off", sizeof rt->path_ - 1);
    return false;
  }
  if (pthread_key_create(&rt->exit_key_, on_thread_exit) != 0) {
    report("cannot create a thread-exit key; tracing is off");
    return false;
  }
  if (!open_and_launch(rt)) return false;
  pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
  std::atexit(&shutdown);
  std::at_quick_exit(&quick_exit_shutdown);  // quick_exit() is a normal end too: the stream gets its end chunk
  if (config.nvtx) std::atexit(&report_missing_hooks);
  if (config.signal_flush) install_signal_flush();
  if (config.toggle_signal != 0 && !install_toggle_signal(config.toggle_signal)) config.toggle_signal = 0;
  if (config.flight) {
    install_crash_handlers();
    if (config.snapshot_signal != 0) install_snapshot_signal(config);
  }
  switch_flags_on(config);
  attach_current_thread();  // the starting thread (usually main) gets a ring now
  return true;
}

inline std::uint32_t intern_locked(std::unordered_map<std::string, std::uint32_t>& ids,
                                   std::vector<const std::string*>& names, std::string name);

/// EDGETRACE_FORK=follow: builds a fresh runtime in the child (the parent's
/// is left as it was copied: destroying it could wait on the parent's
/// threads, which do not exist here). The atexit and atfork handlers and
/// the thread-exit key were inherited.
inline void restart_in_child() noexcept {
  std::lock_guard<std::mutex> lock(restart_mutex);
  if (!restart_pending.load(std::memory_order_acquire)) return;
  restart_pending.store(false, std::memory_order_relaxed);
  runtime* parent = the_runtime.load(std::memory_order_acquire);
  const settings config = parent->config_;
  const pthread_key_t exit_key = parent->exit_key_;
  char parent_path[sizeof parent->path_];
  std::memcpy(parent_path, parent->path_, sizeof parent_path);
  // Handles interned before fork() ("intern once at model load") are used
  // in the child too: it keeps the parent's names under the same ids.
  std::vector<std::string> names;
  names.reserve(parent->intern_names_.size());
  for (const std::string* name : parent->intern_names_) names.push_back(*name);
  auto* rt = new (runtime_storage) runtime(config);
  rt->owner_pid_ = ::getpid();
  rt->started_ns_ = clock_ns(CLOCK_MONOTONIC);
  rt->exit_key_ = exit_key;
  for (std::string& name : names) intern_locked(rt->intern_ids_, rt->intern_names_, std::move(name));
  const bool has_pid = std::strstr(config.output, "%p") != nullptr;
  const bool fits = has_pid ? expand_output_path(config.output, rt->path_, sizeof rt->path_,
                                                 static_cast<long>(rt->owner_pid_),
                                                 static_cast<long long>(std::time(nullptr)))
                            : child_output_path(parent_path, static_cast<long>(rt->owner_pid_), rt->path_,
                                                sizeof rt->path_);
  if (!fits) report("the forked child's dump path is too long; tracing is off in pid %ld", static_cast<long>(rt->owner_pid_));
  if (!fits || !open_and_launch(rt)) switch_flags_off();
}

inline void restart_if_forked() noexcept {
  if (EDGETRACE_DETAIL_UNLIKELY(restart_pending.load(std::memory_order_acquire))) restart_in_child();
}

/// Starts tracing once per process; every later call is a guard check.
inline void ensure_initialized() noexcept {
  static const bool started = start_from_environment();
  (void)started;
}

/// Static-initialisation trigger: every TU that includes edgetrace.hpp runs
/// it, the first one does the work.
inline const bool initialized_at_startup = (ensure_initialized(), true);

// ------------------------------------------------------------ public helpers

/// Adds `name` to an intern table (map + id-ordered list), returning its
/// id (1-based). Caller holds the table's mutex.
inline std::uint32_t intern_locked(std::unordered_map<std::string, std::uint32_t>& ids,
                                   std::vector<const std::string*>& names, std::string name) {
  auto found = ids.find(name);
  if (found != ids.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(names.size() + 1);
  auto inserted = ids.emplace(std::move(name), id);
  names.push_back(&inserted.first->first);
  return id;
}

/// Names interned while scope hooks run without a dump (EDGETRACE_NVTX=1,
/// no EDGETRACE_OUTPUT): only the hooks see them. Never freed, so hooks
/// running during exit can still read them.
struct names_without_dump {
  std::mutex mutex;
  std::unordered_map<std::string, std::uint32_t> ids;
  std::vector<const std::string*> names;
};
inline names_without_dump& hook_only_names() {
  static names_without_dump* table = new names_without_dump;
  return *table;
}

inline bool hooks_only_active() noexcept {
  std::lock_guard<std::mutex> lock(category_mutex);
  return hooks_wanted && !tracing_on;
}

EDGETRACE_DETAIL_API name_handle intern(const char* data, std::size_t size) {
  ensure_initialized();
  restart_if_forked();
  const auto name = [&] { return std::string(data == nullptr ? "" : data, data == nullptr ? 0 : size); };
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) {
    if (!hooks_only_active()) return {};  // tracing off: no allocation
    names_without_dump& table = hook_only_names();
    std::lock_guard<std::mutex> lock(table.mutex);
    return {intern_locked(table.ids, table.names, name())};
  }
  std::lock_guard<std::mutex> lock(rt->intern_mutex_);
  return {intern_locked(rt->intern_ids_, rt->intern_names_, name())};
}

EDGETRACE_DETAIL_API void install_scope_hooks(const scope_hooks* hooks) noexcept {
  installed_hooks.store(hooks, std::memory_order_release);
  std::lock_guard<std::mutex> lock(category_mutex);
  apply_category_flags_locked();
}

EDGETRACE_DETAIL_API const char* interned_name(std::uint32_t id) noexcept {
  if (id == 0) return nullptr;
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) {
    names_without_dump& table = hook_only_names();
    std::lock_guard<std::mutex> lock(table.mutex);
    return id <= table.names.size() ? table.names[id - 1]->c_str() : nullptr;
  }
  std::lock_guard<std::mutex> lock(rt->intern_mutex_);
  return id <= rt->intern_names_.size() ? rt->intern_names_[id - 1]->c_str() : nullptr;
}

EDGETRACE_DETAIL_API const char* category_name(std::uint32_t index) noexcept {
  std::lock_guard<std::mutex> lock(category_mutex);
  const category_state* state = find_category_locked(index);
  return state == nullptr ? nullptr : state->name;
}

EDGETRACE_DETAIL_API void set_thread_name(const char* name) noexcept {
  if (name == nullptr) return;
  thread_ring* ring = attached_ring != nullptr ? attached_ring : attach_current_thread();
  if (ring == nullptr) return;
  std::lock_guard<spin_lock> lock(ring->name_mutex);
  std::strncpy(ring->name, name, sizeof ring->name - 1);
  ring->name[sizeof ring->name - 1] = '\0';
  ring->name_version.store(ring->name_version.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

EDGETRACE_DETAIL_API void flush() noexcept {
  restart_if_forked();
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt)) return;
  std::unique_lock<std::mutex> lock(rt->control_mutex_);
  if (rt->flusher_done_) return;
  const std::uint64_t ticket = ++rt->flush_requested_;
  rt->wake_flusher();
  // Nothing can be written before the output opens (a FIFO nobody reads).
  if (rt->open_state_.load(std::memory_order_acquire) != runtime::open_done) return;
  // Bounded wait: the app must never hang on the tracer.
  rt->flushed_.wait_for(lock, std::chrono::seconds(5),
                        [&] { return rt->flush_completed_ >= ticket || rt->flusher_done_; });
}

/// Records waiting in any ring (a walk of the attached list).
inline std::size_t unread_records(runtime& rt) noexcept {
  std::lock_guard<std::mutex> lock(rt.ring_mutex_);
  std::size_t count = 0;
  for (const thread_ring* ring = rt.attached_.load(std::memory_order_acquire); ring != nullptr;
       ring = ring->next_attached.load(std::memory_order_acquire))
    count += unread(*ring);
  return count;
}

/// flush(), but only if some ring holds unread records (so several
/// categories going away at exit cost one flush, not one each), and
/// waiting at most unload_flush_timeout. True when no record pushed before
/// the call is left unencoded (or none can be read any more).
inline bool flush_if_pending() noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt) || rt->stopping_.load(std::memory_order_relaxed)) return true;
  // An output stuck for a second already: one library after another going
  // away (at exit, say) must not each wait their second.
  if (rt->output_stalled(1000000000u)) return unread_records(*rt) == 0;
  if (unread_records(*rt) == 0) return true;
  std::unique_lock<std::mutex> lock(rt->control_mutex_);
  if (rt->flusher_done_) return true;
  const std::uint64_t ticket = ++rt->flush_requested_;
  rt->wake_flusher();
  const bool flushed = rt->flushed_.wait_for(lock, unload_flush_timeout,
                                             [&] { return rt->flush_completed_ >= ticket || rt->flusher_done_; });
  if (!flushed) rt->gave_up_waiting_.store(true, std::memory_order_relaxed);  // exit waits no second more
  return flushed;
}

EDGETRACE_DETAIL_API void snapshot_call(const char* reason, std::size_t size) noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt) || !rt->config_.flight) return;
  rt->hand_snapshot_call(reason, size);
}

EDGETRACE_DETAIL_API bool active() noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  return owns_runtime(rt) && !rt->failed_.load(std::memory_order_relaxed) &&
         !rt->stopping_.load(std::memory_order_relaxed);
}

}  // namespace detail
}  // namespace v1
}  // namespace edgetrace
