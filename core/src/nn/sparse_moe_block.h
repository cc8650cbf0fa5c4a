// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <vector>

#include "nn/activation.h"
#include "nn/gated_mlp.h"
#include "nn/linear.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// Which experts a mixture-of-experts layer's router chose for each token, and with what weight.
struct MoeRouting {
  torch::Tensor experts;  // [B, T, k] int64: the chosen experts, the most probable first
  torch::Tensor weights;  // [B, T, k] float32: the weight each one's output is multiplied by
};

/// A sparse mixture-of-experts feed-forward block (Mixtral's block_sparse_moe, Qwen-MoE's and
/// OLMoE's mlp): the router `gate` scores every expert, softmax over all of them in float32, the
/// top k are kept (renormalised to sum to 1 when normTopK: always in Mixtral, norm_topk_prob in
/// Qwen-MoE and OLMoE), and each token goes through its k experts only (each a gated MLP,
/// down(act(gate(x)) · up(x))), their outputs added with those weights. Qwen2-MoE adds a shared
/// expert that every token goes through, scaled by sigmoid(shared_expert_gate(x)). The family's
/// layer registers the modules under its checkpoint's names.
struct SparseMoeBlock {
  Linear gate{nullptr};           // the router: [C] -> [E] logits, no bias
  std::vector<GatedMlp> experts;  // E experts
  int64_t topK = 2;
  bool normTopK = true;
  GatedMlp sharedExpert;             // Qwen2-MoE's shared_expert; unset (gate empty): none
  Linear sharedExpertGate{nullptr};  // [C] -> [1], no bias: sigmoid of it scales sharedExpert

  /// x: [B, T, C] -> [B, T, C]; *outStep receives the trace index of the result, *routing (when
  /// given) the router's choices. Traced as router logits, probabilities, top-k and the experts'
  /// weighted sum (each expert's own steps are not traced), then the gated shared expert and the
  /// sum of the two where there is one.
  torch::Tensor forward(const torch::Tensor& x, Activation act, TraceRecorder& rec, int inStep,
                        int* outStep, MoeRouting* routing);
};

}  // namespace attnscope
