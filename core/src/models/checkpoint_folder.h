// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "io/safetensors_checkpoint.h"

namespace attnscope {

/// The weights of a Hugging Face folder: safetensors first (one file or shards, memory-mapped);
/// else pytorch_model.bin, read by the restricted reader (io/torch_checkpoint: tensors and
/// containers only, never code) into memory. Throws Error(Io) naming what is missing, Error(Format)
/// for a malformed or refused file.
SafetensorsCheckpoint openCheckpointFolder(const std::string& folder);

}  // namespace attnscope
