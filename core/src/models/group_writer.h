// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "attnscope/attention_result.h"
#include "attnscope/run_request.h"
#include "nn/attention_output.h"
#include "nn/on_demand_attention.h"

namespace attnscope {

/// Where the layers of one stack write one attention group: on the CPU, views of the result's
/// [kept layers, B, H, Tq, Tk] buffers (no per-layer copies, no stacking); elsewhere a device
/// buffer per layer that is copied back. A layer whose attention is not kept (RunRequest::layers)
/// writes into one reused buffer. With RunRequest::keepQueryKey it also keeps each layer's q and
/// k as scaledDotProduct saw them. With RunRequest::attentionOnDemand it writes no attention: each
/// kept layer's queries, keys, bias, mask and rows' normalisers go into the group's
/// OnDemandAttention source instead. A default-constructed writer (generation steps) keeps nothing.
/// The group must outlive the writer: it holds views of the group's buffers.
class GroupWriter final {
 public:
  GroupWriter() = default;
  /// L layers of [B, H, Tq, Tk]; keptLayers empty: all of them. notices and modelName: where and
  /// how to say that a layer's queries and keys could not be kept.
  GroupWriter(AttentionGroup& g, int64_t L, int64_t B, int64_t H, int64_t Tq, int64_t Tk,
              const RunRequest& request, const torch::Device& dev,
              const std::vector<int>& keptLayers = {}, bool keepQueryKey = false,
              std::vector<std::string>* notices = nullptr, std::string modelName = {},
              const std::vector<std::string>& scoreTerms = {});

  /// The buffers layer l writes its attention (and scores, queries and keys) into.
  AttentionBuffers buffers(int64_t l);
  /// True when layer l's weights are final as soon as the layer writes them: on the CPU (no copy
  /// back from a device) with no padded query rows (finish() zeroes those), and kept.
  bool finalOnceWritten(int64_t l, const std::vector<int>& queryLengths) const;
  /// The buffer [B, H, Tk] a layer writes its value norms into, filled with -1: a norm is never
  /// negative, so finish() finds a head or key the layer left unwritten. Undefined when the run
  /// keeps none.
  torch::Tensor valueNorms() const;
  /// The buffers [B, H, Tq, Tk] layer l writes its score terms into, one per name given to the
  /// constructor; empty when none are kept or layer l is not.
  std::vector<torch::Tensor> scoreTerms(int64_t l) const;
  /// After layer l: copies its buffers back and zeroes padded query rows (and padded keys'
  /// value norms and score terms), and keeps its queries and keys. Throws Error(Internal) when
  /// value norms are kept and the layer left one unwritten.
  void finish(int64_t l, const AttentionBuffers& b, const torch::Tensor& valueNorms,
              const std::vector<int>& queryLengths, const std::vector<int>& keyLengths,
              const std::vector<torch::Tensor>& scoreTerms = {});

 private:
  void keepQueryKey(int64_t l, const std::vector<int>& queryLengths,
                    const std::vector<int>& keyLengths);
  void keepValueNorms(int64_t l, const torch::Tensor& valueNorms,
                      const std::vector<int>& keyLengths);
  void finishOnDemand(int64_t l, const torch::Tensor& valueNorms,
                      const std::vector<int>& queryLengths, const std::vector<int>& keyLengths);

  AttentionGroup* m_group = nullptr;
  bool m_direct = true;
  torch::Device m_dev = torch::kCPU;
  std::vector<int64_t> m_shape;
  int64_t m_layers = 0;
  std::vector<int64_t> m_slot;  // model layer -> index in the result, -1 when not kept
  bool m_keepQueryKey = false;
  std::vector<std::string>* m_notices = nullptr;
  std::string m_modelName;
  KeptQueryKey m_queryKey;
  std::shared_ptr<OnDemandAttention> m_source;  // attention on demand; null otherwise
  torch::Tensor m_attention, m_scores, m_valueNorms, m_dropped;
  std::vector<torch::Tensor> m_terms;  // [kept, B, H, Tq, Tk] views of the group's score terms
};

}  // namespace attnscope
