#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Edge readiness in CI: the rooms qemu-user can prove something about (core,
# writer, flight, decode, the fuzz regressions) cross-compiled for aarch64 and
# run under qemu-aarch64; dumps converted across architectures (an aarch64
# dump read by the x86-64 CLI and the aarch64 CLI, and the reverse: json,
# summary, info, top and perfetto identical); and lean builds (the CLI's
# sources syntax-checked there, built with --full). docs/TESTING.md.
#
# Usage: bash tools/edge_matrix.sh [--full] [--no-aarch64] [--no-lean]
#   (default)     aarch64 suite + cross-architecture check + 3 lean builds that
#                 together cover every lean dimension once (table below)
#   --full        every lean build: {g++, clang++} x {C++17, 20, 23} x
#                 {-O0, -O2, -Os}, plus per compiler at C++17 -O2:
#                 -fno-exceptions -fno-rtti, -static, -fvisibility=hidden,
#                 EDGETRACE_ENABLED=0 (28 builds, ~20 min on 2 cores)
# Debian/Ubuntu; installs what is missing with apt-get (root or sudo).
# Build trees: build/aarch64, build/edge-lean/<name>. Prints ctest's own
# summary line for each ctest run; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
full=0 do_aarch64=1 do_lean=1
for arg in "$@"; do
  case $arg in
    --full) full=1 ;;
    --no-aarch64) do_aarch64=0 ;;
    --no-lean) do_lean=0 ;;
    *) echo "usage: $0 [--full] [--no-aarch64] [--no-lean]" >&2; exit 1 ;;
  esac
done
jobs=2
# ctest runs one entry more: the entries wait for part of their time (under
# qemu too: 1.47 of 2 cores busy at -j2), and those that load every core run alone.
test_jobs=$((jobs + 1))
started=$SECONDS
status=0
summaries=()
note() { echo "== $*"; }

# --- 1. Dependencies (only what is missing) ---------------------------------
packages=(cmake make ninja-build g++ clang binutils doctest-dev)
((do_aarch64)) && packages+=(g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user qemu-user-binfmt)
bash tools/install_missing.sh "${packages[@]}"

# Runs ctest in build dir $2 (extra args after), keeps its summary line
# under the label $1, and records a failure.
run_ctest() {
  local label=$1 dir=$2
  shift 2
  local log=$dir/edge_ctest.log rc line
  set +e
  ctest --test-dir "$dir" -j "$test_jobs" --timeout 300 --output-on-failure "$@" >"$log" 2>&1
  rc=$?
  set -e
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [[ $rc -ne 0 ]]; then
    # Only what failed, with its output (the whole log stays in $log).
    sed -n '/tests passed/,$p' "$log"
    grep -E -B2 -A25 '\*\*\*(Failed|Timeout|Exception)|Not Run' "$log" | head -n 200 || true
    status=1
  fi
  [[ -n $line ]] || line="no ctest summary (ctest exit code $rc)"
  echo "   [$label] $line"
  summaries+=("$(printf '%-34s %s' "$label" "$line")")
}

# --- 2. aarch64: cross build, suite under qemu ------------------------------
mkdir -p build
a64=build/aarch64
if ((do_aarch64)); then
  # binfmt_misc lets tests exec aarch64 children (trace_app, the CLI, the
  # examples) as if native. Register qemu's handler if the kernel allows.
  binfmt=/proc/sys/fs/binfmt_misc
  if [[ ! -e $binfmt/qemu-aarch64 ]]; then
    [[ -e $binfmt/register ]] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
    if [[ -w $binfmt/register && -f /usr/lib/binfmt.d/qemu-aarch64.conf ]]; then
      cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register" 2>/dev/null || true
    fi
  fi
  # Programs started by tests or by cmake -P drivers reach qemu through
  # binfmt_misc and find the aarch64 loader through this.
  export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
  # The rooms qemu-user can prove something about (codegen, ABI and layout, the
  # cntvct_el0 clock, CRC instructions, char signedness) are the preset's
  # EDGETRACE_TEST_ROOMS (core, writer, flight, decode); of the rest, the same
  # labels as CMakePresets.json's aarch64 test preset are left out.
  ctest_args=(-LE '^(packaging|compile_fail|gpu|cuda|nvtx|bench|docs)$')
  if [[ -e $binfmt/qemu-aarch64 ]] && grep -q enabled "$binfmt/qemu-aarch64"; then
    note "aarch64: binfmt_misc runs aarch64 programs through qemu-aarch64"
  else
    # Without it a test cannot start an aarch64 child: leave out the tests
    # whose sources start programs, named here and in the summary.
    spawning=$(grep -lE 'support/(process|spawn|analysis_workload)\.hpp|execve|posix_spawn|std::system' tests/*/*_test.cpp |
      sed -E 's|tests/.*/(.*)\.cpp|\1|' | paste -sd'|' -)
    note "aarch64: no binfmt_misc handler (not root, or no binfmt_misc in this kernel/container):"
    note "         tests that start child programs are left out: $spawning"
    ctest_args+=(-E "^(${spawning})(_.*)?\$")
  fi
  note "aarch64: configure + build ($a64, aarch64-linux-gnu-g++, Release, -j$jobs)"
  t0=$SECONDS
  cmake --preset aarch64 >"$a64.configure.log" 2>&1 ||
    { cat "$a64.configure.log"; echo "== aarch64 configure FAILED"; exit 1; }
  if cmake --build "$a64" -j "$jobs" >"$a64.build.log" 2>&1; then
    note "aarch64: built in $((SECONDS - t0)) s"
    note "aarch64: ctest under qemu-aarch64: rooms core, writer, flight, decode and the fuzz regressions"
    note "         (left out: packaging, compile_fail run the host's cmake and compiler; gpu, cuda, nvtx,"
    note "         bench, docs prove nothing about aarch64 under emulation; doctest cases qemu cannot run:"
    note "         cmake/toolchains/qemu-aarch64-test.sh; docs/TESTING.md)"
    t0=$SECONDS
    run_ctest "aarch64 suite (qemu)" "$a64" "${ctest_args[@]}"
    note "aarch64: ctest took $((SECONDS - t0)) s"
  else
    grep -E -A5 'error|Error' "$a64.build.log" | head -n 60
    echo "== aarch64 build FAILED (log: $a64.build.log)"
    summaries+=("$(printf '%-34s %s' "aarch64 suite (qemu)" "build FAILED")")
    status=1
    do_aarch64=0
  fi
fi

# --- 3. Lean builds ----------------------------------------------------------
# name | compiler | C++ standard | flags | extra cmake args
# edgetrace::reader (the reader and every output, one TU of ~45 CPU-s) is
# built by the first, whose flags change its code (no exceptions: a bad
# name_pattern cannot be refused); the other two read with the header-only
# reader (longest_spans), as --full's builds all build it.
subset=(
  "gcc17-O2-noexc-nortti|g++|17|-O2 -fno-exceptions -fno-rtti|"
  "clang20-Os-hidden-disabled|clang++|20|-Os -fvisibility=hidden -fvisibility-inlines-hidden|-DEDGETRACE_LEAN_ENABLED=OFF -DEDGETRACE_BUILD_READER_LIBRARY=OFF"
  "gcc23-O0-static|g++|23|-O0 -static|-DEDGETRACE_LEAN_DSO=OFF -DEDGETRACE_BUILD_READER_LIBRARY=OFF"
)
matrix=()
if ((full)); then
  for cxx in g++ clang++; do
    short=${cxx%++}
    [[ $short == g ]] && short=gcc
    for std in 17 20 23; do
      for opt in O0 O2 Os; do matrix+=("$short$std-$opt|$cxx|$std|-$opt|"); done
    done
    matrix+=("$short""17-O2-noexc-nortti|$cxx|17|-O2 -fno-exceptions -fno-rtti|")
    matrix+=("$short""17-O2-static|$cxx|17|-O2 -static|-DEDGETRACE_LEAN_DSO=OFF")
    # With a shared library: its own runtime copy must share the dump.
    matrix+=("$short""17-O2-hidden|$cxx|17|-O2 -fvisibility=hidden -fvisibility-inlines-hidden|")
    matrix+=("$short""17-O2-disabled|$cxx|17|-O2|-DEDGETRACE_LEAN_ENABLED=OFF")
  done
else
  matrix=("${subset[@]}")
fi
host_cli=
mkdir -p build/edge-lean
if ((do_lean)); then
  for entry in "${matrix[@]}"; do
    IFS='|' read -r name cxx std flags extra <<<"$entry"
    dir=build/edge-lean/$name
    note "lean: $name ($cxx -std=c++$std $flags $extra)"
    t0=$SECONDS
    link_flags=
    [[ $flags == *-static* ]] && link_flags=-static
    # Release adds nothing: the flags above are the whole optimisation setting.
    lean_cli=OFF
    ((full)) && lean_cli=ON
    if cmake -S tests/lean -B "$dir" -DCMAKE_BUILD_TYPE=None -DEDGETRACE_LEAN_CLI=$lean_cli -DCMAKE_CXX_COMPILER="$cxx" \
         -DCMAKE_CXX_STANDARD="$std" -DCMAKE_CXX_STANDARD_REQUIRED=ON -DCMAKE_CXX_EXTENSIONS=OFF \
         -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$link_flags" $extra >"$dir.configure.log" 2>&1 &&
       cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1; then
      run_ctest "lean $name" "$dir"
      [[ -z $host_cli && -x $dir/edgetrace/tools/edgetrace ]] && host_cli=$root/$dir/edgetrace/tools/edgetrace
    else
      cat "$dir.configure.log" | tail -n 20
      grep -E -A5 'error' "$dir.build.log" | head -n 40 || true
      echo "   [lean $name] build FAILED (logs: $dir.*.log)"
      summaries+=("$(printf '%-34s %s' "lean $name" "build FAILED")")
      status=1
    fi
    note "lean: $name took $((SECONDS - t0)) s"
  done
fi

# --- 4. Cross-architecture dumps ----------------------------------------------
# A dump converts to the same JSON (and summary) whichever architecture
# wrote it and whichever converts it: FORMAT.md fixes byte order and layout.
if ((do_aarch64)); then
  note "cross-architecture: aarch64 dump -> x86-64 CLI vs aarch64 CLI (qemu), and the reverse"
  xdir=$root/build/edge-crossarch
  rm -rf "$xdir" && mkdir -p "$xdir"
  if [[ -z $host_cli && -x build/release/tools/edgetrace && -x build/release/examples/pipeline ]]; then
    # The release preset's (tools/run_tests.sh builds it first).
    host_cli=$root/build/release/tools/edgetrace
  fi
  if [[ -z $host_cli ]]; then
    # No other build produced a CLI: build the host one.
    cmake -S . -B build/edge-host -DCMAKE_BUILD_TYPE=Release -DEDGETRACE_BUILD_EXAMPLES=ON >/dev/null &&
      cmake --build build/edge-host -j "$jobs" --target edgetrace_cli pipeline >/dev/null
    host_cli=$root/build/edge-host/tools/edgetrace
    host_pipeline=$root/build/edge-host/examples/pipeline
  else
    host_pipeline=$(dirname "$(dirname "$host_cli")")/examples/pipeline
  fi
  qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
  a64_cli=$root/$a64/tools/edgetrace
  a64_pipeline=$root/$a64/examples/pipeline
  cross_ok=1
  cross_check() {  # cross_check LABEL DUMP
    local label=$1 dump=$2 what
    # The CLI smoke on both architectures: every reading command, byte for
    # byte (perfetto uncompressed: the aarch64 build may have no zlib).
    for what in json summary info top perfetto; do
      local args=("$what" "$dump")
      [[ $what == json ]] && args+=(-o -)
      [[ $what == perfetto ]] && args+=(-o - --compress none)
      "$host_cli" "${args[@]}" >"$dump.x86_64.$what" 2>"$dump.x86_64.$what.err" || { echo "   x86-64 CLI failed on $dump"; cross_ok=0; }
      "${qemu[@]}" "$a64_cli" "${args[@]}" >"$dump.aarch64.$what" 2>"$dump.aarch64.$what.err" ||
        { echo "   aarch64 CLI failed on $dump"; cross_ok=0; }
      if cmp -s "$dump.x86_64.$what" "$dump.aarch64.$what" && [[ -s $dump.x86_64.$what ]]; then
        echo "   $label: $what identical ($(stat -c %s "$dump.x86_64.$what") bytes)"
      else
        echo "   $label: $what DIFFERS"; diff "$dump.x86_64.$what" "$dump.aarch64.$what" | head -n 10 || true
        cross_ok=0
      fi
    done
  }
  (cd "$xdir" && EDGETRACE_OUTPUT=a64.etr "${qemu[@]}" "$a64_pipeline" --frames 30 >/dev/null)
  clock=$("$host_cli" info "$xdir/a64.etr" | grep -m1 -i 'clock' || true)
  echo "   aarch64 dump: $clock"
  grep -qi 'cntvct' <<<"$clock" || { echo "   aarch64 dump does not use cntvct_el0"; cross_ok=0; }
  cross_check "aarch64 dump" "$xdir/a64.etr"
  (cd "$xdir" && EDGETRACE_OUTPUT=x86.etr "$host_pipeline" --frames 30 >/dev/null)
  cross_check "x86-64 dump" "$xdir/x86.etr"
  if ((cross_ok)); then
    summaries+=("$(printf '%-34s %s' "cross-architecture dumps" "identical json, summary, info, top, perfetto both ways")")
  else
    summaries+=("$(printf '%-34s %s' "cross-architecture dumps" "FAILED")")
    status=1
  fi
fi

# --- 5. Summary ---------------------------------------------------------------
echo
note "edge matrix ($( ((full)) && echo full || echo subset)), $((SECONDS - started)) s"
printf '   %s\n' "${summaries[@]}"
((status == 0)) && note "edge matrix: all passed" || note "edge matrix: FAILED"
exit $status
