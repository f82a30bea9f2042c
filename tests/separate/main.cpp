// SPDX-License-Identifier: MIT
// A program built with the runtime compiled once (edgetrace::runtime,
// EDGETRACE_SEPARATE_RUNTIME=1): two TUs trace, one category is declared
// in both, a second thread traces, names are interned. check.cmake runs it
// traced and checks the dump with the `edgetrace` tool.
#include <edgetrace/edgetrace.hpp>

#include <string>
#include <thread>

EDGETRACE_CATEGORY(separate);

void work(int i);  // work.cpp: one "work" span per call

int main() {
  EDGETRACE_THREAD_NAME("main");
  const auto layer = edgetrace::intern(std::string("interned_layer"));
  std::thread helper([] {
    EDGETRACE_THREAD_NAME("helper");
    for (int i = 0; i < 500; ++i) work(i);
  });
  for (int i = 0; i < 1000; ++i) {
    EDGETRACE_SCOPE(separate, "outer");
    EDGETRACE_SCOPE_NAMED(separate, layer);
    work(i);
  }
  helper.join();
  EDGETRACE_MARK(separate, "done");
  return edgetrace::tracing_active() ? 0 : 3;
}
