// SPDX-License-Identifier: MIT
// The runtime's state and the stream it writes: output batching, calibration, definitions after a truncation, capture chunks, latency triggers and the draining of one ring.
//
// runtime_stream is the lower half of the runtime (the flusher, in
// writer/flusher.hpp, is the upper): it owns the encoder (writer/encoding/encoder.hpp)
// and the dump file (writer/output.hpp), and answers the encoder's
// questions (encoder_host). Built once in static storage (no heap allocation
// before tracing is enabled) and never destroyed: threads may still be
// tracing while static destructors run.
#pragma once

#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/telemetry/sampler.hpp>
#include <edgetrace/writer/capture_control.hpp>
#include <edgetrace/writer/control.hpp>
#include <edgetrace/writer/clock.hpp>
#include <edgetrace/writer/cpu_load.hpp>
#include <edgetrace/writer/encoding/encoder.hpp>
#include <edgetrace/writer/env.hpp>
#include <edgetrace/writer/flight/service.hpp>
#include <edgetrace/writer/flight/triggers.hpp>
#include <edgetrace/writer/memory_room.hpp>
#include <edgetrace/writer/output.hpp>
#include <edgetrace/writer/registry.hpp>
#include <edgetrace/writer/rings.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <pthread.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// EDGETRACE_ON_FULL=wait: how long a thread waits for room while the
/// flusher does nothing at all (a stuck output, a flusher blocked in
/// write): then it drops, counted, until the flusher moves again
/// (wait_for_room, writer/slow_path.hpp).
inline constexpr std::uint64_t max_wait_without_progress_ns = 250000000u;

/// True on the flusher thread (a hook it runs may record): it never waits
/// for room in a ring, since only it makes room.
inline thread_local bool on_flusher_thread = false;

/// Everything that exists only while tracing is (or was) on, and the
/// writing of the stream. Field owners: "set once" fields are written
/// during start-up before the runtime is published; "flusher only" fields
/// belong to the flusher thread; the rest say their lock or atomic.
class runtime_stream : public encoder_host {
 public:
  /// Everything set once is given here: the settings, the dump's path
  /// (EDGETRACE_OUTPUT expanded), the thread-exit key, and the names
  /// interned before (a forked child keeps its parent's ids). The calling
  /// process owns the runtime.
  runtime_stream(const settings& config, const char* output_path, pthread_key_t exit_key,
                 std::vector<std::string> names) noexcept
      : config_(config), owner_pid_(::getpid()), exit_key_(exit_key), rings_(config.ring_records), encoder_(*this) {
    file_.set_path(output_path);
    names_.adopt_all(std::move(names));
    // Before any thread maps a ring: threads that start together with the
    // app would map full rings before the flusher's first look (a few
    // dozen small reads, once; the flusher reads again a second later).
    rings_.set_room_from_free(read_memory_room().free);
    last_room_ns_ = clock_ns(CLOCK_MONOTONIC);
  }

  /// The settings (read-only once built).
  const settings& config() const noexcept { return config_; }
  /// Whether the calling process built this runtime: a forked child holds
  /// a copy it must never use (owns_runtime).
  bool owned_here() const noexcept { return owner_pid_ == ::getpid(); }
  /// The dump's path.
  const char* output_path() const noexcept { return file_.path(); }
  /// The thread-exit key (a forked child's runtime keeps its parent's).
  pthread_key_t exit_key() const noexcept { return exit_key_; }

 protected:
  // ---- set once at construction, then read-only
  const settings config_;
  const pid_t owner_pid_;
  /// The thread-exit key (on_thread_exit retires a thread's ring).
  const pthread_key_t exit_key_;
  /// The flusher's thread (writer/control.hpp).
  flusher_thread flusher_;
  /// The dump (opened, written and closed by the flusher).
  dump_file file_;

  /// Interned names (any thread; the table's own lock).
  name_table names_;
  /// Spare rings and the list of attached rings (writer/rings.hpp).
  ring_pool rings_;
  /// The start, flush requests, the stop and the wake-ups between the
  /// app's threads and the flusher (writer/control.hpp).
  flusher_control control_;
  /// A SIGINT/SIGTERM handler's flush (EDGETRACE_SIGNAL_FLUSH; writer/control.hpp).
  signal_handoff signal_;
  /// Flusher only: the end chunk was written; nothing more may follow.
  bool ended_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = false;

 public:
  /// CPUs the process may run on (the reports name them).
  int cpus() const noexcept { return load_.cpus(); }
  /// The stream's first calibration pair: record_measured's reference for
  /// CLOCK_MONOTONIC ns → ticks. Written before the_runtime is published.
  const calibration_pair& first_calibration() const noexcept { return first_calibration_; }
  /// Flight mode: the ring is mapped (the flusher maps it at its start).
  bool flight_ready() const noexcept { return flight_.ready(); }
  /// Flight mode, before flight_ready(): the ring being faulted in (0: not
  /// begun) and how much of it is so far.
  std::size_t flight_faulting_bytes() const noexcept { return flight_.faulting_bytes(); }
  std::size_t flight_faulted_bytes() const noexcept { return flight_.faulted_bytes(); }
  /// Flight mode: the name of snapshot `sequence` (OUTPUT with ".N" before
  /// its extension) into `path`, of snapshot_path_capacity bytes.
  static constexpr std::size_t snapshot_path_capacity = flight_service::path_capacity;
  void snapshot_path(std::uint64_t sequence, char* path) const noexcept { flight_.snapshot_path(sequence, path); }
  /// EDGETRACE_SNAPSHOT_SIGNAL arrived: counted for the flusher, which
  /// schedules the snapshot. Async-signal-safe: two atomic stores, a
  /// counter read and at most one futex call.
  void snapshot_signal_received() noexcept {
    flight_.signal_received();
    control_.wake_flusher();
  }
  /// The id in every chunk header of this stream (start-up, before the flusher).
  void set_writer_id(std::uint32_t id) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { encoder_.set_writer_id(id); }

 protected:
  friend class flusher_output;

  // ---- the flight recorder (EDGETRACE_MODE=flight; writer/flight/service.hpp):
  // its ring, its schedule and the hand-offs from other threads.
  flight_service flight_{config_};

  // a client encodes through the flusher's encoder

  // ---- flusher only (flusher_role: clang checks who touches them)
  chunk_encoder encoder_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role);
  /// Records written and dropped by threads whose rings were retired (their
  /// counters are reset when the ring is recycled), for the exit report.
  std::uint64_t retired_written_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  std::uint64_t retired_dropped_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  /// control_.gave_up_count() as last reported (report_stall), and whether the one stall
  /// line was printed.
  std::uint64_t gave_up_seen_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  bool stall_reported_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = false;
  std::uint64_t last_calibration_ns_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  /// The threads' rings sized by memory (size_rings_by_room): when the room
  /// was last read, and whether smaller rings were said.
  std::uint64_t last_room_ns_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  bool smaller_rings_said_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = false;
  int calibrations_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  calibration_pair first_calibration_ = {};
  /// unloaded_libraries.epoch() values this flusher has acted on: sites cached from
  /// ranges published up to `seen` are forgotten; ranges up to `retired`
  /// are retired.
  std::uint64_t unloaded_seen_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  std::uint64_t unloaded_retired_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  std::vector<capture_entry> capture_out_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role);

  /// Sampled by the flusher, read by any thread (cpu_saturated).
  cpu_load load_;
  /// The device sampler (EDGETRACE_SAMPLE_MS): made by the flusher as it
  /// starts, null when sampling is off.
  telemetry::device_sampler* sampler_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = nullptr;
  /// EDGETRACE_MAX_MB and EDGETRACE_MIN_FREE_MB (writer/output.hpp); once
  /// it stopped recording, device sampling stops too.
  space_guard space_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role);
  /// Records the flusher encoded (drain_locked): with the file's size, the
  /// bytes a record takes in this dump, for records_below_bound.
  std::uint64_t records_encoded_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  /// What threads encoding their own records may hand over before they see
  /// a stop (measure_in_flight, once a cycle under a bound).
  std::uint64_t in_flight_reserve_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role) = 0;
  /// Set once the dump comes within what threads encoding their own records
  /// could hand over of its bound (measure_in_flight), and at the stop:
  /// threads stop encoding their own records (may_help), so that what
  /// reaches the file passes the flusher's room check first.
  std::atomic<bool> helping_off_for_room_{false};

  // ---- latency triggers (EDGETRACE_TRIGGER; writer/flight/triggers.hpp).
  // Set before the flusher starts, then the flusher's alone.
  flight_triggers triggers_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role);

 public:
  /// Output failed (tracing is off): everything is discarded.
  bool failed() const noexcept { return file_.failed(); }
  /// Whether a thread may encode its own records when the flusher falls
  /// behind (writer/help.hpp), as far as the stream is concerned: the
  /// policy is wait, no latency trigger judges records (the flusher's
  /// alone), the output works, recording has not stopped near the dump's
  /// bound and the stream is not ending. Any thread; the caller reads it
  /// with its ring's drain lock held, so a shutdown that began before it
  /// took the lock is seen.
  bool may_help() const noexcept {
    return !config_.drop_when_full && !triggers_ready_ && !file_.failed() && !control_.stopping() &&
           !helping_off_for_room_.load(std::memory_order_relaxed);
  }
  /// The process kept every CPU it may use busy at the flusher's last
  /// look (cpu_load): threads encode their own records then.
  bool cpu_saturated() const noexcept { return load_.saturated(); }
  /// The site table's generation (chunk_encoder::generation): a helping
  /// thread trusts its ring's cache only while it matches.
  /// Any thread: the generation is an atomic (acquire).
  std::uint64_t site_generation() const noexcept EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { return encoder_.generation(); }
  /// Nothing more may be written: output failed or the stream ended.
  bool closed() const noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { return file_.failed() || ended_; }

  // ------------------------------------------------------------ encoder_host

  bool read_loaded_site(const site* s, void (*read)(const site&, void*), void* context) override {
    // The only read of a descriptor: its library cannot be marked unloaded
    // (and so cannot be unmapped) meanwhile.
    return unloaded_libraries.read_unless_unloaded(s, [&] { read(*s, context); });
  }
  void category_name(std::uint32_t index, std::string& out) override { copy_category_name(index, out); }
  void interned_name(std::uint32_t id, std::string& out) override { names_.copy_name(id, out); }
  void output_full() override EDGETRACE_DETAIL_REQUIRES(flusher_role) { flush_output(); }

  /// A record of a watched site (flight_triggers::watches): over its
  /// limit, a snapshot is requested (the rate limit is request_snapshot's).
  EDGETRACE_DETAIL_NOINLINE void watched_record(const thread_ring& ring, std::uint32_t id, const record& r) override
      EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    flight_triggers::firing fired;
    if (!triggers_.evaluate(id, ring.thread_id, r.t_begin, r.t_end, fired)) return;
    char reason[format::snapshot_reason_max + 1];
    const std::size_t size = triggers_.describe(fired, reason, sizeof reason);
    request_snapshot(format::snapshot_trigger::latency, reason, size, fired.tick);
  }

  /// Schedules a snapshot (flusher only; flight_service::request): a no-op
  /// outside flight mode, and before the ring is mapped.
  void request_snapshot(format::snapshot_trigger why, const char* reason, std::size_t reason_size,
                        std::uint64_t trigger_tick) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!config_.flight || !flight_.ready()) return;
    flight_.request(why, reason, reason_size, trigger_tick, trigger_ns(trigger_tick));
  }

  /// CLOCK_MONOTONIC ns of a trigger's tick: the window after a trigger
  /// (EDGETRACE_FLIGHT_AFTER_MS) counts from the trigger, not from when the
  /// flusher took it (a flusher preempted for 100 ms shortened the
  /// recorded window by as much). The tick is placed before a calibration
  /// pair read now at the rate since the stream's first pair (either
  /// clock: CLOCK_MONOTONIC ticks are ns, the rate 1); now for a tick
  /// outside (first pair, now].
  std::uint64_t trigger_ns(std::uint64_t tick) const noexcept {
    const calibration_pair now = calibrate(config_.clock, 3);
    const calibration_pair& first = first_calibration_;
    if (tick <= first.tick || tick > now.tick || now.monotonic_ns <= first.monotonic_ns) return now.monotonic_ns;
    const long double ns_per_tick = static_cast<long double>(now.monotonic_ns - first.monotonic_ns) /
                                    static_cast<long double>(now.tick - first.tick);
    const auto back = static_cast<std::uint64_t>(static_cast<long double>(now.tick - tick) * ns_per_tick);
    return back < now.monotonic_ns ? now.monotonic_ns - back : now.monotonic_ns;
  }

  // ------------------------------------------------------------ output

  /// Hands the sealed chunks on: to the flight ring, or to the file.
  void flush_output() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    std::vector<unsigned char>& out = encoder_.output();
    if (config_.flight) {  // the ring, not the file: snapshots write it
      flight_.take(out);
      return;
    }
    if (!out.empty() && !file_.failed() && output_is_ours() && room_for(out.size()))
      file_.write_all(out.data(), out.size());
    out.clear();
  }

  /// Asks the space guard before writing `size` bytes: near a bound,
  /// recording stops for good, in the dump's words, with one line; a write
  /// past one is not made, and tracing is off.
  bool room_for(std::size_t size) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    char why[512];
    // What threads encoding their own records may still hand over counts as
    // written already: the stop must come before it is.
    if (space_.bounded() && space_.stop_if_near(file_.size(), size + in_flight_reserve_, why, sizeof why))
      stopped_for_room(why);
    const space_guard::verdict verdict =
        space_.check(file_.descriptor(), file_.size(), size, clock_ns(CLOCK_MONOTONIC), why, sizeof why);
    if (verdict == space_guard::verdict::write) return true;
    if (verdict == space_guard::verdict::refuse) {
      char message[4700];
      std::snprintf(message, sizeof message, "not writing '%s': %s; tracing is off", file_.path(), why);
      file_.fail_with(message);
      return false;
    }
    stopped_for_room(why);
    return true;
  }

  /// The space guard stopped recording near a bound: its one line, and no
  /// thread encodes its own records any more. check_capture stops the
  /// recording itself (space_.stopped()): this may run inside an encoding,
  /// under other locks.
  void stopped_for_room(const char* why) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    report("EDGETRACE_OUTPUT '%s': %s", file_.path(), why);
    helping_off_for_room_.store(true, std::memory_order_relaxed);
  }

  /// Under a bound, once a cycle: the events payloads that threads
  /// encoding their own records (writer/help.hpp) may hand over before a
  /// stop reaches them, every buffer of each such thread. They reach the
  /// file whatever the room (their records are counted as written), so the
  /// room check below keeps them free. Once the room left is less than what
  /// every thread could hand over (and the margin), threads stop helping:
  /// what is in flight then only shrinks.
  void measure_in_flight() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const std::uint64_t now_ns = clock_ns(CLOCK_MONOTONIC);
    const std::uint64_t per_thread =
        ring_encoding::buffer_count * ring_encoding::buffer_bytes(ring_encoding::payload_for(config_.ring_records * sizeof(record)));
    std::uint64_t helping = 0, threads = 0;
    for (thread_ring* ring = rings_.first(); ring != nullptr; ring = ring->next_attached.load(std::memory_order_acquire)) {
      ++threads;
      if (ring->help_until_ns.load(std::memory_order_relaxed) > now_ns || encoding_of(*ring).has_handed()) ++helping;
    }
    in_flight_reserve_ = helping * per_thread;
    const std::uint64_t room = space_.room(file_.size() + encoder_.output().size());
    if (room < threads * per_thread + space_guard::margin(room) + space_guard::tail_bytes(threads))
      helping_off_for_room_.store(true, std::memory_order_relaxed);
  }

  /// Before `ring`'s published records are encoded, under a bound
  /// (EDGETRACE_MAX_MB, the free-space floor): how many of them may be,
  /// at twice the bytes a record has taken in this dump so far (3 to 24
  /// each; 8 before any), with what threads encoding their own records may
  /// still hand over (measure_in_flight). Records that would come near the
  /// bound stop recording first (space_guard::stop_if_near); after the
  /// stop, only what fits below the bound, less the tail the end needs, is
  /// encoded (the caller drops the rest, counted). The most a uint64 holds:
  /// all of them.
  std::uint64_t records_below_bound(const thread_ring& ring) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    constexpr std::uint64_t all = ~std::uint64_t{0};
    const std::uint64_t records = unread(ring);
    std::uint64_t per_record = records_encoded_ == 0 ? 8 : file_.size() / records_encoded_ + 1;
    per_record = per_record < 3 ? 3 : per_record > sizeof(record) ? sizeof(record) : per_record;
    const std::uint64_t cost = 2 * per_record;
    const std::uint64_t overhead = in_flight_reserve_ + 4 * (format::chunk_header_size + format::chunk_trailer_size);
    const std::uint64_t written = file_.size() + encoder_.output().size();
    char why[512];
    if (space_.stop_if_near(written, records * cost + overhead, why, sizeof why)) stopped_for_room(why);
    if (!space_.stopped() || records == 0) return all;
    const std::uint64_t room = space_.room(written);
    const std::uint64_t reserved = space_guard::tail_bytes(encoder_.threads_seen()) + overhead;
    return room <= reserved ? 0 : (room - reserved) / cost;
  }

  /// Checks, before a write, that the descriptor still names the dump (one
  /// fstat); a truncated dump starts again.
  bool output_is_ours() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    std::uint64_t size = 0;
    const dump_file::state state = file_.check(size);
    if (state == dump_file::state::gone) return false;
    if (state == dump_file::state::truncated) start_again(size);
    return true;
  }

  /// The file was truncated by someone else (copytruncate log rotation, `:
  /// > run.etr`): say so once, and begin a self-contained stream at the new
  /// end (file header, process chunk, calibration, definitions again), so
  /// what follows reads on its own. Anything already on its way may land
  /// without its definitions; the reader skips it (docs/FORMAT.md).
  void start_again(std::uint64_t size) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    file_.note_truncated(size);
    std::vector<unsigned char>& out = encoder_.output();
    std::vector<unsigned char> pending;
    pending.swap(out);
    unsigned char header[format::file_header_size];
    format::write_file_header(header);
    out.insert(out.end(), header, header + sizeof header);
    write_process_chunk();
    encoder_.write_calibration(first_calibration_);
    write_calibration();
    forget_definitions();
    out.insert(out.end(), pending.begin(), pending.end());
  }

  /// Every site, category and thread is defined again before its next use
  /// (each ring follows at its next drain: chunk_encoder::announce_thread).
  void forget_definitions() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { encoder_.forget_definitions(); }

  /// Opens the dump (flusher thread). The first live writer of a regular
  /// file truncates it and writes the file header (dump_file::begin).
  bool open_output() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const int fd = file_.open([this] { control_.set_open_state(flusher_control::open_waiting_for_reader); });
    if (fd < 0) {
      control_.set_open_state(flusher_control::open_failed);
      return false;
    }
    space_.configure(config_, file_.regular());
    const bool holds_init_lock = file_.regular() && dump_file::file_lock(fd, F_WRLCK, 0, true);
    if (file_.begin(fd, encoder_.writer_id())) {
      unsigned char header[format::file_header_size];
      format::write_file_header(header);
      std::vector<unsigned char>& out = encoder_.output();
      out.insert(out.begin(), header, header + sizeof header);
    }
    flush_output();
    if (holds_init_lock) dump_file::file_lock(fd, F_UNLCK, 0, false);
    control_.set_open_state(file_.failed_acquire() ? flusher_control::open_failed : flusher_control::open_done);
    return !file_.failed_acquire();
  }


  /// Closes the dump (the flusher's end; a runtime built apart from the
  /// process's, as a benchmark's, before it is destroyed).
  void close_output() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) { file_.close(); }

  /// True when the output took no data for at least `ns`.
  bool output_stalled(std::uint64_t ns) const noexcept {
    return file_.stalled(ns, control_.opened());
  }

  // ------------------------------------------------------------ calibration and triggers

  /// The process chunk (the name from /proc/self/comm).
  void write_process_chunk() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    char comm[64] = "process";
    os::process_name(comm, sizeof comm);
    encoder_.write_process(static_cast<std::uint64_t>(owner_pid_), os::own_identity(), config_, comm);
  }

  void write_calibration() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const calibration_pair pair = calibrate(config_.clock);
    encoder_.write_calibration(pair);
    last_calibration_ns_ = pair.monotonic_ns;
    if (calibrations_ == 0) first_calibration_ = pair;  // before the runtime is published
    ++calibrations_;
    if (triggers_set()) set_trigger_rate(pair);
  }

  bool triggers_set() const noexcept { return triggers_ready_; }

  /// Converts the triggers' limits to ticks with the rate the dump will
  /// show: exact for CLOCK_MONOTONIC and aarch64's stated counter rate,
  /// else measured from the first calibration pair to `latest` (the
  /// second comes before anything is drained: take_rate_pair).
  void set_trigger_rate(const calibration_pair& latest) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
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
  void read_triggers() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const char* spec = std::getenv("EDGETRACE_TRIGGER");
    if (spec == nullptr) return;
    if (!config_.flight) {
      report("EDGETRACE_TRIGGER needs EDGETRACE_MODE=flight (a trigger writes a snapshot of the flight recorder); "
             "no trigger set");
      return;
    }
    char error[256];
    if (!set_triggers(spec, error, sizeof error)) report("%s", error);
  }

  /// Parses `spec` (EDGETRACE_TRIGGER's syntax) and has the encoder judge
  /// every record against it. False, with `error` saying why: no trigger.
  /// Limits fire only once a tick rate is known (the calibration pairs).
  bool set_triggers(const char* spec, char* error, std::size_t error_size) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    triggers_ready_ = triggers_.parse(spec, error, error_size);
    if (triggers_ready_) encoder_.watch(&triggers_);
    return triggers_ready_;
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
  void take_rate_pair(bool may_wait) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (calibrations_ >= 2 || file_.failed_acquire() || ended_) return;
    if (may_wait) {
      const std::uint64_t since = clock_ns(CLOCK_MONOTONIC) - first_calibration_.monotonic_ns;
      if (since < rate_pair_gap_ns) {
        const timespec pause{0, static_cast<long>(rate_pair_gap_ns - since)};
        nanosleep(&pause, nullptr);
      }
    }
    write_calibration();
  }

  // ------------------------------------------------------------ unloaded libraries

  /// Forgets cached sites in the unloaded ranges published since the last
  /// call.
  void forget_unloaded_sites() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const unloaded_ranges::copy_of unloaded = unloaded_libraries.copy();
    unloaded_seen_ = unloaded.epoch;
    encoder_.forget_sites_where([&](const site* s) { return unloaded.holds(s); });
  }

  /// Retires the ranges published up to `epoch`: a whole drain_all cycle
  /// began after this flusher saw them, so no ring holds their records.
  void retire_unloaded(std::uint64_t epoch) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    unloaded_libraries.retire_up_to(epoch);
    unloaded_retired_ = epoch;
  }

  // ------------------------------------------------------------ capture

  /// Writes the recording changes and phases queued since the last cycle
  /// as one capture chunk.
  void write_capture() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    {
      mutex_lock lock(category_mutex);
      capture().take_locked(capture_out_);
    }
    if (capture_out_.empty() || closed()) {
      capture_out_.clear();
      return;
    }
    if (triggers_set())
      for (const capture_entry& e : capture_out_)
        if (e.type == format::capture_record::recording && !e.on)
          triggers_.recording_stopped(e.tick);  // no mark iteration across it
    encoder_.write_capture(capture_out_);
    capture_out_.clear();
  }

  /// Applies what only the flusher watches (capture_control::check_locked,
  /// and the space guard's stop). Returns the ns until the next deadline (or
  /// `longest`).
  std::uint64_t check_capture(std::uint64_t now, std::uint64_t longest) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    mutex_lock lock(category_mutex);
    if (space_.stopped() && capture().stop_for_room_locked()) update_capture_locked(space_.reason(), true);
    return capture().check_locked(config_, now, longest, [](format::capture_reason reason)
                                                           EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
      update_capture_locked(reason, true);
    });
  }

  // ------------------------------------------------------------ draining

  /// Drains `ring`: encodes what it published, with what its thread
  /// handed over first. `now_ns` 0: everything, now (flush(), exit, a
  /// signal, a snapshot, a retired ring), waiting for the drain lock if the
  /// thread holds it, or, given `busy`, setting it and returning at once.
  /// Otherwise a regular cycle at CLOCK_MONOTONIC `now_ns`: a ring whose
  /// thread encodes its own records for now (help_until_ns) is left to it
  /// but for what it handed over (unless it published nothing since the
  /// last cycle), and a ring whose thread holds the lock is skipped until
  /// the next cycle. Returns the number of records drained.
  std::uint64_t drain(thread_ring& ring, std::uint64_t now_ns, bool* busy = nullptr) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    ring_encoding& enc = encoding_of(ring);
    if (now_ns != 0 && ring.help_until_ns.load(std::memory_order_relaxed) > now_ns && encoder_.announced(ring)) {
      // A thread that published nothing since the last cycle has stopped
      // recording, for now or for good: what it left (records not encoded
      // yet, its open chunk) would wait for the end of its window, up to
      // help_window_max_ns, where kill -9 loses it. The flusher takes it
      // (unless the thread holds the lock right now).
      record* const published = ring.write_pos.load(order_relaxed);
      if (published != ring.help_write_seen) {
        ring.help_write_seen = published;
        // No lock: the hand-off has its own counters, and only the flusher
        // changes what announced() reads.
        if (!enc.has_handed()) return 0;
        if (closed())
          enc.take([](unsigned char*, std::uint32_t) {});
        else
          encoder_.take_handed(enc);
        control_.wake_room_waiters();  // it may wait for a free buffer
        return 0;
      }
    }
    if (now_ns == 0) {
      if (busy != nullptr) {
        if (!enc.try_lock()) {
          *busy = true;  // the caller comes back to it
          return 0;
        }
      } else if (!enc.lock()) {
        return 0;  // its thread stopped mid-batch (a debugger): left as it is
      }
    } else if (!enc.try_lock()) {
      return 0;  // its thread is encoding right now: next cycle
    }
    const std::uint64_t count = drain_locked(ring, enc);
    enc.unlock();
    return count;
  }

  /// drain() with the ring's drain lock held.
  std::uint64_t drain_locked(thread_ring& ring, ring_encoding& enc) EDGETRACE_DETAIL_REQUIRES(enc) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (closed()) {  // discarded, but a waiting producer goes on at once
      enc.take([](unsigned char*, std::uint32_t) {});
      return consume_to(
          ring, ring.write_pos.load(order_acquire), [](const record&) {}, [this] { control_.wake_room_waiters(); });
    }
    // The write position first, then the unload epoch: a record pushed
    // after an unload (by a library loaded since, maybe at the same
    // address) is then always read with that unload's sites forgotten.
    std::uint64_t limit = ~std::uint64_t{0};
    if (EDGETRACE_DETAIL_UNLIKELY(space_.bounded())) limit = records_below_bound(ring);
    record* const published = ring.write_pos.load(order_acquire);
    if (EDGETRACE_DETAIL_UNLIKELY(unloaded_libraries.epoch() != unloaded_seen_))
      forget_unloaded_sites();
    encoder_.begin_ring(ring, enc, unloaded_seen_);
    std::uint64_t left = limit;
    const std::size_t count = consume_runs_to(
        ring, published,
        [&](record* first, record* last) EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
          if (static_cast<std::uint64_t>(last - first) > left) last = first + left;
          encoder_.add_run(ring, enc, first, last);
          left -= static_cast<std::uint64_t>(last - first);
          return last;
        },
        [this] { control_.wake_room_waiters(); });
    encoder_.end_ring(enc);
    records_encoded_ += count;
    if (EDGETRACE_DETAIL_UNLIKELY(left == 0)) {
      // No room below the bound after the stop for the rest: dropped,
      // counted in the thread's total (its thread stats), never written.
      ring.room_dropped += consume_to(ring, published, [](const record&) {}, [this] { control_.wake_room_waiters(); });
    }
    if (EDGETRACE_DETAIL_UNLIKELY(ring.signal_drops.load(std::memory_order_relaxed) != 0)) write_signal_drops(ring, enc);
    return count;
  }

  /// Writes, as an in-band loss at the current tick, the records this
  /// ring's signal handlers could not store (reserve_slots); the thread's
  /// dropped total includes them.
  void write_signal_drops(thread_ring& ring, ring_encoding& enc) EDGETRACE_DETAIL_REQUIRES(enc) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const std::uint64_t n = ring.signal_drops.exchange(0, std::memory_order_relaxed);
    ring.signal_dropped += n;
    const std::uint64_t now = ticks(config_.clock);
    encoder_.add_loss(ring, enc, n, now, now);
  }

  /// Writes the in-band loss a retired thread could not write itself.
  void drain_pending_loss(thread_ring& ring) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (ring.pending_loss == 0 || closed()) return;
    ring_encoding& enc = encoding_of(ring);
    if (!enc.lock()) return;  // free: its thread is gone
    encoder_.add_loss(ring, enc, ring.pending_loss, ring.loss_first, ring.loss_last);
    enc.unlock();
    ring.pending_loss = 0;
  }

 protected:
  // Only ever the base of `runtime` (flusher.hpp). Virtual, though nothing
  // deletes through this class: g++'s -Wnon-virtual-dtor, which a user may
  // build with, counts a protected destructor as reachable by the friend
  // above and warns about this polymorphic class otherwise. Created once a
  // process: the extra vtable slot costs nothing.
  virtual ~runtime_stream() = default;

 private:
  bool triggers_ready_ = false;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
