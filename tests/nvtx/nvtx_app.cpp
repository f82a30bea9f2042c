// SPDX-License-Identifier: MIT
// A traced program with NVTX forwarding (nvtx.hpp), run by
// tests/nvtx/nvtx_test.cpp under the recording tool nvtx_injection.
// Three times: a scope "outer" around a run-time-named scope "layer_3" and
// an instant "tick"; then a span of another category.
#include <edgetrace/edgetrace.hpp>
#include <edgetrace/nvtx.hpp>

EDGETRACE_CATEGORY(nvtxcat);
EDGETRACE_CATEGORY(other);

#if __has_include(<edgetrace/detail/hooks.hpp>)
#define NVTX_APP_DIRECT 0  // the scopes' own hooks forward (EDGETRACE_NVTX=1)
#else
#define NVTX_APP_DIRECT 1  // no scope hooks in this runtime yet: forward by hand
#endif

namespace {
namespace et = edgetrace::detail;

std::uint64_t word_of(const et::site& s) { return reinterpret_cast<std::uintptr_t>(&s); }
}  // namespace

int main() {
  const auto layer = edgetrace::intern("layer_3");
  for (int i = 0; i < 3; ++i) {
    EDGETRACE_SCOPE(nvtxcat, "outer");
#if NVTX_APP_DIRECT
    const std::uint64_t outer = word_of(EDGETRACE_DETAIL_SITE(nvtxcat, "outer", ::edgetrace::format::site_kind::span)());
    const std::uint64_t named = (std::uint64_t{layer.id} << 32) |
                                (std::uint64_t{EDGETRACE_DETAIL_CATEGORY_TYPE(nvtxcat)::state.index} << 2) | et::tag_named;
    const std::uint64_t tick = word_of(EDGETRACE_DETAIL_SITE(nvtxcat, "tick", ::edgetrace::format::site_kind::instant)());
    et::nvtx_begin(outer);
    et::nvtx_begin(named);
    et::nvtx_end(named);
    et::nvtx_instant(tick);
    et::nvtx_end(outer);
#else
    { EDGETRACE_SCOPE_NAMED(nvtxcat, layer); }
    EDGETRACE_INSTANT(nvtxcat, "tick");
#endif
  }
  {
    EDGETRACE_SCOPE(other, "elsewhere");
#if NVTX_APP_DIRECT
    const std::uint64_t w = word_of(EDGETRACE_DETAIL_SITE(other, "elsewhere", ::edgetrace::format::site_kind::span)());
    et::nvtx_begin(w);
    et::nvtx_end(w);
#endif
  }
  return 0;
}
