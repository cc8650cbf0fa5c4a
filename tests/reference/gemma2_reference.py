#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` on Gemma 2 and Gemma 3 text checkpoints against plain PyTorch.

The same check as decoder_reference.py (whose case runner, weight writer and Gemma tokenizer it
uses): tiny random checkpoints in the Hugging Face layout, a padded batch through the CLI, every
layer's attention, the final hidden states, the top-5 next tokens with their probabilities and the
value norms against a float64 forward written here from the published architecture
(transformers' Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration's language
model), to 1e-4 as tolerance.py measures it.

Gemma 2 / 3 in float64, per layer i:
  h = x + post_attention_layernorm(attn(input_layernorm(x)))
  out = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))
with every RMSNorm's gain (1 + w), embeddings times float32(sqrt(hidden)), tanh GeGLU, scores
q·kᵀ · query_pre_attn_scalar^-0.5, then cap·tanh(scores / cap) (attn_logit_softcapping) before the
causal mask, which on a local layer also hides keys j <= i - sliding_window; logits
cap·tanh(logits / cap) (final_logit_softcapping). Local layers: Gemma 2's i % 2 == 0, Gemma 3's
(i + 1) % sliding_window_pattern != 0, or layer_types. Gemma 3 normalises q and k per head
((1 + w) RMSNorm over head_dim) before the rotation, and its local layers rotate with
rope_local_base_freq, unscaled, its global ones with rope_theta and rope_scaling.

Each fixture makes its quirks visible in the attention (q/k weights or q/k norm gains scaled up so
attention is peaked, windows shorter than the text, caps the scores reach) and each quirk is
planted as a mistake that the CLI's attention must be at least 1e-2 from: no soft-cap, the other
window parity, no window, the local rotary base or rope scaling wrong, no q/k norm, no post-norms,
the scale from head_dim. The final-logit cap does not move attention: its case checks that the
uncapped probabilities are far from the reference the CLI's must match.

Usage: gemma2_reference.py ATTNSCOPE_CLI [KEEP_DIR]
Exit 0: pass, 1: mismatch, 77: skipped (torch or numpy missing; under CI=true that fails
instead, exit 1: see cannot_run.py).
"""
import math
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
import decoder_reference as dr  # noqa: E402
from decoder_reference import gelu_tanh, inverse_frequencies, lin, rms, rotate, value_norms  # noqa: E402

QK_SCALE = 3.0


def text_of(cfg):
    """The text model's config: a gemma3 folder keeps it under text_config."""
    return cfg["text_config"] if cfg["model_type"] == "gemma3" else cfg


def local_layers(cfg):
    """Which layers slide, as the config classes decide it."""
    t = text_of(cfg)
    L = t["num_hidden_layers"]
    if t.get("layer_types"):
        return [kind == "sliding_attention" for kind in t["layer_types"]]
    if cfg["model_type"] == "gemma2":
        return [i % 2 == 0 for i in range(L)]
    pattern = t.get("sliding_window_pattern", 6)
    return [(i + 1) % pattern != 0 for i in range(L)]


# ----------------------------------------------------------------------------------------------
# Weights with Hugging Face's names


def gemma2_weights(cfg, seed, prefix="model.", head="embed", extra=()):
    """head: embed (tied, embed_tokens only) or untied (lm_head). extra: (name, shape) of tensors
    the family must ignore (a gemma3 folder's vision tower)."""
    t = text_of(cfg)
    g = dr.Init(seed)
    C, H, Hkv, I = t["hidden_size"], t["num_attention_heads"], t["num_key_value_heads"], t["intermediate_size"]
    hd = t["head_dim"]
    g.embedding(prefix + "embed_tokens", t["vocab_size"], C)
    for i in range(t["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            g.norm(p + n, C)
        qk_norm = cfg["model_type"] != "gemma2"
        # With q/k norms the gains make the peaks; without, the projections.
        g.linear(p + "self_attn.q_proj", H * hd, C, 1.0 if qk_norm else QK_SCALE, False)
        g.linear(p + "self_attn.k_proj", Hkv * hd, C, 1.0 if qk_norm else QK_SCALE, False)
        g.linear(p + "self_attn.v_proj", Hkv * hd, C, 1.0, False)
        g.linear(p + "self_attn.o_proj", C, H * hd, 1.0, False)
        if qk_norm:
            g.norm(p + "self_attn.q_norm", hd)
            g.norm(p + "self_attn.k_norm", hd)
            g.w[p + "self_attn.q_norm.weight"] *= QK_SCALE
            g.w[p + "self_attn.k_norm.weight"] *= QK_SCALE
        g.linear(p + "mlp.gate_proj", I, C, 1.0, False)
        g.linear(p + "mlp.up_proj", I, C, 1.0, False)
        g.linear(p + "mlp.down_proj", C, I, 1.0, False)
    g.norm(prefix + "norm", C)
    for name in g.w:
        if name.endswith("norm.weight"):  # gains stored as offsets from 1, as Gemma's are
            g.w[name] -= 1
    if head == "untied":
        g.linear("lm_head", t["vocab_size"], C, bias=False)
    for name, shape in extra:
        g.w[name] = g.rng.normal(0, 1, shape)
    return g.w


# ----------------------------------------------------------------------------------------------
# The published architecture in float64


def gemma2_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, without=(), sliding=None):
    """Gemma2ForCausalLM / Gemma3ForCausalLM: attention [L, H, T, T], final hidden [T, C], logits
    [T, V]. without: quirks left out ("softcap", "final softcap", "qk norm", "post-norms",
    "scalar", "local base", "scaling everywhere", "window"); sliding: the local layers instead of
    the config's."""
    t = text_of(cfg)
    gemma3 = cfg["model_type"] != "gemma2"
    T = len(ids)
    C, H, Hkv, hd = t["hidden_size"], t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]
    eps = t.get("rms_norm_eps", 1e-6)
    scalar = hd if "scalar" in without else t.get("query_pre_attn_scalar", 256)
    # Absent: the config class's default; null: none.
    cap = None if "softcap" in without else t.get("attn_logit_softcapping", None if gemma3 else 50.0)
    final_cap = None if "final softcap" in without else t.get("final_logit_softcapping", None if gemma3 else 30.0)
    window = 0 if "window" in without else t.get("sliding_window", 4096) or 0
    local = sliding if sliding is not None else local_layers(cfg)
    theta = t.get("rope_theta", 1e6 if gemma3 else 10000.0)
    scaling = t.get("rope_scaling")
    n = rope_len or T
    inv_global = inverse_frequencies(hd, theta, scaling, n, t["max_position_embeddings"])
    if not gemma3:
        inv_local = inv_global
    elif "local base" in without:  # the global rotary everywhere
        inv_local = inv_global
    elif "scaling everywhere" in without:
        inv_local = inverse_frequencies(hd, t.get("rope_local_base_freq", 10000.0), scaling, n,
                                        t["max_position_embeddings"])
    else:
        inv_local = inverse_frequencies(hd, t.get("rope_local_base_freq", 10000.0), None, n,
                                        t["max_position_embeddings"])
    emb = w[prefix + "embed_tokens.weight"]
    x = emb[torch.tensor(ids)] * float(np.float32(math.sqrt(C)))
    i_ = torch.arange(T)[:, None]
    j_ = torch.arange(T)[None, :]
    attentions = []
    for i in range(t["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        h = rms(w, p + "input_layernorm", x, eps, 1.0)
        q = lin(w, p + "self_attn.q_proj", h).view(T, H, hd).transpose(0, 1)
        k = lin(w, p + "self_attn.k_proj", h).view(T, Hkv, hd).transpose(0, 1)
        v = lin(w, p + "self_attn.v_proj", h).view(T, Hkv, hd).transpose(0, 1)
        if gemma3 and "qk norm" not in without:
            q = rms(w, p + "self_attn.q_norm", q, eps, 1.0)
            k = rms(w, p + "self_attn.k_norm", k, eps, 1.0)
        inv = inv_local if local[i] else inv_global
        q, k = rotate(q, hd, inv), rotate(k, hd, inv)
        group = [hq * Hkv // H for hq in range(H)]
        k, v = k[group], v[group]
        s = q @ k.transpose(-2, -1) * scalar ** -0.5
        if cap:
            s = cap * torch.tanh(s / cap)
        keep = j_ <= i_
        if local[i] and window:
            keep &= i_ - j_ < window  # the query's own key and the window - 1 before it
        a = torch.softmax(s.masked_fill(~keep, float("-inf")), -1)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, v, w[p + "self_attn.o_proj.weight"]))
        attn = lin(w, p + "self_attn.o_proj", (a @ v).transpose(0, 1).reshape(T, H * hd))
        if "post-norms" not in without:
            attn = rms(w, p + "post_attention_layernorm", attn, eps, 1.0)
        x = x + attn
        h = rms(w, p + "pre_feedforward_layernorm", x, eps, 1.0)
        m = lin(w, p + "mlp.down_proj", gelu_tanh(lin(w, p + "mlp.gate_proj", h)) * lin(w, p + "mlp.up_proj", h))
        if "post-norms" not in without:
            m = rms(w, p + "post_feedforward_layernorm", m, eps, 1.0)
        x = x + m
    x = rms(w, prefix + "norm", x, eps, 1.0)
    logits = x @ w.get("lm_head.weight", emb).T
    if final_cap:
        logits = final_cap * torch.tanh(logits / final_cap)
    return torch.stack(attentions), x, logits


def gemma2_mistakes(cfg):
    t = text_of(cfg)
    gemma3 = cfg["model_type"] != "gemma2"
    L = t["num_hidden_layers"]
    out = [("no post-norms after attention and MLP", cfg, dict(without=("post-norms",))),
           ("no sliding window", cfg, dict(without=("window",)))]
    if t.get("attn_logit_softcapping", None if gemma3 else 50.0):
        out.append(("no attention soft-cap", cfg, dict(without=("softcap",))))
    if t.get("query_pre_attn_scalar", 256) != t["head_dim"]:
        out.append(("scores scaled by head_dim**-0.5", cfg, dict(without=("scalar",))))
    mine = local_layers(cfg)
    # The other parity, Gemma 2's parity for Gemma 3, the default pattern for explicit layer_types.
    others = {"odd layers slide": [i % 2 == 1 for i in range(L)],
              "Gemma 2's parity": [i % 2 == 0 for i in range(L)],
              "sliding_window_pattern 6": [(i + 1) % 6 != 0 for i in range(L)]}
    for label, sliding in others.items():
        if sliding != mine:
            out.append((f"local layers by {label}", cfg, dict(sliding=sliding)))
    if gemma3:
        out.append(("no q/k norm", cfg, dict(without=("qk norm",))))
        out.append(("local layers rotate with rope_theta", cfg, dict(without=("local base",))))
        if t.get("rope_scaling"):
            out.append(("rope scaling on the local layers too", cfg, dict(without=("scaling everywhere",))))
            out.append(("rope_scaling ignored", dict(cfg, rope_scaling=None) if not cfg.get("text_config")
                        else dict(cfg, text_config=dict(t, rope_scaling=None)), {}))
    return out


# ----------------------------------------------------------------------------------------------
# The cases


def gemma_text(model_type, V, **extra):
    cfg = {"model_type": model_type, "vocab_size": V, "hidden_size": 32, "intermediate_size": 64,
           "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh",
           "sliding_window": 3, "torch_dtype": "float32"}
    cfg.update(extra)
    return cfg


VISION = (("vision_tower.vision_model.embeddings.patch_embedding.weight", (8, 3, 2, 2)),
          ("multi_modal_projector.mm_input_projection_weight", (8, 32)))


def cases(tokenizer, V):
    """In decoder_reference.cases()'s form."""
    out = []
    # Gemma 2: the first and third of three layers slide over 3 keys, the attention scores reach
    # past a cap of 5, the final logits past one of 3; query_pre_attn_scalar 64 != head_dim 16
    # (as Gemma 2 27B's 144 != 128).
    g2 = gemma_text("gemma2", V, architectures=["Gemma2ForCausalLM"], attn_logit_softcapping=5.0,
                    final_logit_softcapping=3.0, query_pre_attn_scalar=64, rope_theta=10000.0)
    out.append(("gemma2-gqa-f32", "gemma2", g2, lambda: gemma2_weights(g2, 60), "F32", "model.", True,
                tokenizer))
    # Gemma 3 text: four layers, pattern 3 (layers 0, 1 and 3 local), a local base of 100 against
    # rope_theta 10000 with linear scaling x4 on the global layer, q/k norms, no caps (null), an
    # untied head, BF16.
    g3 = gemma_text("gemma3_text", V, architectures=["Gemma3ForCausalLM"], num_hidden_layers=4,
                    sliding_window_pattern=3, rope_theta=10000.0, rope_local_base_freq=100.0,
                    rope_scaling={"rope_type": "linear", "factor": 4.0}, query_pre_attn_scalar=16,
                    attn_logit_softcapping=None, final_logit_softcapping=None, tie_word_embeddings=False,
                    sliding_window=4)
    out.append(("gemma3-text-bf16-untied", "gemma2", g3, lambda: gemma2_weights(g3, 61, head="untied"),
                "BF16", "model.", True, tokenizer))
    # A gemma3 folder: the text model under language_model.model with the vision tower beside it,
    # its layers given by layer_types, an attention cap it sets (honoured), sharded.
    text = gemma_text("gemma3_text", V, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                      attn_logit_softcapping=4.0, query_pre_attn_scalar=16)
    mm = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"], "text_config": text,
          "vision_config": {"model_type": "siglip_vision_model"}}
    out.append(("gemma3-vlm-language_model-sharded", "gemma2", mm,
                lambda: gemma2_weights(mm, 62, prefix="language_model.model.", extra=VISION), "sharded",
                "language_model.model.", True, tokenizer))
    return out


def mistakes(family, cfg):
    return gemma2_mistakes(cfg) if family == "gemma2" else ORIGINAL_MISTAKES(family, cfg)


ORIGINAL_MISTAKES = dr.mistakes
dr.FORWARD["gemma2"] = gemma2_forward
dr.mistakes = mistakes  # check() looks both up at call time
# `generate` through the key/value cache: windows on some layers and both soft-caps under a step's
# offset positions.
dr.GENERATE_CASES = {"gemma2-gqa-f32"}


def check_final_cap(case, failures, report):
    """The final-logit cap moves no attention: the CLI's probabilities are checked against the
    capped reference to 1e-5 (in check()), so they must be far from the uncapped ones."""
    name, _, cfg, make, _, prefix, _, _ = case
    w = {k: torch.from_numpy(v) for k, v in make().items()}
    ids = [2, 5, 6, 7, 8, 9]
    capped = torch.softmax(gemma2_forward(cfg, w, ids, prefix)[2][-1], -1)
    uncapped = torch.softmax(gemma2_forward(cfg, w, ids, prefix, without=("final softcap",))[2][-1], -1)
    gap = float((capped - uncapped).abs().max())
    report.append(f"{name:32s} final-logit cap moves a next-token probability by {gap:.2e}")
    if gap < 1e-2:
        failures.append(f"{name}: the final-logit cap barely moves the probabilities ({gap:.2e})")


def main():
    cli = sys.argv[1]
    failures, report = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = sys.argv[2] if len(sys.argv) > 2 else tmp
        os.makedirs(root, exist_ok=True)
        tokenizer = os.path.join(tmp, "gemma-tokenizer.json")
        V = dr.write_gemma_tokenizer(tokenizer)
        for case in cases(tokenizer, V):
            try:
                dr.check(cli, root, case, V, failures, report)
                if text_of(case[2]).get("final_logit_softcapping"):
                    check_final_cap(case, failures, report)
            except Exception as e:  # one broken case must not hide the others
                failures.append(f"{case[0]}: {e}")
    for line in report:
        print(line)
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
