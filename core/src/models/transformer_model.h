// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <optional>

#include "attnscope/model.h"
#include "models/transformer_family.h"
#include "nn/widened_weights.h"

namespace attnscope {

/// The one Model implementation: tokenize, estimate memory and refuse before allocating, choose
/// the device, embed, run the layer stack writing each layer's attention straight into the result
/// and recording the trace, then predict the next token. Encoder-decoders run a second stack, the
/// decoder, on the same path (teacher forcing or greedy generation). Every family runs through it.
class TransformerModel final : public Model {
 public:
  explicit TransformerModel(std::shared_ptr<TransformerFamily> family, std::string name = {});

  ModelInfo info() const override;
  std::vector<Token> tokenize(const std::string& text) const override;
  AttentionResult run(const RunRequest& request) const override;
  std::vector<NamedTensor> parameters() const override;
  MemoryEstimate estimate(const RunRequest& request) const override;
  /// Exact: L·H forwards of the layers above each ablated one (about half of L·H full forwards);
  /// estimate: one forward and one backward. See HeadAblator.
  HeadAblation ablateHeads(const AblationRequest& request) const override;
  /// A GenerationSession over the family (generation/generation_session.h).
  std::unique_ptr<Generation> startGeneration(const GenerationRequest& request) const override;

  /// The run's peak memory beyond the process: parameters, the [kept layers, B, H, Tq, Tk] result
  /// (twice with scores), the kept queries and keys (about d_model floats per token and layer
  /// each, counted as working memory), one layer's temporaries and the activations; for an
  /// encoder-decoder also the decoder's [Ld, B, H, Tt, Tt + Tk] self- and cross-attention over
  /// `targets` decoder inputs; outputBytesPerValue per kept attention value (RunLimits); and
  /// `scoreTerms` more [kept layers, B, H, Tq, Tk] (RunRequest::keepScoreTerms). onDemand: no
  /// attention held, the kept queries and keys instead (RunRequest::attentionOnDemand).
  MemoryEstimate estimateParts(int64_t batch, int64_t queries, int64_t keys, bool keepScores,
                               int64_t keptLayers, bool keepQueryKey = false, int64_t targets = 0,
                               uint64_t outputBytesPerValue = 0, int64_t scoreTerms = 0,
                               bool onDemand = false) const;

 private:
  /// run() without the torch-error guard; the steps it calls follow, in order.
  AttentionResult runUnguarded(const RunRequest& request) const;
  /// Throws Error(InvalidArgument) for what the family cannot do (value norms, a target,
  /// generation) and a negative generation count.
  void checkRunRequest(const RunRequest& request, const ModelInfo& mi) const;
  /// The request's tokens (or random batch), with an encoder-decoder's decoder inputs; refuses a
  /// random batch over the memory limit before it exists.
  BatchInput runBatch(const RunRequest& request, const ModelInfo& mi, int64_t kept) const;
  /// The head's vocabulary (one row through it, the first time), 0 without a head.
  int64_t vocabularySize() const;
  /// What the logit lens of `request` adds over B items of T tokens (logitLensBytes); 0 without.
  uint64_t lensBytes(const RunRequest& request, int64_t B, int64_t T) const;
  /// Refuses a run whose estimate exceeds the memory limit, naming its sizes; returns the estimate.
  uint64_t checkRunMemory(const RunRequest& request, const ModelInfo& mi, const BatchInput& batch,
                          int64_t kept) const;
  /// The encoder (or only) stack over `in`, writing r's first group (and its preview) and traces.
  /// -> [B, Tq, C] after the final norm.
  torch::Tensor runEncoder(const RunRequest& request, const ModelInfo& mi, const BatchInput& batch,
                           const Embedded& in, const torch::Device& dev, AttentionResult& r) const;
  /// An encoder-decoder's decoder over `encoded` [B, Tk, C]: greedy generation into batch's decoder
  /// inputs (r.generated), then one pass writing r's decoder_self and cross groups and traces.
  /// -> [B, Tt, C] after the decoder's final norm.
  torch::Tensor runDecoder(const RunRequest& request, const ModelInfo& mi, BatchInput& batch,
                           const torch::Tensor& encoded, const torch::Device& dev,
                           AttentionResult& r) const;
  /// Notices for non-finite weights and, unless the outputs are finite, the first non-finite
  /// attention cell of each group.
  void addNonFiniteNotices(AttentionResult& r, bool outputsFinite) const;
  /// How many layers' attention the request keeps; throws Error(InvalidArgument) for a layer out
  /// of range or a list that is not ascending.
  int64_t keptLayerCount(const RunRequest& request) const;
  HeadAblation ablateUnguarded(const AblationRequest& request) const;
  /// Under the family's lock: finds non-finite weights once, moves the modules to dev, eval().
  void prepareModules(const torch::Device& dev) const;
  /// The bytes limits.weightCacheBytes grants m_widened for a run whose estimate is runBytes
  /// (auto: what the machine's available memory leaves after it); clears the copies when they
  /// are more.
  uint64_t weightCacheBudget(const RunLimits& limits, uint64_t runBytes) const;
  std::shared_ptr<TransformerFamily> m_family;
  std::string m_name;
  std::string m_weightDtype;      // ModelInfo::weightDtype
  uint64_t m_widenedBytes = 0;    // ModelInfo::widenedBytes
  uint64_t m_largestWidened = 0;  // float32 bytes of the largest parameter that is not float32
  uint64_t m_mappedBytes = 0;     // ModelInfo::mappedBytes
  // float32 copies of the F16/BF16 weights kept across runs (RunLimits::weightCacheBytes); freed
  // with the model.
  mutable WidenedWeights m_widened;
  // The first parameter holding NaN or Inf, or empty; found on the first run (under the family's
  // lock), not while opening, which must not page in every mapped weight.
  mutable std::optional<std::string> m_nonFiniteWeight;
  mutable std::optional<int64_t> m_vocabulary;  // vocabularySize(), once known
};

}  // namespace attnscope
