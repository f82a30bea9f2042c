#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The full test run: installs what is missing, builds and tests with g++ (preset release) and clang++ (preset clang).
#
# Usage: bash tools/run_tests.sh        (Debian/Ubuntu; apt-get needs root or sudo)
# Ends with a combined summary in ctest's words; exits non-zero if any step
# or test failed. Build trees: build/release and build/clang.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

started=$SECONDS
timings=()
step_started=$SECONDS
step_done() {  # records how long the step named $1 took
  timings+=("$(printf '%-28s %4ds' "$1" $((SECONDS - step_started)))")
  step_started=$SECONDS
}

# --- 1. Dependencies (only what is missing) ---------------------------------
packages=(cmake make g++ clang binutils doctest-dev libbenchmark-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
step_done "dependencies"

# --- 2. Build and test with each compiler -----------------------------------
# g++ first, clang last, so the last ctest output on screen is the final one.
status=0
summaries=()
total_tests=0
total_failed=0
builds_failed=()
for preset in release clang; do
  echo
  echo "== [$preset] configure"
  mkdir -p "build/$preset"
  # --fresh: a new cache every run, so no stale option survives (objects are reused).
  cmake --preset "$preset" --fresh >"build/$preset/configure.log" 2>&1 || {
    cat "build/$preset/configure.log"; echo "== [$preset] configure FAILED"; exit 1; }
  step_done "$preset: configure"

  echo "== [$preset] build (-j2, warnings are errors)"
  if ! cmake --build --preset "$preset" -j 2; then
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
  ctest --preset "$preset" --output-on-failure 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  [[ $rc -eq 0 ]] || status=1
  step_done "$preset: ctest"

  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [[ -z $line ]]; then
    line="no ctest summary (ctest exit code $rc)"
    status=1
  else
    out_of=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    failed=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
    total_tests=$((total_tests + out_of))
    total_failed=$((total_failed + failed))
  fi
  summaries+=("$(printf '%-8s %s' "$preset" "$line")")
done

# --- 3. Summary -------------------------------------------------------------
echo
echo "== timings"
printf '   %s\n' "${timings[@]}"
printf '   %-28s %4ds\n' "total" $((SECONDS - started))
echo "== per compiler (g++: preset release, clang++: preset clang)"
printf '   %s\n' "${summaries[@]}"
if ((${#builds_failed[@]})); then
  echo "== FAILED: the ${builds_failed[*]} build did not compile, so not every test ran"
elif ((total_tests > 0)); then
  passed=$((total_tests - total_failed))
  echo "== both builds"
  echo "$((passed * 100 / total_tests))% tests passed, ${total_failed} tests failed out of ${total_tests}"
fi
exit $status
