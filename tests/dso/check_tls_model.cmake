# SPDX-License-Identifier: MIT
# cmake -P: EDGETRACE_TLS_INITIAL_EXEC=0 does what it is for. A traced shared
# library built with the default (initial-exec) asks the loader for static
# TLS (DF_STATIC_TLS: dlopen() fails once that space is used up); the same
# library built with the knob does not.
# Inputs (-D): READELF, DEFAULT_LIB, KNOB_LIB.
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(READELF DEFAULT_LIB KNOB_LIB)
function(static_tls_of lib out)
  execute_process(COMMAND ${READELF} --dynamic ${lib} RESULT_VARIABLE rc OUTPUT_VARIABLE dynamic ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${READELF} --dynamic ${lib} exited ${rc}: ${err}")
  endif()
  if(dynamic MATCHES "STATIC_TLS")
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()
static_tls_of(${DEFAULT_LIB} default_static)
static_tls_of(${KNOB_LIB} knob_static)
if(NOT default_static)
  message(FATAL_ERROR "${DEFAULT_LIB} (initial-exec TLS) has no STATIC_TLS flag: the check cannot tell the models apart")
endif()
if(knob_static)
  message(FATAL_ERROR "${KNOB_LIB} (EDGETRACE_TLS_INITIAL_EXEC=0) still asks for static TLS")
endif()
message(STATUS "initial-exec library: STATIC_TLS; EDGETRACE_TLS_INITIAL_EXEC=0 library: none")
