# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by the CLI test scripts: `acli ARGS...` behaves as `attnscope-cli ARGS...` (the same
# stdout, stderr and exit code) but runs in one `attnscope-cli batch` process that the script
# starts once. Every attnscope-cli process spends ~0.7 s loading LibTorch before main; the CLI
# scripts run a hundred commands each. Calls that set their own environment, limits or working
# folder keep starting "$cli" themselves. ATTNSCOPE_TEST_NO_BATCH=1 makes acli start a process
# for every call too.
#
# batch_start CLI   starts the batch process (once, before the first acli)

batch_start() {
  BATCH_CLI=$1
  [ -n "${ATTNSCOPE_TEST_NO_BATCH:-}" ] && return
  BATCH_ENV=$(declare -x)
  BATCH_PWD=$PWD
  coproc ATTNSCOPE_BATCH { exec "$BATCH_CLI" batch -; }
}

# One argument as a JSON string; fails for what the batch cannot take as text (bytes that are not
# ASCII are left to a process of their own, where they arrive unchanged).
batch_json_word() {
  local LC_ALL=C s=$1
  [[ $s == *[$'\x01'-$'\x08'$'\x0b'-$'\x1f'$'\x7f'-$'\xff']* ]] && return 1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  printf '"%s"' "$s"
}

# batch_takes ARGS...: whether acli ARGS runs in the batch process (else in a process of its own).
# A call with its own environment (VAR=x acli ...) or folder, or with arguments that are not
# ASCII text, is a process of its own.
batch_takes() {
  local word
  [ -n "${ATTNSCOPE_BATCH_PID:-}" ] && [ "$PWD" = "$BATCH_PWD" ] &&
    [ "$(declare -x)" = "$BATCH_ENV" ] || return 1
  for word in "$@"; do
    batch_json_word "$word" >/dev/null || return 1
  done
}

acli() {
  local request="[" separator="" word
  if ! batch_takes "$@"; then
    "$BATCH_CLI" "$@"
    return
  fi
  for word in "$@"; do
    request+="$separator$(batch_json_word "$word")"
    separator=","
  done
  printf '%s]\n' "$request" >&"${ATTNSCOPE_BATCH[1]}"
  local answer
  if ! IFS= read -r answer <&"${ATTNSCOPE_BATCH[0]}"; then
    echo "attnscope-cli batch ended during: $*" >&2
    return 125
  fi
  printf '%s' "$answer" | /usr/bin/python3 -c '
import json, sys
a = json.load(sys.stdin)
sys.stdout.write(a["stdout"])
sys.stderr.write(a["stderr"])
sys.exit(a["rc"])'
}
