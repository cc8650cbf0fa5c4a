#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Trains a tiny T5 to "translate" a sentence into itself (copy its tokens), and writes it as a
Hugging Face folder, for the README's pictures of cross-attention and of the alignment view.

No translation model can be downloaded here, so the task is one whose alignment is known: the
decoder must find each token of the source, so a trained model's cross-attention is a diagonal,
target token t on source token t. The model is the T5 of tests/reference/t5_reference.py (its
forward is written from the published architecture and checked against attnscope there); the
tokenizer is the test fixture's Unigram tokenizer.json, so any typed sentence is a sequence of
its pieces. A few minutes on one CPU thread.

Usage: train_copy_t5.py OUT_FOLDER [--steps N]
"""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
from decoder_common import write_weights  # noqa: E402
from t5_reference import DATA, EOS, START, config, decode, encode, logits, make_weights  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--tokens", type=int, default=120, help="train on the ids 4..N (the commonest pieces)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cfg = config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4,
                 relative_attention_max_distance=32, tie_word_embeddings=False)
    W = {k: torch.tensor(v, requires_grad=True) for k, v in make_weights(cfg, 1, ("shared.weight",)).items()}
    opt = torch.optim.Adam(W.values(), lr=1e-2)
    V = cfg["vocab_size"]
    start = time.time()
    for step in range(args.steps):
        n, B = int(rng.integers(5, 13)), 24
        src = torch.from_numpy(np.concatenate([rng.integers(4, args.tokens, (B, n)), np.full((B, 1), EOS)], 1))
        dec_in = torch.cat([torch.full((B, 1), START), src[:, :-1]], 1)
        lengths = [n + 1] * B
        memory, _ = encode(W, cfg, src, lengths)
        hidden, _, _ = decode(W, cfg, memory, lengths, dec_in, lengths)
        loss = torch.nn.functional.cross_entropy(logits(W, cfg, hidden).reshape(-1, V), src.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {float(loss):.3f} ({time.time() - start:.0f} s)", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    shutil.copy(os.path.join(DATA, "unigram.json"), os.path.join(args.out, "tokenizer.json"))
    write_weights(args.out, {k: v.detach().numpy() for k, v in W.items()})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
