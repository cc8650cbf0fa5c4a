// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/rotary_attention.h"

#include <string>
#include <tuple>
#include <utility>

#include "nn/head_value_norms.h"

namespace attnscope {

QkvHeads rotaryQkvHeads(const torch::Tensor& x, int xStep, RotaryAttention& m, RotaryCache& rotary,
                        const torch::Tensor& positions, TraceRecorder& rec) {
  const int64_t H = m.heads, Hkv = m.kvHeads;
  // [B, T, H·hd] -> [B, H, T, hd] (k and v: Hkv heads).
  const auto project = [&](Linear& proj, RmsNorm* whole, int64_t heads, const char* name) {
    torch::Tensor p = proj(x);
    const std::string n = name;
    int s = rec.record(n + "_proj", "self." + n + "_proj(x)", "linear", p, {xStep});
    if (whole) {  // one root-mean-square over all of a token's heads (OLMo 2, OLMoE)
      p = (*whole)(p);
      s = rec.record(n + "_norm", "self." + n + "_norm(" + n + "_proj(x))", "rmsnorm", p, {s});
    }
    const torch::Tensor t = splitHeads(p, heads);
    return std::make_pair(
        t, rec.record(name, std::string(name) + ".view(B, T, -1, hd).transpose(1, 2)", "permute", t,
                      {s}));
  };
  QkvHeads r;
  const bool whole = m.qNorm && m.wholeNorms;
  std::tie(r.q, r.qStep) = project(m.q, whole ? &m.qNorm : nullptr, H, "q");
  std::tie(r.k, r.kStep) = project(m.k, whole ? &m.kNorm : nullptr, Hkv, "k");
  std::tie(r.v, r.vStep) = project(m.v, nullptr, Hkv, "v");
  if (m.qNorm && !m.wholeNorms) {
    // Qwen3 and Gemma 3 normalise each head's query and key over head_dim before the rotation.
    r.q = m.qNorm(r.q);
    r.qStep = rec.record("q_norm", "self.q_norm(q)", "rmsnorm", r.q, {r.qStep});
    r.k = m.kNorm(r.k);
    r.kStep = rec.record("k_norm", "self.k_norm(k)", "rmsnorm", r.k, {r.kStep});
  }
  const auto& [cos, sin] = rotary.cosSin(positions);
  const std::string rope = rotary.rotary().describe(r.q.size(3));  // before r is moved from
  return rotateAndRepeat(std::move(r), H, cos, sin, rope, rec);
}

QkvHeads rotateAndRepeat(QkvHeads r, int64_t heads, const torch::Tensor& cos,
                         const torch::Tensor& sin, const std::string& rope, TraceRecorder& rec) {
  const int64_t H = heads, Hkv = r.k.size(1);
  const std::string op = "apply_rotary_pos_emb (" + rope + ")";
  r.q = RotaryEmbedding::apply(r.q, cos, sin);
  r.qStep = rec.record("q_rot", op, "rotary", r.q, {r.qStep});
  r.k = RotaryEmbedding::apply(r.k, cos, sin);
  r.kStep = rec.record("k_rot", op, "rotary", r.k, {r.kStep});
  if (Hkv != H) {
    const std::string repeat = "repeat_kv(·, " + std::to_string(H / Hkv) + ")";
    r.k = repeatKv(r.k, H / Hkv);
    r.kStep = rec.record("k_repeat", "k " + repeat, "repeat_kv", r.k, {r.kStep});
    r.v = repeatKv(r.v, H / Hkv);
    r.vStep = rec.record("v_repeat", "v " + repeat, "repeat_kv", r.v, {r.vStep});
  }
  return r;
}

torch::Tensor rotaryAttention(const torch::Tensor& x, int xStep, RotaryAttention& m,
                              RotaryCache& rotary, const torch::Tensor& positions,
                              const SdpaOptions& sdpa, const torch::Tensor& valueNorms,
                              TraceRecorder& rec, int* outStep) {
  QkvHeads heads = rotaryQkvHeads(x, xStep, m, rotary, positions, rec);
  AttentionTail tail;
  tail.output = {[&](const torch::Tensor& t) { return m.o(t); }, "self.o_proj(merged)",
                 [&] { return outputWeightByHead(m.o->weight, m.heads); }};
  tail.valueNorms = valueNorms;  // v has one head per query head here
  return attentionTail(std::move(heads), sdpa, tail, rec, outStep);
}

}  // namespace attnscope
