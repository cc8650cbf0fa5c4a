# SPDX-License-Identifier: GPL-3.0-or-later
"""Falcon (model_type falcon) for phi3_olmo2_moe_reference.py: tiny random checkpoints with Hugging
Face's tensor names, a float64 forward written from the published architecture (transformers'
FalconForCausalLM), the cases and the planted mistakes. The script runs them through
decoder_reference.check like its own families.

Falcon in float64, per layer (head_dim = hidden_size / H):
  the norms: ln_attn(x) for the attention and ln_mlp(x) for the MLP (new_decoder_architecture with
    num_ln_in_parallel_attn 2, its default); otherwise input_layernorm(x) for the attention (and
    for the MLP when parallel)
  qkv = query_key_value(.), split by its layout:
    new_decoder_architecture: viewed [T, Hkv, H/Hkv + 2, hd]: each key/value group holds its
      H/Hkv queries, then its key, then its value; query head g·H/Hkv + i reads group g's k and v
    multi_query: viewed [T, H + 2, hd]: H queries, one key, one value shared by every head
    otherwise: viewed [T, H, 3, hd]: per head its query, key and value
  rotary over the whole head (rotate_half, rope_theta) or, with alibi, no rotation and
    scores = (q kᵀ + alibi) / √hd, alibi = bf16(bf16(slope_h) · key position) (transformers'
    build_alibi_tensor computes it in bfloat16; Bloom's slopes; Bloom adds it unscaled)
  attn = dense(softmax(scores) v), biases on every linear layer when `bias`
  parallel (parallel_attn, always in the new architecture): x = x + attn + mlp(mlp input)
  sequential: x = x + attn; x = x + mlp(post_attention_layernorm(x))
  mlp = dense_4h_to_h(gelu(dense_h_to_4h(.))) (exact GELU), then ln_f and lm_head, tied to
  word_embeddings by default.

Cases: Falcon-7B's layout (multi-query, parallel, one norm, rotary, tied head, BF16); Falcon-40B's
(new architecture, 2 key/value groups of 2 queries, ln_attn and ln_mlp, rotary base 1e6, untied
head); Falcon 2's (new architecture with one norm, 4 groups, linear rope scaling, F16);
Falcon-RW's (per-head q|k|v, ALiBi with 16 heads, whose slopes 2^(-h/2) bfloat16 rounds,
sequential, biases; `generate` through the key/value cache).

Planted mistakes (the CLI's attention must be at least 1e-2 from each): q|k|v read as three
blocks [q | k | v] (new architecture, per head); ln_attn and ln_mlp swapped; the sequential
residual for the parallel one and the parallel for the sequential one; no ALiBi; ALiBi added
after the scaling as Bloom does; interleaved rotary pairs; rope_scaling ignored. Without the
bfloat16 rounding of the ALiBi tensor the RW case's attention moves by ~2e-3: not a planted mistake
(under 1e-2), but 20 times the tolerance, so the CLI must round as transformers does.
"""
import math

import numpy as np
import torch

from decoder_reference import (Init, attend, causal, gelu, inverse_frequencies, layer_norm, lin, rotate,
                               value_norms)

QK_SCALE = 3.0


def layout(cfg):
    if cfg.get("new_decoder_architecture", False):
        return "grouped"
    return "multi_query" if cfg.get("multi_query", True) else "per_head"


def kv_heads(cfg):
    H = cfg["num_attention_heads"]
    return {"grouped": cfg.get("num_kv_heads") or H, "multi_query": 1, "per_head": H}[layout(cfg)]


def two_norms(cfg):
    return cfg.get("new_decoder_architecture", False) and (cfg.get("num_ln_in_parallel_attn") or 2) == 2


def parallel(cfg):
    return cfg.get("new_decoder_architecture", False) or cfg.get("parallel_attn", True)


def falcon_weights(cfg, seed, prefix="transformer.", head="tied"):
    """head: tied (word_embeddings only) or untied (lm_head stored)."""
    g = Init(seed)
    C, V, H = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"]
    Hkv, hd = kv_heads(cfg), C // H
    F = cfg.get("ffn_hidden_size") or 4 * C
    b = cfg.get("bias", False)
    g.embedding(prefix + "word_embeddings", V, C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}h.{i}."
        if two_norms(cfg):
            g.norm(p + "ln_attn", C, bias=True)
            g.norm(p + "ln_mlp", C, bias=True)
        else:
            g.norm(p + "input_layernorm", C, bias=True)
            if not parallel(cfg):
                g.norm(p + "post_attention_layernorm", C, bias=True)
        # Each head's rows drawn apart, then laid out as the layout puts them.
        rows = lambda n, scale: [scale * g.rng.normal(0, 1 / math.sqrt(C), (hd, C)) for _ in range(n)]
        q, k, v = rows(H, QK_SCALE), rows(Hkv, QK_SCALE), rows(Hkv, 1.0)
        if layout(cfg) == "per_head":
            order = [t for h in range(H) for t in (q[h], k[h], v[h])]
        else:  # grouped; multi-query is one group of H queries
            G = H // Hkv
            order = [t for j in range(Hkv) for t in q[j * G:(j + 1) * G] + [k[j], v[j]]]
        g.w[p + "self_attention.query_key_value.weight"] = np.concatenate(order)
        if b:
            g.w[p + "self_attention.query_key_value.bias"] = g.rng.normal(0, 0.2, (H + 2 * Hkv) * hd)
        g.linear(p + "self_attention.dense", C, C, 1.0, b)
        g.linear(p + "mlp.dense_h_to_4h", F, C, 1.0, b)
        g.linear(p + "mlp.dense_4h_to_h", C, F, 1.0, b)
    g.norm(prefix + "ln_f", C, bias=True)
    if head == "untied":
        g.linear("lm_head", V, C, bias=False)
    return g.w


def falcon_alibi(H, T, bf16=True):
    """build_alibi_tensor for T real keys: [H, T] float64, slope_h · j. transformers computes the
    slopes in float32 and the product in bfloat16."""
    closest = 2 ** math.floor(math.log2(H))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + closest, dtype=torch.int32))
    if closest != H:
        extra = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest) - 3))), dtype=torch.float32)
        n = min(closest, H - closest)
        slopes = torch.cat([slopes, torch.pow(extra, torch.arange(1, 1 + 2 * n, 2, dtype=torch.int32))])
    positions = torch.arange(T)
    if bf16:
        return (slopes.bfloat16()[:, None] * positions[None, :]).double()
    return slopes.double()[:, None] * positions[None, :].double()


def falcon_forward(cfg, w, ids, prefix="transformer.", rope_len=None, norms=None, split=None,
                   swap_norms=False, sequential=None, alibi="falcon", convention="half"):
    """FalconForCausalLM. split "blocks" (q | k | v contiguous), swap_norms (ln_attn and ln_mlp
    swapped), sequential (the other residual form), alibi (None: none; "bloom": added unscaled;
    "float": without transformers' bfloat16 rounding) and convention give plausible mistakes."""
    T = len(ids)
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv, hd = kv_heads(cfg), C // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    is_parallel = parallel(cfg) if sequential is None else not sequential
    use_alibi = cfg.get("alibi", False) and alibi is not None
    inv = inverse_frequencies(hd, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"), rope_len or T,
                              cfg.get("max_position_embeddings", 2048))
    bias = None
    if use_alibi:
        a = falcon_alibi(H, T, bf16=alibi != "float")[:, None, :]  # [H, 1, Tk]
        bias = a if alibi == "bloom" else a / math.sqrt(hd)
    x = w[prefix + "word_embeddings.weight"][torch.tensor(ids)]
    attentions = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}h.{i}."
        if two_norms(cfg):
            names = ("ln_mlp", "ln_attn") if swap_norms else ("ln_attn", "ln_mlp")
            h, m = (layer_norm(w, p + n, x, eps) for n in names)
        else:
            h = m = layer_norm(w, p + "input_layernorm", x, eps)
        qkv = lin(w, p + "self_attention.query_key_value", h)
        kind = split or layout(cfg)
        if kind == "grouped":
            g = qkv.view(T, Hkv, H // Hkv + 2, hd)
            q = g[:, :, :-2].reshape(T, H, hd).transpose(0, 1)
            k, v = g[:, :, -2].transpose(0, 1), g[:, :, -1].transpose(0, 1)  # [Hkv, T, hd]
        elif kind == "multi_query":
            g = qkv.view(T, H + 2, hd)
            q, k, v = g[:, :H].transpose(0, 1), g[:, H:H + 1].transpose(0, 1), g[:, H + 1:].transpose(0, 1)
        elif kind == "per_head":
            g = qkv.view(T, H, 3, hd)
            q, k, v = (g[:, :, j].transpose(0, 1) for j in range(3))
        else:  # "blocks"
            q = qkv[:, :H * hd].reshape(T, H, hd).transpose(0, 1)
            k = qkv[:, H * hd:(H + Hkv) * hd].reshape(T, Hkv, hd).transpose(0, 1)
            v = qkv[:, (H + Hkv) * hd:].reshape(T, Hkv, hd).transpose(0, 1)
        if not cfg.get("alibi", False):
            q, k = rotate(q, hd, inv, convention), rotate(k, hd, inv, convention)
        group = [j * Hkv // H for j in range(H)]  # query head j reads key/value head j // (H / Hkv)
        k, v = k[group], v[group]
        att, o = attend(q, k, v, causal(T), bias)
        attentions.append(att)
        if norms is not None:
            norms.append(value_norms(att, v, w[p + "self_attention.dense.weight"]))
        attn = lin(w, p + "self_attention.dense", o.transpose(0, 1).reshape(T, C))
        mlp = lambda t: lin(w, p + "mlp.dense_4h_to_h", gelu(lin(w, p + "mlp.dense_h_to_4h", t)))
        # A mistaken residual form reads the norm the checkpoint has.
        post = p + "post_attention_layernorm"
        after = post if post + ".weight" in w else p + "input_layernorm"
        if is_parallel:
            x = x + attn + (mlp(m) if parallel(cfg) else mlp(layer_norm(w, after, x, eps)))
        else:
            x = x + attn
            x = x + mlp(layer_norm(w, after if not two_norms(cfg) else p + "ln_mlp", x, eps))
    x = layer_norm(w, prefix + "ln_f", x, eps)
    head = w.get("lm_head.weight", w[prefix + "word_embeddings.weight"] if cfg.get("tie_word_embeddings", True)
                 else None)
    return torch.stack(attentions), x, None if head is None else x @ head.T


def falcon_mistakes(cfg):
    out = []
    if layout(cfg) != "multi_query":  # multi-query's [q … q k v] is the blocks layout itself
        out.append(("q|k|v read as three blocks", cfg, dict(split="blocks")))
    if two_norms(cfg):
        out.append(("ln_attn and ln_mlp swapped", cfg, dict(swap_norms=True)))
    label = "the sequential residual" if parallel(cfg) else "the parallel residual"
    out.append((label, cfg, dict(sequential=parallel(cfg))))
    if cfg.get("alibi", False):
        out.append(("no ALiBi", cfg, dict(alibi=None)))
        out.append(("ALiBi not scaled by 1/sqrt(head_dim) (Bloom's)", cfg, dict(alibi="bloom")))
    else:
        out.append(("interleaved rotary pairs", cfg, dict(convention="interleaved")))
    if cfg.get("rope_scaling"):
        out.append(("rope_scaling ignored", dict(cfg, rope_scaling=None), {}))
    return out


def cases(V):
    """(name, family, config, weights, format, prefix, has_head, tokenizer) as decoder_reference's."""
    out = []
    base = {"model_type": "falcon", "architectures": ["FalconForCausalLM"], "vocab_size": V, "hidden_size": 32,
            "num_hidden_layers": 2, "num_attention_heads": 4, "layer_norm_epsilon": 1e-5, "bias": False,
            "alibi": False, "max_position_embeddings": 64}
    # Falcon-7B: multi-query, parallel attention and MLP from one input_layernorm, rotary, tied head.
    f7 = dict(base, multi_query=True, parallel_attn=True, new_decoder_architecture=False)
    out.append(("falcon-7b-multi-query-parallel", "falcon", f7, lambda: falcon_weights(f7, 80), "BF16",
                "transformer.", True, None))
    # Falcon-40B/180B: new decoder architecture, 2 key/value groups, ln_attn and ln_mlp, untied head.
    f40 = dict(base, new_decoder_architecture=True, num_kv_heads=2, parallel_attn=True, rope_theta=1e6,
               ffn_hidden_size=48, tie_word_embeddings=False)
    out.append(("falcon-40b-grouped-two-norms", "falcon", f40, lambda: falcon_weights(f40, 81, head="untied"),
                "F32", "transformer.", True, None))
    # Falcon 2 (11B): new architecture with one input_layernorm read by both sublayers, 4 groups of
    # 2 queries, linear rope scaling, F16.
    f2 = dict(base, new_decoder_architecture=True, num_kv_heads=4, num_attention_heads=8,
              num_ln_in_parallel_attn=1, rope_scaling={"type": "linear", "factor": 2.0})
    out.append(("falcon2-grouped-one-norm-f16", "falcon", f2, lambda: falcon_weights(f2, 83), "F16",
                "transformer.", True, None))
    # Falcon-RW: ALiBi with 16 heads of 4 (slopes 2^(-h/2): bfloat16 rounds the odd ones),
    # per-head q|k|v, sequential, biases on every linear layer.
    rw = dict(base, hidden_size=64, num_attention_heads=16, multi_query=False, parallel_attn=False,
              new_decoder_architecture=False, alibi=True, bias=True)
    out.append(("falcon-rw-alibi-sequential", "falcon", rw, lambda: falcon_weights(rw, 82), "F32", "transformer.",
                True, None))
    return out


FORWARD = {"falcon": falcon_forward}
MISTAKES = {"falcon": falcon_mistakes}
# generate through the key/value cache: ALiBi over the cached keys, the grouped layout's repeat.
GENERATE_CASES = {"falcon-rw-alibi-sequential"}
