// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>

#include "attnscope/model.h"

namespace attnscope {

struct FolderParts;

/// Opens a Hugging Face GPT-2 folder (config.json, model.safetensors or shards with
/// model.safetensors.index.json, vocab.json, merges.txt). `name` is what the user called it
/// ("gpt2"). Throws Error(Io) naming a missing file, Error(Format) naming a malformed one.
std::shared_ptr<Model> openGpt2Folder(const std::string& folder, const std::string& name);
/// The same from parts given in memory (a GGUF file's config, tokenizer and weights).
std::shared_ptr<Model> openGpt2Parts(FolderParts&& parts, const std::string& name);

}  // namespace attnscope
