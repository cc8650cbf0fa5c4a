# SPDX-License-Identifier: GPL-3.0-or-later
"""Phi-1/1.5/2 (model_type phi), StableLM (model_type stablelm) and OLMo 1 (model_type olmo) for
phi3_olmo2_moe_reference.py: tiny random checkpoints with Hugging Face's tensor names, float64
forwards written from the published architectures (transformers' PhiForCausalLM,
StableLmForCausalLM, OlmoForCausalLM), the cases and the planted mistakes. The script runs them
through decoder_reference.check like its own families.

Phi in float64, per layer (one LayerNorm read by both sublayers, the parallel residual):
  h = input_layernorm(x)                           LayerNorm with weight and bias
  q, k, v = q_proj(h), k_proj(h), v_proj(h)        with biases, split into heads (Hkv for k, v)
  q, k = q_layernorm(q), k_layernorm(k)            qk_layernorm only: one LayerNorm over head_dim
  rotary (rotate_half) on the first int(head_dim · partial_rotary_factor) dims of q and k
  x = x + dense(softmax(q kᵀ / √head_dim) v) + fc2(gelu_new(fc1(h)))
  logits = lm_head(final_layernorm(x))             lm_head with a bias
StableLM, per layer:
  h = input_layernorm(x); q, k, v (biases with use_qkv_bias)
  q, k = each head through its own LayerNorm over head_dim (gain, no bias), with qk_layernorm
  rotary on the first int(partial_rotary_factor · head_dim) dims
  parallel (use_parallel_residual): x + o_proj(attn) + mlp(h)
  else: x = x + o_proj(attn); x = x + mlp(post_attention_layernorm(x))
  mlp = down_proj(silu(gate_proj(·)) · up_proj(·)); logits = lm_head(norm(x)) (no bias)
OLMo 1: Llama's pre-norm block with LayerNorms that have neither weight nor bias (epsilon 1e-5)
for input_layernorm, post_attention_layernorm and norm, and with clip_qkv q, k and v clamped to
[-clip, clip] right after their projections.

The fixtures make each quirk visible in the attention, and each is planted as a mistake the CLI's
attention must be at least 1e-2 from: Phi: the sequential residual, full rotary, exact GELU for
gelu_new (fc1's bias puts its inputs near -3, where the two GELUs differ by 10% and more, and a
wide fc2 makes that count), no q/k LayerNorm; StableLM: full rotary, no q/k/v biases, the other
residual form, one q/k gain for every head (the gains differ from head to head), no q/k LayerNorm;
OLMo: no clipping (the q/k weights make many values pass the clip), a root-mean-square norm for
the LayerNorm (each token's embedding carries an offset of its own, which only the LayerNorm's
mean removes).
The lm_head bias shows in the top-5 next tokens and their probabilities, checked on every case.
"""

import torch

import decoder_reference as dr
from decoder_reference import attend, causal, gelu, gelu_tanh, inverse_frequencies, lin, rotate, silu, value_norms

QK_SCALE = 3.0
HEAD_GAINS = (0.5, 1.0, 2.0, 4.0)  # StableLM's per-head q/k LayerNorm gains, times QK_SCALE


def layer_norm(w, p, x, eps):
    """torch.nn.LayerNorm over the last axis, weight and (when stored) bias."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps) * w[p + ".weight"]
    return y + w[p + ".bias"] if p + ".bias" in w else y


def heads(t, n, hd):
    """[T, n·hd] -> [n, T, hd]"""
    return t.view(t.shape[0], n, hd).transpose(0, 1)


def attention(q, k, v, H, Hkv):
    """q [H, T, hd], k/v [Hkv, T, hd]: repeat_kv, causal softmax -> attention [H, T, T], values
    [H, T, hd] (one per query head), merged output [T, H·hd]."""
    group = [h * Hkv // H for h in range(H)]
    k, v = k[group], v[group]
    a, o = attend(q, k, v, causal(q.shape[1]))
    return a, v, o.transpose(0, 1).reshape(q.shape[1], -1)


# ----------------------------------------------------------------------------------------------
# Phi


def phi_config(V, **extra):
    cfg = {"model_type": "phi", "architectures": ["PhiForCausalLM"], "vocab_size": V, "hidden_size": 32,
           "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
           "max_position_embeddings": 64, "layer_norm_eps": 1e-5, "rope_theta": 10000.0,
           "partial_rotary_factor": 0.4, "qk_layernorm": False, "hidden_act": "gelu_new", "rope_scaling": None,
           "tie_word_embeddings": False, "resid_pdrop": 0.1, "embd_pdrop": 0.0, "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


def phi_weights(cfg, seed, head="untied"):
    g = dr.Init(seed)
    C, H, Hkv, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = C // H
    g.embedding("model.embed_tokens", cfg["vocab_size"], C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        g.norm(p + "input_layernorm", C, bias=True)
        qk = 1.0 if cfg.get("qk_layernorm") else QK_SCALE  # normed q and k: their gains make the peaks
        g.linear(p + "self_attn.q_proj", H * hd, C, qk)
        g.linear(p + "self_attn.k_proj", Hkv * hd, C, qk)
        g.linear(p + "self_attn.v_proj", Hkv * hd, C)
        g.linear(p + "self_attn.dense", C, H * hd)
        if cfg.get("qk_layernorm"):
            for n in ("q_layernorm", "k_layernorm"):
                g.norm(p + "self_attn." + n, hd, bias=True)
                g.w[p + f"self_attn.{n}.weight"] *= QK_SCALE
        # fc1's inputs near -3 (its bias), where gelu_new and the exact GELU differ by 10% and
        # more; a wide fc2, so that the MLP's part of the next layer's input shows it.
        g.linear(p + "mlp.fc1", I, C, 0.5)
        g.w[p + "mlp.fc1.bias"] = -3.0 + g.rng.normal(0, 0.3, I)
        g.linear(p + "mlp.fc2", C, I, 60.0)
    g.norm("model.final_layernorm", C, bias=True)
    if head == "untied":
        g.linear("lm_head", cfg["vocab_size"], C)  # with its bias
    return g.w


def phi_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, without=()):
    """PhiForCausalLM: attention [L, H, T, T], final hidden [T, C], logits [T, V]. without: quirks
    left out ("parallel", "partial", "gelu_new", "qk norm")."""
    T = len(ids)
    C, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"] or cfg["num_attention_heads"]
    hd, eps = C // H, cfg.get("layer_norm_eps", 1e-5)
    rot = hd if "partial" in without else int(hd * cfg.get("partial_rotary_factor", 0.5))
    inv = inverse_frequencies(rot, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"), rope_len or T,
                              cfg["max_position_embeddings"])
    act = gelu if "gelu_new" in without else gelu_tanh
    emb = w[prefix + "embed_tokens.weight"]
    x = emb[torch.tensor(ids)]
    attentions = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        h = layer_norm(w, p + "input_layernorm", x, eps)
        q = heads(lin(w, p + "self_attn.q_proj", h), H, hd)
        k = heads(lin(w, p + "self_attn.k_proj", h), Hkv, hd)
        v = heads(lin(w, p + "self_attn.v_proj", h), Hkv, hd)
        if cfg.get("qk_layernorm") and "qk norm" not in without:
            q = layer_norm(w, p + "self_attn.q_layernorm", q, eps)
            k = layer_norm(w, p + "self_attn.k_layernorm", k, eps)
        q, k = rotate(q, rot, inv), rotate(k, rot, inv)
        a, vv, o = attention(q, k, v, H, Hkv)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, vv, w[p + "self_attn.dense.weight"]))
        attn = lin(w, p + "self_attn.dense", o)
        mlp = lambda t: lin(w, p + "mlp.fc2", act(lin(w, p + "mlp.fc1", t)))  # noqa: E731
        if "parallel" in without:  # the sequential block, the one norm read again before the MLP
            x = x + attn
            x = x + mlp(layer_norm(w, p + "input_layernorm", x, eps))
        else:
            x = x + attn + mlp(h)
    x = layer_norm(w, prefix + "final_layernorm", x, eps)
    if "lm_head.weight" in w:
        logits = lin(w, "lm_head", x)
    else:
        logits = x @ emb.T + w.get("lm_head.bias", 0)
    return torch.stack(attentions), x, logits


def phi_mistakes(cfg):
    out = [("sequential residual (MLP after attention)", cfg, dict(without=("parallel",))),
           ("full rotary", cfg, dict(without=("partial",))),
           ("exact GELU for gelu_new", cfg, dict(without=("gelu_new",)))]
    if cfg.get("qk_layernorm"):
        out.append(("no q/k LayerNorm", cfg, dict(without=("qk norm",))))
    return out


# ----------------------------------------------------------------------------------------------
# StableLM


def stablelm_config(V, **extra):
    cfg = {"model_type": "stablelm", "architectures": ["StableLmForCausalLM"], "vocab_size": V,
           "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "max_position_embeddings": 64, "layer_norm_eps": 1e-5, "rope_theta": 10000.0,
           "partial_rotary_factor": 0.25, "hidden_act": "silu", "use_qkv_bias": False, "qk_layernorm": False,
           "use_parallel_residual": False, "rope_scaling": None, "tie_word_embeddings": False,
           "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


def stablelm_weights(cfg, seed, head="untied"):
    g = dr.Init(seed)
    C, H, Hkv, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = C // H
    bias = cfg.get("use_qkv_bias", False)
    qk_norm = cfg.get("qk_layernorm", False)
    g.embedding("model.embed_tokens", cfg["vocab_size"], C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        g.norm(p + "input_layernorm", C, bias=True)
        g.linear(p + "self_attn.q_proj", H * hd, C, 1.0 if qk_norm else QK_SCALE, bias)
        g.linear(p + "self_attn.k_proj", Hkv * hd, C, 1.0 if qk_norm else QK_SCALE, bias)
        if bias:  # large enough to move the scores
            for n in ("q_proj", "k_proj"):
                g.w[p + f"self_attn.{n}.bias"] *= 5
        g.linear(p + "self_attn.v_proj", Hkv * hd, C, 1.0, bias)
        g.linear(p + "self_attn.o_proj", C, H * hd, 1.0, False)
        if qk_norm:  # each head its own gain, of different sizes: one gain for all would show
            for n, count in (("q_layernorm", H), ("k_layernorm", Hkv)):
                for h in range(count):
                    g.norm(p + f"self_attn.{n}.norms.{h}", hd)
                    g.w[p + f"self_attn.{n}.norms.{h}.weight"] *= QK_SCALE * HEAD_GAINS[h % len(HEAD_GAINS)]
        if not cfg.get("use_parallel_residual", False):
            g.norm(p + "post_attention_layernorm", C, bias=True)
        g.linear(p + "mlp.gate_proj", I, C, 1.0, False)
        g.linear(p + "mlp.up_proj", I, C, 1.0, False)
        g.linear(p + "mlp.down_proj", C, I, 1.0, False)
    g.norm("model.norm", C, bias=True)
    if head == "untied":
        g.linear("lm_head", cfg["vocab_size"], C, bias=False)
    return g.w


def stablelm_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, without=()):
    """StableLmForCausalLM. without: "partial", "qkv bias", "parallel" (the other residual form),
    "per-head norm" (head 0's gain for every head), "qk norm"."""
    T = len(ids)
    C, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps = C // H, cfg.get("layer_norm_eps", 1e-5)
    rot = hd if "partial" in without else int(cfg.get("partial_rotary_factor", 0.25) * hd)
    inv = inverse_frequencies(rot, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"), rope_len or T,
                              cfg["max_position_embeddings"])
    parallel = cfg.get("use_parallel_residual", False) != ("parallel" in without)
    emb = w[prefix + "embed_tokens.weight"]
    x = emb[torch.tensor(ids)]
    attentions = []

    def proj(p, t):
        y = t @ w[p + ".weight"].T
        return y + w[p + ".bias"] if p + ".bias" in w and "qkv bias" not in without else y

    def head_norms(name, t):  # t [n, T, hd]
        n = t.shape[0]
        gains = [w[f"{name}.norms.{0 if 'per-head norm' in without else h}.weight"] for h in range(n)]
        mu = t.mean(-1, keepdim=True)
        var = ((t - mu) ** 2).mean(-1, keepdim=True)
        return (t - mu) / torch.sqrt(var + eps) * torch.stack(gains)[:, None, :]

    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        h = layer_norm(w, p + "input_layernorm", x, eps)
        q = heads(proj(p + "self_attn.q_proj", h), H, hd)
        k = heads(proj(p + "self_attn.k_proj", h), Hkv, hd)
        v = heads(proj(p + "self_attn.v_proj", h), Hkv, hd)
        if cfg.get("qk_layernorm") and "qk norm" not in without:
            q = head_norms(p + "self_attn.q_layernorm", q)
            k = head_norms(p + "self_attn.k_layernorm", k)
        q, k = rotate(q, rot, inv), rotate(k, rot, inv)
        a, vv, o = attention(q, k, v, H, Hkv)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, vv, w[p + "self_attn.o_proj.weight"]))
        attn = lin(w, p + "self_attn.o_proj", o)

        def mlp(t):
            return lin(w, p + "mlp.down_proj", silu(lin(w, p + "mlp.gate_proj", t)) * lin(w, p + "mlp.up_proj", t))
        if parallel:
            x = x + attn + mlp(h)
        else:
            x = x + attn
            post = p + "post_attention_layernorm"
            x = x + mlp(layer_norm(w, post if post + ".weight" in w else p + "input_layernorm", x, eps))
    x = layer_norm(w, prefix + "norm", x, eps)
    logits = x @ w.get("lm_head.weight", emb).T
    return torch.stack(attentions), x, logits


def stablelm_mistakes(cfg):
    out = [("full rotary", cfg, dict(without=("partial",))),
           ("the other residual form", cfg, dict(without=("parallel",)))]
    if cfg.get("use_qkv_bias"):
        out.append(("no q/k/v biases", cfg, dict(without=("qkv bias",))))
    if cfg.get("qk_layernorm"):
        out += [("one q/k LayerNorm gain for every head", cfg, dict(without=("per-head norm",))),
                ("no q/k LayerNorm", cfg, dict(without=("qk norm",)))]
    return out


# ----------------------------------------------------------------------------------------------
# OLMo 1


def olmo_config(V, **extra):
    cfg = {"model_type": "olmo", "architectures": ["OlmoForCausalLM"], "vocab_size": V, "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
           "max_position_embeddings": 64, "rope_theta": 10000.0, "hidden_act": "silu", "attention_bias": False,
           "clip_qkv": None, "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


def olmo_weights(cfg, seed, head="untied"):
    g = dr.Init(seed)
    C, H, Hkv, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = C // H
    bias = cfg.get("attention_bias", False)
    g.embedding("model.embed_tokens", cfg["vocab_size"], C)
    # Each token's own offset on every feature: a LayerNorm removes it, an RMSNorm would not.
    g.w["model.embed_tokens.weight"] += g.rng.uniform(-3, 3, (cfg["vocab_size"], 1))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        g.linear(p + "self_attn.q_proj", H * hd, C, QK_SCALE, bias)
        g.linear(p + "self_attn.k_proj", Hkv * hd, C, QK_SCALE, bias)
        g.linear(p + "self_attn.v_proj", Hkv * hd, C, 3.0, bias)
        g.linear(p + "self_attn.o_proj", C, H * hd, 1.0, bias)
        g.linear(p + "mlp.gate_proj", I, C, 1.0, False)
        g.linear(p + "mlp.up_proj", I, C, 1.0, False)
        g.linear(p + "mlp.down_proj", C, I, 1.0, False)
    if head == "untied":
        g.linear("lm_head", cfg["vocab_size"], C, bias=False)
    return g.w


def olmo_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, without=()):
    """OlmoForCausalLM. without: "clip" (no clip_qkv), "layer norm" (an RMSNorm without weight)."""
    T = len(ids)
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    hd = C // H
    inv = inverse_frequencies(hd, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"), rope_len or T,
                              cfg["max_position_embeddings"])
    clip = None if "clip" in without else cfg.get("clip_qkv")

    def norm(x):
        if "layer norm" in without:
            return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5)
        mu = x.mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + 1e-5)

    def proj(p, t):
        y = lin(w, p, t)
        return y.clamp(-clip, clip) if clip else y

    emb = w[prefix + "embed_tokens.weight"]
    x = emb[torch.tensor(ids)]
    attentions = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        h = norm(x)
        q = rotate(heads(proj(p + "self_attn.q_proj", h), H, hd), hd, inv)
        k = rotate(heads(proj(p + "self_attn.k_proj", h), Hkv, hd), hd, inv)
        v = heads(proj(p + "self_attn.v_proj", h), Hkv, hd)
        a, vv, o = attention(q, k, v, H, Hkv)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, vv, w[p + "self_attn.o_proj.weight"]))
        x = x + lin(w, p + "self_attn.o_proj", o)
        h = norm(x)
        x = x + lin(w, p + "mlp.down_proj", silu(lin(w, p + "mlp.gate_proj", h)) * lin(w, p + "mlp.up_proj", h))
    x = norm(x)
    logits = x @ w.get("lm_head.weight", emb).T
    return torch.stack(attentions), x, logits


def olmo_mistakes(cfg):
    out = [("RMSNorm for the parameter-free LayerNorm", cfg, dict(without=("layer norm",)))]
    if cfg.get("clip_qkv"):
        out.append(("no clip_qkv", cfg, dict(without=("clip",))))
    return out


# ----------------------------------------------------------------------------------------------
# The cases


def cases(V):
    """In decoder_reference.cases()'s form."""
    out = []
    # Phi-2-like: heads of 16 with partial_rotary_factor 0.4 (int(6.4) = 6 rotated dims), a biased
    # lm_head; with the options Phi-2 leaves off: qk_layernorm and one key/value head for both
    # query heads. F16. (One case for the family: each case costs two CLI starts.)
    p2 = phi_config(V, qk_layernorm=True, num_key_value_heads=1)
    out.append(("phi-2-partial-0.4-qk-norm-mqa-f16", "phi", p2, lambda: phi_weights(p2, 120), "F16", "model.", True,
                None))
    # StableLM 2-like: the sequential block (StableLM-3B-4E1T, StableLM 2 1.6B), q/k/v biases
    # (1.6B), per-head q/k LayerNorm (12B), grouped-query heads, a quarter of each head rotating
    # (2 of 8 dims), tied head, BF16. The 12B's parallel residual is Phi's block (the MLP reads
    # the attention's normed input), planted here as the mistake "the other residual form". (One
    # case for the family: each case costs two CLI starts, ~1.2 s.)
    s2 = stablelm_config(V, use_qkv_bias=True, qk_layernorm=True, tie_word_embeddings=True)
    out.append(("stablelm-2-qkv-bias-qk-norm-tied-bf16", "stablelm", s2,
                lambda: stablelm_weights(s2, 122, head="embed"), "BF16", "model.", True, None))
    # StableLM 2 12B-like: use_parallel_residual (x + attn(ln(x)) + mlp(ln(x)), no
    # post_attention_layernorm in the file), per-head q/k LayerNorm, untied head; the sequential
    # block is planted as "the other residual form".
    s12 = stablelm_config(V, use_parallel_residual=True, qk_layernorm=True)
    out.append(("stablelm-2-12b-parallel-qk-norm", "stablelm", s12, lambda: stablelm_weights(s12, 123), "F32",
                "model.", True, None))
    # OLMo-1.7-like: clip_qkv (3, where the scaled-up q/k/v weights pass it often), tied head.
    ol = olmo_config(V, clip_qkv=3.0, tie_word_embeddings=True)
    out.append(("olmo-1.7-clip-qkv-tied", "olmo", ol, lambda: olmo_weights(ol, 124, head="embed"), "F32", "model.",
                True, None))
    return out


FORWARD = {"phi": phi_forward, "stablelm": stablelm_forward, "olmo": olmo_forward}
MISTAKES = {"phi": phi_mistakes, "stablelm": stablelm_mistakes, "olmo": olmo_mistakes}
