// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

/// One step of an attention computation, recorded while it ran. The shape is read from the real
/// tensor, never computed on the side, so the pipeline diagram cannot drift from the code.
struct TraceStep {
  std::string name;    // "qkv", "q", "attention"
  std::string op;      // the PyTorch expression that produced it: "qkv.reshape(B, T, H, 3*hd)"
  std::string kind;    // input|linear|reshape|permute|chunk|split|matmul|scale|mask|softmax|concat|output|layernorm|add|gelu|embedding
  std::vector<int64_t> shape;
  int head = -1;            // the per-head branch this step belongs to, -1 when shared by all heads
  std::vector<int> inputs;  // indices of the steps it was computed from (the diagram's arrows)
};

/// The trace of one attention layer.
struct LayerTrace {
  std::string variant;  // "fused", "per-head", "gpt2"
  std::vector<TraceStep> steps;

  /// Appends a step and returns its index, for use as another step's input.
  int add(TraceStep step) {
    steps.push_back(std::move(step));
    return static_cast<int>(steps.size()) - 1;
  }
};

}  // namespace attnscope
