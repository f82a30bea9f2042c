// SPDX-License-Identifier: MIT
// Scope hooks (face/hooks.hpp, the seam under EDGETRACE_NVTX=1): a test
// hook table records every call; ctest runs this three ways:
//   hooks_test            no EDGETRACE_NVTX: installed hooks are never called
//   hooks_test_nvtx_only  EDGETRACE_NVTX=1, no output: hooks called, nothing recorded
//   hooks_test_recording  EDGETRACE_NVTX=1 and EDGETRACE_OUTPUT: both
// EDGETRACE_CATEGORIES="*,-muted" in the last two: the filter applies to hooks too.
#include <doctest/doctest.h>

#include <edgetrace/edgetrace.hpp>
#include <support/read_dump.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace hooks_test {

EDGETRACE_CATEGORY(hooked);
EDGETRACE_CATEGORY(muted);

namespace {

namespace detail = edgetrace::detail;

/// "begin:NAME", "end:NAME", "instant:NAME" per call, in order.
std::vector<std::string> calls;

std::string name_of(std::uint64_t word) {
  if (detail::tag_of(word) == detail::tag_named) {
    const char* name = detail::interned_name(detail::named_id(word));
    const char* category = detail::category_name(detail::named_category(word));
    return std::string(name != nullptr ? name : "?") + "@" + (category != nullptr ? category : "?");
  }
  const detail::site* s = detail::site_of(word);
  return std::string(s->name) + "@" + s->category->name;
}

void on_begin(std::uint64_t word) noexcept { calls.push_back("begin:" + name_of(word)); }
void on_end(std::uint64_t word) noexcept { calls.push_back("end:" + name_of(word)); }
void on_instant(std::uint64_t word) noexcept { calls.push_back("instant:" + name_of(word)); }

const detail::scope_hooks test_hooks{"test", &on_begin, &on_end, &on_instant, nullptr};  // the executable: nothing to keep loaded
// Installed during static initialisation, like <edgetrace/nvtx.hpp> does
// (in whatever order relative to the runtime's own start-up).
const bool installed = (detail::install_scope_hooks(&test_hooks), true);

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

void traced_work() {
  EDGETRACE_SCOPE(hooked, "outer");
  {
    EDGETRACE_SCOPE(hooked, "inner");
    EDGETRACE_SCOPE(muted, "filtered");
  }
  const auto layer = edgetrace::intern("conv2d_3");
  { EDGETRACE_SCOPE_NAMED(hooked, layer); }
  EDGETRACE_INSTANT(hooked, "ready");
  EDGETRACE_MARK(hooked, "frame");
  EDGETRACE_COUNTER(hooked, "depth", 3);  // counters have no hook
}

}  // namespace

TEST_CASE("scope hooks follow EDGETRACE_NVTX, nest, and see names") {
  REQUIRE(installed);
  calls.clear();
  traced_work();
  const bool wanted = env_is("EDGETRACE_NVTX", "1");
  const bool recording = std::getenv("EDGETRACE_OUTPUT") != nullptr;
  CHECK(edgetrace::tracing_active() == recording);
  if (!EDGETRACE_ENABLED || !wanted) {
    CHECK(calls.empty());
    return;
  }
  // Interned names resolve with or without a dump (hooks-only mode keeps
  // its own table).
  const std::string layer = "conv2d_3@hooked";
  const std::vector<std::string> expected{
      "begin:outer@hooked", "begin:inner@hooked", "end:inner@hooked", "begin:" + layer, "end:" + layer,
      "instant:ready@hooked", "instant:frame@hooked", "end:outer@hooked"};
  CHECK(calls == expected);
}

// Only in hooks_test_recording (and the knob configurations' hooks_test@...):
// skipped where nothing is recorded.
TEST_CASE("with EDGETRACE_OUTPUT too, hooked scopes are still recorded with their times" *
          doctest::skip(!EDGETRACE_ENABLED || std::getenv("EDGETRACE_OUTPUT") == nullptr)) {
  for (int i = 0; i < 100; ++i) traced_work();
  edgetrace::flush();
  const auto dump = edgetrace_test::load_dump(std::getenv("EDGETRACE_OUTPUT"));
  REQUIRE(dump.opened);
  CHECK(dump.named("outer").size() >= 100);
  CHECK(dump.named("inner").size() >= 100);
  CHECK(dump.named("conv2d_3").size() >= 100);
  CHECK(dump.named("filtered").empty());
  for (const auto& e : dump.named("inner")) CHECK(e.end_ns >= e.begin_ns);
  CHECK(dump.named("depth").size() >= 100);
}

}  // namespace hooks_test
