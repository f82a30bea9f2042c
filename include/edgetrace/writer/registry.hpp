// SPDX-License-Identifier: MIT
// The registry: categories and their mode bytes, the run-time filter, interned names, unloaded address ranges and flusher clients.
//
// Everything here is shared by every thread and lives in static storage
// (constant-initialised or built on first use), so it works before tracing
// starts and in any order of static initialisers. Registering never starts
// the runtime: the process room's entry points do that first
// (writer/process.hpp). Nothing here knows the runtime.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/core/text.hpp>
#include <edgetrace/core/thread_safety.hpp>
#include <edgetrace/face/hooks.hpp>
#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/tick.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/writer/capture_control.hpp>
#include <edgetrace/writer/clock.hpp>
#include <edgetrace/writer/env.hpp>
#include <edgetrace/writer/flusher_client.hpp>
#include <edgetrace/writer/platform/linux.hpp>
#include <edgetrace/writer/runtime_tu.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

// ------------------------------------------------------------ categories

/// Registry of categories (category_mutex, writer/capture_control.hpp).
inline category_state* category_list EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = nullptr;
inline std::uint32_t category_count EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = 0;
/// Run-time filter in force once tracing started (nullptr = all). Written
/// once before tracing_on is set.
inline const char* category_filter EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = nullptr;
inline bool tracing_on EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;
/// The clock_mode recording categories get (set once at start-up, before
/// tracing_on).
inline std::uint8_t recording_clock EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = clock_counter;

/// Bit i set: item i of EDGETRACE_CATEGORIES matched a category that
/// registered at some point (kept as bits, not names: a category's name
/// goes away with an unloaded library).
inline std::uint64_t filter_items_matched EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = 0;
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
/// not fit are left out.
inline char registered_names[1024] EDGETRACE_DETAIL_GUARDED_BY(category_mutex);
inline std::size_t registered_names_used EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = 0;

inline void remember_category_name_locked(const char* name) noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  const std::size_t length = std::strlen(name);
  for (std::size_t at = 0; at < registered_names_used; at += std::strlen(registered_names + at) + 1)
    if (std::strcmp(registered_names + at, name) == 0) return;
  if (registered_names_used + length + 1 > sizeof registered_names) return;
  std::memcpy(registered_names + registered_names_used, name, length + 1);
  registered_names_used += length + 1;
}

inline void mark_filter_matches_locked(const char* name) noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  std::uint64_t matched = 0;
  for_each_filter_item(category_filter, [&](unsigned index, const char* item, std::size_t length) {
    if (std::strlen(name) == length && std::strncmp(name, item, length) == 0) matched |= 1ull << index;
  });
  filter_items_matched |= matched;
}

/// EDGETRACE_NVTX=1 (scope hooks, face/hooks.hpp) was asked for: selected
/// categories also get mode_hooks once a hook table is installed, with or
/// without recording.
inline bool hooks_wanted EDGETRACE_DETAIL_GUARDED_BY(category_mutex) = false;

/// Recording happens while tracing is on and no capture source holds it back.
inline bool capturing_locked() noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  return tracing_on && capture().open_locked();
}

/// The mode byte category `name` should have now.
inline std::uint8_t category_flag_locked(const char* name) noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  if (!runtime_category_selected(category_filter, name)) return clock_off;
  std::uint8_t flag = capturing_locked() ? recording_clock : std::uint8_t{clock_off};
  if (tracing_on && capture().counting_marks_locked()) flag |= mode_count_marks;
  if (hooks_wanted && installed_hooks.load(std::memory_order_acquire) != nullptr) flag |= mode_hooks;
  return flag;
}

/// Sets every registered category's flag from the state above.
inline void apply_category_flags_locked() noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  for (category_state* c = category_list; c != nullptr; c = c->next)
    c->enabled.store(category_flag_locked(c->name), std::memory_order_relaxed);
}

/// Starts or stops recording in every category (scope hooks keep their
/// state).
inline void set_recording_locked(bool on) noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  tracing_on = on;
  apply_category_flags_locked();
}

/// Recomputes the mode bytes after a capture source changed; in a stream
/// this process writes (`stream_owned`), queues a recording record if the
/// effective state changed.
inline void update_capture_locked(format::capture_reason reason, bool stream_owned) noexcept
    EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  if (!tracing_on || !stream_owned) {
    apply_category_flags_locked();
    return;
  }
  const std::uint8_t clock = recording_clock;
  capture().log_change_locked(
      capturing_locked(), reason, [clock] { return ticks(clock); },
      []() EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS { apply_category_flags_locked(); });
}

/// Adds `state` to the registry (once: a second DSO's copy of the same
/// inline variable finds it registered) and gives it its mode byte.
inline void add_category(category_state& state) noexcept {
  mutex_lock lock(category_mutex);
  if (state.index != 0) return;
  state.index = ++category_count;
  state.next = category_list;
  category_list = &state;
  mark_filter_matches_locked(state.name);
  remember_category_name_locked(state.name);
  state.enabled.store(category_flag_locked(state.name), std::memory_order_relaxed);
}

/// Set when a category (and so possibly a shared object with its sites)
/// goes away; the flusher then forgets every site address it cached, since
/// a library loaded later may reuse them. Release/acquire.
inline std::atomic<bool> forget_sites{false};

/// Takes `state` out of the registry: nothing touches its memory afterwards.
inline void remove_category(category_state& state) noexcept {
  mutex_lock lock(category_mutex);
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

inline category_state* find_category_locked(std::uint32_t index) noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  for (category_state* c = category_list; c != nullptr; c = c->next)
    if (c->index == index) return c;
  return nullptr;
}

/// Copies category `index`'s name into `out` ("unknown" if it is gone):
/// copied under the lock, since an unregistered category's name may be in
/// an unloaded library.
inline void copy_category_name(std::uint32_t index, std::string& out) {
  mutex_lock lock(category_mutex);
  const category_state* c = find_category_locked(index);
  out = c != nullptr ? c->name : "unknown";
}

/// Reports each EDGETRACE_CATEGORIES item that named no category (checked at
/// exit: categories register lazily, so at start-up not all are known), in
/// one line with the categories that registered (sorted: a typo shows at a
/// glance) and the nearest one by edit distance, the same "did you mean" as
/// for unknown variables (writer/env.hpp). No allocation.
inline void report_unmatched_filter_locked() noexcept EDGETRACE_DETAIL_REQUIRES(category_mutex) {
  for_each_filter_item(category_filter, [](unsigned index, const char* item, std::size_t length)
                                             EDGETRACE_DETAIL_NO_THREAD_SAFETY_ANALYSIS {
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

// ------------------------------------------------------------ unloaded ranges

/// How long unregister_category waits for the flusher to encode what the
/// rings hold. Short: a dlclose must not stall the app on a slow output,
/// and what is still unread after it is dropped and counted, never read.
inline constexpr std::chrono::milliseconds unload_flush_timeout{1000};

/// Address range of a shared object unloaded while its records may still
/// sit in a ring (unregister_category's flush timed out, e.g. on a slow
/// output). The flusher reads a call-site descriptor only under
/// unloaded_ranges' lock, after checking these ranges, and drops (and counts) a
/// record whose site lies in one: it never reads an unloaded object's
/// memory. A range is retired once a whole flusher cycle has begun after it
/// was published (every ring was then drained past the unload), so a
/// library loaded later at the same address is read normally again.
struct unloaded_range {
  std::uintptr_t begin;
  std::uintptr_t end;
  std::uint64_t epoch;  ///< unloaded_ranges::epoch() when published
};

/// The ranges of the objects unloaded while their records may still sit in
/// a ring, with their lock: an unloading thread publishes, the flusher
/// reads a site only where no range holds it, forgets the sites it cached
/// from them, and retires them.
class unloaded_ranges {
 public:
  static constexpr std::size_t capacity = 16;

  /// A copy of the ranges, taken at one epoch.
  struct copy_of {
    unloaded_range ranges[capacity];
    std::size_t count = 0;
    std::uint64_t epoch = 0;
    bool holds(const void* address) const noexcept { return any_holds(ranges, count, address); }
  };

  /// The unloading thread, while the object is still mapped: marks `range`
  /// unloaded; once this returns (the flusher's site reads hold the lock)
  /// no read of the range can start. Full: the last range is widened
  /// (drops more, never reads more).
  void publish(unloaded_range range) noexcept EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    if (range.begin == range.end) return;
    mutex_lock lock(mutex_);
    range.epoch = epoch_.load(std::memory_order_relaxed) + 1;
    if (count_ < capacity) {
      ranges_[count_++] = range;
    } else {
      unloaded_range& last = ranges_[capacity - 1];
      last = {std::min(last.begin, range.begin), std::max(last.end, range.end), range.epoch};
    }
    epoch_.store(range.epoch, std::memory_order_release);
  }

  /// Bumped with each range published (under the lock; release). The
  /// flusher loads it (acquire) after a ring's write position, so a record
  /// pushed after an unload is seen with that unload's range.
  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }

  /// Calls `read()` unless a range holds `address`, under the lock: the
  /// object cannot be marked unloaded (and so cannot be unmapped) meanwhile.
  /// False when a range holds it.
  template <class Read>
  bool read_unless_unloaded(const void* address, Read&& read) EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    if (any_holds(ranges_, count_, address)) return false;
    read();
    return true;
  }

  /// The ranges published so far, and the epoch they make.
  copy_of copy() EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    copy_of out;
    mutex_lock lock(mutex_);
    out.count = count_;
    std::copy(ranges_, ranges_ + count_, out.ranges);
    out.epoch = epoch_.load(std::memory_order_relaxed);
    return out;
  }

  /// Drops the ranges published up to `epoch` (a whole flusher cycle began
  /// after they were seen: no ring holds their records any more).
  void retire_up_to(std::uint64_t epoch) noexcept EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < count_; ++i)
      if (ranges_[i].epoch > epoch) ranges_[kept++] = ranges_[i];
    count_ = kept;
  }

  /// Never held with another lock: fork takes it with the others (writer/process.hpp, lock_all).
  mutex& lock_for_fork() noexcept EDGETRACE_DETAIL_RETURN_CAPABILITY(mutex_) { return mutex_; }

 private:
  static bool any_holds(const unloaded_range* ranges, std::size_t count, const void* address) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(address);
    for (std::size_t i = 0; i < count; ++i)
      if (a >= ranges[i].begin && a < ranges[i].end) return true;
    return false;
  }

  mutex mutex_;
  unloaded_range ranges_[capacity] EDGETRACE_DETAIL_GUARDED_BY(mutex_) = {};
  std::size_t count_ EDGETRACE_DETAIL_GUARDED_BY(mutex_) = 0;
  std::atomic<std::uint64_t> epoch_{0};
};

/// The process's.
inline unloaded_ranges unloaded_libraries;

/// The addresses of the shared object holding `address`; empty for the
/// executable, or if none holds it.
inline unloaded_range object_range(const void* address) noexcept {
  const os::loaded_object object = os::object_holding(reinterpret_cast<std::uintptr_t>(address));
  return {object.begin, object.end, 0};
}

// ------------------------------------------------------------ interned names

/// An intern table: names by id (1-based, never freed, so hooks running
/// during exit can still read them) and ids by name.
class name_table {
 public:
  /// Distinct names a table keeps: about 8 MB with their ids and the
  /// flusher's definitions. An app that interns a name per request, frame
  /// or tensor address would otherwise grow for as long as it runs (about
  /// 130 bytes a name: 128 MB for a million) and make every converter's
  /// table as long. Past it, intern() hands out one shared id whose name
  /// says so, and one stderr line says it once.
  static constexpr std::size_t max_names = std::size_t{1} << 16;
  static constexpr const char* overflow_name = "(interned names past 65536)";

  /// Id of `name`, added if new (the overflow name's once the table is full).
  std::uint32_t intern(std::string name) EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    auto found = ids_.find(name);
    if (found != ids_.end()) return found->second;
    if (names_.size() >= max_names) return overflow_id_locked();
    return add_locked(std::move(name));
  }
  /// The name of `id`, or null. Stable: names are never freed.
  const char* name(std::uint32_t id) EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    return id >= 1 && id <= names_.size() ? names_[id - 1]->c_str() : nullptr;
  }
  /// Copies name `id` into `out` ("(unnamed)" if none).
  void copy_name(std::uint32_t id, std::string& out) EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    out = id >= 1 && id <= names_.size() ? *names_[id - 1] : "(unnamed)";
  }
  /// Every name, in id order (a forked child keeps its parent's ids).
  std::vector<std::string> copy_all() EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    std::vector<std::string> all;
    all.reserve(names_.size());
    for (const std::string* name : names_) all.push_back(*name);
    return all;
  }
  /// A forked child's table: the parent's names under the same ids
  /// (copy_all), its overflow id included, said by the parent already.
  void adopt_all(std::vector<std::string> names) EDGETRACE_DETAIL_EXCLUDES(mutex_) {
    mutex_lock lock(mutex_);
    for (std::string& name : names) {
      const bool overflow = name == overflow_name;
      const std::uint32_t id = add_locked(std::move(name));
      if (overflow) overflow_id_ = id;
    }
  }
  /// fork() and quick_exit take it so that no child or exit path finds it
  /// held.
  mutex& table_mutex() noexcept EDGETRACE_DETAIL_RETURN_CAPABILITY(mutex_) { return mutex_; }

 private:
  std::uint32_t add_locked(std::string name) EDGETRACE_DETAIL_REQUIRES(mutex_) {
    const auto id = static_cast<std::uint32_t>(names_.size() + 1);
    auto inserted = ids_.emplace(std::move(name), id);
    names_.push_back(&inserted.first->first);
    return id;
  }
  /// The shared id of every name past max_names (added, and said, once).
  std::uint32_t overflow_id_locked() EDGETRACE_DETAIL_REQUIRES(mutex_) {
    if (overflow_id_ != 0) return overflow_id_;
    overflow_id_ = add_locked(overflow_name);
    report("%zu distinct names interned (edgetrace::intern): later new names are recorded as \"%s\" "
           "(intern a bounded set: layer or operator names, not request ids or addresses)",
           max_names, overflow_name);
    return overflow_id_;
  }

  mutex mutex_;
  std::uint32_t overflow_id_ EDGETRACE_DETAIL_GUARDED_BY(mutex_) = 0;
  std::unordered_map<std::string, std::uint32_t> ids_ EDGETRACE_DETAIL_GUARDED_BY(mutex_);
  std::vector<const std::string*> names_ EDGETRACE_DETAIL_GUARDED_BY(mutex_);  ///< id - 1 -> name
};

/// Names interned while scope hooks run without a dump (EDGETRACE_NVTX=1,
/// no EDGETRACE_OUTPUT): only the hooks see them. Never freed.
inline name_table& hook_only_names() {
  static name_table* table = new name_table;
  return *table;
}

inline bool hooks_only_active() noexcept {
  mutex_lock lock(category_mutex);
  return hooks_wanted && !tracing_on;
}

// ------------------------------------------------------------ flusher clients
// (writer/flusher_client.hpp)

/// Client list. register_flusher_client pushes under client_mutex and
/// publishes with a release store; the flusher's acquire load then sees
/// every field of each client it reaches. Clients are never removed.
inline mutex client_mutex;
inline std::atomic<flusher_client*> client_list{nullptr};

EDGETRACE_DETAIL_API void register_flusher_client(flusher_client& client) noexcept {
  mutex_lock lock(client_mutex);
  for (flusher_client* c = client_list.load(std::memory_order_relaxed); c != nullptr; c = c->next)
    if (c == &client) return;
  client.next = client_list.load(std::memory_order_relaxed);
  client_list.store(&client, std::memory_order_release);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
