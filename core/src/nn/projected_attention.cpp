// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/projected_attention.h"

#include "generation/layer_kv_cache.h"
#include "nn/attention_tail.h"
#include "nn/qkv_layout.h"

namespace attnscope {
namespace {

/// The output projection `o` as attentionTail calls it, its steps named with `name` ("cross_").
AttentionTail outputTail(const AttentionProjections& p, const std::string& name) {
  AttentionTail tail;
  Linear output = p.o;  // a handle: forward is not const
  tail.output = {[output](const torch::Tensor& t) mutable { return output(t); },
                 "self." + p.oName + "(merged)",
                 {}};
  tail.stepPrefix = name;
  return tail;
}

}  // namespace

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
  LayerKvCache* cache = sdpa.buffers.kvCache;
  if (cross && cache && cache->length() > 0) {
    // Generation: the encoder's output does not change between steps, so its keys and values
    // were projected and cached by the first step (scaledDotProduct's append); read them back
    // and attend with the cache detached, which would append them again.
    auto [k, v] = cache->stored(sdpa.head);
    const int kStep = rec.record(name + "k", "cached " + p.kName + "(encoder_hidden_states)",
                                 "input", k, {memoryStep});
    const int vStep = rec.record(name + "v", "cached " + p.vName + "(encoder_hidden_states)",
                                 "input", v, {memoryStep});
    SdpaOptions reuse = sdpa;
    reuse.buffers.kvCache = nullptr;
    return attentionTail({std::move(q), std::move(k), std::move(v), qStep, kStep, vStep}, reuse,
                         outputTail(p, name), rec, outStep);
  }
  auto [k, kStep] = project(p.k, p.kName, "k", memory, cross ? memoryStep : xStep);
  auto [v, vStep] = project(p.v, p.vName, "v", memory, cross ? memoryStep : xStep);
  return attentionTail({std::move(q), std::move(k), std::move(v), qStep, kStep, vStep}, sdpa,
                       outputTail(p, name), rec, outStep);
}

}  // namespace attnscope
