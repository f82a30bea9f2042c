# SPDX-License-Identifier: MIT
# cmake -P driver for the packaging tests: installs the build tree and builds a consumer with find_package, or builds an add_subdirectory consumer.
#
# MODE=plain first configures the sources the way a new user does (cmake -S .
# -B build), on a machine without doctest or Google Benchmark (hidden with
# CMAKE_DISABLE_FIND_PACKAGE_*), and checks what configure says; then builds
# and installs that tree without the converter, the examples and the
# benchmarks (the preset's own build compiles them, and find_package installs
# and runs its converter: ~1.5 min of compiles saved), and goes on as
# find_package with it.
#
# Inputs (-D): MODE (find_package | add_subdirectory | plain), BUILD_DIR (the edgetrace
# build tree), SOURCE_DIR (the checkout), WORK_DIR (scratch), COMPILER,
# GENERATOR, BUILD_TYPE (may be empty).
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(NOT_EMPTY MODE BUILD_DIR SOURCE_DIR WORK_DIR COMPILER GENERATOR)
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()


file(REMOVE_RECURSE ${WORK_DIR})
set(consumer_build ${WORK_DIR}/build)
set(configure_args -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE})

if(MODE STREQUAL "plain")
  set(BUILD_DIR ${WORK_DIR}/project)
  # Default options (no build type either, as a new user types it), plus
  # EDGETRACE_BUILD_BENCH=ON to see that one skip too. The configure says
  # in one line what it builds (tests and examples only when asked).
  run_command(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${COMPILER}
      -DCMAKE_DISABLE_FIND_PACKAGE_doctest=TRUE -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=TRUE -DEDGETRACE_BUILD_BENCH=ON)
  foreach(skipped "Google Benchmark not found, only the benchmarks that need none built"
          "no CMAKE_BUILD_TYPE given: building Release"
          "edgetrace: building the headers, the runtime library (edgetrace::runtime), the reader library (edgetrace::reader), the converter (edgetrace)"
          "; not the tests (-DEDGETRACE_BUILD_TESTS=ON), the examples (-DEDGETRACE_BUILD_EXAMPLES=ON)")
    string(FIND "${last_output}" "${skipped}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "configure did not say '${skipped}':\n${last_output}")
    endif()
  endforeach()
  file(STRINGS ${BUILD_DIR}/CMakeCache.txt build_type REGEX "^CMAKE_BUILD_TYPE:")
  if(NOT build_type MATCHES "=Release$")
    message(FATAL_ERROR "a configure without a build type did not build Release: ${build_type}")
  endif()
  # Tests asked for without doctest: said in one line, and nothing fails.
  run_command(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -DEDGETRACE_BUILD_TESTS=ON)
  string(FIND "${last_output}" "doctest not found, tests not built" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "configure with -DEDGETRACE_BUILD_TESTS=ON and no doctest did not say so:\n${last_output}")
  endif()
  # Built and installed without the converter, the examples and the
  # benchmarks: the preset's own build compiles them, and what is checked
  # here is the package (~50 s of benchmark compiles saved).
  run_command(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -DEDGETRACE_BUILD_TESTS=OFF -DEDGETRACE_BUILD_TOOLS=OFF
      -DEDGETRACE_BUILD_BENCH=OFF)
  run_command(${CMAKE_COMMAND} --build ${BUILD_DIR} --parallel 2)
  set(MODE find_package)
  set(without_cli ON)
endif()

if(MODE STREQUAL "find_package")
  set(prefix ${WORK_DIR}/prefix)
  run_command(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  # GNUInstallDirs may pick lib or lib64; look the config up instead of assuming.
  file(GLOB_RECURSE configs ${prefix}/*/edgetraceConfig.cmake)
  file(GLOB_RECURSE versions ${prefix}/*/edgetraceConfigVersion.cmake)
  file(GLOB_RECURSE targets ${prefix}/*/edgetraceTargets.cmake)
  set(cli)
  set(expect_cli OFF)
  if(NOT without_cli)
    set(cli ${prefix}/bin/edgetrace)
    set(expect_cli ON)
  endif()
  foreach(required
          ${cli}
          ${prefix}/include/edgetrace/edgetrace.hpp
          ${prefix}/include/edgetrace/config.hpp
          ${prefix}/include/edgetrace/writer/runtime.hpp
          ${prefix}/include/edgetrace/decode/dump_reader.hpp)
    if(NOT EXISTS ${required})
      message(FATAL_ERROR "not installed: ${required}")
    endif()
  endforeach()
  file(GLOB_RECURSE runtimes ${prefix}/*/libedgetrace_runtime.a)
  file(GLOB_RECURSE readers ${prefix}/*/libedgetrace_reader.a)
  file(GLOB_RECURSE docs ${prefix}/share/doc/edgetrace/ANALYSIS.md)
  if(NOT runtimes OR NOT readers OR NOT docs)
    message(FATAL_ERROR "libedgetrace_runtime.a, libedgetrace_reader.a or share/doc/edgetrace/ANALYSIS.md not installed under ${prefix}")
  endif()
  if(NOT configs OR NOT versions OR NOT targets)
    message(FATAL_ERROR "edgetraceConfig.cmake / ConfigVersion / Targets missing under ${prefix}")
  endif()
  message(STATUS "installed: ${configs}")
  if(NOT without_cli)
    run_command(${prefix}/bin/edgetrace help)
    # Its help names the installed documentation, not a path in the sources.
    string(FIND "${last_output}" "documentation: ${prefix}/share/doc/edgetrace" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "edgetrace help does not point to ${prefix}/share/doc/edgetrace:\n${last_output}")
    endif()
  endif()

  # The package has config.hpp's version, and checks the architecture: it
  # holds a static library and an executable (no ARCH_INDEPENDENT).
  file(READ ${versions} version_file)
  if(NOT version_file MATCHES "CMAKE_SIZEOF_VOID_P")
    message(FATAL_ERROR "${versions} accepts any architecture, but the package exports a static library")
  endif()
  include(${SOURCE_DIR}/cmake/edgetrace_version.cmake)
  edgetrace_read_version(${SOURCE_DIR}/include/edgetrace/config.hpp version)
  run_command(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/find_package -B ${consumer_build} ${configure_args}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DEDGETRACE_EXPECTED_VERSION=${version}
      -DEDGETRACE_EXPECT_CLI=${expect_cli})
  # The package must come from the prefix, not from the build tree.
  file(STRINGS ${consumer_build}/CMakeCache.txt dir_line REGEX "^edgetrace_DIR:")
  string(FIND "${dir_line}" "${prefix}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "edgetrace was not found in the install prefix: ${dir_line}")
  endif()
elseif(MODE STREQUAL "add_subdirectory")
  # A parent project without a build type (CMake's default: no optimisation
  # flags), which edgetrace must keep: it sets Release only as the top-level
  # project. The compiles here are then the quickest (the reader library:
  # ~12 instead of ~40 s of g++), and what they prove is the wiring.
  run_command(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/add_subdirectory -B ${consumer_build}
      -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${COMPILER} -DEDGETRACE_SOURCE_DIR=${SOURCE_DIR})
else()
  message(FATAL_ERROR "MODE must be find_package or add_subdirectory, not '${MODE}'")
endif()

run_command(${CMAKE_COMMAND} --build ${consumer_build} --parallel 2)
foreach(program consumer consumer_separate)
  # Traced, so the runtime (header-only or edgetrace::runtime) really runs.
  run_command(${CMAKE_COMMAND} -E env EDGETRACE_OUTPUT=${WORK_DIR}/${program}.etr ${consumer_build}/${program})
  message(STATUS "${last_output}")
  if(NOT EXISTS ${WORK_DIR}/${program}.etr)
    message(FATAL_ERROR "${program} wrote no dump")
  endif()
endforeach()
# The reader tool reads what the traced program wrote: its longest span is a "step".
run_command(${consumer_build}/reader_tool ${WORK_DIR}/consumer.etr 3)
message(STATUS "${last_output}")
if(NOT last_output MATCHES "consumer/step")
  message(FATAL_ERROR "reader_tool did not list the consumer's steps:\n${last_output}")
endif()
