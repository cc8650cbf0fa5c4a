// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/packed_weights.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "nn/row_order.h"

namespace attnscope {
namespace {

// Packed weights by where their bytes are. Never destroyed: a model kept in a static may close
// after these would be.
std::mutex& registryMutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::unordered_map<const void*, std::shared_ptr<const PackedWeightLayout>>& registry() {
  static auto* r = new std::unordered_map<const void*, std::shared_ptr<const PackedWeightLayout>>();
  return *r;
}

}  // namespace

int64_t PackedWeightLayout::storedRow(int64_t r) const {
  return storedRowOf(r, rows, permutedHeads, qkvHeads);
}

PackedWeights::~PackedWeights() {
  const std::lock_guard<std::mutex> lock(registryMutex());
  for (const auto& [name, t] : m_tensors) registry().erase(t.data_ptr());
}

void PackedWeights::add(const std::string& name, const uint8_t* data, PackedWeightLayout layout) {
  // The file's bytes, read-only: nothing writes through this view (the modules are frozen).
  torch::Tensor t = torch::from_blob(const_cast<uint8_t*>(data), {layout.rows, layout.rowBytes},
                                     torch::TensorOptions().dtype(torch::kByte));
  {
    const std::lock_guard<std::mutex> lock(registryMutex());
    registry()[t.data_ptr()] = std::make_shared<const PackedWeightLayout>(std::move(layout));
  }
  m_tensors[name] = std::move(t);
}

const torch::Tensor* PackedWeights::find(const std::string& name) const {
  const auto it = m_tensors.find(name);
  return it == m_tensors.end() ? nullptr : &it->second;
}

std::shared_ptr<const PackedWeightLayout> packedLayout(const torch::Tensor& w) {
  if (!w.defined() || w.scalar_type() != torch::kByte || !w.device().is_cpu() || w.dim() != 2)
    return nullptr;
  std::shared_ptr<const PackedWeightLayout> layout;
  {
    const std::lock_guard<std::mutex> lock(registryMutex());
    const auto it = registry().find(w.data_ptr());
    if (it == registry().end()) return nullptr;
    layout = it->second;
  }
  // A view of part of a packed weight is not the weight.
  if (w.size(0) != layout->rows || w.size(1) != layout->rowBytes || !w.is_contiguous())
    return nullptr;
  return layout;
}

void unpackRows(const torch::Tensor& w, const PackedWeightLayout& layout, int64_t first,
                int64_t count, float* out) {
  TORCH_CHECK(first >= 0 && count >= 0 && first + count <= layout.rows,
              "rows outside a packed weight");
  const auto* base = static_cast<const uint8_t*>(w.data_ptr());
  // About 64k values a task: a row of a 2048-wide Q4_K weight takes ~2 µs.
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, layout.columns));
  at::parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      layout.unpack(base + layout.storedRow(first + r) * layout.rowBytes, out + r * layout.columns,
                    layout.columns);
  });
}

torch::Tensor unpackWeight(const torch::Tensor& w, const PackedWeightLayout& layout) {
  torch::Tensor out = torch::empty({layout.rows, layout.columns}, torch::kFloat);
  unpackRows(w, layout, 0, layout.rows, out.data_ptr<float>());
  return layout.transposed ? out.t() : out;
}

torch::Tensor unpackEmbedding(const torch::Tensor& w, const PackedWeightLayout& layout,
                              const torch::Tensor& ids) {
  TORCH_CHECK(!layout.transposed, "a transposed packed weight is not an embedding table");
  const torch::Tensor flat = ids.to(torch::kLong).reshape({-1}).contiguous();
  const int64_t n = flat.numel();
  torch::Tensor out = torch::empty({n, layout.columns}, torch::kFloat);
  const int64_t* id = flat.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(id[i] >= 0 && id[i] < layout.rows, "token id ", id[i],
                " is outside the embedding's ", layout.rows, " rows");
    unpackRows(w, layout, id[i], 1, out.data_ptr<float>() + i * layout.columns);
  }
  std::vector<int64_t> shape(ids.sizes().begin(), ids.sizes().end());
  shape.push_back(layout.columns);
  return out.view(shape);
}

torch::Tensor floatWeight(const torch::Tensor& w) {
  if (const auto layout = packedLayout(w)) return unpackWeight(w, *layout);
  return w.to(torch::kFloat);
}

}  // namespace attnscope
