# SPDX-License-Identifier: MIT
# The consumer's programs, the same whichever way the project found edgetrace
# (find_package/ or add_subdirectory/ includes this once its targets exist):
# a traced program header-only and with the runtime compiled once, and a
# tool written on the reader with its passes compiled once.
foreach(target IN ITEMS edgetrace::edgetrace edgetrace::runtime edgetrace::reader)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${target} is missing")
  endif()
endforeach()
set(consumer_main ${CMAKE_CURRENT_LIST_DIR}/find_package/main.cpp)
add_executable(consumer ${consumer_main})
target_link_libraries(consumer PRIVATE edgetrace::edgetrace)
add_executable(consumer_separate ${consumer_main})
target_link_libraries(consumer_separate PRIVATE edgetrace::runtime)
add_executable(reader_tool ${CMAKE_CURRENT_LIST_DIR}/../../examples/longest_spans.cpp)
target_link_libraries(reader_tool PRIVATE edgetrace::reader)
