#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs attnscope-bench (core, tokenizers, safetensors, rendering and the GUI end to end:
# keystroke → repaint in the real MainWindow), the peak-RSS probes and the Python baseline in one
# go, then regenerates BENCHMARKS.md.
# Usage: scripts/bench.sh BUILD_DIR   (make bench does the build first)
# ATTNSCOPE_BENCH_THREADS (default 1) sets the LibTorch/PyTorch intra-op threads for both sides.
# ATTNSCOPE_BENCH_FILTER narrows attnscope-bench (a --benchmark_filter regex) and
# ATTNSCOPE_BENCH_PY_FILTER the Python side (a substring) or ATTNSCOPE_BENCH_PY_MATCH (a regex,
# e.g. 'BM_(Gemma2|Mixtral)Forward') for quick runs.
# The Hugging Face tokenizers oracle (scripts/bench_tokenizers.js) needs node and the `tokenizers`
# npm package: installed into BUILD_DIR/node when node and npm exist, or taken from
# ATTNSCOPE_BENCH_NODE_MODULES (a node_modules folder); without them its rows read "not run".
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

# Both sides on the same BLAS kernels: attnscope replaces an older set OpenBLAS picked for this
# CPU (runtime/blas_kernels.h), PyTorch in Python does not. Where the user named none, the
# Python side gets the set attnscope runs, through the variable OpenBLAS reads at load.
if [[ -z "${OPENBLAS_CORETYPE:-}" && -x "$build/app/cli/attnscope-cli" ]]; then
  chosen=$("$build/app/cli/attnscope-cli" --version | grep -o 'OpenBLAS [A-Za-z0-9_]* kernels' | cut -d' ' -f2 || true)
  if [[ -n "$chosen" ]]; then
    echo "== BLAS: attnscope runs OpenBLAS's $chosen kernels; the Python side is given the same" >&2
    export OPENBLAS_CORETYPE=$chosen
  fi
fi

echo "== attnscope-bench ($threads thread(s)); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$bench" --threads="$threads" ${ATTNSCOPE_BENCH_FILTER:+--benchmark_filter="$ATTNSCOPE_BENCH_FILTER"} \
  --benchmark_out="$out/bench.json" --benchmark_out_format=json --benchmark_format=console

# Scaling: the same GPT-2 T = 1000 forward with two threads (target ≥ 1.7× one thread's speed on
# an idle machine), three rounds of one then two threads (the report takes each count's median:
# one pair alone read 1.70× right after the main pass and 1.85× a minute later); the load average
# at the time goes into the JSON's context.
if (( $(grep -c ^processor /proc/cpuinfo) >= 2 )) && [[ -z "${ATTNSCOPE_BENCH_FILTER:-}" ||
                                                        BM_Gpt2Forward/T:1000 =~ $ATTNSCOPE_BENCH_FILTER ]]; then
  rm -f "$out"/bench_threads*.json
  for round in 1 2 3; do
    for n in 1 2; do
      echo "== GPT-2 T=1000 with $n thread(s), round $round of 3; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      OMP_NUM_THREADS=$n MKL_NUM_THREADS=$n "$bench" --threads=$n \
        --benchmark_filter='BM_Gpt2Forward/T:1000/scores:0' \
        --benchmark_out="$out/bench_threads${n}_round$round.json" \
        --benchmark_out_format=json --benchmark_format=console \
        --benchmark_context=load="$(cut -d' ' -f1-3 /proc/loadavg)"
    done
  done
fi

echo "== peak RSS, GPT-2 shapes at T=1024 (fresh processes)" >&2
for scores in 0 1; do
  /usr/bin/time -v "$bench" --threads="$threads" --peak-rss=1024,$scores \
    > "$out/rss_scores$scores.json" 2> "$out/rss_scores$scores.time"
done

echo "== peak RSS, SmolLM-135M shapes at T=1024 (fresh processes)" >&2
for scores in 0 1; do
  /usr/bin/time -v "$bench" --threads="$threads" --peak-rss=1024,$scores,smollm \
    > "$out/rss_smollm_scores$scores.json" 2> "$out/rss_smollm_scores$scores.time"
done

echo "== peak RSS, bert-base shapes at T=512 (fresh processes)" >&2
for scores in 0 1; do
  /usr/bin/time -v "$bench" --threads="$threads" --peak-rss=512,$scores,bert \
    > "$out/rss_bert_scores$scores.json" 2> "$out/rss_bert_scores$scores.time"
done

# An 8B model with the default settings (8 GiB limit, weights mapped, widened per use) on two
# threads: it must open and run. Its 15 GB fixture is written once; skipped on machines without
# the memory or the disk for it.
mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
free_kb=$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR == 2 {print $4}')
if [[ -n "${ATTNSCOPE_BENCH_FILTER:-}" ]]; then
  :
elif (( mem_kb < 20 * 1024 * 1024 )) ||
     { [[ ! -f "${TMPDIR:-/tmp}/attnscope-bench/llama-8b-bf16-random/model.safetensors.index.json" ]] &&
       (( free_kb < 20 * 1024 * 1024 )); }; then
  echo '{"error": "needs 20 GiB of memory and 20 GiB of free disk"}' > "$out/rss_llama8b.json"
else
  echo "== Llama-3.1-8B shapes (BF16) at T=256, default settings, 2 threads (fresh process); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  /usr/bin/time -v "$bench" --threads=2 --peak-rss=256,0,llama8b \
    > "$out/rss_llama8b.json" 2> "$out/rss_llama8b.time"
fi

# A Llama-3.2-1B-shaped model as a Q4_K_M GGUF (its matrices kept as the file's blocks) against the
# same weights' BF16 folder: open + one forward at T = 128 in fresh processes, peak RSS and wall.
# The GGUF is converted once from the BF16 fixture (scripts/gguf-from-folder.py, numpy). Alone:
# ATTNSCOPE_BENCH_FILTER=GgufLlama1B.
if [[ -z "${ATTNSCOPE_BENCH_FILTER:-}" || GgufLlama1B =~ $ATTNSCOPE_BENCH_FILTER ]]; then
  for m in llama1b llama1b-q4k; do
    echo "== $m at T=128 (fresh process): open + forward; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    /usr/bin/time -v "$bench" --threads="$threads" --peak-rss=128,0,$m \
      > "$out/rss_$m.json" 2> "$out/rss_$m.time" || echo '{"error": "failed"}' > "$out/rss_$m.json"
  done
fi

# Issue 33, long inputs with the attention on demand, fresh processes on 2 threads: a
# Llama-3.2-1B-shaped model at T = 8192 (forward, then every head's long-range profile and 64 x 64
# thumbnail; target peak RSS <= weights + 3 GB) and its width with 2 layers at T = 32768 (512 x 512
# tiles; target <= 1 s; the default memory limit). Alone:
# ATTNSCOPE_BENCH_FILTER=LongContext.
if [[ -z "${ATTNSCOPE_BENCH_FILTER:-}" || LongContext =~ $ATTNSCOPE_BENCH_FILTER ]]; then
  for row in 8192,llama1b 32768,llama2l; do
    name=long_${row%%,*}
    echo "== long context $row (fresh process, attention on demand); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    /usr/bin/time -v "$bench" --threads=2 --long-context=$row \
      > "$out/$name.json" 2> "$out/$name.time" || echo '{"error": "failed"}' > "$out/$name.json"
  done
fi

# Beside them, plain PyTorch materialising every head's attention (as output_attentions does) for
# the same 1B shapes, and the T at which it runs out of this machine's memory (several minutes).
# Alone: ATTNSCOPE_BENCH_FILTER=Materialised.
if [[ -z "${ATTNSCOPE_BENCH_FILTER:-}" || Materialised =~ $ATTNSCOPE_BENCH_FILTER ]]; then
  echo "== materialised attention, 1B shapes in PyTorch until out of memory; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  /usr/bin/python3 "$root/scripts/materialised_attention.py" --threads 2 --start 2048 \
    --out "$out/materialised.json" || echo '{"error": "failed"}' > "$out/materialised.json"
fi

# Gemma-2-2B shapes and the scaled-down Mixtral (the folders BM_Gemma2Forward and
# BM_MixtralForward run) at T = 512: open + one forward in fresh processes, for their peak RSS.
for row in gemma2:BM_Gemma2Forward/T:512/scores:0 mixtral:BM_MixtralForward/T:512/scores:0; do
  m=${row%%:*}
  if [[ -z "${ATTNSCOPE_BENCH_FILTER:-}" || ${row#*:} =~ $ATTNSCOPE_BENCH_FILTER ]]; then
    echo "== $m at T=512 (fresh process): open + forward; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    /usr/bin/time -v "$bench" --threads="$threads" --peak-rss=512,0,$m \
      > "$out/rss_$m.json" 2> "$out/rss_$m.time" || echo '{"error": "failed"}' > "$out/rss_$m.json"
  fi
done

echo "== Python baseline (/usr/bin/python3, $threads thread(s)); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
/usr/bin/python3 "$root/scripts/bench_python.py" --threads "$threads" --out "$out/python.json" \
  ${ATTNSCOPE_BENCH_PY_FILTER:+--filter "$ATTNSCOPE_BENCH_PY_FILTER"} \
  ${ATTNSCOPE_BENCH_PY_MATCH:+--match "$ATTNSCOPE_BENCH_PY_MATCH"}

# The toy layer's light rows (T ≤ 1024, a few ms each) again, ours and Python's in turn, three
# rounds: the runs above measure ours minutes before Python's, and this VM's speed drifts by
# ±15 % in that time, more than some rows' margin. The report takes each side's median of these.
toy_rounds='^BM_Toy(Fused|PerHead)/T:(16|128|512|1024)/|^BM_ToyTutorial'
rm -f "$out"/toy_round*.json
if [[ -z "${ATTNSCOPE_BENCH_FILTER:-}${ATTNSCOPE_BENCH_PY_FILTER:-}${ATTNSCOPE_BENCH_PY_MATCH:-}" ]]; then
  for round in 1 2 3; do
    echo "== toy rows, round $round of 3 (ours, then Python); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$bench" --threads="$threads" --benchmark_filter="$toy_rounds" \
      --benchmark_out="$out/toy_round${round}_ours.json" --benchmark_out_format=json \
      --benchmark_format=console > /dev/null
    /usr/bin/python3 "$root/scripts/bench_python.py" --threads "$threads" --match "$toy_rounds" \
      --out "$out/toy_round${round}_python.json" > /dev/null
  done
fi

# Whole processes, GPT-2 small shapes at T = 1000: `attnscope-cli run` against the Python script
# (bench_python.py --gpt2-process) on the same folder and text, five alternating pairs, each timed
# from exec to exit by /usr/bin/time (wall, user + system CPU, peak RSS).
cli="$build/app/cli/attnscope-cli"
gpt2_folder="${TMPDIR:-/tmp}/attnscope-bench/gpt2-random"
process_json="$out/process.jsonl"
: > "$process_json"
if [[ -x "$cli" && -f "$gpt2_folder/model.safetensors" ]]; then
  echo "== whole process, GPT-2 shapes at T=1000, 5 alternating runs; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  process_text="$out/process_text.txt"
  python3 -c "k = 'abcdfgijklmnopqrsuvwxyz'; print(''.join(k[i % len(k)] for i in range(1000)), end='')" \
    > "$process_text"
  for _ in 1 2 3 4 5; do
    /usr/bin/time -a -o "$process_json" -f '{"side": "ours", "wall": %e, "user": %U, "sys": %S, "rss_kb": %M}' \
      "$cli" run --model "$gpt2_folder" --text "$(cat "$process_text")" --threads "$threads" > /dev/null
    /usr/bin/time -a -o "$process_json" -f '{"side": "python", "wall": %e, "user": %U, "sys": %S, "rss_kb": %M}' \
      /usr/bin/python3 "$root/scripts/bench_python.py" --threads "$threads" \
      --gpt2-process "$gpt2_folder" "$process_text" > /dev/null
  done
  stat -c '{"side": "weights", "bytes": %s}' "$gpt2_folder/model.safetensors" >> "$process_json"
else
  echo "!! whole-process runs skipped: no $cli or no $gpt2_folder (BM_Gpt2Forward writes it)" >&2
fi

# Hugging Face tokenizers itself on the BM_TokenizeHf* files and text: one thread, same run.
hf_json="$out/tokenizers.json"
hf_skip() { printf '{"llama3": {"error": "%s"}, "wordpiece": {"error": "%s"}}\n' "$1" "$1" > "$hf_json"; }
hf_wanted=1
if [[ -n "${ATTNSCOPE_BENCH_FILTER:-}" ]] && ! [[ BM_TokenizeHfLlama3 =~ $ATTNSCOPE_BENCH_FILTER ||
                                                 BM_TokenizeHfWordPiece =~ $ATTNSCOPE_BENCH_FILTER ]]; then
  hf_wanted=0
fi
node_modules=${ATTNSCOPE_BENCH_NODE_MODULES:-$build/node/node_modules}
if [[ $hf_wanted == 0 ]]; then
  hf_skip "ATTNSCOPE_BENCH_FILTER leaves out BM_TokenizeHf*"
elif ! command -v node >/dev/null; then
  echo "!! node not found: the Hugging Face tokenizers rows are not run" >&2
  hf_skip "node is not installed"
else
  if [[ ! -f "$node_modules/tokenizers/package.json" && -z "${ATTNSCOPE_BENCH_NODE_MODULES:-}" ]]; then
    if command -v npm >/dev/null; then
      echo "== installing the tokenizers npm package into $build/node" >&2
      npm install --prefix "$build/node" --no-audit --no-fund --loglevel=error --fetch-retries=1 \
        --fetch-timeout=60000 tokenizers@0.23 >&2 ||
        echo "!! npm install tokenizers@0.23 failed" >&2
    else
      echo "!! npm not found: cannot install the tokenizers npm package" >&2
    fi
  fi
  if [[ -f "$node_modules/tokenizers/package.json" ]]; then
    echo "== Hugging Face tokenizers (node $(node --version), 1 thread); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    if ! RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \
        node "$root/scripts/bench_tokenizers.js" --modules "$node_modules" --out "$hf_json"; then
      echo "!! scripts/bench_tokenizers.js failed" >&2
      hf_skip "scripts/bench_tokenizers.js failed"
    fi
  else
    hf_skip "the tokenizers npm package is missing ($node_modules)"
  fi
fi

python3 - "$out/machine.json" <<PY
import json, sys
p = sys.argv[1]; m = json.load(open(p))
m["load_end"] = open("/proc/loadavg").read().split()[:3]
m["load_end"] = " ".join(m["load_end"])
json.dump(m, open(p, "w"), indent=1)
PY
python3 "$root/scripts/bench_report.py" "$out" > "$root/BENCHMARKS.md"
echo "== wrote $root/BENCHMARKS.md" >&2
