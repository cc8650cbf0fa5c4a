// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt2_config.h"

#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "io/file_io.h"

namespace attnscope {
namespace {

[[noreturn]] void formatError(const std::string& source, const std::string& what) {
  throw Error(ErrorKind::Format, source + ": " + what);
}

int positiveInt(const nlohmann::json& j, const char* key, const std::string& source, int fallback,
                bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) formatError(source, std::string("missing \"") + key + "\"");
    return fallback;
  }
  const nlohmann::json& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (1 << 30)) {
    formatError(source,
                std::string("\"") + key + "\" must be a positive whole number, got " + v.dump());
  }
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

Gpt2Config Gpt2Config::fromFile(const std::string& path) { return fromJson(readFile(path), path); }

Gpt2Config Gpt2Config::fromJson(const std::string& text, const std::string& source) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) formatError(source, "not a JSON object");
  if (j.contains("model_type") && j["model_type"].is_string() && j["model_type"] != "gpt2") {
    formatError(source, "model_type is \"" + j["model_type"].get<std::string>() +
                            "\"; only GPT-2 (\"gpt2\") folders can be opened");
  }
  Gpt2Config c;
  c.nLayer = positiveInt(j, "n_layer", source, 0, true);
  c.nHead = positiveInt(j, "n_head", source, 0, true);
  c.nEmbd = positiveInt(j, "n_embd", source, 0, true);
  c.vocabSize = positiveInt(j, "vocab_size", source, 0, true);
  // Older configs give the context as n_ctx; n_positions wins when both are there.
  const int nCtx = positiveInt(j, "n_ctx", source, 0, false);
  c.nPositions = positiveInt(j, "n_positions", source, nCtx, nCtx == 0);
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
  c.nInner = positiveInt(j, "n_inner", source, 0, false);
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

}  // namespace attnscope
