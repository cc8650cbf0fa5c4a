// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/decoder_family.h"

#include <filesystem>

#include "attnscope/error.h"
#include "models/checkpoint_folder.h"
#include "runtime/runtime_init.h"

namespace attnscope {

RotaryOptions rotaryOptions(const RopeScalingConfig& s, int rotaryDim, double theta,
                            int maxPositions) {
  RotaryOptions o;
  o.rotaryDim = rotaryDim;
  o.theta = theta;
  o.maxPositions = maxPositions;
  o.scaling.type = s.type == "linear"    ? RopeScaling::Type::Linear
                   : s.type == "dynamic" ? RopeScaling::Type::Dynamic
                   : s.type == "llama3"  ? RopeScaling::Type::Llama3
                                         : RopeScaling::Type::None;
  o.scaling.factor = s.factor;
  o.scaling.lowFreqFactor = s.lowFreqFactor;
  o.scaling.highFreqFactor = s.highFreqFactor;
  o.scaling.originalMaxPositions = s.originalMaxPositions;
  return o;
}

DecoderFamily::DecoderFamily(const std::string& folder)
    : m_config(ConfigReader::fromFile((std::filesystem::path(folder) / "config.json").string())),
      m_tokenizer(FolderTokenizer::open(folder)),
      m_checkpoint(openCheckpointFolder(folder)) {
  ensureRuntime();
}

ModelInfo DecoderFamily::decoderInfo(const std::string& kind, int layers, int heads, int kvHeads,
                                     int width, int positions) const {
  ModelInfo i;
  i.kind = kind;
  i.name = kind;
  i.variant = kind;
  i.layers = layers;
  i.heads = heads;
  i.kvHeads = kvHeads;
  i.dModel = width;
  i.maxPositions = positions;
  i.causal = true;
  return i;
}

void DecoderFamily::checkVocabulary(int vocabSize) const {
  if (m_tokenizer.vocabSize() > static_cast<std::size_t>(vocabSize)) {
    throw Error(ErrorKind::Format, m_tokenizer.source() + " has " +
                                       std::to_string(m_tokenizer.vocabSize()) + " tokens but " +
                                       m_config.source() + " says vocab_size " +
                                       std::to_string(vocabSize));
  }
}

bool DecoderFamily::hasTensor(const std::string& name, const std::string& prefix) const {
  return m_checkpoint.find(name) || m_checkpoint.find(prefix + name);
}

void DecoderFamily::load(torch::nn::Module& module, const WeightRules& rules,
                         const std::string& summary) {
  for (auto& p : module.parameters()) p.set_requires_grad(false);
  loadWeights(module, m_checkpoint, rules, summary);
}

}  // namespace attnscope
