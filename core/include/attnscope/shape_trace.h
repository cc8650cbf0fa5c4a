// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

/// One step of an attention computation, recorded while it ran. The shape is read from the real
/// tensor, never computed on the side, so the pipeline diagram cannot drift from the code.
struct TraceStep {
  std::string name;  // "qkv", "q", "attention"
  std::string op;    // the PyTorch expression that produced it: "qkv.reshape(B, T, H, 3*hd)"
  std::string kind;  // one of traceStepKinds(): "linear", "softmax", "rotary", ...
  std::vector<int64_t> shape;
  int head = -1;            // the per-head branch this step belongs to, -1 when shared by all heads
  std::vector<int> inputs;  // indices of the steps it was computed from (the diagram's arrows)
};

/// The trace of one attention layer.
struct LayerTrace {
  std::string variant;  // "fused", "per-head", "gpt2"
  std::string stack;    // encoder-decoders: "encoder" or "decoder"; empty for one stack
  std::vector<TraceStep> steps;

  /// Appends a step and returns its index, for use as another step's input.
  int add(TraceStep step) {
    steps.push_back(std::move(step));
    return static_cast<int>(steps.size()) - 1;
  }
};

/// One kind of step: what every family records and the pipeline view draws and explains.
struct TraceStepKind {
  std::string kind;         // "layernorm"
  std::string arrow;        // the short label on the diagram's arrow: "LayerNorm"
  std::string explanation;  // one sentence for a student
};

/// Every step kind a family may record, defined once here; a family that needs a new kind adds
/// it to this list (core/src/runtime/trace_step_kinds.cpp).
const std::vector<TraceStepKind>& traceStepKinds();
/// The entry of a kind, or nullptr for one that is not in the list.
const TraceStepKind* findTraceStepKind(const std::string& kind);

}  // namespace attnscope
