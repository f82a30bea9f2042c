# SPDX-License-Identifier: MIT
# cmake -P: the runtime mode is part of every mangled name (EDGETRACE_ABI_NAMESPACE,
# config.hpp), so a program that mixes the modes fails to link instead of misbehaving.
#
#   mix      header_only_tu.cpp (header-only) + separate_tu.cpp (EDGETRACE_SEPARATE_RUNTIME=1),
#            no runtime library: must NOT link, and the linker must name an
#            edgetrace::v1_rt:: function (with one namespace for both modes the
#            separate TU bound to the header-only TU's inline copies and linked).
#   control  separate_tu.cpp alone + runtime_tu.cpp (what edgetrace::runtime holds):
#            must link, so the failure above is the mix, not the setup.
#   both     the mix with the runtime too: it links (two runtimes, one per
#            mode), so at run time the second runtime to start must say so
#            and stay off instead of writing the same dump a second time.
# Both at -O0: the header-only TU then emits every inline function it uses.
# Inputs (-D): COMPILER, STD_FLAG, INCLUDE_DIR, SOURCE_DIR (tests/abi), WORK_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(COMPILER STD_FLAG INCLUDE_DIR SOURCE_DIR WORK_DIR)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(compile name source)
  set(command ${COMPILER} ${STD_FLAG} -O0 -Wall -Wextra -Wpedantic -Werror -I${INCLUDE_DIR} ${ARGN}
              -c ${SOURCE_DIR}/${source} -o ${WORK_DIR}/${name}.o)
  run_command(${command})
endfunction()
# Sets link_result and link_output in the caller.
function(link name)
  set(objects)
  foreach(object IN LISTS ARGN)
    list(APPEND objects ${WORK_DIR}/${object}.o)
  endforeach()
  execute_process(COMMAND ${COMPILER} ${objects} -pthread -o ${WORK_DIR}/${name}
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  set(link_result ${result} PARENT_SCOPE)
  set(link_output "${output}" PARENT_SCOPE)
endfunction()

compile(header_only header_only_tu.cpp)
compile(separate separate_tu.cpp -DEDGETRACE_SEPARATE_RUNTIME=1)
compile(separate_alone separate_tu.cpp -DEDGETRACE_SEPARATE_RUNTIME=1 -DABI_NO_HEADER_ONLY_TU)
compile(runtime runtime_tu.cpp)

link(control separate_alone runtime)
if(NOT link_result EQUAL 0)
  message(FATAL_ERROR "control: the separate TU and the runtime TU do not link:\n${link_output}")
endif()

link(mix header_only separate)
if(link_result EQUAL 0)
  message(FATAL_ERROR "a header-only TU and an EDGETRACE_SEPARATE_RUNTIME=1 TU linked without the runtime "
                      "library: the separate TU bound to the header-only TU's inline runtime")
endif()
if(NOT link_output MATCHES "edgetrace::v1_rt::detail::[a-z_]+")
  message(FATAL_ERROR "the mix failed to link, but the linker did not name an edgetrace::v1_rt:: function:\n"
                      "${link_output}")
endif()
message(STATUS "control linked; the mix did not, the linker named ${CMAKE_MATCH_0}")

link(both header_only separate runtime)
if(NOT link_result EQUAL 0)
  message(FATAL_ERROR "both: the mix with the runtime TU does not link:\n${link_output}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env EDGETRACE_OUTPUT=${WORK_DIR}/both.etr ${WORK_DIR}/both
                RESULT_VARIABLE run_result OUTPUT_VARIABLE run_output ERROR_VARIABLE run_output)
if(NOT run_result EQUAL 0)
  message(FATAL_ERROR "both: the traced mix exited with ${run_result}:\n${run_output}")
endif()
if(NOT run_output MATCHES "mixes files built with and without EDGETRACE_SEPARATE_RUNTIME=1")
  message(FATAL_ERROR "both: the second runtime did not say it stays off:\n${run_output}")
endif()
if(NOT EXISTS ${WORK_DIR}/both.etr)
  message(FATAL_ERROR "both: the first runtime wrote no dump")
endif()
message(STATUS "both linked; at run time the second runtime stayed off and said so")
