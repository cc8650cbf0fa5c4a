// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/attention_mask.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>

namespace attnscope {
namespace {
std::atomic<uint64_t> g_tensorsMade{0};
}  // namespace

struct AttentionMask::State {
  Ranges ranges;
  torch::Device device = torch::kCPU;
  std::once_flag made;
  torch::Tensor dense;  // made from the runs on first use
};

AttentionMask::AttentionMask(torch::Tensor additive) : m_dense(std::move(additive)) {}

AttentionMask::AttentionMask(Ranges ranges, const torch::Device& device)
    : m_state(std::make_shared<State>()) {
  m_state->ranges = std::move(ranges);
  m_state->device = device;
}

const torch::Tensor& AttentionMask::dense() const {
  if (!m_state) return m_dense;
  State& s = *m_state;
  std::call_once(s.made, [&s] {
    const Ranges& r = s.ranges;
    const auto runs = [&r](const std::vector<int32_t>& v) {
      return torch::from_blob(const_cast<int32_t*>(v.data()), {r.items, r.queries, 1}, torch::kInt)
          .to(torch::kLong);
    };
    const torch::Tensor keys = torch::arange(r.keys, torch::kLong).view({1, 1, r.keys});
    const torch::Tensor hidden = keys.lt(runs(r.first)).logical_or_(keys.ge(runs(r.end)));
    s.dense = torch::zeros({r.items, 1, r.queries, r.keys})
                  .masked_fill_(hidden.unsqueeze(1), -std::numeric_limits<float>::infinity())
                  .expand({r.batch, 1, r.queries, r.keys})
                  .contiguous()
                  .to(s.device);
    ++g_tensorsMade;
  });
  return s.dense;
}

uint64_t AttentionMask::tensorsMade() { return g_tensorsMade.load(); }

const AttentionMask::Ranges* AttentionMask::ranges() const {
  return m_state ? &m_state->ranges : nullptr;
}

std::shared_ptr<const AttentionMask::Ranges> AttentionMask::sharedRanges() const {
  if (!m_state) return nullptr;
  return std::shared_ptr<const Ranges>(m_state, &m_state->ranges);
}

AttentionMask AttentionMask::to(const torch::Device& device) const {
  if (!m_state) return m_dense.defined() ? AttentionMask(m_dense.to(device)) : AttentionMask();
  if (device == m_state->device) return *this;
  return AttentionMask(m_state->ranges, device);
}

AttentionMask buildMask(const MaskOptions& o) {
  const int64_t B = static_cast<int64_t>(o.keyLengths.size()), Tq = o.queries, Tk = o.keys;
  bool padded = false;
  for (int len : o.keyLengths) padded |= len < Tk;
  const bool windowed = o.slidingWindow > 0 && o.slidingWindow < Tk;
  const bool banded = o.windowRadius >= 0 && o.windowRadius < std::max(Tq, Tk) - 1;
  // One new query after cached keys (generation) sees every key: no mask to build each step.
  const bool hidesKeys = o.causal && !(o.queryOffset > 0 && Tq == 1 && o.queryOffset + 1 >= Tk);
  if (!hidesKeys && !padded && !windowed && !banded) return {};
  AttentionMask::Ranges r;
  r.batch = B;
  r.items = padded ? B : 1;  // without padding every item's rows are the same
  r.queries = Tq;
  r.keys = Tk;
  r.first.resize(static_cast<std::size_t>(r.items * Tq));
  r.end.resize(r.first.size());
  for (int64_t b = 0; b < r.items; ++b) {
    const int64_t length = std::min<int64_t>(Tk, o.keyLengths[static_cast<std::size_t>(b)]);
    for (int64_t i = 0; i < Tq; ++i) {
      const int64_t p = o.queryOffset + i;  // the query's position among the keys
      int64_t first = 0, end = length;
      if (o.causal) end = std::min(end, p + 1);
      if (windowed) first = std::max(first, p - (o.slidingWindow - 1));
      if (banded) {
        first = std::max(first, p - o.windowRadius);
        end = std::min(end, p + o.windowRadius + 1);
      }
      if (first >= end) first = 0, end = 1;  // sees nothing: keeps key 0
      r.first[static_cast<std::size_t>(b * Tq + i)] = static_cast<int32_t>(first);
      r.end[static_cast<std::size_t>(b * Tq + i)] = static_cast<int32_t>(end);
    }
  }
  return AttentionMask(std::move(r), torch::kCPU);
}

torch::Tensor causalMask(int64_t T) {
  MaskOptions o;
  o.keyLengths = {static_cast<int>(T)};
  o.queries = o.keys = T;
  o.causal = true;
  return buildMask(o).dense();
}

}  // namespace attnscope
