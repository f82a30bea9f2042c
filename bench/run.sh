#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs the benchmark suite: Google Benchmark cases (JSON in
# build/bench/results.json, ratio table on stdout), instructions per span
# under callgrind, bytes per span of the example pipeline, and converter
# throughput on a large dump. Usage: bench/run.sh [--quick] [--no-converter]
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0 converter=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-converter) converter=0 ;;
    *) echo "usage: bench/run.sh [--quick] [--no-converter]" >&2; exit 1 ;;
  esac
done

. bench/needs.sh
bench_needs cmake g++ valgrind /usr/include/benchmark/benchmark.h=libbenchmark-dev /usr/bin/time=time

build=build/bench
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEDGETRACE_BUILD_BENCH=ON -DEDGETRACE_BUILD_TESTS=OFF \
  -DEDGETRACE_BUILD_EXAMPLES=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target edgetrace_bench edgetrace_callgrind_probe edgetrace_make_dump \
  edgetrace_cli pipeline >/dev/null
# NVTX capture's bench, where the NVTX 3 headers are (the CUDA toolkit's include/nvtx3).
nvtx_bench=0
cmake --build "$build" -j"$(nproc)" --target edgetrace_nvtx_bench >/dev/null 2>&1 && nvtx_bench=1

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(g++ --version | head -1)"
min_time=0.5
[ "$quick" = 1 ] && min_time=0.05

echo "== Google Benchmark (ratio = CPU time per span / floor's, same run)"
EDGETRACE_OUTPUT="$build/bench.etr" EDGETRACE_CATEGORIES='*,-bench_off' \
  "$build/bench/edgetrace_bench" --benchmark_min_time="$min_time" \
  --benchmark_out="$build/results.json" --benchmark_out_format=json --benchmark_color=false \
  | sed -n '/^case (per span/,$p'
rm -f "$build/bench.etr"
echo "(full results: $build/results.json)"

if [ "$nvtx_bench" = 1 ]; then
  echo
  echo "== NVTX capture (ratio = CPU time per push/pop range / floor's and / EDGETRACE_SCOPE's, same run)"
  NVTX_INJECTION64_PATH="$build/libedgetrace-nvtx.so" EDGETRACE_OUTPUT="$build/nvtx_bench.etr" \
    "$build/bench/edgetrace_nvtx_bench" --benchmark_min_time="$min_time" --benchmark_color=false \
    | sed -n '/^case (per range/,$p'
  rm -f "$build/nvtx_bench.etr"
fi

echo
echo "== instructions per span (callgrind; same binary, same input: repeatable)"
bash bench/callgrind.sh "$build/bench/edgetrace_callgrind_probe"

echo
echo "== bytes per record on disk, example pipeline"
EDGETRACE_OUTPUT="$build/pipeline.etr" "$build/examples/pipeline" --frames 200 >/dev/null
"$build/tools/edgetrace" info "$build/pipeline.etr" | awk -v size="$(stat -c %s "$build/pipeline.etr")" '
  /^totals/ { spans=$2; instants=$4; counters=$6; dropped=$8 }
  /^  annotations/ { notes += $2 + $4 + 2 * $7 + $9 }
  END { records = spans + instants + counters + notes;
        printf "pipeline: %d bytes / %d records (%d spans, %d instants, %d counters, %d annotation records, %d dropped) = %.2f bytes/record\n",
               size, records, spans, instants, counters, notes, dropped, size / records }'

if [ "$converter" = 1 ]; then
  echo
  spans=50000000
  [ "$quick" = 1 ] && spans=2000000
  echo "== converter throughput on a ${spans}-span dump"
  EDGETRACE_OUTPUT="$build/big.etr" EDGETRACE_BUFFER_KB=65536 "$build/bench/edgetrace_make_dump" "$spans"
  "$build/tools/edgetrace" info "$build/big.etr" | grep -E '^(size|totals)'
  for cmd in json summary; do
    /usr/bin/time -f "%e s %M KiB" -o "$build/time.txt" "$build/tools/edgetrace" "$cmd" "$build/big.etr" -o /dev/null
    read -r seconds _ rss _ < "$build/time.txt"
    size=$(stat -c %s "$build/big.etr")
    awk -v s="$seconds" -v rss="$rss" -v n="$spans" -v b="$size" -v c="$cmd" 'BEGIN {
      printf "edgetrace %s: %.2f s, %.1f M events/s, %.1f MB/s of dump, peak RSS %.1f MiB\n", c, s, n / s / 1e6, b / s / 1e6, rss / 1024 }'
  done
  rm -f "$build/big.etr"
fi
