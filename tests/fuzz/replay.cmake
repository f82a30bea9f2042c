# SPDX-License-Identifier: MIT
# ctest fuzz_regressions: replays every file in DIRS (|-separated) through
# REPLAY (reader_fuzz given files, or reader_fuzz_replay where there is no
# libFuzzer). A crash or sanitizer report fails the test.
string(REPLACE "|" ";" dirs "${DIRS}")
set(files)
foreach(dir IN LISTS dirs)
  file(GLOB found LIST_DIRECTORIES false "${dir}/*")
  list(FILTER found EXCLUDE REGEX "README")
  list(APPEND files ${found})
endforeach()
list(LENGTH files count)
if(count EQUAL 0)
  message(FATAL_ERROR "no inputs in ${DIRS}")
endif()
execute_process(COMMAND ${REPLAY} ${files} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${REPLAY} failed (${rc}) on one of: ${files}")
endif()
