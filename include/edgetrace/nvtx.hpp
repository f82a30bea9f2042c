// SPDX-License-Identifier: MIT
// NVTX forwarding: with EDGETRACE_NVTX=1, every edgetrace scope also becomes
// an NVTX range (and every instant an NVTX mark) in the domain "edgetrace",
// with registered strings and one NVTX category per edgetrace category, so
// Nsight Systems shows the same names as edgetrace. Header-only over NVTX 3
// (<nvtx3/nvToolsExt.h>, in the CUDA toolkit); the CMake target
// edgetrace::nvtx adds its include path and libdl. Include it in one file of
// the program; it plugs itself into the scopes' hooks at start-up.
//
// Cost with EDGETRACE_NVTX=1: an NVTX push and pop per scope plus a lookup
// in a small per-thread cache of registered names (a lock and a
// registration the first time a thread meets a name). Without a tool
// attached (no Nsight, no NVTX_INJECTION64_PATH) the NVTX calls are
// skipped altogether.
#pragma once

#include <edgetrace/edgetrace.hpp>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nvtx3/nvToolsExt.h>

#if EDGETRACE_ENABLED

namespace edgetrace {
inline namespace v1 {
namespace detail {

/// The "edgetrace" domain, created on first use (thread-safe). Null when no
/// NVTX tool is attached: every call below is then skipped.
inline nvtxDomainHandle_t nvtx_domain() noexcept {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("edgetrace");
  return domain;
}

#if defined(__has_include)
#if !__has_include(<edgetrace/detail/hooks.hpp>)
/// The name of interned id `id` ("" when unknown). A stand-in for the
/// runtime's own lookup, which comes with the scope hooks.
inline std::string_view interned_name(std::uint32_t id) {
  runtime* rt = the_runtime.load(std::memory_order_acquire);
  if (!owns_runtime(rt) || id == 0) return {};
  std::lock_guard<std::mutex> lock(rt->intern_mutex_);
  if (id > rt->intern_names_.size()) return {};
  return *rt->intern_names_[id - 1];  // the map's keys never move
}
#endif
#endif

/// What an NVTX event of one record word needs.
struct nvtx_name {
  std::uint64_t word = 0;  ///< 0: empty cache slot
  nvtxStringHandle_t name = nullptr;
  std::uint32_t category = 0;
};

/// Names registered so far, for every thread (registry mutex).
struct nvtx_registry {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, nvtx_name> names;
  std::vector<bool> categories_named;
};
inline nvtx_registry& nvtx_names() noexcept {
  static nvtx_registry* const registry = new nvtx_registry;  // never destroyed: scopes may run during exit
  return *registry;
}

/// A thread's cache of registered names, direct-mapped by word. Trivial
/// and constant-initialised: a plain TLS access.
inline thread_local nvtx_name nvtx_cache[64] = {};

/// Registers the name and category of `word` (a site pointer or a named
/// span's word) in the domain; slow path, once per name per process.
inline nvtx_name nvtx_register(std::uint64_t word) {
  nvtx_registry& r = nvtx_names();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto found = r.names.find(word);
  if (found != r.names.end()) return found->second;
  std::string name;
  std::string category_name;
  std::uint32_t category = 0;
  if ((word & 3) == tag_named) {
    category = static_cast<std::uint32_t>((word >> 2) & 0x3FFFFFFF);
    name = std::string(interned_name(static_cast<std::uint32_t>(word >> 32)));
    std::lock_guard<std::mutex> categories(category_mutex);
    if (const category_state* c = find_category_locked(category)) category_name = c->name;
  } else {
    const site* s = reinterpret_cast<const site*>(static_cast<std::uintptr_t>(word));
    name = s->name;
    category = s->category->index;
    category_name = s->category->name;
  }
  if (name.empty()) name = "(unnamed)";
  const nvtxDomainHandle_t domain = nvtx_domain();
  if (category >= r.categories_named.size()) r.categories_named.resize(category + 1, false);
  if (!r.categories_named[category] && !category_name.empty()) {
    nvtxDomainNameCategoryA(domain, category, category_name.c_str());
    r.categories_named[category] = true;
  }
  nvtx_name entry;
  entry.word = word;
  entry.name = nvtxDomainRegisterStringA(domain, name.c_str());
  entry.category = category;
  r.names.emplace(word, entry);
  return entry;
}

inline nvtxEventAttributes_t nvtx_attributes(std::uint64_t word) {
  nvtx_name& slot = nvtx_cache[(word >> 3) & 63];
  if (slot.word != word) slot = nvtx_register(word);
  nvtxEventAttributes_t attributes;
  std::memset(&attributes, 0, sizeof attributes);
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.category = slot.category;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = slot.name;
  return attributes;
}

/// Scope start: an NVTX range pushed in the edgetrace domain.
inline void nvtx_begin(std::uint64_t word) noexcept {
  const nvtxDomainHandle_t domain = nvtx_domain();
  if (domain == nullptr) return;
  const nvtxEventAttributes_t attributes = nvtx_attributes(word);
  nvtxDomainRangePushEx(domain, &attributes);
}

/// Scope end: pops the range its start pushed (scopes nest per thread).
inline void nvtx_end(std::uint64_t) noexcept {
  const nvtxDomainHandle_t domain = nvtx_domain();
  if (domain != nullptr) nvtxDomainRangePop(domain);
}

/// Instant (and mark): an NVTX mark.
inline void nvtx_instant(std::uint64_t word) noexcept {
  const nvtxDomainHandle_t domain = nvtx_domain();
  if (domain == nullptr) return;
  const nvtxEventAttributes_t attributes = nvtx_attributes(word);
  nvtxDomainMarkEx(domain, &attributes);
}

}  // namespace detail
}  // namespace v1
}  // namespace edgetrace

// The scope hooks (detail/hooks.hpp, with the EDGETRACE_NVTX switch) call
// the three functions above on every scope and instant once installed.
#if defined(__has_include)
#if __has_include(<edgetrace/detail/hooks.hpp>)
#include <edgetrace/detail/hooks.hpp>
namespace edgetrace {
inline namespace v1 {
namespace detail {
inline constexpr scope_hooks nvtx_scope_hooks{&nvtx_begin, &nvtx_end, &nvtx_instant};
/// Static-initialisation trigger: including nvtx.hpp is what installs the hooks.
inline const bool nvtx_hooks_installed = (install_scope_hooks(nvtx_scope_hooks), true);
}  // namespace detail
}  // namespace v1
}  // namespace edgetrace
#endif
#endif

#endif  // EDGETRACE_ENABLED
