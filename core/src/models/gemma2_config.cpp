// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gemma2_config.h"

#include <nlohmann/json.hpp>

namespace attnscope {
namespace {

/// A soft cap: absent takes the config class's default, null means none (Gemma 3's default,
/// and how a Gemma 2 config turns it off), else a positive number.
double readSoftcap(const ConfigReader& c, const std::string& key, double fallback) {
  if (!c.json().contains(key)) return fallback;
  if (c.json()[key].is_null()) return 0;
  const double v = c.number(key, 0);
  if (!(v > 0) || v > 1e6)
    c.fail("\"" + key + "\" must be null or a number above 0 (at most 1e6), got " +
           c.json()[key].dump());
  return v;
}

/// transformers 5's rope_parameters, one object per layer type or one for all: its rope_theta
/// and its scaling, read as rope_scaling is.
void readRopeParameters(const ConfigReader& params, double* theta, RopeScalingConfig* scaling) {
  *theta = params.number("rope_theta", *theta);
  const ConfigReader wrapped(nlohmann::json{{"rope_scaling", params.json()}}, params.source());
  *scaling = readRopeScaling(wrapped);
}

/// layer_types when given (one "sliding_attention" or "full_attention" per layer), else the
/// config class's pattern: Gemma 2 slides on the even layers (0, 2, ...: transformers'
/// `not layer_idx % 2`), Gemma 3 on all but every sliding_window_pattern-th ((i + 1) % pattern).
std::vector<bool> readLayerTypes(const ConfigReader& c, int layers, bool gemma3) {
  std::vector<bool> sliding(static_cast<std::size_t>(layers));
  if (c.has("layer_types")) {
    const nlohmann::json& t = c.json()["layer_types"];
    if (!t.is_array() || t.size() != sliding.size())
      c.fail("\"layer_types\" must list one type for each of the " + std::to_string(layers) +
             " layers, got " + t.dump().substr(0, 200));
    for (std::size_t i = 0; i < sliding.size(); ++i) {
      const bool local = t[i] == "sliding_attention";
      if (!local && t[i] != "full_attention")
        c.fail("\"layer_types\"[" + std::to_string(i) +
               "] must be \"sliding_attention\" or \"full_attention\", got " + t[i].dump());
      sliding[i] = local;
    }
    return sliding;
  }
  const int pattern = gemma3 ? c.integer({"sliding_window_pattern"}, 1, 1 << 20, 6) : 2;
  for (int i = 0; i < layers; ++i)
    sliding[static_cast<std::size_t>(i)] = gemma3 ? (i + 1) % pattern != 0 : i % 2 == 0;
  return sliding;
}

}  // namespace

std::string Gemma2Config::describe() const {
  return modelType + ": " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads (" + std::to_string(numKvHeads) + " kv), hidden_size " +
         std::to_string(hiddenSize) + ", head_dim " + std::to_string(headDim) +
         ", intermediate_size " + std::to_string(intermediateSize) + ", vocab_size " +
         std::to_string(vocabSize);
}

Gemma2Config Gemma2Config::fromReader(const ConfigReader& root) {
  Gemma2Config r;
  r.modelType = root.string("model_type", "gemma2");
  // A gemma3 folder is Gemma 3's vision-language model: its text model is configured by
  // text_config (Gemma3TextConfig's defaults for what it leaves out) and its weights sit under
  // language_model (gemma2.cpp).
  const bool multimodal = r.modelType == "gemma3";
  if (multimodal && !root.has("text_config")) root.fail("a gemma3 config needs \"text_config\"");
  const ConfigReader c = multimodal ? root.section("text_config") : root;
  const bool gemma3 = multimodal || r.modelType == "gemma3_text";
  if (!gemma3 && r.modelType != "gemma2")
    root.fail("\"model_type\" \"" + r.modelType + "\" is not gemma2, gemma3_text or gemma3");
  if (c.flag("use_bidirectional_attention", false))
    c.fail(
        "\"use_bidirectional_attention\" (EmbeddingGemma) is not supported: Gemma 2 and 3 run "
        "as causal decoders");
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, gemma3 ? 262208 : 256000);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16, 2304);
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18, 9216);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 1024, 26);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024, 8);
  r.numKvHeads = c.integer({"num_key_value_heads"}, 1, 1024, 4);
  c.requireDivides("num_key_value_heads", r.numKvHeads, "num_attention_heads", r.numHeads);
  r.headDim = c.integer({"head_dim"}, 2, 4096, 256);
  if (r.headDim % 2 != 0)
    c.fail("\"head_dim\" must be even for rotary positions, got " + std::to_string(r.headDim));
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, gemma3 ? 131072 : 8192);
  r.rmsNormEps = c.number("rms_norm_eps", 1e-6);
  if (!(r.rmsNormEps > 0) || r.rmsNormEps > 1)
    c.fail("\"rms_norm_eps\" must be a positive number below 1, got " + formatNumber(r.rmsNormEps));
  r.ropeTheta = c.number("rope_theta", gemma3 ? 1e6 : 10000.0);
  r.ropeScaling = readRopeScaling(c);
  r.ropeLocalTheta = gemma3 ? c.number("rope_local_base_freq", 10000.0) : r.ropeTheta;
  if (c.has("rope_parameters")) {
    const ConfigReader p = c.section("rope_parameters");
    if (p.has("full_attention") || p.has("sliding_attention")) {
      if (p.has("full_attention"))
        readRopeParameters(p.section("full_attention"), &r.ropeTheta, &r.ropeScaling);
      if (p.has("sliding_attention"))
        readRopeParameters(p.section("sliding_attention"), &r.ropeLocalTheta, &r.ropeLocalScaling);
    } else {
      readRopeParameters(p, &r.ropeTheta, &r.ropeScaling);
      if (!gemma3) r.ropeLocalTheta = r.ropeTheta;
    }
  }
  if (!gemma3) r.ropeLocalScaling = r.ropeScaling;  // Gemma 2: one rotary for every layer
  // The frequencies are float32, as in transformers: a larger base overflows the conversion.
  for (const double theta : {r.ropeTheta, r.ropeLocalTheta}) {
    if (!(theta > 1) || theta > kMaxRopeBase)
      c.fail("\"rope_theta\" and \"rope_local_base_freq\" must be above 1 and at most 1e30, got " +
             formatNumber(theta));
  }
  r.hiddenAct = c.string("hidden_activation", "gelu_pytorch_tanh");
  r.attentionBias = c.flag("attention_bias", false);
  r.qkNorm = gemma3;
  // Both tie by default; a gemma3 folder says so at its top level, as transformers reads it.
  r.tieWordEmbeddings = (multimodal ? root : c).flag("tie_word_embeddings", true);
  r.queryPreAttnScalar = c.number("query_pre_attn_scalar", 256);
  if (!(r.queryPreAttnScalar > 0) || r.queryPreAttnScalar > 1e9)
    c.fail("\"query_pre_attn_scalar\" must be a positive number, got " +
           formatNumber(r.queryPreAttnScalar));
  r.attnSoftcap = readSoftcap(c, "attn_logit_softcapping", gemma3 ? 0 : 50.0);
  r.finalSoftcap = readSoftcap(c, "final_logit_softcapping", gemma3 ? 0 : 30.0);
  // null: no window (every layer global whatever its type).
  r.slidingWindow = c.json().contains("sliding_window") && c.json()["sliding_window"].is_null()
                        ? 0
                        : c.integer({"sliding_window"}, 1, 1 << 24, 4096);
  r.slidingLayers = readLayerTypes(c, r.numLayers, gemma3);
  return r;
}

}  // namespace attnscope
