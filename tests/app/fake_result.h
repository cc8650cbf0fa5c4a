// SPDX-License-Identifier: GPL-3.0-or-later
// Small hand-made results for the view and export tests: no model, every value known.
#pragma once

#include <functional>
#include <memory>
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

}  // namespace attnscope::test
