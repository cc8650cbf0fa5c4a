#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli analyze --measure ablation [--estimate]` against plain PyTorch.

For Llama (grouped-query heads), GPT-NeoX, Bloom (ALiBi), BERT, RoBERTa, DistilBERT and ALBERT
(one layer shared by every depth) it writes the tiny random checkpoints of decoder_reference.py
and encoder_reference.py and reruns their float64 forward passes whole, with head h of layer l's
output (attention @ v, before the output projection) multiplied by m[l, h]:
  - exact: m[l, h] = 0, one full forward per head; every probability of the unablated top-1 token
    (decoders: after the last position; encoders: the fill of the first mask) to 1e-5;
  - estimate: m = 1 with torch.autograd, −∂ log p / ∂m[l, h] to 1e-4 (relative 1e-3).
No attnscope code, no transformers package. It also checks that ablation changes the probability
by more than the tolerance somewhere (so the comparison can fail) and the refusals of a
headless encoder and of a text without a mask.

Usage: ablation_reference.py ATTNSCOPE_CLI [KEEP_DIR]
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing; under CI=true
that fails instead, exit 1: see cannot_run.py).
"""
import json
import os
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    from cannot_run import cannot_run
    cannot_run(f"/usr/bin/python3 has no {e.name}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decoder_reference as dec  # noqa: E402
import encoder_reference as enc  # noqa: E402
from cli_batch import cli_run  # noqa: E402
from tolerance import scaled_error  # noqa: E402

P_TOL = 1e-5  # probabilities, as scaled_error (tolerance.py; at most 1, so |diff|)
# −∂ log p / ∂m as |diff| / (1 + 10 |want|): already an absolute-plus-relative tolerance (1e-4
# absolute near 0, 1e-3 relative for large slopes), scaled to the magnitude; kept as it was.
GRAD_TOL = 1e-4
DECODERS = ("llama-f32-gqa", "neox-parallel", "bloom-6-heads")
ENCODERS = ("bert", "roberta", "distilbert", "albert")


class HeadScale:
    """Replaces a reference module's attend() while active: the i-th call (layer i) returns its
    per-head output multiplied by scale[i] ([H]). Decoders' attend returns [H, T, hd]; encoders'
    returns the heads concatenated, [T, H·hd]."""

    def __init__(self, module, scale, concatenated):
        self.module, self.scale, self.concatenated = module, scale, concatenated

    def __enter__(self):
        self.original, calls = self.module.attend, [0]

        def attend(*args, **kwargs):
            a, o = self.original(*args, **kwargs)
            m = self.scale[calls[0]]
            calls[0] += 1
            if self.concatenated:
                T, C = o.shape
                o = (o.view(T, m.shape[0], C // m.shape[0]) * m[None, :, None]).view(T, C)
            else:
                o = o * m[:, None, None]
            return a, o

        self.module.attend = attend
        return self

    def __exit__(self, *exc):
        self.module.attend = self.original


def cli_ablation(cli, model, text, out, estimate):
    js = os.path.join(out, "ablation-estimate.json" if estimate else "ablation.json")
    args = [cli, "analyze", "--model", model, "--text", text, "--measure", "ablation", "--json", js]
    if estimate:
        args.append("--estimate")
    p = cli_run(args)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    with open(js, encoding="utf-8") as f:
        return json.load(f)


def check_model(name, cli, model, text, logits_of, module, concatenated, L, H, failures, report):
    """logits_of(ids) -> [V] logits at the position read (the reference's, float64) and that
    position; evaluated under HeadScale."""
    exact = cli_ablation(cli, model, text, model, False)
    estimate = cli_ablation(cli, model, text, model, True)
    ids = [t["id"] for t in exact["tokens"]]
    a, e = exact["ablation"], estimate["ablation"]
    ones = torch.ones(L, H, dtype=torch.float64)
    with HeadScale(module, ones, concatenated):
        logits, position = logits_of(ids)
    target = int(torch.argmax(logits))
    base = torch.log_softmax(logits, -1)[target].item()
    if a["token"] != target or e["token"] != target:
        failures.append(f"{name}: top-1 token {a['token']} / {e['token']}, reference {target}")
        return
    if a["position"] != position:
        failures.append(f"{name}: reads position {a['position']}, reference {position}")
    worst, moved = scaled_error(a["baseline"], np.exp(base)), 0.0
    for l in range(L):
        for h in range(H):
            m = ones.clone()
            m[l, h] = 0
            with HeadScale(module, m, concatenated):
                p = torch.softmax(logits_of(ids)[0], -1)[target].item()
            worst = max(worst, scaled_error(a["heads"][l][h], p))
            moved = max(moved, scaled_error(p, np.exp(base)))  # measured as worst is
    if worst > P_TOL:
        failures.append(f"{name}: exact ablation differs by {worst:.3g}")
    if moved < 100 * P_TOL:
        failures.append(f"{name}: no head moves p by more than {moved:.3g}: the check cannot fail")
    m = ones.clone().requires_grad_(True)
    with HeadScale(module, m, concatenated):
        logp = torch.log_softmax(logits_of(ids)[0], -1)[target]
    slope = torch.autograd.grad(logp, m)[0]
    grad_worst = 0.0
    for l in range(L):
        for h in range(H):
            want = -slope[l, h].item()
            err = abs(e["log_prob_change"][l][h] - want)
            grad_worst = max(grad_worst, err / (1 + 10 * abs(want)))
    if grad_worst > GRAD_TOL:
        failures.append(f"{name}: estimate differs from −∂log p/∂m by {grad_worst:.3g} (relative to 1 + 10|·|)")
    report.append(f"{name}: exact worst {worst:.2e}, largest change {moved:.3f}; estimate worst {grad_worst:.2e}")


def main():
    cli = sys.argv[1]
    failures, report = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = sys.argv[2] if len(sys.argv) > 2 else tmp
        os.makedirs(root, exist_ok=True)
        V = dec.write_tokenizer(os.path.join(tmp, "probe.json"), dec.WORDS)
        for case in dec.cases(V):
            name, family, cfg, make, fmt, prefix, _, _ = case
            if name not in DECODERS:
                continue
            d = os.path.join(root, name)
            os.makedirs(d)
            dec.write_tokenizer(os.path.join(d, "tokenizer.json"), dec.WORDS,
                                bos="<s>" if family == "llama" else None)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f, indent=1)
            w = dec.write_weights(d, make(), fmt)
            L = cfg.get("num_hidden_layers", cfg.get("n_layer"))
            H = cfg.get("num_attention_heads", cfg.get("n_head"))
            forward = dec.FORWARD[family]

            def logits_of(ids, forward=forward, cfg=cfg, w=w, prefix=prefix):
                return forward(cfg, w, ids, prefix)[2][-1], len(ids) - 1

            try:
                check_model(name, cli, d, dec.TEXTS[0], logits_of, dec, False, L, H, failures, report)
            except Exception as e:  # one broken case must not hide the others
                failures.append(f"{name}: {e}")
        models = enc.make_models(os.path.join(root, "encoders"))
        for m in models:
            if m["name"] not in ENCODERS:
                continue
            mask = "<mask>" if m["family"] == "roberta" else "[MASK]"

            def logits_of(ids, m=m):
                position = ids.index(m["mask_id"])
                logits = enc.forward(m["family"], m["cfg"], m["w"], ids, [0] * len(ids))[2]
                return logits[position], position

            try:
                check_model(m["name"], cli, m["dir"], enc.MASK_TEXT.format(mask), logits_of, enc, True,
                            enc.L, enc.H, failures, report)
            except Exception as e:
                failures.append(f"{m['name']}: {e}")
        headless = next(m["dir"] for m in models if m["name"] == "bert-model")
        bert = next(m["dir"] for m in models if m["name"] == "bert")
        for model, text, want in ((headless, enc.MASK_TEXT.format("[MASK]"), "no masked-language-model head"),
                                  (bert, enc.SINGLE, "put [MASK] in the text")):
            p = cli_run([cli, "analyze", "--model", model, "--text", text, "--measure", "ablation"])
            if p.returncode != 2 or want not in p.stderr:
                failures.append(f"ablation of {os.path.basename(model)} on '{text}': exit {p.returncode}, "
                                f"wanted 2 and '{want}': {p.stderr.strip()}")
    for line in report:
        print(line)
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
