// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2 (Hugging Face's GPT2Model / GPT2LMHeadModel, every size): the gpt2 family.
#include "models/gpt2.h"

#include <cmath>
#include <utility>

#include "attnscope/utf8.h"
#include "models/decoder_family.h"
#include "models/gpt2_config.h"
#include "models/transformer_model.h"
#include "models/weight_loader.h"
#include "nn/attention_tail.h"
#include "nn/conv1d.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/qkv_layout.h"
#include "nn/scaled_dot_product.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// Causal self-attention: c_attn projects to q|k|v (split layout), c_proj mixes the heads.
/// Parameters: c_attn.{weight [C, 3C], bias [3C]}, c_proj.{weight [C, C], bias [C]}.
struct Gpt2AttentionImpl : torch::nn::Module {
  Gpt2AttentionImpl(const Gpt2Config& c, int layer)
      : c_attn(register_module("c_attn", Conv1D(c.nEmbd, 3 * c.nEmbd))),
        c_proj(register_module("c_proj", Conv1D(c.nEmbd, c.nEmbd))),
        heads(c.nHead) {
    const double hd = c.headDim();
    scale = c.scaleAttnWeights ? 1.0 / std::sqrt(hd) : 1.0;
    scaleText = c.scaleAttnWeights ? "1 / math.sqrt(hd)" : "1";
    if (c.scaleAttnByInverseLayerIdx) {
      scale /= layer + 1;
      scaleText += " / " + std::to_string(layer + 1);
    }
  }
  Conv1D c_attn, c_proj;
  int64_t heads;
  double scale;
  std::string scaleText;
};
TORCH_MODULE(Gpt2Attention);

/// Parameters: c_fc.{weight [C, n_inner], bias}, c_proj.{weight [n_inner, C], bias}, and for a
/// learned activation (prelu, xielu) its tensors under act.
struct Gpt2MlpImpl : torch::nn::Module {
  Gpt2MlpImpl(const Gpt2Config& c, Activation activation)
      : c_fc(register_module("c_fc", Conv1D(c.nEmbd, c.innerDim()))),
        c_proj(register_module("c_proj", Conv1D(c.innerDim(), c.nEmbd))) {
    if (!activationParameters(activation).empty())
      act = register_module("act", LearnedActivation(activation));
  }
  Conv1D c_fc, c_proj;
  LearnedActivation act{nullptr};
};
TORCH_MODULE(Gpt2Mlp);

/// Pre-LayerNorm block: x + attn(ln_1(x)), then + mlp(ln_2(·)).
struct Gpt2BlockImpl : torch::nn::Module {
  Gpt2BlockImpl(const Gpt2Config& c, int layer)
      : ln_1(register_module("ln_1", LayerNorm(c.nEmbd, c.layerNormEpsilon))),
        attn(register_module("attn", Gpt2Attention(c, layer))),
        ln_2(register_module("ln_2", LayerNorm(c.nEmbd, c.layerNormEpsilon))),
        mlp(register_module("mlp", Gpt2Mlp(c, parseActivation(c.activation)))) {}
  LayerNorm ln_1;
  Gpt2Attention attn;
  LayerNorm ln_2;
  Gpt2Mlp mlp;
};
TORCH_MODULE(Gpt2Block);

/// wte.weight [V, C], wpe.weight [P, C], h.{i}.*, ln_f; the LM head is tied to wte.
struct Gpt2StackImpl : torch::nn::Module {
  explicit Gpt2StackImpl(const Gpt2Config& c)
      : wte(register_module("wte", embeddingTable(c.vocabSize, c.nEmbd))),
        wpe(register_module("wpe", embeddingTable(c.nPositions, c.nEmbd))),
        h(register_module("h", torch::nn::ModuleList())),
        ln_f(register_module("ln_f", LayerNorm(c.nEmbd, c.layerNormEpsilon))) {
    for (int i = 0; i < c.nLayer; ++i) {
      blocks.push_back(Gpt2Block(c, i));
      h->push_back(blocks.back());
    }
  }
  // Passing the weight keeps Embedding from drawing N(0, 1): the weights are always loaded.
  static torch::nn::Embedding embeddingTable(int64_t rows, int64_t dim) {
    return torch::nn::Embedding(
        torch::nn::EmbeddingOptions(rows, dim)._weight(torch::empty({rows, dim})));
  }
  torch::nn::Embedding wte, wpe;
  torch::nn::ModuleList h;
  LayerNorm ln_f;
  std::vector<Gpt2Block> blocks;
};
TORCH_MODULE(Gpt2Stack);

std::string describe(const Gpt2Config& c) {
  return "n_layer " + std::to_string(c.nLayer) + ", n_head " + std::to_string(c.nHead) +
         ", n_embd " + std::to_string(c.nEmbd) + ", n_positions " + std::to_string(c.nPositions) +
         ", vocab_size " + std::to_string(c.vocabSize);
}

class Gpt2Family final : public DecoderFamily {
 public:
  explicit Gpt2Family(FolderParts parts)
      : DecoderFamily(std::move(parts)),
        m_c(Gpt2Config::fromReader(m_config)),
        m_activation(parseActivation(m_c.activation, m_config.source() + ": activation_function")) {
    m_module = rootForVocabulary(m_c.vocabSize, [&] {
      // Before building: a config whose sizes disagree with the weights' headers (n_layer 2^20)
      // would otherwise allocate the whole model first. A GGUF file's matrices are packed, not
      // in the checkpoint: GgufModel checked its config against its tensors.
      if (!m_packed) m_c.checkShapes(m_checkpoint, m_config.source());
      return Gpt2Stack(m_c);
    });
    WeightRules rules;
    rules.family = "GPT-2";
    rules.prefixes = {"transformer."};
    rules.ignoredSuffixes = {".attn.bias", ".attn.masked_bias"};
    rules.ignoredNames = {"lm_head.weight"};
    rules.tied = {{"wte.weight", "lm_head.weight"}};
    load(*m_module, rules, describe(m_c));
  }

  ModelInfo info() const override {
    return decoderInfo("gpt2", m_c.nLayer, m_c.nHead, m_c.nHead, m_c.nEmbd, m_c.nPositions);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return embedIdsAt(ids, 0); }

  torch::Tensor embedIdsAt(const torch::Tensor& ids, int64_t start) override {
    const torch::Tensor positions = torch::arange(start, start + ids.size(1), ids.options());
    return lookupRows(m_module->wte->weight, ids) +
           lookupRows(m_module->wpe->weight, positions).unsqueeze(0);
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    Gpt2BlockImpl& block = *m_module->blocks[static_cast<std::size_t>(index)];
    Gpt2AttentionImpl& attn = *block.attn;
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    // Every temporary is released right after its last reader (the scopes below): the caching
    // allocator keeps the blocks a layer holds at once for the whole run, so what is alive at
    // the layer's busiest point stays resident (GPT-2 small at T = 1000: the CLI's peak RSS fell
    // by 14 MiB).
    int s = -1;
    QkvHeads heads;  // views of qkv [B, T, 3C], which they keep alive
    {
      torch::Tensor qkv;
      {
        const torch::Tensor h = block.ln_1(x);
        s = rec.record("ln_1", "self.ln_1(x)", "layernorm", h, {xStep});
        qkv = attn.c_attn(h);
      }
      heads = splitFusedQkv(qkv, QkvLayout::Split, attn.heads, rec,
                            rec.record("qkv", "self.c_attn(x)", "linear", qkv, {s}));
    }
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = attn.scale;
    sdpa.scaleText = attn.scaleText;
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    // c_proj.weight [C, C] is W_O as in y = z W_O: rows h·hd .. (h+1)·hd read head h.
    tail.output = {[&](const torch::Tensor& t) { return attn.c_proj(t); }, "self.c_proj(merged)",
                   [&] {
                     const torch::Tensor wo = computeWeight(attn.c_proj->weight);
                     return wo.reshape({attn.heads, -1, wo.size(1)});
                   }};
    tail.mergeExpression = "values.transpose(1, 2).contiguous().view(B, T, C)";
    tail.valueNorms = ctx.valueNorms;
    torch::Tensor h = attentionTail(std::move(heads), sdpa, tail, rec, &s);
    // The residual stream is updated in place: x belongs to the caller's loop and is not reused.
    const torch::Tensor residual = h.add_(x);
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = block.ln_2(residual);
    s = rec.record("ln_2", "self.ln_2(x)", "layernorm", h, {residualStep});
    Gpt2MlpImpl& mlp = *block.mlp;
    const MlpProjection up{[&](const torch::Tensor& t) { return mlp.c_fc(t); }, "self.c_fc(x)"};
    const MlpProjection down{[&](const torch::Tensor& t) { return mlp.c_proj(t); },
                             "self.c_proj(h)"};
    h = feedForward(std::move(h), up, m_activation, down, nullptr, rec, s, &s,
                    m_c.activation.rfind("gelu", 0) == 0 ? "mlp_gelu" : "mlp_act",
                    mlp.act ? mlp.act->parameters : std::vector<torch::Tensor>{});
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_module->ln_f(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return linearForward(hidden, m_module->wte->weight, {});
  }
  bool supportsValueNorms() const override { return true; }

 private:
  // The typed config, under the name layer() reads it by; it hides FolderFamily's reader of the
  // same config.json, which the constructor names as m_config.
  Gpt2Config m_c;
  Activation m_activation;
  Gpt2Stack m_module{nullptr};  // the FolderFamily's root
};

}  // namespace

std::shared_ptr<Model> openGpt2Folder(const std::string& folder, const std::string& name) {
  return openGpt2Parts(FolderParts::read(folder), name);
}

std::shared_ptr<Model> openGpt2Parts(FolderParts&& parts, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<Gpt2Family>(std::move(parts)), name);
}

}  // namespace attnscope
