# SPDX-License-Identifier: MIT
# cmake -P helper: fails unless README.md contains examples/minimal.cpp verbatim (the quick start stays compiled and true).
foreach(var README EXAMPLE)
  if(NOT EXISTS "${${var}}")
    message(FATAL_ERROR "check_readme.cmake: -D${var}=<existing file> is required")
  endif()
endforeach()
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
string(FIND "${readme}" "```cpp\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} must quote ${EXAMPLE} verbatim in a ```cpp block; update one from the other")
endif()
message(STATUS "the README's quick start matches ${EXAMPLE}")
