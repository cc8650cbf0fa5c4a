#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the libFuzzer targets with clang in build-fuzz (no LibTorch; Qt Core for the session
# reader only) and runs each one for FUZZ_SECONDS (default 30) over its seed corpus. Exits
# non-zero on the first crash; the crashing input is left in build-fuzz/crashes/<target>/ to turn
# into a regression test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-30}
jobs=${JOBS:-2}
targets=(fuzz_safetensors fuzz_gguf fuzz_pickle fuzz_tokenizers fuzz_bpe fuzz_gpt2_config
  fuzz_decoder_configs fuzz_encoder_configs fuzz_config_json fuzz_tokenizer_json fuzz_session_file)

if ! command -v clang++ >/dev/null; then
  echo "make fuzz needs clang++ and libclang-rt-14-dev (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
# Only the base library (and Qt Core) is needed: no app, no LibTorch models, no tests.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DATTNSCOPE_BUILD_FUZZ=ON -DATTNSCOPE_BUILD_APP=OFF -DATTNSCOPE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

status=0
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/${t#fuzz_}"
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  dict=()
  [[ -f "$root/tests/fuzz/${t#fuzz_}.dict" ]] && dict=(-dict="$root/tests/fuzz/${t#fuzz_}.dict")
  echo "== $t: ${seconds}s" >&2
  # New inputs go to the build corpus; the seeds in the source tree stay as committed.
  if ! "$build/tests/fuzz/$t" "$corpus" "$seeds" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
      -artifact_prefix="$crashes/" -print_final_stats=1 "${dict[@]}" 2> "$build/$t.log"; then
    echo "!! $t crashed; input(s) in $crashes; log $build/$t.log" >&2
    tail -40 "$build/$t.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$build/$t.log" | tail -2 >&2 || true
  fi
done
exit $status
