// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/predictions.h"

#include <algorithm>
#include <utility>

#include "runtime/batch_input.h"

namespace attnscope {

std::vector<Prediction> topPredictions(const torch::Tensor& logits, int k,
                                       const TransformerFamily& family) {
  const torch::Tensor probs = torch::softmax(logits.to(torch::kCPU, torch::kFloat), -1);  // [V]
  const auto top = probs.topk(std::min<int64_t>(k, probs.size(0)));
  const torch::Tensor values = std::get<0>(top), indices = std::get<1>(top);
  std::vector<Prediction> out;
  for (int64_t i = 0; i < values.size(0); ++i) {
    Prediction p;
    p.token = family.vocabularyToken(indices[i].item<int64_t>());
    p.probability = values[i].item<float>();
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::vector<Prediction>> nextTokenPredictions(const torch::Tensor& hidden,
                                                          const std::vector<int>& lengths,
                                                          TransformerFamily& family) {
  std::vector<std::vector<Prediction>> out;
  for (int64_t b = 0; b < hidden.size(0); ++b) {
    const torch::Tensor logits = family.logits(hidden[b][lengths[static_cast<std::size_t>(b)] - 1]);
    if (!logits.defined()) break;
    out.push_back(topPredictions(logits, kTopPredictions, family));
  }
  return out;
}

void addMaskFills(AttentionResult& r, const std::vector<Token>& tokens, const torch::Tensor& hidden,
                  TransformerFamily& family, const std::string& modelName) {
  const auto maskId = family.maskTokenId();
  if (!maskId) return;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t].id != *maskId) continue;
    const torch::Tensor fill = family.maskLogits(hidden[static_cast<int64_t>(t)]);
    if (!fill.defined()) {
      r.notices.push_back(modelName + " has no masked-language-model head: it cannot fill " +
                          tokens[t].label + " (the checkpoint holds the encoder only)");
      return;
    }
    r.maskFills.push_back({static_cast<int>(t), topPredictions(fill, kTopPredictions, family)});
  }
}

void addLogits(AttentionResult& r, const torch::Tensor& hidden, const std::vector<int>& lengths,
               TransformerFamily& family, uint64_t budgetBytes, const std::string& modelName) {
  const int64_t B = hidden.size(0), T = hidden.size(1);
  FloatTensor out;
  for (int64_t b = 0; b < B; ++b) {
    const torch::Tensor h = hidden[b].narrow(0, 0, lengths[static_cast<std::size_t>(b)]);
    torch::Tensor logits = family.logits(h);
    if (!logits.defined()) logits = family.maskLogits(h);
    if (!logits.defined()) return;  // no head (the toy layer, a bare encoder): nothing to keep
    logits = logits.to(torch::kCPU, torch::kFloat).contiguous();  // [n, V]
    const int64_t V = logits.size(1);
    if (out.empty()) {
      const uint64_t bytes = static_cast<uint64_t>(B * T * V) * sizeof(float);
      if (bytes > budgetBytes) {
        r.notices.push_back("the logits (" + std::to_string(B) + " x " + std::to_string(T) + " x " +
                            std::to_string(V) + " floats, " + formatBytes(bytes) + ") of " +
                            modelName +
                            " were not kept: they would pass the memory limit; raise it to keep "
                            "them");
        return;
      }
      out = FloatTensor({B, T, V});
    }
    std::copy_n(logits.data_ptr<float>(), logits.numel(), out.data.data() + b * T * V);
  }
  r.logits = std::move(out);
}

}  // namespace attnscope
