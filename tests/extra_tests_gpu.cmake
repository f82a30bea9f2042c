# SPDX-License-Identifier: MIT
# GPU spans (cuda.hpp): the fake-GPU suite always; with the CUDA
# toolkit, the same scope through the real CUDA runtime on a machine with no
# usable GPU (no libcuda, the toolkit's stub libcuda) and, labelled `cuda`,
# checks that need a real GPU (they skip cleanly without one). NVTX
# forwarding has its own tests (tests/nvtx, label nvtx).
# Included at the end of tests/CMakeLists.txt.

# A traced program on the fake GPU that gpu_test runs as a child.
add_executable(gpu_app support/gpu_app.cpp)
target_link_libraries(gpu_app PRIVATE edgetrace::edgetrace ${CMAKE_DL_LIBS})
target_include_directories(gpu_app PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
edgetrace_project_warnings(gpu_app)  # header-only always: gpu_app_separate (below) is the other mode
# perfetto_test converts the same child's dump (GPU tracks, launch flows).
if(TEST perfetto_test)
  edgetrace_test_starts_named(${perfetto_test_program} gpu_app)
endif()
if(TARGET gpu_test)
  edgetrace_test_starts_named(gpu_test gpu_app)
  set_tests_properties(gpu_test PROPERTIES ENVIRONMENT "EDGETRACE_OUTPUT=${EDGETRACE_TEST_TMP}/gpu_test.etr")
  # The same child runs on the separate runtime (edgetrace::runtime): the
  # GPU add-on reaches the flusher through declarations only.
  if(TARGET edgetrace_runtime)
    add_executable(gpu_app_separate support/gpu_app.cpp)
    target_link_libraries(gpu_app_separate PRIVATE edgetrace::runtime ${CMAKE_DL_LIBS})
    target_include_directories(gpu_app_separate PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    edgetrace_project_warnings(gpu_app_separate)
    edgetrace_test_starts(gpu_test gpu_app_separate)
    # Part of the separate_runtime knob configuration (knob_configurations.cmake).
    add_test(NAME gpu_test@separate_runtime COMMAND gpu_test "-tc=gpu errors*,gpu exit*,gpu steady*,gpu end to end*")
    set_tests_properties(gpu_test@separate_runtime PROPERTIES LABELS "gpu;knob;separate_runtime" ENVIRONMENT
      "EDGETRACE_OUTPUT=${EDGETRACE_TEST_TMP}/gpu_test_separate.etr;GPU_TEST_APP=$<TARGET_FILE:gpu_app_separate>")
  endif()
endif()

# --- The real CUDA runtime: tests/cuda (also configured without doctest) ---
if(EDGETRACE_HAVE_CUDA)
  add_subdirectory(cuda)
endif()
# The GPU check's path without a device (tools/gpu_check.sh): one line, exit 77.
add_test(NAME gpu_check_no_device COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cuda/gpu_check_no_device.sh
         ${PROJECT_SOURCE_DIR}/tools/gpu_check.sh ${EDGETRACE_TEST_TMP}/gpu_check_no_device)
set_tests_properties(gpu_check_no_device PROPERTIES LABELS gpu)
# Its judge on the fake GPU's pipeline: 20 frames x 4 launches resolved,
# each inside [launch, end of the frame's "wait"], no overlap on a stream.
add_test(NAME gpu_check_judge_fake COMMAND bash -c
  "EDGETRACE_OUTPUT='${EDGETRACE_TEST_TMP}/gpu_check_judge.etr' '$<TARGET_FILE:gpu_app>' pipeline >/dev/null && \
   '$<TARGET_FILE:edgetrace_gpu_check_read>' example '${EDGETRACE_TEST_TMP}/gpu_check_judge.etr' 80")
set_tests_properties(gpu_check_judge_fake PROPERTIES LABELS gpu PASS_REGULAR_EXPRESSION "PASS 2 example inside"
  FAIL_REGULAR_EXPRESSION "FAIL")
# Its check 9 (the device samples through NVML against nvidia-smi) on the
# fake GPU's program sampling NVML's stand-in: two GPUs, every quantity.
set(judge_device ${EDGETRACE_TEST_TMP}/gpu_check_judge_device)
add_test(NAME gpu_check_judge_device_fake COMMAND bash -c
  "printf '37 1410 61 215000\\n12 1200 45 90000\\n' >'${judge_device}.values' && \
   printf '0, 2520, 60, 300.00\\n1, 2520, 44, 300.00\\n' >'${judge_device}.smi' && \
   EDGETRACE_OUTPUT='${judge_device}.etr' EDGETRACE_SAMPLE_MS=10 EDGETRACE_NVML_LIBRARY='$<TARGET_FILE:fake_nvml>' \
   FAKE_NVML_VALUES='${judge_device}.values' '$<TARGET_FILE:gpu_app>' pipeline >/dev/null && \
   '$<TARGET_FILE:edgetrace_gpu_check_read>' device '${judge_device}.etr' '${judge_device}.smi'")
set_tests_properties(gpu_check_judge_device_fake PROPERTIES LABELS gpu
  PASS_REGULAR_EXPRESSION "PASS 9 device gpu1 temperature and power" FAIL_REGULAR_EXPRESSION "FAIL")

# flight_test reads the same child's GPU spans back from a snapshot.
if(TEST flight_test)
  edgetrace_test_starts_named(${flight_test_program} gpu_app)
endif()
