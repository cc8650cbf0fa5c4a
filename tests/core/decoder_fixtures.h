// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnscope::test {

/// Tensor names and shapes of tiny decoder checkpoints, for writeHfFolder: every family test that
/// needs "a small Llama" or "a small Gemma" writes the same one. Vocabulary 301: the word-level
/// tokenizer fixture (tests/data/tokenizers/wordlevel.json).
using Shapes = std::map<std::string, std::vector<int64_t>>;

/// Llama/Mistral/Qwen2 layout: hidden 16, 4 query heads and 2 key/value heads of head_dim 4,
/// SwiGLU 24, tied (no lm_head).
inline Shapes llamaShapes(int layers = 2) {
  Shapes s = {{"model.embed_tokens.weight", {301, 16}}, {"model.norm.weight", {16}}};
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "input_layernorm.weight"] = {16};
    s[p + "post_attention_layernorm.weight"] = {16};
    s[p + "self_attn.q_proj.weight"] = {16, 16};
    s[p + "self_attn.k_proj.weight"] = {8, 16};
    s[p + "self_attn.v_proj.weight"] = {8, 16};
    s[p + "self_attn.o_proj.weight"] = {16, 16};
    s[p + "mlp.gate_proj.weight"] = {24, 16};
    s[p + "mlp.up_proj.weight"] = {24, 16};
    s[p + "mlp.down_proj.weight"] = {16, 24};
  }
  return s;
}

/// Gemma 2/3 layout under `prefix` ("model." or a vision-language folder's): hidden 16, 4 query
/// heads and 2 key/value heads of head_dim 8 (32 ≠ hidden), the four norms of a layer, Gemma 3's
/// q/k norms when asked, GeGLU 24; no lm_head (tied by default).
inline Shapes gemmaShapes(const std::string& prefix, int layers, bool qkNorm) {
  constexpr int64_t hidden = 16, inner = 24, headDim = 8;
  Shapes s = {{prefix + "embed_tokens.weight", {301, hidden}}, {prefix + "norm.weight", {hidden}}};
  for (int l = 0; l < layers; ++l) {
    const std::string p = prefix + "layers." + std::to_string(l) + ".";
    for (const char* norm : {"input_layernorm", "post_attention_layernorm",
                             "pre_feedforward_layernorm", "post_feedforward_layernorm"})
      s[p + norm + ".weight"] = {hidden};
    s[p + "self_attn.q_proj.weight"] = {4 * headDim, hidden};
    s[p + "self_attn.k_proj.weight"] = {2 * headDim, hidden};
    s[p + "self_attn.v_proj.weight"] = {2 * headDim, hidden};
    s[p + "self_attn.o_proj.weight"] = {hidden, 4 * headDim};
    if (qkNorm) {
      s[p + "self_attn.q_norm.weight"] = {headDim};
      s[p + "self_attn.k_norm.weight"] = {headDim};
    }
    s[p + "mlp.gate_proj.weight"] = {inner, hidden};
    s[p + "mlp.up_proj.weight"] = {inner, hidden};
    s[p + "mlp.down_proj.weight"] = {hidden, inner};
  }
  return s;
}

/// BLOOM layout: hidden 12 (3 heads of 4), fused query_key_value, biases, embedding LayerNorm.
inline Shapes bloomShapes(int layers) {
  Shapes b = {{"word_embeddings.weight", {301, 12}},
              {"word_embeddings_layernorm.weight", {12}},
              {"word_embeddings_layernorm.bias", {12}},
              {"ln_f.weight", {12}},
              {"ln_f.bias", {12}}};
  for (int l = 0; l < layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
      b[p + n + ".weight"] = {12};
      b[p + n + ".bias"] = {12};
    }
    b[p + "self_attention.query_key_value.weight"] = {36, 12};
    b[p + "self_attention.query_key_value.bias"] = {36};
    b[p + "self_attention.dense.weight"] = {12, 12};
    b[p + "self_attention.dense.bias"] = {12};
    b[p + "mlp.dense_h_to_4h.weight"] = {48, 12};
    b[p + "mlp.dense_h_to_4h.bias"] = {48};
    b[p + "mlp.dense_4h_to_h.weight"] = {12, 48};
    b[p + "mlp.dense_4h_to_h.bias"] = {12};
  }
  return b;
}

}  // namespace attnscope::test
