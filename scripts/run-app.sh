#!/usr/bin/env bash
# `make run`: start the GUI when there is a display, else show the tutorial's trace in the CLI.
set -euo pipefail
build=${1:-build}
if [[ -x "$build/app/gui/attnscope" && ( -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ) ]]; then
  exec "$build/app/gui/attnscope"
fi
if [[ -x "$build/app/gui/attnscope" ]]; then
  echo "No display found (DISPLAY is unset): showing the CLI instead. Under X, 'make run' opens the window." >&2
fi
exec "$build/app/cli/attnscope-cli" run --variant fused --input-dim 1024 --d-model 512 --heads 8 \
  --batch 30 --seq-len 5 --trace
