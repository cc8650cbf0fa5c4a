// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/safetensors.h"  // DType

namespace attnscope {

/// One tensor of a PyTorch checkpoint, materialised: contiguous, row-major, little-endian bytes.
struct TorchTensorRecord {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Reads a `torch.save` zip archive (Hugging Face `pytorch_model.bin`: `<name>/data.pkl` plus
/// `<name>/data/<key>` storages) WITHOUT running code: data.pkl is read by a restricted unpickler
/// that knows only tensors, storages and containers (dict / OrderedDict, list, tuple, strings,
/// numbers) and refuses every other global ("refused: the pickle asks for posix.system ...").
/// A plain state dict is the common case; a top level {"state_dict": {...}} or {"model": {...}}
/// is unwrapped and nested dicts inside it are flattened with dots. Tensors come back in the
/// pickle's order. Every size in the file is checked against the file size before it is used.
/// Throws Error(Io) when the file is unreadable, Error(Format) naming the problem otherwise
/// (legacy non-zip files, truncated or corrupted archives, out-of-bounds views, refused globals).
std::vector<TorchTensorRecord> readTorchCheckpoint(const std::string& path);

}  // namespace attnscope
