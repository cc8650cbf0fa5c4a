# SPDX-License-Identifier: GPL-3.0-or-later
"""What the encoder-decoder reference tests (t5_reference.py, bart_reference.py) share: running
`attnscope-cli run --dump` and reading its five arrays, padded masks and batches, and comparing
attention blocks with their padding. No attnscope code."""
import json
import os
import subprocess

import numpy as np
import torch


def key_mask(lengths, Tq, Tk, causal):
    m = torch.zeros(len(lengths), 1, Tq, Tk, dtype=torch.float64)
    for b, n in enumerate(lengths):
        m[b, :, :, n:] = float("-inf")
    if causal:
        m = m.masked_fill(torch.ones(Tq, Tk).tril() == 0, float("-inf"))
    return m


def padded(rows):
    T = max(len(r) for r in rows)
    return torch.tensor([r + [0] * (T - len(r)) for r in rows]), [len(r) for r in rows]


def run_cli(cli, folder, out, sources, extra):
    """`run --model folder --text ... --dump --json` plus extra flags. Returns the five dumped arrays,
    tokens.json, decoder_tokens.json, run.json and stdout."""
    os.makedirs(out, exist_ok=True)
    dump, js = os.path.join(out, "dump"), os.path.join(out, "run.json")
    args = [cli, "run", "--model", folder, "--dump", dump, "--json", js, *extra]
    for s in sources:
        args += ["--text", s]
    p = subprocess.run(args, capture_output=True, text=True, errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    load = lambda n: np.load(os.path.join(dump, n))
    tok = lambda n: json.load(open(os.path.join(dump, n), encoding="utf-8"))
    return ({"self": load("attention.npy"), "decoder_self": load("decoder_attention.npy"),
             "cross": load("cross_attention.npy"), "output": load("output.npy"),
             "decoder_output": load("decoder_output.npy")},
            tok("tokens.json"), tok("decoder_tokens.json"), json.load(open(js, encoding="utf-8")), p.stdout)


def compare(name, got, want, rows, cols):
    """Max |got - want| over the real [rows, cols] block of each item; the padding must be 0."""
    worst = 0.0
    for b in range(got.shape[1]):
        g, w = got[:, b], want[:, b].numpy()
        worst = max(worst, float(np.abs(g[..., : rows[b], : cols[b]] - w[..., : rows[b], : cols[b]]).max()))
        pad = np.concatenate([g[..., rows[b]:, :].ravel(), g[..., :, cols[b]:].ravel()])
        if pad.size and np.any(pad != 0):
            raise AssertionError(f"{name}: item {b} has nonzero padding")
    return worst


