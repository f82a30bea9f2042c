# SPDX-License-Identifier: MIT
# cmake -P driver for compile-fail tests: compiles one source with -fsyntax-only and reports why it failed.
#
# Inputs (-D): COMPILER, STD_FLAG, INCLUDE_DIR, SOURCE, DEFINES (;-list, may be
# empty), EXPECT (pass or fail), EXPECT_IN_ERROR (text a genuine failure shows),
# ERRORS_ONLY_IN (optional: every "error" line must name this file, so the
# failure stops at the first message instead of a page of follow-up errors).
#
# EXPECT=pass (control entries): exits non-zero on any compile error.
# EXPECT=fail (entries with WILL_FAIL TRUE): exits non-zero only when the
# compile fails *and* the diagnostics mention EXPECT_IN_ERROR, so the test
# cannot pass on an unrelated error (a wrong include path, a missing header).
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(COMPILER STD_FLAG INCLUDE_DIR SOURCE EXPECT)

set(define_flags)
foreach(d IN LISTS DEFINES)
  list(APPEND define_flags "-D${d}")
endforeach()

set(command ${COMPILER} ${STD_FLAG} -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I${INCLUDE_DIR} ${define_flags} ${SOURCE})
string(REPLACE ";" " " command_text "${command}")
message(STATUS "${command_text}")
execute_process(COMMAND ${command} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)

if(EXPECT STREQUAL "pass")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "control build failed; it must compile:\n${output}")
  endif()
  message(STATUS "compiled cleanly, as expected")
  return()
endif()

if(result EQUAL 0)
  message(STATUS "compiled cleanly, but it must not (a WILL_FAIL test reports this as a failure)")
  return()
endif()
string(FIND "${output}" "${EXPECT_IN_ERROR}" at)
if(at EQUAL -1)
  message(STATUS "compile failed, but not because of '${EXPECT_IN_ERROR}' (reported as a failure):\n${output}")
  return()
endif()
if(ERRORS_ONLY_IN)
  string(REPLACE "\n" ";" lines "${output}")
  foreach(line IN LISTS lines)
    if(line MATCHES "error:" AND NOT line MATCHES "${ERRORS_ONLY_IN}" AND NOT line MATCHES "errors? generated|compilation terminated")
      message(STATUS "compile failed, but with errors beyond ${ERRORS_ONLY_IN} (reported as a failure): ${line}\n${output}")
      return()
    endif()
  endforeach()
endif()
message(FATAL_ERROR "compile failed as expected; the diagnostics mention '${EXPECT_IN_ERROR}':\n${output}")
