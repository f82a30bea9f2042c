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
//   EDGETRACE_THREAD_NAME("preprocess");
//   edgetrace::flush();                        // optional
//
// Run with EDGETRACE_OUTPUT=run.etr ./app, then `edgetrace json run.etr`.
// Without EDGETRACE_OUTPUT a scope costs one relaxed load and one branch.
// Build knobs (config.hpp): EDGETRACE_ENABLED, EDGETRACE_COMPILED_CATEGORIES,
// EDGETRACE_EXCLUDED_CATEGORIES, EDGETRACE_TLS_INITIAL_EXEC,
// EDGETRACE_CLOCK_MONOTONIC.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/config.hpp>
#include <edgetrace/format.hpp>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#if EDGETRACE_ENABLED
#include <edgetrace/clock.hpp>
#include <edgetrace/detail/ring.hpp>
#include <edgetrace/detail/runtime.hpp>
#endif

namespace edgetrace {
inline namespace v1 {
namespace detail {

/// What a compiled-out scope becomes: an empty object whose constructor
/// accepts (and never calls) whatever the macro passes.
struct null_scope {
  template <class... Args>
  constexpr explicit null_scope(Args&&...) noexcept {}
};
static_assert(std::is_empty_v<null_scope>, "a compiled-out scope must be an empty object");

struct named_tag {};

#if EDGETRACE_ENABLED

/// A span from construction to destruction, of category `Category`.
/// Enabled cost: 1 relaxed load + 1 branch + 2 tick reads + push(). Runtime-
/// disabled: the load and the branch (the destructor tests a register).
template <class Category>
class span_scope {
 public:
  template <class SiteFn>
  EDGETRACE_DETAIL_ALWAYS_INLINE explicit span_scope(SiteFn site_fn) noexcept {
    const std::uint8_t mode = Category::state.enabled.load(std::memory_order_relaxed);
    if (mode != clock_off) {
      word_ = reinterpret_cast<std::uintptr_t>(&site_fn());
      mode_ = mode;
      begin_ = ticks(mode);
    }
  }
  EDGETRACE_DETAIL_ALWAYS_INLINE span_scope(named_tag, name_handle handle) noexcept {
    const std::uint8_t mode = Category::state.enabled.load(std::memory_order_relaxed);
    if (mode != clock_off) {
      word_ = (std::uint64_t{handle.id} << 32) | (std::uint64_t{Category::state.index} << 2) | tag_named;
      mode_ = mode;
      begin_ = ticks(mode);
    }
  }
  EDGETRACE_DETAIL_ALWAYS_INLINE ~span_scope() {
    if (word_ != 0) push(word_, begin_, ticks(mode_));
  }
  span_scope(const span_scope&) = delete;
  span_scope& operator=(const span_scope&) = delete;

 private:
  std::uint64_t word_ = 0;  ///< 0 = not recording
  std::uint64_t begin_ = 0;
  std::uint8_t mode_ = clock_off;
};

template <class Category, class SiteFn>
EDGETRACE_DETAIL_ALWAYS_INLINE void instant(SiteFn site_fn) noexcept {
  if constexpr (Category::compiled_in) {
    const std::uint8_t mode = Category::state.enabled.load(std::memory_order_relaxed);
    if (mode != clock_off) push(reinterpret_cast<std::uintptr_t>(&site_fn()), ticks(mode), 0);
  }
}

/// Records a counter sample; the caller has loaded the category's mode.
template <class SiteFn>
EDGETRACE_DETAIL_ALWAYS_INLINE void counter(SiteFn site_fn, double value, std::uint8_t mode) noexcept {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  push(reinterpret_cast<std::uintptr_t>(&site_fn()), ticks(mode), bits);
}

/// The category's clock mode, 0 when not recording.
template <class Category>
EDGETRACE_DETAIL_ALWAYS_INLINE std::uint8_t recording() noexcept {
  return Category::state.enabled.load(std::memory_order_relaxed);
}

template <class Category>
using scope_t = std::conditional_t<Category::compiled_in, span_scope<Category>, null_scope>;

#endif  // EDGETRACE_ENABLED

/// Only declared: used in unevaluated operands to type-check macro arguments.
const char* check_name(const char* name) noexcept;
name_handle check_handle(name_handle handle) noexcept;
double check_value(double value) noexcept;

}  // namespace detail

#if EDGETRACE_ENABLED
/// Interns a run-time name (e.g. a layer name read from a model file) once;
/// the handle then costs the same as a string literal in
/// EDGETRACE_SCOPE_NAMED. Takes a lock and may allocate: call it outside
/// hot loops. Returns an empty handle when tracing is off.
inline name_handle intern(std::string_view name) { return detail::intern(name); }

/// Writes everything recorded so far (by all threads) to the dump and
/// returns when it is written, or after 5 s at most. Not needed for
/// correctness: exit and thread exit flush too.
inline void flush() noexcept { detail::flush(); }

/// Names the calling thread in the trace (up to 63 bytes are kept).
inline void set_thread_name(const char* name) noexcept { detail::set_thread_name(name); }

/// True while tracing is recording (EDGETRACE_OUTPUT set, output healthy).
inline bool tracing_active() noexcept { return detail::active(); }
#else
inline name_handle intern(std::string_view) noexcept { return {}; }
inline void flush() noexcept {}
inline void set_thread_name(const char*) noexcept {}
inline bool tracing_active() noexcept { return false; }
#endif

}  // namespace v1
}  // namespace edgetrace

#if EDGETRACE_ENABLED

/// The static site descriptor of one macro expansion, behind a lambda so a
/// compiled-out or runtime-disabled scope never materialises it.
#define EDGETRACE_DETAIL_SITE(cat, name, kind)                                                          \
  []() noexcept -> const ::edgetrace::detail::site& {                                                 \
    static constexpr ::edgetrace::detail::site edgetrace_site{&EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::state, \
                                                              name, __FILE__, __LINE__, kind};          \
    return edgetrace_site;                                                                            \
  }

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
#define EDGETRACE_COUNTER(cat, name, value)                                                                 \
  do {                                                                                                      \
    if constexpr (EDGETRACE_DETAIL_CATEGORY_TYPE(cat)::compiled_in) {                                         \
      if (const std::uint8_t edgetrace_mode = ::edgetrace::detail::recording<EDGETRACE_DETAIL_CATEGORY_TYPE(cat)>()) \
        ::edgetrace::detail::counter(EDGETRACE_DETAIL_SITE(cat, name, ::edgetrace::format::site_kind::counter), \
                                     static_cast<double>(value), edgetrace_mode);                            \
    }                                                                                                       \
  } while (false)

/// Names the calling thread in the trace.
#define EDGETRACE_THREAD_NAME(name) ::edgetrace::set_thread_name(name)

#else  // EDGETRACE_ENABLED == 0: type-check, never evaluate, generate nothing.

#define EDGETRACE_DETAIL_CHECK_CATEGORY(cat) static_cast<void>(sizeof(EDGETRACE_DETAIL_CATEGORY_TYPE(cat)))
#define EDGETRACE_SCOPE(cat, name) \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(name)))
#define EDGETRACE_SCOPE_NAMED(cat, handle) \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_handle(handle)))
#define EDGETRACE_INSTANT(cat, name) \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(name)))
#define EDGETRACE_MARK(cat, name) EDGETRACE_INSTANT(cat, name)
#define EDGETRACE_COUNTER(cat, name, value)                                                 \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(name))), \
      static_cast<void>(sizeof(::edgetrace::detail::check_value(static_cast<double>(value))))
#define EDGETRACE_THREAD_NAME(name) static_cast<void>(sizeof(::edgetrace::detail::check_name(name)))

#endif
