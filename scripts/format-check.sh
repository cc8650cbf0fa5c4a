#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Checks that every tracked C++ file follows .clang-format (exit 1 and the first differences
# when not); with --fix, reformats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' | grep -v '^tests/fuzz/corpus/')
if [[ ${1:-} == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/attnscope-format.$$; then
  head -40 /tmp/attnscope-format.$$ >&2
  echo "format-check: $(grep -c 'error:' /tmp/attnscope-format.$$) line(s) differ from .clang-format; run 'make format'" >&2
  rm -f /tmp/attnscope-format.$$
  exit 1
fi
rm -f /tmp/attnscope-format.$$
echo "format-check: ${#files[@]} files follow .clang-format"
