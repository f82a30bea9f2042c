#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The full test run (what CI runs): installs what is missing, then builds each preset and runs the tests
# whose promise it can check (docs/TESTING.md, "What each preset proves"):
#   release  g++, RelWithDebInfo (-O2 -g1: line tables only): every room, the benchmarks' smokes, the
#            packaging tests, and the tests again under each build knob (label knob; tests/knob_configurations.cmake)
#   asan     clang++, AddressSanitizer + UndefinedBehaviorSanitizer, LeakSanitizer on: every room (also builds
#            the libFuzzer target reader_fuzz)
#   tsan     clang++, ThreadSanitizer: the rooms that start threads (writer, flight, gpu, telemetry); its
#            tests start release's converter and link release's reader library when release was built in
#            the same run (neither starts a thread)
# then fuzzes the dump reader for 60 CPU-seconds with build/asan/tests/reader_fuzz, and runs
# tools/edge_matrix.sh (the aarch64 rooms under qemu, the cross-architecture check, lean builds).
# Every build has -Werror. Builds run 2 jobs, ctest 3 (one entry more, as tools/edge_matrix.sh).
# Times on 2 cores: docs/TESTING.md, "CI time".
#
# Usage: bash tools/run_tests.sh [--quick] [--help]   (Debian/Ubuntu; apt-get needs root or sudo)
#   --quick                  the release preset alone, without the knob configurations (every room once with
#                            g++; no sanitizers, fuzzing, edge matrix, or rooms again under each build knob)
#   EDGETRACE_LONG_TESTS=1   long reliability variants (10 s stress, 10 kills, 1000 forks; docs/RELIABILITY.md)
#   EDGETRACE_FUZZ_SECONDS=N fuzz the reader for N CPU-seconds instead of 60 (one process per core, at most 4)
#   RUN_TESTS_PRESETS="release clang"   presets to run instead of "release asan tsan"
#   RUN_TESTS_EDGE=0         leave out tools/edge_matrix.sh (with the presets above, one CI job can
#                            run part of the suite: e.g. RUN_TESTS_PRESETS="release tsan" RUN_TESTS_EDGE=0)
# Ends with a combined summary in ctest's words; exits non-zero if any step
# or test failed. Build trees: build/<preset>.
set -euo pipefail
case ${1-} in
  "") ;;
  --quick) RUN_TESTS_PRESETS=release RUN_TESTS_EDGE=0 quick=1 ;;
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) echo "usage: bash tools/run_tests.sh [--quick] [--help] (settings are environment variables: see --help)" >&2; exit 1 ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."

started=$SECONDS
timings=()
step_started=$SECONDS
step_done() {  # records how long the step named $1 took
  timings+=("$(printf '%-28s %4ds' "$1" $((SECONDS - step_started)))")
  step_started=$SECONDS
}

# --- 1. Dependencies (only what is missing) ---------------------------------
packages=(cmake ninja-build g++ clang binutils doctest-dev libbenchmark-dev libclang-rt-14-dev zlib1g-dev)
bash tools/install_missing.sh "${packages[@]}"
step_done "dependencies"

# --- 2. Build and test with each compiler and sanitizer ----------------------
# Every preset builds everything and runs its ctest preset (which holds the
# sanitizer options and the few exclusions).
status=0
summaries=()
total_tests=0
total_failed=0
builds_failed=()
count_ctest_line() {  # adds a "N% tests passed, F tests failed out of T" line to the totals
  local out_of failed
  out_of=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$1")
  failed=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$1")
  total_tests=$((total_tests + out_of))
  total_failed=$((total_failed + failed))
}
read -r -a presets <<<"${RUN_TESTS_PRESETS:-release asan tsan}"
# The 2 cores the CI is sized for. ctest runs one entry more: the entries
# wait for a good part of their time (children, kills, flush periods; asan's
# kept 1.35 of 2 cores busy at -j2), and the entries that load every core
# themselves run alone (RUN_SERIAL).
jobs=2
test_jobs=$((jobs + 1))
for preset in "${presets[@]}"; do
  echo
  echo "== [$preset] configure"
  mkdir -p "build/$preset"
  # tsan's tests start release's converter, built above, instead of one
  # built under TSan, and link its reader library: neither starts a thread
  # (docs/TESTING.md).
  extra=()
  # --quick: each room once (the knob configurations rebuild and rerun some
  # of them under each build knob: ~70 CPU-s of g++ and ~40 s of ctest).
  if [[ ${quick-} == 1 ]]; then extra+=(-DEDGETRACE_TEST_KNOBS=OFF); fi
  if [[ $preset == tsan && " ${presets[*]} " == *" release "* && " ${builds_failed[*]} " != *" release "* &&
        -x build/release/tools/edgetrace ]]; then
    extra=(-DEDGETRACE_BUILD_TOOLS=OFF "-DEDGETRACE_TEST_CLI=$PWD/build/release/tools/edgetrace")
    # Its test programs link release's reader library too (it starts no
    # thread either): ~40 CPU-s of TSan's build, and its tests read faster.
    [[ -f build/release/libedgetrace_reader.a ]] &&
      extra+=("-DEDGETRACE_TEST_READER_LIBRARY=$PWD/build/release/libedgetrace_reader.a")
  fi
  # --fresh: a new cache every run, so no stale option survives (objects are reused).
  cmake --preset "$preset" --fresh "${extra[@]}" >"build/$preset/configure.log" 2>&1 || {
    cat "build/$preset/configure.log"; echo "== [$preset] configure FAILED"; exit 1; }
  step_done "$preset: configure"

  echo "== [$preset] build (-j$jobs, warnings are errors)"
  if ! cmake --build --preset "$preset" -j "$jobs"; then
    echo "== [$preset] build FAILED (see the errors above); its tests are not run"
    step_done "$preset: build (FAILED)"
    summaries+=("$(printf '%-8s %s' "$preset" "build FAILED")")
    status=1
    builds_failed+=("$preset")
    continue
  fi
  step_done "$preset: build"

  echo "== [$preset] ctest"
  log="build/$preset/ctest.log"
  set +e
  ctest --preset "$preset" -j "$test_jobs" --output-on-failure 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  [[ $rc -eq 0 ]] || status=1
  step_done "$preset: ctest"

  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [[ -z $line ]]; then
    line="no ctest summary (ctest exit code $rc)"
    status=1
  else
    count_ctest_line "$line"
  fi
  summaries+=("$(printf '%-12s %s' "$preset" "$line")")
done

# --- 3. Fuzz the dump reader (libFuzzer; built in the asan or clang tree) ----
fuzz_tree=
for tree in build/asan build/clang; do
  preset=${tree#build/}
  if [[ " ${presets[*]} " == *" $preset "* && " ${builds_failed[*]} " != *" $preset "* && -x $tree/tests/reader_fuzz ]]; then
    fuzz_tree=$tree
    break
  fi
done
if [[ -n $fuzz_tree ]]; then
  echo
  echo "== [fuzz] reader for ${EDGETRACE_FUZZ_SECONDS:-60} CPU-seconds ($fuzz_tree/tests/reader_fuzz)"
  fuzz_workers=$(nproc)
  ((fuzz_workers <= 4)) || fuzz_workers=4
  if FUZZ_WORKERS=$fuzz_workers bash tests/fuzz/run_fuzz.sh "$fuzz_tree/tests/reader_fuzz" "${EDGETRACE_FUZZ_SECONDS:-60}" "$fuzz_tree/fuzz" \
      "$fuzz_tree/tests/trace_app" "$fuzz_tree/examples/pipeline"; then
    summaries+=("$(printf '%-12s %s' fuzz "100% tests passed, 0 tests failed out of 1")")
    count_ctest_line "100% tests passed, 0 tests failed out of 1"
  else
    summaries+=("$(printf '%-12s %s' fuzz "0% tests passed, 1 tests failed out of 1")")
    count_ctest_line "0% tests passed, 1 tests failed out of 1"
    status=1
  fi
  step_done "fuzz"
fi

# --- 4. The edge/lean build matrix (tools/edge_matrix.sh, when present) -------
if [[ -x tools/edge_matrix.sh && ${RUN_TESTS_EDGE:-1} != 0 ]]; then
  echo
  echo "== [edge] tools/edge_matrix.sh"
  log=build/edge_matrix.log
  mkdir -p build
  set +e
  bash tools/edge_matrix.sh 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  [[ $rc -eq 0 ]] || status=1
  step_done "edge matrix"
  lines=$(grep -oE '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | awk '!seen[$0]++' || true)
  if [[ -z $lines ]]; then
    summaries+=("$(printf '%-12s %s' edge "no ctest summary (exit code $rc)")")
    status=1
  else
    while IFS= read -r line; do
      count_ctest_line "$line"
      summaries+=("$(printf '%-12s %s' edge "$line")")
    done <<<"$lines"
    [[ $rc -eq 0 ]] || summaries+=("$(printf '%-12s %s' edge "tools/edge_matrix.sh exited $rc")")
  fi
fi

# --- 5. Summary -------------------------------------------------------------
echo
echo "== timings"
printf '   %s\n' "${timings[@]}"
printf '   %-28s %4ds\n' "total" $((SECONDS - started))
echo "== per step (g++: release; clang++: asan = ASan+UBSan+LSan, tsan, clang; fuzz: reader_fuzz; edge: tools/edge_matrix.sh)"
printf '   %s\n' "${summaries[@]}"
if ((${#builds_failed[@]})); then
  echo "== FAILED: the ${builds_failed[*]} build did not compile, so not every test ran"
elif ((total_tests > 0)); then
  passed=$((total_tests - total_failed))
  echo "== all steps"
  echo "$((passed * 100 / total_tests))% tests passed, ${total_failed} tests failed out of ${total_tests}"
fi
exit $status
