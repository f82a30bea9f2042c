# SPDX-License-Identifier: MIT
# edgetrace_read_version(<config.hpp> <out>): the version written once in
# include/edgetrace/config.hpp (EDGETRACE_VERSION_MAJOR/MINOR/PATCH), as
# MAJOR.MINOR.PATCH. Used by CMakeLists.txt (project(VERSION)) and the
# packaging test (which package version it must find).
function(edgetrace_read_version config_hpp out)
  file(STRINGS ${config_hpp} lines REGEX "^#define EDGETRACE_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
  set(version)
  foreach(part MAJOR MINOR PATCH)
    set(number)
    foreach(line IN LISTS lines)
      if(line MATCHES "^#define EDGETRACE_VERSION_${part} ([0-9]+)$")
        set(number ${CMAKE_MATCH_1})
      endif()
    endforeach()
    if(number STREQUAL "")
      message(FATAL_ERROR "${config_hpp}: no '#define EDGETRACE_VERSION_${part} N' line")
    endif()
    list(APPEND version ${number})
  endforeach()
  string(REPLACE ";" "." version "${version}")
  set(${out} ${version} PARENT_SCOPE)
endfunction()
