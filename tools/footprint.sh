#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures edgetrace's footprint: code per EDGETRACE_SCOPE site, binary
# growth for the runtime, memory per traced thread and in total. Prints
# Markdown tables (docs/PERFORMANCE.md, "Footprint and compile cost").
#
# Usage: bash tools/footprint.sh [--quick]
#   --quick   g++ -O2 x86-64 only (the figure with a target: <= 64 B/site)
# Environment: CXX (default g++), CLANGXX (clang++), AARCH64_CXX
#   (aarch64-linux-gnu-g++; the aarch64 rows are skipped without it).
# Exit status: 0, or 1 when g++ -O2 x86-64 code per site grows past the
# documented figures (200 bytes default, 88 compact; the target is 64).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
quick=0
[[ ${1-} == --quick ]] && quick=1

CXX=${CXX:-g++}
CLANGXX=${CLANGXX:-clang++}
AARCH64_CXX=${AARCH64_CXX:-aarch64-linux-gnu-g++}
work=$(mktemp -d "${TMPDIR:-/tmp}/edgetrace-footprint.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- 1. Code per EDGETRACE_SCOPE site ---------------------------------------
# N functions, each calling an opaque function, with or without a scope.
# Per site = ((with[2N] - with[N]) - (without[2N] - without[N])) / N, so the
# shared runtime code and the functions' own bodies cancel out.
gen_sites() {  # gen_sites COUNT WITH_SCOPE > file
  local count=$1 with=$2
  echo '#include <edgetrace/edgetrace.hpp>'
  echo 'EDGETRACE_CATEGORY(fp);'
  echo 'void opaque(int) noexcept;'
  for ((i = 0; i < count; ++i)); do
    if ((with)); then
      echo "void site_$i() { EDGETRACE_SCOPE(fp, \"site_$i\"); opaque($i); }"
    else
      echo "void site_$i() { opaque($i); }"
    fi
  done
}
# Sums of section sizes of an object: code (.text*) and site data
# (.rodata*, .data.rel.ro*: descriptors and names).
section_sum() {  # section_sum OBJECT PATTERN
  local size_tool=size
  [[ $1 == *aarch64* ]] && size_tool=aarch64-linux-gnu-size
  "$size_tool" -A "$1" | awk -v re="$2" '$1 ~ re { s += $2 } END { print s + 0 }'
}
per_site_row() {  # per_site_row LABEL COMPILER FLAGS...
  local label=$1 cxx=$2
  shift 2
  command -v "$cxx" >/dev/null || { echo "| $label | (no $cxx) | | |"; return; }
  local n=100 tag
  tag=$(echo "$label" | tr -c 'a-zA-Z0-9' _)
  local -A text data
  for count in $n $((2 * n)); do
    for with in 0 1; do
      local src=$work/sites_${count}_$with.cpp obj=$work/${tag}_${count}_$with.o
      [[ -f $src ]] || gen_sites $count $with >"$src"
      [[ $cxx == *aarch64* ]] && obj=$work/${tag}_${count}_${with}_aarch64.o
      "$cxx" -std=c++17 -I"$root/include" "$@" -c "$src" -o "$obj"
      text[$count,$with]=$(section_sum "$obj" '^\.text')
      data[$count,$with]=$(section_sum "$obj" '^\.(rodata|data\.rel\.ro)')
    done
  done
  local t d
  t=$(((text[$((2 * n)),1] - text[$n,1] - text[$((2 * n)),0] + text[$n,0]) / n))
  d=$(((data[$((2 * n)),1] - data[$n,1] - data[$((2 * n)),0] + data[$n,0]) / n))
  echo "| $label | $t | $d | $((text[$n,1] - text[$n,0] - n * t)) |"
  [[ $label == "g++ -O2 x86-64" ]] && gxx_o2_per_site=$t
  [[ $label == "g++ -O2 x86-64, EDGETRACE_COMPACT_SCOPES=1" ]] && gxx_o2_compact_per_site=$t
  return 0
}
gxx_o2_per_site=0
gxx_o2_compact_per_site=0
echo "## Code per EDGETRACE_SCOPE site"
echo
echo "($(${CXX} --version | head -n1); 100 vs 200 sites in one TU, each site a function calling an opaque function)"
echo
echo "| compiler, flags, target | .text bytes per site | site data bytes per site (.rodata, .data.rel.ro) | shared code (.text) in the TU, once |"
echo "|---|---:|---:|---:|"
per_site_row "g++ -O2 x86-64" "$CXX" -O2
per_site_row "g++ -O2 x86-64, EDGETRACE_COMPACT_SCOPES=1" "$CXX" -O2 -DEDGETRACE_COMPACT_SCOPES=1
if ((!quick)); then
  per_site_row "g++ -Os x86-64" "$CXX" -Os
  per_site_row "g++ -O0 x86-64" "$CXX" -O0
  per_site_row "clang++ -O2 x86-64" "$CLANGXX" -O2
  per_site_row "clang++ -O2 x86-64, EDGETRACE_COMPACT_SCOPES=1" "$CLANGXX" -O2 -DEDGETRACE_COMPACT_SCOPES=1
  per_site_row "g++ -O2 aarch64" "$AARCH64_CXX" -O2
  per_site_row "g++ -O2 aarch64, EDGETRACE_COMPACT_SCOPES=1" "$AARCH64_CXX" -O2 -DEDGETRACE_COMPACT_SCOPES=1
  per_site_row "g++ -Os aarch64" "$AARCH64_CXX" -Os
fi
echo

# --- 2. Binary growth for the whole runtime ---------------------------------
# examples/minimal.cpp linked with tracing compiled in vs EDGETRACE_ENABLED=0,
# stripped; the difference is everything edgetrace adds (flusher, encoder,
# env parsing, registry) plus minimal's three sites.
binary_row() {  # binary_row LABEL COMPILER FLAGS...
  local label=$1 cxx=$2
  shift 2
  command -v "$cxx" >/dev/null || { echo "| $label | (no $cxx) | | |"; return; }
  local on=$work/min_on off=$work/min_off strip_tool=strip
  [[ $cxx == *aarch64* ]] && strip_tool=aarch64-linux-gnu-strip
  "$cxx" -std=c++17 -I"$root/include" "$@" "$root/examples/minimal.cpp" -o "$on" -pthread
  "$cxx" -std=c++17 -I"$root/include" "$@" -DEDGETRACE_ENABLED=0 "$root/examples/minimal.cpp" -o "$off" -pthread
  "$strip_tool" "$on" "$off"
  # Loaded size (text + data + bss), not the file size: aarch64 binaries
  # pad segments to 64 KiB pages, which hides growth below that.
  local size_tool=size a b
  [[ $cxx == *aarch64* ]] && size_tool=aarch64-linux-gnu-size
  a=$("$size_tool" -B "$on" | awk 'NR == 2 { print $4 }')
  b=$("$size_tool" -B "$off" | awk 'NR == 2 { print $4 }')
  echo "| $label | $b | $a | $((a - b)) |"
}
echo "## Binary growth for the runtime (examples/minimal.cpp; text + data + bss)"
echo
echo "| compiler, flags, target | EDGETRACE_ENABLED=0 (bytes) | enabled (bytes) | added by edgetrace |"
echo "|---|---:|---:|---:|"
binary_row "g++ -O2 x86-64" "$CXX" -O2
if ((!quick)); then
  binary_row "g++ -Os x86-64" "$CXX" -Os
  binary_row "clang++ -O2 x86-64" "$CLANGXX" -O2
  binary_row "g++ -O2 aarch64" "$AARCH64_CXX" -O2
  binary_row "g++ -O2 x86-64 -static" "$CXX" -O2 -static
fi
echo

# --- 3. Memory per traced thread and in total --------------------------------
# A probe starts T threads, each records one span and then waits; the main
# thread waits for the flusher to refill its spare rings and reads its own
# resident set. Tracing on minus tracing off (same program, same threads)
# is what edgetrace costs.
cat >"$work/probe.cpp" <<'PROBE'
#include <edgetrace/edgetrace.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
EDGETRACE_CATEGORY(probe);
static long status_kb(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long value = -1;
  while (f && std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, std::strlen(key)) == 0) value = std::atol(line + std::strlen(key));
  if (f) std::fclose(f);
  return value;
}
int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i)
    pool.emplace_back([&] {
      { EDGETRACE_SCOPE(probe, "span"); }
      started.fetch_add(1);
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  { EDGETRACE_SCOPE(probe, "span"); }
  while (started.load() != threads - 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // flusher refills its spares
  std::printf("%ld %ld %ld\n", status_kb("VmRSS:"), status_kb("RssAnon:"), status_kb("VmSize:"));
  done.store(true);
  for (auto& t : pool) t.join();
}
PROBE
"$CXX" -std=c++17 -O2 -I"$root/include" "$work/probe.cpp" -o "$work/probe" -pthread
measure() {  # measure THREADS [VAR=VALUE...] -> "rss anon vsize" in KiB, median of 3
  local threads=$1
  shift
  for _ in 1 2 3; do env "$@" "$work/probe" "$threads"; done | sort -n -k2 | sed -n 2p
}
echo "## Memory (resident, KiB; tracing on minus off, same program; g++ -O2 x86-64)"
echo
echo "| EDGETRACE_BUFFER_KB | traced threads | RssAnon off | RssAnon on | added by edgetrace | per thread (slope 1→8 threads) |"
echo "|---:|---:|---:|---:|---:|---:|"
for kb in 1024 64 4; do
  declare -A added=()
  for threads in 1 8; do
    read -r _ off_anon _ < <(measure "$threads" -u EDGETRACE_OUTPUT)
    read -r _ on_anon _ < <(measure "$threads" EDGETRACE_OUTPUT="$work/probe.etr" EDGETRACE_BUFFER_KB=$kb)
    added[$threads]=$((on_anon - off_anon))
    slope=""
    [[ $threads == 8 ]] && slope=$(((added[8] - added[1]) / 7))
    echo "| $kb | $threads | $off_anon | $on_anon | ${added[$threads]} | $slope |"
  done
  unset added
done
echo
echo "(A ring is EDGETRACE_BUFFER_KB KiB of 24-byte records plus its header: state, site cache and four"
echo "chunk buffers of a sixteenth of the ring each (2-60 KiB), mapped with MAP_POPULATE; the flusher"
echo "keeps 2 spare rings pre-faulted, so 1 traced thread = 3 rings.)"

# The 64-byte target is reported, not enforced (it is not met: see
# docs/PERFORMANCE.md); the script fails only if a site grows past what the
# docs state, so a regression is caught.
echo "per site, g++ -O2 x86-64: $gxx_o2_per_site bytes (default), $gxx_o2_compact_per_site (EDGETRACE_COMPACT_SCOPES=1); target <= 64"
if ((gxx_o2_per_site > 200 || gxx_o2_compact_per_site > 88)); then
  echo "footprint: FAILED: code per site grew past 200 (default) / 88 (compact) bytes"
  exit 1
fi
