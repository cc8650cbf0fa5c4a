#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 16's reproductions through attnscope-cli: outputs that are symlinks, FIFOs, devices or
# folders; --dump replaced as a whole folder (also on a full disk); stale temporaries; memory
# refused before allocating (peak RSS of each refused run measured with getrusage of the child);
# FIFO inputs; strict tiny-GPT configs; NaN weights. Usage: robustness.sh CLI
set -u
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# peak ARGS...: runs the CLI with a 60 s timeout; prints "exit-code peak-RSS-MiB" on the last line
# of $tmp/peak.out, the command's stderr above it. getrusage(RUSAGE_CHILDREN) of this Python
# process sees only that one child.
peak() {
  /usr/bin/python3 -c '
import resource, subprocess, sys
try:
    r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=60)
    code, err = r.returncode, r.stderr.decode(errors="replace")
except subprocess.TimeoutExpired:
    code, err = 124, "timed out\n"
sys.stdout.write(err)
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
' "$cli" "$@" >"$tmp/peak.out"
}

# refused WORD ARGS...: exit 2, one line naming WORD, peak RSS under 300 MiB. In the batch
# process that runs only these refusals (batch_client.sh), whose peak (VmHWM) after each one is
# the most any of them so far needed; otherwise in a process of its own, measured by peak.
source "$(dirname "$0")/batch_client.sh"
batch_start "$cli"
refused() {
  local want=$1
  shift
  local code rss lines args="$*"
  args=${args:0:200}  # some cases pass 100 kB arguments
  if batch_takes "$@"; then
    acli "$@" 2>"$tmp/peak.out" >/dev/null
    code=$?
    rss=$(($(awk '/^VmHWM:/ {print $2}' "/proc/$ATTNSCOPE_BATCH_PID/status") / 1024))
    lines=$(wc -l <"$tmp/peak.out")
  else
    peak "$@"
    read -r code rss < <(tail -n 1 "$tmp/peak.out")
    lines=$(($(wc -l <"$tmp/peak.out") - 1))
  fi
  [[ $code -eq 2 ]] || fail "attnscope-cli $args -> exit $code, wanted 2: $(head -n 3 "$tmp/peak.out" | cut -c1-300)"
  [[ $lines -eq 1 ]] || fail "attnscope-cli $args printed $lines lines, wanted one: $(head -n 3 "$tmp/peak.out" | cut -c1-300)"
  grep -q -- "$want" "$tmp/peak.out" || fail "attnscope-cli $args lacks '$want': $(head -n 1 "$tmp/peak.out" | cut -c1-300)"
  [[ $rss -lt 300 ]] || fail "attnscope-cli $args peaked at $rss MiB (limit 300)"
  echo "refused in $rss MiB: $args"
}

dead_pid() {  # a pid whose process is gone
  sh -c 'exit 0' &
  local pid=$!
  wait "$pid"
  echo "$pid"
}

# --- 1. output paths: symlink, FIFO, device, folder, stdout ------------------------------------
echo old >"$tmp/target.json"
ln -s target.json "$tmp/link.json"
# Issue 34: a link is written through only when its target is one the user could have named (in
# the link's folder, and not as root); --force writes through any.
if [[ $(id -u) -eq 0 ]]; then
  refused "running as root, attnscope does not write through symbolic links" \
    run --text hi --json "$tmp/link.json"
  grep -q '^old$' "$tmp/target.json" || fail "a refused link's target was written"
else
  "$cli" run --text hi --json "$tmp/link.json" >/dev/null 2>&1 || fail "--json through a symlink exited $?"
fi
"$cli" run --text hi --json "$tmp/link.json" --force >/dev/null 2>&1 ||
  fail "--json --force through a symlink exited $?"
[[ -L $tmp/link.json ]] || fail "--json replaced the symlink with a file"
grep -q '"tokens"' "$tmp/target.json" || fail "--json did not write the symlink's target"
mkdir "$tmp/elsewhere"
echo keep >"$tmp/elsewhere/victim.json"
ln -s elsewhere/victim.json "$tmp/planted.json"
refused "symbolic link to" export --model default --text hi --out "$tmp/planted.json"
grep -q '^keep$' "$tmp/elsewhere/victim.json" || fail "a planted link's target outside the folder was written"

mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/fifo.out" &
reader=$!
timeout 30 "$cli" run --text hi --json "$tmp/fifo" >/dev/null 2>&1 || fail "--json into a FIFO exited $?"
wait "$reader"
[[ -p $tmp/fifo ]] || fail "--json replaced the FIFO"
grep -q '"tokens"' "$tmp/fifo.out" || fail "--json wrote nothing through the FIFO"

"$cli" run --text hi --json /dev/stdout 2>/dev/null | grep -q '"tokens"' || fail "--json /dev/stdout"

# A private /dev/null in our own folder (needs CAP_MKNOD; as root the old writer replaced it).
if mknod "$tmp/null" c 1 3 2>/dev/null; then
  "$cli" run --text hi --json "$tmp/null" >/dev/null 2>&1 || fail "--json into a device exited $?"
  [[ -c $tmp/null ]] || fail "--json replaced the device node with a regular file"
else
  echo "skipped the device node: mknod needs CAP_MKNOD"
fi

mkdir "$tmp/folder"
refused "it is a folder" run --text hi --json "$tmp/folder"

# Stale temporaries of a killed writer are removed; none of ours is left.
stale="$tmp/out.json.tmp-$(dead_pid)-0-0"
echo "left by kill -9" >"$stale"
"$cli" run --text hi --json "$tmp/out.json" >/dev/null 2>&1 || fail "--json exited $?"
[[ ! -e $stale ]] || fail "a dead process's temporary file was not removed"
ls "$tmp" | grep -q '\.tmp-' && fail "temporary files left: $(ls "$tmp")"

# --- 6. --dump replaces the whole folder, and a full disk leaves the old one --------------------
"$cli" run --text "dump me" --context "a context" --dump "$tmp/dump" >/dev/null 2>&1 || fail "--dump exited $?"
[[ -s $tmp/dump/context.npy ]] || fail "--dump wrote no context.npy"
"$cli" run --text "again" --dump "$tmp/dump" >/dev/null 2>&1 || fail "second --dump exited $?"
[[ -e $tmp/dump/context.npy ]] && fail "--dump mixed the old dump's context.npy into the new one"
grep -q '"again"\|"a"' "$tmp/dump/tokens.json" || fail "the second --dump's tokens are missing"
before=$(cd "$tmp/dump" && md5sum ./* | sort)
mkdir "$tmp/dump.tmp-$(dead_pid)-0-0"  # a killed dump's leftover folder
# RLIMIT_FSIZE (ulimit -f, KiB) stands in for a full disk: weights.safetensors is about 4 MiB.
(ulimit -f 512 && exec "$cli" run --input-dim 512 --d-model 512 --text "full disk" --dump "$tmp/dump") \
  >"$tmp/full.out" 2>&1
code=$?
[[ $code -eq 2 ]] || fail "--dump on a full disk exited $code, wanted 2: $(cat "$tmp/full.out")"
grep -q "File too large" "$tmp/full.out" || fail "--dump on a full disk: $(cat "$tmp/full.out")"
after=$(cd "$tmp/dump" && md5sum ./* | sort)
[[ $before == "$after" ]] || fail "--dump on a full disk changed the old dump"
ls "$tmp" | grep -q '^dump\.tmp-' && fail "--dump left temporary folders: $(ls "$tmp")"
mkdir "$tmp/mine" && echo precious >"$tmp/mine/thesis.tex"
refused "holds other files" run --text hi --dump "$tmp/mine"
[[ -s $tmp/mine/thesis.tex ]] || fail "--dump deleted a folder of other files"

# --- 2. memory refused before allocating --------------------------------------------------------
refused "about 4.0 GiB" run --input-dim 16384 --d-model 16384 --heads 1 --memory-limit 1024 --text hi
refused "64.0 GiB" run --heads 65536 --d-model 65536 --input-dim 65536 --text hi
refused "needs about" run --batch 1048576 --seq-len 1000

# --- 9. FIFO inputs never block -----------------------------------------------------------------
mkfifo "$tmp/in.fifo"
refused "FIFO" train --corpus "$tmp/in.fifo" --out "$tmp/x.safetensors"
refused "FIFO" run --text hi --weights "$tmp/in.fifo"
mkdir "$tmp/fifo-model" && mkfifo "$tmp/fifo-model/config.json"
refused "FIFO" run --text hi --model "$tmp/fifo-model"
ln -s in.fifo "$tmp/in.fifo.safetensors"
refused "FIFO" run --text hi --model "$tmp/in.fifo.safetensors"

# --- 8. train: memory, corpus size and --out before any work -----------------------------------
printf 'to be or not to be, that is the question. %.0s' {1..40} >"$tmp/corpus.txt"
refused "needs about" train --corpus "$tmp/corpus.txt" --out "$tmp/t.safetensors" --block 65536 --batch 32
refused "it is a folder" train --corpus "$tmp/corpus.txt" --out "$tmp/folder" --steps 100000000
refused "No such file or directory" train --corpus "$tmp/corpus.txt" --out "$tmp/no/such/t.safetensors"
truncate -s 300M "$tmp/huge.txt"
refused "more than the limit" train --corpus "$tmp/huge.txt" --out "$tmp/t.safetensors"

# --- 3 and 11: strict tiny-GPT configs; 5: NaN weights ------------------------------------------
"$cli" train --corpus "$tmp/corpus.txt" --out "$tmp/tiny.safetensors" --layers 1 --heads 2 --embd 8 \
  --block 8 --steps 2 --batch 2 --eval-every 2 --threads 1 >/dev/null 2>&1 || fail "small train exited $?"
# edit SRC DST KEY VALUE: rewrites one field of attnscope.config; DST gets NaN weights for "nan".
edit() {
  /usr/bin/python3 -c '
import json, math, struct, sys
src, dst, key, value = sys.argv[1:5]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
data = bytearray(b[8 + n:])
meta = h["__metadata__"]
if key == "nan":
    lo, hi = h["blocks.0.ln1.weight"]["data_offsets"]
    data[lo:hi] = struct.pack("<f", math.nan) * ((hi - lo) // 4)
elif key == "vocab":
    meta["attnscope.vocab"] = value
else:
    cfg = meta["attnscope.config"]
    meta["attnscope.config"] = cfg.replace("\"%s\":%d" % (key, json.loads(cfg)[key]), "\"%s\":%s" % (key, value))
header = json.dumps(h).encode()
open(dst, "wb").write(struct.pack("<Q", len(header)) + header + bytes(data))
' "$@"
}
edit "$tmp/tiny.safetensors" "$tmp/l.safetensors" n_layer 4294967300
refused "4294967300" run --model "$tmp/l.safetensors" --text "to be"
edit "$tmp/tiny.safetensors" "$tmp/e.safetensors" n_embd 64.7
refused "64.7" run --model "$tmp/e.safetensors" --text "to be"
edit "$tmp/tiny.safetensors" "$tmp/t.safetensors" n_head true
refused "n_head" run --model "$tmp/t.safetensors" --text "to be"
edit "$tmp/tiny.safetensors" "$tmp/b.safetensors" block_size 2147483648
refused "got 2147483648" run --model "$tmp/b.safetensors" --text "to be"
edit "$tmp/tiny.safetensors" "$tmp/b.safetensors" block_size 65536
refused "position_embedding_table" run --model "$tmp/b.safetensors" --text "to be"

edit "$tmp/tiny.safetensors" "$tmp/nan.safetensors" nan 0
"$cli" run --model "$tmp/nan.safetensors" --text "to be" >"$tmp/nan.out" 2>&1
code=$?
[[ $code -eq 0 ]] || fail "NaN weights: exit $code: $(cat "$tmp/nan.out")"
grep -q "notice: .*'blocks.0.ln1.weight'" "$tmp/nan.out" || fail "NaN weights: no notice naming the tensor: $(cat "$tmp/nan.out")"
grep -q "notice: the attention holds NaN" "$tmp/nan.out" || fail "NaN attention: no notice: $(cat "$tmp/nan.out")"
grep -q "n/a" "$tmp/nan.out" || fail "NaN predictions not shown as n/a: $(cat "$tmp/nan.out")"
grep -q "nan%" "$tmp/nan.out" && fail "NaN predictions printed as nan%"

# --- Issue 34: hostile inputs, second round ----------------------------------------------------
# 5. a FIFO output with no reader is refused (it blocked for ever, after the computation).
mkfifo "$tmp/noreader"
refused "FIFO (named pipe) with no reader" run --text hi --json "$tmp/noreader"
# 11. export's errors are one line: Qt's own warnings (its runtime folder, libpng's through its PNG
# writer) came before the message.
saved_runtime=${XDG_RUNTIME_DIR-}
unset XDG_RUNTIME_DIR
refused "FIFO (named pipe) with no reader" export --model default --text hi --out "$tmp/noreader"
[[ -n $saved_runtime ]] && export XDG_RUNTIME_DIR=$saved_runtime
# 11. a model's name comes from its file: control characters in it (ESC, the 8-bit CSI) reach the
# terminal escaped, on the summary line as in errors.
models_dir=$(cd "$(dirname "$0")/../../resources/models" && pwd)
evil="$tmp/$(printf 'evil\033[31m\302\233x').safetensors"
cp "$models_dir/tiny-shakespeare.safetensors" "$evil"
"$cli" run --text hi --model "$evil" >"$tmp/evil.out" 2>&1 || fail "a model named with escapes: exit $?"
grep -q $'\033' "$tmp/evil.out" && fail "a model name's ESC reached the terminal: $(head -n 1 "$tmp/evil.out" | cat -v)"
grep -qF 'evil\x1B[31m\u009Bx' "$tmp/evil.out" ||
  fail "the model name is not shown escaped: $(head -n 1 "$tmp/evil.out" | cat -v)"
# 8. list flags are checked and merged before they are expanded (4.2 GB before).
refused "out of range" run --text hi --layers "$(printf '0-999999,%.0s' {1..14000})0"
# 4. thread counts above the cores: OMP_NUM_THREADS=100000 hung restoring it, 1024 threads hung
# under an address-space limit.
OMP_NUM_THREADS=100000 timeout 60 "$cli" run --text hi >/dev/null 2>&1 ||
  fail "OMP_NUM_THREADS=100000 run exited $? (124: hung)"
(ulimit -v 8388608 && exec timeout 60 "$cli" run --text hi --threads 1024) >/dev/null 2>&1 ||
  fail "--threads 1024 under an 8 GiB address-space limit exited $? (124: hung)"
# 3. --json's document and text are in the memory estimate (427 MiB without it, 2.3 GiB with).
refused "written out as JSON) needs about 2.3 GiB" run --text "$(printf 'a%.0s' {1..3000})" \
  --max-tokens 5000 --memory-limit 1024 --json "$tmp/big.json"
# 9 and 6: config values that were internal errors or silently wrong attention: exit 2, one line.
hfmodel() {  # hfmodel DIR CONFIG: a folder whose config is read before its (empty) weights
  mkdir -p "$1"
  echo '{"model":{"type":"WordLevel","unk_token":"?","vocab":{"?":0,"h":1,"i":2}}}' >"$1/tokenizer.json"
  printf '\x04\0\0\0\0\0\0\0{}  ' >"$1/model.safetensors"
  echo "$2" >"$1/config.json"
}
hfmodel "$tmp/rope" '{"model_type":"llama","vocab_size":100,"hidden_size":8,"intermediate_size":16,
  "num_hidden_layers":1,"num_attention_heads":2,"rope_theta":1e308}'
refused '"rope_theta" must be above 1 and at most 1e30, got 1e+308' run --model "$tmp/rope" --text hi
hfmodel "$tmp/t5" '{"model_type":"t5","vocab_size":100,"d_model":8,"d_kv":4,"d_ff":16,"num_layers":1,
  "num_heads":2,"decoder_start_token_id":999999}'
refused '"decoder_start_token_id" (999999) must be below vocab_size (100)' run --model "$tmp/t5" --text hi
hfmodel "$tmp/relative" '{"model_type":"bert","vocab_size":100,"hidden_size":8,"num_hidden_layers":1,
  "num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":16,
  "position_embedding_type":"relative_key"}'
refused '"position_embedding_type" "relative_key" is not supported' run --model "$tmp/relative" --text hi
# 11. terminal escapes from a model file are written as \xNN, never sent to the terminal.
hfmodel "$tmp/escape" '{"model_type":"\u001b]0;pwned\u0007\u001b[2J\u009b31m"}'
refused 'model_type .\\x1B]0;pwned\\x07\\x1B\[2J\\u009B31m. is not supported' run --model "$tmp/escape" --text hi
grep -q $'\x1b\|\x07\|\xc2\x9b' "$tmp/peak.out" && fail "an escape sequence reached the terminal"
# 10. --dump never replaces a folder holding a user's folder named like a dump's file, stale
# clean-up never deletes a user's folder named like a temporary, and long names get temporaries.
mkdir -p "$tmp/d34/trace.json" && echo precious >"$tmp/d34/trace.json/notes.txt"
refused "holds other files ('trace.json')" run --text hi --dump "$tmp/d34"
[[ -s $tmp/d34/trace.json/notes.txt ]] || fail "--dump deleted a user's folder named trace.json"
user="$tmp/out34.json.tmp-$(dead_pid)-my-folder"
mkdir "$user" && echo precious >"$user/notes.txt"
"$cli" run --text hi --json "$tmp/out34.json" >/dev/null 2>&1 || fail "--json beside a user folder exited $?"
[[ -s $user/notes.txt ]] || fail "stale clean-up deleted a user's folder named like a temporary"
long="$tmp/$(printf 'n%.0s' {1..250})"
"$cli" run --text hi --json "$long" >/dev/null 2>&1 || fail "--json to a 250-character name exited $?"
grep -q '"tokens"' "$long" || fail "--json to a 250-character name wrote nothing"

if [[ $failures -ne 0 ]]; then
  echo "$failures robustness check(s) failed"
  exit 1
fi
echo "all robustness checks behave"
