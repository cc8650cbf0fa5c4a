// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/attention_tail.h"

#include "attnscope/error.h"
#include "nn/head_value_norms.h"

namespace attnscope {

torch::Tensor attentionTail(QkvHeads heads, const SdpaOptions& sdpa, const AttentionTail& tail,
                            TraceRecorder& rec, int* outStep) {
  if (tail.valueNorms.defined()) {
    if (!tail.output.weightByHead)
      throw Error(ErrorKind::Internal, "value norms asked of an attention block without them");
    tail.valueNorms.copy_(headValueNorms(heads.v, tail.output.weightByHead()));
  }
  // Each temporary is released right after its last reader: the caching allocator keeps the
  // blocks a layer holds at once for the whole run, so what is alive at the busiest point stays
  // resident.
  torch::Tensor merged;
  int s = -1;
  {
    const ScaledDotProduct out = scaledDotProduct(heads.q, heads.k, heads.v, sdpa, rec, heads.qStep,
                                                  heads.kStep, heads.vStep);
    heads = QkvHeads();
    merged = mergeHeads(out.values);
    s = rec.record(tail.stepPrefix + "merged", tail.mergeExpression, "merge_heads", merged,
                   {out.valuesStep});
  }
  torch::Tensor h = tail.output.forward(merged);
  merged = torch::Tensor();
  *outStep = rec.record(tail.stepPrefix + "attn_out", tail.output.expression, "linear", h, {s});
  return h;
}

}  // namespace attnscope
