# SPDX-License-Identifier: MIT
# One suite, many configurations: the tests whose code a build knob changes,
# built and run again under that knob (a test that meets the knob only in
# the trace_app it starts is not built again: its room's program runs it
# with the knob's trace_app). Each configuration has a name; its
# entries are called <test>@<name> and carry the labels `knob` and <name>:
#   ctest -L knob                  every configuration
#   ctest -L compact_scopes        one of them
#   ctest -R '@'                   the same as -L knob
#   cmake --build B --target knob_configurations   builds only their targets
# Included last by tests/CMakeLists.txt (when EDGETRACE_TEST_KNOBS is ON, the
# default; the sanitizer and aarch64 presets turn it off to keep CI within
# its time budget): an entry copies the environment, labels and timeout of
# the entry it varies.

add_custom_target(knob_configurations)

# edgetrace_knob_configuration(<name>
#     DEFINES <MACRO=value>...   compile definitions of every target below
#     [RUNTIME_LIBRARY]          link edgetrace::runtime (the runtime compiled
#                                once, EDGETRACE_SEPARATE_RUNTIME=1) instead of
#                                compiling it into each test
#     [TRACE_APP]                build support/trace_app.cpp under the knob
#                                too (target trace_app.<name>); the tests of
#                                this configuration start it instead of trace_app
#     TESTS <test>[:<entry>]...  tests/<test>.cpp as target <test>.<name>, run
#                                as <test>@<name> with the environment of the
#                                ctest entry <entry> (default: <test>); its
#                                EDGETRACE_OUTPUT is in tests/tmp/<name>/,
#                                its scratch files in tests/tmp/<test>@<name>/
#                                (as every entry's, tests/CMakeLists.txt)
#     APP_TESTS <test>...)       tests that run the knob only through
#                                trace_app.<name> (they include nothing that
#                                the knob changes): not built again, their
#                                room's program runs as <test>@<name> with
#                                ETTEST_TRACE_APP pointing at the
#                                configuration's app (support/test_env.hpp)
function(edgetrace_knob_configuration name)
  cmake_parse_arguments(PARSE_ARGV 1 knob "RUNTIME_LIBRARY;TRACE_APP" "" "DEFINES;TESTS;APP_TESTS")
  if(knob_APP_TESTS AND NOT knob_TRACE_APP)
    message(FATAL_ERROR "knob configuration ${name}: APP_TESTS run trace_app.${name}, which needs TRACE_APP")
  endif()
  if(knob_RUNTIME_LIBRARY)
    if(NOT TARGET edgetrace_runtime)
      message(STATUS "edgetrace: EDGETRACE_BUILD_RUNTIME_LIBRARY=OFF: the ${name} configuration is not built")
      return()
    endif()
    set(library edgetrace::runtime)
  else()
    set(library edgetrace::edgetrace)
  endif()

  # The entries' EDGETRACE_OUTPUT files, moved here: the configurations run side by side.
  set(tmp ${EDGETRACE_TEST_TMP}/${name})
  file(MAKE_DIRECTORY ${tmp})
  set(trace_app trace_app)
  if(knob_TRACE_APP)
    set(trace_app trace_app.${name})
    add_executable(${trace_app} support/trace_app.cpp)
    target_link_libraries(${trace_app} PRIVATE ${library})
    target_include_directories(${trace_app} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_definitions(${trace_app} PRIVATE ${knob_DEFINES})
    edgetrace_project_warnings(${trace_app})
    add_dependencies(knob_configurations ${trace_app})
  endif()

  foreach(spec IN LISTS knob_TESTS knob_APP_TESTS)
    string(REPLACE ":" ";" spec "${spec}")
    list(GET spec 0 test)
    list(GET spec -1 entry)
    if(NOT DEFINED ${test}_source OR NOT TEST ${entry})
      continue()  # its room is not built here (EDGETRACE_TEST_ROOMS)
    endif()
    set(app_environment)
    if(test IN_LIST knob_APP_TESTS)
      # The room's program, already built, with this configuration's app.
      if(NOT DEFINED ${test}_command)
        message(FATAL_ERROR "knob configuration ${name}: APP_TESTS ${test} is not a test of a room")
      endif()
      add_test(NAME ${test}@${name} COMMAND ${${test}_command})
      add_dependencies(knob_configurations ${${test}_program})
      set(app_environment "ETTEST_TRACE_APP=$<TARGET_FILE:${trace_app}>")
    else()
      set(target ${test}.${name})
      add_executable(${target} ${${test}_source})
      target_link_libraries(${target} PRIVATE edgetrace_doctest_runner ${library})
      if(NOT knob_RUNTIME_LIBRARY)
        edgetrace_test_reader(${target})
      endif()
      target_compile_definitions(${target} PRIVATE ${knob_DEFINES} EDGETRACE_TEST_TRACE_APP="$<TARGET_FILE:${trace_app}>"
                                                   EDGETRACE_TEST_TMPDIR="${tmp}")
      edgetrace_project_warnings(${target})
      edgetrace_test_program_flags(${target} ${${test}_program})
      edgetrace_test_starts(${target} edgetrace_cli ${trace_app})
      add_dependencies(knob_configurations ${target})
      add_test(NAME ${test}@${name} COMMAND ${target})
    endif()
    set(labels knob ${name})
    get_test_property(${entry} LABELS entry_labels)
    if(entry_labels)
      list(PREPEND labels ${entry_labels})
    endif()
    set_tests_properties(${test}@${name} PROPERTIES LABELS "${labels}")
    get_test_property(${entry} ENVIRONMENT environment)
    if(environment)
      # Its output file in its own directory: ctest runs the configurations side by side.
      string(REPLACE "${EDGETRACE_TEST_TMP}/" "${tmp}/" environment "${environment}")
    else()
      set(environment)
    endif()
    list(APPEND environment ${app_environment})
    if(environment)
      set_tests_properties(${test}@${name} PROPERTIES ENVIRONMENT "${environment}")
    endif()
    get_test_property(${entry} TIMEOUT timeout)
    if(timeout)
      set_tests_properties(${test}@${name} PROPERTIES TIMEOUT ${timeout})
    endif()
  endforeach()
endfunction()

# Which tests each knob changes (config.hpp documents the knobs):
#
# EDGETRACE_ENABLED=0 compiles every macro to nothing: runtime_test checks
# that they still type-check, evaluate nothing and trace nothing (its
# "#else" half; a case that needs tracing is not compiled there). The
# examples' *_disabled builds (pipeline_e2e_test), compile_fail_*_disabled
# and codegen_*disabled* cover the rest of this knob.
edgetrace_knob_configuration(disabled
  DEFINES EDGETRACE_ENABLED=0
  TESTS runtime_test)

# EDGETRACE_COMPACT_SCOPES=1 moves a span's begin out of line
# (edgetrace.hpp): the in-process round trip, drops and timing
# (runtime_test), the hook seam the begin calls (hooks_test, with a dump),
# and spans with arguments, windows and phases written by trace_app
# (annotations_test, capture_test).
edgetrace_knob_configuration(compact_scopes
  DEFINES EDGETRACE_COMPACT_SCOPES=1
  TRACE_APP
  TESTS runtime_test hooks_test:hooks_test_recording
  APP_TESTS capture_test annotations_test)

# EDGETRACE_SEPARATE_RUNTIME=1 turns the runtime's entry points into
# declarations defined once in edgetrace::runtime: everything in-process
# (runtime_test, hooks_test), and start, exit, fork
# and signal handling of a program linked that way (lifecycle_test and
# capture_test through trace_app). separate_runtime_app@separate_runtime
# (two TUs, extra_tests.cmake) and gpu_test@separate_runtime (the GPU
# add-on, extra_tests_gpu.cmake) belong to it too.
edgetrace_knob_configuration(separate_runtime
  RUNTIME_LIBRARY
  TRACE_APP
  TESTS runtime_test hooks_test:hooks_test_recording
  APP_TESTS capture_test lifecycle_test)

# EDGETRACE_CLOCK_MONOTONIC=1 reads clock_gettime instead of the cycle
# counter (face/tick.hpp): timing against steady_clock (runtime_test),
# true durations of a process that dies 12 ms after start (clock_start_test)
# and time windows (capture_test). (runtime_test_monotonic is the run-time
# choice, EDGETRACE_CLOCK=monotonic, of the default build.)
edgetrace_knob_configuration(clock_monotonic
  DEFINES EDGETRACE_CLOCK_MONOTONIC=1
  TRACE_APP
  TESTS runtime_test
  APP_TESTS clock_start_test capture_test)

# EDGETRACE_TLS_INITIAL_EXEC=0 gives the hot path's thread_local pointers
# the compiler's default TLS model (face/ring.hpp, gpu/spans.hpp): the
# ring and the runtime in-process (runtime_test, ring_test). In an executable
# the linker picks the TLS model anyway; the knob is for shared libraries:
# tls_model@tls_dynamic checks that a traced shared library built with it
# asks for no static TLS (no DF_STATIC_TLS) where the default one does, so
# it can be dlopen()ed into a process whose static TLS is used up.
edgetrace_knob_configuration(tls_dynamic
  DEFINES EDGETRACE_TLS_INITIAL_EXEC=0
  TESTS runtime_test ring_test)
find_program(EDGETRACE_READELF NAMES ${CMAKE_READELF} readelf llvm-readelf)
if(EDGETRACE_READELF AND TARGET dso_lib_b AND NOT CMAKE_CROSSCOMPILING)
  add_library(dso_lib_b.tls_dynamic SHARED dso/dso_lib.cpp)
  target_link_libraries(dso_lib_b.tls_dynamic PRIVATE edgetrace::edgetrace)
  target_compile_definitions(dso_lib_b.tls_dynamic PRIVATE DSO_NAME=lib_b DSO_SPAN="lib_b_span"
                                                           EDGETRACE_TLS_INITIAL_EXEC=0)
  edgetrace_project_warnings(dso_lib_b.tls_dynamic)
  add_dependencies(knob_configurations dso_lib_b.tls_dynamic)
  add_test(NAME tls_model@tls_dynamic
    COMMAND ${CMAKE_COMMAND} -DREADELF=${EDGETRACE_READELF} -DDEFAULT_LIB=$<TARGET_FILE:dso_lib_b>
      -DKNOB_LIB=$<TARGET_FILE:dso_lib_b.tls_dynamic> -P ${CMAKE_CURRENT_SOURCE_DIR}/dso/check_tls_model.cmake)
  set_tests_properties(tls_model@tls_dynamic PROPERTIES LABELS "knob;tls_dynamic")
endif()
