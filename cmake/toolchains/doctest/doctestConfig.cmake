# SPDX-License-Identifier: MIT
# doctest for cross builds: an imported doctest::doctest whose include
# directory holds only doctest/ (a link to the host's header-only copy), so
# no host system header reaches the target compiler.
if(NOT TARGET doctest::doctest)
  find_path(EDGETRACE_DOCTEST_HOST_INCLUDE doctest/doctest.h
    PATHS /usr/include /usr/local/include NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  if(NOT EDGETRACE_DOCTEST_HOST_INCLUDE)
    set(doctest_FOUND FALSE)
    set(doctest_NOT_FOUND_MESSAGE "doctest/doctest.h not found on the host (apt-get install doctest-dev)")
    return()
  endif()
  set(edgetrace_doctest_stage ${CMAKE_BINARY_DIR}/doctest-include)
  file(MAKE_DIRECTORY ${edgetrace_doctest_stage})
  if(NOT EXISTS ${edgetrace_doctest_stage}/doctest)
    file(CREATE_LINK ${EDGETRACE_DOCTEST_HOST_INCLUDE}/doctest ${edgetrace_doctest_stage}/doctest SYMBOLIC)
  endif()
  add_library(doctest::doctest INTERFACE IMPORTED)
  set_target_properties(doctest::doctest PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${edgetrace_doctest_stage})
endif()
set(doctest_FOUND TRUE)
