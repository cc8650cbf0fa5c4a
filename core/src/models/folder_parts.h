// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "attnscope/folder_tokenizer.h"
#include "io/safetensors_checkpoint.h"
#include "models/config_reader.h"

namespace attnscope {

/// What a family reads from a Hugging Face folder: config.json, the tokenizer and the weights.
/// A folder gives them as files (read()); a GGUF file gives them from one file, in memory
/// (models/gguf_opener.cpp), so the same family code opens both.
struct FolderParts {
  ConfigReader config;
  FolderTokenizer tokenizer;
  SafetensorsCheckpoint checkpoint;
  std::string fileSummary;  // ModelInfo::fileSummary: "" for a folder

  /// Reads the three, in that order (the first missing or malformed one is the error): throws
  /// what ConfigReader::fromFile, FolderTokenizer::open and openCheckpointFolder throw.
  static FolderParts read(const std::string& folder);
};

}  // namespace attnscope
