// SPDX-License-Identifier: MIT
// edgetrace: the one header users include. Macros, run-time API, quick start.
//
//   #include <edgetrace/edgetrace.hpp>
//   EDGETRACE_CATEGORY(infer);                 // once, at namespace scope
//
//   void run_layer() {
//     EDGETRACE_SCOPE(infer, "run_layer");     // span from here to end of scope
//   }
//   auto h = edgetrace::intern("conv2d_17");   // run-time name, interned once
//   { EDGETRACE_SCOPE_NAMED(infer, h); }       // same hot-path cost as a literal
//   EDGETRACE_INSTANT(infer, "batch_ready");
//   EDGETRACE_MARK(infer, "frame");            // iteration boundary (summary latency)
//   EDGETRACE_COUNTER(infer, "queue_depth", n);
//   EDGETRACE_ARG(infer, "batch", n);         // argument of the enclosing span (int, double, bool)
//   EDGETRACE_FLOW(infer, "request", id);     // enclosing span is a step of request `id`
//   EDGETRACE_ALLOC(infer, p, bytes, "pool"); EDGETRACE_FREE(infer, p);
//   EDGETRACE_THREAD_NAME("preprocess");
//   edgetrace::flush();                        // optional
//   edgetrace::snapshot("reason");             // flight mode: persist the window
//   edgetrace::pause(); edgetrace::resume();   // capture control (also by env)
//   edgetrace::phase("measure");               // labelled phase (summary --phase)
//
// Run with EDGETRACE_OUTPUT=run.etr ./app, then `edgetrace json run.etr`.
// Without EDGETRACE_OUTPUT a scope costs one relaxed load and one branch.
// Build knobs (config.hpp): EDGETRACE_ENABLED, EDGETRACE_COMPILED_CATEGORIES,
// EDGETRACE_EXCLUDED_CATEGORIES, EDGETRACE_TLS_INITIAL_EXEC,
// EDGETRACE_CLOCK_MONOTONIC.
#pragma once

#include <edgetrace/config.hpp>  // first: it stops a pre-C++17 build with one message
#include <edgetrace/category.hpp>
#include <edgetrace/core/kinds.hpp>
#include <edgetrace/face/entry_points.hpp>
#include <edgetrace/face/site.hpp>

#include <cstddef>
#include <cstdint>

// The light part: what a scope compiles to. No heavy standard header here
// (tools/compile_cost.sh checks): every traced TU pays for what is included.
#if EDGETRACE_ENABLED
#include <edgetrace/face/hooks.hpp>
#include <edgetrace/face/record_word.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/face/tick.hpp>
#endif

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {

#if EDGETRACE_ENABLED
/// Interns a run-time name (e.g. a layer name read from a model file) once;
/// the handle then costs the same as a string literal in
/// EDGETRACE_SCOPE_NAMED. Takes a lock and may allocate: call it outside
/// hot loops. Returns an empty handle when tracing is off. Accepts a C
/// string, or anything with data() and size() (std::string,
/// std::string_view), without this header including <string>.
inline name_handle intern(const char* name) { return detail::intern(name, name == nullptr ? 0 : __builtin_strlen(name)); }
template <class String>
auto intern(const String& name) -> decltype(static_cast<const char*>(name.data()), static_cast<std::size_t>(name.size()),
                                            name_handle{}) {
  return detail::intern(name.data(), name.size());
}

/// Writes everything recorded so far (by all threads) to the dump and
/// returns when it is written, or after 5 s at most (at once while the
/// output has not opened, e.g. a FIFO nobody reads yet). Not needed for
/// correctness: exit and thread exit flush too.
inline void flush() noexcept { detail::flush(); }

/// Flight mode (EDGETRACE_MODE=flight): asks for a snapshot, a dump of
/// the seconds kept in memory plus EDGETRACE_FLIGHT_AFTER_MS after the
/// call, written by the flusher to EDGETRACE_OUTPUT with ".N" before its
/// extension; `reason` (up to 255 bytes) is recorded in it. Subject to the
/// rate limit (EDGETRACE_FLIGHT_MAX, EDGETRACE_FLIGHT_GAP_MS). Returns at
/// once: a few atomic operations, no lock, no allocation, so it may be
/// called from a signal handler. A no-op when tracing is off or not in
/// flight mode.
inline void snapshot(const char* reason) noexcept {
  detail::snapshot_call(reason, reason == nullptr ? 0 : __builtin_strlen(reason));
}

/// Names the calling thread in the trace (up to 63 bytes are kept).
inline void set_thread_name(const char* name) noexcept { detail::set_thread_name(name); }

/// True while tracing is recording (EDGETRACE_OUTPUT set, output healthy).
inline bool tracing_active() noexcept { return detail::active(); }

/// Stops recording in every category until resume(): a paused scope costs
/// what a runtime-disabled one does (one load, one branch). A span is
/// recorded iff recording was on when it began; an instant, mark or counter
/// iff it was on at that moment. The change is written into the dump (the
/// JSON shows a marker, `edgetrace info` lists the windows). Takes a lock
/// and writes a few bytes: fine once per iteration, not per span. Windows
/// from EDGETRACE_START_AFTER / EDGETRACE_DURATION / EDGETRACE_TOGGLE_SIGNAL
/// combine with it: recording happens only while all of them allow it.
inline void pause() noexcept { detail::set_paused(true); }
/// Undoes pause().
inline void resume() noexcept { detail::set_paused(false); }

/// Starts a labelled phase ("warm up", "measure"), process-wide: it lasts
/// until the next phase() call. `edgetrace summary --phase measure` keeps
/// the spans that began in it. Takes a lock and copies the name: call it
/// at phase changes, not per span.
inline void phase(const char* name) noexcept { detail::begin_phase(name, name == nullptr ? 0 : __builtin_strlen(name)); }
template <class String>
auto phase(const String& name) noexcept -> decltype(static_cast<const char*>(name.data()), static_cast<std::size_t>(name.size()),
                                                     void()) {
  detail::begin_phase(name.data(), name.size());
}
#else
inline name_handle intern(const char*) noexcept { return {}; }
template <class String>
auto intern(const String& name) noexcept -> decltype(static_cast<const char*>(name.data()), name_handle{}) {
  return {};
}
inline void flush() noexcept {}
inline void snapshot(const char*) noexcept {}
inline void set_thread_name(const char*) noexcept {}
inline bool tracing_active() noexcept { return false; }
inline void pause() noexcept {}
inline void resume() noexcept {}
inline void phase(const char*) noexcept {}
template <class String>
auto phase(const String& name) noexcept -> decltype(static_cast<const char*>(name.data()), void()) {}
#endif

}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_ENABLED

// What the macros below compile to: the span scope, and one push per
// instant, counter or annotation (still the light part).
#include <edgetrace/face/events.hpp>
#include <edgetrace/face/span_scope.hpp>


/// Records a span named by the string literal `name` until the end of the
/// enclosing scope.
#define EDGETRACE_SCOPE(cat, name)                                                            \
  [[maybe_unused]] const ::edgetrace::detail::scope_t<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)> EDGETRACE_DETAIL_UNIQUE( \
      edgetrace_scope_) {                                                                     \
    EDGETRACE_DETAIL_SITE(cat, name, ::edgetrace::format::site_kind::span)                     \
  }

/// Records a span named by an edgetrace::name_handle from edgetrace::intern().
/// The handle expression is evaluated once (keep it a variable or a cheap
/// lookup), and not at all when the category is compiled out.
#define EDGETRACE_SCOPE_NAMED(cat, handle)                                                                \
  [[maybe_unused]] const ::edgetrace::detail::scope_t<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)> EDGETRACE_DETAIL_UNIQUE(             \
      edgetrace_scope_) {                                                                                 \
    ::edgetrace::detail::named_tag{},                                                                     \
        EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::compiled_in ? ::edgetrace::name_handle(handle) : ::edgetrace::name_handle{} \
  }

/// Records an instant event.
#define EDGETRACE_INSTANT(cat, name)                              \
  ::edgetrace::detail::instant<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)>( \
      EDGETRACE_DETAIL_SITE(cat, name, ::edgetrace::format::site_kind::instant))

/// Marks an iteration (frame, request, batch) boundary: an instant that
/// `edgetrace summary` uses for end-to-end latency per iteration.
#define EDGETRACE_MARK(cat, name)                                 \
  ::edgetrace::detail::instant<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)>( \
      EDGETRACE_DETAIL_SITE(cat, name, ::edgetrace::format::site_kind::mark))

/// Records a counter sample; `value` (any arithmetic expression, stored as
/// a double) is evaluated only when recorded. No lambda captures `value`'s
/// variables, so a compiled-out counter leaves the optimiser's view of the
/// surrounding code untouched.
#define EDGETRACE_COUNTER(cat, name, value) \
  EDGETRACE_DETAIL_VALUE_EVENT(cat, name, counter, ::edgetrace::detail::counter_bits(static_cast<double>(value)))

/// Attaches the argument `key` = `value` (a string literal and a number)
/// to the innermost span open on the calling thread: `edgetrace json`
/// shows it in that span's args, `edgetrace summary --by name,arg:KEY`
/// groups by it, `edgetrace csv` gives it a column. The value's type picks
/// how it is stored, at compile time: float, double and long double as a
/// double (format 1.5), bool as true/false (1.5), anything else as an
/// int64 (integers, enums). Costs what a counter sample does; the span
/// itself is unchanged. An argument recorded outside every span is counted
/// and shown in `edgetrace info`, not attached.
#define EDGETRACE_ARG(cat, key, value) \
  EDGETRACE_DETAIL_WHEN_RECORDING(         \
      cat, ::edgetrace::detail::arg_event(EDGETRACE_DETAIL_TYPED_SITE(cat, key), (value), edgetrace_mode))

/// EDGETRACE_DETAIL_SITE whose kind comes from the argument's type: a
/// generic lambda that arg_event calls with a kind_constant; only the one
/// kind the value has is ever instantiated (one static site).
#define EDGETRACE_DETAIL_TYPED_SITE(cat, name)                                                             \
  [](auto edgetrace_kind) noexcept -> const ::edgetrace::detail::site& {                                   \
    static constexpr ::edgetrace::detail::site edgetrace_site{&EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::state, name, \
                                                              __FILE__, __LINE__, decltype(edgetrace_kind)::value}; \
    return edgetrace_site;                                                                                 \
  }

/// EDGETRACE_ARG with a string value: an edgetrace::name_handle from
/// edgetrace::intern() (a layout, a dtype, a model name, a shape such as
/// "1x3x224x224": intern each distinct shape once, outside the hot loop).
#define EDGETRACE_ARG_NAMED(cat, key, handle) \
  EDGETRACE_DETAIL_VALUE_EVENT(cat, key, arg_name, ::edgetrace::name_handle(handle).id)

/// Makes the innermost span open on the calling thread a step of flow
/// `name` (a string literal, e.g. "request") with identity `id` (any
/// integer: a request number, a pointer cast to uintptr_t). The steps of
/// one id, on any threads, are linked by arrows in the JSON in time order;
/// `edgetrace summary` reports each flow name's end-to-end latency (first
/// step's begin to last step's end) per id.
#define EDGETRACE_FLOW(cat, name, id) \
  EDGETRACE_DETAIL_VALUE_EVENT(cat, name, flow, static_cast<std::uint64_t>(id))

/// Records that `bytes` were allocated at `ptr` (a pointer or an integer
/// handle such as a CUdeviceptr) from pool `pool` (a string literal).
/// `edgetrace json` draws live bytes per pool as a counter track;
/// `edgetrace summary` shows the peak live bytes during each span name.
/// Out of line (two records); the arguments are evaluated only when the
/// category is recording.
#define EDGETRACE_ALLOC(cat, ptr, bytes, pool)                                                                  \
  EDGETRACE_DETAIL_WHEN_RECORDING(                                                                              \
      cat, ::edgetrace::detail::record_alloc(                                                                   \
               ::edgetrace::detail::site_word(EDGETRACE_DETAIL_SITE(cat, pool, ::edgetrace::format::site_kind::alloc)), \
               ::edgetrace::detail::address(ptr), static_cast<std::uint64_t>(bytes), edgetrace_mode))

/// Records that the allocation at `ptr` was freed (its pool and size come
/// from the matching EDGETRACE_ALLOC). A free of a null pointer is ignored;
/// a double free or a free of an address never allocated is counted and
/// reported by `edgetrace info` and `summary`, never attributed.
#define EDGETRACE_FREE(cat, ptr) EDGETRACE_DETAIL_VALUE_EVENT(cat, "free", free, ::edgetrace::detail::address(ptr))

/// One event of kind `kind` at a site named `name`, with a 64-bit value.
#define EDGETRACE_DETAIL_VALUE_EVENT(cat, name, kind, value) \
  EDGETRACE_DETAIL_WHEN_RECORDING(                           \
      cat, ::edgetrace::detail::event(EDGETRACE_DETAIL_SITE(cat, name, ::edgetrace::format::site_kind::kind), (value), edgetrace_mode))

/// Runs `call` (which may use `edgetrace_mode`, the category's clock mode)
/// only when category `cat` is compiled in and recording; its arguments
/// are evaluated only then. The guard of every macro that takes values.
#define EDGETRACE_DETAIL_WHEN_RECORDING(cat, call)                                                                  \
  do {                                                                                                            \
    if constexpr (EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::compiled_in) {                                               \
      if (const std::uint8_t edgetrace_mode = ::edgetrace::detail::recording<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)>()) \
        call;                                                                                                     \
    }                                                                                                             \
  } while (false)

/// Records a span measured elsewhere: it began at `start_ns` and lasted
/// `duration_ns`, both in nanoseconds of CLOCK_MONOTONIC (what
/// std::chrono::steady_clock counts on Linux). For engines that report
/// per-layer times through callbacks (the TensorRT IProfiler pattern). The
/// span belongs to the calling thread; the arguments are evaluated only when
/// the category is recording. Cost: an out-of-line call, a few clock reads.
#define EDGETRACE_RECORD(cat, name, start_ns, duration_ns)                                                    \
  EDGETRACE_DETAIL_RECORD(cat,                                                                                \
                          ::edgetrace::detail::site_word(                                                     \
                              EDGETRACE_DETAIL_SITE(cat, name, ::edgetrace::format::site_kind::span)),        \
                          start_ns, duration_ns)

/// EDGETRACE_RECORD with a run-time name (an edgetrace::name_handle from
/// edgetrace::intern(), e.g. a layer name from the engine's callback).
#define EDGETRACE_RECORD_NAMED(cat, handle, start_ns, duration_ns) \
  EDGETRACE_DETAIL_RECORD(cat, ::edgetrace::detail::named_word<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)>(handle), start_ns, duration_ns)

#define EDGETRACE_DETAIL_RECORD(cat, word, start_ns, duration_ns)                                           \
  EDGETRACE_DETAIL_WHEN_RECORDING(cat, ::edgetrace::detail::record_measured(word, static_cast<std::uint64_t>(start_ns), \
                                                                            static_cast<std::uint64_t>(duration_ns),   \
                                                                            edgetrace_mode))

/// Attaches the argument `key` = `value` (as EDGETRACE_ARG: a string
/// literal, and a number or bool) to the span measured elsewhere that began
/// at `start_ns` and lasted `duration_ns` (what EDGETRACE_RECORD was or will
/// be given), whenever it is called: a layer's shape, an engine's figures.
/// It is recorded at the span's middle, so it belongs to that span unless
/// a span nested in it holds the middle (then to that one: give a parent's
/// arguments with EDGETRACE_ARG while it is open). Recorded when the
/// category is; refused and counted as EDGETRACE_RECORD refuses such a span.
#define EDGETRACE_RECORD_ARG(cat, key, value, start_ns, duration_ns)                                           \
  EDGETRACE_DETAIL_WHEN_RECORDING(cat, ::edgetrace::detail::measured_arg_event(                                \
                                           EDGETRACE_DETAIL_TYPED_SITE(cat, key), (value),                     \
                                           static_cast<std::uint64_t>(start_ns),                               \
                                           static_cast<std::uint64_t>(duration_ns), edgetrace_mode))

/// Names the calling thread in the trace.
#define EDGETRACE_THREAD_NAME(name) ::edgetrace::set_thread_name(name)

#else  // EDGETRACE_ENABLED == 0: type-check, never evaluate, generate nothing.

#define EDGETRACE_SCOPE(cat, name) \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), EDGETRACE_DETAIL_REQUIRE_LITERAL(name)
#define EDGETRACE_SCOPE_NAMED(cat, handle) \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_handle(handle)))
#define EDGETRACE_INSTANT(cat, name) \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), EDGETRACE_DETAIL_REQUIRE_LITERAL(name)
#define EDGETRACE_MARK(cat, name) EDGETRACE_INSTANT(cat, name)
#define EDGETRACE_COUNTER(cat, name, value)                                                 \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), EDGETRACE_DETAIL_REQUIRE_LITERAL(name), \
      static_cast<void>(sizeof(::edgetrace::detail::check_value(static_cast<double>(value))))
#define EDGETRACE_RECORD(cat, name, start_ns, duration_ns)                                        \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), EDGETRACE_DETAIL_REQUIRE_LITERAL(name), \
      static_cast<void>(sizeof(static_cast<std::uint64_t>(start_ns) + static_cast<std::uint64_t>(duration_ns)))
#define EDGETRACE_RECORD_NAMED(cat, handle, start_ns, duration_ns)                                    \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_handle(handle))), \
      static_cast<void>(sizeof(static_cast<std::uint64_t>(start_ns) + static_cast<std::uint64_t>(duration_ns)))
#define EDGETRACE_ARG(cat, key, value)                                                                     \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(key))), \
      static_cast<void>(sizeof(static_cast<std::int64_t>(value)))
#define EDGETRACE_RECORD_ARG(cat, key, value, start_ns, duration_ns)                                       \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(key))), \
      static_cast<void>(sizeof(static_cast<std::int64_t>(value))),                                        \
      static_cast<void>(sizeof(static_cast<std::uint64_t>(start_ns) + static_cast<std::uint64_t>(duration_ns)))
#define EDGETRACE_ARG_NAMED(cat, key, handle)                                                              \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(key))), \
      static_cast<void>(sizeof(::edgetrace::detail::check_handle(handle)))
#define EDGETRACE_FLOW(cat, name, id)                                                                       \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), EDGETRACE_DETAIL_REQUIRE_LITERAL(name), \
      static_cast<void>(sizeof(static_cast<std::uint64_t>(id)))
#define EDGETRACE_ALLOC(cat, ptr, bytes, pool)                                                                  \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), EDGETRACE_DETAIL_REQUIRE_LITERAL(pool),                               \
      static_cast<void>(sizeof(::edgetrace::detail::check_address(ptr))),                                     \
      static_cast<void>(sizeof(static_cast<std::uint64_t>(bytes)))
#define EDGETRACE_FREE(cat, ptr) \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_address(ptr)))
#define EDGETRACE_THREAD_NAME(name) static_cast<void>(sizeof(::edgetrace::detail::check_name(name)))

#endif

// The runtime itself (flusher, encoder, environment), unless it is compiled
// separately (EDGETRACE_SEPARATE_RUNTIME=1, <edgetrace/runtime_impl.hpp>).
#if EDGETRACE_ENABLED && !EDGETRACE_SEPARATE_RUNTIME
#include <edgetrace/writer/runtime.hpp>
#endif
