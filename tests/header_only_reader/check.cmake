# SPDX-License-Identifier: MIT
# cmake -P: the header-only reader's program (main.cpp) reads a dump as the
# `edgetrace` tool does with edgetrace::reader: the same summary CSV and the
# same JSON, byte for byte.
# Inputs (-D): APP, CLI, DUMP, WORK_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(APP CLI DUMP WORK_DIR)
file(MAKE_DIRECTORY ${WORK_DIR})
run_command(${APP} ${DUMP} ${WORK_DIR}/header_only.json)
set(app_csv "${last_output}")
run_command(${CLI} summary ${DUMP} --format csv)
if(NOT app_csv STREQUAL last_output)
  message(FATAL_ERROR "the header-only reader's summary of ${DUMP} differs:\n--- it printed\n${app_csv}--- the tool\n${last_output}")
endif()
run_command(${CLI} json ${DUMP} -o ${WORK_DIR}/library.json)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK_DIR}/header_only.json ${WORK_DIR}/library.json
                RESULT_VARIABLE differs)
if(differs)
  message(FATAL_ERROR "the header-only reader's JSON of ${DUMP} differs from the tool's: ${WORK_DIR}/header_only.json")
endif()
file(SIZE ${WORK_DIR}/library.json json_bytes)
message(STATUS "header-only reader, two TUs: the tool's summary CSV and JSON (${json_bytes} bytes)")
