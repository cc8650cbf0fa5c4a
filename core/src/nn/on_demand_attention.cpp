// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/on_demand_attention.h"

#include <limits>
#include <set>
#include <string>

#include "attnscope/error.h"

namespace attnscope {
namespace {

/// A tensor that owns exactly its elements on the CPU: q and k can be views into a bigger
/// buffer (a fused qkv projection), which a handle would keep alive whole.
torch::Tensor compact(const torch::Tensor& t) {
  if (!t.defined()) return t;
  torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  if (c.storage().nbytes() != static_cast<std::size_t>(c.numel()) * sizeof(float)) c = c.clone();
  return c;
}

/// A bias or mask as kept: broadcastable, so usually far smaller than [B, H, Tq, Tk] (one causal
/// mask [B, 1, T, T] for all layers, ALiBi's [1, H, 1, T]). Moved to the CPU, not copied there.
torch::Tensor onCpu(const torch::Tensor& t) {
  return t.defined() ? t.detach().to(torch::kCPU, torch::kFloat) : t;
}

}  // namespace

OnDemandAttention::OnDemandAttention(int64_t layers, int64_t B, int64_t H, int64_t Tq, int64_t Tk,
                                     int64_t kvHeads)
    : m_shape{layers, B, H, Tq, Tk},
      m_kvHeads(kvHeads),
      m_layers(static_cast<std::size_t>(layers)) {}

void OnDemandAttention::setLayer(int64_t slot, const KeptQueryKey& kept,
                                 const std::vector<int>& queryLengths) {
  m_queryLengths = queryLengths;
  const int64_t B = m_shape[1], H = m_shape[2], Tq = m_shape[3], Tk = m_shape[4];
  if (!kept.rowLogSumExp.defined() || !kept.queries.defined() || !kept.keys.defined())
    throw Error(ErrorKind::InvalidArgument,
                "layer " + std::to_string(slot) +
                    " does not compute its attention through the shared attention kernel, so it "
                    "cannot be recomputed on demand: run without on-demand attention");
  const auto shaped = [](const torch::Tensor& t, std::vector<int64_t> want) {
    return t.sizes().size() == want.size() &&
           t.sizes().slice(0, want.size() - 1) == at::IntArrayRef(want).slice(0, want.size() - 1);
  };
  if (!shaped(kept.queries, {B, H, Tq, 0}) || !shaped(kept.keys, {B, H, Tk, 0}) ||
      kept.rowLogSumExp.sizes() != at::IntArrayRef({B, H, Tq}))
    throw Error(ErrorKind::Internal, "layer " + std::to_string(slot) +
                                         " kept queries and keys of another shape than its "
                                         "attention's for on-demand attention");
  Layer& l = m_layers.at(static_cast<std::size_t>(slot));
  l.q = compact(kept.queries);
  // Grouped-query keys arrive repeated to one per query head: keep each kv head's once (a
  // quarter of the keys for Llama 3's 32 / 8), when the repeats really are copies.
  l.headsPerKey = 1;
  if (m_kvHeads > 0 && m_kvHeads < H && H % m_kvHeads == 0) {
    const int64_t group = H / m_kvHeads;
    const torch::Tensor k = kept.keys.detach();
    if (torch::equal(k.select(1, 0), k.select(1, group - 1))) {
      l.k = compact(k.slice(1, 0, H, group));
      l.headsPerKey = group;
    }
  }
  if (l.headsPerKey == 1) l.k = compact(kept.keys);
  l.rowLogSumExp = compact(kept.rowLogSumExp);
  std::vector<int64_t> full{B, H, Tq, Tk};
  l.bias = onCpu(kept.bias);
  if (l.bias.defined()) l.bias.expand(full);  // throws now, not at the first tile
  if (const auto runs = kept.mask.sharedRanges()) {
    if (runs->queries != Tq || runs->keys != Tk || (runs->items != 1 && runs->items != B))
      throw Error(ErrorKind::Internal, "layer " + std::to_string(slot) +
                                           " kept a mask of another shape than its attention's");
    l.ranges = runs;
  } else if (kept.mask.defined()) {
    const torch::Tensor mask = onCpu(kept.mask.dense());
    mask.expand(full);
    l.ranges = rangesOf(mask);
    if (!l.ranges) l.mask = mask;
  }
  l.scale = kept.scale;
  l.softcap = kept.softcap;
}

std::shared_ptr<const AttentionMask::Ranges> OnDemandAttention::rangesOf(
    const torch::Tensor& mask) {
  if (m_lastMask.defined() && mask.data_ptr() == m_lastMask.data_ptr() &&
      mask.sizes() == m_lastMask.sizes() && mask.strides() == m_lastMask.strides())
    return m_lastRanges;
  const int64_t B = m_shape[1], Tq = m_shape[3], Tk = m_shape[4];
  // [B or 1, 1, Tq or 1, Tk]: one mask for every head, as buildMask makes them.
  std::vector<int64_t> sizes(static_cast<std::size_t>(4 - std::min<int64_t>(4, mask.dim())), 1);
  sizes.insert(sizes.end(), mask.sizes().begin(), mask.sizes().end());
  if (sizes.size() != 4 || sizes[1] != 1) return nullptr;
  const torch::Tensor m = mask.reshape(sizes).expand({sizes[0], 1, Tq, Tk});
  auto r = std::make_shared<AttentionMask::Ranges>();
  r->batch = B;
  r->items = sizes[0] == 1 ? 1 : B;
  r->queries = Tq;
  r->keys = Tk;
  r->first.resize(static_cast<std::size_t>(r->items * Tq));
  r->end.resize(r->first.size());
  const float* base = m.data_ptr<float>();
  const int64_t sb = m.stride(0), sq = m.stride(2), sk = m.stride(3);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t b = 0; b < r->items; ++b)
    for (int64_t i = 0; i < Tq; ++i) {
      const float* row = base + b * sb + i * sq;
      int64_t first = 0;
      while (first < Tk && row[first * sk] == kNegInf) ++first;
      int64_t end = first;
      while (end < Tk && row[end * sk] == 0.0f) ++end;
      for (int64_t j = end; j < Tk; ++j)
        if (row[j * sk] != kNegInf) return nullptr;  // not one run of visible keys: keep it
      r->first[static_cast<std::size_t>(b * Tq + i)] = static_cast<int32_t>(first);
      r->end[static_cast<std::size_t>(b * Tq + i)] = static_cast<int32_t>(end);
    }
  m_lastMask = mask;
  m_lastRanges = r;
  return r;
}

std::array<int64_t, 5> OnDemandAttention::shape() const { return m_shape; }

void OnDemandAttention::tile(int slot, int item, int head, int q0, int q1, int k0, int k1,
                             float* out) const {
  const int64_t Tq = m_shape[3], Tk = m_shape[4];
  if (slot < 0 || slot >= m_shape[0] || item < 0 || item >= m_shape[1] || head < 0 ||
      head >= m_shape[2] || q0 < 0 || q1 < q0 || q1 > Tq || k0 < 0 || k1 < k0 || k1 > Tk)
    throw Error(ErrorKind::InvalidArgument,
                "attention tile out of range: layer slot " + std::to_string(slot) + ", item " +
                    std::to_string(item) + ", head " + std::to_string(head) + ", rows " +
                    std::to_string(q0) + ".." + std::to_string(q1) + ", keys " +
                    std::to_string(k0) + ".." + std::to_string(k1));
  const int64_t rows = q1 - q0, cols = k1 - k0;
  if (rows == 0 || cols == 0) return;
  const Layer& l = m_layers[static_cast<std::size_t>(slot)];
  if (!l.q.defined())
    throw Error(ErrorKind::Internal, "attention on demand asked of layer slot " +
                                         std::to_string(slot) + " before the run kept it");
  c10::InferenceMode inference;
  torch::Tensor result = torch::from_blob(out, {rows, cols}, torch::kFloat);
  const int real = m_queryLengths.empty() ? static_cast<int>(Tq)
                                          : m_queryLengths[static_cast<std::size_t>(item)];
  const int64_t live = std::max<int64_t>(0, std::min<int64_t>(q1, real) - q0);
  if (live < rows) result.narrow(0, live, rows - live).zero_();
  if (live == 0) return;
  const torch::Tensor q = l.q[item][head].narrow(0, q0, live);
  const torch::Tensor k = l.k[item][head / l.headsPerKey].narrow(0, k0, cols);
  torch::Tensor s = result.narrow(0, 0, live);
  // The order of the forward's operations (blockedAttention): the product, its scale, the cap,
  // then the bias and the mask.
  at::mm_out(s, q, k.t());
  s.mul_(static_cast<float>(l.scale));
  if (l.softcap > 0) s.div_(l.softcap).tanh_().mul_(l.softcap);
  const std::vector<int64_t> full{m_shape[1], m_shape[2], Tq, Tk};
  for (const torch::Tensor* add : {&l.bias, &l.mask}) {
    if (add->defined())
      s.add_(add->expand(full)[item][head].narrow(0, q0, live).narrow(1, k0, cols));
  }
  s.sub_(l.rowLogSumExp[item][head].narrow(0, q0, live).unsqueeze(1)).exp_();
  if (l.ranges) {
    // exp(−inf) = 0 is what the masked cells' weights are; set, not added.
    const AttentionMask::Ranges& r = *l.ranges;
    const int64_t at = (r.items == 1 ? 0 : item) * Tq;
    for (int64_t i = 0; i < live; ++i) {
      float* row = out + i * cols;
      const int64_t a = r.first[static_cast<std::size_t>(at + q0 + i)],
                    e = r.end[static_cast<std::size_t>(at + q0 + i)];
      for (int64_t j = 0; j < cols; ++j)
        if (k0 + j < a || k0 + j >= e) row[j] = 0.0f;
    }
  }
}

uint64_t OnDemandAttention::bytes() const {
  std::set<const void*> seen;
  uint64_t total = 0;
  for (const Layer& l : m_layers) {
    for (const torch::Tensor* t : {&l.q, &l.k, &l.bias, &l.mask, &l.rowLogSumExp}) {
      if (!t->defined()) continue;
      if (seen.insert(t->storage().data()).second) total += t->storage().nbytes();
    }
    if (l.ranges && seen.insert(l.ranges.get()).second)
      total += (l.ranges->first.size() + l.ranges->end.size()) * sizeof(int32_t);
  }
  return total;
}

}  // namespace attnscope
