// SPDX-License-Identifier: MIT
// A small traced program the writer, flight and reader tests run as a child
// process, one behaviour per mode: `trace_app MODE ARGS...` (no MODE: idle).
// The modes live by room in tests/support/trace_app/<room>_modes.hpp, each
// with a table; main() looks the name up in the tables.
#include <csignal>
#include <cstdlib>

// "signal-chain" needs an app handler installed before edgetrace starts (in
// static initialisation, which runs in order of appearance in this file), to
// check that EDGETRACE_SIGNAL_FLUSH chains to it.
namespace {
volatile std::sig_atomic_t app_handler_calls = 0;
void app_handler(int) { app_handler_calls = app_handler_calls + 1; }
const bool app_handler_installed = std::getenv("TRACE_APP_HANDLER") != nullptr &&
                                   std::signal(SIGTERM, app_handler) != SIG_ERR;
}  // namespace

#include <support/trace_app/annotation_modes.hpp>
#include <support/trace_app/capture_modes.hpp>
#include <support/trace_app/device_modes.hpp>
#include <support/trace_app/flight_modes.hpp>
#include <support/trace_app/life_modes.hpp>
#include <support/trace_app/load_modes.hpp>
#include <support/trace_app/snapshot_modes.hpp>
#include <support/trace_app/trust_modes.hpp>

#include <cstddef>
#include <cstring>

// Counts every allocation while `counting` is on (the "idle" mode checks that
// a disabled tracer allocates nothing).
#include <support/count_allocations.hpp>

#if EDGETRACE_TEST_ADDRESS_SANITIZED
#include <sanitizer/lsan_interface.h>
// LeakSanitizer's exit-time check locks the whole ASan allocator. The ASan
// runtimes of clang 14 and GCC 12 do not take those locks around fork(), so
// a child forked while another thread was inside malloc/free inherits one
// held, and its check at exit() waits forever (seen in "fork" mode: the
// child stuck in __lsan::LockAllocator, the test hanging). The check means
// nothing in such a child anyway (the parent's other threads, and the memory
// only they reach, do not exist there), so it is off in forked children
// only; every trace_app parent is still leak-checked.
namespace {
const pid_t leak_checked_pid = getpid();
}  // namespace
extern "C" __attribute__((used)) int __lsan_is_turned_off() { return getpid() != leak_checked_pid ? 1 : 0; }
#endif

namespace {
/// Every room's table.
struct mode_table {
  const trace_app::app_mode* first;
  std::size_t count;
  template <std::size_t N>
  constexpr mode_table(const trace_app::app_mode (&modes)[N]) : first(modes), count(N) {}  // NOLINT: implicit on purpose
};
const mode_table tables[] = {trace_app::life_modes,     trace_app::load_modes,       trace_app::capture_modes,
                             trace_app::annotation_modes, trace_app::flight_modes, trace_app::snapshot_modes,
                             trace_app::trust_modes, trace_app::device_modes};
}  // namespace

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "idle";
  for (const mode_table& t : tables)
    for (std::size_t i = 0; i < t.count; ++i)
      if (std::strcmp(t.first[i].name, name) == 0) return t.first[i].run(argc, argv);
  std::fprintf(stderr, "trace_app: unknown mode %s\n", name);
  return 2;
}
