#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Checks that every C++ file git tracks or would add follows .clang-format (exit 1 and the first
# when not); with --fix, reformats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked files and new ones git does not ignore: a file about to be committed is checked too.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' | grep -v '^tests/fuzz/corpus/')
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
