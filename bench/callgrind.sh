#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Counts instructions per span with callgrind for the enabled, run-time
# disabled and compile-time disabled span, against the floor (two ticks +
# one 24-byte store) and the empty loop; and a span with an int, a float or
# a bool argument (the ring holds every record: no waiting is counted).
# Usage: bench/callgrind.sh PROBE [N]
set -euo pipefail
probe=${1:?usage: bench/callgrind.sh path/to/edgetrace_callgrind_probe [iterations]}
n=${2:-200000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
EDGETRACE_OUTPUT="$out/probe.etr" EDGETRACE_BUFFER_KB=$(( 7 * n * 24 / 1024 + 64 )) EDGETRACE_CATEGORIES='*,-probe_off' \
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$probe" "$n" 2>/dev/null
callgrind_annotate --inclusive=yes --threshold=100 "$out/cg.out" 2>/dev/null > "$out/annotated.txt"
ir() { awk -v f="$1" '$0 ~ (":" f " ") || $0 ~ (":" f "$") { gsub(",", "", $1); print $1; exit }' "$out/annotated.txt"; }
empty=$(ir probe_empty)
printf "%-26s %14s %12s %16s\n" case "instructions" "per span" "minus empty loop"
for f in probe_empty probe_floor probe_enabled probe_runtime_disabled probe_compile_disabled \
    probe_arg_int probe_arg_float probe_arg_bool; do
  total=$(ir "$f")
  awk -v name="$f" -v t="$total" -v e="$empty" -v n="$n" 'BEGIN {
    printf "%-26s %14d %12.2f %16.2f\n", name, t, t / n, (t - e) / n }'
done
