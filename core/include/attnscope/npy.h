// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "attnscope/float_tensor.h"

namespace attnscope {

/// NumPy .npy (format 1.0, '<f4', C order) bytes for a tensor.
std::string npyBytes(const FloatTensor& tensor);
/// Writes npyBytes through OutputFile (atomic for files, direct for devices). Throws Error(Io).
void writeNpy(const std::string& path, const FloatTensor& tensor);
/// Reads a '<f4' C-order .npy; throws Error(Format) otherwise. Used by tests and tools.
FloatTensor readNpy(const std::string& path);

}  // namespace attnscope
