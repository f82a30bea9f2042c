// SPDX-License-Identifier: MIT
// A shared library that includes edgetrace and traces its own spans. Built
// three times (tests/extra_tests_reliability.cmake): DSO_NAME=lib_a (linked
// to dso_app), lib_b (dlopen'd), lib_hidden (dlopen'd, -fvisibility=hidden:
// a private copy of the library), lib_unload and lib_cuda (dlopen'd and
// really unmapped by dlclose; lib_cuda is what a plugin that includes
// cuda.hpp has: <edgetrace/nvml.hpp> and GPU scopes, here on the fake GPU),
// lib_nvtx (the same with <edgetrace/nvtx.hpp>). Each has a category of its
// own and one shared with the app ("shared_cat").
#include <edgetrace/edgetrace.hpp>
#if DSO_CUDA_LIKE
#include <edgetrace/gpu/spans.hpp>
#include <edgetrace/nvml.hpp>
#include <support/fake_gpu.hpp>
#endif
#if DSO_NVTX
#include <edgetrace/nvtx.hpp>
#endif

#define DSO_CONCAT2(a, b) a##b
#define DSO_CONCAT(a, b) DSO_CONCAT2(a, b)
// One more expansion step, so the category is named lib_a, not DSO_NAME.
#define DSO_CATEGORY(cat) EDGETRACE_CATEGORY(cat)
#define DSO_SCOPE(cat, name) EDGETRACE_SCOPE(cat, name)

DSO_CATEGORY(DSO_NAME);
EDGETRACE_CATEGORY(shared_cat);

extern "C" __attribute__((visibility("default"))) void DSO_CONCAT(DSO_NAME, _work)(int count) {
  for (int i = 0; i < count; ++i) {
    DSO_SCOPE(DSO_NAME, DSO_SPAN);
    EDGETRACE_SCOPE(shared_cat, "shared_span");
  }
}

#if DSO_CUDA_LIKE
extern "C" __attribute__((visibility("default"))) void DSO_CONCAT(DSO_NAME, _gpu_work)(int count) {
  for (int i = 0; i < count; ++i) {
    EDGETRACE_DETAIL_GPU_SCOPE(DSO_NAME, "kernel", nullptr, edgetrace_test::fake_backend());
  }
}
#endif
