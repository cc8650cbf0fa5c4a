// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "attnscope/model.h"

namespace attnscope {

/// Opens a Hugging Face model folder with the family its config.json's "model_type" names.
/// Throws Error(Io) for a missing config.json, Error(Format) for an unsupported model_type
/// ("model_type 'xlnet' is not supported; supported: gpt2") or a malformed folder, and
/// Error(ResourceLimit), before anything is read, when the weights cannot be held: weights read
/// into memory over memoryLimitBytes, memory-mapped ones over both that limit and the machine's
/// available memory (checkWeightsFit).
std::shared_ptr<Model> openModelFolder(const std::string& folder, const std::string& name,
                                       uint64_t memoryLimitBytes = UINT64_MAX);

}  // namespace attnscope
