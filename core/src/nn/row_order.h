// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace attnscope {

/// Where a converter put the rows of a weight (or the values of a bias) that llama.cpp computes in
/// another order than Hugging Face: the stored row holding Hugging Face's row r of `rows`.
///  - permutedHeads > 0: llama's Q and K, each head's rows [2, D/2] stored as [D/2, 2]
///    (convert_hf_to_gguf.py's LlamaModel.permute): row h·D + j·D/2 + i is stored at h·D + 2i + j.
///  - qkvHeads > 0: GPT-NeoX's and BLOOM's fused query_key_value, [heads, 3, D] per head in
///    Hugging Face's order, stored as all of Q, then K, then V ([3, heads, D]): row (h·3 + w)·D + i
///    is stored at w·heads·D + h·D + i.
inline int64_t storedRowOf(int64_t r, int64_t rows, int64_t permutedHeads, int64_t qkvHeads) {
  if (permutedHeads > 0) {
    const int64_t d = rows / permutedHeads;
    const int64_t head = r / d, j = (r % d) / (d / 2), i = r % (d / 2);
    return head * d + 2 * i + j;
  }
  if (qkvHeads > 0) {
    const int64_t d = rows / (3 * qkvHeads);
    const int64_t head = r / (3 * d), which = (r / d) % 3, i = r % d;
    return which * qkvHeads * d + head * d + i;
  }
  return r;
}

}  // namespace attnscope
