#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The flight recorder's costs, normal and flight mode side by side in
# interleaved rounds (a slow moment of a shared machine hits both alike):
#   1. the enabled span's CPU time as a ratio to the floor of the same
#      process (edgetrace_bench BM_floor, BM_span_literal), per mode;
#   2. the flusher thread's CPU per span at a paced 1 M spans/s for 3 s
#      (edgetrace_flight_bench paced), per mode;
#   (both also in flight mode with a latency trigger on one of the four
#   sites that never fires, EDGETRACE_TRIGGER=infer>1s: column "trigger")
#   3. the time from edgetrace::snapshot() to a complete 16 MiB snapshot on
#      disk (page cache), EDGETRACE_FLIGHT_AFTER_MS=0 (edgetrace_flight_bench
#      snapshot), and the flusher's CPU for it.
# Medians (and the range) go to stdout as Markdown; raw rows to
# build/bench/flight.tsv. usage: bench/flight.sh [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    *) echo "usage: bench/flight.sh [--rounds N]" >&2; exit 1 ;;
  esac
  shift
done
case "$rounds" in '' | *[!0-9]* | 0) echo "bench/flight.sh: --rounds wants a positive number, not '$rounds'" >&2; exit 1 ;; esac

. bench/needs.sh
bench_needs cmake g++

build=build/bench
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEDGETRACE_BUILD_BENCH=ON -DEDGETRACE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target edgetrace_bench edgetrace_flight_bench >/dev/null
tmp="$build/flight-tmp"
rm -rf "$tmp" && mkdir -p "$tmp"
tsv="$build/flight.tsv"
printf 'round\tmode\tmeasure\tvalue\n' > "$tsv"

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(g++ --version | head -1)"
for round in $(seq "$rounds"); do
  for mode in normal flight trigger; do
    trigger=()
    env_mode=$mode
    [ "$mode" = trigger ] && trigger=(EDGETRACE_TRIGGER='infer>1s') env_mode=flight
    # 1. span / floor, CPU time, one process per mode and round.
    env "${trigger[@]}" EDGETRACE_MODE=$env_mode EDGETRACE_OUTPUT="$tmp/hot.etr" EDGETRACE_CATEGORIES='*,-bench_off' \
      "$build/bench/edgetrace_bench" --benchmark_filter='BM_floor$|BM_span_literal$' --benchmark_min_time=0.3 \
      --benchmark_color=false 2>/dev/null |
      awk -v r="$round" -v m="$mode" '/^BM_floor / && NF == 3 { f = $2 } /^BM_span_literal / && NF == 3 { s = $2 }
        END { printf "%s\t%s\tspan_ns\t%s\n%s\t%s\tspan_ratio\t%.4f\n", r, m, s, r, m, s / f }' >> "$tsv"
    rm -f "$tmp"/hot*.etr
    # 2. flusher CPU per span at 1 M spans/s.
    env "${trigger[@]}" EDGETRACE_MODE=$env_mode EDGETRACE_OUTPUT="$tmp/paced.etr" "$build/bench/edgetrace_flight_bench" paced 1000000 3 |
      awk -v r="$round" -v m="$mode" '{ for (i = 1; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END { printf "%s\t%s\tflusher_ns_per_span\t%s\n%s\t%s\tapp_ns_per_span\t%s\n", r, m,
              v["flusher_cpu_ns_per_span"], r, m, v["app_cpu_ns_per_span"] }' >> "$tsv"
    rm -f "$tmp"/paced*.etr
  done
  # 3. a 16 MiB snapshot.
  EDGETRACE_MODE=flight EDGETRACE_FLIGHT_AFTER_MS=0 EDGETRACE_OUTPUT="$tmp/snap.etr" \
    "$build/bench/edgetrace_flight_bench" snapshot |
    awk -v r="$round" '{ for (i = 1; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] } }
      END { printf "%s\tflight\tsnapshot_ms\t%s\n%s\tflight\tsnapshot_mib\t%.2f\n%s\tflight\tsnapshot_flusher_cpu_ms\t%s\n",
            r, v["snapshot_ms"], r, v["snapshot_bytes"] / 1048576, r, v["flusher_cpu_ms"] }' >> "$tsv"
  rm -f "$tmp"/snap*.etr
done
if [ -n "$(ls -A "$tmp")" ]; then
  echo "bench/flight.sh: files left in $tmp (flight mode without a trigger must write none):" >&2
  ls -l "$tmp" >&2
fi

echo "== $rounds interleaved rounds; median (min-max); raw rows in $tsv"
echo
echo "| measure | normal | flight | trigger |"
echo "|---|---:|---:|---:|"
for measure in span_ns span_ratio flusher_ns_per_span app_ns_per_span snapshot_ms snapshot_mib snapshot_flusher_cpu_ms; do
  row="| $measure"
  for mode in normal flight trigger; do
    cell=$(awk -F'\t' -v m="$mode" -v k="$measure" '$2 == m && $3 == k { print $4 }' "$tsv" | sort -g |
      awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
        med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.3g (%.3g-%.3g)", med, v[1], v[NR] }')
    row="$row | $cell"
  done
  echo "$row |"
done
