// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>

#include "attnscope/model.h"

namespace attnscope {

/// Hugging Face BERT, RoBERTa and ELECTRA (discriminator) folders: model_type "bert", "roberta"
/// (and "xlm-roberta"), "electra". Throws like openGpt2Folder.
std::shared_ptr<Model> openBertFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openRobertaFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openElectraFolder(const std::string& folder, const std::string& name);
/// DistilBERT (model_type "distilbert") and ALBERT ("albert").
std::shared_ptr<Model> openDistilBertFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openAlbertFolder(const std::string& folder, const std::string& name);
/// ModernBERT (model_type "modernbert").
std::shared_ptr<Model> openModernBertFolder(const std::string& folder, const std::string& name);

}  // namespace attnscope
