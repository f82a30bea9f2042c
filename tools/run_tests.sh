#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The full test run: installs what is missing, then builds and runs the whole ctest suite three times:
#   release  g++, RelWithDebInfo (-O2 -g1: line tables only), with benchmarks, and the tests again under each build knob
#            (label knob: runtime_test@compact_scopes, ...; tests/knob_configurations.cmake)
#   asan     clang++, AddressSanitizer + UndefinedBehaviorSanitizer, LeakSanitizer on (also builds the
#            libFuzzer target reader_fuzz)
#   tsan     clang++, ThreadSanitizer
# then fuzzes the dump reader for 60 s with build/asan/tests/reader_fuzz, and runs tools/edge_matrix.sh
# (aarch64 under qemu, lean builds) when it exists and is executable. Every build has -Werror.
# The sanitizer presets leave out only tests that run no instrumented code (CMakePresets.json test
# presets; docs/RELIABILITY.md, "Sanitizers"): asan the packaging tests (a separate CMake build), tsan
# also compile-fail and codegen identity (label toolchain: they only run the compiler, and asan
# already runs them with clang). The `clang` preset (plain clang++) stays available, not run here.
# The asan, tsan and aarch64 presets compile the doctest programs and test drivers at -O0 (all but writer_tests; tsan and aarch64
# keep sinks_tests at the preset's level too); in asan and tsan the helper programs that are not about header-only
# mode link edgetrace::runtime (EDGETRACE_TEST_HELPERS_LINK_RUNTIME). Builds run 2 jobs, ctest 3 (one entry more,
# as tools/edge_matrix.sh).
# The builds run ahead in the background at idle priority (every preset's, then the edge matrix's), so the
# next build uses the CPU that the running tests leave idle; a preset's tests start when its build is done.
# Build output goes to build/<preset>/build.log (its errors are shown when a build fails).
# 23 minutes on the faster kind of 2-core machine, about twice that on the slower kind; ~45 % of it the
# sanitizer presets (measured: docs/RELIABILITY.md, "CI time").
#
# Usage: bash tools/run_tests.sh [--help]   (Debian/Ubuntu; apt-get needs root or sudo)
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
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) echo "usage: bash tools/run_tests.sh [--help] (settings are environment variables: see --help)" >&2; exit 1 ;;
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
#
# The builds run ahead of the tests, in a chain of their own in the
# background: every preset's configure and build, then the edge matrix's
# builds (tools/edge_matrix.sh --build-only), one after another. The builds
# run at SCHED_IDLE priority (nice 19 where that is refused): while a
# preset's tests run, the next build gets only the CPU they leave idle, and a
# test thread that wakes takes its core back at once. A preset's tests start
# when its build is done. The entries labelled `quiet` measure what another
# process does to them (tests/CMakeLists.txt): they run in a ctest of their
# own, with the chain stopped.
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
edge=0
[[ -x tools/edge_matrix.sh && ${RUN_TESTS_EDGE:-1} != 0 ]] && edge=1

# The chain writes build/<preset>/build.status ("ok|configure-failed|build-failed SECONDS")
# when a preset's build is over, and build/edge-build.status after the edge builds.
# Only the builds run at idle priority: a configure is a few seconds of many
# short processes in a row, which idle priority starved for two minutes
# beside a ctest (measured), so the build behind it started late.
build_chain() {
  local preset result t0 idle=(chrt --idle 0)
  "${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
  for preset in "${presets[@]}"; do
    mkdir -p "build/$preset"
    t0=$SECONDS
    # --fresh: a new cache every run, so no stale option survives (objects are reused).
    if ! cmake --preset "$preset" --fresh >"build/$preset/configure.log" 2>&1; then
      result=configure-failed
    elif ! "${idle[@]}" cmake --build --preset "$preset" -j "$jobs" >"build/$preset/build.log" 2>&1; then
      result=build-failed
    else
      result=ok
    fi
    echo "$result $((SECONDS - t0))" >"build/$preset/build.status.new"
    mv "build/$preset/build.status.new" "build/$preset/build.status"
  done
  if ((edge)); then
    t0=$SECONDS
    bash tools/edge_matrix.sh --build-only >build/edge-build.log 2>&1 && result=ok || result=build-failed
    echo "$result $((SECONDS - t0))" >build/edge-build.status.new
    mv build/edge-build.status.new build/edge-build.status
  fi
}
mkdir -p build
for preset in "${presets[@]}"; do rm -f "build/$preset/build.status"; done
rm -f build/edge-build.status
set -m  # the chain in a process group of its own, which can be stopped as one
build_chain &
builder=$!
set +m
stop_chain() { kill -STOP -- "-$builder" 2>/dev/null || true; }
resume_chain() { kill -CONT -- "-$builder" 2>/dev/null || true; }
trap 'resume_chain; kill -- "-$builder" 2>/dev/null || true' EXIT
echo "== builds: in the background at idle priority (logs: build/<preset>/configure.log, build.log)"

# Waits until the chain wrote status file $1; prints its contents.
wait_for_status() {
  while [[ ! -f $1 ]]; do
    if ! kill -0 "$builder" 2>/dev/null; then
      [[ -f $1 ]] || { echo "chain-ended 0"; return; }
    fi
    sleep 1
  done
  cat "$1"
}
# Sums the summary lines ctest wrote to log $1 into one, in ctest's words.
sum_ctest_lines() {
  grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" |
    sed -E 's/.*passed, ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/' |
    awk '{f += $1; t += $2} END {if (t) printf "%d%% tests passed, %d tests failed out of %d\n", (t - f) * 100 / t, f, t}'
}

for preset in "${presets[@]}"; do
  echo
  echo "== [$preset] configure + build (-j$jobs, warnings are errors)"
  read -r result build_seconds <<<"$(wait_for_status "build/$preset/build.status")"
  step_done "$preset: waited for its build"
  timings+=("$(printf '%-28s %4ds' "$preset: configure + build" "$build_seconds")")
  case $result in
    ok) echo "== [$preset] built in $build_seconds s (log: build/$preset/build.log)" ;;
    configure-failed)
      cat "build/$preset/configure.log"; echo "== [$preset] configure FAILED"; exit 1 ;;
    *)
      [[ -f build/$preset/build.log ]] && { grep -E -B2 -A20 'error|FAILED:' "build/$preset/build.log" | head -n 200 || tail -n 60 "build/$preset/build.log"; }
      echo "== [$preset] build FAILED (see the errors above; log: build/$preset/build.log); its tests are not run"
      summaries+=("$(printf '%-12s %s' "$preset" "build FAILED")")
      status=1
      builds_failed+=("$preset")
      continue ;;
  esac

  echo "== [$preset] ctest"
  log="build/$preset/ctest.log"
  quiet=$(ctest --preset "$preset" -N -L '^quiet$' 2>/dev/null | sed -nE 's/^ *Test +#[0-9]+: ([^ ]+).*/\1/p' |
    sed 's/[.]/[.]/g' | paste -sd'|' - || true)
  set +e
  if [[ -n $quiet ]]; then
    ctest --preset "$preset" -j "$test_jobs" --output-on-failure -E "^($quiet)\$" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    echo "== [$preset] ctest of the quiet entries, the background builds stopped meanwhile"
    stop_chain
    ctest --preset "$preset" -j "$test_jobs" --output-on-failure -R "^($quiet)\$" 2>&1 | tee -a "$log"
    quiet_rc=${PIPESTATUS[0]}
    resume_chain
    ((rc)) || rc=$quiet_rc
  else
    ctest --preset "$preset" -j "$test_jobs" --output-on-failure 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  fi
  set -e
  [[ $rc -eq 0 ]] || status=1
  step_done "$preset: ctest"

  line=$(sum_ctest_lines "$log")
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
if ((edge)); then
  echo
  echo "== [edge] the edge matrix's builds"
  read -r result build_seconds <<<"$(wait_for_status build/edge-build.status)"
  wait "$builder" || true
  step_done "edge: waited for its builds"
  timings+=("$(printf '%-28s %4ds' "edge: builds" "$build_seconds")")
  echo "== [edge] builds: $result in $build_seconds s, in the background (log: build/edge-build.log)"
  echo "== [edge] tools/edge_matrix.sh"
  log=build/edge_matrix.log
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
wait "$builder" 2>/dev/null || true  # the chain has ended: nothing left to stop
trap - EXIT
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
