#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` on today's open decoders against plain PyTorch.

For llama, mistral, qwen2, qwen3, gemma, gpt_neox and bloom it writes tiny random checkpoints in the
Hugging Face layout (config.json, a byte-level BPE tokenizer.json, weights written with json +
struct + numpy/torch: no attnscope code, no transformers package), runs the CLI on a padded batch
with --dump, and compares every layer's attention [L, B, H, T, T] and the final hidden states
[B, T, C] with a float64 forward pass written here from the published architectures, to 1e-4 (times
max(1, |value|): tolerance.py); padding must be exactly 0; the top-5 next tokens (`--json`) must
match the reference softmax (probabilities to 1e-5), and a checkpoint without an LM head must give
none. Query and key weights are scaled up so that attention is peaked (asserted), so a wrong rotary
convention, head grouping, window or bias cannot hide in uniform rows. Cases: F32, BF16 and F16
safetensors, sharded safetensors, pytorch_model.bin; q/k/v biases (qwen2); grouped-query heads;
tied embeddings stored as embed_tokens only or lm_head only, untied, no head at all; every
rope_scaling type (linear, dynamic past the trained context, llama3, the "type" and "rope_type"
spellings); partial rotary; parallel and sequential residual; ALiBi with 6 heads; a sliding window
smaller than T (mistral, and qwen2's windowed upper layers); qwen3's per-head q/k norms with
head_dim != hidden/heads; gemma's (1 + w) RMSNorm, embeddings times sqrt(hidden_size), tanh GeGLU
(from the legacy "hidden_act": "gelu" too), head_dim != hidden/heads, one key/value head and the
tied head by default.

Usage: decoder_reference.py ATTNSCOPE_CLI [KEEP_DIR]
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing; under CI=true
that fails instead, exit 1: see cannot_run.py).
"""
import json
import re
import math
import os
import shutil
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    from cannot_run import cannot_run
    cannot_run(f"/usr/bin/python3 has no {e.name}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_common import (add_merges, check_generate, peakedness, run_cli, write_tokenizer,  # noqa: E402
                            write_weights)
from cli_batch import cli_run  # noqa: E402
from tolerance import scaled_error  # noqa: E402

TOL = 1e-4  # attention and hidden states, as scaled_error (tolerance.py): absolute up to 1, relative above
P_TOL = 1e-5
QK_SCALE = 3.0  # query and key weights: peaked attention
GEMMA_SHARED = 3.0  # Gemma's embeddings: feature 0 of every token (see llama_weights)
WORDS = ("the", " the", " cat", " sat", " on", " mat", " and", " dog")
TEXTS = ["the cat sat on the mat and the dog sat on the cat", "the dog sat", "a"]
# `generate` through the key/value cache, one case per way a step differs from a full run: grouped
# heads and a window shorter than the text (mistral), windows on some layers only (qwen2), Gemma's
# single key/value head, partial rotary (neox), ALiBi (bloom).
# run --logit-lens against the reference's final norm and head after every layer: an untied head,
# and Gemma's scaled embeddings and 1 + w norm (its untied case: with a tied head the scaled
# embedding makes every layer predict its own token at p ≈ 1, with or without the final norm).
LENS_CASES = {"llama-f32-gqa", "gemma-gqa-f16-untied"}
GENERATE_CASES = {"mistral-window", "qwen2-window-upper", "gemma-2b-mqa", "neox-parallel", "bloom-6-heads"}
HERE = os.path.dirname(os.path.abspath(__file__))
REAL_TOKENIZERS = os.path.join(HERE, "..", "..", "..", "shared", "data", "tokenizers")  # optional


# ----------------------------------------------------------------------------------------------
# Random weights with Hugging Face's names (float64 numpy)


class Init:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.w = {}

    def linear(self, name, n_out, n_in, scale=1.0, bias=True):
        self.w[name + ".weight"] = scale * self.rng.normal(0, 1 / math.sqrt(n_in), (n_out, n_in))
        if bias:
            self.w[name + ".bias"] = self.rng.normal(0, 0.2, n_out)

    def norm(self, name, n, bias=False):
        self.w[name + ".weight"] = 1 + self.rng.normal(0, 0.1, n)
        if bias:
            self.w[name + ".bias"] = self.rng.normal(0, 0.1, n)

    def embedding(self, name, n, dim):
        self.w[name + ".weight"] = self.rng.normal(0, 1.0, (n, dim))


def llama_weights(cfg, seed, prefix="model.", head="untied"):
    """head: untied (lm_head), embed (tied, embed_tokens only), lm_head (tied, lm_head only),
    both (tied, both stored), none (a LlamaModel)."""
    g = Init(seed)
    C, H, Hkv, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = cfg.get("head_dim", C // H)
    qwen2 = cfg["model_type"] == "qwen2"
    qkv_bias = qwen2 or cfg.get("attention_bias", False)
    o_bias = not qwen2 and cfg.get("attention_bias", False)
    mlp_bias = cfg.get("mlp_bias", False)
    g.embedding(prefix + "embed_tokens", cfg["vocab_size"], C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        g.norm(p + "input_layernorm", C)
        g.linear(p + "self_attn.q_proj", H * hd, C, QK_SCALE, qkv_bias)
        g.linear(p + "self_attn.k_proj", Hkv * hd, C, QK_SCALE, qkv_bias)
        g.linear(p + "self_attn.v_proj", Hkv * hd, C, 1.0, qkv_bias)
        g.linear(p + "self_attn.o_proj", C, H * hd, 1.0, o_bias)
        if cfg["model_type"] == "qwen3":  # q and k are normalised: their gains make the peaks
            g.norm(p + "self_attn.q_norm", hd)
            g.norm(p + "self_attn.k_norm", hd)
            g.w[p + "self_attn.q_norm.weight"] *= QK_SCALE
            g.w[p + "self_attn.k_norm.weight"] *= QK_SCALE
        g.norm(p + "post_attention_layernorm", C)
        g.linear(p + "mlp.gate_proj", I, C, 1.0, mlp_bias)
        g.linear(p + "mlp.up_proj", I, C, 1.0, mlp_bias)
        g.linear(p + "mlp.down_proj", C, I, 1.0, mlp_bias)
    g.norm(prefix + "norm", C)
    if cfg["model_type"] == "gemma":
        for name in g.w:
            if name.endswith("norm.weight"):  # gains stored as offsets from 1, as Gemma's are
                g.w[name] -= 1
            # Random gate inputs land where the two GELUs differ by ~1e-4 of their value: a wrong
            # activation would hide in the tolerance. One embedding feature shared by every token
            # steers every gate input to about -3, where the tanh form is ~10% off, and a larger
            # up_proj makes those small values count.
            if name.endswith("mlp.gate_proj.weight"):
                g.w[name] *= 0.3
                g.w[name][:, 0] = -3.0 * math.sqrt(1 + GEMMA_SHARED ** 2 / C) / GEMMA_SHARED
            if name.endswith("mlp.up_proj.weight"):
                g.w[name] *= 60
        g.w[prefix + "embed_tokens.weight"][:, 0] = GEMMA_SHARED
    if head == "untied":
        g.linear("lm_head", cfg["vocab_size"], C, bias=False)
    elif head in ("lm_head", "both"):
        g.w["lm_head.weight"] = g.w[prefix + "embed_tokens.weight"].copy()
        if head == "lm_head":
            del g.w[prefix + "embed_tokens.weight"]
    return g.w


def neox_weights(cfg, seed, prefix="gpt_neox.", head=True):
    g = Init(seed)
    C, I = cfg["hidden_size"], cfg["intermediate_size"]
    g.embedding(prefix + "embed_in", cfg["vocab_size"], C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        g.norm(p + "input_layernorm", C, bias=True)
        g.linear(p + "attention.query_key_value", 3 * C, C)
        # Peaked attention: scale each head's q and k rows of the fused per-head layout.
        H, hd = cfg["num_attention_heads"], C // cfg["num_attention_heads"]
        w = g.w[p + "attention.query_key_value.weight"].reshape(H, 3, hd, C)
        w[:, :2] *= QK_SCALE
        g.linear(p + "attention.dense", C, C)
        g.norm(p + "post_attention_layernorm", C, bias=True)
        g.linear(p + "mlp.dense_h_to_4h", I, C)
        g.linear(p + "mlp.dense_4h_to_h", C, I)
        g.w[p + "attention.bias"] = np.tril(np.ones((1, 1, 64, 64)))  # a mask buffer old files carry
    g.norm(prefix + "final_layer_norm", C, bias=True)
    if head:
        g.linear("embed_out", cfg["vocab_size"], C, bias=False)
    return g.w


def bloom_weights(cfg, seed, prefix="transformer.", store_head=False):
    g = Init(seed)
    C, H = cfg["hidden_size"], cfg["n_head"]
    hd = C // H
    g.embedding(prefix + "word_embeddings", cfg["vocab_size"], C)
    g.norm(prefix + "word_embeddings_layernorm", C, bias=True)
    for i in range(cfg["n_layer"]):
        p = f"{prefix}h.{i}."
        g.norm(p + "input_layernorm", C, bias=True)
        g.linear(p + "self_attention.query_key_value", 3 * C, C)
        w = g.w[p + "self_attention.query_key_value.weight"].reshape(H, 3, hd, C)
        w[:, :2] *= QK_SCALE
        g.linear(p + "self_attention.dense", C, C)
        g.norm(p + "post_attention_layernorm", C, bias=True)
        g.linear(p + "mlp.dense_h_to_4h", 4 * C, C)
        g.linear(p + "mlp.dense_4h_to_h", C, 4 * C)
    g.norm(prefix + "ln_f", C, bias=True)
    if store_head:
        g.w["lm_head.weight"] = g.w[prefix + "word_embeddings.weight"].copy()
    return g.w


# ----------------------------------------------------------------------------------------------
# The published architectures in float64


def lin(w, p, x):
    y = x @ w[p + ".weight"].T
    return y + w[p + ".bias"] if p + ".bias" in w else y


def rms(w, p, x, eps, offset=0.0):
    """offset 1: Gemma's gain (1 + weight)."""
    return (offset + w[p + ".weight"]) * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps))


def layer_norm(w, p, x, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w[p + ".weight"] + w[p + ".bias"]


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1 + torch.exp(-x))


def inverse_frequencies(dim, theta, scaling, T, max_positions):
    """RoFormer's frequencies theta^(-2i/dim) with transformers' rope_scaling rules."""
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "linear":  # positions / factor
        inv = inv / scaling["factor"]
    elif kind == "dynamic":  # NTK-aware: a larger base once T exceeds the trained context
        if T > max_positions:
            f = scaling["factor"]
            base = theta * ((f * T / max_positions) - (f - 1)) ** (dim / (dim - 2))
            inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    elif kind == "llama3":
        f, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for v in inv.tolist():
            wavelen = 2 * math.pi / v
            if wavelen < old / hi:
                out.append(v)
            elif wavelen > old / lo:
                out.append(v / f)
            else:
                s = (old / wavelen - lo) / (hi - lo)
                out.append((1 - s) * v / f + s * v)
        inv = torch.tensor(out, dtype=torch.float64)
    return inv


def rotate(x, dim, inv, convention="half"):
    """Rotates the first `dim` features of x [..., T, hd] by position · inv. "half": pairs
    (i, i + dim/2), Hugging Face's rotate_half; "interleaved": pairs (2i, 2i+1), the original
    Meta/GPT-J convention (the wrong one for these checkpoints)."""
    T = x.shape[-2]
    ang = torch.arange(T, dtype=inv.dtype)[:, None] * inv[None, :]  # [T, dim/2]
    cos, sin = torch.cos(ang), torch.sin(ang)
    r, rest = x[..., :dim], x[..., dim:]
    if convention == "half":
        a, b = r[..., : dim // 2], r[..., dim // 2:]
        out = torch.cat([a * cos - b * sin, b * cos + a * sin], -1)
    else:
        a, b = r[..., 0::2], r[..., 1::2]
        out = torch.stack([a * cos - b * sin, b * cos + a * sin], -1).reshape(r.shape)
    return torch.cat([out, rest], -1)


def attend(q, k, v, mask, bias=None, hd=None):
    """q [H, T, hd], k/v [H, T, hd] (already one per query head), mask [T, T] bool (True: keep);
    scores scaled by 1/sqrt(hd), q's last size unless given."""
    s = q @ k.transpose(-2, -1) / math.sqrt(hd or q.shape[-1])
    if bias is not None:
        s = s + bias
    a = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
    return a, a @ v


def value_norms(a, v, wo):
    """Kobayashi et al.'s ‖α_ij f_h(x_j)‖: a [H, T, T], v [H, T, hd] (one per query head), wo the
    output projection's weight [C, H·hd] (y = z woᵀ). Returns [H, T, T]."""
    H, T, hd = v.shape
    f = torch.stack([v[h] @ wo[:, h * hd:(h + 1) * hd].T for h in range(H)])  # [H, T, C]
    return a * f.norm(dim=-1)[:, None, :]


def causal(T, window=0):
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    keep = j <= i
    if window:
        keep &= i - j < window  # Mistral: the `window` most recent keys, the query's own included
    return keep


def llama_forward(cfg, w, ids, prefix="model.", convention="half", rope_len=None, kv_modulo=False,
                  norms=None, gemma_without=(), lens=None, lens_norm=True):
    """LlamaForCausalLM (and Mistral, Qwen2, Qwen3, Gemma): returns attention [L, H, T, T], final
    hidden [T, C], logits [T, V] or None. rope_len: the sequence length dynamic scaling sees (in a
    padded batch transformers takes the longest item's). convention, kv_modulo (query head h reads
    kv head h % Hkv) and gemma_without (Gemma quirks left out: "1 + w", "sqrt(hidden)", "tanh gelu",
    "head_dim") give plausible mistakes. lens: a list that receives the logit lens, each layer's
    next-token probabilities [T, V] (the final norm and head applied after that layer; without the
    norm when lens_norm is False: a plausible mistake)."""
    T = len(ids)
    C, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    gemma = cfg["model_type"] == "gemma"
    quirk = lambda name: gemma and name not in gemma_without
    hd = cfg.get("head_dim", 256 if gemma else C // H)  # GemmaConfig's default is 256
    hd_seen = hd if not gemma or quirk("head_dim") else C // H  # the mistake: rotary and scale
    eps = cfg["rms_norm_eps"]
    offset = 1.0 if quirk("1 + w") else 0.0
    act = gelu_tanh if quirk("tanh gelu") else gelu if gemma else silu
    rot = int(hd_seen * cfg.get("partial_rotary_factor", 1.0))
    inv = inverse_frequencies(rot, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"),
                              rope_len or T, cfg["max_position_embeddings"])
    emb = w.get(prefix + "embed_tokens.weight", w.get("lm_head.weight"))
    x = emb[torch.tensor(ids)]
    if quirk("sqrt(hidden)"):  # transformers rounds the normalizer to the hidden dtype (float32)
        x = x * float(np.float32(math.sqrt(C)))
    attentions = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        window = 0
        if cfg["model_type"] == "mistral" and cfg.get("sliding_window"):
            window = cfg["sliding_window"]
        if cfg["model_type"] in ("qwen2", "qwen3") and cfg.get("use_sliding_window") and i >= cfg["max_window_layers"]:
            window = cfg["sliding_window"]
        h = rms(w, p + "input_layernorm", x, eps, offset)
        q = lin(w, p + "self_attn.q_proj", h).view(T, H, hd).transpose(0, 1)
        k = lin(w, p + "self_attn.k_proj", h).view(T, Hkv, hd).transpose(0, 1)
        v = lin(w, p + "self_attn.v_proj", h).view(T, Hkv, hd).transpose(0, 1)
        if cfg["model_type"] == "qwen3":
            q = rms(w, p + "self_attn.q_norm", q, eps)
            k = rms(w, p + "self_attn.k_norm", k, eps)
        q, k = rotate(q, rot, inv, convention), rotate(k, rot, inv, convention)
        group = [hq % Hkv if kv_modulo else hq * Hkv // H for hq in range(H)]  # query head -> kv head
        a, o = attend(q, k[group], v[group], causal(T, window), hd=hd_seen)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, v[group], w[p + "self_attn.o_proj.weight"]))
        x = x + lin(w, p + "self_attn.o_proj", o.transpose(0, 1).reshape(T, H * hd))
        h = rms(w, p + "post_attention_layernorm", x, eps, offset)
        x = x + lin(w, p + "mlp.down_proj", act(lin(w, p + "mlp.gate_proj", h)) * lin(w, p + "mlp.up_proj", h))
        if lens is not None:
            head = w.get("lm_head.weight", emb if cfg.get("tie_word_embeddings", gemma) else None)
            normed = rms(w, prefix + "norm", x, eps, offset) if lens_norm else x
            lens.append(torch.softmax(normed @ head.T, -1))
    x = rms(w, prefix + "norm", x, eps, offset)
    head = w.get("lm_head.weight", emb if cfg.get("tie_word_embeddings", gemma) else None)
    return torch.stack(attentions), x, None if head is None else x @ head.T


def neox_forward(cfg, w, ids, prefix="gpt_neox.", rope_len=None, norms=None):
    """GPTNeoXForCausalLM."""
    T = len(ids)
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd, eps = C // H, cfg["layer_norm_eps"]
    rot = int(hd * cfg["rotary_pct"])
    inv = inverse_frequencies(rot, cfg["rotary_emb_base"], cfg.get("rope_scaling"), rope_len or T,
                              cfg["max_position_embeddings"])
    x = w[prefix + "embed_in.weight"][torch.tensor(ids)]
    attentions = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        qkv = lin(w, p + "attention.query_key_value", layer_norm(w, p + "input_layernorm", x, eps))
        qkv = qkv.view(T, H, 3 * hd).transpose(0, 1)  # per head [q k v]
        q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
        q, k = rotate(q, rot, inv), rotate(k, rot, inv)
        a, o = attend(q, k, v, causal(T))
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, v, w[p + "attention.dense.weight"]))
        attn = lin(w, p + "attention.dense", o.transpose(0, 1).reshape(T, C))
        mlp = lambda t: lin(w, p + "mlp.dense_4h_to_h", gelu(lin(w, p + "mlp.dense_h_to_4h", t)))
        if cfg["use_parallel_residual"]:
            x = x + attn + mlp(layer_norm(w, p + "post_attention_layernorm", x, eps))
        else:
            x = x + attn
            x = x + mlp(layer_norm(w, p + "post_attention_layernorm", x, eps))
    x = layer_norm(w, prefix + "final_layer_norm", x, eps)
    head = w.get("embed_out.weight")
    return torch.stack(attentions), x, None if head is None else x @ head.T


def alibi_slopes(n):
    """Press et al.'s geometric slopes; for a head count that is not a power of two, those of the
    nearest lower power of two, then every other slope of the next one (as Bloom computes them)."""
    def power_of_two(m):
        start = 2 ** (-(2 ** -(math.log2(m) - 3)))
        return [start * start ** i for i in range(m)]
    closest = 2 ** math.floor(math.log2(n))
    if closest == n:
        return power_of_two(n)
    return power_of_two(closest) + power_of_two(2 * closest)[0::2][: n - closest]


def bloom_forward(cfg, w, ids, prefix="transformer.", rope_len=None, slopes=None, norms=None):
    """BloomForCausalLM."""
    T = len(ids)
    C, H = cfg["hidden_size"], cfg["n_head"]
    hd, eps = C // H, cfg["layer_norm_epsilon"]
    post = cfg.get("apply_residual_connection_post_layernorm", False)
    x = layer_norm(w, prefix + "word_embeddings_layernorm", w[prefix + "word_embeddings.weight"][torch.tensor(ids)], eps)
    bias = torch.tensor(slopes or alibi_slopes(H), dtype=torch.float64)[:, None, None] * torch.arange(T, dtype=torch.float64)[None, None, :]
    attentions = []
    for i in range(cfg["n_layer"]):
        p = f"{prefix}h.{i}."
        h = layer_norm(w, p + "input_layernorm", x, eps)
        qkv = lin(w, p + "self_attention.query_key_value", h).view(T, H, 3, hd)
        q, k, v = (qkv[:, :, j].transpose(0, 1) for j in range(3))
        a, o = attend(q, k, v, causal(T), bias)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, v, w[p + "self_attention.dense.weight"]))
        x = (h if post else x) + lin(w, p + "self_attention.dense", o.transpose(0, 1).reshape(T, C))
        h = layer_norm(w, p + "post_attention_layernorm", x, eps)
        x = (h if post else x) + lin(w, p + "mlp.dense_4h_to_h", gelu_tanh(lin(w, p + "mlp.dense_h_to_4h", h)))
    x = layer_norm(w, prefix + "ln_f", x, eps)
    return torch.stack(attentions), x, x @ w[prefix + "word_embeddings.weight"].T


# ----------------------------------------------------------------------------------------------
# Gemma's tokenizer.json: a SentencePiece BPE with byte fallback like Llama 2's, but no "▁" put
# before the text (no Prepend normalizer) and no Strip in the decoder


def write_gemma_tokenizer(path, words=WORDS):
    """<pad> <eos> <bos> <unk>, the 256 byte pieces <0x00>.., the words' characters and merges.
    Returns the vocabulary size."""
    pieces = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = []
    for word in words:
        word = word.replace(" ", "\u2581")
        for ch in word:
            vocab.setdefault(ch, len(vocab))
        add_merges(word, vocab, merges)
    for ch in "\u2581a":
        vocab.setdefault(ch, len(vocab))
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(pieces[:4])]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
           "pre_tokenizer": None,
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}}],
                              "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                                       {"Sequence": {"id": "A", "type_id": 0}},
                                       {"SpecialToken": {"id": "<bos>", "type_id": 1}},
                                       {"Sequence": {"id": "B", "type_id": 1}}],
                              "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}},
           "decoder": {"type": "Sequence", "decoders": [
               {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
               {"type": "ByteFallback"}, {"type": "Fuse"}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                     "vocab": vocab, "merges": merges}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    return len(vocab)


def check_gemma_tokenizer(cli, path, failures):
    """<bos> first, no "▁" before the first word, merges across the whole text (no pre-tokenizer),
    and a character outside the vocabulary as its UTF-8 bytes."""
    with open(path, encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    js = path + ".ids.json"
    r = cli_run([cli, "tokenize", "--model", path, "--text", "the cat \u00e9", "--json", js])
    want = [2, vocab["the"], vocab["\u2581cat"], vocab["\u2581"], vocab["<0xC3>"], vocab["<0xA9>"]]
    got = json.load(open(js))["ids"] if r.returncode == 0 else r.stderr.strip()
    if got != want:
        failures.append(f"gemma tokenizer: 'the cat \u00e9' gave {got}, want {want}")


# ----------------------------------------------------------------------------------------------
# The cases


def llama_config(model_type, V, **extra):
    cfg = {"model_type": model_type, "architectures": ["LlamaForCausalLM"], "vocab_size": V, "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": False, "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


def cases(V, gemma_tokenizer=None):
    """(name, family, config, weights builder, weight format, prefix, has head, tokenizer file or
    None for the test's own). gemma_tokenizer: (path, vocabulary size) of write_gemma_tokenizer's."""
    out = []

    def llama(name, model_type, fmt="F32", head="untied", prefix="model.", seed=1, tokenizer=None, vocab=V,
              **extra):
        cfg = llama_config(model_type, vocab, tie_word_embeddings=head in ("embed", "lm_head", "both"), **extra)
        out.append((name, "llama", cfg, lambda: llama_weights(cfg, seed, prefix, head), fmt, prefix, head != "none",
                    tokenizer))

    llama("llama-f32-gqa", "llama")
    llama("llama-bf16", "llama", fmt="BF16", seed=2)
    llama("llama-f16-mha", "llama", fmt="F16", seed=3, num_key_value_heads=4)
    llama("llama-bin", "llama", fmt="bin", seed=4)
    llama("llama-sharded-mqa", "llama", fmt="sharded", seed=5, num_key_value_heads=1)
    llama("llama-tied-embed-only", "llama", head="embed", seed=6)
    llama("llama-tied-lm_head-only", "llama", head="lm_head", seed=7)
    llama("llama-tied-both", "llama", head="both", seed=8)
    llama("llama-model-no-prefix-no-head", "llama", head="none", prefix="", seed=9)
    llama("llama-biases", "llama", seed=10, attention_bias=True, mlp_bias=True)
    llama("llama-rope-linear", "llama", seed=11, rope_scaling={"type": "linear", "factor": 4.0})
    llama("llama-rope-dynamic", "llama", seed=12, max_position_embeddings=8,
          rope_scaling={"rope_type": "dynamic", "factor": 3.0})
    llama("llama-rope-llama3", "llama", seed=13, rope_theta=500000.0, num_attention_heads=2,
          num_key_value_heads=1,
          rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 64})
    llama("llama-partial-rotary", "llama", seed=14, partial_rotary_factor=0.5)
    llama("mistral-window", "mistral", seed=15, sliding_window=4)
    llama("qwen2-biases", "qwen2", seed=16, head="embed")
    llama("qwen2-window-upper", "qwen2", seed=17, num_hidden_layers=3, use_sliding_window=True, sliding_window=3,
          max_window_layers=1)
    llama("qwen3-qk-norm", "qwen3", fmt="BF16", seed=18, head_dim=16, num_attention_heads=4, num_key_value_heads=2)
    # Gemma: 4 heads × head_dim 16 = 64 ≠ hidden 32, intermediate 8 × hidden; Gemma 2B's single
    # key/value head, its tokenizer kind and its legacy "hidden_act": "gelu" (still the tanh GELU),
    # Gemma 7B's full heads with hidden_activation, an untied head, every weight format.
    gemma = dict(architectures=["GemmaForCausalLM"], head_dim=16, intermediate_size=256, rms_norm_eps=1e-6,
                 hidden_act="gelu")
    g_tok, g_vocab = gemma_tokenizer or (None, V)
    llama("gemma-2b-mqa", "gemma", head="embed", seed=20, tokenizer=g_tok, vocab=g_vocab, num_key_value_heads=1,
          **gemma)
    llama("gemma-7b-mha-bf16", "gemma", fmt="BF16", head="embed", seed=21, num_key_value_heads=4,
          hidden_activation="gelu_pytorch_tanh", **gemma)
    llama("gemma-gqa-f16-untied", "gemma", fmt="F16", seed=22, **gemma)
    llama("gemma-sharded-lm_head-only", "gemma", fmt="sharded", head="lm_head", seed=23, num_key_value_heads=1,
          **gemma)
    llama("gemma-bin", "gemma", fmt="bin", head="embed", seed=24, **gemma)
    for case in out:  # GemmaConfig ties by default: say nothing where tied
        cfg = case[2]
        if cfg["model_type"] == "gemma" and cfg["tie_word_embeddings"]:
            del cfg["tie_word_embeddings"]
    # The real tokenizers of ../shared (skipped when absent), with embeddings of their size.
    for name, model_type, folder, vocab in (("llama2-tokenizer", "llama", "llama2", 32000),
                                            ("llama3-tokenizer", "llama", "llama3", 128256),
                                            ("qwen3-tokenizer", "qwen3", "qwen3", 151936)):
        path = os.path.join(REAL_TOKENIZERS, folder, "tokenizer.json")
        if os.path.exists(path):
            llama(name, model_type, head="embed", seed=19, tokenizer=path, vocab=vocab, hidden_size=16,
                  intermediate_size=24, num_attention_heads=2, num_key_value_heads=1,
                  **({"head_dim": 16} if model_type == "qwen3" else {}))

    def neox(name, fmt="F32", parallel=True, pct=0.25, seed=30, head=True, prefix="gpt_neox."):
        cfg = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": V, "hidden_size": 32,
               "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
               "max_position_embeddings": 64, "layer_norm_eps": 1e-5, "rotary_pct": pct, "rotary_emb_base": 10000,
               "use_parallel_residual": parallel, "hidden_act": "gelu", "tie_word_embeddings": False}
        out.append((name, "gpt_neox", cfg, lambda: neox_weights(cfg, seed, prefix, head), fmt, prefix, head, None))

    neox("neox-parallel")
    neox("neox-sequential-full-rotary", parallel=False, pct=1.0, seed=31)
    neox("neox-bf16", fmt="BF16", seed=32)
    neox("neox-model-no-head", seed=33, head=False, prefix="")

    def bloom(name, fmt="F32", seed=40, prefix="transformer.", **extra):
        cfg = {"model_type": "bloom", "architectures": ["BloomForCausalLM"], "vocab_size": V, "hidden_size": 48,
               "n_layer": 2, "n_head": 6, "layer_norm_epsilon": 1e-5}
        cfg.update(extra)
        out.append((name, "bloom", cfg, lambda: bloom_weights(cfg, seed, prefix, store_head=prefix == ""),
                    fmt, prefix, True, None))

    bloom("bloom-6-heads")
    bloom("bloom-no-prefix-bin", fmt="bin", seed=41, prefix="")
    bloom("bloom-post-ln-residual", seed=42, apply_residual_connection_post_layernorm=True)
    return out


FORWARD = {"llama": llama_forward, "gpt_neox": neox_forward, "bloom": bloom_forward}


def mistakes(family, cfg):
    """Plausible wrong implementations of a case, as (label, config, forward keyword arguments).
    The CLI's attention must be far from each: this shows that the case can fail."""
    out = []
    if family == "llama":
        out.append(("interleaved rotary pairs", cfg, dict(convention="interleaved")))
        H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        if 1 < Hkv < H:
            out.append(("kv head h % Hkv", cfg, dict(kv_modulo=True)))
        if cfg.get("rope_scaling"):
            out.append(("rope_scaling ignored", dict(cfg, rope_scaling=None), {}))
        if cfg.get("sliding_window"):
            out.append(("no sliding window", dict(cfg, sliding_window=None, use_sliding_window=False), {}))
        if cfg.get("partial_rotary_factor"):
            out.append(("full rotary", dict(cfg, partial_rotary_factor=1.0), {}))
        if cfg["model_type"] == "gemma":
            for quirk, label in (("1 + w", "RMSNorm times w, not 1 + w"),
                                 ("sqrt(hidden)", "embeddings not times sqrt(hidden_size)"),
                                 ("tanh gelu", "exact GELU for the legacy hidden_act"),
                                 ("head_dim", "rotary and scale from hidden / heads")):
                out.append((label, cfg, dict(gemma_without=(quirk,))))
    elif family == "gpt_neox":
        out.append(("the other residual form", dict(cfg, use_parallel_residual=not cfg["use_parallel_residual"]), {}))
        out.append(("rotary on other dims", dict(cfg, rotary_pct=0.5 if cfg["rotary_pct"] != 0.5 else 1.0), {}))
    elif family == "bloom":
        H = cfg["n_head"]
        out.append(("power-of-two slopes of 8 heads", cfg, dict(slopes=alibi_slopes(8)[:H])))
        post = cfg.get("apply_residual_connection_post_layernorm", False)
        out.append(("the other residual", dict(cfg, apply_residual_connection_post_layernorm=not post), {}))
    return out


def check(cli, root, case, V, failures, report):
    name, family, cfg, make, fmt, prefix, has_head, tokenizer = case
    d = os.path.join(root, name)
    os.makedirs(d)
    if tokenizer:
        shutil.copy(tokenizer, os.path.join(d, "tokenizer.json"))
    else:
        write_tokenizer(os.path.join(d, "tokenizer.json"), WORDS, bos="<s>" if family == "llama" else None)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    w = write_weights(d, make(), fmt)
    lens = name in LENS_CASES
    attention, output, tokens, run, _ = run_cli(cli, d, TEXTS, d, ("--logit-lens",) if lens else ())
    if lens:
        check_logit_lens(d, cfg, w, prefix, tokens, failures, report)
    logits_file = os.path.join(d, "dump", "logits.npy")
    dumped_logits = np.load(logits_file) if os.path.exists(logits_file) else None
    if has_head and (dumped_logits is None or dumped_logits.shape[:2] != (len(TEXTS), attention.shape[3])):
        failures.append(f"{name}: logits.npy missing or shaped "
                        f"{None if dumped_logits is None else dumped_logits.shape}")
        dumped_logits = None
    if not has_head and dumped_logits is not None:
        failures.append(f"{name}: a checkpoint without an LM head dumped logits.npy")
    worst = 0.0
    for b, item in enumerate(tokens):
        ids = [t["id"] for t in item]
        T = len(ids)
        a, hidden, logits = FORWARD[family](cfg, w, ids, prefix, rope_len=max(len(t) for t in tokens))
        err = scaled_error(attention[:, b, :, :T, :T], a)
        worst = max(worst, err)
        if err > TOL:
            per_layer = [scaled_error(attention[l, b, :, :T, :T], a[l]) for l in range(a.shape[0])]
            failures.append(f"{name} item {b}: attention differs by {err:.3g} (per layer {per_layer})")
        if np.abs(attention[:, b, :, T:, :]).max(initial=0) != 0 or np.abs(attention[:, b, :, :, T:]).max(initial=0) != 0:
            failures.append(f"{name} item {b}: padding is not zero")
        err = scaled_error(output[b, :T], hidden)
        worst = max(worst, err)
        if err > TOL:
            failures.append(f"{name} item {b}: output differs by {err:.3g}")
        if dumped_logits is not None:  # the whole distribution at every position, not only the top 5
            err = scaled_error(dumped_logits[b, :T], logits)
            if err > TOL or dumped_logits.shape[2] != logits.shape[-1]:
                failures.append(f"{name} item {b}: logits.npy differs by {err:.3g}")
            if np.abs(dumped_logits[b, T:]).max(initial=0) != 0:
                failures.append(f"{name} item {b}: logits.npy padding is not zero")
        if b == 0:
            for label, wrong_cfg, kw in mistakes(family, cfg):
                wrong = FORWARD[family](wrong_cfg, w, ids, prefix, rope_len=max(len(t) for t in tokens), **kw)[0]
                # The same measure as the check above; attention is at most 1, so it is |diff|.
                if wrong.shape == a.shape and scaled_error(attention[:, b, :, :T, :T], wrong) < 1e-2:
                    failures.append(f"{name}: the CLI's attention is as close to '{label}' as to the reference")
            peak = peakedness(a.numpy())
            if peak < 0.5:
                failures.append(f"{name}: reference attention is not peaked (mean row max {peak:.2f})")
            if not has_head:
                if run.get("next_token"):
                    failures.append(f"{name}: a checkpoint without an LM head gave next tokens")
                r = cli_run([cli, "run", "--model", d, "--text", "the", "--generate", "2"])
                if r.returncode != 2 or "cannot generate" not in r.stderr:
                    failures.append(f"{name}: --generate without an LM head: exit {r.returncode}, {r.stderr!r}")
            else:
                probs = torch.softmax(logits[-1], -1)
                want = [int(i) for i in torch.topk(probs, 5).indices]
                got = [p["id"] for p in run.get("next_token", [])]
                if got != want:
                    failures.append(f"{name}: next tokens {got}, want {want}")
                elif scaled_error([p["p"] for p in run["next_token"]],
                                  [float(probs[p["id"]]) for p in run["next_token"]]) > P_TOL:
                    failures.append(f"{name}: next-token probabilities differ")
    check_value_norms(cli, d, family, cfg, w, prefix, failures, report)
    if name in GENERATE_CASES:
        def forward(ids):
            a, _, logits = FORWARD[family](cfg, w, ids, prefix)
            return a, torch.softmax(logits[-1], -1)
        check_generate(cli, d, TEXTS[1], forward, name, failures, report)
    L, B, H = attention.shape[:3]
    sizes = cfg.get("text_config", cfg)  # a vision-language folder's text model (gemma3)
    want_h = sizes.get("num_attention_heads", sizes.get("n_head", sizes.get("num_heads")))  # gpt_neo: num_heads
    want_l = sizes.get("num_hidden_layers", sizes.get("n_layer", sizes.get("num_layers")))
    if (L, B, H) != (want_l, len(TEXTS), want_h):
        failures.append(f"{name}: attention shape {attention.shape}")
    report.append(f"{name:32s} max |diff|/max(1,|want|) {worst:.2e}  peak {peakedness(attention[:, 0, :, :len(tokens[0]), :len(tokens[0])]):.2f}")


def check_logit_lens(d, cfg, w, prefix, tokens, failures, report):
    """The dump's logit lens (top 5 ids and probabilities per layer and position, and the
    probability of the token that follows) against llama_forward's final norm and head applied
    after every layer, for every item; and far from the lens without the final norm."""
    name = os.path.basename(d)
    dump = os.path.join(d, "dump")
    ids_got = np.load(os.path.join(dump, "logit_lens_ids.npy"))
    p_got = np.load(os.path.join(dump, "logit_lens_probs.npy"))
    next_got = np.load(os.path.join(dump, "logit_lens_next.npy"))
    L, B = cfg["num_hidden_layers"], len(tokens)
    if ids_got.shape[:2] != (L, B) or ids_got.shape[3] != 5 or p_got.shape != ids_got.shape:
        failures.append(f"{name}: logit lens shapes {ids_got.shape}, {p_got.shape}")
        return
    worst, wrong_worst = 0.0, 1.0
    for b, item in enumerate(tokens):
        ids = [t["id"] for t in item]
        T = len(ids)
        lens, wrong = [], []
        llama_forward(cfg, w, ids, prefix, rope_len=max(len(t) for t in tokens), lens=lens)
        llama_forward(cfg, w, ids, prefix, rope_len=max(len(t) for t in tokens), lens=wrong, lens_norm=False)
        want = torch.stack(lens).numpy()  # [L, T, V]
        top = np.argsort(-want, axis=-1)[..., :5]
        if (ids_got[:, b, :T].astype(np.int64) != top).any():
            failures.append(f"{name} item {b}: logit-lens top ids differ from the reference's")
        got = p_got[:, b, :T]
        worst = max(worst, scaled_error(got, np.take_along_axis(want, top, -1)))
        nxt = np.array([[want[l, t, ids[t + 1]] for t in range(T - 1)] for l in range(L)])
        worst = max(worst, scaled_error(next_got[:, b, :T - 1], nxt))
        if (next_got[:, b, T - 1:] != -1).any() or (ids_got[:, b, T:] != -1).any():
            failures.append(f"{name} item {b}: the logit lens past the last token is not -1")
        mistaken = torch.stack(wrong).numpy()
        wrong_worst = min(wrong_worst, scaled_error(got, np.take_along_axis(mistaken, top, -1)))
    report.append(f"{name:32s} logit lens max |diff| {worst:.2e} (without the final norm: {wrong_worst:.2e})")
    if worst > P_TOL:
        failures.append(f"{name}: logit-lens probabilities differ by {worst:.3g}")
    if wrong_worst < 1e-2:
        failures.append(f"{name}: the logit lens is as close to one without the final norm as to the reference")


def check_value_norms(cli, d, family, cfg, w, prefix, failures, report):
    """analyze --measure value-norm against ‖α_ij (v_j W_V^h + b) W_O^h‖ of the reference forward,
    on the first text; within 1e-5 of max(1, the largest norm)."""
    js = os.path.join(d, "value_norm.json")
    p = cli_run([cli, "analyze", "--model", d, "--text", TEXTS[0], "--measure", "value-norm", "--json", js])
    if p.returncode != 0:
        failures.append(f"{os.path.basename(d)}: analyze --measure value-norm exited {p.returncode}: {p.stderr.strip()}")
        return
    with open(js, encoding="utf-8") as f:
        got = json.load(f)
    ids = [t["id"] for t in got["tokens"]]
    norms = []
    FORWARD[family](cfg, w, ids, prefix, norms=norms)
    want = torch.stack(norms).numpy()
    have = np.array(got["value_norm"], dtype=np.float64)
    if have.shape != want.shape:
        failures.append(f"{os.path.basename(d)}: value_norm shape {have.shape}, want {want.shape}")
        return
    # A norm ‖α_ij f_j‖ with a small α_ij carries the rounding of f_j, of the size of the largest
    # norms, not its own: so the error is measured against the largest, with tolerance.py's floor.
    err = scaled_error(have, want, magnitude=np.abs(want).max())
    report.append(f"{os.path.basename(d):32s} value-norm max |diff| / max(1, largest) {err:.2e}")
    if err > 1e-5:
        failures.append(f"{os.path.basename(d)}: value norms differ by {err:.3g} of max(1, the largest)")


def check_trace_and_errors(cli, root, V, failures):
    """The trace of a grouped-query Qwen3 layer names its steps with the shapes computed, and broken
    folders are refused with messages that name the tensor or the field."""
    d = os.path.join(root, "trace-qwen3")
    os.makedirs(d)
    write_tokenizer(os.path.join(d, "tokenizer.json"), WORDS, bos="<s>")
    cfg = llama_config("qwen3", V, head_dim=16, num_attention_heads=4, num_key_value_heads=2)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    weights = llama_weights(cfg, 50)
    write_weights(d, weights)
    p = cli_run([cli, "run", "--model", d, "--text", "the cat sat", "--trace"])
    steps = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if line.startswith("  ") and len(parts) >= 2 and parts[1].startswith("["):
            steps.setdefault(parts[0], " ".join(parts[1:]).split("]")[0] + "]")
    T = 4  # <s> the cat sat
    want = {"input_layernorm": f"[1, {T}, 32]", "q_proj": f"[1, {T}, 64]", "k_proj": f"[1, {T}, 32]",
            "q_norm": f"[1, 4, {T}, 16]", "k_norm": f"[1, 2, {T}, 16]", "q_rot": f"[1, 4, {T}, 16]",
            "k_rot": f"[1, 2, {T}, 16]", "k_repeat": f"[1, 4, {T}, 16]", "v_repeat": f"[1, 4, {T}, 16]",
            "attention": f"[1, 4, {T}, {T}]", "merged": f"[1, {T}, 64]", "mlp_gated": f"[1, {T}, 48]",
            "residual_2": f"[1, {T}, 32]"}
    for name, shape in want.items():
        if steps.get(name) != shape:
            failures.append(f"trace step {name}: {steps.get(name)}, want {shape}")

    def refused(label, cfg_over, weights_over, word):
        b = os.path.join(root, "broken-" + label)
        os.makedirs(b)
        write_tokenizer(os.path.join(b, "tokenizer.json"), WORDS, bos="<s>")
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(dict(cfg, **cfg_over), f)
        write_weights(b, weights_over(dict(weights)))
        r = cli_run([cli, "run", "--model", b, "--text", "the cat"])
        if r.returncode != 2 or word not in r.stderr:
            failures.append(f"broken folder '{label}': exit {r.returncode}, {r.stderr.strip()!r} lacks {word!r}")

    def drop(name):
        return lambda w: {k: v for k, v in w.items() if k != name}

    def reshape(name):
        return lambda w: dict(w, **{name: w[name][:, :-1]})

    # Without --max-tokens the limit is the model's context length where that is over 4096: 5,622
    # tokens run on this model with 8,192 positions (on demand, so nothing T x T is stored), and
    # the same model with 64 positions keeps the limit of 4096 and refuses them.
    text = "the" + " cat sat on the mat and the dog" * 562
    for positions, ok in ((8192, True), (64, False)):
        c = os.path.join(root, f"context-{positions}")
        os.makedirs(c)
        write_tokenizer(os.path.join(c, "tokenizer.json"), WORDS, bos="<s>")
        with open(os.path.join(c, "config.json"), "w") as f:
            json.dump(dict(cfg, max_position_embeddings=positions), f)
        write_weights(c, weights)
        r = cli_run([cli, "analyze", "--model", c, "--text", text, "--measure", "long-range"])
        seen = re.search(r"over (\d+) tokens", r.stdout)
        if ok and (r.returncode != 0 or not seen or not 4096 < int(seen.group(1)) <= 8192):
            failures.append(f"a long text on 8,192 positions: exit {r.returncode}, "
                            f"{(r.stdout + r.stderr).strip()[-300:]!r}")
        if not ok and (r.returncode != 2 or "more than the limit of 4096" not in r.stderr):
            failures.append(f"a long text on 64 positions: exit {r.returncode}, {r.stderr.strip()!r}")

    refused("missing", {}, drop("model.layers.1.self_attn.k_norm.weight"), "layers.1.self_attn.k_norm.weight")
    refused("shape", {}, reshape("model.layers.0.self_attn.k_proj.weight"), "model.layers.0.self_attn.k_proj.weight")
    refused("kv-heads", {"num_key_value_heads": 3}, lambda w: w, "num_key_value_heads (3)")
    refused("rope", {"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, lambda w: w, "yarn")
    refused("extra", {}, lambda w: dict(w, **{"model.layers.0.self_attn.extra.weight": np.zeros(3)}),
            "model.layers.0.self_attn.extra.weight")


def main():
    cli = sys.argv[1]
    failures, report = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = sys.argv[2] if len(sys.argv) > 2 else tmp
        os.makedirs(root, exist_ok=True)
        V = write_tokenizer(os.path.join(tmp, "probe.json"), WORDS)
        gemma_tokenizer = os.path.join(tmp, "gemma-tokenizer.json")
        gemma_vocab = write_gemma_tokenizer(gemma_tokenizer)
        check_gemma_tokenizer(cli, gemma_tokenizer, failures)
        for case in cases(V, (gemma_tokenizer, gemma_vocab)):
            try:
                check(cli, root, case, V, failures, report)
            except Exception as e:  # one broken case must not hide the others
                failures.append(f"{case[0]}: {e}")
        check_trace_and_errors(cli, root, V, failures)
    for line in report:
        print(line)
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
