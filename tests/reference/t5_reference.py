#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` on T5 checkpoints against plain PyTorch.

It writes tiny random T5 checkpoints in the Hugging Face layout of T5ForConditionalGeneration
(config.json, the Unigram tokenizer.json with a Precompiled normalizer from tests/data, weights
with json + struct + numpy: no attnscope code, no transformers package), runs the CLI on a padded
batch with a target (--target, teacher forcing) and --dump, and compares the encoder's
self-attention [L, B, H, Ts, Ts], the decoder's self-attention [Ld, B, H, Tt, Tt] and the
cross-attention [Ld, B, H, Tt, Ts], the encoder's and the decoder's final hidden states and the
top-5 next tokens with a float64 forward pass written here from the published architecture
(Raffel et al. 2020 and transformers' T5 as documented: pre-RMSNorm without bias, unscaled
scores, bucketed relative position bias from block 0 of each stack, bidirectional in the encoder
and causal in the decoder, ReLU or gated-GELU feed-forward, tied head rescaled by d_model^-0.5),
to 1e-4 (times max(1, |value|): tolerance.py). Padding must be exactly 0. The source ids must
equal those of Hugging Face's tokenizers (the oracle in tests/data/tokenizers/reference/unigram.json), the decoder inputs
decoder_start_token_id and the target's ids without the closing </s>. Greedy generation
(--generate N without a target) must give the reference's greedy tokens. Query and key weights and
the bias tables are scaled up so that attention is peaked (asserted): a wrong bucket, direction or
mask cannot hide in uniform rows. Cases: relu and gated-gelu, tied and untied heads, embeddings
stored as shared or as encoder/decoder.embed_tokens, d_kv * heads != d_model, more decoder than
encoder layers, spiece.model instead of tokenizer.json.

Usage: t5_reference.py ATTNSCOPE_CLI [KEEP_DIR]
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing; under CI=true
that fails instead, exit 1: see cannot_run.py).
"""
import json
import math
import os
import shutil
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    from cannot_run import cannot_run
    cannot_run(f"/usr/bin/python3 has no {e.name}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_common import write_weights  # noqa: E402
from seq2seq_common import Reference, check_run, key_mask, run_cases  # noqa: E402

TOL = 1e-4
P_TOL = 1e-5
QK_SCALE = 2.0
BIAS_SCALE = 1.5
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "tokenizers")
ORACLE = {c["text"]: c["ids"] for c in json.load(open(os.path.join(DATA, "reference", "unigram.json"),
                                                     encoding="utf-8"))["cases"] if c["pair"] is None}
SOURCES = ["The quick brown fox jumps over the lazy dog.", "Hello world"]
TARGET = "ÉCOLE École école ÇA Ça"
EOS, START = 2, 0  # the fixture's </s>; decoder_start_token_id (T5 uses its pad id)
VOCAB = 800


# ----------------------------------------------------------------------------------------------
# The published architecture, float64


def bucket(relative, bidirectional, buckets, max_distance):
    """Mesh TensorFlow's relative position bucket (key - query), as T5 defines it: half of the
    buckets per direction when bidirectional, exact below buckets/2 (of the half), logarithmic up
    to max_distance, clamped. The logarithm in float32, as the released implementations compute it."""
    out = torch.zeros_like(relative)
    if bidirectional:
        buckets //= 2
        out += (relative > 0).long() * buckets
        n = relative.abs()
    else:
        n = (-relative).clamp(min=0)
    exact = buckets // 2
    large = exact + (torch.log(n.float() / exact) / math.log(max_distance / exact) * (buckets - exact)).long()
    large = large.clamp(max=buckets - 1)
    return out + torch.where(n < exact, n, large)


def position_bias(table, Tq, Tk, bidirectional, cfg):
    rel = torch.arange(Tk)[None, :] - torch.arange(Tq)[:, None]
    b = bucket(rel, bidirectional, cfg["relative_attention_num_buckets"], cfg["relative_attention_max_distance"])
    return table[b].permute(2, 0, 1)[None]  # [1, H, Tq, Tk]


def rms(x, w, eps):
    return w * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps))


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def attention(W, at, x, memory, bias, mask, H, dkv):
    B, Tq, _ = x.shape
    Tk = memory.shape[1]
    q = (x @ W[at + ".q.weight"].T).view(B, Tq, H, dkv).transpose(1, 2)
    k = (memory @ W[at + ".k.weight"].T).view(B, Tk, H, dkv).transpose(1, 2)
    v = (memory @ W[at + ".v.weight"].T).view(B, Tk, H, dkv).transpose(1, 2)
    s = q @ k.transpose(-1, -2)  # T5 does not scale
    if bias is not None:
        s = s + bias
    a = torch.softmax(s + mask, -1)
    out = (a @ v).transpose(1, 2).reshape(B, Tq, H * dkv) @ W[at + ".o.weight"].T
    return out, a


def feed_forward(W, at, x, cfg):
    if cfg["feed_forward_proj"] == "gated-gelu":
        h = gelu_new(x @ W[at + ".wi_0.weight"].T) * (x @ W[at + ".wi_1.weight"].T)
    else:
        h = torch.relu(x @ W[at + ".wi.weight"].T)
    return h @ W[at + ".wo.weight"].T


def embedding(W):
    return W.get("shared.weight", W.get("encoder.embed_tokens.weight"))


def encode(W, cfg, ids, lengths):
    H, dkv, eps = cfg["num_heads"], cfg["d_kv"], cfg["layer_norm_epsilon"]
    x = embedding(W)[ids]
    T = ids.shape[1]
    bias = position_bias(W["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"], T, T, True, cfg)
    mask = key_mask(lengths, T, T, False)
    atts = []
    for l in range(cfg["num_layers"]):
        p = f"encoder.block.{l}."
        h, a = attention(W, p + "layer.0.SelfAttention", rms(x, W[p + "layer.0.layer_norm.weight"], eps),
                         rms(x, W[p + "layer.0.layer_norm.weight"], eps), bias, mask, H, dkv)
        x = x + h
        x = x + feed_forward(W, p + "layer.1.DenseReluDense", rms(x, W[p + "layer.1.layer_norm.weight"], eps), cfg)
        atts.append(a)
    return rms(x, W["encoder.final_layer_norm.weight"], eps), torch.stack(atts)


def decode(W, cfg, memory, source_lengths, ids, lengths):
    H, dkv, eps = cfg["num_heads"], cfg["d_kv"], cfg["layer_norm_epsilon"]
    x = embedding(W)[ids]
    T, Ts = ids.shape[1], memory.shape[1]
    bias = position_bias(W["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"], T, T, False, cfg)
    self_mask, cross_mask = key_mask(lengths, T, T, True), key_mask(source_lengths, T, Ts, False)
    selfs, crosses = [], []
    for l in range(cfg["num_decoder_layers"]):
        p = f"decoder.block.{l}."
        n = rms(x, W[p + "layer.0.layer_norm.weight"], eps)
        h, a = attention(W, p + "layer.0.SelfAttention", n, n, bias, self_mask, H, dkv)
        x = x + h
        h, c = attention(W, p + "layer.1.EncDecAttention", rms(x, W[p + "layer.1.layer_norm.weight"], eps), memory,
                         None, cross_mask, H, dkv)
        x = x + h
        x = x + feed_forward(W, p + "layer.2.DenseReluDense", rms(x, W[p + "layer.2.layer_norm.weight"], eps), cfg)
        selfs.append(a)
        crosses.append(c)
    return rms(x, W["decoder.final_layer_norm.weight"], eps), torch.stack(selfs), torch.stack(crosses)


def logits(W, cfg, hidden):
    if cfg["tie_word_embeddings"]:
        return (hidden * cfg["d_model"] ** -0.5) @ embedding(W).T
    return hidden @ W["lm_head.weight"].T


# ----------------------------------------------------------------------------------------------
# Random checkpoints with Hugging Face's names (float64 numpy)


def make_weights(cfg, seed, embed_names):
    rng = np.random.default_rng(seed)
    C, H, dkv, F, V = cfg["d_model"], cfg["num_heads"], cfg["d_kv"], cfg["d_ff"], cfg["vocab_size"]
    w = {}
    lin = lambda name, o, i, s=1.0: w.__setitem__(name, s * rng.normal(0, 1 / math.sqrt(i), (o, i)))
    norm = lambda name: w.__setitem__(name, 1 + 0.2 * rng.normal(0, 1, C))
    emb = rng.normal(0, 1, (V, C))
    for n in embed_names:
        w[n] = emb
    for stack, layers in (("encoder", cfg["num_layers"]), ("decoder", cfg["num_decoder_layers"])):
        w[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = \
            BIAS_SCALE * rng.normal(0, 1, (cfg["relative_attention_num_buckets"], H))
        for l in range(layers):
            p = f"{stack}.block.{l}.layer."
            attn = [p + "0.SelfAttention"] + ([p + "1.EncDecAttention"] if stack == "decoder" else [])
            for i, at in enumerate(attn):
                norm(p + f"{i}.layer_norm.weight")
                lin(at + ".q.weight", H * dkv, C, QK_SCALE)
                lin(at + ".k.weight", H * dkv, C, QK_SCALE)
                lin(at + ".v.weight", H * dkv, C)
                lin(at + ".o.weight", C, H * dkv)
            ff = p + f"{len(attn)}."
            norm(ff + "layer_norm.weight")
            if cfg["feed_forward_proj"] == "gated-gelu":
                lin(ff + "DenseReluDense.wi_0.weight", F, C)
                lin(ff + "DenseReluDense.wi_1.weight", F, C)
            else:
                lin(ff + "DenseReluDense.wi.weight", F, C)
            lin(ff + "DenseReluDense.wo.weight", C, F)
        norm(f"{stack}.final_layer_norm.weight")
    if not cfg["tie_word_embeddings"]:
        lin("lm_head.weight", V, C)
    return w


def config(**kw):
    c = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": VOCAB,
         "d_model": 32, "d_kv": 6, "d_ff": 40, "num_layers": 2, "num_decoder_layers": 3, "num_heads": 4,
         "relative_attention_num_buckets": 16, "relative_attention_max_distance": 20,
         "layer_norm_epsilon": 1e-6, "feed_forward_proj": "relu", "tie_word_embeddings": True,
         "decoder_start_token_id": START, "eos_token_id": EOS, "pad_token_id": 0, "is_encoder_decoder": True}
    c.update(kw)
    return c


def write_folder(folder, cfg, seed, embed_names=("shared.weight",), tokenizer="json"):
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    if tokenizer == "json":
        shutil.copy(os.path.join(DATA, "unigram.json"), os.path.join(folder, "tokenizer.json"))
    else:
        shutil.copy(os.path.join(DATA, "unigram.model"), os.path.join(folder, "spiece.model"))
    return write_weights(folder, make_weights(cfg, seed, embed_names))


def check(cli, tmp, name, cfg, seed, folder_kw=None):
    folder = os.path.join(tmp, name.replace(" ", "_").replace(",", ""))
    W = write_folder(folder, cfg, seed, **(folder_kw or {}))
    ref = Reference(lambda ids, lengths: encode(W, cfg, ids, lengths),
                    lambda memory, src, ids, lengths: decode(W, cfg, memory, src, ids, lengths),
                    lambda hidden: logits(W, cfg, hidden), START, EOS)

    def check_ids(src, dec):
        # The fixture's spiece.model is the same Unigram model: the same ids, with the </s> that
        # tokenizer.json's template adds and a bare SentencePiece model does not.
        problems = []
        if src != [ORACLE[s] for s in SOURCES]:
            problems.append(f"source ids {src} differ from Hugging Face's tokenizer")
        if dec != [[START] + ORACLE[TARGET][:-1]] * len(SOURCES):
            problems.append(f"decoder ids {dec} are not decoder_start_token_id + the target without </s>")
        return problems

    return check_run(cli, ref, folder, name, SOURCES, TARGET, check_ids, TOL, P_TOL)


CASES = [
    ("t5 relu, tied head", config(), 1),
    ("t5 v1.1 gated-gelu, untied head", config(feed_forward_proj="gated-gelu", tie_word_embeddings=False), 2),
    ("gated-gelu, tied, embed_tokens names only", config(feed_forward_proj="gated-gelu"), 3,
     {"embed_names": ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")}),
    ("relu, untied, 3+1 layers, d_kv*heads = d_model",
     config(num_layers=3, num_decoder_layers=1, d_kv=8, tie_word_embeddings=False), 4),
    ("default buckets 32 / 128", config(relative_attention_num_buckets=32, relative_attention_max_distance=128), 5),
    ("spiece.model instead of tokenizer.json", config(), 6, {"tokenizer": "spm"}),
]

if __name__ == "__main__":
    sys.exit(run_cases("t5_ref_", "T5", CASES, check))
