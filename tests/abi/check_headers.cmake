# SPDX-License-Identifier: MIT
# cmake -P: every header under include/ that opens `inline namespace
# EDGETRACE_ABI_NAMESPACE` gets the macro from config.hpp: preprocessed on its
# own, in both runtime modes, no `namespace EDGETRACE_ABI_NAMESPACE` is left.
# Inputs (-D): COMPILER, STD_FLAG, INCLUDE_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(COMPILER STD_FLAG INCLUDE_DIR)
file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/edgetrace/*.hpp)
set(checked 0)
foreach(header IN LISTS headers)
  file(STRINGS ${INCLUDE_DIR}/${header} uses REGEX "namespace EDGETRACE_ABI_NAMESPACE")
  if(NOT uses)
    continue()
  endif()
  # runtime.hpp stands alone only inside the runtime's own TU.
  foreach(defines "-DEDGETRACE_SEPARATE_RUNTIME=0" "-DEDGETRACE_SEPARATE_RUNTIME=1;-DEDGETRACE_DETAIL_RUNTIME_TU")
    execute_process(COMMAND ${COMPILER} ${STD_FLAG} -E -P -I${INCLUDE_DIR} ${defines} -x c++ ${INCLUDE_DIR}/${header}
                    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors)
    if(NOT result EQUAL 0 AND errors MATCHES "#error")
      # Not meant to stand alone in this mode (the writer's rooms are part of
      # runtime.hpp; runtime_impl.hpp is for EDGETRACE_SEPARATE_RUNTIME=1).
      continue()
    endif()
    if(NOT result EQUAL 0 AND errors MATCHES "fatal error: ([A-Za-z_0-9/]+\\.h: No such file|'[A-Za-z_0-9/]+\\.h' file not found)")
      # A third-party header this compiler cannot find (cuda_runtime.h, nvtx3;
      # g++ and clang word it differently): at
      # least an edgetrace header must be included before the namespace opens.
      file(READ ${INCLUDE_DIR}/${header} text)
      string(FIND "${text}" "#include <edgetrace/" include_at)
      string(FIND "${text}" "namespace EDGETRACE_ABI_NAMESPACE" namespace_at)
      if(include_at EQUAL -1 OR include_at GREATER namespace_at)
        message(FATAL_ERROR "${header} opens EDGETRACE_ABI_NAMESPACE before including an edgetrace header")
      endif()
      break()
    endif()
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "${header} does not preprocess on its own (${defines}):\n${errors}")
    endif()
    if(output MATCHES "namespace EDGETRACE_ABI_NAMESPACE")
      message(FATAL_ERROR "${header} uses EDGETRACE_ABI_NAMESPACE before config.hpp defines it: include "
                          "<edgetrace/config.hpp> (or a header that does) first")
    endif()
  endforeach()
  math(EXPR checked "${checked} + 1")
endforeach()
message(STATUS "${checked} headers use EDGETRACE_ABI_NAMESPACE, each with config.hpp's definition")
