// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <vector>

#include "attnscope/attention_result.h"
#include "models/transformer_family.h"

namespace attnscope {

/// The logit lens of one run (RunRequest::logitLens): after each layer, the family's finalNorm
/// and logits applied to every position's hidden states, reduced at once to the top k tokens and
/// the probability of the token that follows, so that no [L, T, V] tensor ever exists. The
/// vocabulary is softmaxed a block of positions at a time (about kBlockValues floats).
class LogitLens {
 public:
  static constexpr int64_t kBlockValues = int64_t{1} << 24;  // 64 MiB of float32 logits

  /// Refuses (Error(InvalidArgument)) unless the model is a causal language model with a head:
  /// `info` its description; one logits() call on a zero vector on `dev` shows whether it has one.
  static void check(TransformerFamily& family, const ModelInfo& info, const torch::Device& dev);

  /// ids: [B][T] the batch's tokens (lengths are the real ones); k: kept per position.
  LogitLens(TransformerFamily& family, const std::vector<std::vector<Token>>& ids, int64_t T,
            int64_t layers, int k);

  /// Layer l's output hidden states [B, T, C] (before the final norm).
  void addLayer(int64_t l, const torch::Tensor& hidden);

  /// Moves the lens into r.logitLensIds, logitLensProbs, logitLensNext, logitLensEntropy and
  /// logitLensTokens.
  void moveInto(AttentionResult& r);

 private:
  TransformerFamily& m_family;
  const std::vector<std::vector<Token>>& m_tokens;
  int64_t m_B, m_T, m_L, m_k;
  torch::Tensor m_next;  // [B, T] int64: the id at t + 1, -1 where there is none
  FloatTensor m_ids, m_probs, m_nextProbs, m_entropy;
};

}  // namespace attnscope
