// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnscope/attention_source.h"
#include "attnscope/float_tensor.h"
#include "attnscope/shape_trace.h"
#include "attnscope/token.h"

namespace attnscope {

/// Wall-clock time spent in each phase of a run.
struct Timings {
  double tokenizeMs = 0;
  double forwardMs = 0;
  double totalMs = 0;
};

/// One candidate for the next token of a language model.
struct Prediction {
  Token token;
  float probability = 0;
};

/// The most likely fills of one mask token (masked-language-model encoders).
struct MaskFill {
  int position = 0;  // the mask token's index in batch item 0
  std::vector<Prediction> predictions;
};

/// One term of a model's pre-softmax scores (RunRequest::keepScoreTerms): DeBERTa's scores are
/// c2c + c2p + p2c, each already divided by the scale, before the mask.
struct ScoreTerm {
  std::string name;    // "c2c" | "c2p" | "p2c" (ModelInfo::scoreTerms)
  FloatTensor values;  // [kept layers, batch, heads, query, key]; padded rows and keys 0
};

/// One kind of attention a model computes: an encoder's or decoder's self-attention, or a
/// decoder's cross-attention over the encoder's tokens. Each has its own tokens on each axis.
struct AttentionGroup {
  std::string name;          // "self" | "cross" | "decoder_self"; "value_norm" (valueNormGroup)
  bool distribution = true;  // each row of `attention` sums to 1 over the real keys; false for
                             // measures shown like attention (value-weighted norms)
  int kvHeads = 0;  // key/value heads the query heads share (grouped-query: query head h reads
                    // kv head h / (heads / kvHeads)); 0: one per query head

  std::vector<std::vector<Token>> tokens;  // [batch][query]; padding is not listed
  std::vector<std::vector<Token>>
      contextTokens;              // [batch][key] when the keys come from another
                                  // sequence (cross-attention); empty: keys are `tokens`
  std::vector<int> queryLengths;  // [batch] real (non-padding) queries
  std::vector<int> keyLengths;    // [batch] real (non-padding) keys

  FloatTensor attention;  // [kept layers, batch, heads, query, key]; padded keys are exactly 0,
                          // padded query rows are all 0. Empty when the run computed it on
                          // demand (then `source` is set; the shape accessors below read it)
  std::shared_ptr<const AttentionSource> source;  // RunRequest::attentionOnDemand: the weights of
                                                  // any head, recomputed exactly when asked
  std::vector<int> keptLayers;  // the model layers `attention` and `scores` hold, ascending, when
                                // a run kept only some (RunRequest::layers); empty: every layer
  int modelLayers = 0;          // the model's layer count when keptLayers is set
  FloatTensor scores;           // [layers, batch, heads, query, key] scaled scores before softmax,
                                // masked entries -inf; empty when not requested
  FloatTensor valueNorms;  // [layers, batch, heads, key] ‖f_h(x_k)‖ = ‖(x_k W_V^h + b_V^h) W_O^h‖:
                           // the norm of what key k would add to the output through head h
                           // (Kobayashi et al., 2020); padded keys 0; empty when not requested
  FloatTensor queryVectors;  // [layers, batch, heads, query, head_dim] what each head's q·kᵀ reads,
                             // after rotary where the family applies it, so that
                             // Σ_d q_d·k_d · scale (+ position bias) is the kept score; padded rows
                             // 0; empty unless RunRequest::keepQueryKey
  FloatTensor keyVectors;  // [layers, batch, heads, key, head_dim] likewise (grouped-query heads
                           // already repeated: one row per query head); padded keys 0
  std::vector<ScoreTerm> scoreTerms;     // the terms the scores are the sum of (ModelInfo::
                                         // scoreTerms' order), layers as `attention`; empty unless
                                         // RunRequest::keepScoreTerms
  std::vector<double> queryKeyScales;    // [layers] the factor of q·kᵀ in each layer's scores
                                         // (1/√head_dim mostly; 1 for T5); kept with them
  std::vector<double> queryKeySoftcaps;  // [layers] > 0 where the scaled product was then capped
                                         // (Gemma 2): the score is cap·tanh(q·k·scale / cap)

  /// The model's layers, kept or not (views offer every one; see hasLayer()).
  int layers() const { return keptLayers.empty() ? static_cast<int>(dimOf(0)) : modelLayers; }
  /// Whether the attention of this model layer is held (a run can keep only some layers).
  bool hasLayer(int layer) const { return slotOf(layer) >= 0; }
  /// The index into attention's first axis of a model layer, or -1 when it was not kept.
  int slotOf(int layer) const {
    if (keptLayers.empty()) return layer >= 0 && layer < dimOf(0) ? layer : -1;
    for (std::size_t i = 0; i < keptLayers.size(); ++i) {
      if (keptLayers[i] == layer) return static_cast<int>(i);
    }
    return -1;
  }
  int batch() const { return static_cast<int>(dimOf(1)); }
  int heads() const { return static_cast<int>(dimOf(2)); }
  int queries() const { return static_cast<int>(dimOf(3)); }
  int keys() const { return static_cast<int>(dimOf(4)); }
  /// Whether the weights are computed on demand (source) rather than held (attention).
  bool onDemand() const { return attention.empty() && source != nullptr; }

  /// The tokens on the key axis of one batch item.
  const std::vector<Token>& keyTokens(int item) const {
    return contextTokens.empty() ? tokens[static_cast<std::size_t>(item)]
                                 : contextTokens[static_cast<std::size_t>(item)];
  }
  /// The [query, key] matrix of one head of a model layer, row-major, keys() floats per row;
  /// nullptr when that layer's attention was not kept.
  const float* headMatrix(int layer, int item, int head) const {
    const int slot = slotOf(layer);
    return slot < 0 ? nullptr : matrixOf(attention, slot, item, head);
  }
  const float* scoreMatrix(int layer, int item, int head) const {
    const int slot = slotOf(layer);
    return scores.empty() || slot < 0 ? nullptr : matrixOf(scores, slot, item, head);
  }
  /// Term `term`'s [query, key] matrix of one head (scoreTerms), or nullptr when not kept.
  const float* termMatrix(std::size_t term, int layer, int item, int head) const {
    const int slot = slotOf(layer);
    return term >= scoreTerms.size() || scoreTerms[term].values.empty() || slot < 0
               ? nullptr
               : matrixOf(scoreTerms[term].values, slot, item, head);
  }
  int headDim() const { return static_cast<int>(queryVectors.dim(4)); }  // 0 without kept q and k
  /// The head_dim floats of one query's (or key's) vector; nullptr when they were not kept.
  const float* queryVector(int layer, int item, int head, int query) const {
    return queryVectors.empty()
               ? nullptr
               : matrixOf(queryVectors, layer, item, head) + query * queryVectors.dim(4);
  }
  const float* keyVector(int layer, int item, int head, int key) const {
    return keyVectors.empty() ? nullptr
                              : matrixOf(keyVectors, layer, item, head) + key * keyVectors.dim(4);
  }

 private:
  int64_t dimOf(std::size_t axis) const {
    return onDemand() ? source->shape()[axis] : attention.dim(axis);
  }
  static const float* matrixOf(const FloatTensor& t, int slot, int item, int head) {
    const std::size_t tq = static_cast<std::size_t>(t.dim(3)),
                      tk = static_cast<std::size_t>(t.dim(4));
    const std::size_t index =
        ((static_cast<std::size_t>(slot) * t.dim(1) + item) * t.dim(2) + head) * tq * tk;
    return t.data.data() + index;
  }
};

/// Everything one forward pass produced, in plain types. Every model family returns this.
struct AttentionResult {
  std::string modelName;
  std::string device;  // where it ran: "cpu" or "cuda:0"

  /// The attention kinds of the model, at least one; groups[0] is its main one ("self", or
  /// "cross" for the toy layer given a context). Views choose one by name. Encoder-decoders have
  /// three: "self" (the encoder, [L, B, H, Ts, Ts]), "decoder_self" ([Ld, B, H, Tt, Tt], causal)
  /// and "cross" ([Ld, B, H, Tt, Ts]: decoder inputs on the rows, source tokens on the columns).
  std::vector<AttentionGroup> groups;
  bool preview = false;  // RunRequest::preview's early result: the layers it lacks are still being
                         // computed (not dropped for the memory limit)

  FloatTensor output;         // [batch, query, d_model]
  FloatTensor input;          // [batch, query, input_dim]: the X fed into the first layer
  FloatTensor contextInput;   // [batch, key, input_dim]; cross-attention only
  FloatTensor decoderOutput;  // [batch, target, d_model]: encoder-decoders, the decoder's final
                              // hidden states (output is then the encoder's)
  std::vector<std::vector<Token>> generated;  // [batch] encoder-decoders: the tokens greedy
                                              // generation appended (RunRequest::generate)
  FloatTensor routerExperts;  // [layers, batch, query, k] mixture-of-experts models: the experts
                              // the router chose for each token, the most probable first (whole
                              // numbers); -1 at padding and on dense layers; empty for other models
  FloatTensor logits;  // [batch, query, vocab] RunRequest::keepLogits: the head's logits at every
                       // position (decoder positions for encoder-decoders), 0 at padding; empty
                       // without a head or when they did not fit the memory limit
  FloatTensor routerWeights;  // [layers, batch, query, k] the weight of each chosen expert's
                              // output (after top-k renormalisation where the model does it); 0
                              // where routerExperts is -1

  // The logit lens (RunRequest::logitLens = k): what each layer's residual stream predicts when
  // the model's final norm and unembedding are applied to it, p = softmax(logits(norm(h_l,t))).
  // Only the top k of each distribution are kept, never [L, T, V]. The last layer's row is the
  // model's own next-token distribution (nextTokens). Empty unless requested.
  FloatTensor logitLensIds;      // [layers, batch, query, k] token ids (whole numbers), the most
                                 // probable first; -1 at padding
  FloatTensor logitLensProbs;    // [layers, batch, query, k] their probabilities; 0 at padding
  FloatTensor logitLensNext;     // [layers, batch, query] the probability of the token actually at
                                 // t + 1 (the right answer); -1 at the last real token and padding
  FloatTensor logitLensEntropy;  // [layers, batch, query] nats, of each whole distribution (all V
                                 // tokens, not only the kept k); 0 at padding
  std::vector<Token> logitLensTokens;  // every id logitLensIds names, ascending by id (labels)

  std::vector<LayerTrace> traces;     // one per layer (encoder-decoders: the encoder's, then
                                      // the decoder's; LayerTrace::stack tells which)
  std::vector<std::string> notices;   // things the user must see: truncation, unknown characters
  std::vector<Prediction> nextToken;  // top candidates after the last token of batch item 0 (LMs;
                                      // encoder-decoders: after the last decoder input)
  std::vector<std::vector<Prediction>> nextTokens;  // [batch] the same for every item
  std::vector<MaskFill> maskFills;  // top fills of each mask token of batch item 0 (encoders)
  Timings timings;

  /// The group of that name; an empty or unknown name gives the main group (an empty one when
  /// there is none).
  const AttentionGroup& group(const std::string& name = {}) const {
    static const AttentionGroup none;
    for (const AttentionGroup& g : groups) {
      if (g.name == name) return g;
    }
    return groups.empty() ? none : groups.front();
  }
  /// As above; a result without groups gets an empty "self" group to fill.
  AttentionGroup& group(const std::string& name = {}) {
    if (groups.empty()) {
      groups.emplace_back();
      groups.back().name = "self";
    }
    for (AttentionGroup& g : groups) {
      if (g.name == name) return g;
    }
    return groups.front();
  }
  /// The vocabulary entry of an id of logitLensIds, or nullptr.
  const Token* logitLensToken(int64_t id) const {
    std::size_t lo = 0, hi = logitLensTokens.size();
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (logitLensTokens[mid].id < id)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < logitLensTokens.size() && logitLensTokens[lo].id == id ? &logitLensTokens[lo]
                                                                       : nullptr;
  }
  /// The group of that name, or nullptr.
  const AttentionGroup* findGroup(const std::string& name) const {
    for (const AttentionGroup& g : groups) {
      if (g.name == name) return &g;
    }
    return nullptr;
  }
};

}  // namespace attnscope
