// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/sparse_moe_block.h"

#include <string>

namespace attnscope {

torch::Tensor SparseMoeBlock::forward(const torch::Tensor& x, Activation act, TraceRecorder& rec,
                                      int inStep, int* outStep, MoeRouting* routing) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const torch::Tensor logits = gate(x);  // [B, T, E]
  int s = rec.record("router_logits", "self.gate(x)", "linear", logits, {inStep});
  const torch::Tensor probs = torch::softmax(logits.to(torch::kFloat), -1);
  s = rec.record("router_probs", "softmax(router_logits, dim=-1)", "softmax", probs, {s});
  // torch.topk, as transformers calls it: the k largest, largest first. Between equal
  // probabilities the order (and, at the k-th place, the choice) is whatever topk returns; on the
  // CPU that is the lower expert index first. Real routers' float32 probabilities are almost
  // never equal, and the reference test's fixtures have none.
  auto [weights, chosen] = torch::topk(probs, topK, -1);  // [B, T, k] each
  if (normTopK) weights = weights / weights.sum(-1, true);
  s = rec.record("router_topk",
                 normTopK ? "topk(router_probs, k) / sum of the k" : "topk(router_probs, k)",
                 "topk", weights, {s});
  // Each expert runs on the tokens that chose it, its output weighted and added at their rows.
  const torch::Tensor flat = x.reshape({B * T, C});
  const torch::Tensor flatChosen = chosen.reshape({B * T, topK});
  const torch::Tensor flatWeights = weights.reshape({B * T, topK}).to(x.scalar_type());
  torch::Tensor out = torch::zeros_like(flat);
  for (std::size_t e = 0; e < experts.size(); ++e) {
    const torch::Tensor hit = flatChosen.eq(static_cast<int64_t>(e)).nonzero();  // [n, 2]
    if (hit.size(0) == 0) continue;
    const torch::Tensor rows = hit.select(1, 0), slots = hit.select(1, 1);
    GatedMlp& m = experts[e];
    const torch::Tensor in = flat.index_select(0, rows);
    torch::Tensor h = activate(act, m.gate(in)).mul_(m.up(in));
    h = m.down(h) * flatWeights.index({rows, slots}).unsqueeze(1);
    out = out.index_add(0, rows, h);
  }
  out = out.view({B, T, C});
  *outStep = rec.record("experts", "sum over the k chosen of weight * expert(x)", "experts", out,
                        {inStep, s});
  if (sharedExpert.gate) {  // Qwen2-MoE: every token through the shared expert, gated
    GatedMlp& m = sharedExpert;
    torch::Tensor h = activate(act, m.gate(x)).mul_(m.up(x));
    h = m.down(h).mul_(torch::sigmoid(sharedExpertGate(x)));
    const int sharedStep =
        rec.record("shared_expert", "sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x)",
                   "shared_expert", h, {inStep});
    out = out.add_(h);
    *outStep = rec.record("moe_out", "experts + shared_expert", "add", out, {*outStep, sharedStep});
  }
  if (routing) {
    routing->experts = chosen;
    routing->weights = weights;
  }
  return out;
}

}  // namespace attnscope
