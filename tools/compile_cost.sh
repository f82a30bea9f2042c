#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures what `#include <edgetrace/edgetrace.hpp>` adds to a translation
# unit's compile time (and what a tool reading a dump's events costs, with the
# reader header-only and with edgetrace::reader), what each standard header
# it pulls costs, and checks
# that no heavy header (<iostream>, <regex>, <map>, string streams...) is
# reachable from it. Prints Markdown tables (docs/PERFORMANCE.md).
#
# Usage: bash tools/compile_cost.sh [REPETITIONS]   (default 7; median)
# Environment: CXX (default g++), CXXFLAGS (default -O2 -std=c++17).
# Exit status: 1 when a heavy header is included (or the light path, with
# EDGETRACE_SEPARATE_RUNTIME=1, includes any standard C++ header besides
# <cstdint>/<cstddef>), else 0 (the time target, <= 60 ms over an empty TU
# with the separate runtime, is reported, not enforced: machines are noisy).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
reps=${1:-7}
CXX=${CXX:-g++}
read -r -a flags <<<"${CXXFLAGS:--O2 -std=c++17}"
work=$(mktemp -d "${TMPDIR:-/tmp}/edgetrace-compile.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Each case is a TU; all are compiled round-robin, so drift on a shared
# machine hits every case alike, and the median of each is reported.
declare -a names=() files=()
add_case() {  # add_case NAME < source
  local file=$work/case_${#names[@]}.cpp
  cat >"$file"
  names+=("$1")
  files+=("$file")
}
add_case "empty TU" <<<'int main() { return 0; }'
add_case "edgetrace.hpp" <<<'#include <edgetrace/edgetrace.hpp>
int main() { return 0; }'
add_case "edgetrace.hpp + 20 scopes" < <(
  echo '#include <edgetrace/edgetrace.hpp>'
  echo 'EDGETRACE_CATEGORY(cc);'
  echo 'void opaque(int) noexcept;'
  for i in $(seq 1 20); do echo "void f$i() { EDGETRACE_SCOPE(cc, \"f$i\"); opaque($i); }"; done
  echo 'int main() { return 0; }')
add_case "edgetrace.hpp, EDGETRACE_SEPARATE_RUNTIME=1" <<<'#define EDGETRACE_SEPARATE_RUNTIME 1
#include <edgetrace/edgetrace.hpp>
int main() { return 0; }'
add_case "edgetrace.hpp + 20 scopes, EDGETRACE_SEPARATE_RUNTIME=1" < <(
  echo '#define EDGETRACE_SEPARATE_RUNTIME 1'
  echo '#include <edgetrace/edgetrace.hpp>'
  echo 'EDGETRACE_CATEGORY(cc);'
  echo 'void opaque(int) noexcept;'
  for i in $(seq 1 20); do echo "void f$i() { EDGETRACE_SCOPE(cc, \"f$i\"); opaque($i); }"; done
  echo 'int main() { return 0; }')
add_case "runtime_impl.hpp (the one runtime TU)" <<<'#include <edgetrace/runtime_impl.hpp>'
add_case "edgetrace.hpp, EDGETRACE_ENABLED=0" <<<'#define EDGETRACE_ENABLED 0
#include <edgetrace/edgetrace.hpp>
int main() { return 0; }'
# A tool that reads a dump's events through <edgetrace/reader.hpp> (the
# reader and every output): header-only, and compiled once
# (EDGETRACE_SEPARATE_READER=1, what edgetrace::reader sets: the TU sees
# declarations only).
reader_tool='#include <edgetrace/reader.hpp>
int main(int, char** argv) {
  edgetrace::reader::dump_reader r;
  int n = 0;
  if (r.open(argv[1]) && r.read_metadata()) r.read_events([&n](const edgetrace::reader::event&) { ++n; });
  return n;
}'
add_case "a tool reading events, header-only reader" <<<"$reader_tool"
add_case "the same, EDGETRACE_SEPARATE_READER=1" <<<"#define EDGETRACE_SEPARATE_READER 1
$reader_tool"
reader_separate_case=$((${#names[@]} - 1))
add_case "edgetrace_reader.cpp (the one reader TU)" < <(echo '#define EDGETRACE_SEPARATE_READER 1'; cat "$root/cmake/edgetrace_reader.cpp")
# The standard headers of writer/runtime.hpp, alone and together.
std_headers=(unordered_map string vector condition_variable mutex atomic chrono algorithm csignal)
for h in "${std_headers[@]}"; do
  add_case "<$h> alone" <<<"#include <$h>
int main() { return 0; }"
done
add_case "all std headers of the enabled path" < <(
  # Every project header the enabled path includes, as the compiler sees it.
  for f in $(g++ -std=c++17 -I"$root/include" -MM -x c++ "$root/include/edgetrace/edgetrace.hpp" |
             tr ' \\' '\n\n' | grep '/include/edgetrace/'); do
    grep -h '^#include <[a-z_]*>' "$f" || true  # config.hpp has none
  done | sort -u
  echo 'int main() { return 0; }')

# CPU time (user + sys) of the compiler, not wall time: on a shared
# machine the wall clock mostly measures the neighbours.
cpu_ms() {  # cpu_ms COMMAND... -> CPU milliseconds of the command
  local TIMEFORMAT='%3U %3S' t
  t=$({ time "$@" >/dev/null 2>&1; } 2>&1)
  awk '{ printf "%d\n", ($1 + $2) * 1000 + 0.5 }' <<<"$t"
}
declare -A samples=()
for ((r = 0; r < reps; ++r)); do
  for i in "${!files[@]}"; do
    samples[$i]+="$(cpu_ms "$CXX" "${flags[@]}" -I"$root/include" -c "${files[$i]}" -o "$work/out.o") "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median "${samples[0]}")
echo "## Compile time ($($CXX --version | head -n1), ${flags[*]}, CPU ms (user + sys), median of $reps)"
echo
echo "| translation unit | median CPU ms | over the empty TU |"
echo "|---|---:|---:|"
for i in "${!files[@]}"; do
  m=$(median "${samples[$i]}")
  echo "| ${names[$i]} | $m | $((m - base)) |"
done
header_only=$(($(median "${samples[1]}") - base))
added=$(($(median "${samples[3]}") - base))
echo
echo "header-only (the default): +$header_only ms per TU that includes the header"
if ((added <= 60)); then
  echo "target (<= 60 ms over an empty TU, EDGETRACE_SEPARATE_RUNTIME=1 / edgetrace::runtime): met, $added ms"
else
  echo "target (<= 60 ms over an empty TU, EDGETRACE_SEPARATE_RUNTIME=1 / edgetrace::runtime): missed by $((added - 60)) ms ($added ms)"
fi
reader_tool_ms=$(median "${samples[$reader_separate_case]}")
if ((reader_tool_ms <= 2000)); then
  echo "target (<= 2000 ms for a TU reading a dump's events, EDGETRACE_SEPARATE_READER=1 / edgetrace::reader): met, $reader_tool_ms ms"
else
  echo "target (<= 2000 ms for a TU reading a dump's events, EDGETRACE_SEPARATE_READER=1 / edgetrace::reader): missed ($reader_tool_ms ms)"
fi
echo

# --- Heavy headers: none may be reachable from the user header --------------
heavy='iostream|istream|ostream|sstream|fstream|regex|map|set|functional|locale|thread|future|memory|list|deque'
echo "## Standard headers reachable from edgetrace.hpp"
echo
"$CXX" "${flags[@]}" -I"$root/include" -H -fsyntax-only "${files[1]}" 2>"$work/h.txt" || true
direct=$(grep -E '^\.+ /usr/include/c\+\+/[0-9]+/[a-z_]+$' "$work/h.txt" | sed -E 's|.*/||' | sort -u | tr '\n' ' ')
echo "standard headers (by name, at any depth): $direct"
echo "total header files opened: $(grep -cE '^\.+ ' "$work/h.txt")"
bad=$(grep -E '^\.+ /usr/include/c\+\+/[0-9]+/('"$heavy"')$' "$work/h.txt" | sed -E 's|.*/||' | sort -u | tr '\n' ' ' || true)
if [[ -n $bad ]]; then
  echo "compile_cost: FAILED: heavy headers reachable from edgetrace.hpp: $bad"
  exit 1
fi
echo "heavy headers (<$(sed 's/|/>, </g' <<<"$heavy")>): none"
echo
# The light path (what a TU compiles with EDGETRACE_SEPARATE_RUNTIME=1, and
# the part of the header-only build before the runtime) may use C headers
# and <cstdint>/<cstddef> only: not even <atomic> or <type_traits>.
"$CXX" "${flags[@]}" -I"$root/include" -H -fsyntax-only "${files[3]}" 2>"$work/h_light.txt" || true
light=$(grep -E '^\.+ /usr/include/c\+\+/[0-9]+/[a-z_]+$' "$work/h_light.txt" | sed -E 's|.*/||' | sort -u | tr '\n' ' ')
echo "with EDGETRACE_SEPARATE_RUNTIME=1: standard C++ headers: ${light:-none}; header files opened: $(grep -cE '^\.+ ' "$work/h_light.txt")"
extra=$(tr ' ' '\n' <<<"$light" | grep -vE '^(cstdint|cstddef|)$' | tr '\n' ' ' || true)
if [[ -n ${extra// /} ]]; then
  echo "compile_cost: FAILED: the light path includes more than <cstdint>/<cstddef>: $extra"
  exit 1
fi
# A tool on edgetrace::reader parses no output's code: <regex> (std::regex's
# compiler is most of a sink's compile) stays inside the library.
"$CXX" "${flags[@]}" -I"$root/include" -H -fsyntax-only "${files[$reader_separate_case]}" 2>"$work/h_reader.txt" || true
echo "reader.hpp with EDGETRACE_SEPARATE_READER=1: header files opened: $(grep -cE '^\.+ ' "$work/h_reader.txt")"
if grep -qE '^\.+ /usr/include/c\+\+/[0-9]+/regex$' "$work/h_reader.txt"; then
  echo "compile_cost: FAILED: <regex> is reachable from reader.hpp with EDGETRACE_SEPARATE_READER=1"
  exit 1
fi
