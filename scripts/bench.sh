#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs attnscope-bench (core, tokenizers, safetensors, rendering and the GUI end to end:
# keystroke → repaint in the real MainWindow), the peak-RSS probes and the Python baseline in one
# go, then regenerates BENCHMARKS.md.
# Usage: scripts/bench.sh BUILD_DIR   (make bench does the build first)
# ATTNSCOPE_BENCH_THREADS (default 1) sets the LibTorch/PyTorch intra-op threads for both sides.
# ATTNSCOPE_BENCH_FILTER narrows attnscope-bench (a --benchmark_filter regex) and
# ATTNSCOPE_BENCH_PY_FILTER the Python side (a substring) for quick runs.
set -euo pipefail
build=${1:?usage: scripts/bench.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
threads=${ATTNSCOPE_BENCH_THREADS:-1}
bench="$build/bench/attnscope-bench"
out="$build/bench-results"
mkdir -p "$out"
# The render and GUI benchmarks draw real widgets; offscreen needs no display.
export QT_QPA_PLATFORM=offscreen
# One thread each side unless told: OpenMP with 2 threads on a busy 2-core machine is far slower
# than 1, and both sides must use the same count for the ratios to mean anything.
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads

{
  echo "{"
  echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%MZ)\","
  echo "  \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')\","
  echo "  \"cores\": $(grep -c ^processor /proc/cpuinfo),"
  echo "  \"isa\": \"$(grep -m1 -o -w -E 'avx512f' /proc/cpuinfo || grep -m1 -o -w avx2 /proc/cpuinfo || echo unknown)\","
  echo "  \"threads\": $threads,"
  echo "  \"load_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\","
  echo "  \"memory_gib\": $(awk '/MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo),"
  echo "  \"git\": \"$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)\""
  echo "}"
} > "$out/machine.json"

echo "== attnscope-bench ($threads thread(s)); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$bench" --threads="$threads" ${ATTNSCOPE_BENCH_FILTER:+--benchmark_filter="$ATTNSCOPE_BENCH_FILTER"} \
  --benchmark_out="$out/bench.json" --benchmark_out_format=json --benchmark_format=console

echo "== peak RSS, GPT-2 shapes at T=1024 (fresh processes)" >&2
for scores in 0 1; do
  /usr/bin/time -v "$bench" --threads="$threads" --peak-rss=1024,$scores \
    > "$out/rss_scores$scores.json" 2> "$out/rss_scores$scores.time"
done

echo "== Python baseline (/usr/bin/python3, $threads thread(s)); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
/usr/bin/python3 "$root/scripts/bench_python.py" --threads "$threads" --out "$out/python.json" \
  ${ATTNSCOPE_BENCH_PY_FILTER:+--filter "$ATTNSCOPE_BENCH_PY_FILTER"}

python3 - "$out/machine.json" <<PY
import json, sys
p = sys.argv[1]; m = json.load(open(p))
m["load_end"] = open("/proc/loadavg").read().split()[:3]
m["load_end"] = " ".join(m["load_end"])
json.dump(m, open(p, "w"), indent=1)
PY
python3 "$root/scripts/bench_report.py" "$out" > "$root/BENCHMARKS.md"
echo "== wrote $root/BENCHMARKS.md" >&2
