#!/usr/bin/env bash
# Every documented CLI error path: exit code 2 and one line naming the bad flag or value.
set -u
cli=$1
source "$(dirname "$0")/batch_client.sh"
batch_start "$cli"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect CODE SUBSTRING -- ARGS...
expect() {
  local code=$1 want=$2
  shift 3
  local out rc
  out=$(acli "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL: attnscope-cli $* -> exit $rc, wanted $code; output: $out"
    failures=$((failures + 1))
  elif [[ $out != *"$want"* ]]; then
    echo "FAIL: attnscope-cli $* -> output lacks '$want': $out"
    failures=$((failures + 1))
  fi
}

expect 2 "heads (3) must divide d_model (64)" -- run --text hi --heads 3
expect 2 "--d-model must be between 1 and" -- run --text hi --d-model 0
expect 2 "--heads must be between 1 and" -- run --text hi --heads -4
expect 2 "--heads expects a whole number, got 'four'" -- run --text hi --heads four
expect 2 "--seed expects a whole number, got '1.5'" -- run --text hi --seed 1.5
expect 2 "unknown flag --bogus" -- run --text hi --bogus 1
expect 2 "the text is empty" -- run --text ""
expect 2 "invalid UTF-8 at byte 2 of the text" -- run --text $'ab\xff'
expect 2 "has 50 tokens, more than the limit of 10" -- run --text "$(printf 'x%.0s' {1..50})" --max-tokens 10
expect 2 "--on-demand keeps no attention for --dump to write" -- run --text hi --on-demand --dump "$tmp/od"
expect 2 "--text-file: cannot read $tmp/missing.txt" -- run --text-file "$tmp/missing.txt"
expect 2 "--text-file: cannot read $tmp: Is a directory" -- run --text-file "$tmp"
expect 2 "needs about" -- run --batch 64 --seq-len 4096 --memory-limit 100
expect 2 "unknown device 'tpu'" -- run --text hi --device tpu
expect 2 "unknown variant 'split'" -- run --text hi --variant split
expect 2 "unknown mask 'future'" -- run --text hi --mask future
expect 2 "--heads needs a value" -- run --text hi --heads
expect 2 "--batch needs --seq-len" -- run --batch 3
expect 2 "give --text TEXT" -- run
expect 2 "is not an encoder-decoder" -- run --text hi --target bonjour
expect 2 "unknown command 'fly'" -- fly
expect 2 "cannot create --dump folder" -- run --text hi --dump /proc/attnscope-no/such
expect 2 "--text is required" -- tokenize
expect 2 "invalid UTF-8" -- tokenize --text $'\xc3('
expect 2 "model 'nonesuch' not found" -- run --text hi --model nonesuch
if ! acli run --text hi --device auto 2>/dev/null | grep -q "on cuda"; then
  expect 2 "device 'cuda' is not available" -- run --text hi --device cuda
fi
touch "$tmp/file"
expect 2 "cannot write $tmp/file/x.json" -- run --text hi --json "$tmp/file/x.json"

# generate: refusals before any work, and the bundled tiny GPT writing (greedy, then seeded).
expect 2 "give --model M" -- generate --text hi
expect 2 "give --text TEXT" -- generate --model default
expect 2 "cannot generate step by step: it is not a causal language model" -- generate --model toy --text hi
expect 2 "--temperature must be between" -- generate --model default --text hi --temperature -1
expect 2 "--top-p must be between" -- generate --model default --text hi --top-p 0
expect 2 "--temperature 0 is greedy" -- generate --model default --text hi --temperature 0 --seed 1
expect 2 "--max-new-tokens must be between" -- generate --model default --text hi --max-new-tokens 0
expect 2 "the prompt has no tokens" -- generate --model default --text ""
expect 2 "more than the memory limit" -- generate --model default --text hi --max-new-tokens 100 --memory-limit 1
expect 0 "generated 3 token(s) after 2" -- generate --model default --text hi --max-new-tokens 3 --json "$tmp/gen.json"
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["ids"]) == 5 and len(j["steps"]) == 3, j["ids"]
s = j["steps"][2]
assert set(s) == {"id", "token", "candidates", "attention"} and len(s["attention"][0][0]) == 4, s.keys()
assert set(j["steps"][0]["candidates"][0]) == {"id", "token", "p"}
' "$tmp/gen.json" || { echo "FAIL: generate --json lacks the issue's fields"; failures=$((failures + 1)); }
a=$(acli generate --model default --text hi --max-new-tokens 12 --seed 4 --threads 1 2>/dev/null)
b=$(acli generate --model default --text hi --max-new-tokens 12 --seed 4 --threads 2 2>/dev/null)
[[ $a == "$b" ]] || { echo "FAIL: generate --seed 4 wrote '$a' on one thread, '$b' on two"; failures=$((failures + 1)); }

# --layers keeps some layers' attention: a list of numbers and ranges, within the model's layers.
expect 2 "--layers: 'x' is not a layer number" -- run --text hi --layers 0,x
expect 2 "--layers: the range '3-1' runs backwards" -- run --text hi --layers 3-1
expect 2 "layer 2 to keep is out of range" -- run --text hi --layers 0,2
expect 0 "attention [1, 1, 4, 2, 2]" -- run --text hi --layers 0 --json "$tmp/kept.json"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["kept_layers"]==[0], j.get("kept_layers")' "$tmp/kept.json" \
  || { echo "FAIL: --layers 0 --json has no kept_layers [0]"; failures=$((failures + 1)); }

# A folder of an architecture no family opens is refused by name, with the list of those that open.
mkdir -p "$tmp/xlnet" "$tmp/hub/models--org--xlnet-base/snapshots/1" "$tmp/hub/models--gpt2/snapshots/2"
echo '{"model_type": "xlnet"}' > "$tmp/xlnet/config.json"
cp "$tmp/xlnet/config.json" "$tmp/hub/models--org--xlnet-base/snapshots/1/"
echo '{"model_type": "gpt2"}' > "$tmp/hub/models--gpt2/snapshots/2/config.json"
expect 2 "model_type 'xlnet' is not supported; supported: gpt2" -- run --text hi --model "$tmp/xlnet"
HF_HUB_CACHE="$tmp/hub" expect 0 "org/xlnet-base" -- models
out=$(HF_HUB_CACHE="$tmp/hub" "$cli" models 2>&1)
grep -q "xlnet-base.*not supported" <<<"$out" || { echo "FAIL: models does not mark xlnet unsupported: $out"; failures=$((failures + 1)); }
grep -qE "^  gpt2 +gpt2 +opens" <<<"$out" || { echo "FAIL: models does not mark the cached gpt2 as opening: $out"; failures=$((failures + 1)); }
HF_HUB_CACHE="$tmp/hub" "$cli" models --json > "$tmp/models.json"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert [a["model_type"] for a in j["architectures"]][0]=="gpt2" and "bert" in [a["model_type"] for a in j["architectures"]]; assert {m["name"]: m["supported"] for m in j["cached"]}=={"gpt2": True, "org/xlnet-base": False}' "$tmp/models.json" \
  || { echo "FAIL: models --json"; failures=$((failures + 1)); }

# Hugging Face tokenizer.json: pairs through the post-processor's template, clear errors.
data="$(dirname "$0")/../data/tokenizers"
expect 0 $'3\t[SEP]' -- tokenize --model "$data/wordpiece.json" --text "The cat" --pair "a dog" --json "$tmp/pair.json"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["tokens"][0]=="[CLS]" and j["type_ids"][-1]==1 and j["tokens"].count("[SEP]")==2, j' "$tmp/pair.json" \
  || { echo "FAIL: tokenize --pair json"; failures=$((failures + 1)); }
echo '{"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}, "pre_tokenizer": {"type": "Foo"}}' > "$tmp/bad-tokenizer.json"
expect 2 'pre_tokenizer: type "Foo" is not supported' -- tokenize --model "$tmp/bad-tokenizer.json" --text hi
expect 2 "--pair needs a model folder or tokenizer.json" -- tokenize --text hi --pair there

for sub in run tokenize train eval sample models; do
  expect 0 "usage: attnscope-cli $sub" -- "$sub" --help
done
expect 0 "commands:" -- --help

# Success paths.
expect 0 "[30, 5, 1536]" -- run --variant fused --input-dim 1024 --d-model 512 --heads 8 --batch 30 --seq-len 5 --trace
expect 0 "attention [1, 2, 4, 11, 11]" -- run --text "hello world" --text "hi" --variant per-head --mask causal
expect 0 $'104\th' -- tokenize --text "hé🙂" --json "$tmp/tok.json"
grep -q '"ids"' "$tmp/tok.json" || { echo "FAIL: tokenize --json wrote no ids"; failures=$((failures + 1)); }
expect 0 "model toy" -- run --text "dump me" --context "a context" --dump "$tmp/dump"
for f in input.npy context.npy weights.safetensors attention.npy output.npy trace.json tokens.json; do
  [[ -s $tmp/dump/$f ]] || { echo "FAIL: --dump did not write $f"; failures=$((failures + 1)); }
done

# batch: one process, one JSON answer a line, in order; a bad line is answered and the batch goes
# on; one command's --threads does not carry over; commands do not read the batch's own lines.
printf '%s\n' '["tokenize", "--text", "hi"]' '# a comment' '' 'not json' '["batch"]' \
  '["run", "--text", "hi", "--threads", "1"]' '["--version"]' '["run", "--heads", "x", "--text", "a"]' >"$tmp/batch.jsonl"
"$cli" batch "$tmp/batch.jsonl" >"$tmp/batch.out" 2>"$tmp/batch.err"
rc=$?
"$cli" --version >"$tmp/version.out"
/usr/bin/python3 - "$tmp/batch.out" "$rc" "$tmp/version.out" <<'PY' || { echo "FAIL: batch answers: $(cat "$tmp/batch.out" "$tmp/batch.err")"; failures=$((failures + 1)); }
import json, sys
answers = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert [a["line"] for a in answers] == [1, 4, 5, 6, 7, 8], [a["line"] for a in answers]
rc = {a["line"]: a["rc"] for a in answers}
assert rc == {1: 0, 4: 2, 5: 2, 6: 0, 7: 0, 8: 2}, rc
by = {a["line"]: a for a in answers}
assert by[1]["stdout"] == "104\th\n105\ti\n" and by[1]["stderr"] == "", by[1]
assert "line 4: not JSON" in by[4]["stderr"] and "cannot run another batch" in by[5]["stderr"]
assert "--heads expects a whole number, got 'x'" in by[8]["stderr"], by[8]
# --version after `run --threads 1`: the thread count of a fresh process
assert by[7]["stdout"] == open(sys.argv[3], encoding="utf-8").read(), by[7]["stdout"]
assert int(sys.argv[2]) == 2, sys.argv[2]  # the first failing command's code
PY
# (Processes of their own: a batch refuses to run a batch.)
"$cli" batch --help | grep -q "one line of JSON on standard output" ||
  { echo "FAIL: batch --help"; failures=$((failures + 1)); }
out=$("$cli" batch "$tmp/none.jsonl" 2>&1)
[[ $? -eq 2 && $out == *"cannot read $tmp/none.jsonl"* ]] ||
  { echo "FAIL: batch of a missing file: $out"; failures=$((failures + 1)); }
out=$("$cli" batch --fast 2>&1)
[[ $? -eq 2 && $out == *"unknown flag --fast"* ]] || { echo "FAIL: batch --fast: $out"; failures=$((failures + 1)); }
out=$(printf '["run", "--text", "hi"]\n["tokenize", "--text", "ok"]\n' | "$cli" batch)
[[ $(grep -c '"rc":0' <<<"$out") -eq 2 ]] || { echo "FAIL: batch on standard input: $out"; failures=$((failures + 1)); }

# Output that cannot be written (a full disk) is an error, not a silent success: the CLI flushes
# before it ends the process without the libraries' destructors.
if [[ -w /dev/full ]]; then
  out=$("$cli" run --text hi 2>&1 >/dev/full)
  rc=$?
  if [[ $rc -ne 1 || $out != *"writing the output"* ]]; then
    echo "FAIL: run > /dev/full -> exit $rc, wanted 1 and 'writing the output'; output: $out"
    failures=$((failures + 1))
  fi
fi

if [[ $failures -ne 0 ]]; then
  echo "$failures CLI check(s) failed"
  exit 1
fi
echo "all CLI error and success paths behave"
