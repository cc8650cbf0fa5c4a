#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# attnscope-cli analyze: the JSON shape of every measure on the bundled tiny GPT (checked with
# Python's json module, not our writer), rollout rows summing to 1, the ablation's baseline being
# the run's own top prediction, and the exit codes of mistakes.
# Usage: analyze_test.sh CLI OUTDIR
set -u
cli=$1
out=$2
rm -rf "$out" && mkdir -p "$out"
failures=0
source "$(dirname "$0")/batch_client.sh"
batch_start "$cli"
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
model=(--model default --text "to be or not to be")

for measure in rollout induction value-norm ablation; do
  if ! acli analyze "${model[@]}" --measure "$measure" --json "$out/$measure.json" \
      >"$out/log.txt" 2>&1; then
    fail "$measure exited $?: $(cat "$out/log.txt")"
  fi
done
acli analyze "${model[@]}" --measure ablation --estimate --json "$out/estimate.json" \
  >"$out/log.txt" 2>&1 || fail "ablation --estimate exited $?: $(cat "$out/log.txt")"
acli run "${model[@]}" --json "$out/run.json" >"$out/log.txt" 2>&1 ||
  fail "run exited $?: $(cat "$out/log.txt")"
# The same text from a file (--text-file, for inputs too long for a command line).
printf '%s' "to be or not to be" >"$out/text.txt"
acli run --model default --text-file "$out/text.txt" --json "$out/run-file.json" \
  >"$out/log.txt" 2>&1 || fail "run --text-file exited $?: $(cat "$out/log.txt")"
# The same run with its attention recomputed on demand: the JSON without the weights.
acli run "${model[@]}" --on-demand --json "$out/run-on-demand.json" >"$out/log.txt" 2>&1 ||
  fail "run --on-demand exited $?: $(cat "$out/log.txt")"
acli analyze "${model[@]}" --measure rollout --layer 0 --json "$out/rollout0.json" \
  >"$out/log.txt" 2>&1 || fail "rollout --layer 0 exited $?: $(cat "$out/log.txt")"
acli analyze "${model[@]}" --measure long-range --sink-tokens 2 --thumbnail 4 \
  --json "$out/long-range.json" >"$out/log.txt" 2>&1 ||
  fail "long-range exited $?: $(cat "$out/log.txt")"
# The needle test: "xyz" half-way into the filler, a question after it; checked below against the
# stored attention of a plain run of the text it built.
acli analyze "${model[@]}" --measure retrieval --needle "xyz" --question "q?" \
  --json "$out/retrieval.json" >"$out/log.txt" 2>&1 ||
  fail "retrieval exited $?: $(cat "$out/log.txt")"
acli run --model default --text "to be or not xyz to be q?" --json "$out/run-needle.json" \
  >"$out/log.txt" 2>&1 || fail "run of the needle text exited $?: $(cat "$out/log.txt")"
acli analyze --model default --text "abcdefghijklmnopqrstuvwxyz" --measure induction --probe 12 \
  --probe-seed 3 --json "$out/probe.json" >"$out/log.txt" 2>&1 ||
  fail "induction --probe exited $?: $(cat "$out/log.txt")"

/usr/bin/python3 - "$out" <<'PY' || failures=$((failures + 1))
import json, sys
out = sys.argv[1]
def load(name):
    with open(f"{out}/{name}.json") as f:
        return json.load(f)
problems = []
def check(ok, what):
    if not ok:
        problems.append(what)
r = load("rollout")
T = len(r["tokens"])
check(T == 18, f"18 character tokens, got {T}")
check(len(r["rollout"]) == T and all(len(row) == T for row in r["rollout"]), "rollout is T x T")
check(all(abs(sum(row) - 1) < 1e-9 for row in r["rollout"]), "rollout rows sum to 1")
check(all(r["rollout"][q][k] == 0 for q in range(T) for k in range(q + 1, T)), "causal rollout")
check(r["layers"] == 4, "rollout composes the 4 layers")
r0 = load("rollout0")
check(r0["layers"] == 1 and r0["rollout"] != r["rollout"], "--layer 0 composes one layer")
i = load("induction")
for key in ("induction", "previous_token", "duplicate_token"):
    check(len(i[key]) == 4 and all(len(row) == 4 for row in i[key]), f"{key} is L x H (4 x 4)")
# "to be or not to be": the second "t","o"," ","b","e" repeat with gaps.
check(i["repeated_positions"] > 0, "repeats found")
v = load("value-norm")
vn = v["value_norm"]
check(len(vn) == 4 and all(len(l) == 4 for l in vn), "value_norm is L x H x ...")
check(all(len(h) == T and all(len(row) == T and min(row) >= 0 for row in h)
          for l in vn for h in l), "value_norm heads are T x T, non-negative")
check(any(x > 0 for l in vn for h in l for row in h for x in row), "value norms not all zero")
a, e = load("ablation")["ablation"], load("estimate")["ablation"]
check(len(load("ablation")["tokens"]) == T, "ablation: the tokens")
for key, x in (("ablation", a), ("estimate", e)):
    check(len(x["heads"]) == 4 and all(len(row) == 4 for row in x["heads"]), f"{key}: heads is L x H (4 x 4)")
    check(len(x["log_prob_change"]) == 4, f"{key}: log_prob_change is L x H")
    check(x["position"] == T - 1 and x["mask_fill"] is False, f"{key}: the next token after the last position")
check(a["estimate"] is False and e["estimate"] is True, "the estimate is labelled")
check(all(0 <= p <= 1 for row in a["heads"] for p in row), "ablation: probabilities")
check(any(abs(p - a["baseline"]) > 1e-4 for row in a["heads"] for p in row), "ablation: some head matters")
check(a["token"] == e["token"] and abs(a["baseline"] - e["baseline"]) < 1e-6, "estimate: same target and baseline")
run = load("run")
top = run["next_token"][0] if "next_token" in run else None
check(top is not None and top["id"] == a["token"] and abs(top["p"] - a["baseline"]) < 1e-6,
      f"ablation: the baseline is the run's top prediction ({top} vs {a['token']}, {a['baseline']})")
check(load("run-file")["tokens"] == run["tokens"], "run --text-file: the tokens of --text")
lazy = load("run-on-demand")
check(lazy.get("attention_on_demand") is True and "attention" not in lazy and
      "attention_on_demand" not in run and "attention" in run, "run --on-demand: no weights, said so")
check(lazy["shapes"] == run["shapes"] and lazy["tokens"] == run["tokens"],
      f"run --on-demand: shapes and tokens {lazy['shapes']} vs {run['shapes']}")
check([p["id"] for p in lazy["next_token"]] == [p["id"] for p in run["next_token"]] and
      max(abs(a["p"] - b["p"]) for a, b in zip(lazy["next_token"], run["next_token"])) < 1e-6,
      "run --on-demand: the same predictions")
# long-range computes its attention on demand (never stored): every number against the stored
# attention of `run`, recomputed here by its definition.
import math
lr, att = load("long-range"), run["attention"]
check(lr["sink_tokens"] == 2 and len(lr["sink"]) == 4 and len(lr["sink"][0]) == 4, "long-range: L x H")
worst = 0.0
for l in range(4):
    for h in range(4):
        A = att[l][0][h]
        n = len(A)
        sink = sum(A[q][0] + A[q][1] for q in range(n)) / n
        entropy = -sum(a * math.log(a) for row in A for a in row if a > 0) / n
        mass = [0.0] * (int(math.log2(n)) + 1)
        for q in range(n):
            for k in range(n):
                mass[int(math.floor(math.log2(abs(q - k) + 1)))] += A[q][k] / n
        worst = max(worst, abs(lr["sink"][l][h] - sink), abs(lr["entropy"][l][h] - entropy),
                    max(abs(x - y) for x, y in zip(lr["distance_mass"][l][h], mass)))
        check(len(lr["distance_mass"][l][h]) == len(mass), "long-range: distance buckets")
        thumb = lr["thumbnails"][l][h]
        want = [[max(A[q][k] for q in range(r * n // 4, (r + 1) * n // 4)
                     for k in range(c * n // 4, (c + 1) * n // 4)) for c in range(4)] for r in range(4)]
        worst = max(worst, max(abs(x - y) for tr, wr in zip(thumb, want) for x, y in zip(tr, wr)))
check(worst < 1e-5, f"long-range equals the stored attention's numbers (worst {worst})")
# retrieval: the text it built, the needle's and the question's tokens, and each head's weight
# from the question onto the needle against the plain run's attention, by definition.
nr, na = load("retrieval"), load("run-needle")["attention"]
check(nr["text"] == "to be or not xyz to be q?", f"retrieval text: {nr['text']!r}")
check(nr["needle_tokens"] == [13, 14, 15] and nr["question_tokens"] == [23, 24],
      f"retrieval tokens: {nr['needle_tokens']} {nr['question_tokens']}")
worst = 0.0
for l in range(4):
    for h in range(4):
        A = na[l][0][h]
        mass = sum(sum(A[q][k] for k in (13, 14, 15)) for q in (23, 24)) / 2
        top = sum(max(range(len(A[q])), key=lambda k: A[q][k]) in (13, 14, 15) for q in (23, 24)) / 2
        worst = max(worst, abs(nr["needle_mass"][l][h] - mass))
        check(nr["needle_top"][l][h] == top, f"retrieval: L{l} H{h} top {nr['needle_top'][l][h]} != {top}")
check(worst < 1e-5, f"retrieval equals the stored attention's sums (worst {worst})")
p = load("probe")
ids = [t["id"] for t in p["tokens"]]
check(len(ids) == 24 and ids[:12] == ids[12:] and len(set(ids)) == 12,
      f"the probe is 12 distinct tokens twice, got {ids}")
check(p["repeated_positions"] == 12, "probe: every token of the second copy repeats with a gap")
for what in problems:
    print("FAIL:", what)
sys.exit(1 if problems else 0)
PY

expect() {  # code substring args...
  local code=$1 want=$2
  shift 2
  local text rc
  text=$(acli "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]]; then
    fail "attnscope-cli $* -> exit $rc, wanted $code: $text"
  elif [[ $text != *"$want"* ]]; then
    fail "attnscope-cli $* -> output lacks '$want': $text"
  fi
}
expect 2 "--measure is required" analyze "${model[@]}"
expect 2 "unknown --measure 'bogus'" analyze "${model[@]}" --measure bogus
expect 2 "--estimate belongs to the ablation measure" analyze "${model[@]}" --measure rollout --estimate
expect 2 "--thumbnail belongs to the long-range measure" analyze "${model[@]}" --measure rollout --thumbnail 4
expect 2 "fills no masks" analyze "${model[@]}" --measure ablation --position 1
expect 2 "head ablation reads a prediction" analyze --batch 1 --seq-len 4 --measure ablation
expect 2 "predicts no token" analyze --text "hi there" --measure ablation
expect 2 "--layer limits rollout only" analyze "${model[@]}" --measure induction --layer 1
expect 2 "layer 9 is out of range" analyze "${model[@]}" --measure rollout --layer 9
expect 2 "--item 3 is out of range" analyze "${model[@]}" --measure rollout --item 3
expect 2 "--probe feeds the induction measure" analyze "${model[@]}" --measure rollout --probe 4
expect 2 "has only" analyze --model default --text "abab" --measure induction --probe 5
expect 2 "value-weighted norms are implemented for the decoders" \
  analyze --text "hi there" --measure value-norm
expect 2 "induction scores need token ids" analyze --batch 1 --seq-len 4 --measure induction
expect 2 "--needle belongs to the retrieval measure" analyze "${model[@]}" --measure rollout --needle x
expect 2 "needs --needle TEXT" analyze "${model[@]}" --measure retrieval
expect 2 "--depth must be between" analyze "${model[@]}" --measure retrieval --needle x --depth 2
expect 2 "the needle test reads text" analyze --batch 1 --seq-len 4 --measure retrieval --needle x
# The bundled model sees 128 characters: a needle in the first tenth of 300 is cut off.
expect 2 "the needle is cut off" analyze --model default --text "$(printf 'to be or not %.0s' {1..23})" \
  --measure retrieval --needle "xyz" --depth 0.1
expect 2 "does not go with --measure retrieval" analyze "${model[@]}" --measure retrieval --needle x \
  --context "abc"
expect 2 "unknown flag --bogus" analyze "${model[@]}" --measure rollout --bogus
touch "$out/file"
expect 2 "cannot write" analyze "${model[@]}" --measure rollout --json "$out/file/x.json"
exit $((failures > 0))
