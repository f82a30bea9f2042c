// SPDX-License-Identifier: MIT
// Compile-time knobs of edgetrace: defaults and validation, in one place.
#pragma once

// edgetrace needs C++17 (inline variables, if constexpr). Stop at once with
// one message instead of a page of errors from the headers below; the
// #include of a name that is not a file is what makes compilers stop here.
#if !defined(__cplusplus) || __cplusplus < 201703L
#error "edgetrace needs C++17 or newer: compile with -std=c++17 (in CMake, link edgetrace::edgetrace, which requests cxx_std_17)"
#include <edgetrace: compilation stopped, see the error above>
#endif

/// The version of edgetrace: the one place it is written. CMakeLists.txt
/// reads these three lines (project(VERSION), the package's version file);
/// `edgetrace --version` and the JSON's metadata print the string.
#define EDGETRACE_VERSION_MAJOR 0
#define EDGETRACE_VERSION_MINOR 1
#define EDGETRACE_VERSION_PATCH 0
/// MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons.
#define EDGETRACE_VERSION (EDGETRACE_VERSION_MAJOR * 10000 + EDGETRACE_VERSION_MINOR * 100 + EDGETRACE_VERSION_PATCH)
#define EDGETRACE_DETAIL_STRINGIFY2(x) #x
#define EDGETRACE_DETAIL_STRINGIFY(x) EDGETRACE_DETAIL_STRINGIFY2(x)
/// "MAJOR.MINOR.PATCH".
#define EDGETRACE_VERSION_STRING                                                         \
  EDGETRACE_DETAIL_STRINGIFY(EDGETRACE_VERSION_MAJOR) "." EDGETRACE_DETAIL_STRINGIFY( \
      EDGETRACE_VERSION_MINOR) "." EDGETRACE_DETAIL_STRINGIFY(EDGETRACE_VERSION_PATCH)

/// EDGETRACE_ENABLED: 1 (default) compiles tracing in; 0 turns every macro
/// into nothing (arguments are still type-checked, never evaluated).
#ifndef EDGETRACE_ENABLED
#define EDGETRACE_ENABLED 1
#endif
#if (EDGETRACE_ENABLED != 0) && (EDGETRACE_ENABLED != 1)
#error "EDGETRACE_ENABLED must be 0 or 1"
#endif

/// EDGETRACE_COMPILED_CATEGORIES: string literal, comma-separated category
/// names compiled in; "*" (default) means all. Example:
///   target_compile_definitions(app PRIVATE EDGETRACE_COMPILED_CATEGORIES="infer,io")
#ifndef EDGETRACE_COMPILED_CATEGORIES
#define EDGETRACE_COMPILED_CATEGORIES "*"
#endif

/// EDGETRACE_EXCLUDED_CATEGORIES: string literal, comma-separated category
/// names compiled out even if listed above. Default "".
#ifndef EDGETRACE_EXCLUDED_CATEGORIES
#define EDGETRACE_EXCLUDED_CATEGORIES ""
#endif

// Concatenation with "" only compiles for string literals.
static_assert(sizeof(EDGETRACE_COMPILED_CATEGORIES "") >= 1,
              "EDGETRACE_COMPILED_CATEGORIES must be a string literal such as \"infer,io\" or \"*\"");
static_assert(sizeof(EDGETRACE_EXCLUDED_CATEGORIES "") >= 1,
              "EDGETRACE_EXCLUDED_CATEGORIES must be a string literal such as \"debug\"");

/// EDGETRACE_TLS_INITIAL_EXEC: 1 (default) puts the one thread_local pointer
/// of the hot path in the initial-exec TLS model (one %fs-relative load).
/// Set 0 for a shared library that is dlopen()ed into processes whose static
/// TLS space is exhausted (rare; the loader then says "cannot allocate memory
/// in static TLS block").
#ifndef EDGETRACE_TLS_INITIAL_EXEC
#define EDGETRACE_TLS_INITIAL_EXEC 1
#endif
#if (EDGETRACE_TLS_INITIAL_EXEC != 0) && (EDGETRACE_TLS_INITIAL_EXEC != 1)
#error "EDGETRACE_TLS_INITIAL_EXEC must be 0 or 1"
#endif

/// EDGETRACE_CLOCK_MONOTONIC: 1 forces clock_gettime(CLOCK_MONOTONIC) ticks
/// even where rdtsc / cntvct_el0 exist (e.g. CPUs without invariant TSC).
#ifndef EDGETRACE_CLOCK_MONOTONIC
#define EDGETRACE_CLOCK_MONOTONIC 0
#endif
#if (EDGETRACE_CLOCK_MONOTONIC != 0) && (EDGETRACE_CLOCK_MONOTONIC != 1)
#error "EDGETRACE_CLOCK_MONOTONIC must be 0 or 1"
#endif

/// 1: a span's begin is an out-of-line call too, so each EDGETRACE_SCOPE
/// site costs ~60 bytes of code instead of ~120, for ~3 more instructions
/// per recorded span (docs/PERFORMANCE.md, "Code per site"). For builds
/// with thousands of sites and tight instruction caches or flash.
#ifndef EDGETRACE_COMPACT_SCOPES
#define EDGETRACE_COMPACT_SCOPES 0
#endif
#if (EDGETRACE_COMPACT_SCOPES != 0) && (EDGETRACE_COMPACT_SCOPES != 1)
#error "EDGETRACE_COMPACT_SCOPES must be 0 or 1"
#endif

/// 1: the runtime (flusher, encoder, env parsing) is compiled once, in the
/// TU that includes <edgetrace/runtime_impl.hpp> (CMake: link
/// edgetrace::runtime), instead of in every TU that includes
/// edgetrace.hpp. Cuts the compile cost of the header to the hot path's
/// (docs/PERFORMANCE.md). Every TU of the program must agree.
#ifndef EDGETRACE_SEPARATE_RUNTIME
#define EDGETRACE_SEPARATE_RUNTIME 0
#endif
#if (EDGETRACE_SEPARATE_RUNTIME != 0) && (EDGETRACE_SEPARATE_RUNTIME != 1)
#error "EDGETRACE_SEPARATE_RUNTIME must be 0 or 1"
#endif
/// EDGETRACE_ABI_NAMESPACE: the inline namespace every declaration of
/// edgetrace lives in (edgetrace::EDGETRACE_ABI_NAMESPACE::...), named after
/// the runtime mode: `v1` header-only, `v1_rt` with EDGETRACE_SEPARATE_RUNTIME=1.
/// Public names are spelled without it (edgetrace::flush()). A program whose
/// TUs disagree on the mode, or that omits the runtime library, fails to
/// link, naming the missing edgetrace::v1_rt::detail::... function, instead
/// of binding the separate TUs to a header-only TU's inline copies of the
/// runtime (tests/abi). The reader headers use it too: the tools do not care,
/// and one rule for every header is easier to keep than two.
#if EDGETRACE_SEPARATE_RUNTIME
#define EDGETRACE_ABI_NAMESPACE v1_rt
#else
#define EDGETRACE_ABI_NAMESPACE v1
#endif

/// How the runtime's entry points are declared and defined: inline in the
/// header-only build, ordinary external functions with a separate runtime.
#if EDGETRACE_SEPARATE_RUNTIME
#define EDGETRACE_DETAIL_API
#else
#define EDGETRACE_DETAIL_API inline
#endif

/// EDGETRACE_SEPARATE_READER: 0 (default): the dump reader (decode/) and
/// its outputs (sinks/) are header-only, compiled inline in every TU that
/// uses them. 1: they are compiled once, in the edgetrace::reader library
/// (CMake: link edgetrace::reader, which sets it), and a TU sees their
/// declarations only: <edgetrace/reader.hpp> whole costs a fifth of the
/// compile (docs/PERFORMANCE.md, "Compile cost"). Built for the header-only
/// runtime's ABI namespace: a program that links edgetrace::runtime too
/// reads with the header-only reader.
#ifndef EDGETRACE_SEPARATE_READER
#define EDGETRACE_SEPARATE_READER 0
#endif
#if (EDGETRACE_SEPARATE_READER != 0) && (EDGETRACE_SEPARATE_READER != 1)
#error "EDGETRACE_SEPARATE_READER must be 0 or 1"
#endif
#if EDGETRACE_SEPARATE_READER && EDGETRACE_SEPARATE_RUNTIME
#error "edgetrace::reader (EDGETRACE_SEPARATE_READER=1) is built for the header-only runtime: a program that links edgetrace::runtime reads dumps with the header-only reader (do not link edgetrace::reader)"
#endif
/// How the reader's compiled-once functions are defined: inline in the
/// header-only reader, ordinary external functions in edgetrace::reader.
#if EDGETRACE_SEPARATE_READER
#define EDGETRACE_DETAIL_READER_API
#else
#define EDGETRACE_DETAIL_READER_API inline
#endif
/// Where those functions' bodies are seen: 1 in the header-only reader and
/// in edgetrace::reader's own TU (EDGETRACE_DETAIL_READER_TU), 0 in a TU
/// built against edgetrace::reader, which sees declarations only (and so
/// does not parse the outputs' code or <regex>).
#if !EDGETRACE_SEPARATE_READER || defined(EDGETRACE_DETAIL_READER_TU)
#define EDGETRACE_DETAIL_READER_BODIES 1
#else
#define EDGETRACE_DETAIL_READER_BODIES 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define EDGETRACE_DETAIL_LIKELY(x) __builtin_expect(!!(x), 1)
#define EDGETRACE_DETAIL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define EDGETRACE_DETAIL_NOINLINE __attribute__((noinline))
#define EDGETRACE_DETAIL_ALWAYS_INLINE inline __attribute__((always_inline))
/// After a lambda's parameter list: inline it into its caller.
#define EDGETRACE_DETAIL_INLINE_LAMBDA __attribute__((always_inline))
#else
#define EDGETRACE_DETAIL_LIKELY(x) (x)
#define EDGETRACE_DETAIL_UNLIKELY(x) (x)
#define EDGETRACE_DETAIL_NOINLINE
#define EDGETRACE_DETAIL_ALWAYS_INLINE inline
#define EDGETRACE_DETAIL_INLINE_LAMBDA
#endif

#if EDGETRACE_TLS_INITIAL_EXEC && (defined(__GNUC__) || defined(__clang__))
#define EDGETRACE_DETAIL_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define EDGETRACE_DETAIL_TLS_MODEL
#endif

#define EDGETRACE_DETAIL_CONCAT2(a, b) a##b
#define EDGETRACE_DETAIL_CONCAT(a, b) EDGETRACE_DETAIL_CONCAT2(a, b)
#define EDGETRACE_DETAIL_UNIQUE(prefix) EDGETRACE_DETAIL_CONCAT(prefix, __COUNTER__)
