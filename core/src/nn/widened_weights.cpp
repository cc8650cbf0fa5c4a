// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/widened_weights.h"

namespace attnscope {

namespace {
std::atomic<uint64_t> g_bytesInProcess{0};
thread_local WidenedWeights* t_active = nullptr;
thread_local uint64_t t_budget = 0;
}  // namespace

WidenedWeights::~WidenedWeights() { clear(); }

torch::Tensor WidenedWeights::widen(const torch::Tensor& w, uint64_t budget) {
  const torch::Tensor copy = kept(w, budget);
  return copy.defined() ? copy : w.to(torch::kFloat);
}

torch::Tensor WidenedWeights::kept(const torch::Tensor& w, uint64_t budget) {
  const bool keepable =
      w.device().is_cpu() && !(torch::GradMode::is_enabled() && w.requires_grad()) && budget > 0;
  if (!keepable) return {};
  Key key{w.data_ptr(),
          {w.sizes().begin(), w.sizes().end()},
          {w.strides().begin(), w.strides().end()},
          static_cast<int>(w.scalar_type())};
  const uint64_t size = static_cast<uint64_t>(w.numel()) * sizeof(float);
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    if (const auto found = m_copies.find(key); found != m_copies.end()) return found->second;
    if (m_bytes + size > budget) return {};
  }
  // Widened outside the lock: another thread's run may widen other weights meanwhile.
  torch::Tensor wide;
  {
    torch::NoGradGuard noGrad;   // a kept copy is a constant, never part of a graph
    wide = w.to(torch::kFloat);  // the layout per-use widening gives: the same products
  }
  const std::lock_guard<std::mutex> lock(m_mutex);
  if (const auto found = m_copies.find(key); found != m_copies.end()) return found->second;
  if (m_bytes + size > budget) return {};
  m_copies.emplace(std::move(key), wide);
  m_bytes += size;
  g_bytesInProcess += size;
  return wide;
}

uint64_t WidenedWeights::bytes() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_bytes;
}

void WidenedWeights::clear() {
  const std::lock_guard<std::mutex> lock(m_mutex);
  m_copies.clear();
  g_bytesInProcess -= m_bytes;
  m_bytes = 0;
}

uint64_t WidenedWeights::bytesInProcess() { return g_bytesInProcess; }

WidenedWeights::Scope::Scope(WidenedWeights* cache, uint64_t budget)
    : m_previous(t_active), m_previousBudget(t_budget) {
  t_active = budget > 0 ? cache : nullptr;
  t_budget = budget;
}

WidenedWeights::Scope::~Scope() {
  t_active = m_previous;
  t_budget = m_previousBudget;
}

WidenedWeights* WidenedWeights::active() { return t_active; }

uint64_t WidenedWeights::activeBudget() { return t_budget; }

}  // namespace attnscope
