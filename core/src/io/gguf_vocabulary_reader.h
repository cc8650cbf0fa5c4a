// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "io/gguf_file.h"
#include "tokenizers/gguf_vocabulary.h"

namespace attnscope {

/// The tokenizer.ggml.* metadata of a GGUF file as a GgufVocabulary (tokenizerFromGguf builds the
/// tokenizer from it). Keys the file lacks stay empty; a key of the wrong type is refused, naming
/// it (Error(Format): "gguf: tokenizer.ggml.tokens must be an array of strings"). `source` names
/// the file in the vocabulary's messages.
GgufVocabulary readGgufVocabulary(const GgufFile& file, const std::string& source);

}  // namespace attnscope
