#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fuzzes the dump reader for a bounded time (docs/RELIABILITY.md).
#
# Usage: bash tests/fuzz/run_fuzz.sh FUZZER SECONDS WORK_DIR [TRACE_APP [PIPELINE]]
#   FUZZER     the libFuzzer binary (build/asan/tests/reader_fuzz, or build/clang/tests/reader_fuzz)
#   SECONDS    fuzzing time in CPU-seconds (CI: 60; longer: e.g. 3600), shared
#              by FUZZ_WORKERS processes (default 1) that fuzz side by side,
#              each for SECONDS / FUZZ_WORKERS s, into the same corpus
#   WORK_DIR   corpus and crash artifacts go here (WORK_DIR/corpus, WORK_DIR/crashes)
#   TRACE_APP, PIPELINE: traced programs whose dumps seed the corpus
# Seeds: tests/fuzz/seeds/* (small, committed) plus dumps made now. A crash
# leaves WORK_DIR/crashes/crash-*: copy it into tests/fuzz/regressions/ so
# the fuzz_regressions ctest replays it forever.
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3 trace_app=${4:-} pipeline=${5:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$work/corpus" "$work/seeds" "$work/crashes"
cp "$here"/seeds/* "$work/seeds/" 2>/dev/null || true
if [[ -n $trace_app && -x $trace_app ]]; then
  for mode in idle exit-code worker-exit annotations; do
    EDGETRACE_OUTPUT="$work/seeds/app-$mode.etr" "$trace_app" "$mode" >/dev/null 2>&1 || true
  done
  EDGETRACE_OUTPUT="$work/seeds/app-arg-runs.etr" "$trace_app" arg-dense 300 >/dev/null 2>&1 || true
  EDGETRACE_OUTPUT="$work/seeds/app-typed-args.etr" "$trace_app" typed-args 40 >/dev/null 2>&1 || true
  EDGETRACE_OUTPUT="$work/seeds/app-small-ring.etr" EDGETRACE_BUFFER_KB=4 EDGETRACE_ON_FULL=drop "$trace_app" stress 0.05 2 \
    >/dev/null 2>&1 || true
  # Large seeds only slow the fuzzer down: keep the first 64 KiB as well.
  for f in "$work"/seeds/app-*.etr; do head -c 65536 "$f" >"${f%.etr}.head.etr"; done
fi
if [[ -n $pipeline && -x $pipeline ]]; then
  EDGETRACE_OUTPUT="$work/seeds/pipeline.etr" "$pipeline" --frames 20 >/dev/null 2>&1 || true
  head -c 65536 "$work/seeds/pipeline.etr" >"$work/seeds/pipeline.head.etr" || true
fi
workers=${FUZZ_WORKERS:-1}
[[ $workers =~ ^[1-9][0-9]*$ ]] || { echo "run_fuzz.sh: FUZZ_WORKERS must be a positive number, not '$workers'" >&2; exit 2; }
((seconds / workers >= 1)) || workers=1
each=$((seconds / workers))
echo "== fuzzing the reader for ${seconds}s: $workers process(es) of ${each}s (seeds: $(ls "$work/seeds" | wc -l))"
pids=()
for ((w = 0; w < workers; ++w)); do
  # Each its own random seed (libFuzzer picks one from the clock and pid) and log.
  "$fuzzer" -max_total_time="$each" -max_len=262144 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/crashes/" -print_final_stats=1 "$work/corpus" "$work/seeds" 2>"$work/fuzz.$w.log" &
  pids+=($!)
done
failed=()
for ((w = 0; w < workers; ++w)); do
  wait "${pids[w]}" || failed+=("$w")
done
for ((w = 0; w < workers; ++w)); do
  ((workers == 1)) || echo "-- process $w"
  grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$work/fuzz.$w.log" || true
  grep -E 'cov:' "$work/fuzz.$w.log" | tail -n 1 || true
done
if ((${#failed[@]})); then
  for w in "${failed[@]}"; do tail -n 60 "$work/fuzz.$w.log"; done
  echo "== the fuzzer found a problem: see $work/crashes/; add it to tests/fuzz/regressions/"
  exit 1
fi
echo "== fuzzing: no crash in ${seconds}s"
