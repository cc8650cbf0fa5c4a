// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/phi3_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace attnscope {
namespace {

/// short_factor or long_factor: `n` positive numbers, one per rotary frequency.
std::vector<double> readFactors(const ConfigReader& s, const std::string& key, std::size_t n) {
  if (!s.has(key)) s.fail("missing \"" + key + "\" (longrope needs short_factor and long_factor)");
  const nlohmann::json& v = s.json()[key];
  if (!v.is_array() || v.size() != n)
    s.fail("\"" + key + "\" must list " + std::to_string(n) +
           " numbers (one per rotary frequency: rotary dims / 2), got " + v.dump().substr(0, 200));
  std::vector<double> out;
  for (const nlohmann::json& f : v) {
    const double d = f.is_number() ? f.get<double>() : 0;
    if (!(d > 0) || d > 1e9)
      s.fail("\"" + key + "\" must hold positive numbers, got " + f.dump().substr(0, 60));
    out.push_back(d);
  }
  return out;
}

}  // namespace

std::string Phi3Config::describe() const {
  return "phi3: " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads (" + std::to_string(numKvHeads) + " kv), hidden_size " +
         std::to_string(hiddenSize) + ", head_dim " + std::to_string(headDim) +
         ", intermediate_size " + std::to_string(intermediateSize) + ", vocab_size " +
         std::to_string(vocabSize);
}

Phi3Config Phi3Config::fromReader(const ConfigReader& c) {
  Phi3Config r;
  const std::string type = c.string("model_type", "phi3");
  if (type != "phi3") c.fail("\"model_type\" \"" + type + "\" is not phi3");
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, 32064);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16, 3072);
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18, 8192);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 1024, 32);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024, 32);
  r.numKvHeads = c.integer({"num_key_value_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_key_value_heads", r.numKvHeads, "num_attention_heads", r.numHeads);
  if (!c.has("head_dim"))
    c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  r.headDim = c.integer({"head_dim"}, 2, 4096, r.hiddenSize / r.numHeads);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, 4096);
  r.rmsNormEps = c.number("rms_norm_eps", 1e-5);
  if (!(r.rmsNormEps > 0) || r.rmsNormEps > 1)
    c.fail("\"rms_norm_eps\" must be a positive number below 1, got " + formatNumber(r.rmsNormEps));
  // transformers 5 writes rope_parameters (rope_theta inside); checkpoints rope_scaling.
  const ConfigReader rope = c.section(c.has("rope_scaling") ? "rope_scaling" : "rope_parameters");
  r.ropeTheta = rope.number("rope_theta", c.number("rope_theta", 10000.0));
  // The frequencies are float32, as in transformers: a larger base overflows the conversion.
  if (!(r.ropeTheta > 1) || r.ropeTheta > kMaxRopeBase)
    c.fail("\"rope_theta\" must be above 1 and at most 1e30, got " + formatNumber(r.ropeTheta));
  const double partial = c.number("partial_rotary_factor", 1.0);
  // int(head_dim * partial_rotary_factor), as Phi3's rotary and config validation compute it.
  r.rotaryDim = partial > 0 && partial <= 1 ? static_cast<int>(r.headDim * partial) : 0;
  if (r.rotaryDim < 2 || r.rotaryDim % 2 != 0)
    c.fail(
        "\"partial_rotary_factor\" must leave an even number of rotary dimensions from 2 to "
        "head_dim (" +
        std::to_string(r.headDim) + "), got " + formatNumber(partial));
  r.originalMaxPositions =
      c.integer({"original_max_position_embeddings"}, 1, 1 << 24,
                rope.integer({"original_max_position_embeddings"}, 1, 1 << 24, 4096));
  const std::string key = rope.has("rope_type") ? "rope_type" : "type";
  const std::string ropeType = rope.string(key, "default");
  // "su" is LongRoPE's first name; Phi3Config also renames the old "yarn" to longrope.
  if (ropeType == "longrope" || ropeType == "su" || ropeType == "yarn") {
    LongRopeConfig& l = r.longRope;
    l.enabled = true;
    const std::size_t n = static_cast<std::size_t>(r.rotaryDim / 2);
    l.shortFactor = readFactors(rope, "short_factor", n);
    l.longFactor = readFactors(rope, "long_factor", n);
    // transformers' _compute_longrope_parameters: the given attention_factor, else from the
    // context stretch max / original (rope_scaling.factor only when there is no original).
    if (rope.has("attention_factor")) {
      l.attentionFactor = rope.number("attention_factor", 1.0);
      if (!(l.attentionFactor > 0) || l.attentionFactor > 1e3)
        rope.fail("\"attention_factor\" must be a positive number up to 1000, got " +
                  formatNumber(l.attentionFactor));
    } else {
      const double factor =
          static_cast<double>(r.maxPositions) / static_cast<double>(r.originalMaxPositions);
      if (factor > 1.0) {
        if (r.originalMaxPositions < 2)
          c.fail("\"original_max_position_embeddings\" must be at least 2 with longrope");
        l.attentionFactor = std::sqrt(
            1.0 + std::log(factor) / std::log(static_cast<double>(r.originalMaxPositions)));
      }
    }
  } else if (ropeType != "default") {
    rope.fail("\"" + key + "\" \"" + ropeType +
              "\" is not supported by phi3; supported: default, "
              "longrope (su)");
  }
  r.hiddenAct = c.string("hidden_act", "silu");
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", false);
  // null or absent: no window (Phi-3-mini-4k: 2047).
  r.slidingWindow = c.integer({"sliding_window"}, 1, 1 << 24, 0);
  return r;
}

}  // namespace attnscope
