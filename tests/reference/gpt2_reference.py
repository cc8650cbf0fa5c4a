#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` against GPT-2 written in plain PyTorch.

Writes a tiny random GPT-2 checkpoint in the Hugging Face layout (safetensors built with json +
struct + numpy, no attnscope code, no transformers package), runs the CLI on a padded batch, and
compares attention.npy and output.npy with the Python forward pass to 1e-4 (times max(1, |value|):
tolerance.py), next-token probabilities to 1e-5. The query and key columns of c_attn are scaled up
so that attention is peaked (asserted). Variants, each compared the same way: every
activation_function of transformers' ACT2FN that attnscope accepts, n_inner,
scale_attn_by_inverse_layer_idx, and a GPT2Model checkpoint (no "transformer." prefix, no lm_head:
logits from the tied wte).
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing; under CI=true
that fails instead, exit 1: see cannot_run.py).
"""
import json
import math
import os
import struct
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    from cannot_run import cannot_run
    cannot_run(f"/usr/bin/python3 has no {e.name}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_common import check_generate  # noqa: E402
from cli_batch import cli_run  # noqa: E402
from tolerance import scaled_error  # noqa: E402

TOL = 1e-4  # attention and hidden states, as scaled_error: absolute up to 1, relative above
P_TOL = 1e-5  # next-token probabilities
L, H, C, P = 2, 4, 32, 32
QK_SCALE = 2.0  # c_attn's query and key columns: peaked attention


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


def write_folder(folder, rng, extra=None, prefix="transformer."):
    """extra: config.json fields over the defaults (activation_function, n_inner, ...)."""
    extra = extra or {}
    inner = extra.get("n_inner") or 4 * C
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
                   "vocab_size": V, "layer_norm_epsilon": 1e-5, **extra}, f)
    w = {"wte.weight": rng.normal(0, 0.5, (V, C)), "wpe.weight": rng.normal(0, 0.3, (P, C))}
    for l in range(L):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = 1 + rng.normal(0, 0.1, C)
        w[p + "ln_1.bias"] = rng.normal(0, 0.1, C)
        w[p + "attn.c_attn.weight"] = rng.normal(0, 0.3, (C, 3 * C))
        w[p + "attn.c_attn.weight"][:, : 2 * C] *= QK_SCALE  # [q | k | v] columns
        w[p + "attn.c_attn.bias"] = rng.normal(0, 0.1, 3 * C)
        w[p + "attn.c_proj.weight"] = rng.normal(0, 0.2, (C, C))
        w[p + "attn.c_proj.bias"] = rng.normal(0, 0.1, C)
        w[p + "ln_2.weight"] = 1 + rng.normal(0, 0.1, C)
        w[p + "ln_2.bias"] = rng.normal(0, 0.1, C)
        w[p + "mlp.c_fc.weight"] = rng.normal(0, 0.4, (C, inner))  # pre-activations of |x| ~ 2
        w[p + "mlp.c_fc.bias"] = rng.normal(0, 0.1, inner)
        w[p + "mlp.c_proj.weight"] = rng.normal(0, 0.1, (inner, C))
        w[p + "mlp.c_proj.bias"] = rng.normal(0, 0.1, C)
        # Learned activations keep their tensors in the MLP's "act" module (nn.PReLU, xIELU).
        act = extra.get("activation_function")
        if act == "prelu":
            w[p + "mlp.act.weight"] = np.array([rng.uniform(0.1, 0.6)])
        elif act == "xielu":
            w[p + "mlp.act.alpha_p"] = np.array([rng.normal(0, 0.5)])
            w[p + "mlp.act.alpha_n"] = np.array([rng.normal(0, 0.5)])
            w[p + "mlp.act.beta"] = np.array(0.5)
            w[p + "mlp.act.eps"] = np.array(-1e-6)
    w["ln_f.weight"] = 1 + rng.normal(0, 0.1, C)
    w["ln_f.bias"] = rng.normal(0, 0.1, C)
    w = {k: v.astype("<f4") for k, v in w.items()}
    header, data = {}, b""
    for k, v in w.items():
        header[prefix + k] = {"dtype": "F32", "shape": list(v.shape),
                                      "data_offsets": [len(data), len(data) + v.nbytes]}
        data += v.tobytes()
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    return {k: torch.from_numpy(v.astype(np.float64)) for k, v in w.items()}


SQRT_2_PI = math.sqrt(2 / math.pi)
# transformers' ACT2FN, written out (activations.py), for the names GPT-2 configs can give.
ACT = {
    "gelu": lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))),
    "gelu_python": lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))),
    "gelu_new": lambda x: 0.5 * x * (1 + torch.tanh(SQRT_2_PI * (x + 0.044715 * x ** 3))),
    "gelu_pytorch_tanh": lambda x: 0.5 * x * (1 + torch.tanh(SQRT_2_PI * (x + 0.044715 * x ** 3))),
    "gelu_fast": lambda x: 0.5 * x * (1 + torch.tanh(x * 0.7978845608 * (1 + 0.044715 * x * x))),
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
    "relu": torch.relu,
    "relu2": lambda x: torch.relu(x) ** 2,
    "silu": lambda x: x * torch.sigmoid(x),
    "swish": lambda x: x * torch.sigmoid(x),
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "linear": lambda x: x,
    "gelu_accurate": lambda x: 0.5 * x * (1 + torch.tanh(SQRT_2_PI * (x + 0.044715 * x ** 3))),
    "gelu_10": lambda x: torch.clip(0.5 * x * (1 + torch.erf(x / math.sqrt(2))), -10, 10),
    "laplace": lambda x: 0.5 * (1 + torch.erf((x - 0.707107) / (0.282095 * math.sqrt(2)))),
    "leaky_relu": lambda x: torch.where(x >= 0, x, 0.01 * x),
    "mish": lambda x: x * torch.tanh(torch.log1p(torch.exp(x))),
    "relu6": lambda x: torch.clamp(x, 0, 6),
    "gelu_python_tanh": lambda x: 0.5 * x * (1 + torch.tanh(SQRT_2_PI * (x + 0.044715 * x ** 3))),
    "hardswish": lambda x: x * torch.clamp(x + 3, 0, 6) / 6,
    "sqrtsoftplus": lambda x: torch.sqrt(torch.log1p(torch.exp(x))),
    # Learned: a: the layer's act.* tensors.
    "prelu": lambda x, a: torch.where(x >= 0, x, a["weight"] * x),
    "xielu": lambda x, a: torch.where(
        x > 0, torch.log1p(torch.exp(a["alpha_p"])) * x * x + a["beta"] * x,
        (torch.expm1(torch.minimum(x, a["eps"])) - x) * (a["beta"] + torch.log1p(torch.exp(a["alpha_n"])))
        + a["beta"] * x),
}
LEARNED = {"prelu", "xielu"}


# For each activation, the one most easily mistaken for it (the same within 1e-4 is no test).
CONFUSED_WITH = {"gelu": "gelu_new", "gelu_python": "gelu_new", "gelu_10": "gelu_new", "gelu_new": "gelu",
                 "gelu_pytorch_tanh": "gelu", "gelu_fast": "gelu", "gelu_accurate": "gelu", "quick_gelu": "gelu",
                 "relu": "leaky_relu", "leaky_relu": "relu", "relu6": "gelu", "relu2": "relu", "silu": "quick_gelu",
                 "swish": "quick_gelu", "mish": "silu", "laplace": "sigmoid", "sigmoid": "laplace", "tanh": "linear",
                 "linear": "tanh", "gelu_python_tanh": "gelu", "hardswish": "silu", "sqrtsoftplus": "relu",
                 "prelu": "leaky_relu", "xielu": "relu2"}


def gpt2_forward(w, ids, act="gelu_new", inverse_layer_idx=False):
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
        if inverse_layer_idx:  # scale_attn_by_inverse_layer_idx
            s = s / (l + 1)
        a = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
        attentions.append(a)
        y = (a @ v).transpose(0, 1).reshape(T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = ln(x, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        if act in LEARNED:
            h = ACT[act](h, {k[len(p + "mlp.act."):]: v for k, v in w.items() if k.startswith(p + "mlp.act.")})
        else:
            h = ACT[act](h)
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = ln(x, "ln_f")
    return torch.stack(attentions), x, torch.softmax(x[-1] @ w["wte.weight"].T, -1)


def peakedness(a):
    """Mean row maximum of [L, H, T, T] causal attention over the rows with at least 4 keys."""
    T = a.shape[-1]
    return float(np.mean([a[..., i, : i + 1].max(-1).mean() for i in range(3, T)]))


def compare(cli, tmp, name, failures, extra=None, prefix="transformer.", seed=7, kernel=None):
    """Writes one folder, runs the CLI on a padded batch and compares everything. Returns the
    model folder and the largest difference seen. kernel: ATTNSCOPE_ATTENTION_KERNEL for this run
    (None: the environment's)."""
    extra = extra or {}
    act = extra.get("activation_function", "gelu_new")
    inverse = extra.get("scale_attn_by_inverse_layer_idx", False)
    model, dump = os.path.join(tmp, name), os.path.join(tmp, name + "-dump")
    os.mkdir(model)
    w = write_folder(model, np.random.default_rng(seed), extra, prefix)
    texts = ["he said the thing to the other one", "the end", "x"]
    js = os.path.join(tmp, name + "-run.json")
    args = [cli, "run", "--model", model, "--json", js, "--dump", dump]
    for t in texts:
        args += ["--text", t]
    env = dict(os.environ, ATTNSCOPE_ATTENTION_KERNEL=kernel) if kernel else None
    cli_run(args, env=env).check_returncode()
    attention = np.load(os.path.join(dump, "attention.npy"))  # [L, B, H, T, T]
    output = np.load(os.path.join(dump, "output.npy"))        # [B, T, C]
    with open(os.path.join(dump, "tokens.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    with open(js, encoding="utf-8") as f:
        run = json.load(f)
    Tmax = attention.shape[-1]
    worst = 0.0
    for b, item in enumerate(tokens):
        ids = [t["id"] for t in item]
        T = len(ids)
        a, hidden, probs = gpt2_forward(w, ids, act, inverse)
        got = attention[:, b, :, :T, :T]
        err = scaled_error(got, a)
        worst = max(worst, err)
        if err > TOL:
            failures.append(f"{name} item {b}: attention differs by {err}")
        if np.abs(attention[:, b, :, T:, :]).max(initial=0) != 0 or np.abs(attention[:, b, :, :, T:]).max(initial=0) != 0:
            failures.append(f"{name} item {b}: padding is not zero")
        err = scaled_error(output[b, :T], hidden)
        worst = max(worst, err)
        if err > TOL:
            failures.append(f"{name} item {b}: output differs by {err}")
        if b == 0:
            # The nearest other activation must be out of tolerance (the same measure and TOL as
            # the output check above): the case can tell them apart.
            other = CONFUSED_WITH.get(act, "gelu")
            _, wrong, _ = gpt2_forward(w, ids, other, inverse)
            if scaled_error(output[b, :T], wrong) <= TOL:
                failures.append(f"{name}: the output is within tolerance of {other}'s too")
            peak = peakedness(a.numpy())
            if peak < 0.5:
                failures.append(f"{name}: reference attention is not peaked (mean row max {peak:.2f})")
            top = torch.topk(probs, 5)
            want = [int(i) for i in top.indices]
            got_ids = [p["id"] for p in run["next_token"]]
            if got_ids != want:
                failures.append(f"{name}: next tokens {got_ids}, want {want}")
            err = p_err = scaled_error([p["p"] for p in run["next_token"]],
                                       [float(probs[p["id"]]) for p in run["next_token"]])
            if err > P_TOL:
                failures.append(f"{name}: next-token probabilities differ by {err}")
    if attention.shape != (L, len(texts), H, Tmax, Tmax):
        failures.append(f"{name}: attention shape {attention.shape}")
    print(f"{name:28s} max |diff|/max(1,|want|) {worst:.2e}  peak {peakedness(attention[:, 0, :, :len(tokens[0]), :len(tokens[0])]):.2f}  "
          f"p diff {p_err:.1e}")
    return model


def main():
    cli = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model = compare(cli, tmp, "tiny-gpt2", failures)
        # Both attention kernels (CMake names the blocked one for the whole script).
        compare(cli, tmp, "tiny-gpt2-reference-kernel", failures, kernel="reference")
        # `generate` through the key/value cache: learned positions offset by the cached length.
        gen = os.path.join(tmp, "generate")
        os.mkdir(gen)
        gw = write_folder(gen, np.random.default_rng(7), {})
        report = []
        check_generate(cli, gen, "he said the thing", lambda ids: gpt2_forward(gw, ids)[::2], "tiny-gpt2",
                       failures, report)
        print(*report, sep="\n")
        for i, act in enumerate(sorted(ACT)):
            compare(cli, tmp, "act-" + act, failures, {"activation_function": act}, seed=100 + i)
        compare(cli, tmp, "n_inner", failures, {"n_inner": 48, "activation_function": "gelu"}, seed=8)
        compare(cli, tmp, "inverse-layer-idx", failures, {"scale_attn_by_inverse_layer_idx": True}, seed=9)
        # GPT2Model: saved without "transformer." and without lm_head; logits from the tied wte.
        compare(cli, tmp, "gpt2model-no-head", failures, {"architectures": ["GPT2Model"]}, prefix="", seed=10)
        # The variants must matter: the reference with the wrong choice differs from the right one.
        probe = os.path.join(tmp, "probe")
        os.mkdir(probe)
        w = write_folder(probe, np.random.default_rng(9), {})
        ids = [256, 257, 258, 1, 2, 3, 4, 5]
        a1, _, _ = gpt2_forward(w, ids, "gelu_new", True)
        a0, _, _ = gpt2_forward(w, ids, "gelu_new", False)
        if scaled_error(a1, a0) < 0.05:  # attention: |diff|
            failures.append("scale_attn_by_inverse_layer_idx does not change the reference: the case is too weak")
        # The CLI's tokenize uses the folder's BPE.
        out = os.path.join(tmp, "tokens.json")
        cli_run([cli, "tokenize", "--model", model, "--text", "he the", "--json", out]).check_returncode()
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
