# SPDX-License-Identifier: MIT
# GPU spans (issue 5) on a fake GPU: needs no CUDA toolkit.
# Included at the end of tests/CMakeLists.txt.

# A traced program on the fake GPU that gpu_test runs as a child.
add_executable(gpu_app support/gpu_app.cpp)
target_link_libraries(gpu_app PRIVATE edgetrace::edgetrace)
target_include_directories(gpu_app PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
edgetrace_project_warnings(gpu_app)
if(TARGET gpu_test)
  target_compile_definitions(gpu_test PRIVATE EDGETRACE_TEST_GPU_APP="$<TARGET_FILE:gpu_app>")
  add_dependencies(gpu_test gpu_app)
  set_tests_properties(gpu_test PROPERTIES LABELS gpu ENVIRONMENT "EDGETRACE_OUTPUT=${EDGETRACE_TEST_TMP}/gpu_test.etr")
endif()
