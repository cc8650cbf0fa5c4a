// SPDX-License-Identifier: GPL-3.0-or-later
// The decoder families' config.json readers (LlamaConfig, GptNeoxConfig, BloomConfig, Gemma2Config,
// Phi3Config, MixtralConfig, PhiConfig, StableLmConfig, OlmoConfig, GptjConfig, OptConfig,
// GptNeoConfig, FalconConfig through ConfigReader) on arbitrary text: each accepts a consistent
// configuration or throws Error(Format), never anything else.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_check.h"
#include "fuzz_config_reader.h"
#include "models/bloom_config.h"
#include "models/falcon_config.h"
#include "models/gemma2_config.h"
#include "models/gpt_neo_config.h"
#include "models/gpt_neox_config.h"
#include "models/gptj_config.h"
#include "models/llama_config.h"
#include "models/mixtral_config.h"
#include "models/olmo_config.h"
#include "models/opt_config.h"
#include "models/phi3_config.h"
#include "models/phi_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  const std::optional<ConfigReader> parsed = fuzz::configReaderOf(data, size);
  if (!parsed) return 0;
  const ConfigReader& reader = *parsed;
  fuzz::expectOnlyUserErrors([&] {
    const LlamaConfig c = LlamaConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.numKvHeads <= 0 || c.numHeads % c.numKvHeads != 0 || c.headDim <= 0 ||
        c.headDim % 2 != 0 || c.rotaryDim() < 2 || c.rotaryDim() > c.headDim || c.vocabSize <= 0 ||
        c.hiddenSize <= 0 || c.slidingWindow < 0 || c.hiddenAct.empty() ||
        c.normUnitOffset != (c.modelType == "gemma") || c.scaleEmbeddings != c.normUnitOffset) {
      fuzz::fail("accepted an inconsistent Llama config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const GptNeoxConfig c = GptNeoxConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 || c.rotaryDim() < 2 ||
        c.rotaryDim() % 2 != 0 || c.rotaryDim() > c.headDim()) {
      fuzz::fail("accepted an inconsistent GPT-NeoX config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const BloomConfig c = BloomConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0)
      fuzz::fail("accepted a bad Bloom config");
  });
  fuzz::expectOnlyUserErrors([&] {
    const Gemma2Config c = Gemma2Config::fromReader(reader);
    if (c.numHeads <= 0 || c.numKvHeads <= 0 || c.numHeads % c.numKvHeads != 0 || c.headDim <= 0 ||
        c.headDim % 2 != 0 || c.vocabSize <= 0 || c.hiddenSize <= 0 ||
        c.slidingLayers.size() != static_cast<std::size_t>(c.numLayers) || c.slidingWindow < 0 ||
        !(c.queryPreAttnScalar > 0) || c.attnSoftcap < 0 || c.finalSoftcap < 0 ||
        !(c.ropeTheta > 1) || !(c.ropeLocalTheta > 1) || c.hiddenAct.empty() ||
        c.qkNorm != (c.modelType != "gemma2")) {
      fuzz::fail("accepted an inconsistent Gemma 2/3 config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const Phi3Config c = Phi3Config::fromReader(reader);
    const std::size_t freqs = static_cast<std::size_t>(c.rotaryDim / 2);
    if (c.numHeads <= 0 || c.numKvHeads <= 0 || c.numHeads % c.numKvHeads != 0 || c.headDim <= 0 ||
        c.rotaryDim < 2 || c.rotaryDim % 2 != 0 || c.rotaryDim > c.headDim || c.vocabSize <= 0 ||
        c.slidingWindow < 0 || !(c.ropeTheta > 1) || !(c.longRope.attentionFactor > 0) ||
        !std::isfinite(c.longRope.attentionFactor) ||
        (c.longRope.enabled &&
         (c.longRope.shortFactor.size() != freqs || c.longRope.longFactor.size() != freqs))) {
      fuzz::fail("accepted an inconsistent Phi-3 config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const MixtralConfig c = MixtralConfig::fromReader(reader);
    if (c.numExperts <= 0 || c.topK <= 0 || c.topK > c.numExperts || c.expertIntermediate <= 0 ||
        c.sparseLayers.size() != static_cast<std::size_t>(c.base.numLayers) ||
        c.base.numHeads % c.base.numKvHeads != 0 ||
        (c.base.modelType == "mixtral" && !c.normTopK) ||
        (c.sharedExpertIntermediate > 0) != (c.base.modelType == "qwen2_moe") ||
        (c.base.modelType == "qwen2_moe" &&
         (c.base.outputBias || c.base.qkNorm || c.base.slidingWindow != 0))) {
      fuzz::fail("accepted an inconsistent Mixtral / Qwen-MoE / OLMoE config");
    }
  });
  // Phi-1/1.5/2 and StableLM: partial rotary dims even, from 2 to head_dim; heads that divide.
  fuzz::expectOnlyUserErrors([&] {
    const PhiConfig c = PhiConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 || c.numKvHeads <= 0 ||
        c.numHeads % c.numKvHeads != 0 || c.rotaryDim() < 2 || c.rotaryDim() % 2 != 0 ||
        c.rotaryDim() > c.headDim() || !(c.layerNormEps > 0) || !(c.ropeTheta > 1) ||
        c.hiddenAct.empty()) {
      fuzz::fail("accepted an inconsistent Phi config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const StableLmConfig c = StableLmConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 || c.numKvHeads <= 0 ||
        c.numHeads % c.numKvHeads != 0 || c.rotaryDim() < 2 || c.rotaryDim() % 2 != 0 ||
        c.rotaryDim() > c.headDim() || !(c.layerNormEps > 0) || !(c.ropeTheta > 1) ||
        c.hiddenAct.empty()) {
      fuzz::fail("accepted an inconsistent StableLM config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const OlmoConfig c = OlmoConfig::fromReader(reader);
    if (c.base.modelType != "olmo" || c.base.numHeads % c.base.numKvHeads != 0 ||
        c.base.rotaryDim() < 2 || c.base.mlpBias || c.clipQkv < 0 || !std::isfinite(c.clipQkv)) {
      fuzz::fail("accepted an inconsistent OLMo config");
    }
  });
  // GPT-J: rotary dims even, from 2 to the head size; OPT: heads that divide the width.
  fuzz::expectOnlyUserErrors([&] {
    const GptjConfig c = GptjConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 || c.rotaryDims < 2 ||
        c.rotaryDims % 2 != 0 || c.rotaryDims > c.headDim() || c.mlpSize() <= 0 ||
        !(c.layerNormEps > 0) || c.activation.empty()) {
      fuzz::fail("accepted an inconsistent GPT-J config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const OptConfig c = OptConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 || c.wordEmbedProjDim <= 0 ||
        c.ffnDim <= 0 || c.maxPositions <= 0 ||
        c.projects() != (c.wordEmbedProjDim != c.hiddenSize) ||
        (c.finalNorm() && !c.doLayerNormBefore)) {
      fuzz::fail("accepted an inconsistent OPT config");
    }
  });
  fuzz::expectOnlyUserErrors([&] {
    const GptNeoConfig c = GptNeoConfig::fromReader(reader);
    if (c.numHeads <= 0 || c.hiddenSize % c.numHeads != 0 || c.windowSize < 1 ||
        c.localLayers.size() != static_cast<std::size_t>(c.numLayers) || c.mlpSize() <= 0) {
      fuzz::fail("accepted an inconsistent GPT-Neo config");
    }
  });
  // Falcon: the layout's key/value heads divide the heads (one for multi-query, all per head),
  // two norms only in the new architecture, which is always parallel; rotary heads even.
  fuzz::expectOnlyUserErrors([&] {
    const FalconConfig c = FalconConfig::fromReader(reader);
    const bool kvOk = c.layout() == FalconQkvLayout::Grouped      ? c.numHeads % c.numKvHeads == 0
                      : c.layout() == FalconQkvLayout::MultiQuery ? c.numKvHeads == 1
                                                                  : c.numKvHeads == c.numHeads;
    if (c.numHeads <= 0 || c.numKvHeads <= 0 || c.hiddenSize % c.numHeads != 0 || !kvOk ||
        (c.twoNorms() && !c.newDecoderArchitecture) ||
        (c.newDecoderArchitecture && !c.parallelAttn) || (!c.alibi && c.headDim() % 2 != 0) ||
        c.ffnHiddenSize <= 0 || !(c.layerNormEps > 0) || !(c.ropeTheta > 1) ||
        c.activation.empty()) {
      fuzz::fail("accepted an inconsistent Falcon config");
    }
  });
  return 0;
}
