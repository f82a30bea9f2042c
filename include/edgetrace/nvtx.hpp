// SPDX-License-Identifier: MIT
// NVTX forwarding: with EDGETRACE_NVTX=1 every EDGETRACE_SCOPE also becomes
// an NVTX range, and every EDGETRACE_INSTANT / EDGETRACE_MARK an NVTX mark,
// in the domain "edgetrace", with registered strings and one NVTX category
// per edgetrace category, so Nsight Systems shows the same names.
//
//   #include <edgetrace/nvtx.hpp>   // in ONE source file of the program
//                                   // (CMake: link edgetrace::nvtx)
//   EDGETRACE_NVTX=1 nsys profile ./app                  (NVTX only)
//   EDGETRACE_NVTX=1 EDGETRACE_OUTPUT=run.etr nsys ...   (both)
//
// Needs the NVTX 3 headers (header-only; CUDA toolkit's include/nvtx3 or
// github.com/NVIDIA/NVTX) and dlopen (-ldl on old glibc). Without
// EDGETRACE_NVTX=1 nothing here runs: scopes do not even look at the hooks.
// With it, a scope costs what the NVTX tool costs (no tool attached: a few
// ns; docs/PERFORMANCE.md) plus a thread-local cache lookup for its string.
// Categories follow EDGETRACE_CATEGORIES, as for recording.
#pragma once

#include <edgetrace/edgetrace.hpp>

#if EDGETRACE_ENABLED

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>

#include <dlfcn.h>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {
namespace nvtx {

/// The "edgetrace" NVTX domain, created on first use.
inline nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("edgetrace");
  return handle;
}

/// NVTX category ids are edgetrace category indexes; each is named once.
inline constexpr std::uint32_t max_named_categories = 1024;
inline std::atomic<bool> category_named[max_named_categories] = {};

inline void name_category(std::uint32_t index, const char* name) noexcept {
  if (index == 0 || index >= max_named_categories || name == nullptr) return;
  if (!category_named[index].load(std::memory_order_relaxed) && !category_named[index].exchange(true))
    nvtxDomainNameCategoryA(domain(), index, name);
}

/// What a record word names: the registered string and the category.
struct label {
  std::uint64_t word = 0;
  nvtxStringHandle_t string = nullptr;
  std::uint32_t category = 0;
};

/// Per-thread, direct-mapped: a site's string is registered once per thread
/// at most (NVTX tools return the same handle for the same string).
inline constexpr std::size_t cache_slots = 256;
inline thread_local label cache[cache_slots];

inline const label& label_of(std::uint64_t word) noexcept {
  label& slot = cache[(word >> 3 ^ word >> 32) % cache_slots];
  if (slot.word == word && slot.string != nullptr) return slot;
  const char* name = nullptr;
  const char* category_name = nullptr;
  std::uint32_t category = 0;
  if (detail::tag_of(word) == detail::tag_named) {
    name = detail::interned_name(detail::named_id(word));
    category = detail::named_category(word);
    category_name = detail::category_name(category);
  } else {
    const detail::site* site = detail::site_of(word);
    name = site->name;
    category = site->category->index;
    category_name = site->category->name;
  }
  name_category(category, category_name);
  slot.word = word;
  slot.category = category;
  slot.string = nvtxDomainRegisterStringA(domain(), name != nullptr ? name : "(unnamed)");
  return slot;
}

inline nvtxEventAttributes_t attributes(std::uint64_t word) noexcept {
  const label& l = label_of(word);
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = l.category;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = l.string;
  return a;
}

inline void begin(std::uint64_t word) noexcept {
  const nvtxEventAttributes_t a = attributes(word);
  nvtxDomainRangePushEx(domain(), &a);
}
inline void end(std::uint64_t) noexcept { nvtxDomainRangePop(domain()); }
inline void instant(std::uint64_t word) noexcept {
  const nvtxEventAttributes_t a = attributes(word);
  nvtxDomainMarkEx(domain(), &a);
}

inline constexpr detail::scope_hooks hooks{"NVTX", &begin, &end, &instant, &::dlopen};

/// Installs the hooks during static initialisation of every TU that
/// includes this header (the same table each time).
inline const bool installed = (detail::install_scope_hooks(&hooks), true);

}  // namespace nvtx
}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#endif  // EDGETRACE_ENABLED
