#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# attnscope-cli export: every view in every format with the toy model, and the exit codes of
# mistakes. Runs without QT_QPA_PLATFORM, as on a headless server. Usage: export_test.sh CLI OUTDIR
set -u
cli=$1
out=$2
rm -rf "$out" && mkdir -p "$out"
unset QT_QPA_PLATFORM DISPLAY WAYLAND_DISPLAY
source "$(dirname "$0")/batch_client.sh"
batch_start "$cli"
toy=(--text "the cat sat on the mat" --variant per-head --mask causal)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

expect_magic() {  # file, format
  case $2 in
    png) [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ;;
    svg) grep -q "<svg" "$1" ;;
    pdf) [ "$(head -c 4 "$1")" = "%PDF" ] ;;
  esac
}

for view in heatmap grid compare stats pipeline lines text qk; do
  for format in png svg pdf; do
    file="$out/$view.$format"
    if ! acli export "${toy[@]}" --view "$view" --format "$format" --out "$file" --width 800 --height 600 \
        --dpi 96 >"$out/log.txt" 2>&1; then
      fail "$view $format exited $?: $(cat "$out/log.txt")"
      continue
    fi
    [ -s "$file" ] || { fail "$view $format wrote nothing"; continue; }
    expect_magic "$file" "$format" || fail "$view $format is not a $format file"
  done
done

# --attention picks a group by name (the toy layer with a context computes "cross" only).
acli export --text "le chat" --context "the cat sat" --attention cross --out "$out/cross.png" \
  >/dev/null 2>&1 || fail "--attention cross"
msg=$(acli export "${toy[@]}" --attention decoder_self --out "$out/none.png" 2>&1)
[ $? -eq 2 ] && [[ $msg == *"computes self"* ]] || fail "--attention decoder_self on the toy layer: $msg"

# Options reach the views: palette, scores, compare heads, title.
acli export "${toy[@]}" --view heatmap --scores --palette magma --title "scores" --out "$out/scores.png" \
  >/dev/null 2>&1 || fail "--scores --palette magma"
acli export "${toy[@]}" --view compare --head 1 --vs-head 3 --out "$out/cmp.svg" >/dev/null 2>&1 ||
  fail "compare --head 1 --vs-head 3"

# The views of issue 14 and their options; the SVGs say what they show as text.
acli export "${toy[@]}" --view lines --line-heads all --threshold 0.05 --query 2 --out "$out/lines.svg" \
  >/dev/null 2>&1 || fail "lines --line-heads all --threshold 0.05 --query 2"
grep -q "lines below 0.05 not drawn" "$out/lines.svg" || fail "lines.svg must state its threshold"
grep -q "only from query" "$out/lines.svg" || fail "lines.svg must say it isolates --query"
acli export "${toy[@]}" --view text --source rollout --query 3 --out "$out/text.svg" >/dev/null 2>&1 ||
  fail "text --source rollout --query 3"
grep -q "rollout of layer 0" "$out/text.svg" || fail "text.svg must name its source"
grep -q ">m<" "$out/text.svg" || fail "text.svg must hold the tokens as text"
# Several queries combined, and words merged (the toy's words are its tokens: nothing merges).
acli export "${toy[@]}" --query 1,3-4 --aggregate sum --merge-words --out "$out/combined.svg" \
  >/dev/null 2>&1 || fail "heatmap --query 1,3-4 --aggregate sum --merge-words"
grep -q "sum of 3 queries" "$out/combined.svg" || fail "combined.svg must show the sum of the 3 queries"
acli export "${toy[@]}" --view text --query 0,2 --out "$out/text-combined.svg" >/dev/null 2>&1 ||
  fail "text --query 0,2"
grep -q "mean of the attention from 2 selected tokens" "$out/text-combined.svg" ||
  fail "text-combined.svg must say it shows the mean of 2 tokens"
acli export "${toy[@]}" --view qk --query 4 --key 1 --out "$out/qk.svg" >/dev/null 2>&1 ||
  fail "qk --query 4 --key 1"
grep -q "score before softmax" "$out/qk.svg" || fail "qk.svg must print the score"
grep -q "(#4)" "$out/qk.svg" || fail "qk.svg must name query #4"
# Head ablation runs on the bundled tiny GPT, exact or estimated, and says which.
tiny=(--model default --text "to be or not to be")
acli export "${tiny[@]}" --view ablation --out "$out/ablation.svg" >/dev/null 2>&1 || fail "ablation"
grep -q "when each head" "$out/ablation.svg" || fail "ablation.svg must caption its map"
grep -q "exact: each head zeroed" "$out/ablation.svg" || fail "ablation.svg must say it is exact"
acli export "${tiny[@]}" --view ablation --estimate --out "$out/ablation-estimate.png" >/dev/null 2>&1 ||
  fail "ablation --estimate"
acli export "${tiny[@]}" --view ablation --estimate --out "$out/ablation-estimate.svg" >/dev/null 2>&1
grep -q "attribution patching, first order" "$out/ablation-estimate.svg" ||
  fail "ablation-estimate.svg must say it is an estimate"
# The logit lens of the tiny GPT: its grid of top tokens, captioned (one run, top 10 per cell).
acli export "${tiny[@]}" --view logit-lens --format svg --out "$out/lens.svg" >/dev/null 2>&1 ||
  fail "logit-lens"
grep -q "probability of each layer's top token" "$out/lens.svg" || fail "lens.svg must caption its grid"
grep -q ">out 3<" "$out/lens.svg" || fail "lens.svg must number its layers, the last as out"

# The Step view of a generation (issue 30): the bundled model writes 3 tokens greedily after the
# prompt and step 2 is drawn; its caption names the token generate --json wrote at step 2.
acli export "${tiny[@]}" --view step --step 2 --out "$out/step.svg" >/dev/null 2>&1 || fail "step --step 2"
acli generate "${tiny[@]}" --max-new-tokens 3 --json "$out/gen.json" >/dev/null 2>&1 || fail "generate for step"
want=$(/usr/bin/python3 -c 'import json,sys,html; j=json.load(open(sys.argv[1])); print(html.escape(repr(j["steps"][2]["token"])[1:-1], quote=False))' "$out/gen.json")
grep -q "Step 3 of 3" "$out/step.svg" || fail "step.svg must say which step it shows"
grep -q "the model wrote '$want'" "$out/step.svg" || fail "step.svg must name generate's token at step 2 ('$want')"
acli export "${tiny[@]}" --view step --seed 5 --top-k 3 --out "$out/step-sampled.png" >/dev/null 2>&1 ||
  fail "step with sampling flags"

expect_exit() {  # code, description, args...
  local want=$1 what=$2
  shift 2
  acli "$@" >"$out/log.txt" 2>&1
  local got=$?
  [ "$got" = "$want" ] || fail "$what: exit $got, want $want ($(cat "$out/log.txt"))"
}
expect_exit 2 "bad --view" export "${toy[@]}" --view pie --out "$out/x.png"
expect_exit 2 "--statistic outside stats" export "${toy[@]}" --statistic sink --out "$out/x.png"
expect_exit 2 "bad --statistic" export "${toy[@]}" --view stats --statistic median --out "$out/x.png"
grep -q "must be one of entropy, distance, max, prev, diag, first, sink, distance-profile" \
  "$out/log.txt" || fail "bad --statistic names the choices: $(cat "$out/log.txt")"
# The distance profile draws the selected layer's heads as named lines (H0..H3), the sink share
# draws its name on the axis.
acli export "${tiny[@]}" --view stats --statistic distance-profile --layer 3 --out "$out/dist.svg" \
  >"$out/log.txt" 2>&1 || fail "stats --statistic distance-profile: $(cat "$out/log.txt")"
grep -q "tokens back (or ahead) from the query" "$out/dist.svg" && grep -q ">H3<" "$out/dist.svg" ||
  fail "dist.svg lacks the distance axis or the heads' legend"
acli export "${tiny[@]}" --view stats --statistic sink --out "$out/sink.svg" >"$out/log.txt" 2>&1 ||
  fail "stats --statistic sink: $(cat "$out/log.txt")"
grep -q "sink share (first 4 tokens)" "$out/sink.svg" || fail "sink.svg lacks the sink axis"
expect_exit 2 "--layer out of range" export "${toy[@]}" --layer 5 --out "$out/x.png"
grep -q -- "--layer" "$out/log.txt" && grep -q "0..0" "$out/log.txt" || fail "--layer message must name the flag and range"
expect_exit 2 "--head out of range" export "${toy[@]}" --head 4 --out "$out/x.png"
expect_exit 2 "--batch-item out of range" export "${toy[@]}" --batch-item 1 --out "$out/x.png"
expect_exit 2 "bad --line-heads" export "${toy[@]}" --view lines --line-heads 0,9 --out "$out/x.png"
expect_exit 2 "bad --source" export "${toy[@]}" --view text --source tea --out "$out/x.png"
expect_exit 2 "--query out of range" export "${toy[@]}" --view qk --query 22 --out "$out/x.png"
expect_exit 2 "--query list out of range" export "${toy[@]}" --view text --query 1,3-22 --out "$out/x.png"
expect_exit 2 "value norms of the toy layer" export "${toy[@]}" --attention value_norm --out "$out/x.png"
grep -q "value-weighted norms are implemented for" "$out/log.txt" || fail "the value-norm refusal must say why"
acli export --model default --text "To be, or not" --attention value_norm --out "$out/value-norm.svg" \
  >/dev/null 2>&1 || fail "heatmap --attention value_norm (bundled model)"
grep -q "value-weighted norm" "$out/value-norm.svg" || fail "value-norm.svg must say what it shows"
expect_exit 2 "bad --aggregate" export "${toy[@]}" --view text --query 1,2 --aggregate max --out "$out/x.png"
grep -q "mean or sum" "$out/log.txt" || fail "the --aggregate message must list the choices"
expect_exit 2 "ablation of the toy layer" export "${toy[@]}" --view ablation --out "$out/x.png"
grep -q "predicts no token" "$out/log.txt" || fail "the toy's refusal must say why"
expect_exit 2 "experts of a model without experts" export "${tiny[@]}" --view experts --out "$out/x.png"
grep -q "mixture-of-experts router" "$out/log.txt" || fail "the experts refusal must say what the view needs"
expect_exit 2 "--model-b without the compare view" export "${tiny[@]}" --model-b default --out "$out/x.png"
grep -q "use it with --view compare" "$out/log.txt" || fail "the --model-b refusal must name the compare view"
expect_exit 2 "--model-b without model-distance" analyze "${tiny[@]}" --measure rollout --model-b default
grep -q "measure model-distance" "$out/log.txt" || fail "analyze's --model-b refusal must name model-distance"
expect_exit 2 "step of the toy layer" export --text hi --view step --out "$out/x.png"
grep -q "not a causal language model" "$out/log.txt" || fail "the toy's step refusal must say why"
expect_exit 2 "--step past the model's positions" export "${tiny[@]}" --view step --step 4000 --out "$out/x.png"
grep -q "positions end after" "$out/log.txt" || fail "--step past the end must say where it ends"
expect_exit 2 "--temperature outside --view step" export "${tiny[@]}" --temperature 1 --out "$out/x.png"
grep -q "belongs to --view step" "$out/log.txt" || fail "sampling flags outside step must be refused by name"
expect_exit 2 "bad --format" export "${toy[@]}" --format gif --out "$out/x.gif"
expect_exit 2 "unwritable --out" export "${toy[@]}" --out "$out/no/such/dir/x.png"
expect_exit 2 "missing --out" export "${toy[@]}"
[ -e "$out/x.png" ] && fail "a failed export left $out/x.png"
# run and tokenize still work without Qt.
expect_exit 0 "run" run "${toy[@]}"
expect_exit 0 "tokenize" tokenize --text "hi"

[ "$failures" = 0 ] && echo "all export checks passed"
exit $((failures > 0))
