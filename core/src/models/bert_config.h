// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a BERT, RoBERTa, ELECTRA or ALBERT checkpoint (model_type bert,
/// roberta, electra, albert: BERT's embeddings and post-norm layers, in the same keys), read from
/// config.json with the defaults of transformers' config classes. Plain types only, so the parser
/// stays in attnscope_base (no LibTorch).
struct BertConfig {
  /// Which config class's defaults apply: RoBERTa's pad_token_id is 1 (its positions start after
  /// it); ALBERT's embeddings are 128 wide, its activation gelu_new, its layers shared in groups.
  enum class Flavour { Bert, Roberta, Electra, Albert };

  Flavour flavour = Flavour::Bert;
  int vocabSize = 30522;
  int hiddenSize = 768;
  int numLayers = 12;
  int numHeads = 12;
  int intermediateSize = 3072;
  int maxPositions = 512;
  int typeVocabSize = 2;  // 0: no token-type embedding
  /// hidden_size unless given (ELECTRA: narrower, projected); ALBERT: 128 (factorised, projected).
  int embeddingSize = 768;
  int numHiddenGroups = 1;  // ALBERT: groups of shared layers; layer i uses group i / (L / G)
  int innerGroupNum = 1;    // ALBERT: layers run in turn inside each group
  double layerNormEps = 1e-12;
  std::string hiddenAct = "gelu";  // ALBERT: gelu_new
  int padTokenId = 0;              // RoBERTa: 1; not read for ALBERT

  /// Throws Error(Format) naming the file and the field when a value is missing, of the wrong
  /// type or inconsistent ("num_attention_heads (5) must divide hidden_size (32)").
  static BertConfig fromReader(const ConfigReader& reader, Flavour flavour);
};

}  // namespace attnscope
