// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <vector>

#include "attnscope/head_ablation.h"
#include "models/transformer_family.h"

namespace attnscope {

/// Head ablation of one tokenised item through the family's layers, for TransformerModel, which
/// holds the family's lock and has moved its modules to `device`. Exact: the unablated forward
/// saves every layer's input, and ablating a head of layer l reruns layers l..L-1 from the saved
/// input of layer l. Estimate: one forward with a head mask of ones that requires grad, and one
/// backward of log p to it. Neither keeps attention, scores or a trace.
class HeadAblator final {
 public:
  HeadAblator(TransformerFamily& family, const BatchInput& batch, const torch::Device& device);

  HeadAblation exact(const AblationRequest& request);
  HeadAblation estimate(const AblationRequest& request);

 private:
  /// Runs layers from..L-1 on x ([1, T, C]). keep: [H] head mask for layer `from` only, or
  /// [L, H] for every layer, or undefined. inputs: when given, receives each layer's input.
  torch::Tensor layers(torch::Tensor x, int from, const torch::Tensor& keep,
                       const RunRequest& request, std::vector<torch::Tensor>* inputs = nullptr);
  /// Chooses the position read (and whether it is a mask fill) from the request; its logits [V].
  torch::Tensor chooseTarget(const torch::Tensor& x, const AblationRequest& request);
  /// x: the last layer's output [1, T, C] -> the final-normed hidden state [C] at the position.
  torch::Tensor finalHidden(const torch::Tensor& x);
  /// hidden: [C] or [N, C] -> the logits [V] or [N, V] of the next token or the mask fill. The
  /// families' heads work row by row, so N states take one matmul.
  torch::Tensor headLogits(const torch::Tensor& hidden);
  /// headLogits(finalHidden(x)): [V]
  torch::Tensor readout(const torch::Tensor& x);
  /// log softmax(logits)[target] in doubles. logits: [V]
  double logProbability(const torch::Tensor& logits) const;
  /// The result with tokens, target and baseline filled from the unablated logits [V].
  HeadAblation start(const torch::Tensor& logits, bool estimate) const;

  TransformerFamily& m_family;
  const BatchInput& m_batch;
  torch::Device m_device;
  int m_layers = 0, m_heads = 0;
  AttentionMask m_mask;       // the run's attention mask
  torch::Tensor m_positions;  // and positions
  torch::Tensor m_context;    // cross-attention keys and values; undefined otherwise
  int m_position = 0;
  bool m_maskFill = false;
  int64_t m_target = 0;
};

}  // namespace attnscope
