// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>

namespace attnscope {

/// config.json's `rope_scaling`, for the types Llama-family checkpoints use.
struct RopeScaling {
  enum class Type { None, Linear, Dynamic, Llama3 };
  Type type = Type::None;
  double factor = 1.0;
  double lowFreqFactor = 1.0;           // llama3
  double highFreqFactor = 4.0;          // llama3
  int64_t originalMaxPositions = 8192;  // llama3
};

struct RotaryOptions {
  int64_t rotaryDim = 0;     // dimensions rotated per head: head_dim, or rotary_pct · head_dim
  double theta = 10000.0;    // rope_theta (GPT-NeoX: rotary_emb_base)
  int64_t maxPositions = 0;  // max_position_embeddings, for dynamic scaling
  RopeScaling scaling;
};

/// Rotary position embedding (RoFormer; Hugging Face's Llama and GPT-NeoX convention): the first
/// rotaryDim dimensions of each head are rotated in pairs (i, i + rotaryDim/2) by
/// position-dependent angles ("rotate_half"), the rest pass through unchanged (partial rotary).
class RotaryEmbedding final {
 public:
  explicit RotaryEmbedding(RotaryOptions options);

  /// The rotation frequencies for a sequence of seqLen positions: [rotaryDim / 2] float32.
  /// Only dynamic scaling depends on seqLen.
  torch::Tensor inverseFrequencies(int64_t seqLen) const;
  /// positions: [T] int64 -> cos and sin, each [T, rotaryDim] float32 (frequencies repeated twice).
  std::pair<torch::Tensor, torch::Tensor> cosSin(const torch::Tensor& positions) const;
  /// x: [B, H, T, hd]; cos, sin: [T, rotaryDim] -> [B, H, T, hd].
  static torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& cos,
                             const torch::Tensor& sin);
  /// GPT-J's convention ("rotate_every_two"): the pairs are neighbours (2i, 2i + 1), each rotated
  /// by frequency i, on the first rotaryDim dimensions. The same cos, sin as apply (cosSin's).
  /// x: [B, H, T, hd] -> [B, H, T, hd].
  static torch::Tensor applyInterleaved(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin);

  const RotaryOptions& options() const { return m_options; }
  /// "rope_theta 10000, 64 of 64 dims, llama3 x8", for the trace.
  std::string describe(int64_t headDim) const;

 private:
  RotaryOptions m_options;
};

}  // namespace attnscope
