#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` on Phi-3, OLMo 2, Mixtral, Qwen2-MoE, Qwen3-MoE and OLMoE
checkpoints against plain PyTorch; and Phi-1/1.5/2, StableLM and OLMo 1, whose forwards, cases and mistakes are in
phi_stablelm_olmo_cases.py; GPT-J, OPT and GPT-Neo, in gptj_opt_neo_cases.py; and Falcon, in
falcon_cases.py.

The same check as decoder_reference.py (whose case runner and weight writer it uses): tiny random
checkpoints in the Hugging Face layout with its tensor names, a padded batch through the CLI, every
layer's attention, the final hidden states, the top-5 next tokens with their probabilities and the
value norms against a float64 forward written here from the published architectures
(transformers' Phi3ForCausalLM, Olmo2ForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM,
Qwen3MoeForCausalLM, OlmoeForCausalLM), to 1e-4
as tolerance.py measures it; for the mixtures of experts also the router's choice (`--dump`'s
router_experts.npy and router_weights.npy, [L, B, T, k]) for every token.

Phi-3 in float64, per layer: Llama's pre-RMSNorm block, with
  q | k | v = self_attn.qkv_proj(x) split at H·hd and (H + Hkv)·hd (grouped-query widths),
  gate | up = mlp.gate_up_proj(x) split in half, gate first; mlp = down_proj(up · silu(gate)),
rotary on the first int(head_dim · partial_rotary_factor) dimensions, and LongRoPE
(rope_scaling type "longrope" or "su"): frequency i is base^(-2i/d) / factor_i with long_factor
when the sequence (largest position + 1) is longer than original_max_position_embeddings and
short_factor otherwise, and cos and sin times attention_factor, by default
sqrt(1 + ln(max / original) / ln(original)) where max_position_embeddings / original > 1. A
sliding window, when set, hides keys j <= i - sliding_window on every layer.

OLMo 2 in float64, per layer (no input norm):
  q = q_norm(q_proj(x)), k = k_norm(k_proj(x)): RMSNorm over the whole projection (H·hd, Hkv·hd),
      before the split into heads and before the rotation;
  h = x + post_attention_layernorm(attn(x)); out = h + post_feedforward_layernorm(mlp(h)).

Mixtral / Qwen2-MoE / Qwen3-MoE in float64: Llama's (Qwen2's, with q/k/v biases; Qwen3's, with
  per-head q/k norms) attention, then p = softmax(gate(h)) over all experts, the top k kept (largest
  first; renormalised to sum to 1 in Mixtral, and in Qwen-MoE only with norm_topk_prob),
  out = Σ_k w_k · down(silu(gate(h)) · up(h)) of each chosen expert (Mixtral's w1 / w3 / w2);
  Qwen2-MoE adds sigmoid(shared_expert_gate(h)) · shared_expert(h) for every token; Qwen-MoE's
  mlp_only_layers, and the layers decoder_sparse_step skips ((i + 1) % step != 0), are dense MLPs.
Router weights are scaled up, and the seeds chosen, so that every token's k-th and (k+1)-th
probabilities are at least 1e-4 apart (asserted): no ties for torch.topk to break.

Each fixture makes its quirks visible in the attention (q/k weights or q/k norm gains scaled up,
heads of different sizes so that a per-head norm differs from the whole one, windows shorter than
the text, one case past the original context and one within it), and each quirk is planted as a
mistake that the CLI's attention must be at least 1e-2 from: gate and up swapped, no LongRoPE
factors, the other factor list, no attention factor, full rotary, no window; q/k norm per head, no
q/k norm, Llama's pre-norm layout; top-k weights renormalised the other way, w1 and w3 swapped,
top-1 routing, the shared expert without its sigmoid gate, no shared expert; and Qwen2-MoE's folder
with its dense layers read as sparse (decoder_sparse_step, mlp_only_layers dropped) must be refused.

Usage: phi3_olmo2_moe_reference.py ATTNSCOPE_CLI [KEEP_DIR]
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing; under CI=true that fails
instead, exit 1: see cannot_run.py).
"""
import json
import math
import os
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    from cannot_run import cannot_run
    cannot_run(f"/usr/bin/python3 has no {e.name}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decoder_reference as dr  # noqa: E402
from cli_batch import cli_run  # noqa: E402
from decoder_common import check_generate, write_tokenizer  # noqa: E402
from decoder_reference import inverse_frequencies, lin, rms, rotate, silu, value_norms  # noqa: E402
import phi_stablelm_olmo_cases as phi_stablelm  # noqa: E402  Phi-1/1.5/2, StableLM, OLMo 1
import gptj_opt_neo_cases as gptj_opt_neo  # noqa: E402  GPT-J, OPT and GPT-Neo
import falcon_cases as falcon  # noqa: E402  Falcon

QK_SCALE = 3.0


def causal_keep(T, window=0):
    i_ = torch.arange(T)[:, None]
    j_ = torch.arange(T)[None, :]
    keep = j_ <= i_
    if window:
        keep &= i_ - j_ < window  # the query's own key and the window - 1 before it
    return keep


def attend_heads(q, k, v, H, Hkv, keep):
    """q [H, T, hd], k/v [Hkv, T, hd] -> attention [H, T, T], values [H, T, hd]."""
    group = [h * Hkv // H for h in range(H)]  # repeat_kv: query head h reads kv head h // (H / Hkv)
    k, v = k[group], v[group]
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    a = torch.softmax(s.masked_fill(~keep, float("-inf")), -1)
    return a, v


# ----------------------------------------------------------------------------------------------
# Phi-3


def phi3_weights(cfg, seed, head="untied"):
    g = dr.Init(seed)
    C, H, Hkv, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = C // H
    g.embedding("model.embed_tokens", cfg["vocab_size"], C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        g.norm(p + "input_layernorm", C)
        g.norm(p + "post_attention_layernorm", C)
        q = QK_SCALE * g.rng.normal(0, 1 / math.sqrt(C), (H * hd, C))
        k = QK_SCALE * g.rng.normal(0, 1 / math.sqrt(C), (Hkv * hd, C))
        v = g.rng.normal(0, 1 / math.sqrt(C), (Hkv * hd, C))
        g.w[p + "self_attn.qkv_proj.weight"] = np.concatenate([q, k, v])
        g.linear(p + "self_attn.o_proj", C, H * hd, 1.0, False)
        # Wide gate and up inputs, so that silu(gate) · up and silu(up) · gate differ widely.
        gate = g.rng.normal(0, 1 / math.sqrt(C), (I, C)) * 2.0
        up = g.rng.normal(0, 1 / math.sqrt(C), (I, C)) * 2.0
        g.w[p + "mlp.gate_up_proj.weight"] = np.concatenate([gate, up])
        g.linear(p + "mlp.down_proj", C, I, 2.0, False)
    g.norm("model.norm", C)
    if head == "untied":
        g.linear("lm_head", cfg["vocab_size"], C, bias=False)
    return g.w


def longrope(cfg, n, without=()):
    """(frequency divisors or None, attention factor) for a sequence of n positions."""
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) not in ("longrope", "su") or "longrope" in without:
        return None, 1.0
    orig = cfg.get("original_max_position_embeddings", 4096)
    use_long = n > orig
    if "other factors" in without:
        use_long = not use_long
    factors = torch.tensor(rs["long_factor" if use_long else "short_factor"], dtype=torch.float64)
    if "factors" in without:
        factors = torch.ones_like(factors)
    if "attention factor" in without:
        a = 1.0
    elif "attention_factor" in rs:
        a = rs["attention_factor"]
    else:
        f = cfg["max_position_embeddings"] / orig
        a = math.sqrt(1 + math.log(f) / math.log(orig)) if f > 1 else 1.0
    return factors, a


def phi3_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, without=(), rope_lens=None):
    """Phi3ForCausalLM: attention [L, H, T, T], final hidden [T, C], logits [T, V]. without: quirks
    left out ("gate/up order", "longrope", "factors", "other factors", "attention factor",
    "partial", "window"). rope_lens: per position, the length of the model call that computed it
    (generation with a cache: transformers picks LongRoPE's factors per call, by its largest
    position + 1, and the cache keeps each key as its call rotated it); None: rope_len or T."""
    T = len(ids)
    C, H, Hkv, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = C // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    rot = hd if "partial" in without else int(hd * cfg.get("partial_rotary_factor", 1.0))
    inv = inverse_frequencies(rot, cfg.get("rope_theta", 10000.0), None, T, cfg["max_position_embeddings"])

    def divided(factors):  # the "full rotary" mistake has more frequencies than factors: 1 beyond
        if factors is None:
            return inv
        return inv / torch.cat([factors, torch.ones(len(inv) - len(factors), dtype=factors.dtype)])

    factors, a_factor = longrope(cfg, rope_len or T, without)
    if rope_lens is None:
        def rope(t):
            return rotate(t, rot, divided(factors))
    else:  # each position rotated with the factors of its own call's length
        invs = [divided(longrope(cfg, n, without)[0]) for n in rope_lens]

        def rope(t):
            return torch.stack([rotate(t, rot, f)[..., i, :] for i, f in enumerate(invs)], -2)
    window = 0 if "window" in without else cfg.get("sliding_window") or 0
    keep = causal_keep(T, window)
    emb = w[prefix + "embed_tokens.weight"]
    x = emb[torch.tensor(ids)]
    attentions = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        h = rms(w, p + "input_layernorm", x, eps)
        qkv = lin(w, p + "self_attn.qkv_proj", h)
        q = qkv[:, : H * hd].reshape(T, H, hd).transpose(0, 1)
        k = qkv[:, H * hd:(H + Hkv) * hd].reshape(T, Hkv, hd).transpose(0, 1)
        v = qkv[:, (H + Hkv) * hd:].reshape(T, Hkv, hd).transpose(0, 1)
        q, k = rope(q), rope(k)
        # cos and sin times the attention factor: the rotated dimensions scale, the others pass.
        q = torch.cat([q[..., :rot] * a_factor, q[..., rot:]], -1)
        k = torch.cat([k[..., :rot] * a_factor, k[..., rot:]], -1)
        a, vv = attend_heads(q, k, v, H, Hkv, keep)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, vv, w[p + "self_attn.o_proj.weight"]))
        x = x + lin(w, p + "self_attn.o_proj", (a @ vv).transpose(0, 1).reshape(T, H * hd))
        h = rms(w, p + "post_attention_layernorm", x, eps)
        gu = lin(w, p + "mlp.gate_up_proj", h)
        gate, up = gu[:, :I], gu[:, I:]
        if "gate/up order" in without:
            gate, up = up, gate
        x = x + lin(w, p + "mlp.down_proj", up * silu(gate))
    x = rms(w, prefix + "norm", x, eps)
    logits = x @ w.get("lm_head.weight", emb).T
    return torch.stack(attentions), x, logits


def phi3_mistakes(cfg):
    out = [("gate and up swapped in gate_up_proj", cfg, dict(without=("gate/up order",)))]
    rs = cfg.get("rope_scaling")
    if rs:
        out += [("longrope ignored", cfg, dict(without=("longrope",))),
                ("no longrope factors", cfg, dict(without=("factors",))),
                ("the other longrope factor list", cfg, dict(without=("other factors",))),
                ("no longrope attention factor", cfg, dict(without=("attention factor",)))]
    if cfg.get("partial_rotary_factor", 1.0) != 1.0:
        out.append(("full rotary", cfg, dict(without=("partial",))))
    if cfg.get("sliding_window"):
        out.append(("no sliding window", cfg, dict(without=("window",))))
    return out


def phi3_config(V, **extra):
    cfg = {"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "vocab_size": V, "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "max_position_embeddings": 32, "original_max_position_embeddings": 32, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False, "sliding_window": None,
           "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


# ----------------------------------------------------------------------------------------------
# OLMo 2


HEAD_SIZES = (0.5, 1.0, 2.0, 4.0)  # q/k rows of head h scaled: a per-head norm would undo it


def olmo2_weights(cfg, seed, head="untied"):
    g = dr.Init(seed)
    C, H, Hkv, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = C // H
    bias = cfg.get("attention_bias", False)
    g.embedding("model.embed_tokens", cfg["vocab_size"], C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        g.linear(p + "self_attn.q_proj", H * hd, C, 1.0, bias)
        g.linear(p + "self_attn.k_proj", Hkv * hd, C, 1.0, bias)
        for name, n in (("q_proj", H), ("k_proj", Hkv)):
            scale = np.repeat([HEAD_SIZES[h % len(HEAD_SIZES)] for h in range(n)], hd)
            g.w[p + f"self_attn.{name}.weight"] *= scale[:, None]
        g.linear(p + "self_attn.v_proj", Hkv * hd, C, 1.0, bias)
        g.linear(p + "self_attn.o_proj", C, H * hd, 1.0, bias)
        g.norm(p + "self_attn.q_norm", H * hd)
        g.norm(p + "self_attn.k_norm", Hkv * hd)
        g.w[p + "self_attn.q_norm.weight"] *= QK_SCALE
        g.w[p + "self_attn.k_norm.weight"] *= QK_SCALE
        g.norm(p + "post_attention_layernorm", C)
        g.norm(p + "post_feedforward_layernorm", C)
        g.linear(p + "mlp.gate_proj", I, C, 1.0, False)
        g.linear(p + "mlp.up_proj", I, C, 1.0, False)
        g.linear(p + "mlp.down_proj", C, I, 1.0, False)
    g.norm("model.norm", C)
    if head == "untied":
        g.linear("lm_head", cfg["vocab_size"], C, bias=False)
    return g.w


def olmo2_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, without=()):
    """Olmo2ForCausalLM. without: "whole q/k norm" (per head instead), "qk norm", "post-norm"
    (Llama's pre-norm layout with the same norms)."""
    T = len(ids)
    C, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = C // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    inv = inverse_frequencies(hd, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"), rope_len or T,
                              cfg["max_position_embeddings"])
    keep = causal_keep(T)
    emb = w[prefix + "embed_tokens.weight"]
    x = emb[torch.tensor(ids)]
    attentions = []

    def qk_norm(name, t, heads):
        if "qk norm" in without:
            return t
        if "whole q/k norm" in without:  # each head over its own hd, with its slice of the gain
            t = t.view(T, heads, hd)
            g = w[name + ".weight"].view(heads, hd)
            return (g * (t / torch.sqrt((t * t).mean(-1, keepdim=True) + eps))).reshape(T, heads * hd)
        return rms(w, name, t, eps)

    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        post = "post-norm" not in without
        h = x if post else rms(w, p + "post_attention_layernorm", x, eps)
        q = qk_norm(p + "self_attn.q_norm", lin(w, p + "self_attn.q_proj", h), H)
        k = qk_norm(p + "self_attn.k_norm", lin(w, p + "self_attn.k_proj", h), Hkv)
        v = lin(w, p + "self_attn.v_proj", h)
        q = rotate(q.view(T, H, hd).transpose(0, 1), hd, inv)
        k = rotate(k.view(T, Hkv, hd).transpose(0, 1), hd, inv)
        v = v.view(T, Hkv, hd).transpose(0, 1)
        a, vv = attend_heads(q, k, v, H, Hkv, keep)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, vv, w[p + "self_attn.o_proj.weight"]))
        attn = lin(w, p + "self_attn.o_proj", (a @ vv).transpose(0, 1).reshape(T, H * hd))
        x = x + (rms(w, p + "post_attention_layernorm", attn, eps) if post else attn)
        h = x if post else rms(w, p + "post_feedforward_layernorm", x, eps)
        m = lin(w, p + "mlp.down_proj", silu(lin(w, p + "mlp.gate_proj", h)) * lin(w, p + "mlp.up_proj", h))
        x = x + (rms(w, p + "post_feedforward_layernorm", m, eps) if post else m)
    x = rms(w, prefix + "norm", x, eps)
    logits = x @ w.get("lm_head.weight", emb).T
    return torch.stack(attentions), x, logits


def olmo2_mistakes(cfg):
    return [("q/k norm per head", cfg, dict(without=("whole q/k norm",))),
            ("no q/k norm", cfg, dict(without=("qk norm",))),
            ("pre-norm layout (norms before attention and MLP)", cfg, dict(without=("post-norm",)))]


def olmo2_config(V, **extra):
    cfg = {"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "vocab_size": V, "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "hidden_act": "silu",
           "attention_bias": False, "tie_word_embeddings": False, "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


# ----------------------------------------------------------------------------------------------
# Mixtral, Qwen3-MoE


ROUTER_SCALE = 4.0  # router weights scaled up: spread probabilities, no near-ties (asserted)


def moe_weights(cfg, seed, head="untied"):
    g = dr.Init(seed)
    C, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", C // H)
    mixtral = cfg["model_type"] == "mixtral"
    olmoe = cfg["model_type"] == "olmoe"
    qwen2 = cfg["model_type"] == "qwen2_moe"
    E = cfg["num_local_experts"] if mixtral else cfg["num_experts"]
    I = cfg["moe_intermediate_size"] if cfg["model_type"] in ("qwen2_moe", "qwen3_moe") else cfg["intermediate_size"]
    qkv_bias = qwen2 and cfg.get("qkv_bias", True)  # Qwen2-MoE: q/k/v biases, o_proj none
    g.embedding("model.embed_tokens", cfg["vocab_size"], C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        g.norm(p + "input_layernorm", C)
        g.norm(p + "post_attention_layernorm", C)
        g.linear(p + "self_attn.q_proj", H * hd, C, QK_SCALE, qkv_bias)
        g.linear(p + "self_attn.k_proj", Hkv * hd, C, QK_SCALE, qkv_bias)
        g.linear(p + "self_attn.v_proj", Hkv * hd, C, 1.0, qkv_bias)
        g.linear(p + "self_attn.o_proj", C, H * hd, 1.0, False)
        if not mixtral and not qwen2:  # norms undo the projections' scale: the gains make the peaks
            g.norm(p + "self_attn.q_norm", H * hd if olmoe else hd)  # OLMoE: the whole projection
            g.norm(p + "self_attn.k_norm", Hkv * hd if olmoe else hd)
            g.w[p + "self_attn.q_norm.weight"] *= QK_SCALE
            g.w[p + "self_attn.k_norm.weight"] *= QK_SCALE
            if olmoe:  # heads of different sizes, so that a per-head norm would differ
                for name, n in (("q_proj", H), ("k_proj", Hkv)):
                    scale = np.repeat([HEAD_SIZES[h % len(HEAD_SIZES)] for h in range(n)], hd)
                    g.w[p + f"self_attn.{name}.weight"] *= scale[:, None]
        if i in moe_dense_layers(cfg):
            g.linear(p + "mlp.gate_proj", cfg["intermediate_size"], C, 1.0, False)
            g.linear(p + "mlp.up_proj", cfg["intermediate_size"], C, 1.0, False)
            g.linear(p + "mlp.down_proj", C, cfg["intermediate_size"], 1.0, False)
            continue
        block = p + ("block_sparse_moe." if mixtral else "mlp.")
        g.linear(block + "gate", E, C, ROUTER_SCALE, False)
        names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
        for e in range(E):
            x = f"{block}experts.{e}."
            g.linear(x + names[0], I, C, 2.0, False)
            g.linear(x + names[1], I, C, 2.0, False)
            g.linear(x + names[2], C, I, 2.0, False)
        if qwen2:  # the shared expert; its gate's sigmoid spread over (0, 1), not near 1
            S = cfg["shared_expert_intermediate_size"]
            g.linear(block + "shared_expert.gate_proj", S, C, 2.0, False)
            g.linear(block + "shared_expert.up_proj", S, C, 2.0, False)
            g.linear(block + "shared_expert.down_proj", C, S, 2.0, False)
            g.linear(block + "shared_expert_gate", 1, C, SHARED_GATE_SCALE, False)
    g.norm("model.norm", C)
    if head == "untied":
        g.linear("lm_head", cfg["vocab_size"], C, bias=False)
    return g.w


def moe_dense_layers(cfg):
    if cfg["model_type"] == "mixtral":
        return set()
    step = cfg.get("decoder_sparse_step", 1)
    return {i for i in range(cfg["num_hidden_layers"])
            if i in cfg.get("mlp_only_layers", []) or (i + 1) % step != 0}


def moe_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, routes=None, margins=None, without=()):
    """MixtralForCausalLM / Qwen2MoeForCausalLM / Qwen3MoeForCausalLM / OlmoeForCausalLM. routes:
    receives per layer (experts [T, k], weights [T, k]) or None for a dense layer; margins: each
    token's gap between the k-th and the next probability. without: "renormalise" (the other top-k
    rule), "w1/w3 order", "top-1", "shared expert gate" (Qwen2-MoE's shared expert ungated),
    "shared expert" (left out)."""
    T = len(ids)
    C, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", C // H)
    mixtral = cfg["model_type"] == "mixtral"
    olmoe = cfg["model_type"] == "olmoe"
    qwen2 = cfg["model_type"] == "qwen2_moe"
    eps = cfg.get("rms_norm_eps", 1e-5 if mixtral or olmoe else 1e-6)
    k = cfg["num_experts_per_tok"] - (1 if "top-1" in without else 0)
    renorm = True if mixtral else cfg.get("norm_topk_prob", False)
    if "renormalise" in without:
        renorm = not renorm
    inv = inverse_frequencies(hd, cfg.get("rope_theta", 1e6 if mixtral else 10000.0), cfg.get("rope_scaling"),
                              rope_len or T, cfg["max_position_embeddings"])
    window = (cfg.get("sliding_window") or 0) if mixtral else 0
    keep = causal_keep(T, window)
    emb = w[prefix + "embed_tokens.weight"]
    x = emb[torch.tensor(ids)]
    attentions = []
    dense = moe_dense_layers(cfg)
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        h = rms(w, p + "input_layernorm", x, eps)
        q, kk = lin(w, p + "self_attn.q_proj", h), lin(w, p + "self_attn.k_proj", h)
        if olmoe:  # OLMo 2's norms over the whole projection, before the split into heads
            q = whole_or_per_head(w, p + "self_attn.q_norm", q, H, hd, eps, "whole q/k norm" in without)
            kk = whole_or_per_head(w, p + "self_attn.k_norm", kk, Hkv, hd, eps, "whole q/k norm" in without)
        q = q.view(T, H, hd).transpose(0, 1)
        kk = kk.view(T, Hkv, hd).transpose(0, 1)
        v = lin(w, p + "self_attn.v_proj", h).view(T, Hkv, hd).transpose(0, 1)
        if not mixtral and not olmoe and not qwen2:  # Qwen3: per head, over head_dim
            q = rms(w, p + "self_attn.q_norm", q, eps)
            kk = rms(w, p + "self_attn.k_norm", kk, eps)
        q, kk = rotate(q, hd, inv), rotate(kk, hd, inv)
        a, vv = attend_heads(q, kk, v, H, Hkv, keep)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, vv, w[p + "self_attn.o_proj.weight"]))
        x = x + lin(w, p + "self_attn.o_proj", (a @ vv).transpose(0, 1).reshape(T, H * hd))
        h = rms(w, p + "post_attention_layernorm", x, eps)
        if i in dense:
            x = x + lin(w, p + "mlp.down_proj", silu(lin(w, p + "mlp.gate_proj", h)) * lin(w, p + "mlp.up_proj", h))
            if routes is not None:
                routes.append(None)
            continue
        block = p + ("block_sparse_moe." if mixtral else "mlp.")
        probs = torch.softmax(lin(w, block + "gate", h), -1)  # [T, E]
        top = torch.topk(probs, k + 1 if k + 1 <= probs.shape[1] else k, -1)
        if margins is not None and top.values.shape[1] > k:
            margins.append(float((top.values[:, k - 1] - top.values[:, k]).min()))
        weights, chosen = top.values[:, :k], top.indices[:, :k]
        if renorm:
            weights = weights / weights.sum(-1, keepdim=True)
        if routes is not None:
            routes.append((chosen, weights))
        names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
        if "w1/w3 order" in without:
            names = (names[1], names[0], names[2])
        out = torch.zeros_like(h)
        for t in range(T):
            for j in range(k):
                e = f"{block}experts.{int(chosen[t, j])}."
                y = lin(w, e + names[2], silu(lin(w, e + names[0], h[t])) * lin(w, e + names[1], h[t]))
                out[t] += weights[t, j] * y
        if qwen2 and "shared expert" not in without:  # every token, times sigmoid(its gate)
            s = p + "mlp.shared_expert."
            shared = lin(w, s + "down_proj", silu(lin(w, s + "gate_proj", h)) * lin(w, s + "up_proj", h))
            gate = torch.sigmoid(lin(w, p + "mlp.shared_expert_gate", h))  # [T, 1]
            out = out + (shared if "shared expert gate" in without else gate * shared)
        x = x + out
    x = rms(w, prefix + "norm", x, eps)
    logits = x @ w.get("lm_head.weight", emb).T
    return torch.stack(attentions), x, logits


def whole_or_per_head(w, name, t, heads, hd, eps, per_head):
    """RMSNorm of t [T, heads·hd] over the whole projection, or (the mistake) each head alone with
    its slice of the gain."""
    if not per_head:
        return rms(w, name, t, eps)
    T = t.shape[0]
    t = t.view(T, heads, hd)
    g = w[name + ".weight"].view(heads, hd)
    return (g * (t / torch.sqrt((t * t).mean(-1, keepdim=True) + eps))).reshape(T, heads * hd)


def moe_mistakes(cfg):
    mixtral = cfg["model_type"] == "mixtral"
    extra = [("q/k norm per head", cfg, dict(without=("whole q/k norm",)))] if cfg["model_type"] == "olmoe" else []
    renorm = mixtral or cfg.get("norm_topk_prob", False)
    if cfg["model_type"] == "qwen2_moe":
        extra += [("shared expert without its sigmoid gate", cfg, dict(without=("shared expert gate",))),
                  ("no shared expert", cfg, dict(without=("shared expert",)))]
    return extra + [("top-k weights " + ("not renormalised" if renorm else "renormalised (norm_topk_prob false)"),
             cfg, dict(without=("renormalise",))),
            ("gate and up experts swapped", cfg, dict(without=("w1/w3 order",))),
            ("top-1 routing", cfg, dict(without=("top-1",)))]


def check_routing(cli, root, case, failures, report):
    """The CLI's router_experts.npy / router_weights.npy [L, B, T, k] against the reference's choice
    for every real token of every item: the same experts in the same order, weights within 1e-5;
    padding -1 / 0; the fixture's k-th and (k+1)-th probabilities at least 1e-4 apart (no ties: a
    thousand times float32's error in them)."""
    name, _, cfg, _, _, prefix, _, _ = case
    d = os.path.join(root, name)
    dump = os.path.join(d, "dump")
    experts = np.load(os.path.join(dump, "router_experts.npy"))
    weights = np.load(os.path.join(dump, "router_weights.npy"))
    with open(os.path.join(dump, "tokens.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    w = STORED[name]
    L, k = cfg["num_hidden_layers"], cfg["num_experts_per_tok"]
    T = max(len(t) for t in tokens)
    if experts.shape != (L, len(tokens), T, k) or weights.shape != experts.shape:
        failures.append(f"{name}: router arrays {experts.shape} / {weights.shape}, want {(L, len(tokens), T, k)}")
        return
    worst, smallest_margin = 0.0, 1.0
    for b, item in enumerate(tokens):
        ids = [t["id"] for t in item]
        n = len(ids)
        routes, margins = [], []
        moe_forward(cfg, w, ids, prefix, rope_len=T, routes=routes, margins=margins)
        smallest_margin = min([smallest_margin] + margins)
        for l, route in enumerate(routes):
            if route is None:
                if (experts[l, b] != -1).any() or (weights[l, b] != 0).any():
                    failures.append(f"{name} item {b}: dense layer {l} has router choices")
                continue
            want_e, want_w = route[0].numpy(), route[1].numpy()
            if not np.array_equal(experts[l, b, :n].astype(np.int64), want_e):
                failures.append(f"{name} item {b} layer {l}: experts {experts[l, b, :n].tolist()}, want {want_e.tolist()}")
            worst = max(worst, float(np.abs(weights[l, b, :n] - want_w).max()))
            if (experts[l, b, n:] != -1).any() or (weights[l, b, n:] != 0).any():
                failures.append(f"{name} item {b} layer {l}: padding has router choices")
    if worst > 1e-5:
        failures.append(f"{name}: router weights differ by {worst:.3g}")
    if smallest_margin < 1e-4:
        failures.append(f"{name}: the fixture has a near-tie in top-k ({smallest_margin:.2e})")
    report.append(f"{name:32s} router weights max |diff| {worst:.2e}, smallest top-k margin {smallest_margin:.2e}")
    if name.startswith(("mixtral", "qwen2-moe")):
        # The Experts view from the CLI (issue 31): the same router, drawn; an SVG keeps its text
        # (Qwen2-MoE's: three of its four layers dense).
        out = os.path.join(d, "experts.svg")
        done = cli_run([cli, "export", "--model", d, "--text", "a b c d", "--view", "experts", "--out", out])
        svg = open(out, encoding="utf-8").read() if done.returncode == 0 and os.path.exists(out) else ""
        if "expert routing" not in svg or "layer 0" not in svg:
            failures.append(f"{name}: export --view experts: exit {done.returncode} {done.stderr.strip()}")
    if cfg["model_type"] == "qwen2_moe":
        # Dense layers read as sparse (decoder_sparse_step and mlp_only_layers ignored): the
        # checkpoint has no router for layer 0, and the CLI must say so rather than run.
        wrong = os.path.join(root, name + "-all-sparse")
        os.makedirs(wrong)
        for f in ("tokenizer.json", "model.safetensors"):
            os.link(os.path.join(d, f), os.path.join(wrong, f))
        with open(os.path.join(wrong, "config.json"), "w") as f:
            json.dump({k: v for k, v in cfg.items() if k not in ("decoder_sparse_step", "mlp_only_layers")}, f)
        done = cli_run([cli, "run", "--model", wrong, "--text", "the cat"])
        if done.returncode != 2 or "layers.0.mlp.gate.weight" not in done.stderr:
            failures.append(f"{name}: every layer read as sparse: exit {done.returncode} {done.stderr.strip()}")


OLMOE_SEED = 94  # every token's 2nd and 3rd router probabilities over 1e-3 apart
QWEN2_MOE_SEED = 121  # every token's 2nd and 3rd router probabilities over 5e-3 apart
SHARED_GATE_SCALE = 3.0  # Qwen2-MoE's shared_expert_gate: sigmoids spread over (0, 1), far from 1
STORED = {}  # case name -> the stored weights (float64 torch), for check_routing


# ----------------------------------------------------------------------------------------------
# The cases


def cases(V):
    """In decoder_reference.cases()'s form: (name, family, config, weights, format, prefix, has head,
    tokenizer file or None)."""
    out = []
    rng = np.random.default_rng(70)
    # Phi-3-medium-128k-like: grouped-query heads (4 of 2), LongRoPE past an original context of 8
    # (the first text has 13 tokens: the long factors), attention factor from 32 / 8, a window of 4.
    long_cfg = phi3_config(V, original_max_position_embeddings=8, sliding_window=4,
                           rope_scaling={"type": "longrope", "short_factor": list(rng.uniform(1, 2, 4)),
                                         "long_factor": list(rng.uniform(2, 12, 4))})
    out.append(("phi3-longrope-long-gqa-window", "phi3", long_cfg, lambda: phi3_weights(long_cfg, 71), "F32",
                "model.", True, None))
    # Phi-4-mini-like: 3/4 of each 16-wide head rotates (6 factors), the old name "su" within the
    # original context of 64 (the short factors), an explicit attention_factor, tied head, BF16.
    short_cfg = phi3_config(V, num_attention_heads=2, num_key_value_heads=1, partial_rotary_factor=0.75,
                            max_position_embeddings=256, original_max_position_embeddings=64,
                            tie_word_embeddings=True,
                            rope_scaling={"rope_type": "su", "short_factor": list(rng.uniform(2, 8, 6)),
                                          "long_factor": list(rng.uniform(0.5, 1, 6)), "attention_factor": 1.3})
    out.append(("phi3-su-short-partial-tied-bf16", "phi3", short_cfg,
                lambda: phi3_weights(short_cfg, 72, head="embed"), "BF16", "model.", True, None))
    # OLMo 2: q/k norms over the whole projection with heads of different sizes, post-norms.
    o2 = olmo2_config(V)
    out.append(("olmo2-post-norm-qk-whole", "olmo2", o2, lambda: olmo2_weights(o2, 73), "F32", "model.", True, None))
    # Mixtral: 4 experts, top 2 renormalised, grouped-query heads, a window of 5. The MoE seeds
    # keep every token's 2nd and 3rd router probabilities over 1e-3 apart (no near-ties).
    mx = {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "vocab_size": V, "hidden_size": 32,
          "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 1e6, "hidden_act": "silu",
          "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 5, "tie_word_embeddings": False,
          "torch_dtype": "float32"}
    out.append(("mixtral-top2-of-4-window", "mixtral", mx, lambda: moe_weights(mx, 101), "F32", "model.", True, None))
    # Qwen3-MoE: 4 experts, top 2 not renormalised (norm_topk_prob false), per-head q/k norms,
    # the middle of three layers dense (mlp_only_layers).
    qm = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "vocab_size": V, "hidden_size": 32,
          "intermediate_size": 40, "moe_intermediate_size": 24, "num_hidden_layers": 3, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
          "rope_theta": 10000.0, "hidden_act": "silu", "num_experts": 4, "num_experts_per_tok": 2,
          "norm_topk_prob": False, "mlp_only_layers": [1], "tie_word_embeddings": False, "torch_dtype": "float32"}
    out.append(("qwen3-moe-top2-dense-middle", "qwen3_moe", qm, lambda: moe_weights(qm, 108), "F32", "model.", True,
                None))
    # OLMoE: whole-projection q/k norms over heads of different sizes, 4 experts, top 2 renormalised
    # (norm_topk_prob true).
    oe = {"model_type": "olmoe", "architectures": ["OlmoeForCausalLM"], "vocab_size": V, "hidden_size": 32,
          "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
          "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
          "num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": True, "clip_qkv": None,
          "tie_word_embeddings": False, "torch_dtype": "float32"}
    out.append(("olmoe-whole-qk-norm-top2", "olmoe", oe, lambda: moe_weights(oe, OLMOE_SEED), "F32", "model.", True,
                None))
    # Qwen2-MoE: q/k/v biases, grouped-query heads, 4 experts, top 2 not renormalised
    # (norm_topk_prob false, the default), a shared expert gated by a sigmoid; decoder_sparse_step 2
    # makes layers 0 and 2 dense and mlp_only_layers layer 3 too: only layer 1 is sparse.
    q2 = {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "vocab_size": V, "hidden_size": 32,
          "intermediate_size": 40, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24,
          "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
          "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu", "num_experts": 4,
          "num_experts_per_tok": 2, "decoder_sparse_step": 2, "mlp_only_layers": [3], "use_sliding_window": False,
          "sliding_window": 4, "tie_word_embeddings": False, "torch_dtype": "float32"}
    out.append(("qwen2-moe-shared-expert-step2", "qwen2_moe", q2, lambda: moe_weights(q2, QWEN2_MOE_SEED), "F32",
                "model.", True, None))
    out += phi_stablelm.cases(V)
    out += gptj_opt_neo.cases(V)
    out += falcon.cases(V)
    return out


def mistakes(family, cfg):
    if family == "phi3":
        return phi3_mistakes(cfg)
    if family == "olmo2":
        return olmo2_mistakes(cfg)
    if family in MOE:
        return moe_mistakes(cfg)
    if family in phi_stablelm.MISTAKES:
        return phi_stablelm.MISTAKES[family](cfg)
    if family in gptj_opt_neo.MISTAKES:
        return gptj_opt_neo.MISTAKES[family](cfg)
    if family in falcon.MISTAKES:
        return falcon.MISTAKES[family](cfg)
    return ORIGINAL_MISTAKES(family, cfg)


ORIGINAL_MISTAKES = dr.mistakes
dr.FORWARD["phi3"] = phi3_forward
dr.FORWARD["olmo2"] = olmo2_forward
dr.FORWARD.update(phi_stablelm.FORWARD)
dr.FORWARD.update(gptj_opt_neo.FORWARD)
dr.FORWARD.update(falcon.FORWARD)
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe")
for _family in MOE:
    dr.FORWARD[_family] = moe_forward
dr.mistakes = mistakes  # check() looks both up at call time


# `generate` through the key/value cache (check_generate), one case per family: OLMo 2's
# whole-projection q/k norm under a step's single query, Mixtral's router on each step's token
# with a window of 5 shorter than the 9 tokens, and Phi-3 (below, with its own prompt).
dr.GENERATE_CASES = {"olmo2-post-norm-qk-whole", "mixtral-top2-of-4-window"}
dr.GENERATE_CASES |= gptj_opt_neo.GENERATE_CASES
dr.GENERATE_CASES |= falcon.GENERATE_CASES
# Phi-3 with LongRoPE past an original context of 8: a 6-token prompt, so that the steps at 6, 7
# and 8 tokens take the short factors and those at 9 to 11 the long ones, as transformers does
# with its cache (each call picks the factors by its own length, the cached keys keep theirs): the
# rows equal one forward that rotates each position as its step did (not one over the final
# text, which would rotate every position long), and the greedy ids the same reference's.
PHI3_GENERATE = ("phi3-longrope-long-gqa-window", "the cat sat on the mat")


def check_phi3_generate(cli, root, case, failures, report):
    name, _, cfg, make, _, prefix = case[:6]
    # The folder dr.check wrote (F32: the CLI reads each value rounded to float32).
    w = {k: torch.from_numpy(np.asarray(v, dtype=np.float32).astype(np.float64)) for k, v in make().items()}
    prompt = []  # check_generate's first forward is over the prompt alone: its length

    def forward(ids):
        if not prompt:
            prompt.append(len(ids))
        t0 = prompt[0]
        lens = [t0] * t0 + list(range(t0 + 1, len(ids) + 1))
        a, _, logits = phi3_forward(cfg, w, ids, prefix, rope_lens=lens)
        return a, torch.softmax(logits[-1], -1)

    check_generate(cli, os.path.join(root, name), PHI3_GENERATE[1], forward, name, failures, report)
    if prompt and not (prompt[0] <= cfg["original_max_position_embeddings"] < prompt[0] + 5):
        failures.append(f"{name}: the generate prompt has {prompt[0]} tokens: the steps do not cross "
                        f"original_max_position_embeddings")


def remember(name, make):
    """make, keeping the stored values (what the CLI reads) for check_routing."""
    def wrapped():
        w = make()
        # F32 safetensors: what the CLI reads is each value rounded to float32.
        STORED[name] = {k: torch.from_numpy(np.asarray(v, dtype=np.float32).astype(np.float64)) for k, v in w.items()}
        return w
    return wrapped


def main():
    cli = sys.argv[1]
    failures, report = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = sys.argv[2] if len(sys.argv) > 2 else tmp
        os.makedirs(root, exist_ok=True)
        V = write_tokenizer(os.path.join(tmp, "probe.json"), dr.WORDS)
        for case in cases(V):
            try:
                if case[1] in MOE:
                    make = case[3]
                    case = case[:3] + (remember(case[0], make),) + case[4:]
                dr.check(cli, root, case, V, failures, report)
                if case[0] == PHI3_GENERATE[0]:
                    check_phi3_generate(cli, root, case, failures, report)
                if case[1] in MOE:
                    check_routing(cli, root, case, failures, report)
            except Exception as e:  # one broken case must not hide the others
                failures.append(f"{case[0]}: {e}")
    for line in report:
        print(line)
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
