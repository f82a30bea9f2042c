#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU spans on a real NVIDIA GPU, checked in one run (about 4 minutes on 16
# cores, 6 at most): builds what it needs from the source tree alone (no
# network, no doctest, no Google Benchmark), then prints one verdict line
# per check and writes everything a person needs to judge the run into
# OUTDIR (at most 8 files):
#   summary.txt   the device, every verdict line, the totals
#   build.log     configure and build
#   ctest.log     the CUDA tests
#   app.log       what each traced program printed
#   info.txt      `edgetrace info` of each dump
#   overload.txt  bench/overload.sh on this machine's cores
# Checks: 1 the `cuda` tests; 2 the CUDA example's GPU spans (inside their
# launch and sync, no overlap, all counted; JSON and Perfetto convert);
# 3 accuracy against the events and the kernel's clock (idle stream and
# queued behind a kernel); 4 host/GPU alignment; 5 a CUDA scope's cost
# against a bare cudaEventRecord pair, every timed scope resolved;
# 6 8 threads x 4 streams x 100,000 scopes; 7 graph capture and 1000
# replays; 8 the overload bench on 1, 4, 8 and 16 threads; 9 the device
# samples through NVML (each GPU's load, SM clock, temperature and power,
# every 20 ms during check 6's load) against nvidia-smi; 10 NVTX capture
# (libedgetrace-nvtx.so) of a CUDA program's own NVTX ranges around its
# CUDA scopes: every range, one writer, nesting, GPU spans resolved.
#
# usage: tools/gpu_check.sh OUTDIR
# exit: 0 every check passed; 1 one failed (or the build did); 2 bad usage;
#       77 no usable NVIDIA GPU here (one line says why; nothing is built)
set -uo pipefail
shopt -s lastpipe  # `... | tally` counts in this shell

usage() { echo "usage: tools/gpu_check.sh OUTDIR   (checks GPU spans on this machine's NVIDIA GPU)" >&2; exit 2; }
[ $# -eq 1 ] && [ -n "$1" ] && [ "${1#-}" = "$1" ] || usage
no_device() { echo "gpu_check: no usable NVIDIA GPU here ($1): nothing checked"; exit 77; }

# --- Is there a GPU? (cheap: nothing is built before this is known) -------
if [ "${CUDA_VISIBLE_DEVICES+set}" = set ] && { [ -z "$CUDA_VISIBLE_DEVICES" ] || [ "$CUDA_VISIBLE_DEVICES" = -1 ]; }; then
  no_device "CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES' hides every GPU"
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
  [ -e /dev/nvidia0 ] || no_device "no NVIDIA driver: no nvidia-smi and no /dev/nvidia0"
  no_device "/dev/nvidia0 is there but nvidia-smi is not"
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "${gpus:-0}" -gt 0 ] || no_device "nvidia-smi lists no GPU"

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
: >"$out/summary.txt"
say() { echo "$*" | tee -a "$out/summary.txt"; }
passed=0 failed=0
tally() {  # verdict lines on stdin: to the summary, counted
  local line
  while IFS= read -r line; do
    say "$line"
    case "$line" in PASS*) passed=$((passed + 1)) ;; FAIL*) failed=$((failed + 1)) ;; esac
  done
}
pass_fail() { if [ "$1" -eq 0 ]; then echo "PASS $2"; else echo "FAIL $2"; fi; }
started=$(date +%s)

command -v nvcc >/dev/null 2>&1 || for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [ -x "$d/nvcc" ] && PATH="$d:$PATH" && break; done
command -v nvcc >/dev/null 2>&1 || { say "FAIL build: a GPU is here but nvcc is not (the check builds with the CUDA toolkit)"; exit 1; }
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
say "gpu_check: $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
say "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(nvcc --version | tail -1); sm_${cap:-?}"

# --- Build: only what the checks need, in parallel -------------------------
build="$root/build/gpu-check"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
{
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DEDGETRACE_BUILD_TESTS=ON \
    -DEDGETRACE_BUILD_EXAMPLES=ON -DEDGETRACE_BUILD_BENCH=OFF -DEDGETRACE_TEST_KNOBS=OFF -DEDGETRACE_WERROR=OFF \
    -DEDGETRACE_GPU_CHECK=ON -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON ${cap:+-DCMAKE_CUDA_ARCHITECTURES=$cap} &&
    cmake --build "$build" -j"$(nproc)" --target edgetrace_cli cudart_app cudart_check cuda_pipeline \
      edgetrace_gpu_check_app edgetrace_gpu_check_read edgetrace_nvtx_capture
} >"$out/build.log" 2>&1
if [ $? -ne 0 ]; then
  say "FAIL build: see build.log"
  tail -20 "$out/build.log"
  exit 1
fi
say "built in $(($(date +%s) - started)) s"
cli="$build/tools/edgetrace"
app="$build/tools/gpu_check/edgetrace_gpu_check_app"
judge="$build/tools/gpu_check/edgetrace_gpu_check_read"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
probe=$("$app" probe 2>&1)
if [ $? -ne 0 ]; then
  say "FAIL probe: nvidia-smi lists a GPU but the CUDA runtime does not: $probe"
  exit 1
fi
say "probe: $probe"

# traced NAME PROGRAM [ARGS...]: runs PROGRAM under EDGETRACE_OUTPUT=$work/NAME.etr;
# its stdout goes to $work/NAME.out and app.log, the dump's `edgetrace info` to info.txt.
traced() {
  local name=$1
  shift
  rm -f "$work/$name.etr"
  echo "== $name: $*" >>"$out/app.log"
  EDGETRACE_OUTPUT="$work/$name.etr" timeout 120 "$@" >"$work/$name.out" 2>>"$out/app.log"
  local rc=$?
  cat "$work/$name.out" >>"$out/app.log"
  echo "== $name: exit $rc" >>"$out/app.log"
  { echo "== $name"; "$cli" info "$work/$name.etr" 2>&1; } >>"$out/info.txt"
  pass_fail "$rc" "$name run: exit $rc" | tally
}

# --- 1: every `cuda` test on the device ------------------------------------
(cd "$build" && ctest -L cuda --output-on-failure --timeout 120) >"$out/ctest.log" 2>&1
rc=$?
results=$(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$out/ctest.log")
tests=$(printf '%s\n' "$results" | grep -c 'Test' || true)
skipped=$(printf '%s\n' "$results" | grep -c 'Skipped\|Not Run' || true)
[ "$tests" -gt 0 ] && [ "$skipped" -eq 0 ] || rc=1
pass_fail "$rc" "1 cuda tests: $tests run, $skipped skipped ($(grep -m1 'tests passed' "$out/ctest.log"))" | tally

# --- 2: the CUDA example ---------------------------------------------------
frames=50
traced example "$build/examples/cuda_pipeline" --frames $frames
"$cli" json "$work/example.etr" -o "$work/example.json" >>"$out/app.log" 2>&1
pass_fail $? "2 example json: $(stat -c %s "$work/example.json" 2>/dev/null || echo 0) bytes" | tally
"$cli" perfetto "$work/example.etr" -o "$work/example.pftrace" >>"$out/app.log" 2>&1
pass_fail $? "2 example perfetto: $(stat -c %s "$work/example.pftrace" 2>/dev/null || echo 0) bytes" | tally
"$judge" example "$work/example.etr" $((frames * 5 + 10)) 2>&1 | tally

# --- 3 to 7: the check program, mode by mode ---------------------------------
traced accuracy "$app" accuracy 50
"$judge" accuracy "$work/accuracy.etr" "$work/accuracy.out" 2>&1 | tally
traced alignment "$app" alignment 400
"$judge" alignment "$work/alignment.etr" "$work/alignment.out" 2>&1 | tally
traced cost "$app" cost 15
"$judge" cost "$work/cost.etr" "$work/cost.out" 2>&1 | tally
traced load "$app" load 100000
"$judge" load "$work/load.etr" "$work/load.out" 2>&1 | tally
traced graph "$app" graph 1000
"$judge" graph "$work/graph.etr" "$work/graph.out" 2>&1 | tally

# --- 8: the overload bench on this machine's cores -------------------------
if timeout 200 bash "$root/bench/overload.sh" --rounds 3 --workloads "w1_1t w1_4t w1_8t w1_16t" >"$out/overload.txt" 2>&1; then
  lost=$(awk -F'|' '/edgetrace wait/ { gsub(/[ %]/, "", $9); if ($9 + 0 > 0) n++ } END { print n + 0 }' "$out/overload.txt")
  pass_fail "$lost" "8 overload: EDGETRACE_ON_FULL=wait lost spans in $lost of 4 workloads, worst of 3 rounds (table: overload.txt)" | tally
  grep 'edgetrace wait' "$out/overload.txt" | sed 's/^/NOTE 8 overload /' | tally
else
  echo "FAIL 8 overload: bench/overload.sh failed (overload.txt)" | tally
fi

# --- 9: the device samples through NVML, against nvidia-smi ----------------
traced device env EDGETRACE_SAMPLE_MS=20 "$app" load 100000
nvidia-smi --query-gpu=index,clocks.max.sm,temperature.gpu,power.limit --format=csv,noheader,nounits >"$work/smi.txt" 2>&1
cat "$work/smi.txt" >>"$out/app.log"
"$judge" device "$work/device.etr" "$work/smi.txt" 2>&1 | tally

# --- 10: NVTX capture of a CUDA program's own NVTX ranges --------------------
if [ -f "$build/libedgetrace-nvtx.so" ]; then
  traced nvtx env NVTX_INJECTION64_PATH="$build/libedgetrace-nvtx.so" "$app" nvtx 200
  "$judge" nvtx "$work/nvtx.etr" "$work/nvtx.out" 2>&1 | tally
else
  echo "FAIL 10 nvtx: libedgetrace-nvtx.so was not built (no NVTX 3 headers found?)" | tally
fi

say "gpu_check: $passed passed, $failed failed in $(($(date +%s) - started)) s; files in $out"
[ "$failed" -eq 0 ]
