// SPDX-License-Identifier: GPL-3.0-or-later
// What a trained tiny GPT is measured and shown by: validation loss and samples.
#include <algorithm>

#include "attnscope/error.h"
#include "attnscope/tiny_gpt.h"
#include "models/tiny_gpt_state.h"
#include "nn/attention_mask.h"
#include "nn/toy_embedding.h"

namespace attnscope {

double TinyGpt::validationLoss(const std::string& text, int maxWindows) const {
  const std::vector<int32_t> ids = m_state->encodeKnown(text);
  const int64_t block = m_state->config.blockSize;
  const int64_t windows = (static_cast<int64_t>(ids.size()) - 1) / block;
  if (windows <= 0) {
    throw Error(ErrorKind::InvalidArgument,
                "the validation text is too short: it needs more than " + std::to_string(block) +
                    " known characters");
  }
  const int64_t use = maxWindows > 0 ? std::min<int64_t>(windows, maxWindows) : windows;
  std::lock_guard<std::mutex> lock(m_state->mutex);
  torch::NoGradGuard noGrad;
  m_state->module->to(torch::kCPU);
  m_state->module->eval();
  const torch::Tensor all = torch::from_blob(const_cast<int32_t*>(ids.data()),
                                             {static_cast<int64_t>(ids.size())}, torch::kInt);
  const torch::Tensor mask = causalMask(block);
  double total = 0;
  int64_t count = 0;
  const int64_t chunk = 64;
  for (int64_t w0 = 0; w0 < use; w0 += chunk) {
    std::vector<torch::Tensor> xs, ys;
    for (int64_t w = w0; w < std::min(use, w0 + chunk); ++w) {
      const int64_t start = (w * windows / use) * block;  // evenly spread windows
      xs.push_back(all.narrow(0, start, block));
      ys.push_back(all.narrow(0, start + 1, block));
    }
    const torch::Tensor x = torch::stack(xs).to(torch::kLong),
                        y = torch::stack(ys).to(torch::kLong);
    const torch::Tensor logits = m_state->module->forward(x, mask);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}), y.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    total += loss.item<double>();
    count += y.numel();
  }
  return total / static_cast<double>(count);
}

std::string TinyGpt::sample(const std::string& prompt, int tokens, uint64_t seed) const {
  if (tokens < 0) throw Error(ErrorKind::InvalidArgument, "tokens must not be negative");
  std::vector<int64_t> ids;
  for (const Token& t : m_state->tokenize(prompt)) ids.push_back(t.id);
  if (ids.empty()) ids.push_back(0);
  const int64_t block = m_state->config.blockSize;
  at::Generator gen = seededGenerator(seed);
  std::string out;
  std::lock_guard<std::mutex> lock(m_state->mutex);
  torch::NoGradGuard noGrad;
  m_state->module->to(torch::kCPU);
  m_state->module->eval();
  for (int i = 0; i < tokens; ++i) {
    const int64_t n = std::min<int64_t>(block, static_cast<int64_t>(ids.size()));
    std::vector<int64_t> window(ids.end() - n, ids.end());
    const torch::Tensor x = torch::from_blob(window.data(), {1, n}, torch::kLong).clone();
    const torch::Tensor logits = m_state->module->forward(x, causalMask(n));
    const torch::Tensor probs = torch::softmax(logits[0][n - 1], -1);
    const int64_t next = torch::multinomial(probs, 1, false, gen).item<int64_t>();
    ids.push_back(next);
    out += m_state->vocab[static_cast<std::size_t>(next)];
  }
  return out;
}

}  // namespace attnscope
