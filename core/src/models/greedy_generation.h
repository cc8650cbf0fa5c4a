// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "attnscope/token.h"
#include "models/transformer_family.h"
#include "runtime/batch_input.h"

namespace attnscope {

/// Greedy generation into an encoder-decoder's decoder inputs: each step reruns the decoder on
/// the inputs so far (no key/value cache: fine for a few hundred tokens) and appends every
/// unfinished item's most likely token to `batch`, for up to `steps` steps or until every item
/// has produced the family's end token. decode() -> [B, Tt, C], the decoder's hidden states after
/// its final norm over batch's current decoder inputs. Returns each item's generated tokens;
/// throws Error(InvalidArgument) naming modelName when the family has no language-model head.
std::vector<std::vector<Token>> generateGreedily(BatchInput& batch, int steps,
                                                 TransformerFamily& family,
                                                 const std::function<torch::Tensor()>& decode,
                                                 const std::string& modelName);

}  // namespace attnscope
