# SPDX-License-Identifier: MIT
# cmake -P check: the layering docs/ARCHITECTURE.md states, as the includes
# really run.
# - sinks/: an export (a file format the tool writes) includes no header of
#   another export, and the analysis layer (every other sinks header:
#   latency.hpp, selection.hpp, summary/ but its format.hpp, output.hpp)
#   includes none at all;
# - no sinks header includes decode/detail/ (the reader's insides);
# - the encoder (writer/encoding/) includes nothing of writer/flight/, and
#   gpu/ not the user's umbrella edgetrace.hpp;
# - nothing outside the runtime's own classes reaches into its members
#   (`rt->config_`): the rest of the process uses runtime's methods.
# Inputs (-D): SOURCE_DIR (the checkout).
cmake_policy(SET CMP0057 NEW)  # IN_LIST
cmake_policy(SET CMP0007 NEW)  # lists keep empty elements
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(SOURCE_DIR)
set(inc ${SOURCE_DIR}/include/edgetrace)
set(failed)

# Each export: a name and the headers (relative to sinks/) that make it up.
set(exports chrome_json perfetto csv info diff merge report report_device top summary_format)
set(chrome_json_files "chrome_json/*.hpp")
set(perfetto_files "perfetto/*.hpp")
set(csv_files "csv/*.hpp")
set(info_files "info.hpp")
set(diff_files "diff.hpp")
set(merge_files "merge.hpp")
set(report_files "report.hpp")
set(report_device_files "report_device.hpp")
set(top_files "top.hpp")
set(summary_format_files "summary/format.hpp")
foreach(e IN LISTS exports)
  set(${e}_headers)
  foreach(pattern IN LISTS ${e}_files)
    file(GLOB found RELATIVE ${inc}/sinks ${inc}/sinks/${pattern})
    list(APPEND ${e}_headers ${found})
  endforeach()
  if(NOT ${e}_headers)
    list(APPEND failed "export '${e}' names no header (${${e}_files}): update check_layers.cmake")
  endif()
endforeach()
foreach(e IN LISTS exports)
  foreach(h IN LISTS ${e}_headers)
    file(STRINGS ${inc}/sinks/${h} includes REGEX "^#include <edgetrace/sinks/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include <edgetrace/sinks/([^>]+)>.*" "\\1" target "${line}")
      foreach(other IN LISTS exports)
        if(NOT other STREQUAL e AND target IN_LIST ${other}_headers)
          list(APPEND failed "sinks/${h} (export ${e}) includes sinks/${target} (export ${other})")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

set(export_headers)
foreach(e IN LISTS exports)
  list(APPEND export_headers ${${e}_headers})
endforeach()
file(GLOB_RECURSE analysis_headers RELATIVE ${inc}/sinks ${inc}/sinks/*.hpp)
list(REMOVE_ITEM analysis_headers ${export_headers})
foreach(h IN LISTS analysis_headers)
  file(STRINGS ${inc}/sinks/${h} includes REGEX "^#include <edgetrace/sinks/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include <edgetrace/sinks/([^>]+)>.*" "\\1" target "${line}")
    if(target IN_LIST export_headers)
      list(APPEND failed "sinks/${h} (the analysis layer) includes sinks/${target} (an export)")
    endif()
  endforeach()
endforeach()

# forbid(GLOB INCLUDED WHY): no header matching GLOB (under include/edgetrace)
# includes a header under INCLUDED.
function(forbid glob included why)
  file(GLOB_RECURSE headers ${inc}/${glob})
  foreach(h IN LISTS headers)
    file(STRINGS ${h} includes REGEX "^#include <edgetrace/${included}")
    if(includes)
      file(RELATIVE_PATH name ${inc} ${h})
      list(APPEND failed "${name} includes ${included} (${why})")
    endif()
  endforeach()
  set(failed ${failed} PARENT_SCOPE)
endfunction()
forbid("sinks/*.hpp" "decode/detail/" "the reader's insides")
forbid("writer/encoding/*.hpp" "writer/flight/" "the encoder learns of watched sites through site_watch.hpp")
forbid("gpu/*.hpp" "edgetrace.hpp" "the user's umbrella: gpu/ includes the face/ headers it uses")

# The runtime's members end in '_'; a pointer or reference named rt or parent
# is how the rest of the process holds the runtime.
foreach(dir include bench tools)
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${dir}/*.hpp ${SOURCE_DIR}/${dir}/*.cpp)
  foreach(f IN LISTS sources)
    file(STRINGS ${f} reach REGEX "(^|[^A-Za-z0-9_])(rt|parent)(->|\\.)[a-z_]+_([^A-Za-z0-9_(]|$)")
    foreach(line IN LISTS reach)
      file(RELATIVE_PATH name ${SOURCE_DIR} ${f})
      string(STRIP "${line}" line)
      list(APPEND failed "${name} reaches into the runtime's members: ${line}")
    endforeach()
  endforeach()
endforeach()

if(failed)
  list(JOIN failed "\n  " text)
  message(FATAL_ERROR "layering broken:\n  ${text}")
endif()
message(STATUS "layers: exports apart, sinks off decode/detail/, the encoder off flight/, no reach into the runtime")
