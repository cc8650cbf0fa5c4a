// SPDX-License-Identifier: GPL-3.0-or-later
// Gemma 2 and Gemma 3 through the public Model API: what ModelInfo and the trace say about the
// local layers and the soft cap, that the kept scores are the capped ones with the window's cells
// masked (not zero-valued), the Hugging Face parameter names, and the two layouts of a gemma3
// folder. Their numbers are checked against PyTorch in tests/reference/gemma2_reference.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "decoder_fixtures.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "temp_dir.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other decoder tests.
namespace gemma2_test {

constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json
constexpr int kHidden = 16, kInner = 24, kHeadDim = 8;

std::shared_ptr<Model> open(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

using test::gemmaShapes;

nlohmann::json textConfig(const std::string& type, int layers) {
  return {
      {"model_type", type},          {"vocab_size", kVocab},        {"hidden_size", kHidden},
      {"intermediate_size", kInner}, {"num_hidden_layers", layers}, {"num_attention_heads", 4},
      {"num_key_value_heads", 2},    {"head_dim", kHeadDim},        {"max_position_embeddings", 64},
      {"sliding_window", 3}};
}

const TraceStep* stepNamed(const LayerTrace& t, const std::string& name) {
  for (const TraceStep& s : t.steps)
    if (s.name == name) return &s;
  return nullptr;
}

TEST(Gemma2Family, LocalLayersAndTheSoftcapShowInInfoScoresAndTrace) {
  nlohmann::json c = textConfig("gemma2", 3);
  c["attn_logit_softcapping"] = 2.0;  // small, so that it binds on these scores
  c["query_pre_attn_scalar"] = 4;
  test::TempDir dir;
  // Large weights: scores well past the cap.
  const auto model = open(test::writeHfFolder(dir, c, gemmaShapes("model.", 3, false), 3, 1.0f));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.kind, "gemma2");
  EXPECT_EQ(i.kvHeads, 2);
  EXPECT_EQ(i.slidingWindow, 0);  // not every layer: each local layer masks its own window
  EXPECT_EQ(i.layerWindows, (std::vector<int>{3, 0, 3}));  // layers 0 and 2 slide
  EXPECT_DOUBLE_EQ(i.attentionSoftcap, 2.0);
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  EXPECT_EQ(got.size(), gemmaShapes("", 3, false).size());
  EXPECT_EQ(got.at("layers.2.post_feedforward_layernorm.weight"), (std::vector<int64_t>{kHidden}));

  RunRequest r;
  r.texts = {"the cat sat on the mat and the dog ."};
  const AttentionResult result = model->run(r);
  const AttentionGroup& g = result.group();
  const int T = g.queries();
  ASSERT_GE(T, 6);
  EXPECT_EQ(result.nextToken.size(), 5u);  // the tied head predicts
  double largest = 0;
  for (int layer = 0; layer < 3; ++layer) {
    const bool local = layer != 1;
    for (int h = 0; h < g.heads(); ++h) {
      const float* s = g.scoreMatrix(layer, 0, h);
      const float* a = g.headMatrix(layer, 0, h);
      for (int q = 0; q < T; ++q)
        for (int k = 0; k < T; ++k) {
          const float sv = s[q * T + k], av = a[q * T + k];
          const bool visible = k <= q && (!local || q - k < 3);
          if (!visible) {
            // Masked, not a zero-valued score: the heatmap shows these cells as masked.
            EXPECT_TRUE(std::isinf(sv) && sv < 0) << layer << " " << q << " " << k;
            EXPECT_EQ(av, 0.0f);
            continue;
          }
          EXPECT_LE(std::abs(sv), 2.0f) << "the kept scores are the capped ones";
          largest = std::max(largest, double(std::abs(sv)));
        }
    }
  }
  EXPECT_GT(largest, 1.9);  // the cap binds: uncapped these scores would pass it
  ASSERT_EQ(result.traces.size(), 3u);
  const TraceStep* capped = stepNamed(result.traces[0], "capped");
  ASSERT_NE(capped, nullptr);
  EXPECT_EQ(capped->kind, "softcap");
  EXPECT_EQ(capped->op, "2 * tanh(scores / 2)");
  EXPECT_NE(stepNamed(result.traces[0], "masked")->op.find("sliding window 3"), std::string::npos);
  EXPECT_EQ(stepNamed(result.traces[1], "masked")->op.find("sliding window"), std::string::npos);
  EXPECT_NE(stepNamed(result.traces[0], "scaled")->op.find("query_pre_attn_scalar"),
            std::string::npos);
  for (const char* norm :
       {"post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"})
    EXPECT_NE(stepNamed(result.traces[1], norm), nullptr) << norm;

  // The Q/K view's arithmetic: the kept score is cap·tanh(Σ q·k · scale / cap).
  r.keepQueryKey = true;
  const AttentionResult kept = model->run(r);
  const AttentionGroup& k = kept.group();
  ASSERT_EQ(k.queryKeySoftcaps, (std::vector<double>{2.0, 2.0, 2.0}));
  EXPECT_DOUBLE_EQ(k.queryKeyScales[0], 0.5);  // query_pre_attn_scalar 4
  const int q = T - 1, key = T - 2, hd = k.headDim();
  double dot = 0;
  for (int d = 0; d < hd; ++d)
    dot += double(k.queryVector(1, 0, 0, q)[d]) * k.keyVector(1, 0, 0, key)[d];
  const double want = 2.0 * std::tanh(dot * 0.5 / 2.0);
  EXPECT_NEAR(k.scoreMatrix(1, 0, 0)[q * T + key], want, 1e-4 * std::max(1.0, std::abs(want)));
}

TEST(Gemma2Family, Gemma3FoldersOpenInBothLayoutsAndIgnoreTheVisionTower) {
  nlohmann::json c = {{"model_type", "gemma3"},
                      {"text_config", textConfig("gemma3_text", 2)},
                      {"vision_config", {{"model_type", "siglip_vision_model"}}}};
  c["text_config"]["sliding_window_pattern"] = 2;
  // transformers up to 4.51: language_model.model.*, the vision tower beside it.
  std::map<std::string, std::vector<int64_t>> old = gemmaShapes("language_model.model.", 2, true);
  old["vision_tower.vision_model.embeddings.patch_embedding.weight"] = {4, 3, 2, 2};
  old["multi_modal_projector.mm_input_projection_weight"] = {4, kHidden};
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, c, old));
  EXPECT_EQ(model->info().kind, "gemma3");
  EXPECT_EQ(model->info().layerWindows, (std::vector<int>{3, 0}));
  EXPECT_EQ(model->info().attentionSoftcap, 0);
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  EXPECT_EQ(got.at("layers.1.self_attn.k_norm.weight"), (std::vector<int64_t>{kHeadDim}));
  RunRequest r;
  r.texts = {"the cat sat ."};
  EXPECT_EQ(model->run(r).nextToken.size(), 5u);

  // Later versions: model.language_model.*, and the tied head saved as lm_head.weight too.
  std::map<std::string, std::vector<int64_t>> now = gemmaShapes("model.language_model.", 2, true);
  now["model.vision_tower.vision_model.post_layernorm.weight"] = {4};
  now["lm_head.weight"] = {kVocab, kHidden};
  test::TempDir dir2;
  EXPECT_EQ(open(test::writeHfFolder(dir2, c, now))->info().layers, 2);

  // Anything else is still refused, by name; and a layer without its q/k norms.
  old["language_model.model.layers.0.self_attn.extra.weight"] = {2};
  test::TempDir dir3;
  test::expectError([&] { open(test::writeHfFolder(dir3, c, old)); }, ErrorKind::Format,
                    "language_model.model.layers.0.self_attn.extra.weight");
  test::TempDir dir4;
  test::expectError(
      [&] { open(test::writeHfFolder(dir4, c, gemmaShapes("language_model.model.", 2, false))); },
      ErrorKind::Format, "layers.0.self_attn.q_norm.weight");
}

}  // namespace gemma2_test
}  // namespace attnscope
