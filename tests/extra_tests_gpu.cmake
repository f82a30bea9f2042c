# SPDX-License-Identifier: MIT
# GPU spans (issue 5, cuda.hpp): the fake-GPU suite always; with the CUDA
# toolkit, the same scope through the real CUDA runtime on a machine with no
# usable GPU (no libcuda, the toolkit's stub libcuda) and, labelled `cuda`,
# checks that need a real GPU (they skip cleanly without one). NVTX
# forwarding has its own tests (tests/nvtx, label nvtx).
# Included at the end of tests/CMakeLists.txt.

# A traced program on the fake GPU that gpu_test runs as a child.
add_executable(gpu_app support/gpu_app.cpp)
target_link_libraries(gpu_app PRIVATE edgetrace::edgetrace)
target_include_directories(gpu_app PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
edgetrace_project_warnings(gpu_app)
# perfetto_test converts the same child's dump (GPU tracks, launch flows).
if(TARGET perfetto_test)
  target_compile_definitions(perfetto_test PRIVATE EDGETRACE_TEST_GPU_APP="$<TARGET_FILE:gpu_app>")
  add_dependencies(perfetto_test gpu_app)
endif()
if(TARGET gpu_test)
  target_compile_definitions(gpu_test PRIVATE EDGETRACE_TEST_GPU_APP="$<TARGET_FILE:gpu_app>")
  add_dependencies(gpu_test gpu_app)
  set_tests_properties(gpu_test PROPERTIES LABELS gpu ENVIRONMENT "EDGETRACE_OUTPUT=${EDGETRACE_TEST_TMP}/gpu_test.etr")
  # The same child runs on the separate runtime (edgetrace::runtime): the
  # GPU add-on reaches the flusher through declarations only.
  if(TARGET edgetrace_runtime)
    add_executable(gpu_app_separate support/gpu_app.cpp)
    target_link_libraries(gpu_app_separate PRIVATE edgetrace::runtime)
    target_include_directories(gpu_app_separate PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    edgetrace_project_warnings(gpu_app_separate)
    add_dependencies(gpu_test gpu_app_separate)
    # Part of the separate_runtime knob configuration (knob_configurations.cmake).
    add_test(NAME gpu_test@separate_runtime COMMAND gpu_test "-tc=gpu errors*,gpu exit*,gpu end to end*")
    set_tests_properties(gpu_test@separate_runtime PROPERTIES LABELS "gpu;knob;separate_runtime" ENVIRONMENT
      "EDGETRACE_OUTPUT=${EDGETRACE_TEST_TMP}/gpu_test_separate.etr;GPU_TEST_APP=$<TARGET_FILE:gpu_app_separate>")
  endif()
endif()

# --- The real CUDA runtime --------------------------------------------------
if(EDGETRACE_HAVE_CUDA)
  add_executable(cudart_app cuda/cudart_app.cpp)
  target_link_libraries(cudart_app PRIVATE edgetrace::cuda)
  edgetrace_project_warnings(cudart_app)
  add_executable(cudart_check cuda/cudart_check.cpp)
  target_link_libraries(cudart_check PRIVATE edgetrace::edgetrace)
  target_include_directories(cudart_check PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(cudart_check PRIVATE EDGETRACE_TEST_TMPDIR="${EDGETRACE_TEST_TMP}")
  edgetrace_project_warnings(cudart_check)
  add_dependencies(cudart_check cudart_app edgetrace_cli)
  set(cudart_check_args $<TARGET_FILE:cudart_app> $<TARGET_FILE:edgetrace_cli> ${EDGETRACE_TEST_TMP})

  # The toolkit's stub libcuda, under the name the CUDA runtime loads.
  find_library(EDGETRACE_CUDA_STUB NAMES cuda PATHS ${CUDAToolkit_LIBRARY_DIR}/stubs ${CUDAToolkit_LIBRARY_ROOT}/lib64/stubs
               NO_DEFAULT_PATH)
  if(EDGETRACE_CUDA_STUB)
    set(stub_dir ${CMAKE_CURRENT_BINARY_DIR}/cuda_stub)
    file(MAKE_DIRECTORY ${stub_dir})
    file(CREATE_LINK ${EDGETRACE_CUDA_STUB} ${stub_dir}/libcuda.so.1 SYMBOLIC)
    add_test(NAME cudart_stub_driver COMMAND cudart_check stub ${cudart_check_args} ${stub_dir})
    set_tests_properties(cudart_stub_driver PROPERTIES LABELS gpu)
  endif()
  add_test(NAME cudart_no_driver COMMAND cudart_check no-driver ${cudart_check_args})
  add_test(NAME cudart_real_gpu COMMAND cudart_check gpu ${cudart_check_args})
  set_tests_properties(cudart_no_driver PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  set_tests_properties(cudart_real_gpu PROPERTIES LABELS cuda SKIP_RETURN_CODE 77)
endif()
if(TARGET cuda_pipeline AND TARGET cudart_check)
  add_test(NAME cuda_pipeline_example COMMAND cudart_check example ${cudart_check_args} $<TARGET_FILE:cuda_pipeline>)
  set_tests_properties(cuda_pipeline_example PROPERTIES LABELS cuda SKIP_RETURN_CODE 77)
endif()

# flight_test reads the same child's GPU spans back from a snapshot.
if(TARGET flight_test)
  target_compile_definitions(flight_test PRIVATE EDGETRACE_TEST_GPU_APP="$<TARGET_FILE:gpu_app>")
  add_dependencies(flight_test gpu_app)
endif()
