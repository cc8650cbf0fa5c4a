#!/usr/bin/env bash
# GGUF files through --model (issue 29): opened by their magic bytes whatever they are called,
# with the tokenizer inside them; the same attention as the Hugging Face folder they were written
# from; vocabulary-only files tokenize; what cannot be opened is refused in one line, exit 2.
# Fixtures: tests/reference/gguf_reference.py. One part per ctest entry (each under 3 s):
#   gguf_test.sh CLI SCRIPT open|tokenize|refuse
set -u
cli=$1
script=$2
part=$3
python=/usr/bin/python3
if ! "$python" -c 'import numpy' 2>/dev/null; then
  echo "skipped: $python has no numpy"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
source "$(dirname "$0")/batch_client.sh"
batch_start "$cli"
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

case $part in
open)
  # A one-layer Llama folder (F32 weights, a byte-level BPE tokenizer.json) and its GGUF, saved
  # as an Ollama blob is: no extension. Same floats, so the same attention and tokens.
  "$python" "$script" tiny_llama "$tmp/hf" || exit 1
  "$python" "$script" llama "$tmp/hf" "$tmp" F32 || exit 1
  mv "$tmp/llama_F32.gguf" "$tmp/sha256-5f2c"
  text="the quick brown fox jumps over the lazy dog"
  acli run --model "$tmp/hf" --text "$text" --json "$tmp/folder.json" >"$tmp/folder.out" 2>&1 \
    || fail "run on the folder: $(cat "$tmp/folder.out")"
  acli run --model "$tmp/sha256-5f2c" --text "$text" --json "$tmp/gguf.json" >"$tmp/gguf.out" 2>&1 \
    || fail "run on the blob: $(cat "$tmp/gguf.out")"
  grep -q "^file: GGUF F32-like: 12 F32 tensors, 0.3 MB; float32$" "$tmp/gguf.out" \
    || fail "the blob: no file line: $(cat "$tmp/gguf.out")"
  "$python" - "$tmp/folder.json" "$tmp/gguf.json" <<'PY' || fail "the blob's attention differs from the folder's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["tokens"] == b["tokens"], (a["tokens"], b["tokens"])
assert len(a["tokens"]) < 20, a["tokens"]  # merged: fewer tokens than bytes
def flat(x):
    return [v for y in x for v in flat(y)] if isinstance(x, list) else [x]
fa, fb = flat(a["attention"]), flat(b["attention"])
assert len(fa) == len(fb) and len(fa) > 100, (len(fa), len(fb))
worst = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(fa, fb))
assert worst <= 1e-4, worst
PY
  # Quantization, compared (issue 29): every head's distance from the folder's run of the same
  # text, 0 for the F32 file, small but not 0 for Q8_0; the compare view with B from the file.
  "$python" "$script" llama "$tmp/hf" "$tmp" Q8_0 || exit 1
  acli analyze --measure model-distance --model "$tmp/hf" --model-b "$tmp/sha256-5f2c" \
    --text "$text" --json "$tmp/same.json" >"$tmp/same.out" 2>&1 || fail "model-distance F32: $(cat "$tmp/same.out")"
  acli analyze --measure model-distance --model "$tmp/hf" --model-b "$tmp/llama_Q8_0.gguf" \
    --text "$text" --json "$tmp/q8.json" >"$tmp/q8.out" 2>&1 || fail "model-distance Q8_0: $(cat "$tmp/q8.out")"
  grep -q "^most changed heads:  L0 H" "$tmp/q8.out" || fail "model-distance printed: $(cat "$tmp/q8.out")"
  "$python" - "$tmp/same.json" "$tmp/q8.json" <<'PY' || fail "model-distance values"
import json, sys
same, q8 = (json.load(open(p))["distance"] for p in sys.argv[1:])
assert len(same) == 1 and len(same[0]) == 4, same
assert max(same[0]) <= 1e-6, same
assert all(1e-5 < d < 0.1 for d in q8[0]), q8
PY
  acli export --view compare --model "$tmp/hf" --model-b "$tmp/llama_Q8_0.gguf" --text "$text" \
    --out "$tmp/compare.svg" >"$tmp/cmp.out" 2>&1 || fail "export --model-b: $(cat "$tmp/cmp.out")"
  grep -q "every head: mean" "$tmp/compare.svg" || fail "the compare export has no per-head table"
  out=$(acli analyze --measure model-distance --model "$tmp/hf" --model-b default --text "$text" 2>&1)
  [[ $? -eq 2 && $out == *"cannot be compared"* ]] || fail "other shapes not refused: $out"
  ;;
tokenize)
  # A vocabulary-only GGUF gives the ids of the tokenizer.json it was written from.
  mkdir "$tmp/hf"
  "$python" "$script" bpe_tokenizer "$tmp/hf" || exit 1
  "$python" "$script" vocab "$tmp/hf" "$tmp/vocab.gguf" || exit 1
  t="the quick brown fox<|endoftext|> jumps, naïve café 12345"
  acli tokenize --model "$tmp/vocab.gguf" --text "$t" >"$tmp/v.out" 2>&1 \
    || fail "tokenize --model vocab.gguf: $(cat "$tmp/v.out")"
  acli tokenize --model "$tmp/hf/tokenizer.json" --text "$t" >"$tmp/j.out" 2>&1 \
    || fail "tokenize --model tokenizer.json: $(cat "$tmp/j.out")"
  cmp -s "$tmp/v.out" "$tmp/j.out" || fail "tokenize: vocab.gguf $(tr '\n' ' ' <"$tmp/v.out")" \
    "but tokenizer.json $(tr '\n' ' ' <"$tmp/j.out")"
  grep -q "<|endoftext|>" "$tmp/v.out" || fail "no special token: $(cat "$tmp/v.out")"
  [[ $(wc -l <"$tmp/v.out") -ge 10 ]] || fail "tokenize printed too few tokens: $(cat "$tmp/v.out")"
  ;;
refuse)
  # refused WANT ARGS...: exit 2, one line, naming the problem.
  refused() {
    local want=$1 out rc
    shift
    out=$(acli "$@" 2>&1)
    rc=$?
    [[ $rc -eq 2 ]] || fail "attnscope-cli $* -> exit $rc, wanted 2: $out"
    [[ $(printf '%s\n' "$out" | wc -l) -eq 1 ]] || fail "attnscope-cli $* printed more than one line: $out"
    [[ $out == *"$want"* ]] || fail "attnscope-cli $* lacks '$want': $out"
  }
  "$python" "$script" unmappable "$tmp" || exit 1
  refused "arch.gguf: architecture 'falcon' is not supported yet; supported: llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gpt2, gptneox, bloom, bert" \
    run --model "$tmp/arch.gguf" --text hi
  head -c 300 "$tmp/arch.gguf" >"$tmp/truncated.gguf"
  refused "truncated.gguf" run --model "$tmp/truncated.gguf" --text hi
  # models lists what GGUF files it opens.
  acli models >"$tmp/models.out" 2>&1 || fail "models: $(cat "$tmp/models.out")"
  grep -q "gguf .*llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gpt2, gptneox, bloom, bert.*Q4_K" "$tmp/models.out" \
    || fail "models lists no gguf line: $(cat "$tmp/models.out")"
  ;;
*)
  echo "unknown part $part"
  exit 1
  ;;
esac

[[ $failures -eq 0 ]] || exit 1
echo "gguf cli $part: all passed"
