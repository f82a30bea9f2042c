# SPDX-License-Identifier: MIT
# Reliability tests (docs/RELIABILITY.md) beyond the doctest glob:
# the several-shared-objects app, the reader fuzz target and its regression
# replay, and the settings of tests/writer/reliability_test.cpp.
# Included at the end of tests/CMakeLists.txt.
#
# EDGETRACE_LONG_TESTS=1 in the environment of ctest (or of the test binary)
# runs the long variants (10 s stress, more kills, more forks).

if(TEST reliability_test)
  set_property(TEST reliability_test APPEND PROPERTY LABELS reliability)
  set_tests_properties(reliability_test PROPERTIES TIMEOUT 900)
endif()
# The writer-trust and overload cases (docs/TRUST.md; docs/RELIABILITY.md,
# "Overload"; docs/PRODUCTION.md) run with the reliability label too.
foreach(name IN ITEMS writer_trust_test process_life_test clock_start_test cli_overwrite_test stderr_notes_test
                      dso_unload_test reader_resync_test overload_test)
  if(TEST ${name})
    set_property(TEST ${name} APPEND PROPERTY LABELS reliability)
  endif()
endforeach()

# overload_test keeps every core busy on purpose (up to 128 dense threads,
# exit with 128 busy threads): it runs alone, so that neither its own bounds
# nor a neighbour's (a 1 GiB flight ring faulted in before exit) are judged
# on a machine it starves.
if(TEST overload_test)
  set_tests_properties(overload_test PROPERTIES RUN_SERIAL TRUE)
endif()

# --- Several shared objects: app + linked lib + dlopen'd lib ----------------
# dso/dso_lib.cpp built as the shared object `lib` (target dso_<lib>, file
# edgetrace_dso_<lib>), linked to `link`, its spans named <lib>_span; further
# arguments are more definitions.
function(edgetrace_dso_lib lib link)
  add_library(dso_${lib} SHARED dso/dso_lib.cpp)
  target_link_libraries(dso_${lib} PRIVATE ${link})
  target_compile_definitions(dso_${lib} PRIVATE DSO_NAME=${lib} DSO_SPAN="${lib}_span" ${ARGN})
  set_target_properties(dso_${lib} PROPERTIES OUTPUT_NAME edgetrace_dso_${lib})
  edgetrace_project_warnings(dso_${lib})
endfunction()
foreach(lib IN ITEMS lib_a lib_b lib_hidden)
  edgetrace_dso_lib(${lib} edgetrace::edgetrace)
endforeach()
# A -fvisibility=hidden library: every inline variable of edgetrace is its own copy.
set_target_properties(dso_lib_hidden PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
add_executable(dso_app dso/dso_app.cpp)
target_link_libraries(dso_app PRIVATE edgetrace::edgetrace dso_lib_a ${CMAKE_DL_LIBS})
edgetrace_project_warnings(dso_app)
target_compile_definitions(dso_app PRIVATE DSO_APP_LINKS_LIB_A=1)
add_dependencies(dso_app dso_lib_b dso_lib_hidden)
# The same app without lib_a: only the executable and the dlopen'd library
# include edgetrace. With ENABLE_EXPORTS (-rdynamic) the executable exports
# edgetrace's inline variables and the plugin binds to them (the documented
# rule); dso_app_noexport shows what happens without it.
foreach(variant IN ITEMS plain noexport)
  add_executable(dso_app_${variant} dso/dso_app.cpp)
  target_link_libraries(dso_app_${variant} PRIVATE edgetrace::edgetrace ${CMAKE_DL_LIBS})
  target_compile_definitions(dso_app_${variant} PRIVATE DSO_APP_LINKS_LIB_A=0)
  edgetrace_project_warnings(dso_app_${variant})
  add_dependencies(dso_app_${variant} dso_lib_b)
endforeach()
set_target_properties(dso_app_plain PROPERTIES ENABLE_EXPORTS ON)
# A program without edgetrace whose pinned thread dlopens lib_b: that
# thread makes the flusher, which must not keep its pin.
add_executable(pinned_loader dso/pinned_loader.cpp)
target_link_libraries(pinned_loader PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
edgetrace_project_warnings(pinned_loader)
add_dependencies(pinned_loader dso_lib_b)
if(TEST reliability_test)
  edgetrace_test_starts_named(${reliability_test_program} dso_app dso_app_plain dso_app_noexport dso_lib_b dso_lib_hidden
                              pinned_loader)
endif()

# --- dlclose while the output is slow (tests/writer/dso_unload_test.cpp) -----------
# lib_unload, a plugin dlclose unmaps.
edgetrace_dso_lib(lib_unload edgetrace::edgetrace)
# lib_cuda: the same, with what a plugin that includes cuda.hpp has:
# <edgetrace/nvml.hpp> and GPU scopes (on the fake GPU); unloaded while the
# sampler reads the GPUs, or after its GPU scopes ran.
edgetrace_dso_lib(lib_cuda "edgetrace::edgetrace;${CMAKE_DL_LIBS}" DSO_CUDA_LIKE=1)
target_include_directories(dso_lib_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
# lib_nvtx: the same with <edgetrace/nvtx.hpp>, whose scope hooks every scope
# of the process calls with EDGETRACE_NVTX=1 (where the NVTX headers are).
if(TARGET edgetrace::nvtx)
  edgetrace_dso_lib(lib_nvtx edgetrace::nvtx DSO_NVTX=1)
endif()
# Each is really unmapped by dlclose with g++ too: -fno-gnu-unique keeps
# its inline variables out of STB_GNU_UNIQUE, which would pin it in memory.
foreach(lib IN ITEMS lib_unload lib_cuda lib_nvtx)
  if(TARGET dso_${lib})
    target_compile_options(dso_${lib} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
  endif()
endforeach()
# A program without edgetrace, whose runtime is lib_unload's: its signal
# handlers after dlclose ended the stream.
add_executable(plain_loader dso/plain_loader.cpp)
target_link_libraries(plain_loader PRIVATE ${CMAKE_DL_LIBS})
edgetrace_project_warnings(plain_loader)
if(TEST dso_unload_test)
  edgetrace_test_starts_named(${dso_unload_test_program} plain_loader dso_app dso_lib_unload dso_lib_cuda fake_nvml)
  if(TARGET dso_lib_nvtx)
    edgetrace_test_starts_named(${dso_unload_test_program} dso_lib_nvtx)
  endif()
  set_property(TEST dso_unload_test APPEND PROPERTY LABELS reliability)
  set_tests_properties(dso_unload_test PROPERTIES TIMEOUT 120)
endif()

# --- Reader fuzzing ---------------------------------------------------------
# reader_fuzz: the libFuzzer binary (clang only; tests/fuzz/run_fuzz.sh runs it).
# Built with its own -fsanitize=fuzzer,address,undefined, in an unsanitized
# clang tree or in the asan tree (whose sanitizers it shares; CI fuzzes with
# build/asan/tests/reader_fuzz), never next to TSan, which cannot be combined
# with ASan.
# The reader's: built where the decode room is (EDGETRACE_TEST_ROOMS).
set(edgetrace_have_reader_fuzz OFF)
if(NOT "decode" IN_LIST edgetrace_test_rooms)
  return()
endif()
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND (NOT EDGETRACE_SANITIZE OR EDGETRACE_SANITIZE MATCHES "address"))
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address,undefined")
  check_cxx_source_compiles(
    "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }"
    EDGETRACE_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  set(edgetrace_have_reader_fuzz ${EDGETRACE_HAVE_LIBFUZZER})
endif()

# The replay of the committed inputs (fuzz_regressions): where reader_fuzz is
# built, reader_fuzz itself (given files, libFuzzer runs each once and does not
# fuzz), so the target is compiled once; elsewhere reader_fuzz_replay, the
# fuzz target with a plain main() that runs each file given (any compiler,
# any preset, so every sanitizer preset replays too).
if(edgetrace_have_reader_fuzz)
  set(edgetrace_fuzz_replay reader_fuzz)
else()
  set(edgetrace_fuzz_replay reader_fuzz_replay)
  add_executable(reader_fuzz_replay fuzz/reader_fuzz.cpp fuzz/replay_main.cpp)
  target_link_libraries(reader_fuzz_replay PRIVATE edgetrace::edgetrace)
  edgetrace_test_reader(reader_fuzz_replay)  # the passes compiled once; reader_fuzz keeps them inside it, for coverage
  edgetrace_project_warnings(reader_fuzz_replay)
  # A test driver like the doctest programs: 13 small files, so -O0 where
  # the preset asks for it (tsan, aarch64) costs nothing to run.
  edgetrace_test_program_flags(reader_fuzz_replay reader_fuzz_replay)
endif()
add_test(NAME fuzz_regressions
  COMMAND ${CMAKE_COMMAND} -DREPLAY=$<TARGET_FILE:${edgetrace_fuzz_replay}>
    -DDIRS=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/regressions|${CMAKE_CURRENT_SOURCE_DIR}/fuzz/seeds
    -P ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay.cmake)
set_tests_properties(fuzz_regressions PROPERTIES LABELS "decode;fuzz")

if(edgetrace_have_reader_fuzz)
  add_executable(reader_fuzz fuzz/reader_fuzz.cpp)
  target_link_libraries(reader_fuzz PRIVATE edgetrace::edgetrace)
  target_compile_options(reader_fuzz PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
                                             -fno-omit-frame-pointer -Wall -Wextra)
  target_link_options(reader_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  # A short smoke run (seeds + 5 s) inside ctest; CI runs 60 s via run_fuzz.sh.
  add_test(NAME fuzz_smoke
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_fuzz.sh $<TARGET_FILE:reader_fuzz> 5
      ${CMAKE_CURRENT_BINARY_DIR}/fuzz $<TARGET_FILE:trace_app>)
  set_tests_properties(fuzz_smoke PROPERTIES LABELS "decode;fuzz" TIMEOUT 120)
endif()
