// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt2_attention.h"

#include <cmath>

namespace attnscope {

Gpt2AttentionImpl::Gpt2AttentionImpl(int nEmbd, int nHead) : m_nEmbd(nEmbd), m_nHead(nHead) {
  c_attn = register_module("c_attn", Gpt2Conv1D(nEmbd, 3 * nEmbd));
  c_proj = register_module("c_proj", Gpt2Conv1D(nEmbd, nEmbd));
}

torch::Tensor Gpt2AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask,
                                         const AttentionBuffers& buffers, TraceRecorder& rec,
                                         int inStep, int* outStep) {
  const int64_t B = x.size(0), T = x.size(1), C = m_nEmbd, H = m_nHead, hd = C / H;
  const torch::Tensor qkv = c_attn->forward(x);  // [B, T, 3C]
  const int qkvStep = rec.record("qkv", "self.c_attn(x)", "linear", qkv, {inStep});
  const std::vector<torch::Tensor> parts = qkv.split(C, /*dim=*/2);  // 3 x [B, T, C]
  const char* names[3] = {"q", "k", "v"};
  int steps[3];
  torch::Tensor heads[3];  // [B, H, T, hd]
  for (int i = 0; i < 3; ++i) {
    const int splitStep =
        rec.record(std::string(names[i]) + "_split", "qkv.split(n_embd, dim=2)", "split", parts[i], {qkvStep});
    heads[i] = parts[i].view({B, T, H, hd}).transpose(1, 2);
    steps[i] = rec.record(names[i], std::string(names[i]) + ".view(B, T, H, hd).transpose(1, 2)",
                          "permute", heads[i], {splitStep});
  }
  const ScaledDotProduct sdp =
      scaledDotProduct(heads[0], heads[1], heads[2], mask, 1.0 / std::sqrt(static_cast<double>(hd)),
                       "1 / math.sqrt(hd)", rec, steps[0], steps[1], steps[2], -1, buffers);
  const torch::Tensor merged = sdp.values.transpose(1, 2).contiguous().view({B, T, C});
  const int mergedStep = rec.record("merged", "values.transpose(1, 2).contiguous().view(B, T, C)",
                                    "concat", merged, {sdp.valuesStep});
  torch::Tensor out = c_proj->forward(merged);
  *outStep = rec.record("attn_out", "self.c_proj(merged)", "linear", out, {mergedStep});
  return out;
}

}  // namespace attnscope
