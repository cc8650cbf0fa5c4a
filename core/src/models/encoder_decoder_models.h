// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>

#include "attnscope/model.h"

namespace attnscope {

/// Hugging Face encoder-decoders. Each throws like openGpt2Folder: Error(Io) naming a missing
/// file, Error(Format) naming a malformed one or the field at fault.
/// model_type "t5": T5, T5 v1.1, Flan-T5 (t5.cpp).
std::shared_ptr<Model> openT5Folder(const std::string& folder, const std::string& name);
/// model_type "bart": BART (bart.cpp).
std::shared_ptr<Model> openBartFolder(const std::string& folder, const std::string& name);
/// model_type "marian": Helsinki-NLP opus-mt (source.spm, target.spm, vocab.json) (bart.cpp).
std::shared_ptr<Model> openMarianFolder(const std::string& folder, const std::string& name);

}  // namespace attnscope
