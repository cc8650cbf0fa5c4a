// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>

#include "attnscope/model.h"

namespace attnscope {

struct FolderParts;

/// Hugging Face BERT, RoBERTa and ELECTRA (discriminator) folders: model_type "bert", "roberta"
/// (and "xlm-roberta"), "electra". Throws like openGpt2Folder.
std::shared_ptr<Model> openBertFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openRobertaFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openElectraFolder(const std::string& folder, const std::string& name);
/// A BERT from parts given in memory (a GGUF file's config, tokenizer and weights).
std::shared_ptr<Model> openBertParts(FolderParts&& parts, const std::string& name);
/// DistilBERT (model_type "distilbert") and ALBERT ("albert").
std::shared_ptr<Model> openDistilBertFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openAlbertFolder(const std::string& folder, const std::string& name);
/// ModernBERT (model_type "modernbert").
std::shared_ptr<Model> openModernBertFolder(const std::string& folder, const std::string& name);
/// DeBERTa v1 (model_type "deberta"), v2 and v3 ("deberta-v2"): disentangled attention.
std::shared_ptr<Model> openDebertaFolder(const std::string& folder, const std::string& name);

}  // namespace attnscope
