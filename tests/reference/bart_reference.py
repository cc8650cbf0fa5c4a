#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` on BART and Marian checkpoints against plain PyTorch.

It writes tiny random checkpoints in the Hugging Face layouts of BartForConditionalGeneration
(config.json, a byte-level BPE tokenizer.json) and MarianMTModel (config.json, source.spm and
target.spm from tests/data, a vocab.json that maps their pieces to other ids), with json + struct +
numpy (no attnscope code, no transformers package), runs the CLI on a padded batch with a target
(--target, teacher forcing) and --dump, and compares the encoder's self-attention, the decoder's
self-attention and the cross-attention, both stacks' final hidden states and the top-5 next tokens
with a float64 forward pass written here from the published architectures (Lewis et al. 2020;
Junczys-Dowmunt et al. 2018 as transformers documents it: post-norm layers, biased q/k/v/out
projections scaled by head_dim^-0.5, embeddings optionally scaled by sqrt(d_model), learned
positions at t + 2 and an embedding LayerNorm (BART), sinusoidal positions with sin in the first
half and cos in the second (Marian), a head tied to the shared embedding plus final_logits_bias), to
1e-4 (times max(1, |value|): tolerance.py). Padding must be exactly 0. BART's decoder reads
decoder_start_token_id (</s>), then the target as its tokenizer closes it without the final </s>: <s> first; Marian's reads its pad token,
then the target's pieces mapped through vocab.json (checked against Hugging Face's ids of the same
Unigram model, and against spm_encode's pieces when target.spm is the BPE fixture). Greedy generation (--generate N) must give the reference's greedy tokens. Query and
key weights are scaled up so that attention is peaked (asserted).

Usage: bart_reference.py ATTNSCOPE_CLI [KEEP_DIR]
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
from decoder_common import write_tokenizer, write_weights  # noqa: E402
from seq2seq_common import Reference, check_run, key_mask, run_cases  # noqa: E402

TOL = 1e-4
P_TOL = 1e-5
QK_SCALE = 2.5
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "tokenizers")
WORDS = ("the", " the", " cat", " sat", " on", " mat", " and", " dog")


# ----------------------------------------------------------------------------------------------
# The published architectures, float64


def layer_norm(x, W, at):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), W[at + ".weight"], W[at + ".bias"], 1e-5)


def linear(x, W, at):
    return x @ W[at + ".weight"].T + W[at + ".bias"]


def attention(W, at, x, memory, mask, H):
    B, Tq, C = x.shape
    Tk, hd = memory.shape[1], C // H
    q = (linear(x, W, at + ".q_proj") * hd ** -0.5).view(B, Tq, H, hd).transpose(1, 2)
    k = linear(memory, W, at + ".k_proj").view(B, Tk, H, hd).transpose(1, 2)
    v = linear(memory, W, at + ".v_proj").view(B, Tk, H, hd).transpose(1, 2)
    a = torch.softmax(q @ k.transpose(-1, -2) + mask, -1)
    return linear((a @ v).transpose(1, 2).reshape(B, Tq, C), W, at + ".out_proj"), a


def sinusoid(n, dim):
    pos = np.array([[p / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for p in range(n)])
    out = np.zeros((n, dim))
    half = dim // 2 + dim % 2
    out[:, :half] = np.sin(pos[:, 0::2])
    out[:, half:] = np.cos(pos[:, 1::2])
    return torch.from_numpy(out)


def act(cfg, x):
    f = cfg["activation_function"]
    if f == "gelu":
        return torch.nn.functional.gelu(x)
    if f == "relu":
        return torch.relu(x)
    assert f == "swish", f
    return x * torch.sigmoid(x)


def embed(W, cfg, ids, stack):
    x = W["model.shared.weight"][ids] * (math.sqrt(cfg["d_model"]) if cfg["scale_embedding"] else 1.0)
    T = ids.shape[1]
    if cfg["model_type"] == "bart":
        x = x + W[f"model.{stack}.embed_positions.weight"][torch.arange(T) + 2]
        return layer_norm(x, W, f"model.{stack}.layernorm_embedding")
    return x + sinusoid(cfg["max_position_embeddings"], cfg["d_model"])[:T]


def encode(W, cfg, ids, lengths):
    H = cfg["encoder_attention_heads"]
    x = embed(W, cfg, ids, "encoder")
    mask = key_mask(lengths, ids.shape[1], ids.shape[1], False)
    atts = []
    for l in range(cfg["encoder_layers"]):
        p = f"model.encoder.layers.{l}."
        h, a = attention(W, p + "self_attn", x, x, mask, H)
        x = layer_norm(x + h, W, p + "self_attn_layer_norm")
        x = layer_norm(x + linear(act(cfg, linear(x, W, p + "fc1")), W, p + "fc2"), W, p + "final_layer_norm")
        atts.append(a)
    return x, torch.stack(atts)


def decode(W, cfg, memory, source_lengths, ids, lengths):
    H, T, Ts = cfg["decoder_attention_heads"], ids.shape[1], memory.shape[1]
    x = embed(W, cfg, ids, "decoder")
    self_mask, cross_mask = key_mask(lengths, T, T, True), key_mask(source_lengths, T, Ts, False)
    selfs, crosses = [], []
    for l in range(cfg["decoder_layers"]):
        p = f"model.decoder.layers.{l}."
        h, a = attention(W, p + "self_attn", x, x, self_mask, H)
        x = layer_norm(x + h, W, p + "self_attn_layer_norm")
        h, c = attention(W, p + "encoder_attn", x, memory, cross_mask, H)
        x = layer_norm(x + h, W, p + "encoder_attn_layer_norm")
        x = layer_norm(x + linear(act(cfg, linear(x, W, p + "fc1")), W, p + "fc2"), W, p + "final_layer_norm")
        selfs.append(a)
        crosses.append(c)
    return x, torch.stack(selfs), torch.stack(crosses)


def logits(W, cfg, hidden):
    head = W["model.shared.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return hidden @ head.T + W["final_logits_bias"][0]


# ----------------------------------------------------------------------------------------------
# Random checkpoints with Hugging Face's names (float64 numpy)


def make_weights(cfg, seed):
    rng = np.random.default_rng(seed)
    C, V = cfg["d_model"], cfg["vocab_size"]
    w = {}

    def lin(name, o, i, s=1.0):
        w[name + ".weight"] = s * rng.normal(0, 1 / math.sqrt(i), (o, i))
        w[name + ".bias"] = 0.1 * rng.normal(0, 1, o)

    def norm(name):
        w[name + ".weight"] = 1 + 0.2 * rng.normal(0, 1, C)
        w[name + ".bias"] = 0.1 * rng.normal(0, 1, C)

    w["model.shared.weight"] = rng.normal(0, 1 if cfg["model_type"] == "bart" else 0.3, (V, C))
    for stack in ("encoder", "decoder"):
        if cfg["model_type"] == "bart":
            w[f"model.{stack}.embed_positions.weight"] = rng.normal(0, 1, (cfg["max_position_embeddings"] + 2, C))
            norm(f"model.{stack}.layernorm_embedding")
        ffn = cfg[f"{stack}_ffn_dim"]
        for l in range(cfg[f"{stack}_layers"]):
            p = f"model.{stack}.layers.{l}."
            for at in ["self_attn"] + (["encoder_attn"] if stack == "decoder" else []):
                lin(p + at + ".q_proj", C, C, QK_SCALE)
                lin(p + at + ".k_proj", C, C, QK_SCALE)
                lin(p + at + ".v_proj", C, C)
                lin(p + at + ".out_proj", C, C)
                norm(p + at + "_layer_norm")
            lin(p + "fc1", ffn, C)
            lin(p + "fc2", C, ffn)
            norm(p + "final_layer_norm")
    w["final_logits_bias"] = 0.5 * rng.normal(0, 1, (1, V))
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = rng.normal(0, 1 / math.sqrt(C), (V, C))
    return w


def bart_config(vocab, **kw):
    c = {"model_type": "bart", "vocab_size": vocab, "d_model": 24, "encoder_layers": 2, "decoder_layers": 3,
         "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 40, "decoder_ffn_dim": 36,
         "max_position_embeddings": 48, "activation_function": "gelu", "scale_embedding": False,
         "tie_word_embeddings": True}
    c.update(kw)
    return c


def marian_config(vocab, pad, eos, **kw):
    c = bart_config(vocab, model_type="marian", activation_function="swish", scale_embedding=True,
                    max_position_embeddings=64, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=eos)
    c.update(kw)
    return c


def write_bart(folder, seed, **kw):
    os.makedirs(folder)
    vocab = write_tokenizer(os.path.join(folder, "tokenizer.json"), WORDS, bos="<s>")
    bos, eos = vocab - 2, vocab - 1  # write_tokenizer's <s>, </s>
    cfg = bart_config(vocab + 1, bos_token_id=bos, eos_token_id=eos, decoder_start_token_id=eos,
                      pad_token_id=vocab, **kw)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    return cfg, write_weights(folder, make_weights(cfg, seed))


SPM_ORACLE = json.load(open(os.path.join(DATA, "reference", "spm.json"), encoding="utf-8"))["models"]
BPE_TARGET = "The quick brown fox jumps over the lazy dog."


def write_marian(folder, seed, bpe_target=False, **kw):
    """source.spm is the Unigram fixture; target.spm the same, or the BPE fixture (spm_bpe.model)
    when bpe_target; vocab.json gives the source pieces shuffled ids and the BPE target's pieces
    the ids after them."""
    os.makedirs(folder)
    pieces = [p for p, _ in json.load(open(os.path.join(DATA, "unigram.json"), encoding="utf-8"))["model"]["vocab"]]
    order = np.random.default_rng(seed).permutation(len(pieces))
    vocab = {p: int(i) for p, i in zip(pieces, order)}
    if bpe_target:
        case = next(c for c in SPM_ORACLE["spm_bpe"]["cases"] if c["text"] == BPE_TARGET)
        for p in case["pieces"]:
            vocab.setdefault(p, len(vocab))
    vocab["<pad>"] = len(vocab)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    shutil.copy(os.path.join(DATA, "unigram.model"), os.path.join(folder, "source.spm"))
    shutil.copy(os.path.join(DATA, "spm_bpe.model" if bpe_target else "unigram.model"),
                os.path.join(folder, "target.spm"))
    cfg = marian_config(len(vocab), vocab["<pad>"], vocab["</s>"], **kw)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    return cfg, write_weights(folder, make_weights(cfg, seed)), pieces, vocab


def check(cli, tmp, name, kind, seed, kw):
    folder = os.path.join(tmp, name.replace(" ", "_").replace(",", ""))
    if kind == "bart":
        sources = ["the cat sat on the mat and the dog", "the dog sat"]
        target = "the cat sat on the mat and the dog"
        cfg, W = write_bart(folder, seed, **kw)

        def check_ids(src, dec):
            # <s> text </s> for the source; </s> <s> text for the decoder (shift_right of the labels).
            bos, eos = cfg["bos_token_id"], cfg["eos_token_id"]
            if src[0][0] != bos or src[0][-1] != eos or dec[0] != [eos] + src[0][:-1]:
                return [f"source {src[0]} / decoder {dec[0]} are not <s> text </s> / </s> <s> text"]
            return []
    else:
        oracle = {c["text"]: c["ids"] for c in json.load(open(os.path.join(DATA, "reference", "unigram.json"),
                                                             encoding="utf-8"))["cases"] if c["pair"] is None}
        sources = ["The quick brown fox jumps over the lazy dog.", "Hello world"]
        bpe = kw.pop("bpe_target", False)
        target = BPE_TARGET if bpe else "Ça va ? Très bien, merci ! « citation »"
        cfg, W, pieces, vocab = write_marian(folder, seed, bpe, **kw)

        def check_ids(src, dec):
            mapped = lambda text: [vocab[pieces[i]] for i in oracle[text]]
            if bpe:  # target.spm's own pieces (spm_encode's), not source.spm's
                case = next(c for c in SPM_ORACLE["spm_bpe"]["cases"] if c["text"] == target)
                want = [vocab[p] for p in case["pieces"]]
            else:
                want = mapped(target)[:-1]  # the Unigram oracle's ids end with </s>
            problems = []
            if src != [mapped(s) for s in sources]:
                problems.append(f"source ids {src} are not Hugging Face's pieces mapped through vocab.json")
            if dec != [[cfg["decoder_start_token_id"]] + want] * len(sources):
                problems.append(f"decoder ids {dec} are not <pad> + the target's pieces mapped through vocab.json")
            return problems

    ref = Reference(lambda ids, lengths: encode(W, cfg, ids, lengths),
                    lambda memory, src, ids, lengths: decode(W, cfg, memory, src, ids, lengths),
                    lambda hidden: logits(W, cfg, hidden), cfg["decoder_start_token_id"], cfg["eos_token_id"])
    return check_run(cli, ref, folder, name, sources, target, check_ids, TOL, P_TOL)


CASES = [
    ("bart, tied head", "bart", 1, {}),
    ("bart, untied head, scaled embeddings", "bart", 2, {"tie_word_embeddings": False, "scale_embedding": True}),
    ("marian, tied head", "marian", 3, {}),
    ("marian, relu, untied head", "marian", 4, {"activation_function": "relu", "tie_word_embeddings": False}),
    ("marian, a BPE target.spm unlike source.spm", "marian", 5, {"bpe_target": True}),
]

if __name__ == "__main__":
    sys.exit(run_cases("bart_ref_", "BART/Marian", CASES, check))
