#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shows by its loss that attnscope's rotary positions are the right ones.

Trains (plain PyTorch, a few hundred Adam steps, a few seconds) a tiny llama-shaped model (RMSNorm,
rotary with rotate_half, grouped-query heads, SwiGLU) on a task that needs relative positions:
each sequence repeats a random pattern of period P, so after the first period every next token is
the one P - 1 positions back. The weights are written as a Hugging Face llama checkpoint; the CLI
runs it with --dump, and the next-token loss is computed from its final hidden states
(output.npy @ lm_headᵀ). It must equal the loss of the same weights evaluated here with the right
convention (rotate_half: pairs (i, i + d/2)) to 1e-3 (times max(1, loss): tolerance.py), while
the wrong convention (interleaved pairs (2i, 2i + 1), Meta's original and GPT-J's) must give a
clearly higher loss (by at least 0.5 nats per token) on the same weights. `run --generate 9` on
two periods must print the pattern's next nine symbols and run on all the tokens. A model without
positions could not learn the task; one that has learnt it exposes any other rotary variant.

Usage: rotary_loss_reference.py ATTNSCOPE_CLI
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing; under CI=true
that fails instead, exit 1: see cannot_run.py).
"""
import json
import math
import os
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
except ImportError as e:
    from cannot_run import cannot_run
    cannot_run(f"/usr/bin/python3 has no {e.name}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_common import run_cli, write_tokenizer, write_weights  # noqa: E402
from decoder_reference import llama_forward, rms, rotate, silu  # noqa: E402
from tolerance import scaled_error  # noqa: E402

P, T, ALPHABET = 7, 36, "abcd"  # period, sequence length, symbols (their byte ids)
C, H, HKV, I, LAYERS = 64, 4, 2, 96, 2
HD = C // H
THETA = 100.0  # higher frequencies than 10000 suit 36 positions
STEPS, BATCH = 200, 24


def config(V):
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": V, "hidden_size": C,
            "intermediate_size": I, "num_hidden_layers": LAYERS, "num_attention_heads": H,
            "num_key_value_heads": HKV, "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": THETA,
            "hidden_act": "silu", "tie_word_embeddings": False}


def batch_forward(w, ids, convention):
    """ids [B, T] -> logits [B, T, V]; float32 with autograd (training)."""
    B, T_ = ids.shape
    inv = 1.0 / THETA ** (torch.arange(0, HD, 2, dtype=torch.float32) / HD)
    x = w["model.embed_tokens.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = rms(w, p + "input_layernorm", x, 1e-5)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(B, T_, H, HD).transpose(1, 2)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(B, T_, HKV, HD).transpose(1, 2)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(B, T_, HKV, HD).transpose(1, 2)
        q, k = rotate(q, HD, inv, convention), rotate(k, HD, inv, convention)
        k, v = k.repeat_interleave(H // HKV, 1), v.repeat_interleave(H // HKV, 1)
        s = q @ k.transpose(-2, -1) / math.sqrt(HD)
        s = s.masked_fill(~torch.tril(torch.ones(T_, T_, dtype=torch.bool)), float("-inf"))
        o = torch.softmax(s, -1) @ v
        x = x + o.transpose(1, 2).reshape(B, T_, C) @ w[p + "self_attn.o_proj.weight"].T
        h = rms(w, p + "post_attention_layernorm", x, 1e-5)
        g = silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)
        x = x + g @ w[p + "mlp.down_proj.weight"].T
    return rms(w, "model.norm", x, 1e-5) @ w["lm_head.weight"].T


def sequences(rng, n):
    ids = [ord(c) for c in ALPHABET]
    out = []
    for _ in range(n):
        pattern = [ids[j] for j in rng.integers(0, len(ids), P)]
        out.append((pattern * (T // P + 1))[:T])
    return out


def loss_after_first_period(logits, ids):
    """Mean next-token cross-entropy over the targets at positions >= P (predictable ones)."""
    logits = logits[P - 1:-1]
    targets = torch.tensor(ids[P:])
    return float(torch.nn.functional.cross_entropy(logits, targets))


def main():
    cli = sys.argv[1]
    failures = []
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "rotary-llama")
        os.mkdir(model)
        V = write_tokenizer(os.path.join(model, "tokenizer.json"))  # ids are the bytes: 'a' = 97
        cfg = config(V)
        shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,), "lm_head.weight": (V, C)}
        for i in range(LAYERS):
            p = f"model.layers.{i}."
            shapes.update({p + "input_layernorm.weight": (C,), p + "post_attention_layernorm.weight": (C,),
                           p + "self_attn.q_proj.weight": (H * HD, C), p + "self_attn.k_proj.weight": (HKV * HD, C),
                           p + "self_attn.v_proj.weight": (HKV * HD, C), p + "self_attn.o_proj.weight": (C, H * HD),
                           p + "mlp.gate_proj.weight": (I, C), p + "mlp.up_proj.weight": (I, C),
                           p + "mlp.down_proj.weight": (C, I)})
        w = {}
        for name, shape in shapes.items():
            w[name] = (torch.ones(shape) if len(shape) == 1 else torch.randn(shape) / math.sqrt(shape[-1]))
            w[name].requires_grad_(True)
        opt = torch.optim.Adam(w.values(), lr=5e-3)
        for step in range(STEPS):
            ids = torch.tensor(sequences(rng, BATCH))
            logits = batch_forward(w, ids, "half")
            loss = torch.nn.functional.cross_entropy(logits[:, P - 1:-1].reshape(-1, V), ids[:, P:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"trained {STEPS} steps in {time.time() - start:.1f} s, last batch loss {float(loss):.3f}")
        with open(os.path.join(model, "config.json"), "w") as f:
            json.dump(cfg, f)
        stored = write_weights(model, {k: v.detach().double().numpy() for k, v in w.items()})

        texts = ["".join(chr(i) for i in s) for s in sequences(np.random.default_rng(123), 3)]
        _, output, tokens, _, _ = run_cli(cli, model, texts, tmp)
        got, right, wrong = [], [], []
        for b, item in enumerate(tokens):
            ids = [t["id"] for t in item]
            if len(ids) != T:
                failures.append(f"text {b} tokenized into {len(ids)} tokens, want {T}")
                continue
            hidden = torch.from_numpy(output[b, :T].astype(np.float64))
            got.append(loss_after_first_period(hidden @ stored["lm_head.weight"].T, ids))
            right.append(loss_after_first_period(llama_forward(cfg, stored, ids, convention="half")[2], ids))
            wrong.append(loss_after_first_period(llama_forward(cfg, stored, ids, convention="interleaved")[2], ids))
        got, right, wrong = (float(np.mean(v)) for v in (got, right, wrong))
        print(f"loss per token after the first period: attnscope {got:.4f}, rotate_half {right:.4f}, "
              f"interleaved pairs {wrong:.4f} (uniform over 4 symbols: {math.log(4):.3f})")
        if right > 0.5:
            failures.append(f"the model did not learn the task (loss {right:.3f}): the test proves nothing")
        if scaled_error(got, right) > 1e-3:  # a learnt loss is below 1: |got - right|
            failures.append(f"attnscope's loss {got:.4f} differs from the rotate_half loss {right:.4f}")
        if wrong < right + 0.5:
            failures.append(f"the wrong convention's loss {wrong:.4f} is not clearly above {right:.4f}")
        # --generate continues the pattern greedily: the model has learnt it, so the continuation
        # is known without running a reference.
        seq = texts[0]
        _, _, generated, _, stdout = run_cli(cli, model, [seq[:2 * P]], tmp, ["--generate", "9"])
        want = seq[2 * P:2 * P + 9]
        line = next((l for l in stdout.splitlines() if l.startswith("generated after text 1: ")), "")
        if line != "generated after text 1: " + want:
            failures.append(f"--generate 9 printed {line!r}, want the pattern's continuation {want!r}")
        if len(generated[0]) != 2 * P + 9:
            failures.append(f"after --generate 9 the run has {len(generated[0])} tokens, want {2 * P + 9}")
    print(f"total {time.time() - start:.1f} s")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
