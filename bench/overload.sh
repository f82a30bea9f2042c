#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Dense loops under overload, side by side in interleaved rounds: the loop
# untraced (empty), the floor (two raw ticks + one 24-byte store per span),
# edgetrace with EDGETRACE_ON_FULL=wait (the default) and =drop. Every round
# runs every variant of every workload once, in turn, so a slow moment of a
# shared machine hits all of them alike. Ratios are to the floor of the same
# round; loss is counted from each dump (`edgetrace info`: spans written
# against spans issued). Medians and worst rounds go to a Markdown table on
# stdout; raw rows to build/bench/overload.tsv.
#
# usage: bench/overload.sh [--rounds N] [--workloads "w1_1t w1_2t w2 w2_2t w3"] [--O2]
#   workloads also: w1_4t w1_8t w1_16t w1_32t w1_64t w1_128t (that many threads: on 2 cores thread
#   pools larger than the core count; on a 16-core GPU machine, tools/gpu_check.sh)
#   --O2  build with -O2 (the flags of a typical application build) instead
#         of CMake's Release -O3
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 workloads="w1_1t w1_2t w2 w2_2t w3" opt=O3
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --workloads) workloads=${2:?--workloads needs a list}; shift ;;
    --O2) opt=O2 ;;
    *) echo "usage: bench/overload.sh [--rounds N] [--workloads \"w1_1t w1_2t w2 w2_2t w3\"] [--O2]" >&2; exit 1 ;;
  esac
  shift
done
case "$rounds" in '' | *[!0-9]* | 0) echo "bench/overload.sh: --rounds wants a positive number, not '$rounds'" >&2; exit 1 ;; esac
for w in $workloads; do
  case "$w" in
    w1_1t | w1_2t | w2 | w2_2t | w3 | w1_4t | w1_8t | w1_16t | w1_32t | w1_64t | w1_128t) ;;
    *) echo "bench/overload.sh: unknown workload '$w' (w1_1t, w1_2t, w2, w2_2t, w3, w1_4t, w1_8t, w1_16t, w1_32t, w1_64t, w1_128t)" >&2; exit 1 ;;
  esac
done

. bench/needs.sh
bench_needs cmake g++

build=build/bench-overload-$opt
flags="-O3 -DNDEBUG"
[ "$opt" = O2 ] && flags="-O2 -DNDEBUG"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=$flags" -DEDGETRACE_BUILD_BENCH=ON \
  -DEDGETRACE_BUILD_TESTS=OFF -DEDGETRACE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target edgetrace_overload_bench edgetrace_cli >/dev/null
bench="$build/bench/edgetrace_overload_bench"
cli="$build/tools/edgetrace"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tsv="$build/overload.tsv"

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(g++ --version | head -1); $flags"
echo "rounds: $rounds, interleaved; workloads: $workloads"
printf 'round\tworkload\tvariant\thot_ns\tissued\twritten\tdropped\tflusher_cpu_ns\n' >"$tsv"
field() { local v=${line##*"$1"=}; echo "${v%% *}"; }  # NAME=value out of the bench's line
for round in $(seq 1 "$rounds"); do
  for w in $workloads; do
    for variant in empty floor wait drop; do
      case "$variant" in
        empty | floor) line=$("$bench" "$w" "$variant") written=- dropped=- ;;
        *)
          dump="$work/$w-$variant.etr"
          rm -f "$dump"
          line=$(EDGETRACE_OUTPUT="$dump" EDGETRACE_ON_FULL="$variant" "$bench" "$w" traced 2>/dev/null)
          read -r written dropped < <("$cli" info "$dump" | awk '/^totals/ { print $2, $8 }')
          ;;
      esac
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$w" "$variant" "$(field hot_ns_per_span)" \
        "$(field spans_issued)" "$written" "$dropped" "$(field flusher_cpu_ns_per_span)" >>"$tsv"
    done
  done
  echo "round $round/$rounds done" >&2
done

# Table: per workload and variant, median and worst (highest) ns/span,
# ratio to the same round's floor (median and worst), loss (median, worst).
awk -F'\t' -v workloads="$workloads" '
  NR == 1 { next }
  { key = $2 SUBSEP $3; n[key]++; hot[key, n[key]] = $4
    if ($3 == "floor") floor_of[$1, $2] = $4
    row[NR] = $0 }
  END {
    for (r in row) {
      split(row[r], f, "\t")
      key = f[2] SUBSEP f[3]
      m = ++nr[key]
      ratio[key, m] = f[4] / floor_of[f[1], f[2]]
      loss[key, m] = f[6] == "-" ? -1 : 100 * (f[5] - f[6]) / f[5]
      flusher[key, m] = f[8]
    }
    print "| workload | variant | ns/span median | worst | ratio to floor median | worst | spans lost median | worst | flusher CPU ns/span median |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    nw = split(workloads, ws, " ")
    nv = split("empty floor wait drop", vs, " ")
    for (i = 1; i <= nw; i++) for (j = 1; j <= nv; j++) {
      key = ws[i] SUBSEP vs[j]
      c = n[key]
      if (c == 0) continue
      for (k = 1; k <= c; k++) { a[k] = hot[key, k]; b[k] = ratio[key, k]; l[k] = loss[key, k]; u[k] = flusher[key, k] }
      asort_num(a, c); asort_num(b, c); asort_num(l, c); asort_num(u, c)
      mid = int((c + 1) / 2)
      label = vs[j] == "wait" || vs[j] == "drop" ? "edgetrace " vs[j] : vs[j]
      lost = l[c] < 0 ? "- | - | -" : sprintf("%.2f %% | %.2f %% | %.1f", l[mid], l[c], u[mid])
      printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %s |\n", ws[i], label, a[mid], a[c], b[mid], b[c], lost
    }
  }
  function asort_num(x, count,   p, q, t) {
    for (p = 2; p <= count; p++) { t = x[p]; for (q = p - 1; q >= 1 && x[q] > t; q--) x[q + 1] = x[q]; x[q + 1] = t }
  }' "$tsv"
echo "(raw rows: $tsv)"
