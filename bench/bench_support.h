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
/// A random-weight SmolLM-135M-shaped Llama (30 layers, 9 query / 3 key-value heads, hidden 576,
/// intermediate 1536, head_dim 64, 2048 positions, tied embeddings) in Hugging Face layout,
/// written once. The tokenizer is gpt2Folder()'s 259-token byte vocabulary (vocab 259), so
/// gpt2Text(T) gives T tokens here too; every other shape is SmolLM's.
std::string smolLmFolder();
/// A random-weight Llama-3.2-1B-shaped BF16 folder (16 layers, 32 query / 8 key-value heads,
/// hidden 2048, intermediate 8192, head_dim 64, vocab 128256, tied embeddings: 1.24 B parameters,
/// 2.5 GB), written once. Its tokenizer is gpt2Folder()'s 259-token byte vocabulary, so
/// gpt2Text(T) gives T tokens; every weight shape is the real model's.
std::string llama1BFolder();
/// The same shapes with 2 layers (issue 33's 32,768-token case: the width of a 1B model, two
/// layers so that a forward at that length fits two cores), written once.
std::string llama2LayerFolder();
/// A random-weight Llama-3.1-8B-shaped BF16 folder (32 layers, 32 query / 8 key-value heads,
/// hidden 4096, intermediate 14336, vocab 128256; tied here, so 7.5 B parameters, 15 GB in four
/// shards with their index), written once, streamed. Same tokenizer as llama1BFolder().
std::string llama8BFolder();
/// A random-weight Gemma-2-2B-shaped BF16 folder (26 layers, 8 query / 4 key-value heads of
/// head_dim 256, hidden 2304, intermediate 9216 GeGLU, vocab 256000, tied; sliding window 4096 on
/// the even layers, attention soft-cap 50, final soft-cap 30, query_pre_attn_scalar 256: 2.6 B
/// parameters, 5.2 GB), written once; norm weights 0 ((1 + w) norms). Same tokenizer as
/// llama1BFolder().
std::string gemma2Folder();
/// A random-weight BF16 Mixtral with Mixtral-8x7B's attention and vocabulary (hidden 4096, 32
/// query / 8 key-value heads of 128, vocab 32000, untied head, rope_theta 1e6, no sliding window)
/// and scaled-down experts: 4 layers (of 32), 8 experts top-2 of intermediate 2048 (of 14336):
/// 1.24 B parameters, 2.5 GB, written once. Same tokenizer as llama1BFolder().
std::string mixtralFolder();
/// llama1BFolder() as a Q4_K_M GGUF file (llama-quantize's mix: 96 Q4_K matrices, 17 Q6_K ones
/// (the tied token_embd, attn_v and ffn_down of layers 0, 1, 4, 7, 10, 13, 14, 15), 33 F32
/// norms), converted once by scripts/gguf-from-folder.py --ftype q4_k_m (/usr/bin/python3 with
/// numpy): what Ollama or LM Studio users open. Throws std::runtime_error when the conversion
/// fails.
std::string llama1BQ4KFile();
/// A random-weight bert-base-shaped encoder (12 layers x 12 heads, hidden 768, intermediate 3072,
/// 512 positions; BertModel, no head) in Hugging Face layout with a WordPiece tokenizer.json of
/// the special tokens and 26 letters, written once. bertText(T) gives T tokens.
std::string bertBaseFolder();
std::string bertText(int tokens);
/// A random-weight t5-small-shaped encoder-decoder (6 + 6 layers x 8 heads, d_model 512, d_kv 64,
/// d_ff 2048 ReLU, 32 relative-position buckets, vocab 32128, tied head) in Hugging Face layout
/// with the Unigram tokenizer.json of tests/data (800 pieces), written once. t5Text(9) gives 64
/// tokens (63 and </s>); as a target, 63 after the start token.
std::string t5SmallFolder();
std::string t5Text(int repeats);
/// A text that the minimal GPT-2 vocabulary turns into exactly `tokens` tokens (no merges apply).
std::string gpt2Text(int tokens);
/// The first `bytes` bytes of tinyshakespeare (repeated if shorter), or generated ASCII prose.
std::string corpusText(std::size_t bytes);
/// Peak resident set size of this process (VmHWM), in bytes.
long long peakRssBytes();

}  // namespace attnscope::bench
