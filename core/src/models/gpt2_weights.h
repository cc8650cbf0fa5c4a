// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>

#include "io/safetensors_checkpoint.h"

namespace attnscope {

/// Copies a Hugging Face GPT-2 checkpoint into the module's parameters, one tensor at a time.
/// Names may carry the "transformer." prefix (GPT2LMHeadModel) or not (GPT2Model); the attention
/// mask buffers (attn.bias, attn.masked_bias) and the tied lm_head.weight are skipped.
/// Throws Error(Format) naming the tensor and the file for a missing or unexpected tensor, a
/// non-float dtype, or a shape that disagrees with config.json.
void loadGpt2Weights(torch::nn::Module& module, const SafetensorsCheckpoint& checkpoint,
                     const std::string& configSummary);

}  // namespace attnscope
