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

/// Of checkpointLoadBytes, what stays pages of memory-mapped files: the safetensors files large
/// enough to be mapped (smaller ones are read into memory). The kernel drops and re-reads those
/// pages as needed, so they are checked against the machine's memory, not a run's limit.
uint64_t mappedCheckpointBytes(const std::string& folder);

/// Before anything is read: throws Error(ResourceLimit) naming `name` when the folder's weights
/// cannot be held. Weights read into memory (pytorch_model.bin, small files) must fit
/// memoryLimitBytes; memory-mapped weights must fit that limit or availableBytes (what the
/// machine has available now), so an 8B model opens with the default limit on a machine that
/// holds it, and a user who raises the limit past the weights opens it anyway.
void checkWeightsFit(const std::string& folder, const std::string& name, uint64_t memoryLimitBytes,
                     uint64_t availableBytes);

}  // namespace attnscope
