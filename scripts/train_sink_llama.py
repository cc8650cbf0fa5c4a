#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Trains a tiny Llama on Tiny Shakespeare and writes it as a Hugging Face folder, for the README's
picture of an attention sink (heads that park their attention on the first token, <s>).

The model is Llama's architecture at toy size (RMSNorm, rotate_half rotary, grouped-query heads,
SwiGLU), written here in plain PyTorch; the folder (config.json, model.safetensors, a byte-level
tokenizer.json whose post-processor puts <s> first, as Llama's do) opens in attnscope like any
downloaded Llama. Training sequences start with <s>, as Llama's training documents do, which is
what lets a sink form. A few minutes on one CPU thread.

Usage: train_sink_llama.py OUT_FOLDER [--steps N] [--corpus ../shared/data/tinyshakespeare.txt]
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from decoder_common import write_tokenizer, write_weights  # noqa: E402

C, H, HKV, I, LAYERS, T, THETA = 128, 4, 2, 320, 4, 256, 10000.0
HD = C // H


def llama_logits(w, ids, V):
    """ids [B, T] -> logits [B, T, V], autograd on."""
    B, n = ids.shape
    inv = 1.0 / THETA ** (torch.arange(0, HD, 2, dtype=torch.float32) / HD)
    angle = torch.arange(n, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)

    def norm(name, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w[name + ".weight"]

    def rope(x):  # rotate_half: pairs (i, i + d/2), as Hugging Face's Llama
        half = torch.cat([-x[..., HD // 2:], x[..., :HD // 2]], -1)
        return x * cos + half * sin

    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    x = w["model.embed_tokens.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = norm(p + "input_layernorm", x)
        q = rope((h @ w[p + "self_attn.q_proj.weight"].T).view(B, n, H, HD).transpose(1, 2))
        k = rope((h @ w[p + "self_attn.k_proj.weight"].T).view(B, n, HKV, HD).transpose(1, 2))
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(B, n, HKV, HD).transpose(1, 2)
        k, v = k.repeat_interleave(H // HKV, 1), v.repeat_interleave(H // HKV, 1)
        s = (q @ k.transpose(-2, -1) / math.sqrt(HD)).masked_fill(~causal, float("-inf"))
        x = x + (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, n, C) @ w[p + "self_attn.o_proj.weight"].T
        h = norm(p + "post_attention_layernorm", x)
        gate = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    return norm("model.norm", x) @ w["lm_head.weight"].T


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--corpus", default=os.path.join(here, "..", "..", "shared", "data", "tinyshakespeare.txt"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data = np.frombuffer(open(args.corpus, "rb").read(), dtype=np.uint8).astype(np.int64)
    split = int(len(data) * 0.9)

    os.makedirs(args.out, exist_ok=True)
    V = write_tokenizer(os.path.join(args.out, "tokenizer.json"), bos="<s>")  # bytes, then <s> </s>
    bos = 256
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,), "lm_head.weight": (V, C)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (C,), p + "post_attention_layernorm.weight": (C,),
                       p + "self_attn.q_proj.weight": (C, C), p + "self_attn.k_proj.weight": (HKV * HD, C),
                       p + "self_attn.v_proj.weight": (HKV * HD, C), p + "self_attn.o_proj.weight": (C, C),
                       p + "mlp.gate_proj.weight": (I, C), p + "mlp.up_proj.weight": (I, C),
                       p + "mlp.down_proj.weight": (C, I)})
    w = {n: (torch.ones(s) if len(s) == 1 else torch.randn(s) / math.sqrt(s[-1])).requires_grad_(True)
         for n, s in shapes.items()}
    opt = torch.optim.AdamW(w.values(), lr=3e-3, weight_decay=0.1)

    def batch(lo, hi):
        starts = rng.integers(lo, hi - T, args.batch)
        seqs = np.stack([data[s:s + T - 1] for s in starts])
        return torch.from_numpy(np.concatenate([np.full((args.batch, 1), bos), seqs], 1))

    start = time.time()
    for step in range(args.steps):
        for g in opt.param_groups:  # warm-up, then cosine decay
            g["lr"] = 3e-3 * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        ids = batch(0, split)
        loss = torch.nn.functional.cross_entropy(llama_logits(w, ids, V)[:, :-1].reshape(-1, V),
                                                 ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            with torch.no_grad():
                ids = batch(split, len(data))
                val = torch.nn.functional.cross_entropy(llama_logits(w, ids, V)[:, :-1].reshape(-1, V),
                                                        ids[:, 1:].reshape(-1))
            print(f"step {step}: train {float(loss):.3f}, validation {float(val):.3f} nats/byte "
                  f"({time.time() - start:.0f} s)", flush=True)
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": V, "hidden_size": C,
              "intermediate_size": I, "num_hidden_layers": LAYERS, "num_attention_heads": H,
              "num_key_value_heads": HKV, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
              "rope_theta": THETA, "hidden_act": "silu", "tie_word_embeddings": False,
              "bos_token_id": bos, "eos_token_id": bos + 1}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    write_weights(args.out, {k: v.detach().double().numpy() for k, v in w.items()})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
