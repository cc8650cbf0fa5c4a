// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt2_weights.h"

#include <cstring>
#include <set>

#include "attnscope/error.h"
#include "attnscope/float_tensor.h"

namespace attnscope {
namespace {

constexpr const char* kPrefix = "transformer.";

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Tensors a GPT-2 checkpoint may hold that are not parameters of ours.
bool ignored(const std::string& name) {
  return endsWith(name, ".attn.bias") || endsWith(name, ".attn.masked_bias") ||
         name == "lm_head.weight";
}

bool isFloat(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F64;
}

}  // namespace

void loadGpt2Weights(torch::nn::Module& module, const SafetensorsCheckpoint& checkpoint,
                     const std::string& configSummary) {
  torch::NoGradGuard noGrad;
  const std::string prefix = checkpoint.find(std::string(kPrefix) + "wte.weight") ? kPrefix : "";
  std::set<std::string> used;
  for (auto& p : module.named_parameters(/*recurse=*/true)) {
    const std::string key = prefix + p.key();
    const SafetensorsCheckpoint::Entry* e = checkpoint.find(key);
    if (!e) {
      throw Error(ErrorKind::Format, "missing tensor '" + key + "' in the weights (" + configSummary + ")");
    }
    const TensorInfo& info = *e->info;
    if (!isFloat(info.dtype)) {
      throw Error(ErrorKind::Format, "tensor '" + key + "' in " + e->fileName + " has dtype " +
                                         toString(info.dtype) + "; weights must be F32, F16 or BF16");
    }
    torch::Tensor& target = p.value();
    const std::vector<int64_t> want(target.sizes().begin(), target.sizes().end());
    if (info.shape != want) {
      throw Error(ErrorKind::Format, "tensor '" + key + "' in " + e->fileName + " has shape " +
                                         FloatTensor::formatShape(info.shape) + " but config.json (" +
                                         configSummary + ") implies " + FloatTensor::formatShape(want));
    }
    FloatTensor data = e->file->readFloat(key);
    std::memcpy(target.data_ptr<float>(), data.data.data(), data.data.size() * sizeof(float));
    used.insert(key);
  }
  for (const auto& [name, entry] : checkpoint.entries()) {
    if (used.count(name)) continue;
    const std::string bare = name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name;
    if (ignored(bare) || ignored(name)) continue;
    throw Error(ErrorKind::Format, "unexpected tensor '" + name + "' in " + entry.fileName +
                                       ": not part of a GPT-2 with " + configSummary);
  }
}

}  // namespace attnscope
