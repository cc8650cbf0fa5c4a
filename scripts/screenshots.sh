#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Regenerates the window pictures in docs/images from the real window under Xvfb: the bundled
# model at 1024x700 and 1600x1000, light and dark, plus the README's heatmap and pipeline views.
# Usage: scripts/screenshots.sh [build dir (default: build)] [output dir (default: docs/images)]
# The window is resized by the screen it opens on (no window manager: it fills what it asks for),
# and each picture is cropped to the window. Settings go to a throw-away XDG_CONFIG_HOME.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$(mkdir -p "${2:-$root/docs/images}" && cd "${2:-$root/docs/images}" && pwd)
app="$build/app/gui/attnscope"
for tool in xvfb-run import convert xdotool; do
  command -v "$tool" >/dev/null || { echo "screenshots.sh needs $tool" >&2; exit 1; }
done
[[ -x "$app" ]] || { echo "no $app: build first (make)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
text='First Citizen:\nBefore we proceed any further, hear me speak.'

# shot NAME WIDTH HEIGHT THEME TAB [LAYER HEAD]
shot() {
  local name=$1 width=$2 height=$3 theme=$4 tab=$5 layer=${6:-2} head=${7:-2}
  mkdir -p "$work/$name/attnscope"
  printf '[view]\ntheme=%s\n' "$theme" > "$work/$name/attnscope/attnscope.conf"
  cat > "$work/$name/session.attnscope" <<JSON
{"format":"attnscope-session","version":1,"model":{"source":"default"},"text":"$text",
 "view":{"tab":"$tab","layer":$layer,"head":$head}}
JSON
  XDG_CONFIG_HOME="$work/$name" xvfb-run -a -s "-screen 0 ${width}x${height}x24" bash -c '
    QT_QPA_PLATFORM=xcb "$1" --session "$2" & pid=$!
    wid=$(xdotool search --sync --limit 1 --onlyvisible --name "session.attnscope" | head -1)
    xdotool windowsize "$wid" "$4" "$5"
    sleep 6
    import -window "$wid" "$3"
    kill $pid' _ "$app" "$work/$name/session.attnscope" "$out/$name.png" "$width" "$height"
  echo "wrote $out/$name.png ($(identify -format %wx%h "$out/$name.png"))"
}

shot window-1024x700-light 1024 700 light heatmap
shot window-1024x700-dark 1024 700 dark heatmap
shot window-1600x1000-light 1600 1000 light heatmap
shot window-1600x1000-dark 1600 1000 dark heatmap
shot window-heatmap 1400 862 light heatmap
shot window-pipeline 1400 862 light pipeline 3 0

# Issue 33's long-range statistics of the bundled model: every head's weight by distance in layer 3
# (head 2 reads 15-62 characters back, the others their neighbours) beside the table and the
# head similarity. An export, not a window shot: the same drawing.
long='First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

First Citizen:
You are all resolved rather to die than to famish?'
QT_QPA_PLATFORM=offscreen "$build/app/cli/attnscope-cli" export --model default --text "$long" \
  --view stats --statistic distance-profile --layer 3 --head 2 --width 1400 --height 800 \
  --out "$out/stats-distance-profile.png"
