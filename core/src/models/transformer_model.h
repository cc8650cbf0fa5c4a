// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <optional>

#include "attnscope/model.h"
#include "models/transformer_family.h"

namespace attnscope {

/// The one Model implementation: tokenize, estimate memory and refuse before allocating, choose
/// the device, embed, run the layer stack writing each layer's attention straight into the result
/// and recording the trace, then predict the next token. Encoder-decoders run a second stack, the
/// decoder, on the same path (teacher forcing or greedy generation). Every family runs through it.
class TransformerModel final : public Model {
 public:
  explicit TransformerModel(std::shared_ptr<TransformerFamily> family, std::string name = {});

  ModelInfo info() const override;
  std::vector<Token> tokenize(const std::string& text) const override;
  AttentionResult run(const RunRequest& request) const override;
  std::vector<NamedTensor> parameters() const override;

  /// The run's peak memory beyond the process: parameters, the [L, B, H, Tq, Tk] result (twice
  /// with scores), one layer's temporaries and the activations; for an encoder-decoder also the
  /// decoder's [Ld, B, H, Tt, Tt + Tk] self- and cross-attention over `targets` decoder inputs.
  uint64_t estimateBytes(int64_t batch, int64_t queries, int64_t keys, bool keepScores,
                         int64_t targets = 0) const;

 private:
  AttentionResult runUnguarded(const RunRequest& request) const;
  std::shared_ptr<TransformerFamily> m_family;
  std::string m_name;
  // The first parameter holding NaN or Inf, or empty; found on the first run (under the family's
  // lock), not while opening, which must not page in every mapped weight.
  mutable std::optional<std::string> m_nonFiniteWeight;
};

/// Top candidates of a next-token distribution. logits: [V] -> at most k predictions, most likely
/// first.
std::vector<Prediction> topPredictions(const torch::Tensor& logits, int k,
                                       const TransformerFamily& family);

}  // namespace attnscope
