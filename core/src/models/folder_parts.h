// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>

#include "attnscope/folder_tokenizer.h"
#include "io/safetensors_checkpoint.h"
#include "models/config_reader.h"

namespace attnscope {

class PackedWeights;

/// What a family reads from a Hugging Face folder: config.json, the tokenizer and the weights.
/// A folder gives them as files (read()); a GGUF file gives them from one file, in memory
/// (models/gguf_opener.cpp), so the same family code opens both.
struct FolderParts {
  ConfigReader config;
  FolderTokenizer tokenizer;
  SafetensorsCheckpoint checkpoint;
  std::string fileSummary;  // ModelInfo::fileSummary: "" for a folder
  /// A GGUF file's quantized matrices, kept as the file's blocks (the checkpoint then holds the
  /// rest, widened); null for a folder.
  std::shared_ptr<const PackedWeights> packed;

  /// Reads the three, in that order (the first missing or malformed one is the error): throws
  /// what ConfigReader::fromFile, FolderTokenizer::open and openCheckpointFolder throw.
  static FolderParts read(const std::string& folder);
};

}  // namespace attnscope
