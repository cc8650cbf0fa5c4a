// SPDX-License-Identifier: GPL-3.0-or-later
// Small hand-made results for the view and export tests: no model, every value known.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope::test {

/// A result of `batch` items of `tokens` tokens each, labelled "<prefix><item>_<i>", with
/// attention[l, b, h, q, k] = weight(l, b, h, q, k) (rows are not renormalised: the caller gives
/// whatever the test needs).
inline std::shared_ptr<AttentionResult> makeResult(
    int layers, int heads, int tokens, int batch,
    const std::function<float(int, int, int, int, int)>& weight, const std::string& prefix = "t") {
  auto r = std::make_shared<AttentionResult>();
  r->modelName = "fake";
  r->group().attention = FloatTensor({layers, batch, heads, tokens, tokens});
  for (int l = 0; l < layers; ++l)
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h) {
        float* a = const_cast<float*>(r->group().headMatrix(l, b, h));
        for (int q = 0; q < tokens; ++q)
          for (int k = 0; k < tokens; ++k) a[q * tokens + k] = weight(l, b, h, q, k);
      }
  for (int b = 0; b < batch; ++b) {
    std::vector<Token> items;
    for (int i = 0; i < tokens; ++i) {
      Token t;
      t.id = 100 * b + i;
      t.text = prefix + std::to_string(b) + "_" + std::to_string(i);
      t.label = t.text;
      items.push_back(t);
    }
    r->group().tokens.push_back(items);
    r->group().queryLengths.push_back(tokens);
    r->group().keyLengths.push_back(tokens);
  }
  return r;
}

/// A checkerboard: neighbouring cells (in a row and in a column) differ, so no two merge.
inline std::shared_ptr<AttentionResult> checkerboard(int tokens, int layers = 1, int heads = 1,
                                                     int batch = 1) {
  return makeResult(layers, heads, tokens, batch,
                    [](int, int, int, int q, int k) { return (q + k) % 2 ? 0.9f : 0.1f; });
}

/// A GPT-2-like result: causal self-attention of `layers` × `heads` over `tokens` word tokens
/// (" w3" with its leading space, labelled "␣w3"), computed as in a model from seeded random
/// query and key vectors of `headDim` dimensions: scores = q·kᵀ / √headDim, −∞ above the
/// diagonal, attention = softmax(scores). The vectors, scores and scales are kept as
/// RunRequest::keepQueryKey keeps them. `sharpness` multiplies the vectors (peakier attention).
inline std::shared_ptr<AttentionResult> gpt2Like(int layers, int heads, int tokens, int headDim = 8,
                                                 unsigned seed = 7, float sharpness = 1.5f) {
  auto r = std::make_shared<AttentionResult>();
  r->modelName = "gpt2-like";
  AttentionGroup& g = r->group();
  g.attention = FloatTensor({layers, 1, heads, tokens, tokens});
  g.scores = FloatTensor({layers, 1, heads, tokens, tokens});
  g.queryVectors = FloatTensor({layers, 1, heads, tokens, headDim});
  g.keyVectors = FloatTensor({layers, 1, heads, tokens, headDim});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sharpness);
  for (float& v : g.queryVectors.data) v = normal(rng);
  for (float& v : g.keyVectors.data) v = normal(rng);
  const double scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  g.queryKeyScales.assign(static_cast<std::size_t>(layers), scale);
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      float* a = const_cast<float*>(g.headMatrix(l, 0, h));
      float* s = const_cast<float*>(g.scoreMatrix(l, 0, h));
      for (int q = 0; q < tokens; ++q) {
        const float* qv = g.queryVector(l, 0, h, q);
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int k = 0; k <= q; ++k) {
          const float* kv = g.keyVector(l, 0, h, k);
          double dot = 0;
          for (int d = 0; d < headDim; ++d) dot += double(qv[d]) * kv[d];
          s[q * tokens + k] = static_cast<float>(dot * scale);
          top = std::max(top, dot * scale);
        }
        for (int k = q + 1; k < tokens; ++k)
          s[q * tokens + k] = -std::numeric_limits<float>::infinity();
        for (int k = 0; k <= q; ++k) sum += std::exp(s[q * tokens + k] - top);
        for (int k = 0; k <= q; ++k)
          a[q * tokens + k] = static_cast<float>(std::exp(s[q * tokens + k] - top) / sum);
      }
    }
  std::vector<Token> items;
  for (int i = 0; i < tokens; ++i) {
    Token t;
    t.id = i;
    t.text = (i ? " w" : "w") + std::to_string(i);
    t.label = (i ? "\u2423w" : "w") + std::to_string(i);
    items.push_back(t);
  }
  g.tokens.push_back(items);
  g.queryLengths.push_back(tokens);
  g.keyLengths.push_back(tokens);
  return r;
}

// A BERT-like pair as a WordPiece tokenizer gives it: "the cats." / "it was": [CLS] the cat ##s .
// [SEP] it was [SEP], texts without spaces ("##s" decoded to "s"), offsets into each text.
inline std::shared_ptr<AttentionResult> wordPiecePair() {
  auto r = makeResult(1, 1, 9, 1, [](int, int, int, int, int) { return 1.0f / 9; });
  struct Piece {
    const char* text;
    std::size_t begin, end;
    bool special;
    int segment;
  };
  const Piece pieces[] = {
      {"[CLS]", 0, 0, true, 0}, {"the", 0, 3, false, 0}, {"cat", 4, 7, false, 0},
      {"s", 7, 8, false, 0},    {".", 8, 9, false, 0},   {"[SEP]", 0, 0, true, 0},
      {"it", 0, 2, false, 1},   {"was", 3, 6, false, 1}, {"[SEP]", 0, 0, true, 1}};
  std::vector<Token>& tokens = r->group().tokens[0];
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i].text = pieces[i].text;
    tokens[i].label = i == 3 ? std::string("##s") : std::string(pieces[i].text);
    tokens[i].byteBegin = pieces[i].begin;
    tokens[i].byteEnd = pieces[i].end;
    tokens[i].special = pieces[i].special;
    tokens[i].segment = pieces[i].segment;
  }
  return r;
}

}  // namespace attnscope::test
