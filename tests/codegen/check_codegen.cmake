# SPDX-License-Identifier: MIT
# cmake -P driver: builds tests/codegen/probe.cpp at -O2 with and without compiled-out macros and checks that edgetrace_probe's machine code is byte-identical.
#
# Inputs (-D): COMPILER, STD_FLAG, OBJCOPY, INCLUDE_DIR, SOURCE, WORK_DIR, and
# DEFINES: the ;-list of -D flags (without -D) of the variant with macros,
# e.g. EDGETRACE_PROBE_COUNTER=1;EDGETRACE_EXCLUDED_CATEGORIES="cold_cat".
# The reference ("plain") is the same file with no macro in the function.
include(${CMAKE_CURRENT_LIST_DIR}/../support/script.cmake)
require_inputs(NOT_EMPTY COMPILER STD_FLAG OBJCOPY INCLUDE_DIR SOURCE WORK_DIR DEFINES)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(plain_flags)
set(macros_flags)
foreach(d IN LISTS DEFINES)
  list(APPEND macros_flags "-D${d}")
endforeach()

foreach(variant plain macros)
  set(object ${WORK_DIR}/${variant}.o)
  set(command ${COMPILER} ${STD_FLAG} -O2 -ffunction-sections -fno-asynchronous-unwind-tables
              -Wall -Wextra -Wpedantic -Werror -I${INCLUDE_DIR} ${${variant}_flags} -c ${SOURCE} -o ${object})
  run_command(${command})
  run_command(${OBJCOPY} -O binary --only-section=.text.edgetrace_probe ${object} ${WORK_DIR}/${variant}.bin)
  file(SIZE ${WORK_DIR}/${variant}.bin size)
  if(size EQUAL 0)
    message(FATAL_ERROR "no .text.edgetrace_probe section in the '${variant}' object (was -ffunction-sections honoured?)")
  endif()
  message(STATUS "${variant}: edgetrace_probe is ${size} bytes")
endforeach()

execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK_DIR}/plain.bin ${WORK_DIR}/macros.bin
                RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  execute_process(COMMAND objdump -d --no-show-raw-insn --section=.text.edgetrace_probe ${WORK_DIR}/plain.o
                  OUTPUT_VARIABLE plain_asm ERROR_QUIET)
  execute_process(COMMAND objdump -d --no-show-raw-insn --section=.text.edgetrace_probe ${WORK_DIR}/macros.o
                  OUTPUT_VARIABLE macros_asm ERROR_QUIET)
  message(FATAL_ERROR "edgetrace_probe's machine code differs with the compiled-out macros (${DEFINES}):\n"
                      "--- without macros:\n${plain_asm}\n--- with compiled-out macros:\n${macros_asm}")
endif()
message(STATUS "byte-identical: compiled-out macros (${DEFINES}) generate nothing")
