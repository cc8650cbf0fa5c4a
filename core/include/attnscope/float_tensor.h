// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/tensor_allocator.h"

namespace attnscope {

/// A dense row-major float32 tensor: the plain type that carries tensors across the core boundary,
/// so no torch header ever reaches code that includes Qt.
struct FloatTensor {
  using Storage = std::vector<float, TensorAllocator<float>>;
  std::vector<int64_t> shape;
  Storage data;

  FloatTensor() = default;
  /// Zeros.
  explicit FloatTensor(std::vector<int64_t> s) : shape(std::move(s)), data(countOf(shape), 0.0f) {}
  /// Unwritten elements, for a producer that writes every one (a model's attention): no pass
  /// over the memory before the real one.
  static FloatTensor uninitialized(std::vector<int64_t> s) {
    FloatTensor t;
    t.data.resize(countOf(s));
    t.shape = std::move(s);
    return t;
  }

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t dim(std::size_t i) const { return i < shape.size() ? shape[i] : 0; }
  std::size_t rank() const { return shape.size(); }
  bool empty() const { return data.empty(); }
  /// "[30, 8, 5, 64]"
  std::string shapeString() const { return formatShape(shape); }

  static std::size_t countOf(const std::vector<int64_t>& s) {
    std::size_t n = 1;
    for (int64_t d : s) n *= static_cast<std::size_t>(d < 0 ? 0 : d);
    return n;
  }
  static std::string formatShape(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i) out += ", ";
      out += std::to_string(s[i]);
    }
    return out + "]";
  }
};

}  // namespace attnscope
