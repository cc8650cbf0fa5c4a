// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-NeoX (Hugging Face's GPTNeoXModel / GPTNeoXForCausalLM: Pythia, GPT-NeoX-20B): the gpt_neox
// family. Pre-LayerNorm blocks with a fused per-head query_key_value, partial rotary positions
// and (by default) the parallel residual x + attn(ln1(x)) + mlp(ln2(x)).
#include <cmath>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/gpt_neox_config.h"
#include "models/transformer_model.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rotary_embedding.h"
#include "nn/scaled_dot_product.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// layers.{i}: input_layernorm, attention.{query_key_value, dense}, post_attention_layernorm,
/// mlp.{dense_h_to_4h, dense_4h_to_h}.
struct NeoxLayer {
  LayerNorm inputNorm{nullptr}, postNorm{nullptr};
  Linear qkv{nullptr}, dense{nullptr}, up{nullptr}, down{nullptr};

  NeoxLayer(torch::nn::Module& root, const std::string& p, const GptNeoxConfig& c) {
    const int64_t C = c.hiddenSize, I = c.intermediateSize;
    inputNorm = addModule(root, p + "input_layernorm", LayerNorm(C, c.layerNormEps));
    qkv = addModule(root, p + "attention.query_key_value", Linear(C, 3 * C, c.attentionBias));
    dense = addModule(root, p + "attention.dense", Linear(C, C, c.attentionBias));
    postNorm = addModule(root, p + "post_attention_layernorm", LayerNorm(C, c.layerNormEps));
    up = addModule(root, p + "mlp.dense_h_to_4h", Linear(C, I));
    down = addModule(root, p + "mlp.dense_4h_to_h", Linear(I, C));
  }
};

class GptNeoxFamily final : public DecoderFamily {
 public:
  explicit GptNeoxFamily(FolderParts parts)
      : DecoderFamily(std::move(parts)),
        m_c(GptNeoxConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(
            rotaryOptions(m_c.ropeScaling, m_c.rotaryDim(), m_c.rotaryBase, m_c.maxPositions)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_in", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "final_layer_norm", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    WeightRules rules;
    rules.family = "GPT-NeoX";
    rules.prefixes = {"gpt_neox."};
    // Buffers older checkpoints saved: the causal mask and the rotary frequencies.
    rules.ignoredSuffixes = {".attention.bias", ".attention.masked_bias", "rotary_emb.inv_freq"};
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"embed_in.weight", "embed_out.weight"}};
      rules.ignoredNames = {"embed_out.weight"};
    } else if (hasTensor("embed_out.weight", "gpt_neox.")) {
      m_head = addModule(root, "embed_out", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else a GPTNeoXModel: no language-model head
    load(root, rules, m_c.describe());
  }

  /// Value-weighted norms: its layer writes them from the fused projection's values and dense.
  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    return decoderInfo("gpt_neox", m_c.numLayers, m_c.numHeads, m_c.numHeads, m_c.hiddenSize,
                       m_c.maxPositions);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    NeoxLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int64_t hd = m_c.headDim();
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    int s = rec.record("input_layernorm", "self.input_layernorm(x)", "layernorm", h, {xStep});
    QkvHeads heads;  // views of qkv, which they keep alive until the attention has read them
    {
      const torch::Tensor qkv = L.qkv(h);  // [B, T, 3C], per head [q_h k_h v_h]
      heads = splitFusedQkv(qkv, QkvLayout::InterleavedPerHead, m_c.numHeads, rec,
                            rec.record("qkv", "self.query_key_value(x)", "linear", qkv, {s}));
    }
    const auto [cos, sin] = m_rotary.cosSin(ctx.positions);
    const std::string rope = "apply_rotary_pos_emb (" + m_rotary.describe(hd) + ")";
    heads.q = RotaryEmbedding::apply(heads.q, cos, sin);
    heads.qStep = rec.record("q_rot", rope, "rotary", heads.q, {heads.qStep});
    heads.k = RotaryEmbedding::apply(heads.k, cos, sin);
    heads.kStep = rec.record("k_rot", rope, "rotary", heads.k, {heads.kStep});
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(hd));
    sdpa.scaleText = "1 / math.sqrt(head_size)";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.dense(t); }, "self.dense(merged)",
                   [&] { return outputWeightByHead(L.dense->weight, m_c.numHeads); }};
    tail.mergeExpression = "values.transpose(1, 2).reshape(B, T, C)";
    tail.valueNorms = ctx.valueNorms;
    int attnStep = -1;
    const torch::Tensor attnOut = attentionTail(std::move(heads), sdpa, tail, rec, &attnStep);
    const MlpProjection up{[&](const torch::Tensor& t) { return L.up(t); },
                           "self.dense_h_to_4h(x)"};
    const MlpProjection down{[&](const torch::Tensor& t) { return L.down(t); },
                             "self.dense_4h_to_h(h)"};
    if (m_c.parallelResidual) {
      // Both sublayers read the block's input: x + attn(ln1(x)) + mlp(ln2(x)).
      h = L.postNorm(x);
      s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(x)", "layernorm", h,
                     {xStep});
      h = feedForward(std::move(h), up, m_act, down, nullptr, rec, s, &s);
      h.add_(attnOut).add_(x);
      rec.record("residual", "mlp_out + attn_out + x", "add", h, {s, attnStep, xStep});
      return h;
    }
    return sequentialMlp(attnOut, x, attnStep, xStep, L.postNorm, up, m_act, down, rec);
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return headOrTied(m_head, m_c.tieWordEmbeddings, m_embed, hidden);
  }

 private:
  GptNeoxConfig m_c;
  Activation m_act;
  RotaryEmbedding m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<NeoxLayer> m_layers;
  LayerNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openGptNeoxFolder(const std::string& folder, const std::string& name) {
  return openGptNeoxParts(FolderParts::read(folder), name);
}

std::shared_ptr<Model> openGptNeoxParts(FolderParts&& parts, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<GptNeoxFamily>(std::move(parts)),
                                            name);
}

}  // namespace attnscope
