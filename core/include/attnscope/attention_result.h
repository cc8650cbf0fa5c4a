// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

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

/// Everything one forward pass produced, in plain types. Every model family returns this.
struct AttentionResult {
  std::string modelName;
  std::string device;  // where it ran: "cpu" or "cuda:0"

  std::vector<std::vector<Token>> tokens;         // [batch][query]; padding is not listed
  std::vector<std::vector<Token>> contextTokens;  // [batch][key]; cross-attention only
  std::vector<int> queryLengths;                  // [batch] real (non-padding) queries
  std::vector<int> keyLengths;                    // [batch] real (non-padding) keys

  FloatTensor attention;     // [layers, batch, heads, query, key]; padded keys are exactly 0,
                             // padded query rows are all 0
  FloatTensor scores;        // [layers, batch, heads, query, key] scaled scores before softmax,
                             // masked entries -inf; empty when not requested
  FloatTensor output;        // [batch, query, d_model]
  FloatTensor input;         // [batch, query, input_dim]: the X fed into the first layer
  FloatTensor contextInput;  // [batch, key, input_dim]; cross-attention only

  std::vector<LayerTrace> traces;     // one per layer
  std::vector<std::string> notices;   // things the user must see: truncation, unknown characters
  std::vector<Prediction> nextToken;  // top candidates after the last token of batch item 0 (LMs)
  Timings timings;

  int layers() const { return static_cast<int>(attention.dim(0)); }
  int batch() const { return static_cast<int>(attention.dim(1)); }
  int heads() const { return static_cast<int>(attention.dim(2)); }
  int queries() const { return static_cast<int>(attention.dim(3)); }
  int keys() const { return static_cast<int>(attention.dim(4)); }

  /// The [query, key] matrix of one head, row-major, keys() floats per row.
  const float* headMatrix(int layer, int item, int head) const {
    return matrixOf(attention, layer, item, head);
  }
  const float* scoreMatrix(int layer, int item, int head) const {
    return scores.empty() ? nullptr : matrixOf(scores, layer, item, head);
  }

 private:
  const float* matrixOf(const FloatTensor& t, int layer, int item, int head) const {
    const std::size_t tq = static_cast<std::size_t>(t.dim(3)), tk = static_cast<std::size_t>(t.dim(4));
    const std::size_t index =
        ((static_cast<std::size_t>(layer) * t.dim(1) + item) * t.dim(2) + head) * tq * tk;
    return t.data.data() + index;
  }
};

}  // namespace attnscope
