// SPDX-License-Identifier: MIT
// The flusher thread: its loop (adaptive period, drains, calibration, capture, clients, signals), the end of the stream, and the runtime object that ties the rooms together.
//
// runtime = runtime_stream (writer/stream.hpp: state, output, one ring's
// drain) + this loop. The app's threads reach it through owned_runtime();
// the flusher thread runs flusher_main. Flight mode's part of the loop is
// the flight service's (writer/flight/service.hpp).
#pragma once

#include <edgetrace/writer/exit_priority.hpp>
#include <edgetrace/writer/flusher_client.hpp>
#include <edgetrace/writer/stream.hpp>
#include <edgetrace/writer/platform/linux.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <pthread.h>
#include <signal.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// The process-wide runtime (see runtime_stream for its state). The rest
/// of the process reaches it through the methods of "the app's side"
/// below, never through its members: each protocol (the flusher's control,
/// the rings, the names, the thread-exit key) stays with its owner.
class runtime final : public runtime_stream, private flusher_output, private flight_host {
 public:
  /// Built complete (see runtime_stream); create() builds the process's.
  runtime(const settings& config, const char* output_path, pthread_key_t exit_key,
          std::vector<std::string> names = {}) noexcept
      : runtime_stream(config, output_path, exit_key, std::move(names)) {}

  /// Builds the process's runtime in runtime_storage (static storage, never
  /// destroyed: threads may trace while static destructors run). Published
  /// through the_runtime once launch() succeeded.
  static runtime* create(const settings& config, const char* output_path, pthread_key_t exit_key,
                         std::vector<std::string> names = {}) noexcept;

  // ------------------------------------------------------------ the app's side
  // What the rest of the process asks of the runtime (writer/api.hpp,
  // slow_path.hpp, signals.hpp, process.hpp), any thread unless it says.

  /// Wakes the flusher now rather than at its next period. Async-signal-safe.
  void wake_flusher() noexcept { control_.wake_flusher(); }
  /// Shutdown has begun (relaxed: a hint): no new ring, no new wait.
  bool stopping() const noexcept { return control_.stopping(); }
  /// The output opened (a FIFO may still wait for its reader).
  bool opened() const noexcept { return control_.opened(); }
  /// Tracing writes: the output works and shutdown has not begun.
  bool active() const noexcept { return !failed() && !stopping(); }

  /// edgetrace::flush(): everything pushed before now encoded and written,
  /// waiting at most `bound`; when the output has not opened (a FIFO
  /// nobody reads) it only asks. True when done.
  bool flush(std::chrono::milliseconds bound) noexcept { return control_.request_flush(bound, true); }
  /// flush(), but only if some ring holds unread records (several
  /// categories going away at exit cost one flush, not one each), waiting
  /// at most `bound`; a wait that runs out makes shutdown's wait short. True
  /// when no record pushed before the call is left unencoded (or none can
  /// be read any more).
  bool flush_if_pending(std::chrono::milliseconds bound) noexcept {
    if (stopping()) return true;
    // An output stuck for a second already: one library after another going
    // away (at exit, say) must not each wait their second.
    if (output_stalled(1000000000u)) return rings_.unread_records() == 0;
    if (rings_.unread_records() == 0) return true;
    const bool flushed = control_.request_flush(bound, false);
    if (!flushed) control_.gave_up_waiting();  // exit waits no second more
    return flushed;
  }

  /// EDGETRACE_ON_FULL=wait (writer/slow_path.hpp, wait_for_room): the
  /// flusher's progress word (bumped for every ring drained), one look of
  /// the wait (flusher_control::wait_for_drain), and a give-up.
  std::uint32_t progress_word() const noexcept { return control_.room_word(); }
  template <class Room>
  std::size_t wait_for_drain(std::size_t needed, std::uint64_t ns, Room&& room) noexcept {
    return control_.wait_for_drain(needed, ns, room);
  }
  void note_gave_up() noexcept { control_.note_gave_up(); }

  /// Interns `name` (the table's own lock): its id, 0 past the table's end.
  std::uint32_t intern(std::string name) { return names_.intern(std::move(name)); }
  /// The name of interned id `id`; null for an unknown id.
  const char* name(std::uint32_t id) { return names_.name(id); }
  /// Every interned name, in id order (a forked child keeps them).
  std::vector<std::string> copy_names() { return names_.copy_all(); }

  /// A thread's first record: a ring from the pool (null: none could be
  /// mapped), then attached: listed for the flusher, retired at thread exit.
  /// Lock-free and async-signal-safe (writer/rings.hpp).
  thread_ring* take_ring() noexcept { return rings_.take(); }
  void attach(thread_ring* ring) noexcept {
    pthread_setspecific(exit_key_, ring);
    rings_.attach(ring);
  }
  /// Hands a thread's ring to the flusher for good; `and_exit_hook`: the
  /// thread-exit hook is called off first (the thread retires it itself).
  void retire(thread_ring* ring, bool and_exit_hook) noexcept {
    if (and_exit_hook) pthread_setspecific(exit_key_, nullptr);
    rings_.retire_one();
    // Release: the flusher's acquire of `retired` sees every record and loss
    // field this thread wrote.
    ring->retired.store(true, std::memory_order_release);
  }
  /// A thread exits: the flusher retires its ring now, not at its next
  /// period, and while several rings wait for it the thread gives it up to
  /// 2 ms: threads that come and go fast reuse a few rings instead of each
  /// mapping a new one (memory stays within a few rings of the live threads).
  void let_retire() noexcept {
    control_.wake_flusher();
    for (int waited = 0; waited < 40 && rings_.retiring() > ring_pool::retiring_limit && !stopping(); ++waited) {
      timespec pause{0, 50000};
      nanosleep(&pause, nullptr);
    }
  }

  /// The flusher runs for good (launch() succeeded).
  bool flusher_running() const noexcept { return flusher_.running(); }
  /// The flusher's CPU-time clock (what it cost, for benchmarks); false
  /// while it does not run.
  bool flusher_cpu_clock(clockid_t& id) const noexcept { return flusher_.cpu_clock(id); }
  /// EDGETRACE_SIGNAL_FLUSH: a SIGINT/SIGTERM handler hands its signal to
  /// the flusher and waits at most `max_ms` (signal_handoff). Async-signal-safe.
  void hand_signal(int signo, bool terminates, int max_ms) noexcept { signal_.hand_and_wait(signo, terminates, max_ms); }

  /// The runtime's own locks (the flusher's control, the ring list, the
  /// name table), in the one order fork and quick_exit take them
  /// (writer/process.hpp, lock_all): none is ever held with another of them.
  void lock_all() noexcept {
    const own_lock_list locks = own_locks();
    lock_in_order(locks.data(), locks.size());
  }
  /// Takes them all, or none: false when one is held.
  bool try_lock_all() noexcept {
    const own_lock_list locks = own_locks();
    return try_lock_in_order(locks.data(), locks.size());
  }
  void unlock_all() noexcept {
    const own_lock_list locks = own_locks();
    unlock_in_reverse(locks.data(), locks.size());
  }
  /// A forked child, with every lock held since fork_prepare: its copy of
  /// the runtime is never used again; its copy of the dump's descriptor is
  /// closed (not a number the app reused).
  void leave_in_child() noexcept {
    unlock_all();
    file_.close();
  }

  /// Start-up, on the starting thread: the writer id, the triggers, the
  /// process chunk and the first calibration pair, then the flusher, which
  /// opens the output (open_output); waits at most
  /// flusher_control::open_wait for the open. On failure: one stderr line,
  /// false. A FIFO without a reader, or an open still blocked after the
  /// wait, does not hold the app: tracing goes on into the rings and the
  /// flusher writes once the output opens (exit then waits at most 1 s).
  bool launch() noexcept {
    const std::uint64_t seed = clock_ns(CLOCK_MONOTONIC) ^ (static_cast<std::uint64_t>(owner_pid_) << 32) ^
                               reinterpret_cast<std::uintptr_t>(this);
    {
      // Until the flusher starts, the starting thread holds the stream's
      // flusher-side state: nothing else runs on it yet.
      const playing_role starting(flusher_role);
      set_writer_id(static_cast<std::uint32_t>((seed * 0x9E3779B97F4A7C15ull) >> 32) | 1u);
      read_triggers();
      write_process_chunk();  // into the output buffer: the flusher writes it after the file header
      write_calibration();
    }
    // The flusher blocks every signal: the app's handlers must run on the
    // app's threads, SIGINT/SIGTERM must not land on ours, and a SIGXFSZ from
    // a file-size limit must turn into EFBIG (reported) rather than a kill.
    const int error = flusher_.start(&runtime::flusher_main, this, "edgetrace");
    if (error != 0) {
      report("cannot start the flusher thread: %s; tracing is off", std::strerror(error));
      return false;
    }
    if (control_.wait_open_failed()) {  // said so already (open_output); the flusher only ends
      flusher_.join();
      return false;
    }
    flusher_.running_for_good();
    return true;
  }

  /// Exit, once recording stopped: the flusher's final pass, waited for at
  /// most 1 s (100 ms after a wait gave up), with the app's other threads
  /// lowered meanwhile; one stderr line saying why when it did not end.
  void stop_at_exit() noexcept {
    if (!control_.stop()) return;
    // The final pass needs a CPU, which the app's busy threads would share
    // out among themselves (writer/exit_priority.hpp).
    static exit_priority others;  // static: 64 KiB, and shutdown runs once
    others.lower_others(flusher_.tid());
    // Bounded: a reader that stopped reading, or a stuck file system, must
    // not hold the app's exit. After 1 s the app goes on exiting (the
    // flusher, stuck in the kernel, goes with the process).
    const bool done = control_.wait_finished();
    const std::size_t lowered = others.lowered();
    const std::size_t kept = others.kept();
    others.restore();
    if (done) {
      flusher_.join();
    } else if (config_.flight && !flight_ready()) {
      // The ring holds no record before it is faulted in (they wait in the
      // threads' rings), so there is nothing a snapshot could be made of.
      const std::size_t ring = flight_faulting_bytes();
      const unsigned long long run_ms = (clock_ns(CLOCK_MONOTONIC) - first_calibration().monotonic_ns) / 1000000u;
      if (ring == 0)
        report("EDGETRACE_MODE=flight: the flight ring was not mapped yet at exit, %llu ms after tracing began (the "
               "flusher had not reached it: memory was slow to come); no snapshot was written",
               run_ms);
      else
        report("EDGETRACE_MODE=flight: the %llu MiB ring was still being faulted in at exit, %llu MiB of it after %llu "
               "ms of the run; it holds no record until it is whole, so no snapshot was written (a smaller "
               "EDGETRACE_FLIGHT_MB is ready sooner)",
               static_cast<unsigned long long>(ring >> 20),
               static_cast<unsigned long long>(flight_faulted_bytes() >> 20), run_ms);
    } else if (!control_.opened()) {
      report("EDGETRACE_OUTPUT '%s' never opened (a FIFO that no process reads, or a stuck file system); nothing "
             "was written",
             file_.path());
    } else if (output_stalled(500000000u)) {
      report("EDGETRACE_OUTPUT '%s' took no data for 1 s at exit (a reader that stopped reading, or a stuck file "
             "system); the dump may lack its end",
             file_.path());
    } else {
      report("the final pass over EDGETRACE_OUTPUT '%s' did not end within 1 s of exit, though the output took data "
             "(%zu other threads were still running on %d CPUs%s); the dump lacks its end: everything up to its last "
             "flush is there",
             file_.path(), lowered + kept, cpus(),
             kept != 0 ? ", at their own priority: without CAP_SYS_NICE it could not have been put back" : "");
    }
  }

  // ------------------------------------------------------------ flusher clients

  /// Seals a client's payload as a chunk, after any pending definitions it
  /// may refer to. Nothing once output failed or the stream ended.
  void emit_client_chunk(format::chunk_type type, const unsigned char* payload, std::size_t size) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (closed()) return;
    encoder_.emit_client_chunk(type, payload, size);
  }

  /// Calls every registered client; returns the fullest backlog they
  /// reported (flusher_client::backlog).
  double poll_clients(poll_reason why) noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    flusher_output& out = *this;
    double fullest = 0;
    for (flusher_client* c = client_list.load(std::memory_order_acquire); c != nullptr; c = c->next) {
      c->poll(*c, out, why);
      fullest = std::max(fullest, c->backlog);
    }
    return fullest;
  }

  // flusher_output: what a client may do from its poll.
  std::uint32_t site_id(std::uint64_t word) override EDGETRACE_DETAIL_REQUIRES(flusher_role) { return encoder_.word_site_id(word); }
  void emit(format::chunk_type type, const unsigned char* payload, std::size_t size) override
      EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    emit_client_chunk(type, payload, size);
  }
  std::uint8_t clock() const noexcept override { return config_.clock; }
  bool writable() const noexcept override EDGETRACE_DETAIL_REQUIRES(flusher_role) { return !closed(); }

  // ------------------------------------------------------------ the loop

  /// What drain_all takes: a regular `cycle` leaves the records of a ring
  /// whose thread encodes them itself for now (EDGETRACE_ON_FULL=wait
  /// under overload, writer/help.hpp) to that thread; `everything` (flush(),
  /// signals, snapshots) takes every record now; the `final_pass` also
  /// writes every thread's totals.
  enum class sweep { cycle, everything, final_pass };

  /// One flusher cycle: drain every ring, retire those whose thread exited
  /// (their ring goes back to the pool at once, so thread churn costs no
  /// memory). Returns the fullest fill fraction seen (to adapt the period).
  double drain_all(sweep kind) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    // Every ring below is drained after this load: the unloaded ranges
    // published before it hold no records any more once the loop is done.
    const std::uint64_t unloaded_epoch_now = unloaded_libraries.epoch();
    const std::uint64_t now_ns = kind == sweep::cycle ? clock_ns(CLOCK_MONOTONIC) : 0;
    if (EDGETRACE_DETAIL_UNLIKELY(space_.bounded())) measure_in_flight();
    double fullest = 0;
    std::size_t later = 0;
    thread_ring* previous = nullptr;
    for (thread_ring* ring = rings_.first(); ring != nullptr;) {
      thread_ring* next = ring->next_attached.load(std::memory_order_acquire);
      // Acquire pairs with the exit hook's release: once retired is seen,
      // the owner's last records and loss fields are visible.
      const bool retired = ring->retired.load(std::memory_order_acquire);
      // A complete sweep does not wait on a ring whose thread holds its
      // lock (encoding its own records): it comes back to it after the
      // others, so a sweep costs the longest such wait, not their sum
      // (hundreds of busy threads on two cores: each holder may wait a
      // whole round of the scheduler before it lets go).
      bool busy = false;
      const std::uint64_t drained = drain(*ring, retired ? 0 : now_ns, retired || now_ns != 0 ? nullptr : &busy);
      fullest = std::max(fullest, static_cast<double>(drained) / static_cast<double>(ring->slot_count()));
      if (retired) {
        drain(*ring, 0);  // anything pushed between the two loads
        drain_pending_loss(*ring);
        if (encoder_.announced(*ring) && !closed()) encoder_.write_thread_stats(*ring);
        retired_written_ += ring->written.load(std::memory_order_relaxed);
        retired_dropped_ += chunk_encoder::dropped_records(*ring);
        retired_causes_.add(*ring);
        if (triggers_set()) triggers_.forget_thread(ring->thread_id);
        {
          mutex_lock lock(rings_.list_mutex());
          previous = rings_.unlink(previous, ring);
        }
        rings_.recycle(ring);
        rings_.retired_one();
      } else {
        if (busy) {
          ring->drain_later = true;
          ++later;
        } else {
          state_totals(*ring, kind);
        }
        previous = ring;
      }
      ring = next;
    }
    if (later != 0) drain_later(kind, later);
    if (EDGETRACE_DETAIL_UNLIKELY(unloaded_epoch_now != unloaded_retired_)) {
      if (unloaded_seen_ != unloaded_epoch_now) forget_unloaded_sites();  // no ring was drained
      retire_unloaded(unloaded_epoch_now);
    }
    return fullest;
  }

  /// The totals of a live ring's thread: at the end; and whenever it
  /// dropped records since they were last written: its in-band loss record
  /// waits for its next push, which may never come (kill -9, a crash, a
  /// thread gone idle), so the count must not.
  void state_totals(thread_ring& ring, sweep kind) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!encoder_.announced(ring) || closed()) return;
    const std::uint64_t dropped = chunk_encoder::dropped_records(ring);
    if (kind != sweep::final_pass && dropped == ring.dropped_stated) return;
    ring.dropped_stated = dropped;
    encoder_.write_thread_stats(ring);
  }

  /// The second round of a complete sweep: the `count` rings whose thread
  /// held the lock, each drained as soon as its thread lets go, for at most
  /// about a second (ring_encoding::lock's patience: a thread stopped by a
  /// debugger). The flusher sleeps between looks, so its core goes to the
  /// threads it waits for.
  void drain_later(sweep kind, std::size_t count) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const std::uint64_t give_up_ns = clock_ns(CLOCK_MONOTONIC) + 1000000000u;
    for (bool last_look = false;;) {
      for (thread_ring* ring = rings_.first(); ring != nullptr && count != 0;
           ring = ring->next_attached.load(std::memory_order_acquire)) {
        if (!ring->drain_later) continue;
        ring_encoding& enc = encoding_of(*ring);
        if (!enc.try_lock()) {
          if (!last_look) continue;  // left as it is: its records wait for the next sweep
        } else {
          drain_locked(*ring, enc);
          enc.unlock();
        }
        ring->drain_later = false;
        --count;
        state_totals(*ring, kind);
      }
      if (count == 0 || last_look) return;
      last_look = clock_ns(CLOCK_MONOTONIC) >= give_up_ns;
      const timespec pause{0, 20000};
      nanosleep(&pause, nullptr);
    }
  }

  /// The flusher thread's life: cycles until shutdown (or a failed open)
  /// stops it, then the end of the stream. Each cycle: capture deadlines,
  /// the second calibration pair, the output check, every ring drained,
  /// the clients polled, the next period chosen, calibration, signals,
  /// output written, flight snapshots, the pool refilled.
  void flusher_loop() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const std::uint64_t period_ns = std::uint64_t{config_.flush_ms} * 1000000u;
    std::uint64_t wait_ns = period_ns < 1000000u ? period_ns : 1000000u;  // first look soon
    std::uint64_t last_drain_ns = clock_ns(CLOCK_MONOTONIC);
    rings_.refill(control_.stopping_flag());  // here, not in start-up: page faults stay off the app's start
    start_sampler();
    load_.sample(last_drain_ns);  // the first look at the CPUs comes one sample_ns from here
    for (;;) {
      const std::uint64_t wait = flight_.wait(check_capture(clock_ns(CLOCK_MONOTONIC), wait_ns));
      // Read before looking for work: a wake-up after this read, however
      // early, makes the sleep below return at once.
      control_.sleep_if_idle(control_.wake_word(), wait);
      std::uint64_t serving = 0;
      bool flushing = false;
      if (!control_.next_cycle(serving, flushing)) break;
      if (forget_sites.exchange(false, std::memory_order_acq_rel)) encoder_.forget_site_cache();
      take_rate_pair(true);  // before the first timed chunk
      // Before encoding: a truncation found now costs no record (the new
      // stream defines everything this cycle uses). One fstat.
      if (!file_.failed_acquire() && !ended_) check_output_still_there();
      const std::uint64_t drain_start_ns = clock_ns(CLOCK_MONOTONIC);
      check_capture(drain_start_ns, 0);
      write_capture();
      const double rings_fullest = drain_all(flushing ? sweep::everything : sweep::cycle);
      load_.sample(drain_start_ns);
      const double fullest = std::max(rings_fullest, poll_clients(flushing ? poll_reason::flush : poll_reason::cycle));
      sample_device(drain_start_ns);
      // Adapt the period to the busiest ring (or client queue, such as a
      // thread's GPU launches): come back before it can fill
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
      if (sampler_ != nullptr && wait_ns > sampler_->period_ns()) wait_ns = sampler_->period_ns();
      const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
      // After a stop near a bound nothing is recorded any more: no pair
      // either, or the dump grew 40 B a second to the bound (the end
      // writes the last one).
      if (!file_.failed_acquire() && !ended_ && !space_.stopped() &&
          (calibrations_ < 3 ? now - last_calibration_ns_ > 20000000u : now - last_calibration_ns_ > 1000000000u))
        write_calibration();
      if (signal_.pending()) serve_signal();
      flush_output();
      if (EDGETRACE_DETAIL_UNLIKELY(control_.gave_up_count() != gave_up_seen_)) report_stall();
      if (config_.flight && !file_.failed()) flight_.serve(false, *this);
      size_rings_by_room(now);
      rings_.refill(control_.stopping_flag());
      control_.cycle_done(serving);
    }
    say_smaller_rings();
    if (config_.flight && !ended_) finish_flight();
    if (!ended_) end_stream();
    file_.close();
    control_.finished();
  }

  /// What the threads' new rings may map: a quarter of what the process may
  /// still use (memory_room: its memory cgroup's levels, MemAvailable),
  /// read when the runtime starts, then every second (a few dozen small
  /// reads). In a
  /// container of 256 MiB, 200 threads of 1 MiB rings were OOM-killed;
  /// now their rings shrink with the room (ring_pool::records_for).
  void size_rings_by_room(std::uint64_t now_ns) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (now_ns - last_room_ns_ >= 1000000000u) {
      last_room_ns_ = now_ns;
      rings_.set_room_from_free(read_memory_room().free);
    }
    say_smaller_rings();
  }

  /// One line, the first time a ring was mapped smaller than asked.
  void say_smaller_rings() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    const std::uint64_t smallest = rings_.smallest_mapped();
    if (smaller_rings_said_ || smallest >= rings_.records_asked()) return;
    smaller_rings_said_ = true;
    char where[160];
    describe_room(read_memory_room(), where, sizeof where);  // as it is now
    report("memory is short (%s): new threads' rings get as little as %llu KiB, not the %llu KiB of "
           "EDGETRACE_BUFFER_KB; a thread that records faster than its ring drains drops records, counted in the dump",
           where, static_cast<unsigned long long>(smallest * sizeof(record) / 1024),
           static_cast<unsigned long long>(rings_.records_asked() * sizeof(record) / 1024));
  }

  /// The device sampler (telemetry/sampler.hpp): found once, on this
  /// thread, so the app's start-up reads no /sys file.
  void start_sampler() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (config_.sample_ms == 0) return;
    sampler_ = new (std::nothrow) telemetry::device_sampler;
    if (sampler_ != nullptr) sampler_->start(telemetry::sysfs_root(), config_.sample_ms);
  }

  /// A device sample when one is due (now_ns 0: at once, the stream's
  /// last): the traced threads alive now, then its chunks (new tracks first).
  void sample_device(std::uint64_t now_ns) EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (sampler_ == nullptr || closed() || space_.stopped()) return;
    if (now_ns == 0) now_ns = clock_ns(CLOCK_MONOTONIC);
    else if (!sampler_->due(now_ns)) return;
    struct traced {
      std::uint32_t id;
      std::uint64_t os_tid;
    } threads[telemetry::device_sampler::max_threads];
    std::size_t count = 0;
    for (const thread_ring* ring = rings_.first(); ring != nullptr && count < telemetry::device_sampler::max_threads;
         ring = ring->next_attached.load(std::memory_order_acquire))
      if (encoder_.announced(*ring) && !ring->retired.load(std::memory_order_acquire))
        threads[count++] = {ring->thread_id, ring->os_tid};
    const std::uint64_t before_tick_ns = clock_ns(CLOCK_MONOTONIC);
    sampler_->sample(
        {ticks(config_.clock), before_tick_ns}, now_ns,
        [&](auto&& add) {
          for (std::size_t i = 0; i < count; ++i) add(threads[i].id, threads[i].os_tid);
        },
        // Called within sample(), on this thread: the flusher's.
        [&](format::chunk_type type, const unsigned char* payload, std::size_t size)
            EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { encoder_.emit_client_chunk(type, payload, size); });
  }

  /// Final pass: everything drained, thread totals, a last calibration
  /// pair and the end chunk, written out.
  void end_stream() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    take_rate_pair(false);
    write_capture();
    drain_all(sweep::final_pass);
    poll_clients(poll_reason::final);
    sample_device(0);  // the last values
    if (!file_.failed_acquire()) {
      write_calibration();
      encoder_.write_end();
    }
    flush_output();
    ended_ = true;
    report_drops();
  }

  /// Why records were dropped under EDGETRACE_ON_FULL=wait, summed over
  /// threads (the exit report names each cause that applies).
  struct drop_causes {
    std::uint64_t stalled = 0, signal = 0, unloaded = 0, room = 0;
    void add(const thread_ring& ring) noexcept {
      stalled += ring.stall_dropped.load(std::memory_order_relaxed);
      signal += ring.signal_dropped;
      unloaded += ring.unloaded_dropped;
      room += ring.room_dropped;
    }
  };
  drop_causes retired_causes_ EDGETRACE_DETAIL_GUARDED_BY(flusher_role);  ///< those of retired rings

  /// Once per run, when the first stall that made a thread give up
  /// waiting has ended (the flusher is back here): one stderr line with
  /// what stalled and for how long. Later stalls are in the exit report.
  void report_stall() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    gave_up_seen_ = control_.gave_up_count();
    if (stall_reported_) return;
    stall_reported_ = true;
    if (file_.slow_writes() != 0)
      report("output '%s' (%s) took no data for %llu ms; threads with a full ring waited %llu ms for it "
             "(EDGETRACE_ON_FULL=wait waits no longer), then dropped records, counted in the dump, until it "
             "took data again",
             file_.path(), file_.kind_text(), static_cast<unsigned long long>(file_.longest_write_ns() / 1000000u),
             static_cast<unsigned long long>(max_wait_without_progress_ns / 1000000u));
    else
      report("the flusher made no progress for %llu ms (%u threads recording on %d CPUs); threads with a full "
             "ring dropped records meanwhile, counted in the dump",
             static_cast<unsigned long long>(max_wait_without_progress_ns / 1000000u), encoder_.threads_seen(),
             load_.cpus());
  }

  /// At the end of the stream: if any thread's ring was full at some point,
  /// one stderr line with the count (the thread stats in the dump have the
  /// same numbers per thread) and each cause that applies. Nothing otherwise.
  void report_drops() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (file_.failed_acquire()) return;
    std::uint64_t written = retired_written_, dropped = retired_dropped_;
    drop_causes causes = retired_causes_;
    {
      mutex_lock lock(rings_.list_mutex());
      for (const thread_ring* ring = rings_.first(); ring != nullptr;
           ring = ring->next_attached.load(std::memory_order_acquire)) {
        written += ring->written.load(std::memory_order_relaxed);
        dropped += chunk_encoder::dropped_records(*ring);
        causes.add(*ring);
      }
    }
    if (dropped == 0) return;
    if (causes.room != 0)
      report("%llu records recorded before the stop near the dump's bound reached their threads did not fit "
             "below it and were dropped, counted in the dump (docs/RELIABILITY.md, \"The dump never fills the "
             "disk\")",
             static_cast<unsigned long long>(causes.room));
    if (dropped == causes.room) return;
    // The other causes, as before.
    dropped -= causes.room;
    const double percent = 100.0 * static_cast<double>(dropped) / static_cast<double>(written + dropped);
    if (config_.drop_when_full) {
      report("%llu of %llu records (%.1f%%) were dropped because a thread's ring was full (EDGETRACE_ON_FULL=drop; "
             "%u threads recorded on %d CPUs); set EDGETRACE_ON_FULL=wait, or a larger EDGETRACE_BUFFER_KB (now "
             "%llu), to keep them",
             static_cast<unsigned long long>(dropped), static_cast<unsigned long long>(written + dropped), percent,
             encoder_.threads_seen(), load_.cpus(),
             static_cast<unsigned long long>((config_.ring_records * sizeof(record) + 1023) / 1024));
      return;
    }
    // Under wait a record is dropped only for a reason waiting cannot fix:
    // name each one that applies, with its count.
    char why[1024];
    std::size_t at = 0;
    auto add = [&](std::uint64_t count, const char* format, auto... more) {
      if (count == 0 || at >= sizeof why) return;
      at += static_cast<std::size_t>(std::snprintf(why + at, sizeof why - at, "%s%llu ", at == 0 ? "" : "; ",
                                                   static_cast<unsigned long long>(count)));
      if (at < sizeof why) at += static_cast<std::size_t>(std::snprintf(why + at, sizeof why - at, format, more...));
    };
    const std::uint64_t other = dropped - std::min(dropped, causes.stalled + causes.signal + causes.unloaded);
    if (file_.slow_writes() != 0)
      add(causes.stalled,
          "while output '%s' (%s) took no data (%llu writes of 100 ms or more, the longest %llu ms; a thread waits "
          "at most %llu ms)",
          file_.path(), file_.kind_text(), static_cast<unsigned long long>(file_.slow_writes()),
          static_cast<unsigned long long>(file_.longest_write_ns() / 1000000u),
          static_cast<unsigned long long>(max_wait_without_progress_ns / 1000000u));
    else
      add(causes.stalled, "while the flusher made no progress for %llu ms (%u threads recording on %d CPUs)",
          static_cast<unsigned long long>(max_wait_without_progress_ns / 1000000u), encoder_.threads_seen(),
          load_.cpus());
    add(causes.signal, "%s", "recorded by signal handlers inside their thread's own record");
    add(causes.unloaded, "%s", "of libraries unloaded before the flusher read them");
    add(other, "%s", "recorded before the output opened or after exit began");
    report("%llu of %llu records (%.1f%%) were dropped under EDGETRACE_ON_FULL=wait: %s (docs/RELIABILITY.md, "
           "\"Overload\")",
           static_cast<unsigned long long>(dropped), static_cast<unsigned long long>(written + dropped), percent, why);
  }

  /// Answers a signal handler waiting in signal_flush(): if the signal will
  /// end the process, end the stream now; else just drain and write.
  void serve_signal() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (!ended_) {
      if (signal_.terminates()) {
        if (config_.flight) finish_flight();  // the process ends here: as at exit
        end_stream();
      } else {
        drain_all(sweep::everything);
        poll_clients(poll_reason::flush);
        flush_output();
      }
    }
    signal_.answered();
  }

  /// A dump deleted (or replaced) while the app runs would swallow every
  /// later write silently: say so once and stop.
  void check_output_still_there() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    if (file_.fd_ours() && control_.opened()) output_is_ours();
  }

  // ------------------------------------------------------------ flight recorder
  // EDGETRACE_MODE=flight: the work is the flight service's
  // (writer/flight/service.hpp); the runtime starts and ends it and
  // answers its questions (flight_host).

  /// Flight mode's start, instead of open_output: no dump is open (nothing
  /// to check before writes), the app's start goes on at once (it does not
  /// wait for the ring's page faults: its records wait in the threads'
  /// rings meanwhile), then the service maps the ring.
  void start_flight() noexcept EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    file_.disown();
    control_.set_open_state(flusher_control::open_done);
    char error[400];
    if (!flight_.start(file_.path(), encoder_.writer_id(), error, sizeof error)) {
      file_.fail_with(error);
      return;
    }
    // This thread blocks every signal (flusher_thread::start); a fault of
    // its own must still reach the crash handler, not kill the process unseen.
    sigset_t crash;
    sigemptyset(&crash);
    for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT}) sigaddset(&crash, signo);
    pthread_sigmask(SIG_UNBLOCK, &crash, nullptr);
    flush_output();  // the process chunk and first calibration: the first sticky chunks
  }

  /// At exit (flusher, before the stream's end): everything recorded is
  /// encoded, the service writes what is pending and the exit snapshot,
  /// then the latency triggers that never fired and the skipped requests
  /// are reported.
  void finish_flight() EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    take_rate_pair(false);  // a run that ends before the flusher's first cycle: its snapshot still has a rate
    write_capture();
    drain_all(sweep::everything);
    if (!file_.failed()) flight_.finish(*this);
    // A trigger whose name no span or mark had could never fire: a typo
    // should not pass for a quiet run.
    for (std::size_t i = 0; triggers_set() && i < triggers_.size(); ++i) {
      const char* closest = nullptr;
      if (!triggers_.never_matched(i, closest)) continue;
      if (closest != nullptr)
        report("EDGETRACE_TRIGGER '%s' never fired: no span or mark named '%s' was recorded (did you mean '%s'?)",
               triggers_.text(i), triggers_.name(i), closest);
      else
        report("EDGETRACE_TRIGGER '%s' never fired: no span or mark named '%s' was recorded", triggers_.text(i),
               triggers_.name(i));
    }
    flight_.report_skipped();
  }

  /// edgetrace::snapshot() on any thread: hands the request to the
  /// flusher. Async-signal-safe (atomics, a memcpy, a futex wake).
  void hand_snapshot_call(const char* reason, std::size_t size) noexcept {
    flight_.hand_call(reason, size);
    control_.wake_flusher();
  }
  /// A crash handler's part, on any thread (flight_service::crashed).
  /// Async-signal-safe.
  void snapshot_on_crash(int signo) noexcept {
    if (!config_.flight) return;
    flight_.crashed(
        signo, flusher_.is_current(), [this] { return !file_.failed(); }, [this] { control_.wake_flusher(); });
  }

  // flight_host: what the flight service asks (flusher).
  void encode_everything() override EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    write_capture();
    drain_all(sweep::everything);
    poll_clients(poll_reason::flush);
    flush_output();
  }
  std::vector<unsigned char>& encode_tail() override EDGETRACE_DETAIL_REQUIRES(flusher_role) {
    for (thread_ring* ring = rings_.first(); ring != nullptr; ring = ring->next_attached.load(std::memory_order_acquire))
      if (encoder_.announced(*ring)) encoder_.write_thread_stats(*ring);
    encoder_.write_end();
    return encoder_.output();
  }
  std::uint64_t tick_ns(std::uint64_t tick) const override { return trigger_ns(tick); }

  static void* flusher_main(void* self) {
    static_cast<runtime*>(self)->run_flusher();
    return nullptr;
  }

 private:
  /// The flusher thread, from its start to its end.
  void run_flusher() {
    const playing_role flusher(flusher_role);  // from here on, this thread alone
    on_flusher_thread = true;  // never waits for room: only this thread makes it
    flusher_.set_tid(os::thread_id());
    // Made by whichever thread traced first: if the app pinned that one,
    // the flusher would share its CPU and preempt it at every drain.
    os::run_on_process_cpus();
    if (config_.flight)
      start_flight();  // no file: snapshots make their own
    else
      open_output();  // on failure: one line, failed_, and the loop only discards
    flusher_loop();
  }

  using own_lock_list = std::array<mutex*, 3>;
  own_lock_list own_locks() noexcept {
    return {&control_.lock_for_exit(), &rings_.list_mutex(), &names_.table_mutex()};
  }
};

/// The runtime, once tracing started (acquire to read: release-published
/// after construction). Null while tracing is off.
inline std::atomic<runtime*> the_runtime{nullptr};
alignas(runtime) inline unsigned char runtime_storage[sizeof(runtime)];

inline runtime* runtime::create(const settings& config, const char* output_path, pthread_key_t exit_key,
                                std::vector<std::string> names) noexcept {
  return new (runtime_storage) runtime(config, output_path, exit_key, std::move(names));
}

/// Whether `rt` is this process's runtime (not null, not a forked child's copy).
inline bool owns_runtime(const runtime* rt) noexcept { return rt != nullptr && rt->owned_here(); }

/// The runtime when this process owns it; null while tracing is off, and
/// in a forked child (its copy of the parent's is never used).
inline runtime* owned_runtime() noexcept {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  return owns_runtime(rt) ? rt : nullptr;
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
