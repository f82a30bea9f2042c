# SPDX-License-Identifier: MIT
# Helpers for the rooms' cmake -P scripts (include this file first).

# require_inputs([NOT_EMPTY] <var>...): ends the script, naming it, when one
# of the -D<var>=... it needs was not given (or, with NOT_EMPTY, is empty).
function(require_inputs)
  set(not_empty FALSE)
  if(ARGV0 STREQUAL "NOT_EMPTY")
    set(not_empty TRUE)
    list(REMOVE_AT ARGN 0)
  endif()
  get_filename_component(script "${CMAKE_SCRIPT_MODE_FILE}" NAME)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var} OR (not_empty AND "${${var}}" STREQUAL ""))
      message(FATAL_ERROR "${script}: -D${var}=... is required")
    endif()
  endforeach()
endfunction()

# run_command(<command...>): prints the command line, runs it, and ends the
# script with its exit status and output when it fails; otherwise the output
# (stdout and stderr) is left in `last_output` in the caller.
function(run_command)
  string(REPLACE ";" " " text "${ARGN}")
  message(STATUS "$ ${text}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "'${text}' failed (${result}):\n${output}")
  endif()
  set(last_output "${output}" PARENT_SCOPE)
endfunction()
