// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "nn/attention_output.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

struct ScaledDotProduct {
  torch::Tensor values;     // [..., Tq, hd]
  torch::Tensor attention;  // [..., Tq, Tk]
  torch::Tensor scores;     // [..., Tq, Tk] scaled + masked, before softmax
  int valuesStep = -1;      // trace index of `values`
};

/// softmax(q·kᵀ·scale + mask)·v written out step by step, because LibTorch 1.13 has no public
/// scaled_dot_product_attention and because every step must appear in the trace.
/// q: [..., Tq, hd], k and v: [..., Tk, hd], mask: broadcastable to [..., Tq, Tk] or undefined.
/// qStep/kStep/vStep are the trace indices the new steps hang from. Scale and mask are applied in
/// place, so one [..., Tq, Tk] temporary at most is allocated besides the buffers.
ScaledDotProduct scaledDotProduct(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, const torch::Tensor& mask, double scale,
                                  const std::string& scaleText, TraceRecorder& rec, int qStep,
                                  int kStep, int vStep, int head = -1,
                                  const AttentionBuffers& buffers = {});

}  // namespace attnscope
