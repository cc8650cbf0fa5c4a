#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs attnscope-cli with --dump, then rebuilds the same layer from the source texts' PyTorch
modules (the tutorial's fused MultiheadAttention, the chapter's Head/MultiHeadAttention), loads
our weights.safetensors with load_state_dict(strict=True), and compares attention and output to
1e-5, as tolerance.py's scaled_error: absolute up to 1, relative above."""
import json, math, struct, sys, tempfile, os

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    from cannot_run import cannot_run
    cannot_run(f"/usr/bin/python3 has no {e.name}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_batch import cli_run  # noqa: E402
from tolerance import scaled_error  # noqa: E402

CLI = sys.argv[1]
TOL = 1e-5


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        b, e = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[base + b:base + e], dtype="<f4").copy()).reshape(info["shape"])
    return out


class TutorialMultiheadAttention(nn.Module):
    def __init__(self, input_dim, d_model, num_heads):
        super().__init__()
        self.num_heads, self.head_dim, self.d_model = num_heads, d_model // num_heads, d_model
        self.qkv_layer = nn.Linear(input_dim, 3 * d_model)
        self.linear_layer = nn.Linear(d_model, d_model)

    def split(self, x):
        B, T, _ = x.size()
        qkv = self.qkv_layer(x).reshape(B, T, self.num_heads, 3 * self.head_dim).permute(0, 2, 1, 3)
        return qkv.chunk(3, dim=-1)

    def forward(self, x, mask, scale, context=None):
        B, T, _ = x.size()
        q, k, v = self.split(x)
        if context is not None:
            _, k, v = self.split(context)
        scaled = q @ k.transpose(-2, -1) * scale + mask
        attention = F.softmax(scaled, dim=-1)
        values = (attention @ v).permute(0, 2, 1, 3).reshape(B, T, self.d_model)
        return self.linear_layer(values), attention


class Head(nn.Module):
    def __init__(self, n_embd, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)

    def forward(self, x, mask, scale, context):
        src = x if context is None else context
        k, q = self.key(src), self.query(x)
        wei = F.softmax(q @ k.transpose(-2, -1) * scale + mask, dim=-1)
        return wei @ self.value(src), wei


class ChapterMultiHeadAttention(nn.Module):
    def __init__(self, n_embd, d_model, num_heads):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, d_model // num_heads) for _ in range(num_heads)])
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask, scale, context=None):
        outs = [h(x, mask[:, 0], scale, context) for h in self.heads]
        return self.proj(torch.cat([o for o, _ in outs], dim=-1)), torch.stack([w for _, w in outs], 1)


def check(name, flags, texts, context=None):
    with tempfile.TemporaryDirectory() as d:
        args = [CLI, "run", "--device", "cpu", "--dump", d] + flags
        for t in texts:
            args += ["--text", t]
        if context:
            args += ["--context", context]
        cli_run(args).check_returncode()
        cfg = dict(zip(flags[0::2], flags[1::2]))
        input_dim, d_model, heads = int(cfg["--input-dim"]), int(cfg["--d-model"]), int(cfg["--heads"])
        hd = d_model // heads
        scale = 1 / math.sqrt(d_model if cfg.get("--scale") == "embd" else hd)
        fused = cfg["--variant"] == "fused"
        m = (TutorialMultiheadAttention if fused else ChapterMultiHeadAttention)(input_dim, d_model, heads)
        m.load_state_dict(read_safetensors(os.path.join(d, "weights.safetensors")), strict=True)
        x = torch.from_numpy(np.load(os.path.join(d, "input.npy")))
        ctx = torch.from_numpy(np.load(os.path.join(d, "context.npy"))) if context else None
        tokens = json.load(open(os.path.join(d, "tokens.json")))
        B, Tq = x.shape[0], x.shape[1]
        Tk = ctx.shape[1] if ctx is not None else Tq
        key_len = [Tk] * B if ctx is not None else [len(t) for t in tokens]
        mask = torch.zeros(B, 1, Tq, Tk)
        for b in range(B):
            mask[b, :, :, key_len[b]:] = float("-inf")
        if cfg.get("--mask") == "causal" and ctx is None:  # causal orders a sequence against itself
            mask = mask.masked_fill(torch.ones(Tq, Tk).tril() == 0, float("-inf"))
        with torch.no_grad():
            out, att = m(x, mask, scale, ctx)
        ours_att = np.load(os.path.join(d, "attention.npy"))[0]
        ours_out = np.load(os.path.join(d, "output.npy"))
        worst = 0.0
        for b in range(B):
            n = len(tokens[b])
            worst = max(worst, scaled_error(ours_att[b, :, :n], att[b, :, :n]),
                        scaled_error(ours_out[b, :n], out[b, :n]))
        status = "ok" if worst < TOL else "FAIL"
        print(f"{status}: {name}: max |ours - pytorch| / max(1, |pytorch|) = {worst:.2e}")
        return worst < TOL


cases = [
    ("tutorial fused, no mask", ["--variant", "fused", "--input-dim", "48", "--d-model", "32", "--heads", "4", "--mask", "none"], ["the cat sat on the mat"]),
    ("chapter per-head, causal", ["--variant", "per-head", "--input-dim", "64", "--d-model", "64", "--heads", "4", "--mask", "causal"], ["To be, or not to be"]),
    ("chapter per-head, C**-0.5 scale", ["--variant", "per-head", "--input-dim", "64", "--d-model", "64", "--heads", "4", "--mask", "causal", "--scale", "embd"], ["scale matters"]),
    ("fused batch of 3 with padding", ["--variant", "fused", "--input-dim", "16", "--d-model", "24", "--heads", "3", "--mask", "causal", "--seed", "9"], ["short", "a longer sentence here", "mid size"]),
    ("per-head batch with padding, word tokens", ["--variant", "per-head", "--input-dim", "20", "--d-model", "16", "--heads", "2", "--mask", "none", "--tokenizer", "word"], ["one two three four", "five six"]),
    ("fused cross-attention", ["--variant", "fused", "--input-dim", "32", "--d-model", "32", "--heads", "4", "--mask", "none"], ["le chat", "the dog barks"], "a context sentence"),
    ("per-head cross-attention", ["--variant", "per-head", "--input-dim", "32", "--d-model", "32", "--heads", "2", "--mask", "none"], ["queries here"], "keys and values"),
    ("fused cross-attention, --mask causal (self-attention only)", ["--variant", "fused", "--input-dim", "32", "--d-model", "32", "--heads", "4", "--mask", "causal"], ["le chat", "the dog barks"], "a much longer context sentence"),
    ("per-head cross-attention, --mask causal (self-attention only)", ["--variant", "per-head", "--input-dim", "32", "--d-model", "32", "--heads", "2", "--mask", "causal"], ["queries"], "keys and values"),
]
ok = all([check(*c) for c in cases])
print(f"{sum(1 for _ in cases)} reference comparisons: {'all within 1e-5 · max(1, |value|)' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
