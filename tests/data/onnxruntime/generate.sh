#!/usr/bin/env bash
# Regenerates the ONNX Runtime profiles and dumps in this folder from a real
# ONNX Runtime run (the suite only reads them; nothing here is built by CI).
#
#   bash tests/data/onnxruntime/generate.sh ORT_INCLUDE_DIR ORT_LIBRARY
#
# ORT_INCLUDE_DIR holds onnxruntime_c_api.h (ONNX Runtime's include/, or its
# include/onnxruntime/core/session/); ORT_LIBRARY is libonnxruntime.so.1 (the
# npm package onnxruntime-node@1.30.0 ships it under
# bin/napi-v6/linux/x64/). Needs g++ and the repository's include/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
include=${1:?ORT include folder}
library=${2:?path of libonnxruntime.so.1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++17 -O2 -Wall -Wextra -I"$repo/include" -I"$include" "$here/ort_app.cpp" -o "$work/ort_app" \
  "$library" -Wl,-rpath,"$(dirname "$library")" -lpthread
rm -f "$here"/*.etr "$here"/*.json
cd "$work"
# session: 20 frames, 2 intra-op threads, the profiler's start recorded.
EDGETRACE_OUTPUT="$here/session.etr" ./ort_app session 20 2 session
# plain: the same without the start (the importer fits it).
EDGETRACE_OUTPUT="$here/plain.etr" ./ort_app plain 20 1 plain
# run: 40 frames, every 10th profiled through RunOptions, its span marked.
EDGETRACE_OUTPUT="$here/run.etr" ./ort_app run 40 1 run
mv -- session_*.json plain_*.json run_*.json "$here"/
ls -l "$here"
