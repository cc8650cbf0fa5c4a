// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/state_dict.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "attnscope/error.h"
#include "attnscope/float_tensor.h"
#include "nn/packed_weights.h"
#include "runtime/torch_convert.h"

namespace attnscope {

void initialiseLikePyTorch(torch::nn::Module& module, at::Generator gen) {
  torch::NoGradGuard noGrad;
  for (const auto& child : module.modules(/*include_self=*/true)) {
    if (auto* linear = child->as<torch::nn::LinearImpl>()) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(linear->weight.size(1)));
      // kaiming_uniform_(a=√5) gives the same ±1/√fan_in bound for weights.
      linear->weight.uniform_(-bound, bound, gen);
      if (linear->bias.defined()) linear->bias.uniform_(-bound, bound, gen);
    } else if (auto* ln = child->as<torch::nn::LayerNormImpl>()) {
      if (ln->weight.defined()) ln->weight.fill_(1.0);
      if (ln->bias.defined()) ln->bias.zero_();
    } else if (auto* emb = child->as<torch::nn::EmbeddingImpl>()) {
      emb->weight.normal_(0.0, 1.0, gen);
    }
  }
}

std::vector<NamedTensor> stateDict(const torch::nn::Module& module) {
  std::vector<NamedTensor> out;
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    out.push_back({p.key(), toFloatTensor(floatWeight(p.value()))});
  return out;
}

void loadStateDict(torch::nn::Module& module, const std::vector<NamedTensor>& weights,
                   const std::vector<std::string>& ignoredNames) {
  torch::NoGradGuard noGrad;
  auto params = module.named_parameters(/*recurse=*/true);
  std::set<std::string> seen;
  for (const NamedTensor& w : weights) {
    if (std::find(ignoredNames.begin(), ignoredNames.end(), w.name) != ignoredNames.end()) continue;
    torch::Tensor* target = params.find(w.name);
    if (!target)
      throw Error(ErrorKind::Format, "unexpected tensor '" + w.name + "' in the weights");
    const std::vector<int64_t> want(target->sizes().begin(), target->sizes().end());
    if (want != w.tensor.shape) {
      throw Error(ErrorKind::Format, "tensor '" + w.name + "' has shape " + w.tensor.shapeString() +
                                         " but the model expects " +
                                         FloatTensor::formatShape(want));
    }
    target->copy_(toTorch(w.tensor).to(target->device()));
    seen.insert(w.name);
  }
  for (const auto& p : params) {
    if (!seen.count(p.key()))
      throw Error(ErrorKind::Format, "missing tensor '" + p.key() + "' in the weights");
  }
}

uint64_t parameterBytes(const torch::nn::Module& module) {
  uint64_t n = 0;
  for (const auto& p : module.parameters())
    n += static_cast<uint64_t>(p.numel()) * p.element_size();
  return n;
}

}  // namespace attnscope
