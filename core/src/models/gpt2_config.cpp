// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt2_config.h"

#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "io/file_io.h"
#include "io/safetensors_checkpoint.h"
#include "io/strict_json.h"

namespace attnscope {
namespace {

[[noreturn]] void formatError(const std::string& source, const std::string& what) {
  throw Error(ErrorKind::Format, source + ": " + what);
}

// Stated ranges, far above every published GPT-2 (48 layers, 25 heads, n_embd 1600, 1024
// positions, 50257 tokens) and far below what could overflow an estimate.
constexpr int64_t kMaxLayers = 1024, kMaxHeads = 1024, kMaxEmbd = 65536, kMaxPositions = 1 << 20,
                  kMaxVocab = 1 << 22, kMaxInner = 1 << 18;

int positiveInt(const nlohmann::json& j, const char* key, const std::string& source, int fallback,
                bool required, int64_t max) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) formatError(source, std::string("missing \"") + key + "\"");
    return fallback;
  }
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > max) {
    formatError(source, std::string("\"") + key + "\" must be a positive whole number up to " +
                            std::to_string(max) + ", got " + v.dump());
  }
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

Gpt2Config Gpt2Config::fromFile(const std::string& path) {
  return fromJson(readFile(path, kMaxConfigBytes), path);
}

Gpt2Config Gpt2Config::fromJson(const std::string& text, const std::string& source) {
  // Strict: a key given twice is refused, not resolved to its last value.
  const nlohmann::json j = parseStrictJson(text, source);
  if (!j.is_object()) formatError(source, "not a JSON object");
  return fromReader(ConfigReader(j, source));
}

Gpt2Config Gpt2Config::fromReader(const ConfigReader& reader) {
  // GPT-2's own messages ("a positive whole number up to ..."), which its tests and users know,
  // rather than ConfigReader's.
  const nlohmann::json& j = reader.json();
  const std::string& source = reader.source();
  if (j.contains("model_type") && j["model_type"].is_string() && j["model_type"] != "gpt2") {
    formatError(source, "model_type is \"" + j["model_type"].get<std::string>() +
                            "\"; only GPT-2 (\"gpt2\") folders can be opened");
  }
  Gpt2Config c;
  c.nLayer = positiveInt(j, "n_layer", source, 0, true, kMaxLayers);
  c.nHead = positiveInt(j, "n_head", source, 0, true, kMaxHeads);
  c.nEmbd = positiveInt(j, "n_embd", source, 0, true, kMaxEmbd);
  c.vocabSize = positiveInt(j, "vocab_size", source, 0, true, kMaxVocab);
  // Older configs give the context as n_ctx; n_positions wins when both are there.
  const int nCtx = positiveInt(j, "n_ctx", source, 0, false, kMaxPositions);
  c.nPositions = positiveInt(j, "n_positions", source, nCtx, nCtx == 0, kMaxPositions);
  if (j.contains("layer_norm_epsilon") && !j["layer_norm_epsilon"].is_null()) {
    const nlohmann::json& eps = j["layer_norm_epsilon"];
    if (!eps.is_number() || eps.get<double>() <= 0) {
      formatError(source, "\"layer_norm_epsilon\" must be a positive number, got " + eps.dump());
    }
    c.layerNormEpsilon = eps.get<double>();
  }
  if (c.nEmbd % c.nHead != 0) {
    formatError(source, "n_head (" + std::to_string(c.nHead) + ") must divide n_embd (" +
                            std::to_string(c.nEmbd) + ")");
  }
  if (j.contains("activation_function") && !j["activation_function"].is_null()) {
    if (!j["activation_function"].is_string())
      formatError(source, "\"activation_function\" must be a string");
    c.activation =
        j["activation_function"].get<std::string>();  // checked by the model (nn/activation)
  }
  c.nInner = positiveInt(j, "n_inner", source, 0, false, kMaxInner);
  const auto flag = [&](const char* key, bool fallback) {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    if (!j[key].is_boolean())
      formatError(source, std::string("\"") + key + "\" must be true or false");
    return j[key].get<bool>();
  };
  c.scaleAttnWeights = flag("scale_attn_weights", true);
  c.scaleAttnByInverseLayerIdx = flag("scale_attn_by_inverse_layer_idx", false);
  return c;
}

uint64_t Gpt2Config::parameterCount() const {
  const uint64_t C = static_cast<uint64_t>(nEmbd), I = static_cast<uint64_t>(innerDim());
  const uint64_t perLayer = 4 * C + (C * 3 * C + 3 * C) + (C * C + C) + (C * I + I) + (I * C + C);
  return static_cast<uint64_t>(vocabSize) * C + static_cast<uint64_t>(nPositions) * C +
         static_cast<uint64_t>(nLayer) * perLayer + 2 * C;
}

void Gpt2Config::checkShapes(const SafetensorsCheckpoint& ck, const std::string& source) const {
  // Keys with or without GPT2LMHeadModel's "transformer." prefix (as wpe or wte has it); Conv1D
  // weights are [in, out].
  const bool prefixed = ck.find("transformer.wpe.weight") || ck.find("transformer.wte.weight");
  const std::vector<std::string> prefixes = {prefixed ? "transformer." : ""};
  const std::string why = source + " (n_layer " + std::to_string(nLayer) + ", n_embd " +
                          std::to_string(nEmbd) + ", n_positions " + std::to_string(nPositions) +
                          ", vocab_size " + std::to_string(vocabSize) + ")";
  const int64_t C = nEmbd;
  // A tied checkpoint may store the token embedding only as lm_head.weight.
  if (ck.find("wte.weight", prefixes) || !ck.find("lm_head.weight"))
    ck.requireShape("wte.weight", {vocabSize, C}, why, prefixes);
  else
    ck.requireShape("lm_head.weight", {vocabSize, C}, why);
  ck.requireShape("wpe.weight", {nPositions, C}, why, prefixes);
  const std::string last = "h." + std::to_string(nLayer - 1) + ".";
  ck.requireShape(last + "attn.c_attn.weight", {C, 3 * C}, why, prefixes);
  ck.requireShape(last + "mlp.c_fc.weight", {C, innerDim()}, why, prefixes);
  ck.requireAbsent("h." + std::to_string(nLayer) + ".ln_1.weight", why, prefixes);
}

}  // namespace attnscope
