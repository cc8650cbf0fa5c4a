// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/qkv_layout.h"

namespace attnscope {

QkvHeads splitFusedQkv(const torch::Tensor& qkv, QkvLayout layout, int64_t heads,
                       TraceRecorder& rec, int qkvStep) {
  const int64_t B = qkv.size(0), T = qkv.size(1), width = qkv.size(2) / 3, hd = width / heads;
  QkvHeads r;
  if (layout == QkvLayout::Split) {
    const std::vector<torch::Tensor> parts = qkv.split(width, /*dim=*/2);  // 3 x [B, T, C]
    const char* names[3] = {"q", "k", "v"};
    torch::Tensor* out[3] = {&r.q, &r.k, &r.v};
    int* steps[3] = {&r.qStep, &r.kStep, &r.vStep};
    for (int i = 0; i < 3; ++i) {
      const int splitStep = rec.record(std::string(names[i]) + "_split", "qkv.split(n_embd, dim=2)",
                                       "split", parts[static_cast<std::size_t>(i)], {qkvStep});
      *out[i] = parts[static_cast<std::size_t>(i)].view({B, T, heads, hd}).transpose(1, 2);
      *steps[i] = rec.record(names[i], std::string(names[i]) + ".view(B, T, H, hd).transpose(1, 2)",
                             "permute", *out[i], {splitStep});
    }
    return r;
  }
  torch::Tensor h = qkv.reshape({B, T, heads, 3 * hd});
  int s = rec.record("qkv", "qkv.reshape(B, T, H, 3*hd)", "reshape", h, {qkvStep});
  h = h.permute({0, 2, 1, 3});
  s = rec.record("qkv", "qkv.permute(0, 2, 1, 3)", "permute", h, {s});
  const std::vector<torch::Tensor> chunks = h.chunk(3, -1);
  r.q = chunks[0];
  r.k = chunks[1];
  r.v = chunks[2];
  r.qStep = rec.record("q", "q, k, v = qkv.chunk(3, dim=-1)", "chunk", r.q, {s});
  r.kStep = rec.record("k", "q, k, v = qkv.chunk(3, dim=-1)", "chunk", r.k, {s});
  r.vStep = rec.record("v", "q, k, v = qkv.chunk(3, dim=-1)", "chunk", r.v, {s});
  return r;
}

torch::Tensor splitHeads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

torch::Tensor mergeHeads(const torch::Tensor& x) {
  return x.transpose(1, 2).contiguous().view({x.size(0), x.size(2), x.size(1) * x.size(3)});
}

torch::Tensor repeatKv(const torch::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t B = x.size(0), Hkv = x.size(1), T = x.size(2), hd = x.size(3);
  return x.unsqueeze(2).expand({B, Hkv, groups, T, hd}).reshape({B, Hkv * groups, T, hd});
}

}  // namespace attnscope
