// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <utility>

#include "models/folder_family.h"
#include "models/llama_config.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/rotary_embedding.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// The rotary block's options from a config's rope fields (Llama's rope_theta, GPT-NeoX's
/// rotary_emb_base): rotaryDim dimensions per head, max_position_embeddings for dynamic scaling.
RotaryOptions rotaryOptions(const RopeScalingConfig& scaling, int rotaryDim, double theta,
                            int maxPositions);
/// The positions a rotary model runs to: max_position_embeddings, or factor times it with dynamic
/// scaling (which exists to run past the trained context), at most 10^8.
int rotaryMaxPositions(const RopeScalingConfig& scaling, int maxPositions);

/// What the causal decoder families of Hugging Face folders (Llama, Mistral, Qwen, GPT-NeoX,
/// Bloom) share beyond FolderFamily: the ModelInfo fields of a causal language model. A family adds
/// its modules, embedIds, layer, finalNorm and logits.
///
/// Value norms are not assumed here: each family whose layer writes LayerContext::valueNorms says
/// so with supportsValueNorms(), and a layer that claims them but leaves a head unwritten fails the
/// run (TransformerModel) rather than showing zeros.
class DecoderFamily : public FolderFamily {
 public:
  /// config.json's eos_token_id (the first of a list), where generation stops.
  std::optional<int64_t> endTokenId() const override;
  /// Their layers attend through scaledDotProduct and take positions from LayerContext (rotary,
  /// ALiBi); a family whose embedding adds absolute positions overrides embedIdsAt (GPT-2).
  bool supportsKvCache() const override { return true; }

 protected:
  explicit DecoderFamily(const std::string& folder) : FolderFamily(folder) {}
  explicit DecoderFamily(FolderParts parts) : FolderFamily(std::move(parts)) {}
  /// kind and variant, layers, heads, kv heads, width, positions; causal.
  ModelInfo decoderInfo(const std::string& kind, int layers, int heads, int kvHeads, int width,
                        int positions) const {
    return folderInfo(kind, kind, layers, heads, kvHeads, width, positions, true);
  }
  /// Loads every parameter (requires_grad off; F32 mapped, F16/BF16 kept compact).
  void load(torch::nn::Module& module, const WeightRules& rules, const std::string& summary) {
    loadFrozen(module, rules, summary);
  }
  /// The causal mask with a sliding window of `window` keys (the query's own and window - 1 before
  /// it), padding as ctx.mask has it: for the windowed layers of a family whose other layers see
  /// every key (Qwen, Gemma 2/3), so ctx.mask has no window. ctx.mask itself where the window
  /// hides nothing this run. -> [B, 1, T, T] on the run's device
  static AttentionMask windowMask(const LayerContext& ctx, int window);
  /// The language-model head on hidden [B, T, C] -> [B, T, V]: the checkpoint's own `head`, else
  /// the input embedding when the config ties them, else none (an undefined tensor: a base model).
  /// tiedBias: a tied head's own bias (GPT-J's and Phi's lm_head.bias), or undefined.
  static torch::Tensor headOrTied(const Linear& head, bool tied, const EmbeddingTable& embed,
                                  const torch::Tensor& hidden, const torch::Tensor& tiedBias = {}) {
    if (head) return linearForward(hidden, head->weight, head->bias);
    if (tied)
      return linearForward(hidden, embed->weight,
                           tiedBias.defined() ? computeWeight(tiedBias) : torch::Tensor());
    return {};
  }
  /// The end of a parallel block whose MLP reads the attention's normed input (GPT-J, Phi):
  /// x + attn_out + mlp(normed), traced as the MLP's steps and one "residual" add. [B, T, C].
  static torch::Tensor parallelMlp(torch::Tensor normed, const torch::Tensor& attnOut,
                                   const torch::Tensor& x, int normStep, int attnStep, int xStep,
                                   const MlpProjection& up, Activation act,
                                   const MlpProjection& down, TraceRecorder& rec) {
    int mlpStep = -1;
    torch::Tensor h =
        feedForward(std::move(normed), up, act, down, nullptr, rec, normStep, &mlpStep);
    h.add_(attnOut).add_(x);  // x belongs to the caller's loop
    rec.record("residual", "attn_out + mlp_out + x", "add", h, {attnStep, mlpStep, xStep});
    return h;
  }
  /// The sequential end of a post-attention-LayerNorm layer (GPT-NeoX and Falcon without their
  /// parallel residual): residual = attn_out + x, then residual + mlp(postNorm(residual)), traced
  /// as residual_1, post_attention_layernorm, the MLP's steps and residual_2. [B, T, C] in and
  /// out; attnStep and xStep are the trace steps of attnOut and x.
  static torch::Tensor sequentialMlp(const torch::Tensor& attnOut, const torch::Tensor& x,
                                     int attnStep, int xStep, LayerNorm postNorm,
                                     const MlpProjection& up, Activation act,
                                     const MlpProjection& down, TraceRecorder& rec) {
    const torch::Tensor residual = attnOut + x;
    const int residualStep =
        rec.record("residual_1", "attn_out + x", "add", residual, {attnStep, xStep});
    torch::Tensor h = postNorm(residual);
    int s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(x)", "layernorm",
                       h, {residualStep});
    h = feedForward(std::move(h), up, act, down, nullptr, rec, s, &s);
    h.add_(residual);
    rec.record("residual_2", "mlp_out + x", "add", h, {s, residualStep});
    return h;
  }
};

}  // namespace attnscope
