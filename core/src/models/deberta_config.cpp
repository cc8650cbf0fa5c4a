// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/deberta_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <vector>

namespace attnscope {
namespace {

std::string trimmedLower(std::string s) {
  const auto space = [](unsigned char ch) { return std::isspace(ch) != 0; };
  while (!s.empty() && space(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && space(static_cast<unsigned char>(s[start]))) ++start;
  s = s.substr(start);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

/// "a|b" as DebertaV2Config (and the encoder's norm_rel_ebd) split it: lower-cased, stripped.
std::vector<std::string> splitBars(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t bar = s.find('|', start);
    out.push_back(trimmedLower(s.substr(start, bar == std::string::npos ? bar : bar - start)));
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

}  // namespace

std::string DebertaConfig::describe() const {
  std::string pos = c2p && p2c ? "c2p|p2c" : c2p ? "c2p" : p2c ? "p2c" : "none";
  return std::to_string(numLayers) + " layers, " + std::to_string(numHeads) + " heads, hidden " +
         std::to_string(hiddenSize) + ", intermediate " + std::to_string(intermediateSize) +
         ", vocabulary " + std::to_string(vocabSize) + ", pos_att_type " + pos +
         (relativeAttention ? ", relative span " + std::to_string(span())
                            : ", no relative attention") +
         (convKernelSize > 0 ? ", conv_kernel_size " + std::to_string(convKernelSize) : "");
}

DebertaConfig DebertaConfig::fromReader(const ConfigReader& c) {
  const bool v1 = c.has("model_type") && c.json()["model_type"].is_string() &&
                  c.json()["model_type"].get<std::string>() == "deberta";
  return fromReader(c, v1 ? Flavour::V1 : Flavour::V2);
}

DebertaConfig DebertaConfig::fromReader(const ConfigReader& c, Flavour flavour) {
  DebertaConfig r;
  r.flavour = flavour;
  if (r.v1()) {  // transformers' DebertaConfig
    r.vocabSize = 50265;
    r.hiddenSize = 768;
    r.numLayers = 12;
    r.numHeads = 12;
    r.intermediateSize = 3072;
  }
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, r.vocabSize);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16, r.hiddenSize);
  r.embeddingSize = c.integer({"embedding_size"}, 1, 1 << 16, r.hiddenSize);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 256, r.numLayers);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  // v1's DisentangledSelfAttention always takes hidden_size / num_attention_heads.
  if (!r.v1() && c.has("attention_head_size") && !c.json()["attention_head_size"].is_null()) {
    const int hd = c.integer({"attention_head_size"}, 1, 1 << 16);
    if (hd != r.headDim())
      c.fail("\"attention_head_size\" (" + std::to_string(hd) +
             ") other than hidden_size / num_attention_heads (" + std::to_string(r.headDim()) +
             ") is not supported");
  }
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18, r.intermediateSize);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, r.maxPositions);
  r.typeVocabSize = c.integer({"type_vocab_size"}, 0, 1 << 16, r.typeVocabSize);
  if (c.has("pad_token_id") && !c.json()["pad_token_id"].is_null()) {
    r.padTokenId = c.integer({"pad_token_id"}, 0, 1 << 22);
    c.requireBelow("pad_token_id", r.padTokenId, "vocab_size", r.vocabSize);
  }
  r.hiddenAct = c.string("hidden_act", r.hiddenAct);
  r.layerNormEps = c.number("layer_norm_eps", r.layerNormEps);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_eps\" must be a positive number below 1, got " +
           formatNumber(r.layerNormEps));
  r.positionBiasedInput = c.flag("position_biased_input", true);
  r.relativeAttention = c.flag("relative_attention", false);
  // max_relative_positions < 1 means max_position_embeddings (DebertaV2Encoder).
  const int maxRel = c.integer({"max_relative_positions"}, -(1 << 24), 1 << 24, -1);
  r.maxRelativePositions = maxRel < 1 ? r.maxPositions : maxRel;
  if (r.v1() && c.has("talking_head") && !c.json()["talking_head"].is_null() &&
      c.flag("talking_head", false))
    c.fail(
        "\"talking_head\": DeBERTa's head_logits_proj and head_weights_proj, which mix the "
        "heads' scores and probabilities, are not supported");
  // v1's modules read none of position_buckets, share_att_key, norm_rel_ebd and conv_*.
  const int buckets = r.v1() ? -1 : c.integer({"position_buckets"}, -(1 << 24), 1 << 24, -1);
  r.positionBuckets = buckets > 0 ? buckets : -1;
  if (r.relativeAttention && r.positionBuckets > 0) {
    // make_log_bucket_position: mid = buckets // 2 and log((max_position - 1) / mid) divides.
    const int mid = r.positionBuckets / 2;
    if (mid < 1 || r.maxRelativePositions - 1 <= mid)
      c.fail("\"position_buckets\" (" + std::to_string(r.positionBuckets) +
             ") must be at least 2 and its half below max_relative_positions - 1 (" +
             std::to_string(r.maxRelativePositions - 1) + ") for the log buckets");
  }
  r.shareAttKey = !r.v1() && c.flag("share_att_key", false);
  if (!r.v1() && c.has("norm_rel_ebd") && !c.json()["norm_rel_ebd"].is_null()) {
    for (const std::string& s : splitBars(c.string("norm_rel_ebd", "none")))
      r.relEmbeddingNorm = r.relEmbeddingNorm || s == "layer_norm";
  }
  if (c.has("pos_att_type") && !c.json()["pos_att_type"].is_null()) {
    const nlohmann::json& p = c.json()["pos_att_type"];
    std::vector<std::string> types;
    if (p.is_string()) {
      types = splitBars(p.get<std::string>());
    } else if (p.is_array()) {
      for (const nlohmann::json& t : p) {
        if (!t.is_string()) c.fail("\"pos_att_type\" must list strings (\"c2p\", \"p2c\")");
        types.push_back(t.get<std::string>());  // a list is taken as written, as transformers does
      }
    } else {
      c.fail("\"pos_att_type\" must be a string (\"p2c|c2p\") or a list of strings");
    }
    for (const std::string& t : types) {
      r.c2p = r.c2p || t == "c2p";
      r.p2c = r.p2c || t == "p2c";
    }
    r.posAttTypes = static_cast<int>(types.size());
  }
  if (r.v1()) return r;
  const int conv = c.integer({"conv_kernel_size"}, -(1 << 16), 1 << 16, 0);
  if (conv > 0) {
    // ConvLayer pads (kernel_size - 1) // 2 on each side: an even kernel gives T - 1 outputs,
    // which transformers' mask does not fit either.
    if (conv % 2 == 0)
      c.fail("\"conv_kernel_size\" " + std::to_string(conv) +
             " must be odd (ConvLayer keeps the length only with an odd kernel)");
    r.convKernelSize = conv;
    r.convGroups = c.integer({"conv_groups"}, 1, 1 << 16, 1);
    c.requireDivides("conv_groups", r.convGroups, "hidden_size", r.hiddenSize);
    r.convAct = c.string("conv_act", r.convAct);
  }
  return r;
}

}  // namespace attnscope
