// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace attnscope {

/// One architecture a Hugging Face folder can hold, keyed by config.json's "model_type".
struct Architecture {
  std::string modelType;    // "gpt2"
  std::string family;       // the family file that runs it: "gpt2"
  std::string description;  // "GPT-2 (causal decoder, learned positions, GELU MLP)"
};

/// Every model_type openModel opens from a folder, in registry order.
const std::vector<Architecture>& supportedArchitectures();
/// The entry for a model_type, or nullptr.
const Architecture* findArchitecture(const std::string& modelType);
/// "gpt2, ..." for messages.
std::string supportedModelTypes();

/// GGUF files (llama.cpp's format, recognised by their magic bytes whatever their name): the
/// general.architecture values openModel maps onto a family ("llama, qwen2, qwen3") and the
/// tensor types it reads ("F32, F16, BF16, Q8_0, ..."), kept as stored and dequantized per layer.
std::string ggufArchitectures();
std::string ggufTensorTypes();

}  // namespace attnscope
