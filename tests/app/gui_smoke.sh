#!/usr/bin/env bash
# Smoke test of the real window under Xvfb: start it with text, type more (xdotool), take a
# screenshot, check that it shows something, that the app is alive, and that it quits cleanly.
# Usage: gui_smoke.sh <attnscope executable> <output dir>. Exit 77 (skip) without xvfb-run.
set -uo pipefail
app=$1
out=${2:-.}
for tool in xvfb-run import convert; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
mkdir -p "$out"
shot="$out/gui_smoke.png"
log="$out/gui_smoke.log"
rm -f "$shot" "$log"

# Keep the user's settings out of it.
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
session="$home/smoke-session.attnscope"
cp "$(dirname "$0")/../fuzz/corpus/session_file/valid_toy.attnscope" "$session"

inner=$(cat <<'INNER'
set -uo pipefail
app=$1; shot=$2; session=$3
have_xdotool=0
command -v xdotool >/dev/null && have_xdotool=1
args=(--text "The cat sat on the mat." --text "Attention is all you need.")
# Without xdotool nothing can close the window from outside: let it close itself.
[[ $have_xdotool == 1 ]] || args+=(--quit-after 8000)
"$app" "${args[@]}" &
pid=$!
sleep 4
if ! kill -0 "$pid" 2>/dev/null; then echo "FAIL: attnscope exited during start-up"; exit 1; fi
if [[ $have_xdotool == 1 ]]; then
  wid=$(xdotool search --sync --limit 1 --onlyvisible --name 'attnscope' 2>/dev/null | head -1)
  if [[ -z "$wid" ]]; then echo "FAIL: no attnscope window"; kill "$pid"; exit 1; fi
  xdotool windowfocus --sync "$wid" 2>/dev/null || true
  xdotool key --clearmodifiers ctrl+End
  xdotool key --clearmodifiers Return
  xdotool type --delay 40 'A third sentence arrives.'
  sleep 2
fi
import -window root "$shot"
if ! kill -0 "$pid" 2>/dev/null; then echo "FAIL: attnscope died after typing"; exit 1; fi
if [[ $have_xdotool == 1 ]]; then xdotool key --clearmodifiers ctrl+q; fi
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "FAIL: attnscope did not quit"; kill -9 "$pid"; exit 1; fi
wait "$pid"
rc=$?
echo "exit code $rc"
[[ $rc == 0 ]] || exit $rc
# The README's "--session FILE" form (Qt itself takes -session for X11 session management).
if [[ $have_xdotool == 1 ]]; then
  "$app" --session "$session" --quit-after 6000 &
  pid=$!
  if ! xdotool search --sync --limit 1 --onlyvisible --name 'smoke-session.attnscope' >/dev/null 2>&1; then
    echo "FAIL: --session FILE did not open smoke-session.attnscope"; kill "$pid"; exit 1
  fi
  echo "--session FILE opened the session"
  wait "$pid"
fi
exit 0
INNER
)

HOME="$home" XDG_CONFIG_HOME="$home/.config" QT_QPA_PLATFORM=xcb \
  xvfb-run -a -s "-screen 0 1600x1000x24" bash -c "$inner" smoke "$app" "$shot" "$session" >"$log" 2>&1
rc=$?
cat "$log"
if [[ $rc -ne 0 ]]; then echo "FAIL: the window run failed (exit $rc)"; exit 1; fi
if grep -q "QThread: Destroyed while thread" "$log"; then echo "FAIL: a thread outlived the app"; exit 1; fi
[[ -s "$shot" ]] || { echo "FAIL: no screenshot"; exit 1; }
colours=$(convert "$shot" -format %k info:)
echo "screenshot $shot: $colours unique colours"
if [[ ${colours:-0} -lt 64 ]]; then echo "FAIL: the screenshot looks blank"; exit 1; fi
echo "PASS"
