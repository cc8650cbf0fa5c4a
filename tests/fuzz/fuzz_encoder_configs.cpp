// SPDX-License-Identifier: GPL-3.0-or-later
// The encoder and encoder-decoder families' config.json readers (BertConfig in each flavour,
// DistilBertConfig, ModernBertConfig, DebertaConfig, T5Config, BartConfig in both flavours, through
// ConfigReader) on arbitrary text: each accepts a consistent configuration or throws Error(Format),
// never anything else.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_check.h"
#include "fuzz_config_reader.h"
#include "models/bart_config.h"
#include "models/bert_config.h"
#include "models/deberta_config.h"
#include "models/distilbert_config.h"
#include "models/modernbert_config.h"
#include "models/t5_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  const std::optional<ConfigReader> parsed = fuzz::configReaderOf(data, size);
  if (!parsed) return 0;
  const ConfigReader& reader = *parsed;
  for (const BertConfig::Flavour f : {BertConfig::Flavour::Bert, BertConfig::Flavour::Roberta,
                                      BertConfig::Flavour::Electra, BertConfig::Flavour::Albert}) {
    fuzz::expectOnlyUserErrors([&] {
      const BertConfig c = BertConfig::fromReader(reader, f);
      if (c.vocabSize <= 0 || c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 ||
          c.numLayers <= 0 || c.embeddingSize <= 0 || c.typeVocabSize < 0 ||
          c.numHiddenGroups <= 0 || c.numLayers % c.numHiddenGroups != 0 || c.innerGroupNum <= 0 ||
          c.maxPositions <= 0 || c.padTokenId < 0)
        fuzz::fail("accepted an inconsistent BERT-family config");
      // RoBERTa's positions start after the pad row: a negative count is the family's to refuse.
    });
  }
  fuzz::expectOnlyUserErrors([&] {
    const DistilBertConfig c = DistilBertConfig::fromReader(reader);
    if (c.vocabSize <= 0 || c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 || c.numLayers <= 0 ||
        c.intermediateSize <= 0 || c.maxPositions <= 0)
      fuzz::fail("accepted an inconsistent DistilBERT config");
  });
  fuzz::expectOnlyUserErrors([&] {
    const ModernBertConfig c = ModernBertConfig::fromReader(reader);
    if (c.vocabSize <= 0 || c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 ||
        c.headDim() % 2 != 0 || c.numLayers <= 0 || c.intermediateSize <= 0 ||
        c.maxPositions <= 0 || c.localAttention <= 0 || c.globalAttnEveryNLayers <= 0 ||
        c.slidingLayers.size() != static_cast<std::size_t>(c.numLayers) ||
        c.windowed(0) ||  // layer 0 is always global
        !(c.normEps > 0) || !(c.globalRopeTheta > 1) || !(c.localRopeTheta > 1) ||
        c.padTokenId < 0)  // below vocab_size when given; the default may not be (unused)
      fuzz::fail("accepted an inconsistent ModernBERT config");
  });
  for (const DebertaConfig::Flavour f : {DebertaConfig::Flavour::V2, DebertaConfig::Flavour::V1}) {
    fuzz::expectOnlyUserErrors([&] {
      const DebertaConfig c = DebertaConfig::fromReader(reader, f);
      if (c.vocabSize <= 0 || c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 ||
          c.numLayers <= 0 || c.intermediateSize <= 0 || c.embeddingSize <= 0 ||
          c.maxPositions <= 0 || c.typeVocabSize < 0 || c.padTokenId < 0 ||
          c.padTokenId >= c.vocabSize || !(c.layerNormEps > 0) || c.maxRelativePositions < 1 ||
          c.span() < 1 || c.scaleFactor() < 1 || c.posAttTypes < 0 ||
          (c.relativeAttention && c.positionBuckets > 0 &&
           (c.positionBuckets / 2 < 1 || c.maxRelativePositions - 1 <= c.positionBuckets / 2)) ||
          (c.convKernelSize != 0 &&
           (c.convKernelSize % 2 != 1 || c.convGroups < 1 || c.hiddenSize % c.convGroups != 0)))
        fuzz::fail("accepted an inconsistent DeBERTa config");
      // v1 reads none of v2's keys; v2's scale counts c2p and p2c only.
      if (c.v1() ? (c.positionBuckets > 0 || c.shareAttKey || c.relEmbeddingNorm ||
                    c.convKernelSize != 0 || c.scaleFactor() != 1 + c.posAttTypes)
                 : c.scaleFactor() > 3)
        fuzz::fail("a DeBERTa config read keys its flavour does not have");
    });
  }
  fuzz::expectOnlyUserErrors([&] {
    const T5Config c = T5Config::fromReader(reader);
    if (c.vocabSize <= 0 || c.numHeads <= 0 || c.dKv <= 0 || c.numLayers <= 0 ||
        c.numDecoderLayers <= 0 || c.numBuckets / 4 < 1 || c.maxDistance <= c.numBuckets / 4 ||
        !(c.layerNormEps > 0) || c.activation.empty() || c.decoderStartTokenId < 0 ||
        c.eosTokenId < 0)
      fuzz::fail("accepted an inconsistent T5 config");
  });
  for (const BartConfig::Flavour f : {BartConfig::Flavour::Bart, BartConfig::Flavour::Marian}) {
    fuzz::expectOnlyUserErrors([&] {
      const BartConfig c = BartConfig::fromReader(reader, f);
      if (c.vocabSize <= 0 || c.numHeads <= 0 || c.dModel % c.numHeads != 0 || c.headDim() <= 0 ||
          c.encoderLayers <= 0 || c.decoderLayers <= 0 || c.maxPositions <= 0 ||
          (f == BartConfig::Flavour::Marian && c.dModel % 2 != 0))
        fuzz::fail("accepted an inconsistent BART config");
    });
  }
  return 0;
}
