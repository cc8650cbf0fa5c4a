// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope::bench {

/// Where the benchmarks keep their generated inputs (GPT-2 folder, 500 MB safetensors file).
std::string scratchDir();
/// A random-weight GPT-2 small (12 layers x 12 heads, n_embd 768, 1024 positions, vocab 50257) in
/// Hugging Face layout, written once. The vocab.json/merges.txt are a 259-token byte vocabulary,
/// so the tokenizer is minimal but the weight shapes are GPT-2's.
std::string gpt2Folder();
/// A text that the minimal GPT-2 vocabulary turns into exactly `tokens` tokens (no merges apply).
std::string gpt2Text(int tokens);
/// The first `bytes` bytes of tinyshakespeare (repeated if shorter), or generated ASCII prose.
std::string corpusText(std::size_t bytes);
/// Peak resident set size of this process (VmHWM), in bytes.
long long peakRssBytes();

}  // namespace attnscope::bench
