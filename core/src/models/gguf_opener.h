// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "attnscope/model.h"
#include "io/gguf_file.h"

namespace attnscope {

/// Opens a GGUF file (llama.cpp's format, whatever it is called) as a model of the family its
/// general.architecture maps onto (GgufModel): config.json from its metadata, the tokenizer from
/// its tokenizer.ggml.* keys, the weights dequantized to float32 once, at load. Nothing borrows
/// from the file afterwards: it is closed before this returns.
///
/// Throws Error(Format) "<path>: <what>" for a malformed file, an unsupported architecture or
/// tensor type (named), a vocabulary-only file (no tensors: it opens for tokenize only), and
/// Error(ResourceLimit) before anything is widened when the float32 weights (4 bytes a weight)
/// would exceed memoryLimitBytes.
std::shared_ptr<Model> openGgufModel(const std::string& path, const std::string& name,
                                     uint64_t memoryLimitBytes);

/// What the file holds, for ModelInfo::fileSummary: "GGUF Q4_K_M: 113 Q4_K, 17 Q6_K, 65 F32
/// tensors, 0.8 GB; dequantized to float32 at load". The name is general.file_type's; a file
/// without one is named after the type holding most weights ("GGUF Q8_0-like").
std::string ggufTypeSummary(const GgufFile& file);

}  // namespace attnscope
