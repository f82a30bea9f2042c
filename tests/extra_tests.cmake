# SPDX-License-Identifier: MIT
# Tests beyond the doctest glob: compile-fail, codegen identity, packaging consumers, README sync, and the pipeline end-to-end wiring.
# Included at the end of tests/CMakeLists.txt.

# The doctest main is linked into every test: give it the sanitizers too.
edgetrace_project_sanitizers(edgetrace_doctest_runner)

# Label `toolchain`: entries that only run the compiler or CMake on a file or
# a separate project (compile-fail, codegen identity, packaging). Nothing the
# preset instruments executes in them, so a sanitizer adds nothing: the tsan
# test preset leaves them out (asan keeps compile-fail and codegen: with the
# clang preset out of the default CI run, that is their clang run), and both
# sanitizer presets leave out `packaging` (a separate, uninstrumented CMake
# build of ~1 min). See docs/TESTING.md, "What each preset proves".

set(edgetrace_include_dir ${PROJECT_SOURCE_DIR}/include)
set(edgetrace_std_flag "${CMAKE_CXX17_STANDARD_COMPILE_OPTION}")
if(NOT edgetrace_std_flag)
  set(edgetrace_std_flag -std=c++17)
endif()

# --- Compile-fail: each failing entry has a control entry ------------------
# The control (same file, the fault removed by a define or the standard flag)
# must compile, so the failure is proven to be the fault, not the setup.
# check_compile.cmake also insists the diagnostics say EXPECT_IN_ERROR.
# edgetrace_compile_check(NAME fail|pass SOURCE STD DEFINES EXPECT_IN_ERROR [ERRORS_ONLY_IN])
function(edgetrace_compile_check name expect source std defines expect_in_error)
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND}
      -DCOMPILER=${CMAKE_CXX_COMPILER} -DSTD_FLAG=${std} -DINCLUDE_DIR=${edgetrace_include_dir}
      -DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/${source} "-DDEFINES=${defines}" -DEXPECT=${expect}
      "-DEXPECT_IN_ERROR=${expect_in_error}" "-DERRORS_ONLY_IN=${ARGN}"
      -P ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/check_compile.cmake)
  set_tests_properties(${name} PROPERTIES LABELS "compile_fail;toolchain")
  if(expect STREQUAL "fail")
    set_tests_properties(${name} PROPERTIES WILL_FAIL TRUE)
  endif()
endfunction()

# An undeclared category is a compile error (the diagnostics name it).
set(edgetrace_compile_fail_configs
  "enabled"                   ""
  "disabled"                  "EDGETRACE_ENABLED=0"
  "excluded"                  "EDGETRACE_EXCLUDED_CATEGORIES=\"typo\"")
while(edgetrace_compile_fail_configs)
  list(POP_FRONT edgetrace_compile_fail_configs config defines)
  edgetrace_compile_check(compile_fail_undeclared_category_${config} fail undeclared_category.cpp
    ${edgetrace_std_flag} "${defines}" edgetrace_category_typo)
  set(control_defines ${defines} DECLARE_IT)
  edgetrace_compile_check(compile_fail_undeclared_category_${config}_control pass undeclared_category.cpp
    ${edgetrace_std_flag} "${control_defines}" edgetrace_category_typo)
endwhile()

# A span name known only at run time: the error points to intern() +
# EDGETRACE_SCOPE_NAMED, enabled and compiled out alike.
edgetrace_compile_check(compile_fail_runtime_name_enabled fail runtime_name.cpp
  ${edgetrace_std_flag} "" EDGETRACE_SCOPE_NAMED)
edgetrace_compile_check(compile_fail_runtime_name_disabled fail runtime_name.cpp
  ${edgetrace_std_flag} "EDGETRACE_ENABLED=0" EDGETRACE_SCOPE_NAMED)
edgetrace_compile_check(compile_fail_runtime_name_control pass runtime_name.cpp
  ${edgetrace_std_flag} "LITERAL_NAME" EDGETRACE_SCOPE_NAMED)

# A pre-C++17 build stops at config.hpp with one message.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  edgetrace_compile_check(compile_fail_cxx14 fail cxx14.cpp -std=c++14 "" "edgetrace needs C++17" config.hpp)
  edgetrace_compile_check(compile_fail_cxx14_control pass cxx14.cpp ${edgetrace_std_flag} "" "edgetrace needs C++17")
endif()

# --- The runtime mode is in every mangled name (EDGETRACE_ABI_NAMESPACE) -----
# A program that mixes header-only and EDGETRACE_SEPARATE_RUNTIME=1 TUs fails
# to link, naming edgetrace::v1_rt::...; its control links (tests/abi).
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME abi_mode_mix_fails_to_link
    COMMAND ${CMAKE_COMMAND}
      -DCOMPILER=${CMAKE_CXX_COMPILER} -DSTD_FLAG=${edgetrace_std_flag} -DINCLUDE_DIR=${edgetrace_include_dir}
      -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}/abi -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/abi
      -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_abi_mix.cmake)
  set_tests_properties(abi_mode_mix_fails_to_link PROPERTIES LABELS "compile_fail;toolchain")
  # Every header gets the macro from config.hpp (directly or through another
  # header): an undefined EDGETRACE_ABI_NAMESPACE would silently become a
  # namespace of that name.
  add_test(NAME abi_namespace_defined_in_every_header
    COMMAND ${CMAKE_COMMAND}
      -DCOMPILER=${CMAKE_CXX_COMPILER} -DSTD_FLAG=${edgetrace_std_flag} -DINCLUDE_DIR=${edgetrace_include_dir}
      -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_headers.cmake)
  set_tests_properties(abi_namespace_defined_in_every_header PROPERTIES LABELS "compile_fail;toolchain")
endif()

# --- Codegen: compiled-out macros leave byte-identical machine code ---------
# One entry per macro kind, so a failure names the macro that left code
# (define lists use | here, as the cases themselves form a ;-list).
find_program(EDGETRACE_OBJCOPY NAMES ${CMAKE_OBJCOPY} objcopy llvm-objcopy)
set(edgetrace_codegen_cases
  "excluded_scope_instant"  "EDGETRACE_PROBE_SCOPE=1|EDGETRACE_PROBE_INSTANT=1|EDGETRACE_EXCLUDED_CATEGORIES=\"cold_cat\""
  "excluded_counter"        "EDGETRACE_PROBE_COUNTER=1|EDGETRACE_EXCLUDED_CATEGORIES=\"cold_cat\""
  "disabled_all"            "EDGETRACE_PROBE_SCOPE=1|EDGETRACE_PROBE_INSTANT=1|EDGETRACE_PROBE_COUNTER=1|EDGETRACE_ENABLED=0")
if(EDGETRACE_OBJCOPY AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  while(edgetrace_codegen_cases)
    list(POP_FRONT edgetrace_codegen_cases case defines)
    string(REPLACE "|" ";" defines "${defines}")
    add_test(NAME codegen_identical_${case}
      COMMAND ${CMAKE_COMMAND}
        -DCOMPILER=${CMAKE_CXX_COMPILER} -DSTD_FLAG=${edgetrace_std_flag} -DOBJCOPY=${EDGETRACE_OBJCOPY}
        -DINCLUDE_DIR=${edgetrace_include_dir} -DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/codegen/probe.cpp
        -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/codegen/${case} "-DDEFINES=${defines}"
        -P ${CMAKE_CURRENT_SOURCE_DIR}/codegen/check_codegen.cmake)
    set_tests_properties(codegen_identical_${case} PROPERTIES LABELS "codegen;toolchain")
  endwhile()
else()
  message(STATUS "edgetrace: no objcopy found; the codegen identity tests are not registered")
endif()

# The compiled-out scope type is empty (static_assert) and evaluates nothing.
foreach(config IN ITEMS excluded disabled)
  set(name codegen_compiled_out_${config}_test)
  add_executable(${name} codegen/compiled_out_test.cpp)
  target_link_libraries(${name} PRIVATE edgetrace_doctest_main)
  target_compile_definitions(${name} PRIVATE EDGETRACE_EXCLUDED_CATEGORIES="cold_cat")
  if(config STREQUAL "disabled")
    target_compile_definitions(${name} PRIVATE EDGETRACE_ENABLED=0)
  endif()
  edgetrace_project_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS codegen)
endforeach()

# --- Packaging: install + find_package, and add_subdirectory ---------------
if(EDGETRACE_INSTALL AND EDGETRACE_BUILD_TOOLS)
  set(edgetrace_packaging_modes find_package add_subdirectory plain)
else()
  set(edgetrace_packaging_modes add_subdirectory)
endif()
foreach(mode IN LISTS edgetrace_packaging_modes)
  add_test(NAME packaging_${mode}
    COMMAND ${CMAKE_COMMAND}
      -DMODE=${mode} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/consumer/${mode}
      -DCOMPILER=${CMAKE_CXX_COMPILER} "-DGENERATOR=${CMAKE_GENERATOR}" -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
      -P ${CMAKE_CURRENT_SOURCE_DIR}/consumer/run_consumer.cmake)
  set_tests_properties(packaging_${mode} PROPERTIES LABELS "packaging;toolchain" TIMEOUT 600)
endforeach()

# --- README: its quick start is examples/minimal.cpp, verbatim -------------
add_test(NAME readme_quick_start_matches_example
  COMMAND ${CMAKE_COMMAND} -DREADME=${PROJECT_SOURCE_DIR}/README.md
    -DEXAMPLE=${PROJECT_SOURCE_DIR}/examples/minimal.cpp -P ${PROJECT_SOURCE_DIR}/cmake/check_readme.cmake)
set_tests_properties(readme_quick_start_matches_example PROPERTIES LABELS docs)
# ARCHITECTURE.md's rooms and "where a newcomer starts" name real files.
add_test(NAME architecture_names_existing_files
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DDOC=docs/ARCHITECTURE.md
    -P ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_doc_paths.cmake)
set_tests_properties(architecture_names_existing_files PROPERTIES LABELS docs)
# ARCHITECTURE.md's layering, as the includes run (tests/docs/check_layers.cmake).
add_test(NAME architecture_layers_hold
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_layers.cmake)
set_tests_properties(architecture_layers_hold PROPERTIES LABELS docs)
# The README and every page under docs/: the source files they name (with a
# folder) exist; their links reach a file and a heading; every page is linked
# from the README; the README's `edgetrace COMMAND` and `bash FILE` lines run
# real commands and files.
file(GLOB edgetrace_doc_pages RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
add_test(NAME docs_name_existing_files
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} "-DDOC=README.md;${edgetrace_doc_pages}" -DPATHS_ONLY=ON
    -P ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_doc_paths.cmake)
add_test(NAME docs_links_and_commands
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DCLI=$<TARGET_FILE:edgetrace_cli>
    -P ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_doc_links.cmake)
set_tests_properties(docs_name_existing_files docs_links_and_commands PROPERTIES LABELS docs)

# --- The pipeline end-to-end test runs the real examples -------------------
if(TEST pipeline_e2e_test)
  if(TARGET pipeline)
    edgetrace_test_starts_named(${pipeline_e2e_test_program} pipeline pipeline_disabled minimal)
  else()
    # Examples not built: the test reports itself skipped.
    target_compile_definitions(${pipeline_e2e_test_program} PRIVATE EDGETRACE_TEST_PIPELINE="")
  endif()
  set_property(TEST pipeline_e2e_test APPEND PROPERTY LABELS e2e)
endif()

# --- The runtime compiled once (edgetrace::runtime, EDGETRACE_SEPARATE_RUNTIME=1)
if(TARGET edgetrace_runtime)
  add_executable(separate_runtime_app separate/main.cpp separate/work.cpp)
  target_link_libraries(separate_runtime_app PRIVATE edgetrace::runtime)
  edgetrace_project_warnings(separate_runtime_app)
  # Cross builds link it (the check that matters there); running it needs the
  # host's `edgetrace` and the emulator inside a cmake -P script, so not there.
  if(NOT CMAKE_CROSSCOMPILING)
    # Part of the separate_runtime knob configuration (knob_configurations.cmake).
    add_test(NAME separate_runtime_app@separate_runtime
      COMMAND ${CMAKE_COMMAND} -DAPP=$<TARGET_FILE:separate_runtime_app> -DCLI=$<TARGET_FILE:edgetrace_cli>
        -DDUMP=${EDGETRACE_TEST_TMP}/separate_runtime.etr -P ${CMAKE_CURRENT_SOURCE_DIR}/separate/check.cmake)
    set_tests_properties(separate_runtime_app@separate_runtime PROPERTIES LABELS "knob;separate_runtime")
  endif()
endif()

# --- The reader header-only (no edgetrace::reader), in two TUs ---------------
# Every other reading program links the library; this one proves the
# header-only reader a one-file tool uses: all of reader.hpp in two TUs links
# (every definition inline) and reads a dump as the library does. Its promise
# is the link and the result, so it is built at -O0 (~10 CPU-s of g++ for
# both TUs), and not under the sanitizers (the library's code is theirs to
# check) or for another architecture.
if("decode" IN_LIST edgetrace_test_rooms AND NOT EDGETRACE_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  add_executable(reader_header_only header_only_reader/main.cpp header_only_reader/other.cpp)
  target_link_libraries(reader_header_only PRIVATE edgetrace::edgetrace)
  target_compile_options(reader_header_only PRIVATE -O0)
  edgetrace_project_warnings(reader_header_only)
  add_test(NAME reader_header_only
    COMMAND ${CMAKE_COMMAND} -DAPP=$<TARGET_FILE:reader_header_only> -DCLI=$<TARGET_FILE:edgetrace_cli>
      -DDUMP=${CMAKE_CURRENT_SOURCE_DIR}/data/onnxruntime/run.etr -DWORK_DIR=${EDGETRACE_TEST_TMP}/reader_header_only
      -P ${CMAKE_CURRENT_SOURCE_DIR}/header_only_reader/check.cmake)
  set_tests_properties(reader_header_only PROPERTIES LABELS decode)
endif()

# --- NVTX forwarding, through a recording NVTX injection library (no GPU) --
if(TARGET edgetrace_nvtx)
  add_library(nvtx_injection SHARED nvtx/nvtx_injection.cpp)
  target_include_directories(nvtx_injection SYSTEM PRIVATE ${EDGETRACE_NVTX3_INCLUDE_DIR})
  edgetrace_project_warnings(nvtx_injection)
  add_executable(nvtx_app nvtx/nvtx_app.cpp)
  target_link_libraries(nvtx_app PRIVATE edgetrace::nvtx)
  edgetrace_project_warnings(nvtx_app)
  edgetrace_helper_runtime(nvtx_app)
  edgetrace_test_program(nvtx_test nvtx/nvtx_test.cpp)
  edgetrace_test_reader(nvtx_test)
  edgetrace_test_starts_named(nvtx_test nvtx_app nvtx_injection)
  add_test(NAME nvtx_test COMMAND nvtx_test)
  set_tests_properties(nvtx_test PROPERTIES LABELS nvtx)
  if(TARGET edgetrace_nvtx_capture)
    # NVTX capture: a program with NVTX calls only, run under libedgetrace-nvtx.so.
    add_executable(nvtx_engine_app nvtx/nvtx_engine_app.cpp)
    target_include_directories(nvtx_engine_app SYSTEM PRIVATE ${EDGETRACE_NVTX3_INCLUDE_DIR})
    target_link_libraries(nvtx_engine_app PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
    edgetrace_project_warnings(nvtx_engine_app)
    edgetrace_test_program(nvtx_capture_test nvtx/nvtx_capture_test.cpp)
    edgetrace_test_reader(nvtx_capture_test)
    # nvtx_app exports its symbols, so the library shares its runtime (the
    # header-only one, or the compiled one where the preset links helpers to it).
    set_target_properties(nvtx_app PROPERTIES ENABLE_EXPORTS ON)
    target_compile_definitions(nvtx_capture_test PRIVATE EDGETRACE_TEST_NVTX_ENGINE_APP="$<TARGET_FILE:nvtx_engine_app>"
      EDGETRACE_TEST_NVTX_CAPTURE="$<TARGET_FILE:edgetrace_nvtx_capture>" EDGETRACE_TEST_NVTX_APP="$<TARGET_FILE:nvtx_app>")
    edgetrace_test_starts(nvtx_capture_test nvtx_engine_app ${edgetrace_nvtx_capture_targets} nvtx_app)
    add_test(NAME nvtx_capture_test COMMAND nvtx_capture_test)
    set_tests_properties(nvtx_capture_test PROPERTIES LABELS nvtx)
  endif()
else()
  message(STATUS "edgetrace: NVTX 3 headers not found; NVTX forwarding is not built or tested")
endif()
