// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/projected_attention.h"

#include "nn/attention_tail.h"
#include "nn/qkv_layout.h"

namespace attnscope {

torch::Tensor projectedAttention(const AttentionProjections& p, const torch::Tensor& x, int xStep,
                                 const torch::Tensor& memory, int memoryStep, int64_t heads,
                                 const SdpaOptions& sdpa, TraceRecorder& rec,
                                 const std::string& prefix, int* outStep) {
  const std::string name = prefix.empty() ? std::string() : prefix + "_";
  const bool cross = !prefix.empty();
  // [B, T, H·hd] -> [B, H, T, hd]
  const auto project = [&](Linear proj, const std::string& module, const char* part,
                           const torch::Tensor& in, int inStep) {
    const torch::Tensor flat = proj(in);
    const std::string arg = in.is_same(x) ? "x" : "encoder_hidden_states";
    const int s = rec.record(name + part + "_proj", "self." + module + "(" + arg + ")", "linear",
                             flat, {inStep});
    const torch::Tensor t = splitHeads(flat, heads);
    return std::make_pair(t, rec.record(name + part, module + ".view(B, T, H, hd).transpose(1, 2)",
                                        "permute", t, {s}));
  };
  auto [q, qStep] = project(p.q, p.qName, "q", x, xStep);
  auto [k, kStep] = project(p.k, p.kName, "k", memory, cross ? memoryStep : xStep);
  auto [v, vStep] = project(p.v, p.vName, "v", memory, cross ? memoryStep : xStep);
  AttentionTail tail;
  Linear output = p.o;  // a handle: forward is not const
  tail.output = {[output](const torch::Tensor& t) mutable { return output(t); },
                 "self." + p.oName + "(merged)",
                 {}};
  tail.stepPrefix = name;
  return attentionTail({std::move(q), std::move(k), std::move(v), qStep, kStep, vStep}, sdpa, tail,
                       rec, outStep);
}

}  // namespace attnscope
