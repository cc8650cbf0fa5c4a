#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` against GPT-2 written in plain PyTorch.

Writes a tiny random GPT-2 checkpoint in the Hugging Face layout (safetensors built with json +
struct + numpy, no attnscope code, no transformers package), runs the CLI on a padded batch,
and compares attention.npy and output.npy with the Python forward pass to 1e-4.
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

L, H, C, P = 2, 4, 32, 32


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_folder(folder, rng):
    b2u = bytes_to_unicode()
    sym = lambda s: "".join(b2u[b] for b in s.encode())
    vocab = {b2u[b]: b for b in range(256)}
    vocab.update({sym("he"): 256, sym(" t"): 257, sym(" the"): 258})
    V = len(vocab)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write(f"#version: 0.2\nh e\n{sym(' ')} t\n{sym(' t')} he\n")
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "gpt2", "n_layer": L, "n_head": H, "n_embd": C, "n_ctx": P,
                   "vocab_size": V, "layer_norm_epsilon": 1e-5}, f)
    w = {"wte.weight": rng.normal(0, 0.5, (V, C)), "wpe.weight": rng.normal(0, 0.3, (P, C))}
    for l in range(L):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = 1 + rng.normal(0, 0.1, C)
        w[p + "ln_1.bias"] = rng.normal(0, 0.1, C)
        w[p + "attn.c_attn.weight"] = rng.normal(0, 0.3, (C, 3 * C))
        w[p + "attn.c_attn.bias"] = rng.normal(0, 0.1, 3 * C)
        w[p + "attn.c_proj.weight"] = rng.normal(0, 0.2, (C, C))
        w[p + "attn.c_proj.bias"] = rng.normal(0, 0.1, C)
        w[p + "ln_2.weight"] = 1 + rng.normal(0, 0.1, C)
        w[p + "ln_2.bias"] = rng.normal(0, 0.1, C)
        w[p + "mlp.c_fc.weight"] = rng.normal(0, 0.2, (C, 4 * C))
        w[p + "mlp.c_fc.bias"] = rng.normal(0, 0.1, 4 * C)
        w[p + "mlp.c_proj.weight"] = rng.normal(0, 0.1, (4 * C, C))
        w[p + "mlp.c_proj.bias"] = rng.normal(0, 0.1, C)
    w["ln_f.weight"] = 1 + rng.normal(0, 0.1, C)
    w["ln_f.bias"] = rng.normal(0, 0.1, C)
    w = {k: v.astype("<f4") for k, v in w.items()}
    header, data = {}, b""
    for k, v in w.items():
        header["transformer." + k] = {"dtype": "F32", "shape": list(v.shape),
                                      "data_offsets": [len(data), len(data) + v.nbytes]}
        data += v.tobytes()
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    return {k: torch.from_numpy(v.astype(np.float64)) for k, v in w.items()}


def gpt2_forward(w, ids):
    """The textbook GPT-2 forward (Hugging Face's GPT2LMHeadModel) in float64."""
    T = len(ids)
    x = w["wte.weight"][ids] + w["wpe.weight"][:T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    attentions = []
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (C,), w[p + ".weight"], w[p + ".bias"], 1e-5)
    for l in range(L):
        p = f"h.{l}."
        qkv = ln(x, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        heads = lambda t: t.view(T, H, C // H).transpose(0, 1)
        q, k, v = heads(q), heads(k), heads(v)
        s = (q @ k.transpose(-2, -1)) / (C // H) ** 0.5
        a = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
        attentions.append(a)
        y = (a @ v).transpose(0, 1).reshape(T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = ln(x, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        h = torch.nn.functional.gelu(h, approximate="tanh")
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = ln(x, "ln_f")
    return torch.stack(attentions), x, torch.softmax(x[-1] @ w["wte.weight"].T, -1)


def main():
    cli = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model, dump = os.path.join(tmp, "tiny-gpt2"), os.path.join(tmp, "dump")
        os.mkdir(model)
        w = write_folder(model, np.random.default_rng(7))
        texts = ["he said the thing", "the end", "x"]
        args = [cli, "run", "--model", model, "--json", os.path.join(tmp, "run.json"), "--dump", dump]
        for t in texts:
            args += ["--text", t]
        subprocess.run(args, check=True)
        attention = np.load(os.path.join(dump, "attention.npy"))  # [L, B, H, T, T]
        output = np.load(os.path.join(dump, "output.npy"))        # [B, T, C]
        with open(os.path.join(dump, "tokens.json"), encoding="utf-8") as f:
            tokens = json.load(f)
        with open(os.path.join(tmp, "run.json"), encoding="utf-8") as f:
            run = json.load(f)
        Tmax = attention.shape[-1]
        for b, item in enumerate(tokens):
            ids = [t["id"] for t in item]
            T = len(ids)
            a, hidden, probs = gpt2_forward(w, ids)
            got = attention[:, b, :, :T, :T]
            err = np.abs(got - a.numpy()).max()
            if err > 1e-4:
                failures.append(f"item {b}: attention differs by {err}")
            if np.abs(attention[:, b, :, T:, :]).max(initial=0) != 0 or np.abs(attention[:, b, :, :, T:]).max(initial=0) != 0:
                failures.append(f"item {b}: padding is not zero")
            err = np.abs(output[b, :T] - hidden.numpy()).max()
            if err > 1e-4:
                failures.append(f"item {b}: output differs by {err}")
            if b == 0:
                top = torch.topk(probs, 5)
                want = [int(i) for i in top.indices]
                got_ids = [p["id"] for p in run["next_token"]]
                if got_ids != want:
                    failures.append(f"next tokens {got_ids}, want {want}")
                err = max(abs(p["p"] - float(probs[p["id"]])) for p in run["next_token"])
                if err > 1e-5:
                    failures.append(f"next-token probabilities differ by {err}")
        if attention.shape != (L, len(texts), H, Tmax, Tmax):
            failures.append(f"attention shape {attention.shape}")
        # The CLI's tokenize uses the folder's BPE.
        out = os.path.join(tmp, "tokens.json")
        subprocess.run([cli, "tokenize", "--model", model, "--text", "he the", "--json", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out, encoding="utf-8") as f:
            ids = json.load(f)["ids"]
        if ids != [256, 258]:
            failures.append(f"tokenize --model gave {ids}, want [256, 258]")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
