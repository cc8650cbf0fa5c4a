// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/falcon_config.h"

namespace attnscope {

std::string FalconConfig::describe() const {
  const char* layouts[] = {"grouped", "multi-query", "per-head"};
  return "falcon: " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads (" + std::to_string(numKvHeads) + " kv, " + layouts[static_cast<int>(layout())] +
         " query_key_value), hidden_size " + std::to_string(hiddenSize) + ", ffn_hidden_size " +
         std::to_string(ffnHiddenSize) + ", vocab_size " + std::to_string(vocabSize) +
         (alibi ? ", alibi" : ", rotary") + (parallelAttn ? ", parallel" : ", sequential");
}

FalconConfig FalconConfig::fromReader(const ConfigReader& c) {
  FalconConfig r;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, r.vocabSize);
  // FalconConfig takes n_embed over hidden_size; n_head and n_layer are the Falcon-RW code's names.
  r.hiddenSize = c.integer({"n_embed", "hidden_size"}, 1, 1 << 16, r.hiddenSize);
  r.numLayers = c.integer({"num_hidden_layers", "n_layer"}, 1, 1024, r.numLayers);
  r.numHeads = c.integer({"num_attention_heads", "n_head"}, 1, 1024, r.numHeads);
  c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  r.alibi = c.flag("alibi", false);
  r.newDecoderArchitecture = c.flag("new_decoder_architecture", false);
  r.multiQuery = c.flag("multi_query", true);
  r.parallelAttn = c.flag("parallel_attn", true);
  // null: one per query head.
  const int kvHeads = c.integer({"num_kv_heads"}, 1, 1024, r.numHeads);
  if (r.newDecoderArchitecture) {
    c.requireDivides("num_kv_heads", kvHeads, "num_attention_heads", r.numHeads);
    r.numKvHeads = kvHeads;
    // FalconDecoderLayer: the new architecture is always parallel (its sequential form would read
    // ln_attn, which it does not build), with two norms unless num_ln_in_parallel_attn is 1.
    if (!r.parallelAttn)
      c.fail(
          "\"parallel_attn\" must not be false with \"new_decoder_architecture\": "
          "transformers' FalconDecoderLayer has no sequential form of that layout");
    r.numLnInParallelAttn = c.integer({"num_ln_in_parallel_attn"}, 1, 2, 2);
  } else {
    if (r.multiQuery) {
      r.numKvHeads = 1;  // num_kv_heads is ignored
    } else if (kvHeads != r.numHeads) {
      c.fail("num_kv_heads (" + std::to_string(kvHeads) + ") must equal num_attention_heads (" +
             std::to_string(r.numHeads) +
             ") without new_decoder_architecture or multi_query: the per-head query_key_value "
             "has one key and value per head");
    } else {
      r.numKvHeads = r.numHeads;
    }
    // The old layout reads input_layernorm whatever this says; 2 would build ln_attn and ln_mlp
    // instead, which transformers' layer then does not read.
    if (r.parallelAttn && c.has("num_ln_in_parallel_attn") &&
        c.integer({"num_ln_in_parallel_attn"}, 0, 1024) == 2)
      c.fail(
          "\"num_ln_in_parallel_attn\" 2 needs \"new_decoder_architecture\": the old layout "
          "has one input_layernorm");
    r.numLnInParallelAttn = 1;
  }
  r.ffnHiddenSize = c.integer({"ffn_hidden_size"}, 1, 1 << 18, 4 * r.hiddenSize);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, r.maxPositions);
  r.layerNormEps = c.number("layer_norm_epsilon", 1e-5);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_epsilon\" must be a positive number below 1, got " +
           formatNumber(r.layerNormEps));
  r.ropeTheta = c.number("rope_theta", 10000.0);
  if (!(r.ropeTheta > 1) || r.ropeTheta > kMaxRopeBase)
    c.fail("\"rope_theta\" must be above 1 and at most 1e30, got " + formatNumber(r.ropeTheta));
  r.ropeScaling = readRopeScaling(c);
  if (!r.alibi && r.headDim() % 2 != 0)
    c.fail("hidden_size / num_attention_heads (" + std::to_string(r.headDim()) +
           ") must be even for rotary positions (alibi false)");
  r.activation = c.string("activation", "gelu");
  if (r.activation.empty()) c.fail("\"activation\" is empty");
  r.bias = c.flag("bias", false);
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", true);
  return r;
}

}  // namespace attnscope
