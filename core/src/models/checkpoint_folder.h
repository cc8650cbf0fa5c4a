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

/// What loading the folder's weights will hold, from the file sizes alone (nothing is read), so
/// opening can refuse before it allocates: the safetensors files (their tensors are kept in their
/// own dtype), or three times pytorch_model.bin (its records, the in-memory safetensors made from
/// them, and the module's copy). 0 when the folder has no weights (openCheckpointFolder says so).
uint64_t checkpointLoadBytes(const std::string& folder);

}  // namespace attnscope
