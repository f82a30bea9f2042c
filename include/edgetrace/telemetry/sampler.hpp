// SPDX-License-Identifier: MIT
// The device sampler: on the flusher, every EDGETRACE_SAMPLE_MS, one pread per source and one open-read-close per traced thread's schedstat (and status), encoded as a device_samples chunk; new tracks go first in a device_tracks chunk (docs/FORMAT.md, 1.9).
//
// It never runs on the app's threads and never allocates after start()
// (the sources, the thread slots and both chunk buffers are fixed arrays),
// except once if NVML registers after sampling began: opening it then
// loads the driver's library (look_for_nvml).
// A file whose content is not a number (garbage, empty, huge, negative
// where that cannot be) is counted as ignored; a read that fails, as
// failed; neither stops the others.
#pragma once

#include <edgetrace/format.hpp>
#include <edgetrace/telemetry/files.hpp>
#include <edgetrace/telemetry/sources.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace telemetry {

/// A chunk payload being built in a fixed buffer.
struct payload {
  unsigned char* data;
  std::size_t capacity;
  std::size_t size = 0;

  std::size_t room() const noexcept { return capacity - size; }
  void u8(unsigned value) noexcept { data[size++] = static_cast<unsigned char>(value); }
  void varint(std::uint64_t value) noexcept {
    size = static_cast<std::size_t>(format::put_varint(data + size, value) - data);
  }
  void string(const char* text) noexcept {
    const std::size_t n = std::min<std::size_t>(std::strlen(text), 255);
    varint(n);
    std::memcpy(data + size, text, n);
    size += n;
  }
  /// A record's head with room for its size: a varint padded to three
  /// bytes, filled in by close_record (readers accept a non-minimal varint).
  std::size_t open_record(unsigned tag) noexcept {
    u8(tag);
    size += 3;
    return size;
  }
  void close_record(std::size_t body) noexcept { format::put_varint3(data + body - 3, size - body); }
};

class device_sampler {
 public:
  static constexpr std::size_t max_threads = 256;
  /// Bytes a track record may take (two 255-byte strings at most, here
  /// under 150), and a value pair.
  static constexpr std::size_t track_record_room = 600;
  static constexpr std::size_t pair_room = 2 * format::max_varint_size;
  /// Memory (the process's RSS and faults, MemAvailable) changes slowly and
  /// its files cost most to read when cold (the kernel formats them, ~20 us
  /// each): they are read every slow_every-th sample only.
  static constexpr std::uint64_t slow_every = 5;
  static constexpr bool slow_kind(file_kind k) noexcept { return k == file_kind::meminfo || k == file_kind::self_stat; }

  /// Finds the sources under `root` (may allocate: start-up, on the
  /// flusher). `period_ms` 0 leaves the sampler off.
  void start(const char* root, std::uint32_t period_ms) noexcept {
    period_ns_ = std::uint64_t{period_ms} * 1000000u;
    if (period_ms == 0) return;
    discover(sources_, root, text_, sizeof text_);
    const long page = ::sysconf(_SC_PAGESIZE), tick = ::sysconf(_SC_CLK_TCK);
    page_kb_ = page > 0 ? static_cast<std::uint64_t>(page) / 1024 : 4;
    clock_ticks_ = tick > 0 && tick <= 1000000 ? tick : 100;
    tracks_pending_ = true;
  }

  bool on() const noexcept { return period_ns_ != 0; }
  std::uint64_t period_ns() const noexcept { return period_ns_; }
  /// A sample is due: the first at once, then every period.
  bool due(std::uint64_t now_ns) const noexcept { return on() && (last_ns_ == 0 || now_ns - last_ns_ >= period_ns_); }
  const source_set& sources() const noexcept { return sources_; }

  /// When a sample is taken: its tick, and CLOCK_MONOTONIC read just
  /// before it (the start of the sample's time to its last read).
  struct taken_at {
    std::uint64_t tick;
    std::uint64_t monotonic_ns;
  };

  /// One sample, due at `now_ns`. `each_thread(add)` calls add(thread id,
  /// OS tid) for every traced thread alive now; `emit(type, payload, size)`
  /// writes a chunk.
  template <class EachThread, class Emit>
  void sample(taken_at at, std::uint64_t now_ns, EachThread&& each_thread, Emit&& emit) noexcept {
    timespec cpu0{}, cpu1{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    last_ns_ = now_ns;
    for (thread_slot& slot : slots_) slot.seen = false;
    each_thread([this](std::uint32_t thread_id, std::uint64_t os_tid) { see_thread(thread_id, os_tid); });
    for (thread_slot& slot : slots_)
      if (slot.thread_id != 0 && !slot.seen) slot.close();
    if (sources_.nvml_unregistered) look_for_nvml();
    if (tracks_pending_) write_tracks(emit);
    payload out{samples_, sizeof samples_};
    const std::size_t body = out.open_record(static_cast<unsigned>(format::device_sample_record::values));
    out.varint(at.tick);
    files_last_ = 0;
    // The process's CPU time, for other processes' load: one system call,
    // where /proc/self/stat costs a formatted file.
    timespec own{};
    own_jiffies_ = ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) == 0
                       ? (static_cast<std::int64_t>(own.tv_sec) * 1000000000 + own.tv_nsec) / (1000000000 / clock_ticks_)
                       : -1;
    const bool slow_now = samples_taken_ % slow_every == 0;
    for (std::size_t i = 0; i < sources_.file_count; ++i)
      if (slow_now || !slow_kind(sources_.files[i].kind)) read_file(sources_.files[i], out);
    for (thread_slot& slot : slots_)
      if (slot.thread_id != 0) read_thread(slot, out);
    out.close_record(body);
    ++samples_taken_;
    note_read_time(at.monotonic_ns);
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    const std::int64_t spent = (cpu1.tv_sec - cpu0.tv_sec) * 1000000000LL + (cpu1.tv_nsec - cpu0.tv_nsec);
    cpu_ns_ += spent > 0 ? static_cast<std::uint64_t>(spent) : 0;
    const std::size_t stats = out.open_record(static_cast<unsigned>(format::device_sample_record::stats));
    for (std::uint64_t v : {samples_taken_, ignored_, failed_, cpu_ns_, std::uint64_t{files_last_}, longest_ns_})
      out.varint(v);
    out.close_record(stats);
    emit(format::chunk_type::device_samples, out.data, out.size);
  }

  std::uint64_t samples_taken() const noexcept { return samples_taken_; }
  std::uint64_t ignored() const noexcept { return ignored_; }
  std::uint64_t failed() const noexcept { return failed_; }

 private:
  /// A traced thread. Its files are opened at each sample and closed at
  /// once (about 0.8 us more than a held descriptor's pread): the sampler
  /// holds no descriptor per thread, so 256 threads cost the app's table
  /// nothing, and a thread's exit closes nothing the app may have reopened.
  struct thread_slot {
    std::uint32_t thread_id = 0;  ///< 0: free
    std::uint32_t first_track = 0;
    std::uint64_t os_tid = 0;
    std::int64_t last_wait = -1, switches = -1;  ///< as last read
    bool seen = false;
    bool defined = false;

    void close() noexcept { *this = thread_slot{}; }
  };

  /// The longest time from a sample's tick to its last read: a value it
  /// holds was read within that long after its tick (longer when the
  /// flusher was preempted in between).
  void note_read_time(std::uint64_t from_ns) noexcept {
    timespec now{};
    if (::clock_gettime(CLOCK_MONOTONIC, &now) != 0) return;
    const std::uint64_t end_ns =
        static_cast<std::uint64_t>(now.tv_sec) * 1000000000u + static_cast<std::uint64_t>(now.tv_nsec);
    if (end_ns > from_ns && end_ns - from_ns > longest_ns_) longest_ns_ = end_ns - from_ns;
  }

  /// NVML registered after discovery (tracing began in an earlier static
  /// initialiser, as a global model loader's scope does, or a library that
  /// includes nvml.hpp was opened during the run): its GPUs' tracks join at
  /// this sample, after the missing entry discovery wrote (readers drop it
  /// then). One atomic load a sample until then.
  void look_for_nvml() noexcept {
    if (nvml_registered().loaded.load(std::memory_order_relaxed) == 0) return;
    sources_.nvml_unregistered = false;
    tracks_pending_ = true;
    find_nvml(sources_);  // it opens NVML (or says why not)
  }

  void see_thread(std::uint32_t thread_id, std::uint64_t os_tid) noexcept {
    thread_slot* free_slot = nullptr;
    for (thread_slot& slot : slots_) {
      if (slot.thread_id == thread_id) {
        slot.seen = true;
        return;
      }
      if (slot.thread_id == 0 && free_slot == nullptr) free_slot = &slot;
    }
    if (free_slot == nullptr) return;  // more than max_threads traced threads: the rest go unsampled
    free_slot->thread_id = thread_id;
    free_slot->os_tid = os_tid;
    free_slot->first_track = next_thread_track_;
    next_thread_track_ += 3;
    free_slot->seen = true;
    tracks_pending_ = true;
  }

  template <class Emit>
  void write_tracks(Emit& emit) noexcept {
    payload out{tracks_, sizeof tracks_};
    auto room_for = [&](std::size_t n) {
      if (out.room() >= n) return;
      emit(format::chunk_type::device_tracks, out.data, out.size);
      out.size = 0;
    };
    if (!sampler_defined_) {
      sampler_defined_ = true;
      const std::size_t b = out.open_record(static_cast<unsigned>(format::device_track_record::sampler));
      out.varint(period_ns_ / 1000);
      out.varint(sources_.file_count);
      out.varint(max_threads);
      out.close_record(b);
    }
    // What discovery found, then what joined later (NVML, look_for_nvml).
    for (; missing_defined_ < sources_.missing_count; ++missing_defined_) {
      room_for(track_record_room);
      const std::size_t m = out.open_record(static_cast<unsigned>(format::device_track_record::missing));
      out.string(sources_.missing[missing_defined_].name);
      out.string(sources_.missing[missing_defined_].why);
      out.close_record(m);
    }
    for (; system_defined_ < sources_.track_count; ++system_defined_) {
      room_for(track_record_room);
      write_track(out, static_cast<std::uint32_t>(system_defined_ + 1), sources_.tracks[system_defined_]);
    }
    for (thread_slot& slot : slots_) {
      if (slot.thread_id == 0 || slot.defined) continue;
      slot.defined = true;
      const format::device_quantity kinds[3] = {format::device_quantity::thread_cpu_ns_total,
                                                format::device_quantity::thread_wait_ns_total,
                                                format::device_quantity::thread_involuntary_total};
      for (std::uint32_t k = 0; k < 3; ++k) {
        room_for(track_record_room);
        track t;
        t.quantity = kinds[k];
        t.thread_id = slot.thread_id;
        copy_text(t.source, sizeof t.source, k < 2 ? "/proc/self/task/TID/schedstat" : "/proc/self/task/TID/status");
        write_track(out, slot.first_track + k, t);
      }
    }
    if (out.size != 0) emit(format::chunk_type::device_tracks, out.data, out.size);
    tracks_pending_ = false;
  }

  static void write_track(payload& out, std::uint32_t id, const track& t) noexcept {
    const std::size_t b = out.open_record(static_cast<unsigned>(format::device_track_record::track));
    out.varint(id);
    out.u8(static_cast<unsigned>(t.quantity));
    out.varint(t.index);
    out.varint(t.thread_id);
    out.varint(format::zigzag(t.maximum));
    out.string(t.name);
    out.string(t.source);
    out.close_record(b);
  }

  void put(payload& out, std::uint32_t track, std::int64_t value) noexcept {
    if (track == 0 || out.room() < pair_room + 64) return;
    out.varint(track);
    out.varint(format::zigzag(value));
  }

  /// Reads `fd` into text_; false (counted) when the read failed or was empty.
  bool read_text(int fd) noexcept {
    ++files_last_;
    const long got = read_at_start(fd, text_, sizeof text_);
    if (got < 0) ++failed_;
    if (got == 0) ++ignored_;
    return got > 0;
  }

  void read_file(const sampled_file& f, payload& out) noexcept {
    if (f.kind == file_kind::nvml) return read_nvml(f, out);
    if (!read_text(f.fd)) return;
    std::int64_t a = 0, b = 0;
    switch (f.kind) {
      case file_kind::level:
      case file_kind::total:
      case file_kind::signed_level:
        if (parse_whole(text_, f.kind == file_kind::signed_level, a)) put(out, f.track, a);
        else ++ignored_;
        break;
      case file_kind::power:
        if (!parse_whole(text_, false, a)) {
          ++ignored_;
        } else if (read_text(f.fd2)) {
          // Past 2^31 mV or mA (2000 kV, 2000 kA) a reading is garbage, and
          // the product would not fit.
          if (parse_whole(text_, false, b) && a < (std::int64_t{1} << 31) && b < (std::int64_t{1} << 31))
            put(out, f.track, a * b / 1000);
          else
            ++ignored_;
        }
        break;
      case file_kind::meminfo:
        if (parse_keyed(text_, "MemAvailable:", a)) put(out, f.track, a);
        else ++ignored_;
        break;
      case file_kind::cgroup_cpu_stat:
        if (parse_keyed(text_, "nr_throttled ", a)) put(out, f.track, a);
        else ++ignored_;
        if (parse_keyed(text_, "throttled_usec ", b)) put(out, f.track + 1, b);
        break;
      case file_kind::self_stat:
        read_self_stat(f, out);
        break;
      case file_kind::nvml:
        break;  // read_nvml
      case file_kind::proc_stat:
        read_proc_stat(out);
        break;
    }
  }

  /// An NVIDIA GPU's load, SM clock, temperature and power (NVML).
  void read_nvml(const sampled_file& f, payload& out) noexcept {
    nvml_reading g;
    if (!nvml_read(f.device, g)) return;  // a GPU NVML gave no handle: nothing read
    ++files_last_;
    if (g.load_percent >= 0) put(out, f.track, g.load_percent * 10);
    if (g.sm_mhz >= 0) put(out, f.track + 1, g.sm_mhz * 1000000);
    if (g.temperature_c >= 0) put(out, f.track + 2, g.temperature_c * 1000);
    if (g.power_mw >= 0) put(out, f.track + 3, g.power_mw);
  }

  /// /proc/self/stat: fields after the command's closing parenthesis (RSS
  /// in pages, major faults).
  void read_self_stat(const sampled_file& f, payload& out) noexcept {
    const char* p = std::strrchr(text_, ')');
    std::int64_t fields[25] = {};
    for (int field = 3; p != nullptr && field <= 24; ++field) {
      p = std::strchr(p + 1, ' ');
      if (p == nullptr) break;
      const char* q = p + 1;
      if (!parse_number(q, true, fields[field])) fields[field] = 0;
    }
    if (p == nullptr) {
      ++ignored_;
      return;
    }
    put(out, f.track, fields[24] * static_cast<std::int64_t>(page_kb_));
    put(out, f.track + 1, fields[12]);
  }

  /// /proc/stat (in text_), with the process's own CPU time: each CPU's
  /// busy share since the last sample, the load of other processes (all
  /// CPUs' busy time less the process's and the steal, 1000 = one CPU),
  /// and the steal: time a hypervisor ran something else on this
  /// machine's CPUs (a VM's stall the app cannot see otherwise).
  void read_proc_stat(payload& out) noexcept {
    for (const char* line = text_; line != nullptr && *line != '\0';) {
      if (std::strncmp(line, "cpu", 3) == 0) {
        const char* p = line + 3;
        std::int64_t cpu = -1;
        if (*p != ' ' && !parse_number(p, false, cpu)) cpu = -2;
        std::int64_t field[8] = {}, total = 0;
        bool ok = cpu >= -1 && cpu < static_cast<std::int64_t>(max_cpus);
        for (int i = 0; ok && i < 8; ++i) {
          ok = parse_number(p, false, field[i]);
          total += field[i];
        }
        ok = ok && total <= largest_value;  // so that a share's * 1000 fits
        if (!ok) {
          ++ignored_;
        } else {
          const std::int64_t busy = total - field[3] - field[4];  // less idle and iowait
          if (cpu < 0) {  // the "cpu" line: all CPUs
            all_cpus_shares(busy, field[7], total, out);
          } else {
            const auto at = static_cast<std::size_t>(cpu);
            const std::int64_t d_busy = busy - prev_busy_[at], d_total = total - prev_total_[at];
            if (prev_total_[at] != 0 && d_total > 0 && d_busy >= 0 && d_busy <= d_total)
              put(out, sources_.cpu_busy_track[at], d_busy * 1000 / d_total);
            prev_busy_[at] = busy;
            prev_total_[at] = total;
          }
        }
      }
      line = std::strchr(line, '\n');
      if (line != nullptr) ++line;
    }
  }

  /// Where an interval of the "cpu" line began: a count, the line's total,
  /// and the process's own jiffies then.
  struct cpu_interval {
    std::int64_t count = 0, total = 0, own = 0;
  };

  /// The share of all CPUs `count` grew by since `from` began, less the
  /// process's own jiffies `own` grew by (0 when not subtracted), 1000 =
  /// one CPU, into `permille`. False while the interval holds fewer than
  /// others_min_jiffies per CPU: both counts move in whole jiffies, so over
  /// a short interval (the last sample before exit, or a fast
  /// EDGETRACE_SAMPLE_MS) one stray jiffy would read as half a CPU or more;
  /// until then the interval grows. A count that went back starts it again
  /// here (also false).
  bool share_since(cpu_interval& from, std::int64_t count, std::int64_t total, std::int64_t own,
                   std::int64_t& permille) const noexcept {
    const std::int64_t d_count = count - from.count, d_total = total - from.total;
    bool ready = false;
    if (from.total != 0 && d_count >= 0 && d_count <= d_total) {
      const std::int64_t per_cpu = d_total / sources_.cpus_in_stat;
      if (per_cpu < others_min_jiffies) return false;  // the interval grows
      const std::int64_t share = d_count - (own - from.own);
      permille = share > 0 ? share * 1000 / per_cpu : 0;
      ready = true;
    }
    from = cpu_interval{count, total, own};
    return ready;
  }

  /// The load of other processes (all CPUs' busy jiffies less the process's
  /// own and the steal) and the steal itself: time a hypervisor ran
  /// something else on this machine's CPUs. 1000 = one CPU.
  void all_cpus_shares(std::int64_t busy, std::int64_t steal, std::int64_t total, payload& out) noexcept {
    if (sources_.cpus_in_stat == 0) return;
    std::int64_t permille = 0;
    if (own_jiffies_ >= 0 && share_since(others_, busy - steal, total, own_jiffies_, permille))
      put(out, sources_.others_track, permille);
    if (sources_.steal_track != 0 && share_since(steal_, steal, total, 0, permille)) put(out, sources_.steal_track, permille);
  }

  /// Reads /proc/self/task/TID/`file` into text_: open, read, close. False
  /// when the thread is gone (or the file unreadable).
  bool read_task_file(const thread_slot& slot, const char* file) noexcept {
    char path[96];
    std::snprintf(path, sizeof path, "/proc/self/task/%llu/%s", static_cast<unsigned long long>(slot.os_tid), file);
    const int fd = open_sampled(path);
    if (fd < 0) return false;
    const long got = read_at_start(fd, text_, sizeof text_);
    ::close(fd);
    return got > 0;
  }

  void read_thread(thread_slot& slot, payload& out) noexcept {
    std::int64_t cpu = 0, wait = 0, switches = 0;
    if (read_task_file(slot, "schedstat")) {
      ++files_last_;
      const char* p = text_;
      if (parse_number(p, false, cpu) && parse_number(p, false, wait)) {
        put(out, slot.first_track, cpu);
        put(out, slot.first_track + 1, wait);
      } else {
        ++ignored_;
      }
    }
    // status costs ten times schedstat (the kernel formats ~50 lines): a
    // thread that did not wait on a run queue since the last sample was
    // not preempted, and its count is the last one read.
    if (wait != slot.last_wait || slot.switches < 0) {
      if (read_task_file(slot, "status")) {
        ++files_last_;
        if (parse_keyed(text_, "nonvoluntary_ctxt_switches:", switches)) slot.switches = switches;
      }
      slot.last_wait = wait;
    }
    if (slot.switches >= 0) put(out, slot.first_track + 2, slot.switches);
  }

  source_set sources_;
  thread_slot slots_[max_threads];
  std::uint64_t period_ns_ = 0, last_ns_ = 0;
  std::uint64_t page_kb_ = 4;
  std::int64_t clock_ticks_ = 100;  ///< /proc/stat's jiffies a second
  std::uint32_t next_thread_track_ = max_tracks + 1;
  bool tracks_pending_ = false, sampler_defined_ = false;
  /// System-wide tracks and missing sources written so far.
  std::size_t system_defined_ = 0, missing_defined_ = 0;
  std::uint64_t samples_taken_ = 0, ignored_ = 0, failed_ = 0, cpu_ns_ = 0;
  std::uint64_t longest_ns_ = 0;  ///< the longest sample, from its tick to its last read (note_read_time)
  std::uint32_t files_last_ = 0;
  std::int64_t own_jiffies_ = -1;
  /// Where the "others" and the steal shares' intervals began (share_since).
  cpu_interval others_, steal_;
  /// Jiffies per CPU an "others" share needs at least: 1 jiffy in it is 10 %.
  static constexpr std::int64_t others_min_jiffies = 10;
  std::int64_t prev_busy_[max_cpus] = {}, prev_total_[max_cpus] = {};  ///< each CPU's line at the last look
  char text_[32768];  ///< the file being read; /proc/stat is the largest
  unsigned char tracks_[96u << 10];
  unsigned char samples_[64u << 10];
};

}  // namespace telemetry
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
