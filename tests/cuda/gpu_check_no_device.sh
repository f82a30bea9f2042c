#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu_check.sh without a device (what CI sees): one line that says
# why, exit 77, nothing built or written. CUDA_VISIBLE_DEVICES= hides every
# GPU, so this path is the one taken on a GPU machine too. Bad usage: exit 2.
# usage: gpu_check_no_device.sh GPU_CHECK_SH SCRATCH_DIR
set -u
script=$1 dir=$2
fail() { echo "FAILED: $*"; exit 1; }
rm -rf "$dir"
started=$(date +%s%N)
out=$(CUDA_VISIBLE_DEVICES= bash "$script" "$dir" 2>&1)
rc=$?
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
echo "exit $rc after $elapsed_ms ms: $out"
[ "$rc" -eq 77 ] || fail "exit $rc, not 77"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "more than one line"
case "$out" in "gpu_check: no usable NVIDIA GPU here (CUDA_VISIBLE_DEVICES='' hides every GPU): nothing checked") ;;
  *) fail "unexpected line" ;; esac
[ ! -e "$dir" ] || fail "it created $dir"
[ "$elapsed_ms" -lt 5000 ] || fail "it took $elapsed_ms ms: it must decide before building anything"
# Without nvidia-smi and /dev/nvidia0 (this machine, unless it has a GPU):
# the same kind of line, from the driver check.
if ! command -v nvidia-smi >/dev/null 2>&1 && [ ! -e /dev/nvidia0 ]; then
  out=$(env -u CUDA_VISIBLE_DEVICES bash "$script" "$dir" 2>&1)
  rc=$?
  echo "exit $rc: $out"
  [ "$rc" -eq 77 ] || fail "without a driver: exit $rc, not 77"
  [ "$out" = "gpu_check: no usable NVIDIA GPU here (no NVIDIA driver: no nvidia-smi and no /dev/nvidia0): nothing checked" ] ||
    fail "without a driver: unexpected line"
fi
for bad in "" "--help" "a b"; do
  # shellcheck disable=SC2086
  out=$(CUDA_VISIBLE_DEVICES= bash "$script" $bad 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] || fail "usage '$bad': exit $rc, not 2"
  case "$out" in "usage: tools/gpu_check.sh OUTDIR"*) ;; *) fail "usage '$bad': $out" ;; esac
done
echo PASSED
