// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/logit_lens.h"

#include <algorithm>
#include <set>

#include "attnscope/error.h"

namespace attnscope {

void LogitLens::check(TransformerFamily& family, const ModelInfo& info, const torch::Device& dev) {
  const std::string need = "the logit lens needs a causal language model with a head; ";
  if (!info.causal || info.encoderDecoder())
    throw Error(ErrorKind::InvalidArgument,
                need + info.name + " is " +
                    (info.encoderDecoder() ? "an encoder-decoder" : "not causal (an encoder)"));
  // The families answer logits() with an undefined tensor when the checkpoint has no head
  // (GPT2Model-style bodies whose embeddings are not tied): one row shows it before any layer runs.
  const torch::Tensor probe = family.logits(
      torch::zeros({1, static_cast<int64_t>(info.dModel)}, torch::TensorOptions().device(dev)));
  if (!probe.defined())
    throw Error(
        ErrorKind::InvalidArgument,
        need + info.name + " has no language-model head (the checkpoint holds the body only)");
}

LogitLens::LogitLens(TransformerFamily& family, const std::vector<std::vector<Token>>& ids,
                     int64_t T, int64_t layers, int k)
    : m_family(family),
      m_tokens(ids),
      m_B(static_cast<int64_t>(ids.size())),
      m_T(T),
      m_L(layers),
      m_k(k),
      m_ids({layers, m_B, T, k}),
      m_probs({layers, m_B, T, k}),
      m_nextProbs({layers, m_B, T}),
      m_entropy({layers, m_B, T}) {
  m_next = torch::full({m_B, T}, -1, torch::kLong);
  for (int64_t b = 0; b < m_B; ++b) {
    const auto& item = ids[static_cast<std::size_t>(b)];
    for (std::size_t t = 0; t + 1 < item.size(); ++t)
      m_next[b][static_cast<int64_t>(t)] = item[t + 1].id;
  }
  std::fill(m_ids.data.begin(), m_ids.data.end(), -1.0f);
  std::fill(m_nextProbs.data.begin(), m_nextProbs.data.end(), -1.0f);
}

void LogitLens::addLayer(int64_t l, const torch::Tensor& hidden) {
  const int64_t C = hidden.size(2), N = m_B * m_T;
  // Every row, padding included, goes through the head: padded rows are overwritten below.
  const torch::Tensor normed = m_family.finalNorm(hidden).reshape({N, C});
  const int64_t* next = m_next.data_ptr<int64_t>();
  float* ids = m_ids.data.data() + l * N * m_k;
  float* probs = m_probs.data.data() + l * N * m_k;
  float* nextProbs = m_nextProbs.data.data() + l * N;
  float* entropy = m_entropy.data.data() + l * N;
  int64_t blockRows = 1;  // one row first: it tells the vocabulary size V, so the block size
  for (int64_t row = 0; row < N;) {
    const int64_t block = std::min(N - row, blockRows);
    const torch::Tensor p =
        torch::softmax(m_family.logits(normed.narrow(0, row, block)).to(torch::kFloat), -1)
            .to(torch::kCPU)
            .contiguous();  // [block, V]
    const int64_t V = p.size(1);
    const auto top = p.topk(std::min<int64_t>(m_k, V), -1);
    const torch::Tensor values = std::get<0>(top).contiguous();
    const torch::Tensor indices = std::get<1>(top).to(torch::kFloat).contiguous();
    const int64_t kk = values.size(1);
    // -Σ p ln p over the whole vocabulary, 0 ln 0 = 0.
    const torch::Tensor h = torch::special::entr(p).sum(-1).to(torch::kDouble).contiguous();
    const double* hs = h.data_ptr<double>();
    const float* v = values.data_ptr<float>();
    const float* ix = indices.data_ptr<float>();
    const float* all = p.data_ptr<float>();
    for (int64_t i = 0; i < block; ++i) {
      const int64_t r = row + i;
      std::copy_n(ix + i * kk, kk, ids + r * m_k);
      std::copy_n(v + i * kk, kk, probs + r * m_k);
      if (next[r] >= 0 && next[r] < V) nextProbs[r] = all[i * V + next[r]];
      entropy[r] = static_cast<float>(hs[i]);
    }
    row += block;
    blockRows = std::max<int64_t>(1, kBlockValues / V);
  }
  // Padded positions: nothing there to predict.
  for (int64_t b = 0; b < m_B; ++b) {
    const auto real = static_cast<int64_t>(m_tokens[static_cast<std::size_t>(b)].size());
    for (int64_t t = real; t < m_T; ++t) {
      std::fill_n(ids + (b * m_T + t) * m_k, m_k, -1.0f);
      std::fill_n(probs + (b * m_T + t) * m_k, m_k, 0.0f);
      entropy[b * m_T + t] = 0.0f;
    }
  }
}

void LogitLens::moveInto(AttentionResult& r) {
  std::set<int64_t> seen;
  for (const float id : m_ids.data) {
    if (id >= 0) seen.insert(static_cast<int64_t>(id));
  }
  r.logitLensTokens.clear();
  for (const int64_t id : seen) r.logitLensTokens.push_back(m_family.vocabularyToken(id));
  r.logitLensIds = std::move(m_ids);
  r.logitLensProbs = std::move(m_probs);
  r.logitLensNext = std::move(m_nextProbs);
  r.logitLensEntropy = std::move(m_entropy);
}

}  // namespace attnscope
