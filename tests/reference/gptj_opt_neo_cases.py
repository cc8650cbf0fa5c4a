# SPDX-License-Identifier: GPL-3.0-or-later
"""GPT-J (model_type gptj), OPT (model_type opt) and GPT-Neo (model_type gpt_neo) for
phi3_olmo2_moe_reference.py: tiny random checkpoints with Hugging Face's tensor names, float64
forwards written from the published architectures (transformers' GPTJForCausalLM, OPTForCausalLM,
GPTNeoForCausalLM), the cases and the planted mistakes. The script runs them through
decoder_reference.check like its own families.

GPT-J in float64, per layer (one LayerNorm read by both sublayers, the parallel residual):
  h = ln_1(x); q, k, v = q_proj(h), k_proj(h), v_proj(h)      no biases
  rotary on the first rotary_dim dims of q and k (null: all), neighbouring pairs (2i, 2i + 1)
    rotated by frequency i (rotate_every_two), base 10000
  x = x + out_proj(softmax(q kᵀ / √head_dim) v) + fc_out(gelu_new(fc_in(h)))
  logits = lm_head(ln_f(x))                                    lm_head with a bias
OPT, the embeddings: project_in(embed_tokens(ids)) + embed_positions(position + 2); per layer:
  pre-norm (do_layer_norm_before): x = x + attn(self_attn_layer_norm(x));
    x = x + fc2(relu(fc1(final_layer_norm(x))))
  post-norm (OPT-350m): x = self_attn_layer_norm(x + attn(x)); x = final_layer_norm(x + mlp(x))
  attn: q = q_proj(h) · head_dim^-0.5 (bias included), softmax(q kᵀ) v, out_proj; biases with
    enable_bias
  the stack's final_layer_norm (pre-norm only), then project_out and the tied lm_head.
The hidden states compared are the final norm's output (before project_out), as output.npy has
them; project_out shows in the next tokens.
GPT-Neo: x = wte(ids) + wpe(position); per layer x = x + out_proj(attn(ln_1(x))) (out_proj with a
bias, q/k/v without), x = x + c_proj(gelu_new(c_fc(ln_2(x)))); attn: softmax(q kᵀ) v, NOT divided
by √head_dim, causal, and on "local" layers (attention_types) only the window_size most recent
keys; logits = ln_f(x) · wteᵀ (tied).

Cases: GPT-J with rotary on 8 of 16 dims and an untied, biased head; OPT pre-norm (final norm,
tied head) without biases or norm gains (enable_bias, layer_norm_elementwise_affine false);
OPT-350m's layout (post-norm, project_in/out, biases, keys without "model.", F16); GPT-Neo with a local window
of 4 keys on its second layer.

Planted mistakes (the CLI's attention must be at least 1e-2 from each): GPT-J: rotate_half pairs,
rotary on the whole head, the sequential residual; OPT: positions without the offset 2, the other
LayerNorm placement, scores scaled again after q, GELU for ReLU; GPT-Neo: scores divided by
√head_dim, the window on the other layers (wrong parity), no window. The lm_head bias (GPT-J) and
project_out (OPT) show in the top-5 next tokens and their probabilities, checked on every case.
"""
import numpy as np
import torch

from decoder_reference import Init, attend, causal, gelu, gelu_tanh, lin, rotate, value_norms

QK_SCALE = 3.0


def norm(w, p, x, eps):
    """nn.LayerNorm over the last axis, with its weight and bias when stored (OPT's
    layer_norm_elementwise_affine false stores neither)."""
    mu = x.mean(-1, keepdim=True)
    y = (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps)
    if p + ".weight" in w:
        y = y * w[p + ".weight"]
    return y + w[p + ".bias"] if p + ".bias" in w else y


def heads(t, n):
    """[T, n·hd] -> [n, T, hd]"""
    return t.view(t.shape[0], n, -1).transpose(0, 1)


# ----------------------------------------------------------------------------------------------
# GPT-J


def gptj_rotary_dim(cfg):
    hd = cfg["n_embd"] // cfg["n_head"]
    r = cfg.get("rotary_dim", 64)
    return hd if r is None else r


def gptj_weights(cfg, seed, prefix="transformer.", head=True):
    g = Init(seed)
    C, V = cfg["n_embd"], cfg["vocab_size"]
    I = cfg.get("n_inner") or 4 * C
    g.embedding(prefix + "wte", V, C)
    for i in range(cfg["n_layer"]):
        p = f"{prefix}h.{i}."
        g.norm(p + "ln_1", C, bias=True)
        g.linear(p + "attn.q_proj", C, C, QK_SCALE, bias=False)
        g.linear(p + "attn.k_proj", C, C, QK_SCALE, bias=False)
        g.linear(p + "attn.v_proj", C, C, bias=False)
        g.linear(p + "attn.out_proj", C, C, bias=False)
        g.linear(p + "mlp.fc_in", I, C)
        g.linear(p + "mlp.fc_out", C, I)
        g.w[p + "attn.bias"] = np.tril(np.ones((1, 1, 64, 64)))  # the mask buffer old files carry
    g.norm(prefix + "ln_f", C, bias=True)
    if head:
        g.linear("lm_head", V, C, bias=True)
    return g.w


def gptj_forward(cfg, w, ids, prefix="transformer.", rope_len=None, norms=None, convention="interleaved",
                 rotary_dim=None, sequential=False):
    """GPTJForCausalLM. convention "half", rotary_dim and sequential give plausible mistakes."""
    T = len(ids)
    C, H = cfg["n_embd"], cfg["n_head"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    rot = rotary_dim or gptj_rotary_dim(cfg)
    inv = 1.0 / 10000 ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    x = w[prefix + "wte.weight"][torch.tensor(ids)]
    attentions = []
    for i in range(cfg["n_layer"]):
        p = f"{prefix}h.{i}."
        h = norm(w, p + "ln_1", x, eps)
        q, k, v = (heads(lin(w, p + f"attn.{n}_proj", h), H) for n in "qkv")
        q, k = rotate(q, rot, inv, convention), rotate(k, rot, inv, convention)
        a, o = attend(q, k, v, causal(T))
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, v, w[p + "attn.out_proj.weight"]))
        attn = lin(w, p + "attn.out_proj", o.transpose(0, 1).reshape(T, C))
        mlp = lambda t: lin(w, p + "mlp.fc_out", gelu_tanh(lin(w, p + "mlp.fc_in", t)))
        if sequential:
            x = x + attn
            x = x + mlp(norm(w, p + "ln_1", x, eps))
        else:
            x = x + attn + mlp(h)
    x = norm(w, prefix + "ln_f", x, eps)
    logits = lin(w, "lm_head", x) if "lm_head.weight" in w else None
    return torch.stack(attentions), x, logits


def gptj_mistakes(cfg):
    out = [("rotate_half pairs", cfg, dict(convention="half")),
           ("the sequential residual", cfg, dict(sequential=True))]
    hd = cfg["n_embd"] // cfg["n_head"]
    if gptj_rotary_dim(cfg) < hd:
        out.append(("rotary on the whole head", cfg, dict(rotary_dim=hd)))
    return out


# ----------------------------------------------------------------------------------------------
# OPT


def opt_weights(cfg, seed, prefix="model.", head="tied"):
    """head: tied (embed_tokens only, as OPT's files), untied (lm_head stored and untied)."""
    g = Init(seed)
    d = prefix + "decoder."
    C, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["ffn_dim"]
    P = cfg.get("word_embed_proj_dim") or C
    b = cfg.get("enable_bias", True)
    affine = cfg.get("layer_norm_elementwise_affine", True)
    g.embedding(d + "embed_tokens", V, P)
    g.embedding(d + "embed_positions", cfg["max_position_embeddings"] + 2, C)
    if P != C:
        g.linear(d + "project_in", C, P, bias=False)
        g.linear(d + "project_out", P, C, bias=False)
    for i in range(cfg["num_hidden_layers"]):
        p = f"{d}layers.{i}."
        g.linear(p + "self_attn.q_proj", C, C, QK_SCALE, b)
        g.linear(p + "self_attn.k_proj", C, C, QK_SCALE, b)
        g.linear(p + "self_attn.v_proj", C, C, 1.0, b)
        g.linear(p + "self_attn.out_proj", C, C, 1.0, b)
        if affine:
            g.norm(p + "self_attn_layer_norm", C, bias=True)
            g.norm(p + "final_layer_norm", C, bias=True)
        g.linear(p + "fc1", I, C, 1.0, b)
        g.linear(p + "fc2", C, I, 1.0, b)
    final = cfg.get("do_layer_norm_before", True) and not cfg.get("_remove_final_layer_norm", False)
    if final and affine:
        g.norm(d + "final_layer_norm", C, bias=True)
    if head == "untied":
        g.linear("lm_head", V, P, bias=False)
    return g.w


def opt_forward(cfg, w, ids, prefix="model.", rope_len=None, norms=None, offset=2, flip_norm=False,
                scale_again=False, act=None):
    """OPTForCausalLM. offset, flip_norm (the other LayerNorm placement), scale_again (scores
    scaled by head_dim^-0.5 once more) and act give plausible mistakes."""
    T = len(ids)
    d = prefix + "decoder."
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd, eps = C // H, 1e-5
    P = cfg.get("word_embed_proj_dim") or C
    pre = cfg.get("do_layer_norm_before", True) != flip_norm
    act = act or torch.relu
    emb = w.get(d + "embed_tokens.weight", w.get("lm_head.weight"))
    x = emb[torch.tensor(ids)]
    if P != C:
        x = x @ w[d + "project_in.weight"].T
    x = x + w[d + "embed_positions.weight"][torch.arange(T) + offset]
    attentions = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{d}layers.{i}."
        h = norm(w, p + "self_attn_layer_norm", x, eps) if pre else x
        q = heads(lin(w, p + "self_attn.q_proj", h) * hd ** -0.5, H)
        k, v = (heads(lin(w, p + f"self_attn.{n}_proj", h), H) for n in "kv")
        a, o = attend(q, k, v, causal(T), hd=None if scale_again else 1)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, v, w[p + "self_attn.out_proj.weight"]))
        x = x + lin(w, p + "self_attn.out_proj", o.transpose(0, 1).reshape(T, C))
        if not pre:
            x = norm(w, p + "self_attn_layer_norm", x, eps)
        h = norm(w, p + "final_layer_norm", x, eps) if pre else x
        x = x + lin(w, p + "fc2", act(lin(w, p + "fc1", h)))
        if not pre:
            x = norm(w, p + "final_layer_norm", x, eps)
    if pre and cfg.get("do_layer_norm_before", True) and not cfg.get("_remove_final_layer_norm", False):
        x = norm(w, d + "final_layer_norm", x, eps)
    y = x @ w[d + "project_out.weight"].T if P != C else x
    head = w.get("lm_head.weight", emb if cfg.get("tie_word_embeddings", True) else None)
    return torch.stack(attentions), x, None if head is None else y @ head.T


def opt_mistakes(cfg):
    return [("positions without the offset 2", cfg, dict(offset=0)),
            ("the other LayerNorm placement", cfg, dict(flip_norm=True)),
            ("scores scaled again after q", cfg, dict(scale_again=True)),
            ("GELU for ReLU", cfg, dict(act=gelu))]


# ----------------------------------------------------------------------------------------------
# GPT-Neo


def gpt_neo_local_layers(cfg):
    """attention_types [[["global", "local"], n], ...] -> per layer, True where local."""
    return [kind == "local" for kinds, n in cfg["attention_types"] for _ in range(n) for kind in kinds]


def gpt_neo_weights(cfg, seed, prefix="transformer."):
    g = Init(seed)
    C, V = cfg["hidden_size"], cfg["vocab_size"]
    I = cfg.get("intermediate_size") or 4 * C
    g.embedding(prefix + "wte", V, C)
    g.embedding(prefix + "wpe", cfg["max_position_embeddings"], C)
    for i in range(cfg["num_layers"]):
        p = f"{prefix}h.{i}."
        a = p + "attn.attention."
        g.norm(p + "ln_1", C, bias=True)
        # Unscaled scores are peaked already: q and k at their plain size keep the rows from being
        # one-hot, where a wrong scale or window could not show.
        g.linear(a + "q_proj", C, C, bias=False)
        g.linear(a + "k_proj", C, C, bias=False)
        g.linear(a + "v_proj", C, C, bias=False)
        g.linear(a + "out_proj", C, C)
        g.norm(p + "ln_2", C, bias=True)
        g.linear(p + "mlp.c_fc", I, C)
        g.linear(p + "mlp.c_proj", C, I)
        g.w[a + "bias"] = np.tril(np.ones((1, 1, 64, 64)))  # the mask buffer old files carry
    g.norm(prefix + "ln_f", C, bias=True)
    return g.w


def gpt_neo_forward(cfg, w, ids, prefix="transformer.", rope_len=None, norms=None, scaled=False, parity=False,
                    window=True):
    """GPTNeoForCausalLM (tied head). scaled, parity (local and global swapped) and window (False:
    none) give plausible mistakes."""
    T = len(ids)
    C, H = cfg["hidden_size"], cfg["num_heads"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    x = w[prefix + "wte.weight"][torch.tensor(ids)] + w[prefix + "wpe.weight"][torch.arange(T)]
    attentions = []
    for i, local in enumerate(gpt_neo_local_layers(cfg)):
        p = f"{prefix}h.{i}."
        a = p + "attn.attention."
        h = norm(w, p + "ln_1", x, eps)
        q, k, v = (heads(lin(w, a + f"{n}_proj", h), H) for n in "qkv")
        mask = causal(T, cfg["window_size"] if window and (local != parity) else 0)
        att, o = attend(q, k, v, mask, hd=None if scaled else 1)
        attentions.append(att)
        if norms is not None:
            norms.append(value_norms(att, v, w[a + "out_proj.weight"]))
        x = x + lin(w, a + "out_proj", o.transpose(0, 1).reshape(T, C))
        x = x + lin(w, p + "mlp.c_proj", gelu_tanh(lin(w, p + "mlp.c_fc", norm(w, p + "ln_2", x, eps))))
    x = norm(w, prefix + "ln_f", x, eps)
    return torch.stack(attentions), x, x @ w[prefix + "wte.weight"].T


def gpt_neo_mistakes(cfg):
    return [("scores divided by sqrt(head_dim)", cfg, dict(scaled=True)),
            ("the window on the other layers", cfg, dict(parity=True)),
            ("no local window", cfg, dict(window=False))]


# ----------------------------------------------------------------------------------------------


def cases(V):
    """(name, family, config, weights, format, prefix, has_head, tokenizer) as decoder_reference's."""
    out = []
    gptj = {"model_type": "gptj", "architectures": ["GPTJForCausalLM"], "vocab_size": V, "n_embd": 32,
            "n_head": 2, "n_layer": 2, "n_inner": 48, "n_positions": 64, "rotary_dim": 8,
            "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "tie_word_embeddings": False}
    out.append(("gptj-partial-rotary", "gptj", gptj, lambda: gptj_weights(gptj, 60), "F32", "transformer.", True,
                None))
    opt = {"model_type": "opt", "architectures": ["OPTForCausalLM"], "vocab_size": V, "hidden_size": 32,
           "ffn_dim": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 64,
           "do_layer_norm_before": True, "word_embed_proj_dim": 32, "activation_function": "relu",
           "enable_bias": False, "layer_norm_elementwise_affine": False, "_remove_final_layer_norm": False}
    # Pre-norm with the final LayerNorm (OPT-125m, 1.3b, ...), here without biases or norm gains.
    out.append(("opt-pre-norm-tied", "opt", opt, lambda: opt_weights(opt, 61), "F32", "model.", True, None))
    # OPT-350m's layout: post-norm, no final LayerNorm, biases and gains, 16-wide word embeddings
    # through project_in and project_out, keys without "model." as facebook's files have them, F16.
    opt350 = dict(opt, do_layer_norm_before=False, word_embed_proj_dim=16, enable_bias=True,
                  layer_norm_elementwise_affine=True)
    out.append(("opt-350m-post-norm-project", "opt", opt350, lambda: opt_weights(opt350, 62, prefix=""), "F16", "",
                True, None))
    # GPT-Neo 125M's layout: global, then local layers with a window shorter than the first text.
    neo = {"model_type": "gpt_neo", "architectures": ["GPTNeoForCausalLM"], "vocab_size": V, "hidden_size": 32,
           "intermediate_size": None, "num_layers": 2, "num_heads": 4, "max_position_embeddings": 64,
           "attention_types": [[["global", "local"], 1]], "window_size": 4, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new"}
    out.append(("gpt-neo-local-window", "gpt_neo", neo, lambda: gpt_neo_weights(neo, 63), "F32", "transformer.",
                True, None))
    return out


FORWARD = {"gptj": gptj_forward, "opt": opt_forward, "gpt_neo": gpt_neo_forward}
MISTAKES = {"gptj": gptj_mistakes, "opt": opt_mistakes, "gpt_neo": gpt_neo_mistakes}
# generate through the key/value cache: learned positions looked up from the cached length (OPT's
# embedIdsAt, offset by 2). GPT-J's rotation at cached positions and GPT-Neo's window under the
# cache are the shared paths other families' generate cases check.
GENERATE_CASES = {"opt-pre-norm-tied"}
