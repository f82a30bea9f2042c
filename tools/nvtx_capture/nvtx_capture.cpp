// SPDX-License-Identifier: MIT
// libedgetrace-nvtx.so: an NVTX injection library that turns the NVTX
// ranges, marks and thread names of any program (TensorRT, libtorch, cuDNN,
// DALI, the app's own) into edgetrace spans, instants and track names:
//
//   NVTX_INJECTION64_PATH=/usr/local/lib/libedgetrace-nvtx.so EDGETRACE_OUTPUT=run.etr ./app
//
// NVTX loads it at the program's first NVTX call and hands it its callback
// tables (one per copy of NVTX in the process: each library that includes
// the NVTX 3 headers has its own). What each call becomes:
//   nvtxRangePush*/Pop, nvtxDomainRangePushEx/Pop   a span of the calling thread, nested
//   nvtxRangeStart*/End, nvtxDomainRangeStartEx/End a span from start to end (on any threads),
//                                                   on the track "NVTX start/end ranges"
//   nvtxMark*, nvtxDomainMarkEx                     an instant
//   nvtxNameOsThread*                               the track name of that OS thread
//   nvtxDomainCreate*                               the category of that domain's events
//                                                   (the global domain: category "nvtx")
//   numeric payloads                                the span's argument "payload"
// Names are interned once: a registered string is resolved when registered;
// a message pointer is cached per thread (and its text compared, so a
// reused buffer with a new name is still right). After a name's first
// sight a range takes no lock and allocates nothing. The domain "edgetrace"
// is edgetrace's own forwarding (EDGETRACE_NVTX=1): those ranges are in the
// dump already, so they are skipped, never looped back.
//
// One runtime per process: the edgetrace headers keep default visibility
// (the rest of this file is hidden), so an app that also traces with
// edgetrace and exports its symbols shares its runtime and writer with
// this library; otherwise this library's runtime is a second writer of the
// same dump (docs/RELIABILITY.md, "Several shared objects"). The file is
// built twice, once per runtime build: libedgetrace-nvtx-header-only.so,
// and libedgetrace-nvtx-separate.so (EDGETRACE_SEPARATE_RUNTIME=1, with
// edgetrace::runtime linked in); libedgetrace-nvtx.so (entry.cpp), which
// NVTX loads, loads the one whose runtime the app runs, so an app linked
// with edgetrace::runtime shares its runtime too. Each starts its runtime
// when it is loaded, as every traced object does.
#include <nvtx3/nvToolsExt.h>

#pragma GCC visibility push(default)
#include <edgetrace/edgetrace.hpp>
#pragma GCC visibility pop

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

namespace et = edgetrace;
namespace etd = edgetrace::detail;

/// The file name every site this library makes carries: `edgetrace info`
/// finds the capture's own counters by it.
constexpr const char* site_file = "edgetrace-nvtx";

/// One NVTX domain: the edgetrace category of its events, and the sites of
/// its payload arguments. Created once per name, never freed (NVTX handles
/// live as long as the process).
struct domain {
  std::string name;
  etd::category_state category;
  /// "edgetrace": edgetrace's own forwarding, already in the dump.
  bool forwarded;
  etd::site payload_int;
  etd::site payload_float;

  explicit domain(const char* domain_name)
      : name(domain_name),
        category(name.c_str(), true),
        forwarded(name == "edgetrace"),
        payload_int{&category, "payload", site_file, 0, et::format::site_kind::arg},
        payload_float{&category, "payload", site_file, 0, et::format::site_kind::arg_float} {}
  domain(const domain&) = delete;
  domain& operator=(const domain&) = delete;

  /// The clock its events are recorded with now; clock_off: not recording
  /// (tracing off, filtered out by EDGETRACE_CATEGORIES, paused).
  std::uint8_t clock() const noexcept {
    return static_cast<std::uint8_t>(category.enabled.load(std::memory_order_relaxed) & etd::mode_clock_bits);
  }
};

/// A string registered with nvtxDomainRegisterString*: resolved once.
struct registered_string {
  std::uint32_t id;
};

/// What one event's attributes say, resolved.
struct label {
  std::uint32_t name_id = 0;
  bool has_payload = false;
  bool payload_is_float = false;
  std::uint64_t payload_bits = 0;
};

/// Counts of what could not be recorded as asked; written as counter
/// samples at exit (`edgetrace info` says them). Relaxed: counts only.
struct capture_counts {
  std::atomic<std::uint64_t> pops_without_push{0};
  std::atomic<std::uint64_t> too_deep{0};
  std::atomic<std::uint64_t> ends_without_start{0};
  std::atomic<std::uint64_t> starts_refused{0};
  std::atomic<std::uint64_t> open_at_exit{0};
};

// ------------------------------------------------------------ shared state

/// The tables below are allocated once tracing is known to be on (at the
/// first InitializeInjectionNvtx2) and never freed: NVTX handles and sites
/// live as long as the process, and a thread may still make an NVTX call
/// while the process exits. Without EDGETRACE_OUTPUT nothing is allocated,
/// and NVTX unloads the library again.
///
/// Everything below is written under `shared_mutex` (first sight of a
/// domain, a registered string, a mark site, a thread name), and read
/// without it only through pointers handed out under it, which stay valid
/// for the process's life. Names are the runtime's interned names
/// (edgetrace::intern): interned once, their text never freed.
std::mutex shared_mutex;
std::map<std::string, domain*>* domains = nullptr;
std::deque<registered_string>* registered = nullptr;
/// Instant sites by (domain, name id), named by the interned names' texts.
std::map<std::pair<const domain*, std::uint32_t>, etd::site*>* instant_sites = nullptr;
/// Names given to other threads (nvtxNameOsThread of another tid), taken by
/// that thread at its next NVTX call; `names_given` is bumped (release)
/// after each change, so a thread looks only when it moved.
std::map<std::uint64_t, std::string>* thread_names = nullptr;
std::atomic<std::uint32_t> names_given{0};

domain* global_domain = nullptr;  ///< set once in InitializeInjectionNvtx2, before any callback is installed
capture_counts counts;


domain* domain_named(const char* name) {
  std::lock_guard<std::mutex> lock(shared_mutex);
  const std::string key = name != nullptr ? name : "";
  auto it = domains->find(key);
  if (it != domains->end()) return it->second;
  auto* d = new domain(key.c_str());
  etd::register_category(d->category);  // starts the runtime on the first domain
  domains->emplace(key, d);
  return d;
}

std::string utf8_of(const wchar_t* text) {
  std::string out;
  if (text == nullptr) return out;
  char bytes[4];
  for (; *text != L'\0'; ++text)
    out.append(bytes, etd::encode_utf8(static_cast<unsigned long>(static_cast<std::uint32_t>(*text)), bytes));
  return out;
}

// ------------------------------------------------------------ per thread

/// How deep one thread's push/pop ranges are kept; deeper pushes are
/// counted (too_deep) and their pops matched, not recorded.
constexpr std::uint32_t max_depth = 128;
constexpr std::size_t cache_slots = 64;  // a power of two

/// One open push/pop range: its span word (0: not recorded), begin tick and
/// clock, and its domain (a pop closes the innermost range of its domain).
struct open_range {
  std::uint64_t word;
  std::uint64_t begin;
  const domain* owner;
  std::uint8_t clock;
};

/// A message pointer seen before on this thread, with the name it had
/// (`text`: the runtime's interned copy its current text is compared with).
struct name_slot {
  const void* key = nullptr;
  const char* text = nullptr;
  std::uint32_t id = 0;
};

struct mark_slot {
  const domain* owner = nullptr;
  std::uint32_t id = 0;
  const etd::site* site = nullptr;
};

/// Owned by its thread, allocated at its first NVTX call (7 KiB: too large
/// for the static TLS a dlopen'ed library may take) and freed at its exit.
struct thread_state {
  std::uint32_t depth = 0;     ///< entries of `stack` in use
  std::uint32_t overflow = 0;  ///< pushes past max_depth still open
  std::uint32_t names_seen = 0;
  bool tid_known = false;
  std::uint64_t tid = 0;
  open_range stack[max_depth];
  name_slot names[cache_slots];
  mark_slot marks[cache_slots];
};

/// The calling thread's state: one initial-exec TLS load (8 bytes of static
/// TLS), then a null test; the first call allocates it.
thread_local thread_state* current_state __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t state_key;  ///< its destructor frees a thread's state at the thread's exit

void count_open(const thread_state& t);

void free_state(void* state) {
  auto* t = static_cast<thread_state*>(state);
  count_open(*t);
  current_state = nullptr;  // a later NVTX call in another key's destructor starts afresh
  delete t;
}

thread_state& new_state() {
  current_state = new thread_state;
  pthread_setspecific(state_key, current_state);
  return *current_state;
}

inline thread_state& this_state() {
  thread_state* t = current_state;
  return __builtin_expect(t != nullptr, 1) ? *t : new_state();
}

std::size_t slot_of(const void* key) noexcept {
  const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
  return static_cast<std::size_t>((bits >> 4) ^ (bits >> 12)) & (cache_slots - 1);
}

std::uint64_t own_tid(thread_state& t) {
  if (!t.tid_known) {
    t.tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
    t.tid_known = true;
  }
  return t.tid;
}

/// Takes a name another thread gave this one (nvtxNameOsThread), if any
/// was given since this thread last looked.
void take_given_name(thread_state& t) {
  const std::uint32_t given = names_given.load(std::memory_order_acquire);
  if (given == t.names_seen) return;
  t.names_seen = given;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(shared_mutex);
    auto it = thread_names->find(own_tid(t));
    if (it == thread_names->end()) return;
    name = it->second;
    thread_names->erase(it);
  }
  et::set_thread_name(name.c_str());
}

/// Interns `text` and keeps it in `slot` for message pointer `key` (not
/// when the runtime has no name for it: the next call asks again).
std::uint32_t remember(name_slot& slot, const void* key, const char* text, std::size_t size) {
  const std::uint32_t id = etd::intern(text, size).id;
  if (const char* stable = etd::interned_name(id)) slot = name_slot{key, stable, id};
  return id;
}

std::uint32_t ascii_id(thread_state& t, const char* text) {
  if (text == nullptr) text = "";
  name_slot& slot = t.names[slot_of(text)];
  if (slot.key == text && std::strcmp(text, slot.text) == 0) return slot.id;
  return remember(slot, text, text, std::strlen(text));
}

std::uint32_t wide_id(thread_state& t, const wchar_t* text) {
  const std::string utf8 = utf8_of(text);  // wide names are rare: converted at each call
  name_slot& slot = t.names[slot_of(text)];
  if (slot.key == text && utf8 == slot.text) return slot.id;
  return remember(slot, text, utf8.data(), utf8.size());
}

/// The name and payload of an event's attributes (fields past what the
/// caller's NVTX version filled in are not read).
label label_of(thread_state& t, const nvtxEventAttributes_t* a) {
  label l;
  if (a == nullptr || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message) {
    l.name_id = ascii_id(t, "");
    return l;
  }
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: l.name_id = ascii_id(t, a->message.ascii); break;
    case NVTX_MESSAGE_TYPE_UNICODE: l.name_id = wide_id(t, a->message.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      l.name_id = a->message.registered != nullptr
                      ? reinterpret_cast<const registered_string*>(a->message.registered)->id
                      : ascii_id(t, "");
      break;
    default: l.name_id = ascii_id(t, ""); break;
  }
  l.has_payload = true;
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: l.payload_bits = a->payload.ullValue; break;
    case NVTX_PAYLOAD_TYPE_INT64: l.payload_bits = static_cast<std::uint64_t>(a->payload.llValue); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: l.payload_bits = a->payload.uiValue; break;
    case NVTX_PAYLOAD_TYPE_INT32:
      l.payload_bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(a->payload.iValue));
      break;
    case NVTX_PAYLOAD_TYPE_DOUBLE:
      l.payload_is_float = true;
      l.payload_bits = etd::counter_bits(a->payload.dValue);
      break;
    case NVTX_PAYLOAD_TYPE_FLOAT:
      l.payload_is_float = true;
      l.payload_bits = etd::counter_bits(static_cast<double>(a->payload.fValue));
      break;
    default: l.has_payload = false; break;
  }
  return l;
}

const domain& domain_of(nvtxDomainHandle_t handle) noexcept {
  return handle != nullptr ? *reinterpret_cast<const domain*>(handle) : *global_domain;
}

// ------------------------------------------------------------ events

/// Ranges a thread leaves open when it exits (or when the process does).
void count_open(const thread_state& t) {
  if (t.depth + t.overflow != 0) counts.open_at_exit.fetch_add(t.depth + t.overflow, std::memory_order_relaxed);
}

// Each event takes `resolve()`, which gives its name and payload, and calls
// it only when its domain records: a filtered or paused domain costs no
// name lookup.

/// Pushes a push/pop range; returns its level (NVTX's return value).
template <class Resolve>
int push_range(const domain& d, thread_state& t, Resolve&& resolve) {
  take_given_name(t);
  if (t.depth == max_depth) {
    counts.too_deep.fetch_add(1, std::memory_order_relaxed);
    return static_cast<int>(max_depth + t.overflow++);
  }
  open_range& r = t.stack[t.depth];
  r.owner = &d;
  r.clock = d.clock();
  if (r.clock == etd::clock_off) {
    r.word = 0;
  } else {
    const label l = resolve();
    r.word = etd::pack_named(l.name_id, d.category.index);
    r.begin = etd::ticks(r.clock);
    // After the begin tick: the reader gives the argument to this span.
    if (l.has_payload) {
      const etd::site& key = l.payload_is_float ? d.payload_float : d.payload_int;
      etd::push(etd::pack_site(&key), etd::ticks(r.clock), l.payload_bits);
    }
  }
  return static_cast<int>(t.depth++);
}

int pop_range(const domain& d, thread_state& t) {
  if (t.overflow != 0) return static_cast<int>(max_depth + --t.overflow);
  std::uint32_t i = t.depth;
  while (i != 0 && t.stack[i - 1].owner != &d) --i;
  if (i == 0) {
    counts.pops_without_push.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  const open_range r = t.stack[i - 1];
  // Another domain's ranges above it stay open (NVTX keeps a stack per domain).
  for (; i < t.depth; ++i) t.stack[i - 1] = t.stack[i];
  --t.depth;
  if (r.word != 0) etd::push(r.word, r.begin, etd::ticks(r.clock));
  return static_cast<int>(t.depth);
}

/// Ranges started with nvtxRangeStart*: a fixed table of slots claimed
/// without a lock. A range id is (generation << 32 | slot + 1), so an end
/// with a stale or unknown id is told apart from a live one. An ended range
/// waits in its slot for the ranges thread, which records it on a track of
/// its own ("NVTX start/end ranges"): such a range may start on one thread
/// and end on another, and it is no part of either one's call stack.
constexpr std::uint32_t start_slots = 4096;
constexpr std::uint64_t id_not_recorded = std::uint64_t{1} << 63;  ///< started while not recording
enum : std::uint32_t { slot_free = 0, slot_busy = 1, slot_open = 2, slot_ended = 3 };
struct started_range {
  /// slot_free → slot_busy (the starter claims it) → slot_open (release,
  /// after the fields) → slot_busy (the ender claims it) → slot_ended
  /// (release, after `end`) → slot_free (the ranges thread, once pushed).
  std::atomic<std::uint32_t> state{slot_free};
  std::uint32_t generation = 0;  ///< written only by whoever holds the slot busy
  std::uint64_t word = 0;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint8_t clock = 0;
};
started_range* started = nullptr;  ///< start_slots of them
std::atomic<std::uint32_t> start_hint{0};

/// The ranges thread: started at the first recorded nvtxRangeStart, it
/// wakes every 10 ms, pushes the ended ranges in end order and frees their
/// slots; stopped (after a last pass) at exit, before the runtime's own
/// exit pass writes its ring.
struct ranges_thread {
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;          ///< under mutex
  std::thread* thread = nullptr;  ///< under mutex
  std::once_flag launched;

  void run() {
    et::set_thread_name("NVTX start/end ranges");
    std::vector<std::uint32_t> ended;
    ended.reserve(start_slots);
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      const bool last = stop;
      lock.unlock();
      push_ended(ended);
      lock.lock();
      if (last) return;
      wake.wait_for(lock, std::chrono::milliseconds(10));
    }
  }

  static void push_ended(std::vector<std::uint32_t>& ended) {
    ended.clear();
    for (std::uint32_t i = 0; i < start_slots; ++i)
      if (started[i].state.load(std::memory_order_acquire) == slot_ended) ended.push_back(i);
    std::sort(ended.begin(), ended.end(), [](std::uint32_t x, std::uint32_t y) { return started[x].end < started[y].end; });
    for (const std::uint32_t i : ended) {
      etd::push(started[i].word, started[i].begin, started[i].end);
      started[i].state.store(slot_free, std::memory_order_release);
    }
  }

  void start() {
    std::call_once(launched, [this] {
      std::lock_guard<std::mutex> lock(mutex);
      thread = new std::thread([this] { run(); });
    });
  }

  /// At exit: the last pass, then the thread is gone.
  void finish() {
    std::thread* t;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
      t = thread;
      thread = nullptr;
    }
    wake.notify_all();
    if (t != nullptr) {
      t->join();
      delete t;
    }
  }
};
ranges_thread* ranges = nullptr;

/// In a forked child the ranges thread is gone (and its mutex may be held):
/// a fresh one starts at the child's next recorded start. Ranges the parent
/// had started stay in the table and end as usual in either process.
void after_fork_in_child() { ranges = new ranges_thread; }

void allocate_tables() {
  domains = new std::map<std::string, domain*>;
  registered = new std::deque<registered_string>;
  instant_sites = new std::map<std::pair<const domain*, std::uint32_t>, etd::site*>;
  thread_names = new std::map<std::uint64_t, std::string>;
  started = new started_range[start_slots];
  ranges = new ranges_thread;
}

template <class Resolve>
nvtxRangeId_t start_range(const domain& d, Resolve&& resolve) {
  const std::uint8_t clock = d.clock();
  if (clock == etd::clock_off) return id_not_recorded;
  const std::uint64_t begin = etd::ticks(clock);
  const std::uint64_t word = etd::pack_named(resolve().name_id, d.category.index);
  ranges->start();
  const std::uint32_t first = start_hint.fetch_add(1, std::memory_order_relaxed);
  for (std::uint32_t probe = 0; probe < start_slots; ++probe) {
    const std::uint32_t i = (first + probe) % start_slots;
    std::uint32_t expected = slot_free;
    if (!started[i].state.compare_exchange_strong(expected, slot_busy, std::memory_order_acquire)) continue;
    started_range& s = started[i];
    s.word = word;
    s.begin = begin;
    s.clock = clock;
    const std::uint32_t generation = ++s.generation;
    s.state.store(slot_open, std::memory_order_release);
    return (std::uint64_t{generation} << 32) | (i + 1);
  }
  counts.starts_refused.fetch_add(1, std::memory_order_relaxed);
  return id_not_recorded;
}

void end_range(nvtxRangeId_t id) {
  if (id == id_not_recorded) return;
  const std::uint64_t slot = id & 0xFFFFFFFFu;
  if (slot == 0 || slot > start_slots) {
    counts.ends_without_start.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  started_range& s = started[slot - 1];
  std::uint32_t expected = slot_open;
  if (!s.state.compare_exchange_strong(expected, slot_busy, std::memory_order_acquire)) {
    counts.ends_without_start.fetch_add(1, std::memory_order_relaxed);  // ended twice, or never started
    return;
  }
  if (s.generation != static_cast<std::uint32_t>(id >> 32)) {  // an older range's id: this slot is another's now
    s.state.store(slot_open, std::memory_order_release);
    counts.ends_without_start.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  s.end = etd::ticks(s.clock);
  s.state.store(slot_ended, std::memory_order_release);
}

const etd::site* mark_site(thread_state& t, const domain& d, std::uint32_t id) {
  mark_slot& slot = t.marks[(id * 0x9E3779B1u ^ static_cast<std::uint32_t>(slot_of(&d))) & (cache_slots - 1)];
  if (slot.owner == &d && slot.id == id && slot.site != nullptr) return slot.site;
  std::lock_guard<std::mutex> lock(shared_mutex);
  etd::site*& site = (*instant_sites)[{&d, id}];
  if (site == nullptr) {
    const char* text = etd::interned_name(id);
    site = new etd::site{&d.category, text != nullptr ? text : "", site_file, 0, et::format::site_kind::instant};
  }
  slot = mark_slot{&d, id, site};
  return site;
}

template <class Resolve>
void mark(const domain& d, thread_state& t, Resolve&& resolve) {
  take_given_name(t);
  const std::uint8_t clock = d.clock();
  if (clock == etd::clock_off) return;
  etd::push(etd::pack_site(mark_site(t, d, resolve().name_id)), etd::ticks(clock), 0);
}

void name_thread(std::uint32_t tid, std::string name) {
  thread_state& t = this_state();
  if (tid == own_tid(t)) {
    et::set_thread_name(name.c_str());
    return;
  }
  std::lock_guard<std::mutex> lock(shared_mutex);
  (*thread_names)[tid] = std::move(name);
  names_given.fetch_add(1, std::memory_order_release);
}

// ------------------------------------------------------------ the NVTX callbacks

/// The resolvers of the three ways an event is named (push_range's
/// comment): its attributes, an ASCII message, a wide one.
auto by_attributes(thread_state& t, const nvtxEventAttributes_t* a) {
  return [&t, a] { return label_of(t, a); };
}
auto by_ascii(thread_state& t, const char* text) {
  return [&t, text] { return label{ascii_id(t, text)}; };
}
auto by_wide(thread_state& t, const wchar_t* text) {
  return [&t, text] { return label{wide_id(t, text)}; };
}

void NVTX_API mark_ex(const nvtxEventAttributes_t* a) {
  thread_state& t = this_state();
  mark(*global_domain, t, by_attributes(t, a));
}
void NVTX_API mark_a(const char* text) {
  thread_state& t = this_state();
  mark(*global_domain, t, by_ascii(t, text));
}
void NVTX_API mark_w(const wchar_t* text) {
  thread_state& t = this_state();
  mark(*global_domain, t, by_wide(t, text));
}
nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t* a) {
  return start_range(*global_domain, by_attributes(this_state(), a));
}
nvtxRangeId_t NVTX_API range_start_a(const char* text) { return start_range(*global_domain, by_ascii(this_state(), text)); }
nvtxRangeId_t NVTX_API range_start_w(const wchar_t* text) {
  return start_range(*global_domain, by_wide(this_state(), text));
}
void NVTX_API range_end(nvtxRangeId_t id) { end_range(id); }
int NVTX_API range_push_ex(const nvtxEventAttributes_t* a) {
  thread_state& t = this_state();
  return push_range(*global_domain, t, by_attributes(t, a));
}
int NVTX_API range_push_a(const char* text) {
  thread_state& t = this_state();
  return push_range(*global_domain, t, by_ascii(t, text));
}
int NVTX_API range_push_w(const wchar_t* text) {
  thread_state& t = this_state();
  return push_range(*global_domain, t, by_wide(t, text));
}
int NVTX_API range_pop() { return pop_range(*global_domain, this_state()); }
// NVTX categories (and colours) have no place in the dump: dropped (README).
void NVTX_API name_category_a(std::uint32_t, const char*) {}
void NVTX_API name_category_w(std::uint32_t, const wchar_t*) {}
void NVTX_API name_os_thread_a(std::uint32_t tid, const char* name) { name_thread(tid, name != nullptr ? name : ""); }
void NVTX_API name_os_thread_w(std::uint32_t tid, const wchar_t* name) { name_thread(tid, utf8_of(name)); }

void NVTX_API domain_mark_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  const domain& d = domain_of(h);
  if (d.forwarded) return;
  thread_state& t = this_state();
  mark(d, t, by_attributes(t, a));
}
nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  const domain& d = domain_of(h);
  return d.forwarded ? id_not_recorded : start_range(d, by_attributes(this_state(), a));
}
void NVTX_API domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end_range(id); }
int NVTX_API domain_range_push_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  const domain& d = domain_of(h);
  if (d.forwarded) return 0;
  thread_state& t = this_state();
  return push_range(d, t, by_attributes(t, a));
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t h) {
  const domain& d = domain_of(h);
  return d.forwarded ? 0 : pop_range(d, this_state());
}
nvtxResourceHandle_t NVTX_API domain_resource_create(nvtxDomainHandle_t, nvtxResourceAttributes_t*) { return nullptr; }
void NVTX_API domain_resource_destroy(nvtxResourceHandle_t) {}
void NVTX_API domain_name_category_a(nvtxDomainHandle_t, std::uint32_t, const char*) {}
void NVTX_API domain_name_category_w(nvtxDomainHandle_t, std::uint32_t, const wchar_t*) {}
nvtxStringHandle_t register_string(const std::string& text) {
  const registered_string name{et::intern(text).id};
  std::lock_guard<std::mutex> lock(shared_mutex);
  registered->push_back(name);
  return reinterpret_cast<nvtxStringHandle_t>(&registered->back());
}
nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t, const char* text) {
  return register_string(text != nullptr ? text : "");
}
nvtxStringHandle_t NVTX_API domain_register_string_w(nvtxDomainHandle_t, const wchar_t* text) {
  return register_string(utf8_of(text));
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(domain_named(name));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(domain_named(utf8_of(name).c_str()));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}  // kept: a late event of the domain still finds it
void NVTX_API initialize(const void*) {}

/// A handler as the function tables hold it.
template <class Function>
NvtxFunctionPointer handler(Function function) {
  return reinterpret_cast<NvtxFunctionPointer>(function);
}

/// Puts each of the capture's handlers for `module` into its slot of that
/// module's function table; false when NVTX has no table for the module.
bool install(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module) {
  struct slot {
    NvtxCallbackModule module;
    unsigned id;
    NvtxFunctionPointer function;
  };
  const slot slots[] = {
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, handler(&mark_ex)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, handler(&mark_a)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkW, handler(&mark_w)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, handler(&range_start_ex)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA, handler(&range_start_a)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartW, handler(&range_start_w)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeEnd, handler(&range_end)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, handler(&range_push_ex)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, handler(&range_push_a)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, handler(&range_push_w)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, handler(&range_pop)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameCategoryA, handler(&name_category_a)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameCategoryW, handler(&name_category_w)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameOsThreadA, handler(&name_os_thread_a)},
      {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_NameOsThreadW, handler(&name_os_thread_w)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, handler(&domain_mark_ex)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, handler(&domain_range_start_ex)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, handler(&domain_range_end)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, handler(&domain_range_push_ex)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, handler(&domain_range_pop)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainResourceCreate, handler(&domain_resource_create)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainResourceDestroy, handler(&domain_resource_destroy)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryA, handler(&domain_name_category_a)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainNameCategoryW, handler(&domain_name_category_w)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, handler(&domain_register_string_a)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringW, handler(&domain_register_string_w)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, handler(&domain_create_a)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateW, handler(&domain_create_w)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, handler(&domain_destroy)},
      {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_Initialize, handler(&initialize)},
  };
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks.GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return false;
  for (const slot& s : slots)
    if (s.module == module && s.id < size && table[s.id] != nullptr) *table[s.id] = s.function;
  return true;
}

// ------------------------------------------------------------ exit

/// The counter sites of the capture's own counts (category "nvtx"), made
/// at start-up; static storage, so they outlive the runtime's exit pass.
struct count_row {
  const char* name;
  const std::atomic<std::uint64_t>* count;
  etd::site site;
};
count_row count_rows[] = {
    {"pops without a push", &counts.pops_without_push, {}},
    {"pushes deeper than 128 (not recorded)", &counts.too_deep, {}},
    {"ends of a range not started, or ended twice", &counts.ends_without_start, {}},
    {"starts refused (4096 ranges open)", &counts.starts_refused, {}},
    {"ranges still open at exit", &counts.open_at_exit, {}},
};

/// At exit, before the runtime's own exit pass (atexit runs in reverse
/// order and the runtime registered first): what could not be recorded,
/// as one counter sample each, so `edgetrace info` can say it. Ranges still
/// open on the exiting thread or in the start table are counted too.
void write_counts() {
  if (thread_state* t = current_state) {  // the exiting thread's key destructor will not run
    count_open(*t);
    t->depth = t->overflow = 0;
  }
  ranges->finish();
  std::uint64_t open = 0;
  for (std::uint32_t i = 0; i < start_slots; ++i)
    if (started[i].state.load(std::memory_order_acquire) == slot_open) ++open;
  counts.open_at_exit.fetch_add(open, std::memory_order_relaxed);
  const std::uint8_t clock = global_domain->clock();
  if (clock == etd::clock_off) return;
  for (count_row& row : count_rows) {
    const std::uint64_t n = row.count->load(std::memory_order_relaxed);
    if (n != 0)
      etd::push(etd::pack_site(&row.site), etd::ticks(clock), etd::counter_bits(static_cast<double>(n)));
  }
}

}  // namespace

/// The capture's entry, which libedgetrace-nvtx.so (entry.cpp) calls for
/// every InitializeInjectionNvtx2: installs the callbacks of the NVTX copy
/// that calls it. Returns 0, so NVTX turns every call into a no-op, when
/// EDGETRACE_OUTPUT is not set.
extern "C" __attribute__((visibility("default"))) int edgetrace_nvtx_initialize(NvtxGetExportTableFunc_t get_table) {
  static std::once_flag once;
  static bool ready = false;
  std::call_once(once, [] {
    const char* output = std::getenv("EDGETRACE_OUTPUT");
    if (output == nullptr || *output == '\0') {
      std::fprintf(stderr, "edgetrace-nvtx: EDGETRACE_OUTPUT is not set: NVTX ranges are not recorded\n");
      return;
    }
    if (pthread_key_create(&state_key, &free_state) != 0) {
      std::fprintf(stderr, "edgetrace-nvtx: no thread-specific key left: NVTX ranges are not recorded\n");
      return;
    }
    allocate_tables();
    pthread_atfork(nullptr, nullptr, &after_fork_in_child);
    global_domain = domain_named("nvtx");  // starts the runtime (its atexit pass is registered before ours)
    for (count_row& row : count_rows)
      row.site = etd::site{&global_domain->category, row.name, site_file, 0, et::format::site_kind::counter};
    std::atexit(&write_counts);
    ready = true;
  });
  if (!ready || get_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  const bool core = install(*callbacks, NVTX_CB_MODULE_CORE);
  const bool core2 = install(*callbacks, NVTX_CB_MODULE_CORE2);
  return core || core2 ? 1 : 0;
}
