#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo: on a fresh Debian 12 box, builds the traced example pipeline and the CLI, records a trace, converts it to JSON, prints a summary.
#
# Usage: bash tools/demo.sh     (as root, or with sudo available for apt-get)
# Output: build/demo/pipeline.etr (the dump) and build/demo/pipeline.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# 1. Tools: a compiler, ninja and cmake (only what is missing is installed).
bash tools/install_missing.sh cmake ninja-build g++

# 2. Configure with the release preset (tests and benchmarks off: they need
#    doctest and Google Benchmark) and build the example, the converter and
#    the precompiled runtime (so `cmake --install build/release` works next).
echo "== configure + build (preset release)"
cmake --preset release -DEDGETRACE_BUILD_TESTS=OFF -DEDGETRACE_BUILD_BENCH=OFF >/dev/null
# NVTX capture (libedgetrace-nvtx.so) too, where the NVTX 3 headers are: engines' own NVTX ranges.
nvtx_capture=()
grep -q 'edgetrace_nvtx_capture' build/release/build.ninja && nvtx_capture=(edgetrace_nvtx_capture)
cmake --build --preset release --target pipeline edgetrace_cli edgetrace_runtime "${nvtx_capture[@]}"
bin=build/release

# 3. Record: EDGETRACE_OUTPUT turns tracing on; without it nothing is written.
mkdir -p build/demo
rm -f build/demo/pipeline.etr build/demo/pipeline.json
echo "== run: EDGETRACE_OUTPUT=build/demo/pipeline.etr $bin/examples/pipeline"
EDGETRACE_OUTPUT=build/demo/pipeline.etr "$bin/examples/pipeline"

# 4. Convert and describe.
echo "== $bin/tools/edgetrace json build/demo/pipeline.etr -o build/demo/pipeline.json"
"$bin/tools/edgetrace" json build/demo/pipeline.etr -o build/demo/pipeline.json
echo "== $bin/tools/edgetrace info build/demo/pipeline.etr"
"$bin/tools/edgetrace" info build/demo/pipeline.etr
echo "== $bin/tools/edgetrace summary build/demo/pipeline.etr --sort-by order --per inference   (per layer, network order)"
"$bin/tools/edgetrace" summary build/demo/pipeline.etr --sort-by order --per inference

json="$(pwd)/build/demo/pipeline.json"
cat <<MSG

Trace written: $json
Open it in https://ui.perfetto.dev ("Open trace file"), in chrome://tracing ("Load"),
or in https://www.speedscope.app. Each pipeline thread is a track; the
"inference" spans hold one span per model layer.
MSG
if [ -f "$bin/libedgetrace-nvtx.so" ]; then
  cat <<MSG
NVTX capture for engines you did not write (TensorRT, libtorch: their NVTX ranges):
  NVTX_INJECTION64_PATH=$(pwd)/$bin/libedgetrace-nvtx.so EDGETRACE_OUTPUT=run.etr ./your_app
MSG
fi
