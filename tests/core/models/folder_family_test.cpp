// SPDX-License-Identifier: GPL-3.0-or-later
// What FolderFamily does for every Hugging Face family, seen through the public Model API on the
// encoder families (BERT, ALBERT, DistilBERT): the root holds exactly the checkpoint's tensors
// under their names, ModelInfo::parameterBytes counts them, a tokenizer larger than the embedding
// is refused naming both files, and a bad config field reaches the user naming the file and the
// field. Their numbers are checked against PyTorch in tests/reference/encoder_reference.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "temp_dir.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target.
namespace folder_family_test {

using Shapes = std::map<std::string, std::vector<int64_t>>;

constexpr int64_t kVocab = 301;  // tests/data/tokenizers/wordlevel.json
constexpr int64_t kWidth = 8, kInner = 12, kPositions = 16, kEmbedding = 4;

std::shared_ptr<Model> openFolder(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

/// A linear layer's weight [out, in] and bias [out] under `name`.
void linear(Shapes& s, const std::string& name, int64_t out, int64_t in) {
  s[name + ".weight"] = {out, in};
  s[name + ".bias"] = {out};
}
void layerNorm(Shapes& s, const std::string& name, int64_t n) {
  s[name + ".weight"] = {n};
  s[name + ".bias"] = {n};
}

struct Family {
  std::string kind;
  nlohmann::json config;
  Shapes shapes;
  int layers;
};

Family bert() {
  Family f{"bert",
           {{"model_type", "bert"},
            {"vocab_size", kVocab},
            {"hidden_size", kWidth},
            {"num_hidden_layers", 1},
            {"num_attention_heads", 2},
            {"intermediate_size", kInner},
            {"max_position_embeddings", kPositions}},
           {},
           1};
  Shapes& s = f.shapes;
  s["embeddings.word_embeddings.weight"] = {kVocab, kWidth};
  s["embeddings.position_embeddings.weight"] = {kPositions, kWidth};
  s["embeddings.token_type_embeddings.weight"] = {2, kWidth};
  layerNorm(s, "embeddings.LayerNorm", kWidth);
  const std::string p = "encoder.layer.0.";
  for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value",
                        "attention.output.dense"})
    linear(s, p + m, kWidth, kWidth);
  layerNorm(s, p + "attention.output.LayerNorm", kWidth);
  linear(s, p + "intermediate.dense", kInner, kWidth);
  linear(s, p + "output.dense", kWidth, kInner);
  layerNorm(s, p + "output.LayerNorm", kWidth);
  return f;
}

Family albert() {
  Family f{"albert",
           {{"model_type", "albert"},
            {"vocab_size", kVocab},
            {"hidden_size", kWidth},
            {"embedding_size", kEmbedding},
            {"num_hidden_layers", 2},  // both run the one shared layer
            {"num_attention_heads", 2},
            {"intermediate_size", kInner},
            {"max_position_embeddings", kPositions}},
           {},
           2};
  Shapes& s = f.shapes;
  s["embeddings.word_embeddings.weight"] = {kVocab, kEmbedding};
  s["embeddings.position_embeddings.weight"] = {kPositions, kEmbedding};
  s["embeddings.token_type_embeddings.weight"] = {2, kEmbedding};
  layerNorm(s, "embeddings.LayerNorm", kEmbedding);
  linear(s, "encoder.embedding_hidden_mapping_in", kWidth, kEmbedding);
  const std::string p = "encoder.albert_layer_groups.0.albert_layers.0.";
  for (const char* m : {"attention.query", "attention.key", "attention.value", "attention.dense"})
    linear(s, p + m, kWidth, kWidth);
  layerNorm(s, p + "attention.LayerNorm", kWidth);
  linear(s, p + "ffn", kInner, kWidth);
  linear(s, p + "ffn_output", kWidth, kInner);
  layerNorm(s, p + "full_layer_layer_norm", kWidth);
  return f;
}

Family distilbert() {
  Family f{"distilbert",
           {{"model_type", "distilbert"},
            {"vocab_size", kVocab},
            {"dim", kWidth},
            {"n_layers", 1},
            {"n_heads", 2},
            {"hidden_dim", kInner},
            {"max_position_embeddings", kPositions}},
           {},
           1};
  Shapes& s = f.shapes;
  s["embeddings.word_embeddings.weight"] = {kVocab, kWidth};
  s["embeddings.position_embeddings.weight"] = {kPositions, kWidth};
  layerNorm(s, "embeddings.LayerNorm", kWidth);
  const std::string p = "transformer.layer.0.";
  for (const char* m :
       {"attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin"})
    linear(s, p + m, kWidth, kWidth);
  layerNorm(s, p + "sa_layer_norm", kWidth);
  linear(s, p + "ffn.lin1", kInner, kWidth);
  linear(s, p + "ffn.lin2", kWidth, kInner);
  layerNorm(s, p + "output_layer_norm", kWidth);
  return f;
}

/// ModernBertModel: embeddings, layers (no attn_norm on layer 0, no biases), final_norm; with
/// maskedLm, ModernBertForMaskedLM: those under "model.", then head.* and decoder.bias (the
/// decoder's weight tied to the token embeddings). Layers 0 and 2 global, 1 local.
Family modernbert(bool maskedLm = false) {
  Family f{"modernbert",
           {{"model_type", "modernbert"},
            {"vocab_size", kVocab},
            {"hidden_size", kWidth},
            {"num_hidden_layers", 3},
            {"num_attention_heads", 2},
            {"intermediate_size", kInner},
            {"max_position_embeddings", kPositions},
            {"global_attn_every_n_layers", 2},
            {"local_attention", 4},
            {"pad_token_id", 0}},
           {},
           3};
  Shapes& s = f.shapes;
  const std::string m = maskedLm ? "model." : "";
  s[m + "embeddings.tok_embeddings.weight"] = {kVocab, kWidth};
  s[m + "embeddings.norm.weight"] = {kWidth};
  for (int l = 0; l < 3; ++l) {
    const std::string p = m + "layers." + std::to_string(l) + ".";
    if (l > 0) s[p + "attn_norm.weight"] = {kWidth};
    s[p + "attn.Wqkv.weight"] = {3 * kWidth, kWidth};
    s[p + "attn.Wo.weight"] = {kWidth, kWidth};
    s[p + "mlp_norm.weight"] = {kWidth};
    s[p + "mlp.Wi.weight"] = {2 * kInner, kWidth};
    s[p + "mlp.Wo.weight"] = {kWidth, kInner};
  }
  s[m + "final_norm.weight"] = {kWidth};
  if (maskedLm) {
    s["head.dense.weight"] = {kWidth, kWidth};
    s["head.norm.weight"] = {kWidth};
    s["decoder.bias"] = {kVocab};
  }
  return f;
}

std::vector<Family> families() { return {bert(), albert(), distilbert(), modernbert()}; }

// ModernBERT's local layers say their window (an encoder's is two-sided: |i - j| <= 4 / 2), its
// parameters keep the checkpoint's names without the "model." prefix, and the window cuts: a
// query of a local layer gives its keys more than 2 away exactly 0, a global layer's do not.
TEST(FolderFamily, ModernBertSaysItsWindowsAndMasksOutsideThem) {
  const Family f = modernbert(/*maskedLm=*/true);
  test::TempDir dir;
  const auto model = openFolder(test::writeHfFolder(dir, f.config, f.shapes));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.layerWindows, (std::vector<int>{0, 4, 0}));
  EXPECT_EQ(i.slidingWindow, 0);
  EXPECT_FALSE(i.causal);
  EXPECT_TRUE(i.supportsValueNorms);
  std::set<std::string> names;
  for (const NamedTensor& p : model->parameters()) names.insert(p.name);
  EXPECT_TRUE(names.count("layers.1.attn_norm.weight"));
  EXPECT_FALSE(names.count("layers.0.attn_norm.weight"));
  EXPECT_TRUE(names.count("decoder.bias"));
  RunRequest r;
  r.texts = {"the cat sat on the mat the cat sat"};
  r.keepScores = true;
  const AttentionResult out = model->run(r);
  const AttentionGroup& g = out.group();
  const int T = g.queries();
  ASSERT_GT(T, 4);
  for (int l = 0; l < 3; ++l) {
    // Cells outside the window: attention exactly 0 and scores -inf (the heatmap's masked cells).
    float outside = 0;
    int maskedScores = 0;
    const float* a = g.headMatrix(l, 0, 0);
    const float* sc = g.scoreMatrix(l, 0, 0);
    for (int q = 0; q < T; ++q)
      for (int k = 0; k < T; ++k)
        if (std::abs(q - k) > 2) {
          outside += a[q * T + k];
          maskedScores += std::isinf(sc[q * T + k]) && sc[q * T + k] < 0;
        }
    if (l == 1) {
      EXPECT_EQ(outside, 0.0f) << "layer " << l;
      EXPECT_EQ(maskedScores, (T - 3) * (T - 2)) << "layer " << l;
    } else {
      EXPECT_GT(outside, 0.0f) << "layer " << l;
      EXPECT_EQ(maskedScores, 0) << "layer " << l;
    }
  }
}

TEST(FolderFamily, RootHoldsTheCheckpointAndInfoCountsItsBytes) {
  for (const Family& f : families()) {
    test::TempDir dir;
    const auto model = openFolder(test::writeHfFolder(dir, f.config, f.shapes));
    const ModelInfo i = model->info();
    EXPECT_EQ(i.kind, f.kind);
    EXPECT_EQ(i.layers, f.layers) << f.kind;
    // Counted from the shapes written, not from the model: float32, 4 bytes an element.
    uint64_t elements = 0;
    std::set<std::string> written;
    for (const auto& [name, shape] : f.shapes) {
      uint64_t n = 1;
      for (const int64_t d : shape) n *= static_cast<uint64_t>(d);
      elements += n;
      written.insert(name);
    }
    EXPECT_EQ(i.parameterBytes, 4 * elements) << f.kind;
    std::set<std::string> names;
    for (const NamedTensor& p : model->parameters()) names.insert(p.name);
    EXPECT_EQ(names, written) << f.kind;
    RunRequest r;
    r.texts = {"the cat sat"};
    EXPECT_EQ(model->run(r).group().layers(), f.layers) << f.kind;
  }
}

TEST(FolderFamily, ATokenizerLargerThanTheEmbeddingIsRefusedNamingBothFiles) {
  for (Family f : families()) {
    test::TempDir dir;
    f.config["vocab_size"] = kVocab - 1;
    const std::string folder = test::writeHfFolder(dir, f.config, f.shapes);
    test::expectError([&] { openFolder(folder); }, ErrorKind::Format,
                      folder + "/tokenizer.json has 301 tokens but " + folder +
                          "/config.json says vocab_size 300");
  }
}

// Marian's ids are vocab.json's, not its tokenizer's: that is the vocabulary checked. The check
// comes before any tensor is built or read, so the checkpoint here holds none of Marian's.
TEST(FolderFamily, MarianChecksItsVocabJsonAgainstTheEmbedding) {
  test::TempDir dir;
  const nlohmann::json config = {{"model_type", "marian"},
                                 {"vocab_size", 3},
                                 {"d_model", kWidth},
                                 {"encoder_layers", 1},
                                 {"decoder_layers", 1},
                                 {"encoder_attention_heads", 2},
                                 {"decoder_attention_heads", 2},
                                 {"encoder_ffn_dim", kInner},
                                 {"decoder_ffn_dim", kInner},
                                 {"max_position_embeddings", kPositions}};
  const std::string folder = test::writeHfFolder(dir, config, {{"unused", {1}}});
  for (const char* side : {"/source.spm", "/target.spm"})
    std::filesystem::copy_file(std::string(ATTNSCOPE_TEST_DATA) + "/tokenizers/unigram.model",
                               folder + side);
  std::ofstream(folder + "/vocab.json") << R"({"</s>": 0, "<unk>": 1, "<pad>": 2, "x": 4})";
  try {
    openFolder(folder);
    ADD_FAILURE() << "5 ids were accepted for an embedding of 3 rows";
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unavailable) GTEST_SKIP() << e.what();  // no libsentencepiece
    EXPECT_EQ(e.kind(), ErrorKind::Format);
    EXPECT_NE(std::string(e.what()).find(folder + "/vocab.json has 5 tokens but " + folder +
                                         "/config.json says vocab_size 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(FolderFamily, BadConfigFieldsNameTheFileAndTheField) {
  test::TempDir a;
  Family f = albert();
  f.config["num_hidden_groups"] = 3;
  std::string folder = test::writeHfFolder(a, f.config, f.shapes);
  test::expectError(
      [&] { openFolder(folder); }, ErrorKind::Format,
      folder + "/config.json: num_hidden_groups (3) must divide num_hidden_layers (2)");
  test::TempDir b;
  f = distilbert();
  f.config["activation"] = "gelu_fancy";
  folder = test::writeHfFolder(b, f.config, f.shapes);
  test::expectError([&] { openFolder(folder); }, ErrorKind::Format,
                    folder + "/config.json: activation \"gelu_fancy\" is not supported");
  test::TempDir c;
  f = bert();
  f.config["num_attention_heads"] = 3;
  folder = test::writeHfFolder(c, f.config, f.shapes);
  test::expectError([&] { openFolder(folder); }, ErrorKind::Format,
                    folder + "/config.json: num_attention_heads (3) must divide hidden_size (8)");
}

// A config.json cut short (a download that stopped) is a parse error that says where, not "not a
// JSON object".
TEST(FolderFamily, ATruncatedConfigSaysWhereItEnds) {
  test::TempDir d;
  const Family f = bert();
  const std::string folder = test::writeHfFolder(d, f.config, f.shapes);
  const std::string text = f.config.dump(1);
  std::ofstream(folder + "/config.json", std::ios::trunc) << text.substr(0, text.size() / 2);
  try {
    openFolder(folder);
    ADD_FAILURE() << "a truncated config.json opened";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Format);
    EXPECT_NE(what.find(folder + "/config.json: not valid JSON"), std::string::npos) << what;
    EXPECT_NE(what.find("line"), std::string::npos) << what;
    EXPECT_EQ(what.find("not a JSON object"), std::string::npos) << what;
  }
}

}  // namespace folder_family_test
}  // namespace attnscope
