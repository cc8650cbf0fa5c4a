// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/safetensors.h"  // DType

namespace attnscope {

/// One tensor of a state-dict pickle, as the pickle describes it: a view of a storage record
/// (`data/<storageKey>` of the archive) that the caller bounds-checks and copies.
struct PickledTensor {
  std::string name;
  DType dtype = DType::F32;
  std::string storageKey;
  uint64_t storageNumel = 0;  // the storage's element count, as declared by the pickle
  int64_t offset = 0;
  std::vector<int64_t> shape, stride;  // same length, at most 64
};

/// Walks the bytes of a torch.save archive's data.pkl WITHOUT running code (no LibTorch): a
/// restricted unpickler that knows only tensors, storages and containers (dict / OrderedDict,
/// list, tuple, strings, numbers) and refuses every other global. A plain state dict is the
/// common case; a top level {"state_dict": {...}} or {"model": {...}} is unwrapped and nested
/// dicts inside it are flattened with dots. Tensors come back in the pickle's order. The work and
/// the memory follow `fileSize` (the whole archive's, at least `size`): values, stack and memo
/// are budgeted, shared references are walked once. Throws Error(Format) naming `path` and the
/// problem; never another exception for any bytes.
std::vector<PickledTensor> readStateDictPickle(const std::string& path, const uint8_t* data,
                                               std::size_t size, uint64_t fileSize);

}  // namespace attnscope
