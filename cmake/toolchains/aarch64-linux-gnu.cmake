# SPDX-License-Identifier: MIT
# Cross-compiles edgetrace (and apps that use it) for aarch64 Linux with
# Debian's g++-aarch64-linux-gnu; ctest runs the target's tests under
# qemu-aarch64 (Debian qemu-user).
#
#   cmake -S . -B build/aarch64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
#   cmake --preset aarch64            # the same, from CMakePresets.json
#
# Knobs (cache variables, all optional):
#   EDGETRACE_AARCH64_PREFIX   compiler prefix, default aarch64-linux-gnu-
#   EDGETRACE_AARCH64_SYSROOT  the target's libc/libstdc++, default /usr/aarch64-linux-gnu
#   EDGETRACE_AARCH64_EMULATOR emulator command for ctest; default: qemu-aarch64-test.sh
#                              beside this file (qemu-aarch64 -L <sysroot>, plus the
#                              list of test cases that cannot pass under emulation)
#                              when qemu-aarch64 is installed; empty: ctest cannot run tests
# Programs a test starts itself (trace_app, the CLI, the examples) are run
# by the kernel's binfmt_misc handler for aarch64 (qemu-user-binfmt); the
# emulator script exports QEMU_LD_PREFIX for them. tools/edge_matrix.sh
# installs qemu and registers the handler when it is missing.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(EDGETRACE_AARCH64_PREFIX "aarch64-linux-gnu-" CACHE STRING "Cross compiler prefix")
set(EDGETRACE_AARCH64_SYSROOT "/usr/aarch64-linux-gnu" CACHE PATH "aarch64 libc/libstdc++ root")

set(CMAKE_C_COMPILER ${EDGETRACE_AARCH64_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${EDGETRACE_AARCH64_PREFIX}g++)

# Debian's cross g++ already knows its sysroot; these only keep find_*()
# from picking up x86-64 libraries and packages.
set(CMAKE_FIND_ROOT_PATH ${EDGETRACE_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(EDGETRACE_QEMU_AARCH64 qemu-aarch64)
if(EDGETRACE_QEMU_AARCH64)
  set(EDGETRACE_AARCH64_EMULATOR
      "${CMAKE_CURRENT_LIST_DIR}/qemu-aarch64-test.sh;--sysroot=${EDGETRACE_AARCH64_SYSROOT}"
      CACHE STRING "Runs aarch64 test executables on the build host")
else()
  set(EDGETRACE_AARCH64_EMULATOR "" CACHE STRING "Runs aarch64 test executables on the build host")
endif()
if(EDGETRACE_AARCH64_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGETRACE_AARCH64_EMULATOR})
endif()

# doctest is header-only: the host's /usr/include/doctest serves the target,
# but its package config would add -isystem /usr/include (the host's libc
# headers) to the cross compile. The config beside this file exposes only
# the doctest directory. Set doctest_DIR yourself to use another copy.
if(NOT DEFINED doctest_DIR)
  set(doctest_DIR ${CMAKE_CURRENT_LIST_DIR}/doctest)
endif()
