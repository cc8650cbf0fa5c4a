// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "io/safetensors_checkpoint.h"

namespace attnscope {

class PackedWeights;

/// How a family's parameter names relate to the tensor names in its checkpoints.
struct WeightRules {
  std::string family;                 // "GPT-2", for messages
  std::vector<std::string> prefixes;  // tried before no prefix: "transformer.", "model.", "bert."
  std::vector<std::string>
      ignoredSuffixes;  // buffers, not weights: ".attn.bias", ".tril", "rotary_emb.inv_freq"
  std::vector<std::string>
      ignoredNames;  // tensors the family does not use: "lm_head.weight" when tied
  std::vector<std::string>
      ignoredPrefixes;  // parts of the checkpoint the family does not show: "vision_tower."
  /// {parameter, tensor that may stand for it}: tied embeddings stored under only one name.
  std::vector<std::pair<std::string, std::string>> tied;
  /// F32 tensors become views of the memory-mapped file (no second copy) and F16/BF16 tensors keep
  /// their dtype (the layers widen them while they use them). Only for modules that never write
  /// their weights: the mapping is read-only. Off: every parameter is a float32 copy.
  bool mapWeights = true;
  /// Checkpoints with a task head the family does not show (a classifier, a pooler): tensors that
  /// are not parameters are tolerated and returned, instead of refused.
  bool ignoreUnexpected = false;
};

/// Fills every parameter of `module` from the checkpoint, one tensor at a time, so loading never
/// holds a second copy of the whole model. The checkpoint must outlive the module when mapWeights
/// is set. Throws Error(Format) naming the tensor and the file for a missing or unexpected tensor,
/// a non-float dtype, or a shape that disagrees with the config (configSummary says which).
/// A parameter is looked up under the detected prefix first, then without it (heads such as
/// BERT's "cls.predictions.*" sit outside "bert."). Returns the tensors ignored under
/// rules.ignoreUnexpected. A tensor in `packed` (a GGUF file's quantized matrices) is used as it
/// is, a uint8 tensor of its blocks, when the checkpoint has no tensor of that name; `packed` must
/// then outlive the module.
std::vector<std::string> loadWeights(torch::nn::Module& module,
                                     const SafetensorsCheckpoint& checkpoint,
                                     const WeightRules& rules, const std::string& configSummary,
                                     const PackedWeights* packed = nullptr);

}  // namespace attnscope
