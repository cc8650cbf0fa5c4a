// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/llama_config.h"

namespace attnscope {

RopeScalingConfig readRopeScaling(const ConfigReader& config) {
  RopeScalingConfig r;
  if (!config.has("rope_scaling")) return r;
  const ConfigReader s = config.section("rope_scaling");
  // transformers renamed "type" to "rope_type"; checkpoints carry either (or both).
  const std::string key = s.has("rope_type") ? "rope_type" : "type";
  r.type = s.string(key, "default");
  if (r.type == "default") {
    r.type.clear();
    return r;
  }
  if (r.type != "linear" && r.type != "dynamic" && r.type != "llama3") {
    s.fail("\"" + key + "\" \"" + r.type +
           "\" is not supported; supported: default, linear, dynamic, llama3");
  }
  if (!s.has("factor")) s.fail("missing \"factor\"");
  r.factor = s.number("factor", 1.0);
  if (!(r.factor >= 1.0) || r.factor > 1e6)
    s.fail("\"factor\" must be a number from 1 to 1e6, got " + std::to_string(r.factor));
  if (r.type == "llama3") {
    r.lowFreqFactor = s.number("low_freq_factor", 1.0);
    r.highFreqFactor = s.number("high_freq_factor", 4.0);
    if (!(r.lowFreqFactor > 0) || !(r.highFreqFactor > r.lowFreqFactor))
      s.fail("\"high_freq_factor\" (" + std::to_string(r.highFreqFactor) +
             ") must be above \"low_freq_factor\" (" + std::to_string(r.lowFreqFactor) +
             "), both positive");
    r.originalMaxPositions = s.integer({"original_max_position_embeddings"}, 1, 1 << 24, 8192);
  }
  return r;
}

namespace {

/// Gemma was trained with the tanh GELU, but the Gemma 1.0 configs say "hidden_act": "gelu" (the
/// exact one). transformers up to 4.47 read `hidden_activation` and fell back to
/// gelu_pytorch_tanh, ignoring hidden_act; later versions read hidden_act and map the legacy
/// "gelu" to the tanh form. Both agree on every published config, and so does this.
std::string gemmaActivation(const ConfigReader& c) {
  if (c.has("hidden_activation")) return c.string("hidden_activation", "gelu_pytorch_tanh");
  const std::string act = c.string("hidden_act", "gelu_pytorch_tanh");
  return act == "gelu" ? "gelu_pytorch_tanh" : act;
}

}  // namespace

std::string LlamaConfig::describe() const {
  return modelType + ": " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads (" + std::to_string(numKvHeads) + " kv), hidden_size " +
         std::to_string(hiddenSize) + ", head_dim " + std::to_string(headDim) +
         ", intermediate_size " + std::to_string(intermediateSize) + ", vocab_size " +
         std::to_string(vocabSize);
}

LlamaConfig LlamaConfig::fromFile(const std::string& path) {
  return fromReader(ConfigReader::fromFile(path));
}

LlamaConfig LlamaConfig::fromReader(const ConfigReader& c) {
  LlamaConfig r;
  r.modelType = c.string("model_type", "llama");
  // qwen3_moe, mixtral, olmoe and olmo2 use these fields too (mixtral_config.cpp, olmo2.cpp).
  const bool qwen3 = r.modelType == "qwen3" || r.modelType == "qwen3_moe";
  const bool qwen = r.modelType == "qwen2" || qwen3;
  const bool mixtral = r.modelType == "mixtral";
  const bool gemma = r.modelType == "gemma";
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16);
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 1024);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024);
  r.numKvHeads = c.integer({"num_key_value_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_key_value_heads", r.numKvHeads, "num_attention_heads", r.numHeads);
  // GemmaConfig's head_dim defaults to 256 whatever the width (Gemma 7B: 16 × 256 ≠ 3072).
  if (!gemma && !c.has("head_dim") && r.hiddenSize % r.numHeads != 0)
    c.fail("num_attention_heads (" + std::to_string(r.numHeads) + ") must divide hidden_size (" +
           std::to_string(r.hiddenSize) + ") when head_dim is not given");
  r.headDim = c.integer({"head_dim"}, 2, 4096, gemma ? 256 : r.hiddenSize / r.numHeads);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, gemma ? 8192 : 2048);
  // Olmo2Config's, OlmoeConfig's and MixtralConfig's default is 1e-5.
  const bool olmo = r.modelType == "olmo2" || r.modelType == "olmoe";
  r.rmsNormEps = c.number("rms_norm_eps", olmo || mixtral ? 1e-5 : 1e-6);
  if (!(r.rmsNormEps > 0) || r.rmsNormEps > 1)
    c.fail("\"rms_norm_eps\" must be a positive number below 1, got " +
           std::to_string(r.rmsNormEps));
  r.ropeTheta = c.number("rope_theta", mixtral ? 1e6 : 10000.0);
  // The frequencies are float32, as in transformers: a larger base overflows the conversion.
  if (!(r.ropeTheta > 1) || r.ropeTheta > kMaxRopeBase)
    c.fail("\"rope_theta\" must be above 1 and at most 1e30, got " + formatNumber(r.ropeTheta));
  r.partialRotaryFactor = c.number("partial_rotary_factor", 1.0);
  if (!(r.partialRotaryFactor > 0) || r.partialRotaryFactor > 1 || r.rotaryDim() < 2)
    c.fail(
        "\"partial_rotary_factor\" must leave an even number of rotary dimensions from 2 to "
        "head_dim, got " +
        std::to_string(r.partialRotaryFactor));
  if (r.headDim % 2 != 0)
    c.fail("\"head_dim\" must be even for rotary positions, got " + std::to_string(r.headDim));
  r.ropeScaling = readRopeScaling(c);
  r.hiddenAct = gemma ? gemmaActivation(c) : c.string("hidden_act", "silu");
  const bool attentionBias = c.flag("attention_bias", false);
  r.qkvBias = r.modelType == "qwen2" || attentionBias;
  r.outputBias = r.modelType != "qwen2" && attentionBias;
  r.mlpBias = !gemma && c.flag("mlp_bias", false);  // GemmaMLP has no biases
  r.qkNorm = qwen3;
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", gemma);
  r.normUnitOffset = r.scaleEmbeddings = gemma;
  // Mistral windows every layer when sliding_window is set; Qwen only with use_sliding_window,
  // and then only the layers from max_window_layers on (transformers' Qwen2Attention).
  const bool windowed = qwen ? c.flag("use_sliding_window", false)
                             : (r.modelType == "mistral" || mixtral) && c.has("sliding_window");
  if (windowed) {
    r.slidingWindow = c.integer({"sliding_window"}, 1, 1 << 24, 4096);
    r.slidingFromLayer = qwen ? c.integer({"max_window_layers"}, 0, 1 << 20, 28) : 0;
    if (r.slidingFromLayer >= r.numLayers) r.slidingWindow = 0;  // no layer is windowed
  }
  return r;
}

}  // namespace attnscope
