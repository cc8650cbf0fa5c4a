// SPDX-License-Identifier: GPL-3.0-or-later
// makeModel: the "model" object of a tokenizer.json -> one of Hugging Face's four models.
#include "tokenizers/hf/bpe_model.h"
#include "tokenizers/hf/components.h"
#include "tokenizers/hf/unigram_model.h"
#include "tokenizers/hf/wordlevel_model.h"
#include "tokenizers/hf/wordpiece_model.h"

namespace attnscope::hf {

std::unique_ptr<Model> makeModel(const nlohmann::json& json) {
  if (!json.is_object()) componentError("model", "must be an object");
  std::string type;
  if (json.contains("type")) {
    type = componentType(json, "model");
  } else {
    // Files from before "type" was written: HF tries BPE, WordPiece, WordLevel, Unigram in turn,
    // each needing its own fields.
    auto vocab = json.find("vocab");
    if (vocab != json.end() && json.contains("merges")) {
      type = "BPE";
    } else if (vocab != json.end() && vocab->is_array()) {
      type = "Unigram";
    } else if (vocab != json.end() && json.contains("unk_token") &&
               json.contains("continuing_subword_prefix") &&
               json.contains("max_input_chars_per_word")) {
      type = "WordPiece";
    } else if (vocab != json.end() && json.contains("unk_token")) {
      type = "WordLevel";
    } else {
      componentError("model",
                     "type is missing and the fields match no model (BPE needs vocab "
                     "and merges, Unigram a vocab array, WordLevel vocab and unk_token)");
    }
  }
  if (type == "BPE") return BpeModel::fromJson(json);
  if (type == "WordPiece") return WordPieceModel::fromJson(json);
  if (type == "WordLevel") return WordLevelModel::fromJson(json);
  if (type == "Unigram") return UnigramModel::fromJson(json);
  componentError("model", "type \"" + type +
                              "\" is not supported; supported: BPE, Unigram, WordLevel, WordPiece");
}

}  // namespace attnscope::hf
