// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/group_writer.h"

#include <utility>

#include "attnscope/error.h"
#include "runtime/batch_input.h"

namespace attnscope {
namespace {

// Copies one layer's kept queries or keys ([B, H, T, hd]) into the result's [L, B, H, T, hd],
// allocated on the first layer from the shape scaledDotProduct saw (head_dim is the family's), and
// zeroes the rows of padding. False when the layer kept none (its attention did not go through
// scaledDotProduct) or kept another shape than layer 0.
bool keepLayer(FloatTensor& out, const torch::Tensor& t, int64_t layer, int64_t layers,
               const std::vector<int>& lengths) {
  if (!t.defined() || t.dim() != 4) return false;
  if (out.empty()) {
    out = FloatTensor({layers, t.size(0), t.size(1), t.size(2), t.size(3)});
  } else if (out.dim(1) != t.size(0) || out.dim(2) != t.size(1) || out.dim(3) != t.size(2) ||
             out.dim(4) != t.size(3)) {
    return false;
  }
  torch::Tensor dst = torch::from_blob(out.data.data(),
                                       {layers, t.size(0), t.size(1), t.size(2), t.size(3)})[layer];
  dst.copy_(t);
  zeroPaddedQueries(dst, lengths, 0, 2);
  return true;
}

}  // namespace

GroupWriter::GroupWriter(AttentionGroup& g, int64_t L, int64_t B, int64_t H, int64_t Tq, int64_t Tk,
                         const RunRequest& request, const torch::Device& dev,
                         const std::vector<int>& keptLayers, bool keepQueryKey,
                         std::vector<std::string>* notices, std::string modelName,
                         const std::vector<std::string>& scoreTerms)
    : m_group(&g),
      m_direct(dev.is_cpu()),
      m_dev(dev),
      m_shape({B, H, Tq, Tk}),
      m_layers(L),
      m_keepQueryKey(keepQueryKey),
      m_notices(notices),
      m_modelName(std::move(modelName)) {
  m_slot.assign(static_cast<std::size_t>(L), -1);
  int64_t kept = L;
  if (keptLayers.empty()) {
    for (int64_t l = 0; l < L; ++l) m_slot[static_cast<std::size_t>(l)] = l;
  } else {
    kept = static_cast<int64_t>(keptLayers.size());
    for (std::size_t i = 0; i < keptLayers.size(); ++i)
      m_slot[static_cast<std::size_t>(keptLayers[i])] = static_cast<int64_t>(i);
    g.keptLayers = keptLayers;
    g.modelLayers = static_cast<int>(L);
  }
  if (request.attentionOnDemand) {
    // finish() hands each kept layer's tensors over; nothing T × T is allocated.
    m_source = std::make_shared<OnDemandAttention>(kept, B, H, Tq, Tk, g.kvHeads);
    g.source = m_source;
    if (request.keepValueNorms) {
      g.valueNorms = FloatTensor({L, B, H, Tk});
      m_valueNorms = torch::from_blob(g.valueNorms.data.data(), {L, B, H, Tk});
    }
    return;
  }
  // Every element is written by the layers (the padded queries' rows by finish()).
  g.attention = FloatTensor::uninitialized({kept, B, H, Tq, Tk});
  m_attention = torch::from_blob(g.attention.data.data(), {kept, B, H, Tq, Tk});
  if (request.keepScores) {
    g.scores = FloatTensor::uninitialized({kept, B, H, Tq, Tk});
    m_scores = torch::from_blob(g.scores.data.data(), {kept, B, H, Tq, Tk});
  }
  for (const std::string& name : scoreTerms) {
    // Zeroed: the layers write the real cells, finish() keeps padding at 0.
    g.scoreTerms.push_back({name, FloatTensor({kept, B, H, Tq, Tk})});
    m_terms.push_back(
        torch::from_blob(g.scoreTerms.back().values.data.data(), {kept, B, H, Tq, Tk}));
  }
  if (request.keepValueNorms) {
    g.valueNorms = FloatTensor({L, B, H, Tk});
    m_valueNorms = torch::from_blob(g.valueNorms.data.data(), {L, B, H, Tk});
  }
}

AttentionBuffers GroupWriter::buffers(int64_t l) {
  AttentionBuffers b;
  b.scoresUnused = true;
  if (m_source) {
    // A layer that is not kept is computed the same way (no T × T buffer) and its part dropped.
    m_queryKey = KeptQueryKey();
    b.onDemand = true;
    b.queryKey = &m_queryKey;
    return b;
  }
  if (!m_attention.defined()) return b;
  const auto deviceBuffer = [&] {
    return torch::empty(m_shape, torch::TensorOptions().device(m_dev));
  };
  const int64_t at = m_slot[static_cast<std::size_t>(l)];
  if (at < 0) {
    if (!m_dropped.defined()) m_dropped = deviceBuffer();
    b.attention = m_dropped;
  } else {
    b.attention = m_direct ? m_attention[at] : deviceBuffer();
    if (m_scores.defined()) b.scores = m_direct ? m_scores[at] : deviceBuffer();
  }
  b.scoresUnused = !b.scores.defined();
  m_queryKey = KeptQueryKey();
  if (m_keepQueryKey) b.queryKey = &m_queryKey;
  return b;
}

bool GroupWriter::finalOnceWritten(int64_t l, const std::vector<int>& queryLengths) const {
  if (!m_attention.defined() || !m_direct || m_slot[static_cast<std::size_t>(l)] < 0) return false;
  for (const int n : queryLengths)
    if (n != m_shape[2]) return false;
  return true;
}

torch::Tensor GroupWriter::valueNorms() const {
  return m_valueNorms.defined() ? torch::full({m_shape[0], m_shape[1], m_shape[3]}, -1.0f,
                                              torch::TensorOptions().device(m_dev))
                                : torch::Tensor();
}

std::vector<torch::Tensor> GroupWriter::scoreTerms(int64_t l) const {
  std::vector<torch::Tensor> out;
  const int64_t at = m_slot.empty() ? -1 : m_slot[static_cast<std::size_t>(l)];
  if (at < 0) return out;
  for (const torch::Tensor& t : m_terms)
    out.push_back(m_direct ? t[at] : torch::zeros(m_shape, torch::TensorOptions().device(m_dev)));
  return out;
}

void GroupWriter::finish(int64_t l, const AttentionBuffers& b, const torch::Tensor& valueNorms,
                         const std::vector<int>& queryLengths, const std::vector<int>& keyLengths,
                         const std::vector<torch::Tensor>& scoreTerms) {
  if (m_source) {
    finishOnDemand(l, valueNorms, queryLengths, keyLengths);
    return;
  }
  if (!m_attention.defined()) return;
  if (const int64_t at = m_slot[static_cast<std::size_t>(l)];
      at >= 0 && scoreTerms.size() == m_terms.size()) {
    for (std::size_t t = 0; t < m_terms.size(); ++t) {
      torch::Tensor dst = m_terms[t][at];
      if (!m_direct) dst.copy_(scoreTerms[t]);
      zeroPaddedQueries(dst, queryLengths, 0, 2);
      const int64_t Tk = m_shape[3];
      for (std::size_t i = 0; i < keyLengths.size(); ++i)
        dst[static_cast<int64_t>(i)].narrow(2, keyLengths[i], Tk - keyLengths[i]).zero_();
    }
  }
  keepValueNorms(l, valueNorms, keyLengths);
  if (m_keepQueryKey) keepQueryKey(l, queryLengths, keyLengths);
  const int64_t at = m_slot[static_cast<std::size_t>(l)];
  if (at < 0) return;
  if (!m_direct) {
    m_attention[at].copy_(b.attention);
    if (m_scores.defined()) m_scores[at].copy_(b.scores);
  }
  torch::Tensor layerAttention = m_attention[at];
  zeroPaddedQueries(layerAttention, queryLengths, 0, 2);
}

void GroupWriter::finishOnDemand(int64_t l, const torch::Tensor& valueNorms,
                                 const std::vector<int>& queryLengths,
                                 const std::vector<int>& keyLengths) {
  keepValueNorms(l, valueNorms, keyLengths);
  const int64_t at = m_slot[static_cast<std::size_t>(l)];
  if (at >= 0) m_source->setLayer(at, m_queryKey, queryLengths);
  if (l + 1 == m_layers) m_source->doneKeeping();
  if (m_keepQueryKey) keepQueryKey(l, queryLengths, keyLengths);
  m_queryKey = KeptQueryKey();
}

void GroupWriter::keepValueNorms(int64_t l, const torch::Tensor& valueNorms,
                                 const std::vector<int>& keyLengths) {
  if (m_valueNorms.defined()) {
    // A family that declares value norms (supportsValueNorms) but whose layer wrote none would
    // otherwise show zeros as if every value vector were zero.
    if ((valueNorms < 0).any().item<bool>())
      throw Error(ErrorKind::Internal,
                  "layer " + std::to_string(l) +
                      " did not write the value-weighted norms its model family declares (for "
                      "every head and key): a bug in the family");
    m_valueNorms[l].copy_(valueNorms);
    // Padded keys carry no token: their norms are 0, like their attention.
    const int64_t Tk = m_shape[3];
    for (std::size_t i = 0; i < keyLengths.size(); ++i) {
      const int64_t real = keyLengths[i];
      m_valueNorms[l][static_cast<int64_t>(i)].narrow(1, real, Tk - real).zero_();
    }
  }
}

void GroupWriter::keepQueryKey(int64_t l, const std::vector<int>& queryLengths,
                               const std::vector<int>& keyLengths) {
  AttentionGroup& g = *m_group;
  if (keepLayer(g.queryVectors, m_queryKey.queries, l, m_layers, queryLengths) &&
      keepLayer(g.keyVectors, m_queryKey.keys, l, m_layers, keyLengths)) {
    g.queryKeyScales.push_back(m_queryKey.scale);
    g.queryKeySoftcaps.push_back(m_queryKey.softcap);
    return;
  }
  // Not worth failing the run over: the views that need them say they are missing.
  m_keepQueryKey = false;
  g.queryVectors = FloatTensor();
  g.keyVectors = FloatTensor();
  g.queryKeyScales.clear();
  g.queryKeySoftcaps.clear();
  if (m_notices)
    m_notices->push_back("layer " + std::to_string(l) + " of " + m_modelName +
                         " does not compute its attention through scaledDotProduct: its "
                         "queries and keys are not kept");
}

}  // namespace attnscope
