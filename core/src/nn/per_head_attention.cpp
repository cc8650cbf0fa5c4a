// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/per_head_attention.h"

#include "nn/scaled_dot_product.h"

namespace attnscope {

PerHeadAttentionImpl::PerHeadAttentionImpl(int inputDim, int dModel, int heads)
    : m_dModel(dModel), m_heads(heads) {
  this->heads = register_module("heads", torch::nn::ModuleList());
  for (int h = 0; h < heads; ++h) this->heads->push_back(Head(inputDim, dModel / heads));
  proj = register_module("proj", torch::nn::Linear(dModel, dModel));
}

// Long (~85 lines) on purpose: it is the chapter's per-head module written out step by step, one
// traced step per line of the Python it mirrors, so a reader can follow both side by side.
AttentionOutput PerHeadAttentionImpl::forward(const AttentionInput& in, TraceRecorder& rec) {
  if (!rec.active() && !in.keepAttention && !in.buffers.kvCache) return forwardBatched(in);
  const int xStep = in.inputStep >= 0 ? in.inputStep : rec.record("x", "x", "input", in.x);
  const torch::Tensor& kvSource = in.context.defined() ? in.context : in.x;
  const int kvStep =
      in.context.defined() ? rec.record("context", "context", "input", in.context) : xStep;
  const std::string kvName = in.context.defined() ? "context" : "x";
  // A per-head mask is [B, Tq, Tk]: drop the broadcast head axis of the shared one.
  const torch::Tensor mask = in.mask.defined() ? in.mask.dense().squeeze(1) : torch::Tensor();

  // Each head writes its [B, Tq, Tk] straight into its slice of the caller's [B, H, Tq, Tk]
  // buffers (no per-head temporaries to fault in, no stacking copy). Not while autograd records
  // (ablation's gradients): out= products do not differentiate.
  const bool direct =
      in.keepAttention && in.buffers.attention.defined() && !torch::GradMode::is_enabled();
  std::vector<torch::Tensor> outs, attentions, scores;
  std::vector<int> outSteps;
  std::vector<KeptQueryKey> kept(static_cast<std::size_t>(m_heads));  // [H] of [B, T, hs]
  for (int h = 0; h < m_heads; ++h) {
    HeadImpl* head = this->heads[h]->as<HeadImpl>();
    const std::string p = "heads[" + std::to_string(h) + "].";
    torch::Tensor k = head->key(kvSource);
    const int kStep = rec.record("k", p + "key(" + kvName + ")", "linear", k, {kvStep}, h);
    torch::Tensor q = head->query(in.x);
    const int qStep = rec.record("q", p + "query(x)", "linear", q, {xStep}, h);
    torch::Tensor v = head->value(kvSource);
    const int vStep = rec.record("v", p + "value(" + kvName + ")", "linear", v, {kvStep}, h);
    SdpaOptions sdpa;
    sdpa.mask = mask;
    sdpa.scale = in.scale;
    sdpa.scaleText = in.scaleText;
    sdpa.head = h;
    if (in.buffers.queryKey) sdpa.buffers.queryKey = &kept[static_cast<std::size_t>(h)];
    sdpa.buffers.onDemand = in.buffers.onDemand;
    sdpa.buffers.headMask = in.buffers.headMask;
    sdpa.buffers.kvCache = in.buffers.kvCache;  // one slot per head
    if (direct) {
      sdpa.buffers.attention = in.buffers.attention.select(1, h);
      if (in.buffers.scores.defined()) sdpa.buffers.scores = in.buffers.scores.select(1, h);
      sdpa.buffers.scoresUnused = in.buffers.scoresUnused;
    }
    ScaledDotProduct sdp = scaledDotProduct(q, k, v, sdpa, rec, qStep, kStep, vStep);
    outs.push_back(sdp.values);
    attentions.push_back(sdp.attention);
    scores.push_back(sdp.scores);
    outSteps.push_back(sdp.valuesStep);
  }
  torch::Tensor cat = torch::cat(outs, -1);
  const int catStep = rec.record("concat", "torch.cat([h(x) for h in self.heads], dim=-1)",
                                 "concat", cat, outSteps);
  torch::Tensor out = proj(cat);
  rec.record("out", "proj(out)", "linear", out, {catStep});
  if (!in.keepAttention) return {out, {}, {}};
  if (in.buffers.queryKey) {
    std::vector<torch::Tensor> q, k, rows;
    for (const KeptQueryKey& h : kept) {
      q.push_back(h.queries);
      k.push_back(h.keys);
      rows.push_back(h.rowLogSumExp);
    }
    // [B, H, T, hs]; on demand also the rows' normalisers [B, H, T] and the heads' shared mask
    // ([B, 1, Tq, Tk] broadcast over the heads, as the batched forms take it).
    *in.buffers.queryKey = {torch::stack(q, 1), torch::stack(k, 1), in.scale, 0.0, {}, {}, {}};
    if (in.buffers.onDemand) {
      in.buffers.queryKey->rowLogSumExp = torch::stack(rows, 1);
      in.buffers.queryKey->mask = in.mask;
    }
  }
  if (in.buffers.onDemand) return {out, {}, {}};  // no weights were written anywhere
  if (direct) {
    // The kernels wrote into the slices; a path that could not (ATen may return a fresh tensor
    // for a strided out=) is copied.
    for (int h = 0; h < m_heads; ++h) {
      const auto copyUnlessWritten = [h](const torch::Tensor& buffer, const torch::Tensor& t) {
        torch::Tensor slice = buffer.select(1, h);
        if (t.data_ptr() != slice.data_ptr()) slice.copy_(t);
      };
      copyUnlessWritten(in.buffers.attention, attentions[static_cast<std::size_t>(h)]);
      if (in.buffers.scores.defined())
        copyUnlessWritten(in.buffers.scores, scores[static_cast<std::size_t>(h)]);
    }
    if (in.buffers.written) in.buffers.written();
    return {out, in.buffers.attention, in.buffers.scores};
  }
  // [B, Tq, Tk] per head -> [B, H, Tq, Tk], the layout every model returns: straight into the
  // caller's buffers when it gave them (one copy instead of two), and scores only when asked.
  if (in.buffers.attention.defined()) {
    torch::Tensor attention = in.buffers.attention, kept = in.buffers.scores;
    torch::stack_out(attention, attentions, 1);
    if (kept.defined()) torch::stack_out(kept, scores, 1);
    if (in.buffers.written) in.buffers.written();
    return {out, attention, kept};
  }
  return {out, torch::stack(attentions, 1), torch::stack(scores, 1)};
}

// The same function with the heads' weights stacked, so all heads run as three matmuls and one
// batched attention. Training spends most of its time here; per-head modules cost 4x the kernel
// launches and autograd nodes.
AttentionOutput PerHeadAttentionImpl::forwardBatched(const AttentionInput& in) {
  std::vector<torch::Tensor> wq, wk, wv;
  for (int h = 0; h < m_heads; ++h) {
    HeadImpl* head = this->heads[h]->as<HeadImpl>();
    wq.push_back(head->query->weight);
    wk.push_back(head->key->weight);
    wv.push_back(head->value->weight);
  }
  const torch::Tensor& kvSource = in.context.defined() ? in.context : in.x;
  const int64_t B = in.x.size(0), Tq = in.x.size(1), Tk = kvSource.size(1), hs = m_dModel / m_heads;
  // [B, T, C] @ [C, H*hs] -> [B, H, T, hs]
  const auto split = [&](const torch::Tensor& src, const std::vector<torch::Tensor>& w, int64_t T) {
    return torch::matmul(src, torch::cat(w, 0).t()).view({B, T, m_heads, hs}).transpose(1, 2);
  };
  const torch::Tensor q = split(in.x, wq, Tq), k = split(kvSource, wk, Tk),
                      v = split(kvSource, wv, Tk);
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * in.scale;
  if (in.mask.defined()) scores = scores + in.mask.dense();
  torch::Tensor values = torch::matmul(torch::softmax(scores, -1), v);
  if (in.buffers.headMask.defined()) values = values * in.buffers.headMask.view({-1, 1, 1});
  return {proj(values.transpose(1, 2).reshape({B, Tq, m_dModel})), {}, {}};
}

}  // namespace attnscope
