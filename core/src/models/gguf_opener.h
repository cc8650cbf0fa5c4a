// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/model.h"
#include "io/gguf_file.h"

namespace attnscope {

/// Opens a GGUF file (llama.cpp's format, whatever it is called) as a model of the family its
/// general.architecture maps onto (GgufModel): config.json from its metadata, the tokenizer from
/// its tokenizer.ggml.* keys. The matrices stay the file's quantized blocks (memory-mapped pages,
/// PackedWeights) and are dequantized a block of rows at a time while a layer uses them; the
/// vectors (norms, biases) are widened to float32 at load. The file stays open (mapped) as long
/// as the model.
///
/// Throws Error(Format) "<path>: <what>" for a malformed file, an unsupported architecture or
/// tensor type (named), a vocabulary-only file (no tensors: it opens for tokenize only), and
/// Error(ResourceLimit) before anything is allocated when the weights as stored, plus one layer's
/// matrices dequantized and the vectors widened, would exceed memoryLimitBytes.
std::shared_ptr<Model> openGgufModel(const std::string& path, const std::string& name,
                                     uint64_t memoryLimitBytes);

/// What the file holds, for ModelInfo::fileSummary: "GGUF Q4_K_M: 113 Q4_K, 17 Q6_K, 65 F32
/// tensors, 0.8 GB; kept quantized, dequantized per layer as it runs". The name is
/// general.file_type's; a file without one is named after the type holding most weights ("GGUF
/// Q8_0-like"). Of a split model, every part's tensors (the name from the first part).
std::string ggufTypeSummary(const std::vector<const GgufFile*>& parts);

}  // namespace attnscope
