// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/shape_trace.h"

namespace attnscope {

const std::vector<TraceStepKind>& traceStepKinds() {
  static const std::vector<TraceStepKind> kinds = {
      {"input", "input", "The layer's input: one vector per token."},
      {"embedding", "Embedding", "The embedding looks up a learned vector for every token id."},
      {"dequantize", "dequantize",
       "The weight is kept as the GGUF file's quantized blocks (Q4_K, Q8_0, ...: a few bits a "
       "weight plus block scales); it is widened to float32 a block of rows at a time, only for "
       "this product, and dropped after it."},
      {"linear", "Linear",
       "A learned Linear layer multiplies every token's vector by a weight matrix and adds a "
       "bias."},
      {"output", "Linear",
       "The output projection mixes what the heads found into one vector per token."},
      {"reshape", "reshape",
       "reshape regroups the same numbers into new dimensions, here splitting or joining the "
       "heads."},
      {"permute", "permute",
       "permute reorders the dimensions so that each head's tokens sit together for the matrix "
       "products."},
      {"chunk", "chunk",
       "chunk cuts the last dimension into equal parts: the queries, keys and values."},
      {"split", "split", "split cuts the last dimension into the queries, keys and values."},
      {"conv1d", "Conv1d",
       "A learned 1-D convolution mixes each token's vector with its neighbours' (kernel_size "
       "tokens around it)."},
      {"rotary", "RoPE",
       "Rotary positions turn each pair of query and key dimensions by an angle that grows with "
       "the "
       "token's position, so their dot product depends on how far apart the tokens are."},
      {"repeat_kv", "repeat_kv",
       "Grouped-query attention: each key/value head is repeated for the query heads that share "
       "it."},
      {"matmul", "matmul",
       "The matrix product takes dot products: each query with each key for scores, or weights "
       "with "
       "values for a weighted sum."},
      {"scale", "scale",
       "Scaling by 1/√head_size keeps the scores small enough that softmax does not saturate."},
      {"softcap", "tanh cap",
       "Soft-capping squashes each scaled score into (−cap, cap) with cap·tanh(score / cap), so no "
       "score can dominate; the scores shown are the capped ones."},
      {"position_bias", "+ bias",
       "A position bias (ALiBi's distance penalty or T5's learned relative bias) is added to the "
       "scores."},
      {"mask", "mask",
       "The mask sets the scores of future (or padding) positions to −inf, so they get zero "
       "weight."},
      {"softmax", "softmax", "softmax turns each row of scaled scores into weights that sum to 1."},
      {"concat", "concat",
       "concat puts the heads' outputs side by side again, back to d_model wide."},
      {"merge_heads", "permute + reshape",
       "The heads' outputs are moved next to each other again (permute, then reshape), back to "
       "d_model wide."},
      {"layernorm", "LayerNorm",
       "Layer norm rescales each token's vector to zero mean and unit variance, then applies a "
       "learned gain "
       "and bias."},
      {"rmsnorm", "RMSNorm",
       "RMS norm divides each token's vector by its root mean square, then applies a learned "
       "gain."},
      {"add", "+", "The residual connection adds the sublayer's result to its input."},
      {"activation", "activation",
       "The non-linearity between the MLP's two Linear layers (GELU, ReLU or SiLU, as the config "
       "names it)."},
      {"multiply", "×",
       "The gate: the activated gate projection multiplies the up projection element by element."},
      {"topk", "top-k",
       "The router keeps each token's k most probable experts and their probabilities "
       "(renormalised to sum to 1 where the model does so)."},
      {"experts", "experts",
       "Each token goes through its chosen experts only (each a gated MLP); their outputs are "
       "added, each times its router weight."},
      {"shared_expert", "shared expert",
       "The shared expert is a gated MLP that every token goes through; its output, times the "
       "sigmoid of a learned per-token gate, is added to the chosen experts' output."},
      {"clamp", "clamp",
       "Clipping clamps every value of the projection into [−clip, clip] (OLMo's clip_qkv), so "
       "no query, key or value feature can grow past it."},
  };
  return kinds;
}

const TraceStepKind* findTraceStepKind(const std::string& kind) {
  for (const TraceStepKind& k : traceStepKinds()) {
    if (k.kind == kind) return &k;
  }
  return nullptr;
}

}  // namespace attnscope
