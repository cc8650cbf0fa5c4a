#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `attnscope-cli run --model DIR` on BERT-family encoders against plain PyTorch.

For each of bert, roberta, xlm-roberta, distilbert, albert and electra it writes a tiny random
checkpoint in the Hugging Face layout (config.json, model.safetensors built with json + struct + numpy, a
tokenizer.json), asks the CLI for the token ids (`tokenize --json`), runs the encoder written here
from the published architectures (no transformers package, no attnscope code) in float64, and
compares the CLI's --dump attention.npy ([L, 1, H, T, T]) and output.npy ([1, T, hidden], the last
layer's hidden states) to 1e-4 (times max(1, |value|): tolerance.py). For a text with a mask token
it compares the top-5 "mask_fills" of `run --json` with the masked-language-model head's softmax
(probabilities to 1e-5); models without such a head (ELECTRA's discriminator, a BertModel
checkpoint) must give none and say so in "notices". Variants: BERT with gelu and gelu_new, with and
without the tied decoder weight, with the next-sentence head, in F16, without the "bert." prefix;
RoBERTa with gelu_new (its LM head applies gelu whatever hidden_act says); XLM-RoBERTa (RoBERTa's
layers) with a SentencePiece Unigram vocabulary whose ids for the first text are checked. The query
and key weights are scaled by 4 so that attention is peaked (a wrong detail cannot hide in uniform
attention), the feed-forward weights so that gelu and gelu_new differ visibly. On a mismatch it
names the per-layer attention differences and which plausible mistake (activation, positions, token
types) the CLI's numbers match instead.

ModernBERT (pre-LayerNorm, no attn_norm on layer 0, fused Wqkv, rotary with global_rope_theta on the
global layers and local_rope_theta on the local ones, a two-sided window |i - j| <= local_attention // 2
on layers i % global_attn_every_n_layers != 0, GeGLU act(input) * gate, final_norm, a head.dense /
head.norm / decoder head tied to tok_embeddings): 3 layers, local_attention 4 or 6, local_rope_theta 10 so
that the two bases differ visibly at T ~ 11; defaults (no biases, tied decoder with its bias) and every
bias with an untied decoder. Four planted mistakes (window off, one rotary base, attn_norm on layer 0,
GeGLU halves swapped) must each be at least 1e-2 from the CLI's attention; a padded batch of two items
must equal each item's own forward with the padding exactly 0.

DeBERTa v2/v3 (post-norm layers whose scores are c2c + c2p + p2c, each divided by sqrt(head_dim *
scale_factor); c2p and p2c gather projected rel_embeddings at the clamped, log-bucketed relative
distance, p2c on the keys' side and transposed): a v3-like folder (share_att_key, "p2c|c2p", 4 buckets
over max_relative_positions 8 so that T ~ 11 buckets and clamps, LayerNorm'd rel_embeddings, no absolute
positions, lm_predictions.lm_head, a Unigram [CLS] A [SEP] tokenizer whose ids are checked), a v2-like
one (c2p only through pos_key_proj, no buckets with max_relative_positions 4, positions, token types,
embed_proj, the legacy cls.predictions head) and a BF16 one (pos_key_proj and pos_query_proj, 6
buckets). Besides attention, hidden states, mask fills, logits and value norms, --dump's
scores_{c2c,c2p,p2c}.npy are compared term by term; four planted mistakes (no log buckets, p2c not
transposed, the scale without scale_factor, c2p missing) must each be at least 1e-2 away. DeBERTa v1
(model_type "deberta": one in_proj without bias whose rows are per head [q k v], q_bias and v_bias,
pos_proj and pos_q_proj, unbucketed relative positions with transformers' att_span slice of
rel_embeddings, scale_factor 1 + len(pos_att_type)): a deberta-base-like folder (byte-level BPE,
max_relative_positions 8, lm_predictions.lm_head) with three planted mistakes (in_proj split as
[q | k | v] blocks, q_bias missing, v2's log buckets), and one with DebertaConfig's defaults (absolute
positions, max_relative_positions -1), token types, embed_proj, "p2p" counted in the scale (planted:
not counted) and the legacy cls.predictions head. v2-xlarge's ConvLayer (after layer 0:
LayerNorm(layer 0's output + tanh(Conv1d(the layer's input, groups 2)))) on a v3-like folder, with
two planted mistakes (no ConvLayer, the conv over layer 0's output) and a padded batch.

Usage: encoder_reference.py ATTNSCOPE_CLI [KEEP_DIR]   (KEEP_DIR: write the folders there)
Exit 0: pass, 1: mismatch (or a case could not run), 77: skipped (torch or numpy missing; under CI=true
that fails instead, exit 1: see cannot_run.py).
"""
import json
import math
import os
import shutil
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
from cli_batch import cli_run  # noqa: E402
from tolerance import scaled_error  # noqa: E402

L, H, C, I, P, E = 2, 4, 32, 64, 40, 16  # layers, heads, hidden, intermediate, positions, ALBERT/ELECTRA embedding
D = C // H
EPS = 1e-12
TOL = 1e-4  # attention and hidden states, as scaled_error (tolerance.py): absolute up to 1, relative above
P_TOL = 1e-5  # mask-fill probabilities (as gpt2_reference.py's next-token check): a head's activation shows at ~5e-5
QK_SCALE = 4  # query and key weights: peaked attention
FFN_IN, FFN_OUT = 3, 2  # feed-forward weights: pre-activations reach |x| ~ 2-3, where gelu and gelu_new differ most
HERE = os.path.dirname(os.path.abspath(__file__))
WORDPIECE = os.path.join(HERE, "..", "data", "tokenizers", "wordpiece.json")
WP_VOCAB = 1000  # wordpiece.json: ids 0..4 = [PAD] [UNK] [CLS] [SEP] [MASK]

SINGLE = "the teacher said the dog was happy yesterday."
PAIR = ("the cat opened the window.", "nobody knows why.")
MASK_TEXT = "the teacher said the {} was happy."


# ----------------------------------------------------------------------------------------------
# Checkpoint writing


def write_safetensors(path, tensors, dtype):
    """tensors: name -> float64 numpy array. Returns the same tensors rounded to dtype, as float64
    torch tensors (what the CLI reads)."""
    header, chunks, offset, stored = {"__metadata__": {"format": "pt"}}, [], 0, {}
    for name in sorted(tensors):
        if dtype == "BF16":  # numpy has no bfloat16: round through torch, store the raw 16 bits
            t = torch.from_numpy(np.asarray(tensors[name], dtype=np.float64)).to(torch.bfloat16)
            v = np.ascontiguousarray(t.view(torch.int16).numpy())
            stored[name] = t.double()
        else:
            v = np.ascontiguousarray(tensors[name].astype({"F32": "<f4", "F16": "<f2"}[dtype]))
            stored[name] = torch.from_numpy(v.astype(np.float64))
        header[name] = {"dtype": dtype, "shape": list(v.shape), "data_offsets": [offset, offset + v.nbytes]}
        chunks.append(v.tobytes())
        offset += v.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    return stored


def write_bin(path, tensors):
    """pytorch_model.bin as Hugging Face saves it: torch.save of a module's state_dict (an
    OrderedDict carrying _metadata). Returns the float32-rounded tensors as float64."""
    sd = torch.nn.Module().state_dict()  # an OrderedDict with _metadata, like every state_dict()
    stored = {}
    for name in sorted(tensors):
        t = torch.from_numpy(np.ascontiguousarray(tensors[name].astype("<f4")))
        sd[name] = t
        stored[name] = t.double()
    assert hasattr(sd, "_metadata")
    torch.save(sd, path)
    return stored


class Init:
    """Random weights with Hugging Face's names, float64."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.w = {}

    def linear(self, name, n_out, n_in, scale=1.0, bias=True):
        self.w[name + ".weight"] = scale * self.rng.normal(0, 0.6 / math.sqrt(n_in), (n_out, n_in))
        if bias:
            self.w[name + ".bias"] = scale * self.rng.normal(0, 0.1, n_out)

    def layernorm(self, name, n):
        self.w[name + ".weight"] = 1 + self.rng.normal(0, 0.1, n)
        self.w[name + ".bias"] = self.rng.normal(0, 0.1, n)

    def embedding(self, name, n, dim, std=0.5):
        self.w[name + ".weight"] = self.rng.normal(0, std, (n, dim))

    def bert_layer(self, p):
        """BertLayer (also RoBERTa's and ELECTRA's)."""
        self.linear(p + "attention.self.query", C, C, scale=QK_SCALE)
        self.linear(p + "attention.self.key", C, C, scale=QK_SCALE)
        self.linear(p + "attention.self.value", C, C)
        self.linear(p + "attention.output.dense", C, C)
        self.layernorm(p + "attention.output.LayerNorm", C)
        self.linear(p + "intermediate.dense", I, C, scale=FFN_IN)
        self.linear(p + "output.dense", C, I, scale=FFN_OUT)
        self.layernorm(p + "output.LayerNorm", C)

    def embeddings(self, p, V, dim, token_types=True):
        self.embedding(p + "word_embeddings", V, dim)
        self.embedding(p + "position_embeddings", P, dim, 0.3)
        if token_types:
            self.embedding(p + "token_type_embeddings", 2, dim, 0.3)
        self.layernorm(p + "LayerNorm", dim)


def bert_weights(seed, prefix="bert.", head=True, tied_decoder=False, nsp=False):
    g = Init(seed)
    g.embeddings(prefix + "embeddings.", WP_VOCAB, C)
    for i in range(L):
        g.bert_layer(f"{prefix}encoder.layer.{i}.")
    g.linear(prefix + "pooler.dense", C, C)  # BertPooler: must be ignored
    if head:
        g.linear("cls.predictions.transform.dense", C, C, scale=FFN_IN)
        g.layernorm("cls.predictions.transform.LayerNorm", C)
        g.w["cls.predictions.bias"] = g.rng.normal(0, 0.3, WP_VOCAB)
        if tied_decoder:  # tied to the word embeddings: the same values
            g.w["cls.predictions.decoder.weight"] = g.w[prefix + "embeddings.word_embeddings.weight"].copy()
            g.w["cls.predictions.decoder.bias"] = g.w["cls.predictions.bias"].copy()
    if nsp:  # BertForPreTraining's next-sentence head: must be ignored
        g.linear("cls.seq_relationship", 2, C)
    return g.w


def roberta_weights(seed, V):
    g = Init(seed)
    g.embeddings("roberta.embeddings.", V, C)
    for i in range(L):
        g.bert_layer(f"roberta.encoder.layer.{i}.")
    g.linear("roberta.pooler.dense", C, C)
    g.linear("lm_head.dense", C, C, scale=FFN_IN)
    g.layernorm("lm_head.layer_norm", C)
    g.w["lm_head.bias"] = g.rng.normal(0, 0.3, V)
    g.w["lm_head.decoder.weight"] = g.w["roberta.embeddings.word_embeddings.weight"].copy()
    g.w["lm_head.decoder.bias"] = g.w["lm_head.bias"].copy()
    return g.w


def distilbert_weights(seed):
    g = Init(seed)
    g.embeddings("distilbert.embeddings.", WP_VOCAB, C, token_types=False)
    for i in range(L):
        p = f"distilbert.transformer.layer.{i}."
        g.linear(p + "attention.q_lin", C, C, scale=QK_SCALE)
        g.linear(p + "attention.k_lin", C, C, scale=QK_SCALE)
        g.linear(p + "attention.v_lin", C, C)
        g.linear(p + "attention.out_lin", C, C)
        g.layernorm(p + "sa_layer_norm", C)
        g.linear(p + "ffn.lin1", I, C, scale=FFN_IN)
        g.linear(p + "ffn.lin2", C, I, scale=FFN_OUT)
        g.layernorm(p + "output_layer_norm", C)
    g.linear("vocab_transform", C, C, scale=FFN_IN)
    g.layernorm("vocab_layer_norm", C)
    g.w["vocab_projector.bias"] = g.rng.normal(0, 0.3, WP_VOCAB)  # weight tied to the word embeddings, not stored
    return g.w


def albert_weights(seed):
    g = Init(seed)
    g.embeddings("albert.embeddings.", WP_VOCAB, E)
    g.linear("albert.encoder.embedding_hidden_mapping_in", C, E)
    p = "albert.encoder.albert_layer_groups.0.albert_layers.0."
    g.linear(p + "attention.query", C, C, scale=QK_SCALE)
    g.linear(p + "attention.key", C, C, scale=QK_SCALE)
    g.linear(p + "attention.value", C, C)
    g.linear(p + "attention.dense", C, C)
    g.layernorm(p + "attention.LayerNorm", C)
    g.linear(p + "ffn", I, C, scale=FFN_IN)
    g.linear(p + "ffn_output", C, I, scale=FFN_OUT)
    g.layernorm(p + "full_layer_layer_norm", C)
    g.linear("albert.pooler", C, C)  # AlbertModel's pooler: must be ignored
    g.linear("predictions.dense", E, C, scale=FFN_IN)
    g.layernorm("predictions.LayerNorm", E)
    g.w["predictions.bias"] = g.rng.normal(0, 0.3, WP_VOCAB)
    g.w["predictions.decoder.weight"] = g.w["albert.embeddings.word_embeddings.weight"].copy()
    g.w["predictions.decoder.bias"] = g.w["predictions.bias"].copy()
    return g.w


def electra_weights(seed):
    g = Init(seed)
    g.embeddings("electra.embeddings.", WP_VOCAB, E)
    g.linear("electra.embeddings_project", C, E)
    for i in range(L):
        g.bert_layer(f"electra.encoder.layer.{i}.")
    g.linear("discriminator_predictions.dense", C, C)  # the discriminator head: must be ignored
    g.linear("discriminator_predictions.dense_prediction", 1, C)
    return g.w


def bert_config(model_type, V, act="gelu", **extra):
    cfg = {"model_type": model_type, "vocab_size": V, "hidden_size": C, "num_hidden_layers": L,
           "num_attention_heads": H, "intermediate_size": I, "max_position_embeddings": P,
           "type_vocab_size": 2, "layer_norm_eps": EPS, "hidden_act": act,
           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
           "position_embedding_type": "absolute", "pad_token_id": 0}
    cfg.update(extra)
    return cfg


# ----------------------------------------------------------------------------------------------
# Tokenizers


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


def roberta_tokenizer(path):
    """A byte-level BPE tokenizer.json with RoBERTa's specials and post-processor. Returns the
    vocabulary size."""
    b2u = bytes_to_unicode()
    sym = lambda s: "".join(b2u[b] for b in s.encode())
    specials = ["<s>", "<pad>", "</s>", "<mask>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[b2u[b]] = len(vocab)
    merges = []
    for word in ["the", " the", " teacher", " said", " dog", " was", " happy", " cat", " opened",
                 " window", "nobody", " knows", " why", "yesterday"]:
        s = sym(word)
        acc = s[0]
        for ch in s[1:]:
            if acc + ch not in vocab:
                merges.append(f"{acc} {ch}")
                vocab[acc + ch] = len(vocab)
            acc += ch
    added = [{"id": i, "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
              "normalized": t != "<mask>", "special": True} for i, t in enumerate(specials)]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                              "trim_offsets": True, "add_prefix_space": False},
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                     "vocab": vocab, "merges": merges}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    return len(vocab)


XLMR_WORDS = ["the", "teacher", "said", "dog", "was", "happy", "yesterday", "cat", "window"]


def xlmr_tokenizer(path):
    """A SentencePiece Unigram tokenizer.json laid out like XLM-RoBERTa's: <s> <pad> </s> <unk> first
    (so pad_token_id 1 and positions from 2), "▁word" pieces and single characters, <mask> last,
    Metaspace pre-tokenizer, <s> A </s> (</s> B </s>) template. Returns (vocabulary size, the ids
    SINGLE must get)."""
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    pieces = [[t, 0.0] for t in specials]
    pieces += [["\u2581" + w, -2.0 - 0.01 * i] for i, w in enumerate(XLMR_WORDS)]
    chars = sorted(set("".join(XLMR_WORDS) + ".,\u2581abcdefghijklmnopqrstuvwxyz"))
    pieces += [[ch, -8.0] for ch in chars]
    pieces.append(["<mask>", 0.0])
    ids = {t: i for i, (t, _) in enumerate(pieces)}
    added = [{"id": ids[t], "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
              "normalized": False, "special": True} for t in specials + ["<mask>"]]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}},
                                         {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                              "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                       {"Sequence": {"id": "A", "type_id": 0}},
                                       {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                       {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                       {"Sequence": {"id": "B", "type_id": 0}},
                                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                              "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                                 "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
           "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
           "model": {"type": "Unigram", "unk_id": 3, "vocab": pieces, "byte_fallback": False}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    # "the teacher said the dog was happy yesterday." -> <s> ▁the ▁teacher ... ▁yesterday . </s>
    single = [0] + [ids["\u2581" + w] for w in SINGLE.rstrip(".").split()] + [ids["."], 2]
    return len(pieces), single


# ----------------------------------------------------------------------------------------------
# The encoders, float64, from the published architectures


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


ACT = {"gelu": gelu, "gelu_new": gelu_new}


def lin(w, p, x):
    y = x @ w[p + ".weight"].T
    return y + w[p + ".bias"] if p + ".bias" in w else y


def ln(w, p, x, eps=EPS):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w[p + ".weight"], w[p + ".bias"], eps)


def attend(q, k, v):
    """Bidirectional multi-head attention, no mask. Returns probabilities [H, T, T], context [T, C]."""
    T = q.shape[0]
    heads = lambda t: t.reshape(T, H, D).transpose(0, 1)
    q, k, v = heads(q), heads(k), heads(v)
    a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), dim=-1)
    return a, (a @ v).transpose(0, 1).reshape(T, C)


def value_norms(a, v, wo):
    """Kobayashi et al.'s ‖α_ij f_h(x_j)‖: a [H, T, T], v = x W_V + b_V [T, C], wo the output
    projection's weight [C, C] (y = z woᵀ). Returns [H, T, T]."""
    T = v.shape[0]
    vh = v.reshape(T, H, D).transpose(0, 1)
    f = torch.stack([vh[h] @ wo[:, h * D:(h + 1) * D].T for h in range(H)])  # [H, T, C]
    return a * f.norm(dim=-1)[:, None, :]


def bert_layer(w, p, x, act, norms=None):
    """BertLayer: post-LayerNorm self-attention and feed-forward blocks."""
    v = lin(w, p + "attention.self.value", x)
    a, ctx = attend(lin(w, p + "attention.self.query", x), lin(w, p + "attention.self.key", x), v)
    if norms is not None:
        norms.append(value_norms(a, v, w[p + "attention.output.dense.weight"]))
    x = ln(w, p + "attention.output.LayerNorm", lin(w, p + "attention.output.dense", ctx) + x)
    h = act(lin(w, p + "intermediate.dense", x))
    return a, ln(w, p + "output.LayerNorm", lin(w, p + "output.dense", h) + x)


def embed(w, p, ids, types, positions):
    x = w[p + "word_embeddings.weight"][ids] + w[p + "position_embeddings.weight"][positions]
    if types is not None:
        x = x + w[p + "token_type_embeddings.weight"][types]
    return ln(w, p + "LayerNorm", x)


def forward(family, cfg, w, ids, types, act=None, zero_types=False, positions=None, head_act=None,
            norms=None):
    """Returns (attention [L, H, T, T], last hidden states [T, C], MLM logits [T, V] or None).
    act / zero_types / positions / head_act override the architecture: used to name a mistake."""
    if family == "modernbert":
        return modernbert_forward(cfg, w, ids, norms=norms)
    if family == "deberta-v2":
        return deberta_forward(cfg, w, ids, types, norms=norms)
    T = len(ids)
    ids = torch.tensor(ids)
    types = torch.zeros(T, dtype=torch.long) if zero_types else torch.tensor(types)
    act_name = cfg.get("hidden_act", cfg.get("activation"))
    act = ACT[act or act_name]
    head_act = ACT[head_act or ("gelu" if family == "roberta" else act_name)]  # RobertaLMHead: always gelu
    if positions is None:
        if family == "roberta":  # create_position_ids_from_input_ids
            pad = cfg["pad_token_id"]
            mask = (ids != pad).long()
            positions = torch.cumsum(mask, 0) * mask + pad
        else:
            positions = torch.arange(T)
    attentions, logits = [], None
    if family in ("bert", "bert-model", "roberta", "electra"):
        pre = {"bert": "bert.", "bert-model": "", "roberta": "roberta.", "electra": "electra."}[family]
        x = embed(w, pre + "embeddings.", ids, types, positions)
        if family == "electra":
            x = lin(w, "electra.embeddings_project", x)
        for i in range(L):
            a, x = bert_layer(w, f"{pre}encoder.layer.{i}.", x, act, norms)
            attentions.append(a)
        if family == "bert":  # BertOnlyMLMHead: transform (dense, hidden_act, LayerNorm), decoder tied
            h = ln(w, "cls.predictions.transform.LayerNorm", head_act(lin(w, "cls.predictions.transform.dense", x)))
            logits = h @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
        elif family == "roberta":  # RobertaLMHead: dense, gelu (always), layer_norm, decoder tied
            h = ln(w, "lm_head.layer_norm", head_act(lin(w, "lm_head.dense", x)))
            logits = h @ w["roberta.embeddings.word_embeddings.weight"].T + w["lm_head.bias"]
    elif family == "distilbert":
        x = embed(w, "distilbert.embeddings.", ids, None, positions)
        for i in range(L):
            p = f"distilbert.transformer.layer.{i}."
            v = lin(w, p + "attention.v_lin", x)
            a, ctx = attend(lin(w, p + "attention.q_lin", x), lin(w, p + "attention.k_lin", x), v)
            attentions.append(a)
            if norms is not None:
                norms.append(value_norms(a, v, w[p + "attention.out_lin.weight"]))
            x = ln(w, p + "sa_layer_norm", lin(w, p + "attention.out_lin", ctx) + x)
            h = lin(w, p + "ffn.lin2", act(lin(w, p + "ffn.lin1", x)))
            x = ln(w, p + "output_layer_norm", h + x)
        h = ln(w, "vocab_layer_norm", head_act(lin(w, "vocab_transform", x)))
        logits = h @ w["distilbert.embeddings.word_embeddings.weight"].T + w["vocab_projector.bias"]
    elif family == "albert":
        x = embed(w, "albert.embeddings.", ids, types, positions)
        x = lin(w, "albert.encoder.embedding_hidden_mapping_in", x)
        p = "albert.encoder.albert_layer_groups.0.albert_layers.0."  # one group, one layer, shared by all
        for i in range(L):
            v = lin(w, p + "attention.value", x)
            a, ctx = attend(lin(w, p + "attention.query", x), lin(w, p + "attention.key", x), v)
            attentions.append(a)
            if norms is not None:
                norms.append(value_norms(a, v, w[p + "attention.dense.weight"]))
            x = ln(w, p + "attention.LayerNorm", lin(w, p + "attention.dense", ctx) + x)
            h = lin(w, p + "ffn_output", act(lin(w, p + "ffn", x)))
            x = ln(w, p + "full_layer_layer_norm", h + x)
        h = ln(w, "predictions.LayerNorm", head_act(lin(w, "predictions.dense", x)))
        logits = h @ w["predictions.decoder.weight"].T + w["predictions.bias"]
    else:
        raise ValueError(family)
    return torch.stack(attentions), x, logits


# ----------------------------------------------------------------------------------------------
# ModernBERT: pre-LayerNorm, rotary with a global and a local base, two-sided local windows, GeGLU

MB_L, MB_I = 3, 24  # layers (global, local, global with global_attn_every_n_layers 2), GeGLU width


def modernbert_config(every=2, window=4, biases=False, tied=True, **extra):
    cfg = {"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"], "vocab_size": WP_VOCAB,
           "hidden_size": C, "intermediate_size": MB_I, "num_hidden_layers": MB_L, "num_attention_heads": H,
           "hidden_activation": "gelu", "classifier_activation": "gelu", "max_position_embeddings": P,
           "norm_eps": 1e-5, "global_rope_theta": 160000.0, "local_rope_theta": 10.0,
           "global_attn_every_n_layers": every, "local_attention": window, "pad_token_id": 0,
           "tie_word_embeddings": tied}
    if biases:
        cfg.update(norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True)
    cfg.update(extra)
    return cfg


def modernbert_weights(seed, cfg):
    """ModernBertForMaskedLM's tensors: model.embeddings / layers / final_norm, head, decoder."""
    g = Init(seed)
    nb, ab, mb = (cfg.get(k, False) for k in ("norm_bias", "attention_bias", "mlp_bias"))

    def norm(name):
        g.layernorm(name, C)
        if not nb:
            del g.w[name + ".bias"]

    g.embedding("model.embeddings.tok_embeddings", WP_VOCAB, C)
    norm("model.embeddings.norm")
    for i in range(MB_L):
        p = f"model.layers.{i}."
        if i > 0:
            norm(p + "attn_norm")
        g.linear(p + "attn.Wqkv", 3 * C, C, bias=ab)
        g.w[p + "attn.Wqkv.weight"][:2 * C] *= QK_SCALE  # q and k: peaked attention
        g.linear(p + "attn.Wo", C, C, bias=ab)
        norm(p + "mlp_norm")
        g.linear(p + "mlp.Wi", 2 * MB_I, C, scale=FFN_IN, bias=mb)
        g.linear(p + "mlp.Wo", C, MB_I, scale=FFN_OUT, bias=mb)
    norm("model.final_norm")
    g.linear("head.dense", C, C, scale=FFN_IN, bias=cfg.get("classifier_bias", False))
    norm("head.norm")
    if not cfg.get("tie_word_embeddings", True):
        g.linear("decoder", WP_VOCAB, C, bias=False)
    if cfg.get("decoder_bias", True):
        g.w["decoder.bias"] = g.rng.normal(0, 0.3, WP_VOCAB)
    return g.w


def rotate(x, base):
    """rotate_half rotary on [H, T, D] at positions 0..T-1 with rope_theta `base`."""
    T = x.shape[1]
    inv = 1.0 / base ** (torch.arange(0, D, 2, dtype=torch.float64) / D)
    f = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    emb = torch.cat([f, f], -1)
    half = torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1)
    return x * emb.cos() + half * emb.sin()


def modernbert_forward(cfg, w, ids, norms=None, no_window=False, one_base=False, norm_layer0=False,
                       swap_geglu=False):
    """ModernBertForMaskedLM in float64. The keyword arguments plant one mistake each."""
    T = len(ids)
    eps = cfg["norm_eps"]
    lnm = lambda p, x: torch.nn.functional.layer_norm(x, (C,), w[p + ".weight"], w.get(p + ".bias"), eps)
    x = lnm("model.embeddings.norm", w["model.embeddings.tok_embeddings.weight"][torch.tensor(ids)])
    dist = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).abs()
    band = torch.where(dist <= cfg["local_attention"] // 2, 0.0, float("-inf")).double()
    attentions = []
    for i in range(MB_L):
        p = f"model.layers.{i}."
        local = i % cfg["global_attn_every_n_layers"] != 0
        if i > 0:
            h = lnm(p + "attn_norm", x)
        elif norm_layer0:  # the mistake: layer 0 normed again (with layer 1's attn_norm weights)
            h = lnm("model.layers.1.attn_norm", x)
        else:
            h = x
        qkv = lin(w, p + "attn.Wqkv", h).reshape(T, 3, H, D)
        q, k, v = (qkv[:, j].transpose(0, 1) for j in range(3))  # [H, T, D]
        base = cfg["local_rope_theta"] if local and not one_base else cfg["global_rope_theta"]
        q, k = rotate(q, base), rotate(k, base)
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        if local and not no_window:
            s = s + band
        a = torch.softmax(s, -1)
        attentions.append(a)
        if norms is not None:
            norms.append(value_norms(a, qkv[:, 2].reshape(T, C), w[p + "attn.Wo.weight"]))
        x = x + lin(w, p + "attn.Wo", (a @ v).transpose(0, 1).reshape(T, C))
        gi = lin(w, p + "mlp.Wi", lnm(p + "mlp_norm", x))
        inp, gate = gi[:, :MB_I], gi[:, MB_I:]
        if swap_geglu:
            inp, gate = gate, inp
        x = x + lin(w, p + "mlp.Wo", gelu(inp) * gate)
    x = lnm("model.final_norm", x)
    h = lnm("head.norm", gelu(lin(w, "head.dense", x)))
    dec = w["decoder.weight"] if "decoder.weight" in w else w["model.embeddings.tok_embeddings.weight"]
    logits = h @ dec.T + (w["decoder.bias"] if "decoder.bias" in w else 0)
    return torch.stack(attentions), x, logits


MB_MISTAKES = [("local window off", dict(no_window=True)),
               ("global_rope_theta on every layer", dict(one_base=True)),
               ("attn_norm on layer 0", dict(norm_layer0=True)),
               ("GeGLU halves swapped (gelu on the gate)", dict(swap_geglu=True))]


# ----------------------------------------------------------------------------------------------
# Models and cases


# ----------------------------------------------------------------------------------------------
# DeBERTa v2/v3: BERT's post-norm layers with disentangled attention (c2c + c2p + p2c)

DEBERTA_WORDS = ["the", "teacher", "said", "dog", "was", "happy", "yesterday", "cat", "window"]


def deberta_tokenizer(path):
    """A SentencePiece Unigram tokenizer.json laid out like DeBERTa-v3's: [PAD] [CLS] [SEP] [UNK]
    first, "▁word" pieces and single characters, [MASK] last; Metaspace; [CLS] A [SEP] (B:1 [SEP]:1).
    Returns (vocabulary size, the ids SINGLE must get, the [MASK] id)."""
    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]
    pieces = [[t, 0.0] for t in specials]
    pieces += [["\u2581" + w, -2.0 - 0.01 * i] for i, w in enumerate(DEBERTA_WORDS)]
    chars = sorted(set("".join(DEBERTA_WORDS) + ".,\u2581abcdefghijklmnopqrstuvwxyz"))
    pieces += [[ch, -8.0] for ch in chars]
    pieces.append(["[MASK]", 0.0])
    ids = {t: i for i, (t, _) in enumerate(pieces)}
    added = [{"id": ids[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in specials + ["[MASK]"]]
    cls, sep = {"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
           "post_processor": {"type": "TemplateProcessing",
                              "single": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep],
                              "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep,
                                       {"Sequence": {"id": "B", "type_id": 1}},
                                       {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                              "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]},
                                                 "[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]}}},
           "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
           "model": {"type": "Unigram", "unk_id": 3, "vocab": pieces, "byte_fallback": False}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    single = [1] + [ids["\u2581" + w] for w in SINGLE.rstrip(".").split()] + [ids["."], 2]
    return len(pieces), single, ids["[MASK]"]


def deberta_config(V, **extra):
    cfg = {"model_type": "deberta-v2", "vocab_size": V, "hidden_size": C, "num_hidden_layers": L,
           "num_attention_heads": H, "intermediate_size": I, "max_position_embeddings": P,
           "layer_norm_eps": 1e-7, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
           "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02, "pad_token_id": 0,
           "relative_attention": True, "pooler_hidden_size": C, "pooler_dropout": 0,
           "pooler_hidden_act": "gelu"}
    cfg.update(extra)
    return cfg


def deberta_setup(cfg, v2_scale=False):
    """What DebertaV2Config (DebertaConfig for v1, model_type "deberta") and the modules read, with
    transformers' defaults and getattr fallbacks. v1's modules read no buckets, shared keys,
    rel_embeddings norm or ConvLayer, and its scale_factor is 1 + len(pos_att_type)."""
    v1 = cfg["model_type"] == "deberta"
    pat = cfg.get("pos_att_type") or []
    if isinstance(pat, str):
        pat = [x.strip() for x in pat.lower().split("|")]
    maxrel = cfg.get("max_relative_positions", -1)
    maxrel = cfg["max_position_embeddings"] if maxrel < 1 else maxrel
    buckets = -1 if v1 else cfg.get("position_buckets", -1)
    rel = cfg.get("relative_attention", False)
    sf = 1 + len(pat) if v1 and not v2_scale else 1 + ("c2p" in pat) + ("p2c" in pat)
    return dict(v1=v1, c2p=rel and "c2p" in pat, p2c=rel and "p2c" in pat, sf=sf,
                maxrel=maxrel, buckets=buckets, span=buckets if buckets > 0 else maxrel, rel=rel,
                share=not v1 and cfg.get("share_att_key", False), E=cfg.get("embedding_size", C),
                pbi=cfg.get("position_biased_input", True), types=cfg.get("type_vocab_size", 0),
                rel_norm=not v1 and "layer_norm" in [x.strip() for x in cfg.get("norm_rel_ebd", "none").lower().split("|")],
                conv=0 if v1 else cfg.get("conv_kernel_size", 0), conv_groups=cfg.get("conv_groups", 1),
                conv_act=cfg.get("conv_act", "tanh"))


def deberta_weights(seed, cfg, head):
    """DebertaV2ForMaskedLM's tensors; head "lm" (lm_predictions.lm_head), "cls" (the legacy
    cls.predictions with its tied decoder stored) or None (DebertaV2Model)."""
    s, g, V = deberta_setup(cfg), Init(seed), cfg["vocab_size"]
    p = "deberta."
    g.embedding(p + "embeddings.word_embeddings", V, s["E"])
    if s["pbi"]:
        g.embedding(p + "embeddings.position_embeddings", P, s["E"], 0.3)
    if s["types"]:
        g.embedding(p + "embeddings.token_type_embeddings", s["types"], s["E"], 0.3)
    if s["E"] != C:
        g.linear(p + "embeddings.embed_proj", C, s["E"], bias=False)
    g.layernorm(p + "embeddings.LayerNorm", C)
    if s["rel"]:
        g.embedding(p + "encoder.rel_embeddings", 2 * s["span"], C)
    if s["rel_norm"]:
        g.layernorm(p + "encoder.LayerNorm", C)
    if s["conv"]:  # ConvLayer: Conv1d(C, C, k, groups) with bias, LayerNorm
        k = s["conv"]
        g.w[p + "encoder.conv.conv.weight"] = g.rng.normal(0, 1.2 / math.sqrt(C // s["conv_groups"] * k),
                                                            (C, C // s["conv_groups"], k))
        g.w[p + "encoder.conv.conv.bias"] = g.rng.normal(0, 0.3, C)
        g.layernorm(p + "encoder.conv.LayerNorm", C)
    for i in range(L):
        q = f"{p}encoder.layer.{i}."
        if s["v1"]:  # in_proj [3C, C], per head h rows [q_h k_h v_h]; q_bias, v_bias; pos_proj, pos_q_proj
            g.linear(q + "attention.self.in_proj", 3 * C, C, bias=False)
            w_in = g.w[q + "attention.self.in_proj.weight"].reshape(H, 3, D, C)
            w_in[:, :2] *= QK_SCALE
            g.w[q + "attention.self.q_bias"] = g.rng.normal(0, 1.0, C)
            g.w[q + "attention.self.v_bias"] = g.rng.normal(0, 0.3, C)
            if s["c2p"]:
                g.linear(q + "attention.self.pos_proj", C, C, scale=QK_SCALE, bias=False)
            if s["p2c"]:
                g.linear(q + "attention.self.pos_q_proj", C, C, scale=QK_SCALE)
        else:
            g.linear(q + "attention.self.query_proj", C, C, scale=QK_SCALE)
            g.linear(q + "attention.self.key_proj", C, C, scale=QK_SCALE)
            g.linear(q + "attention.self.value_proj", C, C)
            if s["c2p"] and not s["share"]:
                g.linear(q + "attention.self.pos_key_proj", C, C, scale=QK_SCALE)
            if s["p2c"] and not s["share"]:
                g.linear(q + "attention.self.pos_query_proj", C, C, scale=QK_SCALE)
        g.linear(q + "attention.output.dense", C, C)
        g.layernorm(q + "attention.output.LayerNorm", C)
        g.linear(q + "intermediate.dense", I, C, scale=FFN_IN)
        g.linear(q + "output.dense", C, I, scale=FFN_OUT)
        g.layernorm(q + "output.LayerNorm", C)
    if head == "lm":
        g.linear("lm_predictions.lm_head.dense", C, C, scale=FFN_IN)
        g.layernorm("lm_predictions.lm_head.LayerNorm", C)
        g.w["lm_predictions.lm_head.bias"] = g.rng.normal(0, 0.3, V)
    elif head == "cls":
        g.linear("cls.predictions.transform.dense", s["E"], C, scale=FFN_IN)
        g.layernorm("cls.predictions.transform.LayerNorm", s["E"])
        g.w["cls.predictions.bias"] = g.rng.normal(0, 0.3, V)
        g.w["cls.predictions.decoder.weight"] = g.w[p + "embeddings.word_embeddings.weight"].copy()
        g.w["cls.predictions.decoder.bias"] = g.w["cls.predictions.bias"].copy()
    return g.w


def deberta_relative_positions(T, buckets, max_position):
    """build_relative_position with make_log_bucket_position, in float32 as transformers computes it."""
    ids = torch.arange(T)
    rel = ids[:, None] - ids[None, :]
    if buckets > 0 and max_position > 0:
        sign, mid = torch.sign(rel), buckets // 2
        abs_pos = torch.where((rel < mid) & (rel > -mid), torch.tensor(mid - 1).type_as(rel), torch.abs(rel))
        log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid,
                                                                               dtype=torch.float32)) * (mid - 1)) + mid
        rel = torch.where(abs_pos <= mid, rel.type_as(log_pos), log_pos * sign)
    return rel.long()


def deberta_forward(cfg, w, ids, types, norms=None, terms=None, no_buckets=False, no_transpose=False,
                    no_scale_factor=False, no_c2p=False, split_blocks=False, no_q_bias=False, v1_buckets=0,
                    no_conv=False, conv_on_output=False, v2_scale=False):
    """DebertaV2ForMaskedLM (DebertaForMaskedLM for v1) in float64: (attention [L, H, T, T], hidden
    [T, C], logits or None). terms, when a list, gets each layer's (c2c, c2p, p2c) [H, T, T] (None for
    a missing one). The keyword arguments plant one mistake each."""
    s, p = deberta_setup(cfg, v2_scale), "deberta."
    T = len(ids)
    ids_t = torch.tensor(ids)
    act = ACT[cfg["hidden_act"]]
    eps = cfg["layer_norm_eps"]
    x = w[p + "embeddings.word_embeddings.weight"][ids_t]
    if s["pbi"]:
        x = x + w[p + "embeddings.position_embeddings.weight"][torch.arange(T)]
    if s["types"]:
        x = x + w[p + "embeddings.token_type_embeddings.weight"][torch.tensor(types)]
    if s["E"] != C:
        x = x @ w[p + "embeddings.embed_proj.weight"].T
    x = ln(w, p + "embeddings.LayerNorm", x, eps)
    rel = w[p + "encoder.rel_embeddings.weight"] if s["rel"] else None
    if rel is not None and s["rel_norm"]:
        rel = ln(w, p + "encoder.LayerNorm", rel, eps)
    S = s["span"]
    relpos = deberta_relative_positions(T, -1 if no_buckets else s["buckets"], s["maxrel"])
    if s["v1"]:  # DebertaEncoder: build_relative_position without buckets (v1_buckets: v2's, planted)
        relpos = deberta_relative_positions(T, v1_buckets or -1, s["maxrel"])
        # disentangled_att_bias: att_span = min(max(Tq, Tk), max_relative_positions), the table's
        # rows max_relative_positions -+ att_span
        S = min(T, s["maxrel"])
        if rel is not None:
            rel = rel[s["maxrel"] - S:s["maxrel"] + S]
    heads = lambda t: t.reshape(t.shape[0], H, D).transpose(0, 1)
    scale = math.sqrt(D * (1 if no_scale_factor else s["sf"]))
    attentions = []
    x0 = x
    for i in range(L):
        q_ = f"{p}encoder.layer.{i}."
        a_ = q_ + "attention.self."
        if s["v1"]:  # in_proj(x).view(T, H, 3D).chunk(3, -1); + q_bias, + v_bias
            qkv = x @ w[a_ + "in_proj.weight"].T
            if split_blocks:  # planted: [q | k | v] blocks of C, as GPT-2's c_attn
                q, k, vh = (heads(qkv[:, j * C:(j + 1) * C]) for j in range(3))
            else:
                per_head = qkv.reshape(T, H, 3 * D).transpose(0, 1)  # [H, T, 3D]
                q, k, vh = per_head[..., :D], per_head[..., D:2 * D], per_head[..., 2 * D:]
            if not no_q_bias:
                q = q + w[a_ + "q_bias"].reshape(H, 1, D)
            vh = vh + w[a_ + "v_bias"].reshape(H, 1, D)
            v = vh.transpose(0, 1).reshape(T, C)
            pos_key, pos_query = "pos_proj", "pos_q_proj"
        else:
            v = lin(w, a_ + "value_proj", x)
            q, k, vh = heads(lin(w, a_ + "query_proj", x)), heads(lin(w, a_ + "key_proj", x)), heads(v)
            pos_key = "key_proj" if s["share"] else "pos_key_proj"
            pos_query = "query_proj" if s["share"] else "pos_query_proj"
        c2c = q @ k.transpose(-1, -2) / scale
        c2p = p2c = None
        if s["c2p"] and not no_c2p:
            pk = heads(lin(w, a_ + pos_key, rel))  # [H, 2S, D]
            idx = torch.clamp(relpos + S, 0, 2 * S - 1).expand(H, T, T)
            c2p = torch.gather(q @ pk.transpose(-1, -2), -1, idx) / scale
        if s["p2c"]:
            pq = heads(lin(w, a_ + pos_query, rel))
            idx = torch.clamp(-relpos + S, 0, 2 * S - 1).expand(H, T, T)
            p2c = torch.gather(k @ pq.transpose(-1, -2), -1, idx)
            p2c = (p2c if no_transpose else p2c.transpose(-1, -2)) / scale
        scores = c2c + (c2p if c2p is not None else 0) + (p2c if p2c is not None else 0)
        a = torch.softmax(scores, -1)
        if terms is not None:
            terms.append((c2c, c2p, p2c))
        if norms is not None:
            norms.append(value_norms(a, v, w[q_ + "attention.output.dense.weight"]))
        attentions.append(a)
        ctx = (a @ vh).transpose(0, 1).reshape(T, C)
        x = ln(w, q_ + "attention.output.LayerNorm", lin(w, q_ + "attention.output.dense", ctx) + x, eps)
        h = act(lin(w, q_ + "intermediate.dense", x))
        x = ln(w, q_ + "output.LayerNorm", lin(w, q_ + "output.dense", h) + x, eps)
        if i == 0 and s["conv"] and not no_conv:
            # ConvLayer: conv over the encoder's input (the embeddings), act, LayerNorm(layer 0's
            # output + it); every position is real here (the batch check pads by comparing items).
            src = x if conv_on_output else x0
            out = torch.nn.functional.conv1d(src.T[None], w[p + "encoder.conv.conv.weight"],
                                             w[p + "encoder.conv.conv.bias"], padding=(s["conv"] - 1) // 2,
                                             groups=s["conv_groups"])[0].T
            x = ln(w, p + "encoder.conv.LayerNorm", x + dict(ACT, tanh=torch.tanh)[s["conv_act"]](out), eps)
    logits = None
    if "lm_predictions.lm_head.bias" in w:
        h = ln(w, "lm_predictions.lm_head.LayerNorm", act(lin(w, "lm_predictions.lm_head.dense", x)), eps)
        logits = h @ w[p + "embeddings.word_embeddings.weight"].T + w["lm_predictions.lm_head.bias"]
    elif "cls.predictions.bias" in w:
        h = ln(w, "cls.predictions.transform.LayerNorm", act(lin(w, "cls.predictions.transform.dense", x)), eps)
        logits = h @ w[p + "embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
    return torch.stack(attentions), x, logits


DB_MISTAKES = [("no log buckets", dict(no_buckets=True)),
               ("p2c not transposed", dict(no_transpose=True)),
               ("scale without scale_factor", dict(no_scale_factor=True)),
               ("c2p missing", dict(no_c2p=True))]
DB_V1_MISTAKES = [("in_proj split as [q | k | v] blocks, not per head", dict(split_blocks=True)),
                  ("q_bias missing", dict(no_q_bias=True)),
                  ("relative positions log-bucketed as v2's (4 buckets)", dict(v1_buckets=4))]
DB_CONV_MISTAKES = [("no ConvLayer", dict(no_conv=True)),
                    ("ConvLayer over layer 0's output instead of its input", dict(conv_on_output=True))]


def check_deberta_terms(m, ids, types, dump):
    """scores_{c2c,c2p,p2c}.npy against the forward's terms: (worst error, problems)."""
    terms, problems, worst = [], [], 0.0
    deberta_forward(m["cfg"], m["w"], ids, types, terms=terms)
    T = len(ids)
    for t, name in enumerate(("c2c", "c2p", "p2c")):
        want = [layer[t] for layer in terms]
        path = os.path.join(dump, f"scores_{name}.npy")
        if want[0] is None:
            if os.path.exists(path):
                problems.append(f"scores_{name}.npy dumped for a model without {name}")
            continue
        if not os.path.exists(path):
            problems.append(f"scores_{name}.npy missing")
            continue
        got = np.load(path)
        if got.shape != (L, 1, H, T, T):
            problems.append(f"scores_{name}.npy shape {got.shape}, want {(L, 1, H, T, T)}")
            continue
        err = max(scaled_error(got[l, 0], want[l]) for l in range(L))
        worst = max(worst, err)
        if err > TOL:
            problems.append(f"scores_{name}.npy differs by {err:.2e}")
    return worst, problems


def make_models(root):
    """Writes the folders. Returns a list of dicts: name, family, dir, cfg, w, cases."""
    models = []

    def folder(name):
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        return d

    def save(d, cfg, tensors, dtype="F32"):
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
        return write_safetensors(os.path.join(d, "model.safetensors"), tensors, dtype)

    wp_cases = [("single", SINGLE, None), ("pair", PAIR[0], PAIR[1]), ("mask", MASK_TEXT.format("[MASK]"), None)]

    # BERT: BertForMaskedLM, decoder weight not stored (tied)
    d = folder("bert")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = bert_config("bert", WP_VOCAB, architectures=["BertForMaskedLM"])
    models.append(dict(name="bert", family="bert", dir=d, cfg=cfg, cases=wp_cases, mask_id=4, head=True,
                       w=save(d, cfg, bert_weights(11))))
    # BERT, gelu_new, BertForPreTraining-like: decoder weight and bias stored, NSP head to ignore
    d = folder("bert-gelu_new")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = bert_config("bert", WP_VOCAB, act="gelu_new", architectures=["BertForPreTraining"])
    models.append(dict(name="bert-gelu_new", family="bert", dir=d, cfg=cfg, cases=wp_cases, mask_id=4, head=True,
                       w=save(d, cfg, bert_weights(12, tied_decoder=True, nsp=True))))
    # BERT in F16
    d = folder("bert-f16")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = bert_config("bert", WP_VOCAB, architectures=["BertForMaskedLM"], torch_dtype="float16")
    models.append(dict(name="bert-f16", family="bert", dir=d, cfg=cfg, cases=wp_cases, mask_id=4, head=True,
                       w=save(d, cfg, bert_weights(13), "F16")))
    # The same architecture from pytorch_model.bin (no safetensors in the folder)
    d = folder("bert-bin")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = bert_config("bert", WP_VOCAB, architectures=["BertForMaskedLM"])
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    models.append(dict(name="bert-bin", family="bert", dir=d, cfg=cfg, cases=wp_cases, mask_id=4, head=True,
                       w=write_bin(os.path.join(d, "pytorch_model.bin"), bert_weights(15))))
    # BertModel: no "bert." prefix, no MLM head
    d = folder("bert-model")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = bert_config("bert", WP_VOCAB, architectures=["BertModel"])
    models.append(dict(name="bert-model", family="bert-model", dir=d, cfg=cfg, cases=wp_cases, mask_id=4,
                       head=False, w=save(d, cfg, bert_weights(14, prefix="", head=False))))
    # RoBERTa
    d = folder("roberta")
    V = roberta_tokenizer(os.path.join(d, "tokenizer.json"))
    cfg = bert_config("roberta", V, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                      architectures=["RobertaForMaskedLM"])
    models.append(dict(name="roberta", family="roberta", dir=d, cfg=cfg, mask_id=3, head=True,
                       cases=[("single", SINGLE, None), ("pair", PAIR[0], PAIR[1]),
                              ("mask", MASK_TEXT.format("<mask>"), None)],
                       w=save(d, cfg, roberta_weights(21, V))))
    # RoBERTa with gelu_new: RobertaLMHead applies gelu whatever hidden_act says
    d = folder("roberta-gelu_new")
    V = roberta_tokenizer(os.path.join(d, "tokenizer.json"))
    cfg = bert_config("roberta", V, act="gelu_new", pad_token_id=1, bos_token_id=0, eos_token_id=2,
                      architectures=["RobertaForMaskedLM"])
    models.append(dict(name="roberta-gelu_new", family="roberta", dir=d, cfg=cfg, mask_id=3, head=True,
                       cases=[("single", SINGLE, None), ("mask", MASK_TEXT.format("<mask>"), None)],
                       w=save(d, cfg, roberta_weights(22, V))))
    # XLM-RoBERTa: RoBERTa under model_type xlm-roberta, with a SentencePiece Unigram vocabulary
    d = folder("xlm-roberta")
    V, single_ids = xlmr_tokenizer(os.path.join(d, "tokenizer.json"))
    cfg = bert_config("xlm-roberta", V, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                      architectures=["XLMRobertaForMaskedLM"])
    models.append(dict(name="xlm-roberta", family="roberta", dir=d, cfg=cfg, mask_id=V - 1, head=True,
                       cases=[("single", SINGLE, None), ("mask", MASK_TEXT.format("<mask>"), None)],
                       want_ids={"single": single_ids}, w=save(d, cfg, roberta_weights(23, V))))
    # DistilBERT
    d = folder("distilbert")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = {"model_type": "distilbert", "vocab_size": WP_VOCAB, "dim": C, "n_layers": L, "n_heads": H,
           "hidden_dim": I, "activation": "gelu", "max_position_embeddings": P, "sinusoidal_pos_embds": False,
           "dropout": 0.1, "attention_dropout": 0.1, "initializer_range": 0.02, "pad_token_id": 0,
           "tie_weights_": True, "architectures": ["DistilBertForMaskedLM"]}
    models.append(dict(name="distilbert", family="distilbert", dir=d, cfg=cfg, cases=wp_cases, mask_id=4, head=True,
                       w=save(d, cfg, distilbert_weights(31))))
    # ALBERT
    d = folder("albert")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = bert_config("albert", WP_VOCAB, embedding_size=E, num_hidden_groups=1, inner_group_num=1,
                      classifier_dropout_prob=0.1, architectures=["AlbertForMaskedLM"])
    models.append(dict(name="albert", family="albert", dir=d, cfg=cfg, cases=wp_cases, mask_id=4, head=True,
                       w=save(d, cfg, albert_weights(41))))
    # ELECTRA discriminator
    d = folder("electra")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = bert_config("electra", WP_VOCAB, embedding_size=E, architectures=["ElectraForPreTraining"])
    models.append(dict(name="electra", family="electra", dir=d, cfg=cfg, cases=wp_cases, mask_id=4, head=False,
                       w=save(d, cfg, electra_weights(51))))
    # ModernBERT: tied decoder with its bias, no other biases; global, local, global layers
    mb_cases = [("single", SINGLE, None), ("mask", MASK_TEXT.format("[MASK]"), None)]
    d = folder("modernbert")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = modernbert_config()
    models.append(dict(name="modernbert", family="modernbert", dir=d, cfg=cfg, cases=mb_cases, mask_id=4,
                       head=True, layers=MB_L, w=save(d, cfg, modernbert_weights(61, cfg))))
    # ModernBERT with every bias, an untied decoder without bias, global_attn_every_n_layers 3, window 6
    d = folder("modernbert-biases")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = modernbert_config(every=3, window=6, biases=True, tied=False, decoder_bias=False)
    models.append(dict(name="modernbert-biases", family="modernbert", dir=d, cfg=cfg, cases=mb_cases[1:],
                       mask_id=4, head=True, layers=MB_L, w=save(d, cfg, modernbert_weights(62, cfg))))
    # DeBERTa-v3-like: share_att_key, "p2c|c2p" as a string, log buckets (4 buckets, max_relative_positions
    # 8, so that T ~ 11 buckets and clamps), LayerNorm'd rel_embeddings, no absolute positions, no token
    # types, lm_predictions.lm_head; a Unigram tokenizer.json with [CLS] A [SEP]
    db_cases = [("single", SINGLE, None), ("mask", MASK_TEXT.format("[MASK]"), None)]
    d = folder("deberta-v3")
    V, single_ids, mask_id = deberta_tokenizer(os.path.join(d, "tokenizer.json"))
    cfg = deberta_config(V, position_biased_input=False, type_vocab_size=0, max_relative_positions=8,
                         position_buckets=4, pos_att_type="p2c|c2p", share_att_key=True,
                         norm_rel_ebd="layer_norm", architectures=["DebertaV2ForMaskedLM"])
    models.append(dict(name="deberta-v3", family="deberta-v2", dir=d, cfg=cfg, cases=db_cases, mask_id=mask_id,
                       head=True, mistakes=True, want_ids={"single": single_ids},
                       w=save(d, cfg, deberta_weights(71, cfg, "lm"))))
    # DeBERTa-v2-like: c2p only with its own pos_key_proj, no buckets (max_relative_positions 4 clamps),
    # absolute positions, token types, embedding_size 16 (embed_proj), the legacy cls.predictions head
    d = folder("deberta-v2-c2p")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = deberta_config(WP_VOCAB, type_vocab_size=2, max_relative_positions=4, pos_att_type=["c2p"],
                         embedding_size=E, architectures=["DebertaV2ForMaskedLM"])
    models.append(dict(name="deberta-v2-c2p", family="deberta-v2", dir=d, cfg=cfg, mask_id=4, head=True,
                       cases=[("pair", PAIR[0], PAIR[1]), ("mask", MASK_TEXT.format("[MASK]"), None)],
                       w=save(d, cfg, deberta_weights(72, cfg, "cls"))))
    # DeBERTa in BF16: separate pos_key_proj and pos_query_proj, 6 buckets over max_position_embeddings
    d = folder("deberta-bf16")
    V, _, mask_id = deberta_tokenizer(os.path.join(d, "tokenizer.json"))
    cfg = deberta_config(V, position_biased_input=False, type_vocab_size=0, position_buckets=6,
                         pos_att_type=["p2c", "c2p"], torch_dtype="bfloat16", architectures=["DebertaV2ForMaskedLM"])
    models.append(dict(name="deberta-bf16", family="deberta-v2", dir=d, cfg=cfg, mask_id=mask_id, head=True,
                       mistakes=True, cases=[("mask", MASK_TEXT.format("[MASK]"), None)],
                       w=save(d, cfg, deberta_weights(73, cfg, "lm"), "BF16")))
    # DeBERTa v1 (model_type "deberta"), deberta-base-like: fused in_proj with q_bias and v_bias,
    # pos_proj and pos_q_proj, "c2p|p2c", no buckets with max_relative_positions 8 (T ~ 11 clamps), no
    # absolute positions, lm_predictions.lm_head; its byte-level BPE tokenizer
    d = folder("deberta-v1")
    V = roberta_tokenizer(os.path.join(d, "tokenizer.json"))
    cfg = deberta_config(V, model_type="deberta", pad_token_id=1, position_biased_input=False, type_vocab_size=0,
                         max_relative_positions=8, pos_att_type="c2p|p2c", architectures=["DebertaForMaskedLM"])
    models.append(dict(name="deberta-v1", family="deberta-v2", dir=d, cfg=cfg, mask_id=3, head=True,
                       mistakes=DB_V1_MISTAKES, cases=[("single", SINGLE, None), ("mask", MASK_TEXT.format("<mask>"), None)],
                       w=save(d, cfg, deberta_weights(74, cfg, "lm"))))
    # DeBERTa v1 with DebertaConfig's defaults for position_biased_input (true) and max_relative_positions
    # (-1: max_position_embeddings), token types, embed_proj, "p2p" counted in scale_factor (it adds no
    # term), the legacy cls.predictions head
    d = folder("deberta-v1-cls")
    shutil.copy(WORDPIECE, os.path.join(d, "tokenizer.json"))
    cfg = deberta_config(WP_VOCAB, model_type="deberta", type_vocab_size=2, pos_att_type=["c2p", "p2c", "p2p"],
                         embedding_size=E, architectures=["DebertaForMaskedLM"])
    models.append(dict(name="deberta-v1-cls", family="deberta-v2", dir=d, cfg=cfg, mask_id=4, head=True,
                       mistakes=[("scale_factor without p2p", dict(v2_scale=True))],
                       cases=[("pair", PAIR[0], PAIR[1])], w=save(d, cfg, deberta_weights(75, cfg, "cls"))))
    # DeBERTa-v2-xlarge's ConvLayer (conv_kernel_size 3, conv_groups 2, conv_act's default tanh) on the
    # v3-like layout
    d = folder("deberta-conv")
    V, _, mask_id = deberta_tokenizer(os.path.join(d, "tokenizer.json"))
    cfg = deberta_config(V, position_biased_input=False, type_vocab_size=0, max_relative_positions=8,
                         position_buckets=4, pos_att_type=["p2c", "c2p"], share_att_key=True, conv_kernel_size=3,
                         conv_groups=2, architectures=["DebertaV2ForMaskedLM"])
    models.append(dict(name="deberta-conv", family="deberta-v2", dir=d, cfg=cfg, mask_id=mask_id, head=True,
                       mistakes=DB_CONV_MISTAKES, cases=[("mask", MASK_TEXT.format("[MASK]"), None)],
                       w=save(d, cfg, deberta_weights(76, cfg, "lm"))))
    return models


def alternatives(m, types):
    """Plausible mistakes, as forward() overrides, to name what a mismatching CLI computes."""
    fam, cfg = m["family"], m["cfg"]
    if fam == "modernbert":
        return [(name, dict(kw, modernbert=True)) for name, kw in MB_MISTAKES]
    if fam == "deberta-v2":
        return []  # the planted mistakes are checked on every DeBERTa case with both terms
    swap = {"gelu": "gelu_new", "gelu_new": "gelu"}
    act = cfg.get("hidden_act", cfg.get("activation"))
    head = "gelu" if fam == "roberta" else act
    alts = [(f"{swap[act]} in the encoder instead of {act}", dict(act=swap[act])),
            (f"{swap[act]} in the encoder and {swap[head]} in the MLM head", dict(act=swap[act], head_act=swap[head])),
            (f"{swap[head]} in the MLM head instead of {head}", dict(head_act=swap[head]))]
    if any(types) and fam not in ("distilbert",):
        alts.append(("token_type_ids all 0 (pair types ignored)", dict(zero_types=True)))
    if fam == "roberta":
        alts.append(("positions 0..T-1 (no padding_idx+1 offset)", dict(positions="plain")))
    else:
        alts.append(("positions offset by 2 (RoBERTa's rule applied)", dict(positions="offset")))
    return alts


def run_alt(m, ids, types, kw):
    kw = dict(kw)
    if kw.pop("modernbert", False):
        return modernbert_forward(m["cfg"], m["w"], ids, **kw)
    T = len(ids)
    if kw.get("positions") == "plain":
        kw["positions"] = torch.arange(T)
    elif kw.get("positions") == "offset":
        if T + 2 > P:
            return None
        kw["positions"] = torch.arange(T) + 2
    try:
        return forward(m["family"], m["cfg"], m["w"], ids, types, **kw)
    except Exception:
        return None


def check_case(cli, m, case, work):
    """Runs one case; returns (ok, line)."""
    cname, text, pair = case
    label = f"{m['name']} {cname}"
    d = m["dir"]
    extra = ["--pair", pair] if pair is not None else []
    tok_json = os.path.join(work, "tokens.json")
    r = cli_run([cli, "tokenize", "--model", d, "--text", text, *extra, "--json", tok_json])
    if r.returncode != 0:
        return False, f"FAIL {label}: tokenize exited {r.returncode}: {last_line(r.stderr)}"
    with open(tok_json, encoding="utf-8") as f:
        tok = json.load(f)
    ids, types = tok["ids"], tok.get("type_ids") or [0] * len(tok["ids"])
    problems = []
    if cname in m.get("want_ids", {}) and ids != m["want_ids"][cname]:
        problems.append(f"tokenize gave ids {ids}, want {m['want_ids'][cname]}")
    if m["family"] == "roberta" and any(types):
        problems.append(f"RobertaProcessing gave type ids {types}, want all 0")
    if len(ids) + (2 if m["family"] == "roberta" else 0) > P:
        return False, f"FAIL {label}: {len(ids)} tokens do not fit max_position_embeddings {P}"
    dump, run_json = os.path.join(work, "dump"), os.path.join(work, "run.json")
    shutil.rmtree(dump, ignore_errors=True)
    if os.path.exists(run_json):
        os.remove(run_json)
    r = cli_run([cli, "run", "--model", d, "--text", text, *extra, "--dump", dump, "--json", run_json])
    if r.returncode != 0:
        return False, f"FAIL {label}: run exited {r.returncode}: {last_line(r.stderr)}"
    att, hidden, logits = forward(m["family"], m["cfg"], m["w"], ids, types)
    T = len(ids)
    L = m.get("layers", globals()["L"])
    got_att = np.load(os.path.join(dump, "attention.npy"))
    got_out = np.load(os.path.join(dump, "output.npy"))
    details = []
    tokens_path = os.path.join(dump, "tokens.json")
    if os.path.exists(tokens_path):
        with open(tokens_path, encoding="utf-8") as f:
            dumped = json.load(f)
        try:
            run_ids = [t["id"] for t in dumped[0]]
            if run_ids != ids:
                problems.append(f"run's tokens.json ids {run_ids} differ from tokenize's {ids}")
            segments = [t.get("segment") for t in dumped[0]]
            if None not in segments and segments != types:
                problems.append(f"run's tokens.json segments {segments} differ from tokenize's type ids {types}")
        except (KeyError, IndexError, TypeError):
            pass
    att_err = out_err = float("nan")
    if got_att.shape != (L, 1, H, T, T):
        problems.append(f"attention.npy shape {got_att.shape}, want {(L, 1, H, T, T)}")
    else:
        per_layer = [scaled_error(got_att[l, 0], att[l]) for l in range(L)]
        att_err = max(per_layer)
        details.append("attention per layer " + " ".join(f"{e:.1e}" for e in per_layer))
        if att_err > TOL:
            problems.append("attention differs (layer " + ", ".join(
                f"{l}: {e:.2e}" for l, e in enumerate(per_layer) if e > TOL) + ")")
        # Planted mistakes (ModernBERT): each must be at least 1e-2 from the CLI's attention.
        planted = {"modernbert": (MB_MISTAKES, lambda kw: modernbert_forward(m["cfg"], m["w"], ids, **kw)),
                   "deberta-v2": (m["mistakes"] if isinstance(m.get("mistakes"), list)
                                  else DB_MISTAKES if m.get("mistakes") else [],
                                  lambda kw: deberta_forward(m["cfg"], m["w"], ids, types, **kw))}
        mistakes, mistaken = planted.get(m["family"], ([], None))
        for name, kw in mistakes:
            dist = scaled_error(got_att[:, 0], mistaken(kw)[0])
            details.append(f"{name} {dist:.1e} away")
            if not dist >= 1e-2:
                problems.append(f"the CLI's attention is within {dist:.1e} of the mistake: {name}")
    if m["family"] == "deberta-v2":  # the terms of the scores (c2c, c2p, p2c)
        term_err, term_problems = check_deberta_terms(m, ids, types, dump)
        details.append(f"score terms {term_err:.1e}")
        problems += term_problems
    if got_out.shape != (1, T, C):
        problems.append(f"output.npy shape {got_out.shape}, want {(1, T, C)}")
    else:
        out_err = scaled_error(got_out[0], hidden)
        if out_err > TOL:
            problems.append(f"output differs by {out_err:.2e}")
    # logits.npy: the masked-LM head at every position, the whole distribution.
    logits_path = os.path.join(dump, "logits.npy")
    if m["head"]:
        got_logits = np.load(logits_path) if os.path.exists(logits_path) else None
        if got_logits is None or got_logits.shape != (1, T, logits.shape[-1]):
            problems.append(f"logits.npy missing or shaped {None if got_logits is None else got_logits.shape}")
        elif scaled_error(got_logits[0], logits) > TOL:
            problems.append(f"logits.npy differs by {scaled_error(got_logits[0], logits):.2e}")
    elif os.path.exists(logits_path):
        problems.append("logits.npy dumped for a model without a masked-LM head")
    # Masked-language-model predictions
    fill_err, fill_preds, fill_pos = None, [], None
    with open(run_json, encoding="utf-8") as f:
        run = json.load(f)
    fills = run.get("mask_fills") or []
    if cname == "mask":
        if m["mask_id"] not in ids:
            problems.append(f"mask token {m['mask_id']} not in ids {ids}")
        elif m["head"]:
            pos = ids.index(m["mask_id"])
            probs = torch.softmax(logits[pos], -1)
            top = torch.topk(probs, 6)
            want = [int(i) for i in top.indices[:5]]
            gap = float(top.values[4] - top.values[5])
            entry = [f for f in fills if f.get("position") == pos]
            if not entry:
                problems.append(f"no mask_fills entry at position {pos} (got {[f.get('position') for f in fills]})")
            else:
                preds = entry[0].get("predictions", [])
                got_ids = [p["id"] for p in preds[:5]]
                # Equal ids in order; a swap is accepted only between probabilities within TOL (ties).
                same = (len(got_ids) == 5 and len(set(got_ids)) == 5
                        and all(0 <= g < probs.shape[0] for g in got_ids)
                        and all(scaled_error(probs[g], probs[w_]) <= TOL for g, w_ in zip(got_ids, want)))
                if not same:
                    problems.append(f"mask top-5 {got_ids}, want {want} (5th-6th gap {gap:.1e})")
                known = [p for p in preds[:5] if 0 <= p["id"] < probs.shape[0]]
                fill_preds, fill_pos = known, pos
                fill_err = (scaled_error([p["p"] for p in known], [float(probs[p["id"]]) for p in known])
                            if known else float("nan"))
                if not fill_err <= P_TOL:
                    problems.append(f"mask probabilities differ by {fill_err:.2e}")
            if len(fills) != 1:
                problems.append(f"{len(fills)} mask_fills entries, want 1")
        else:
            if fills:
                problems.append(f"mask_fills present for a model without an MLM head: {fills}")
            notices = run.get("notices") or []
            if not any("masked" in str(n).lower() for n in notices):
                problems.append(f"no notice about the missing masked-language-model head (notices {notices})")
    elif fills:
        problems.append(f"mask_fills present without a mask token: {fills}")
    # Value-weighted norms on each model's first case (Kobayashi et al.), from the same forward.
    vn_err = None
    if case is m["cases"][0]:
        vn_json = os.path.join(work, "value_norm.json")
        r = cli_run([cli, "analyze", "--model", d, "--text", text, *extra, "--measure", "value-norm",
                     "--json", vn_json])
        if r.returncode != 0:
            problems.append(f"analyze --measure value-norm exited {r.returncode}: {last_line(r.stderr)}")
        else:
            with open(vn_json, encoding="utf-8") as f:
                have = np.array(json.load(f)["value_norm"], dtype=np.float64)
            norms = []
            forward(m["family"], m["cfg"], m["w"], ids, types, norms=norms)
            want = torch.stack(norms).numpy()
            if have.shape != want.shape:
                problems.append(f"value_norm shape {have.shape}, want {want.shape}")
            else:
                # Against max(1, the largest norm), as decoder_reference.py's check_value_norms.
                vn_err = scaled_error(have, want, magnitude=np.abs(want).max())
                if vn_err > 1e-5:
                    problems.append(f"value norms differ by {vn_err:.2e} of max(1, the largest)")
    summary = f"T={T} attention {att_err:.2e} output {out_err:.2e}"
    if vn_err is not None:
        summary += f" value-norm {vn_err:.2e}"
    if fill_err is not None:
        summary += f" mask_fills p {fill_err:.2e}"
    if problems and got_att.shape == (L, 1, H, T, T) and got_out.shape == (1, T, C):
        matched = []
        for name, kw in alternatives(m, types):
            alt = run_alt(m, ids, types, kw)
            if alt is None:
                continue
            a_err = scaled_error(got_att[:, 0], alt[0])
            o_err = scaled_error(got_out[0], alt[1])
            p_err = 0.0
            if fill_preds and alt[2] is not None:
                alt_probs = torch.softmax(alt[2][fill_pos], -1)
                p_err = scaled_error([p["p"] for p in fill_preds], [float(alt_probs[p["id"]]) for p in fill_preds])
            if a_err <= TOL and o_err <= TOL and p_err <= P_TOL:
                matched.append(name)
        if matched:
            details.append("the CLI matches: " + "; ".join(matched))
    if problems:
        return False, f"FAIL {label}: {summary}: " + "; ".join(problems) + " [" + "; ".join(details) + "]"
    return True, f"ok   {label}: {summary} [{'; '.join(details)}]"


def check_modernbert_batch(cli, m, work):
    """A padded batch on ModernBERT: the short item's padded queries see only padding within their
    window (their rows keep key 0 and are zeroed); each item must equal its own forward and the
    padding must be exactly 0."""
    texts = [SINGLE, "the dog."]
    ids = []
    for t in texts:
        tok_json = os.path.join(work, "tokens.json")
        r = cli_run([cli, "tokenize", "--model", m["dir"], "--text", t, "--json", tok_json])
        if r.returncode != 0:
            return False, f"FAIL {m['name']} batch: tokenize exited {r.returncode}: {last_line(r.stderr)}"
        with open(tok_json, encoding="utf-8") as f:
            ids.append(json.load(f)["ids"])
    dump = os.path.join(work, "dump")
    shutil.rmtree(dump, ignore_errors=True)
    r = cli_run([cli, "run", "--model", m["dir"], "--text", texts[0], "--text", texts[1], "--dump", dump])
    if r.returncode != 0:
        return False, f"FAIL {m['name']} batch: run exited {r.returncode}: {last_line(r.stderr)}"
    got_att = np.load(os.path.join(dump, "attention.npy"))
    got_out = np.load(os.path.join(dump, "output.npy"))
    T = max(len(i) for i in ids)
    problems, errs = [], []
    if got_att.shape != (MB_L, 2, H, T, T) or got_out.shape != (2, T, C):
        return False, f"FAIL {m['name']} batch: shapes {got_att.shape} {got_out.shape}"
    for b, item in enumerate(ids):
        n = len(item)
        att, hidden, _ = modernbert_forward(m["cfg"], m["w"], item)
        errs.append(max(scaled_error(got_att[:, b, :, :n, :n], att), scaled_error(got_out[b, :n], hidden)))
        if errs[-1] > TOL:
            problems.append(f"item {b} differs by {errs[-1]:.2e}")
        if np.any(got_att[:, b, :, n:, :] != 0) or np.any(got_att[:, b, :, :, n:] != 0) or \
                not np.all(np.isfinite(got_out[b])):
            problems.append(f"item {b}'s padding is not exactly 0 (or not finite)")
    line = f"{m['name']} batch: T={[len(i) for i in ids]} worst item {max(errs):.2e}"
    return (False, f"FAIL {line}: " + "; ".join(problems)) if problems else (True, f"ok   {line}")


def check_deberta_batch(cli, m, work):
    """A padded batch of two on DeBERTa: each item's attention, hidden states and score terms must
    equal its own forward, and the padding of attention and terms must be exactly 0."""
    texts = [SINGLE, "the dog."]
    ids = []
    for t in texts:
        tok_json = os.path.join(work, "tokens.json")
        r = cli_run([cli, "tokenize", "--model", m["dir"], "--text", t, "--json", tok_json])
        if r.returncode != 0:
            return False, f"FAIL {m['name']} batch: tokenize exited {r.returncode}: {last_line(r.stderr)}"
        with open(tok_json, encoding="utf-8") as f:
            ids.append(json.load(f)["ids"])
    dump = os.path.join(work, "dump")
    shutil.rmtree(dump, ignore_errors=True)
    r = cli_run([cli, "run", "--model", m["dir"], "--text", texts[0], "--text", texts[1], "--dump", dump])
    if r.returncode != 0:
        return False, f"FAIL {m['name']} batch: run exited {r.returncode}: {last_line(r.stderr)}"
    T = max(len(i) for i in ids)
    got = {n: np.load(os.path.join(dump, n + ".npy")) for n in ("attention", "output", "scores_c2c",
                                                                 "scores_c2p", "scores_p2c")}
    problems, errs = [], []
    if got["attention"].shape != (L, 2, H, T, T) or got["output"].shape != (2, T, C):
        return False, f"FAIL {m['name']} batch: shapes {got['attention'].shape} {got['output'].shape}"
    for b, item in enumerate(ids):
        n = len(item)
        terms = []
        att, hidden, _ = deberta_forward(m["cfg"], m["w"], item, [0] * n, terms=terms)
        errs.append(max([scaled_error(got["attention"][:, b, :, :n, :n], att),
                         scaled_error(got["output"][b, :n], hidden)] +
                        [scaled_error(got["scores_" + name][:, b, :, :n, :n], torch.stack([l[t] for l in terms]))
                         for t, name in enumerate(("c2c", "c2p", "p2c"))]))
        if errs[-1] > TOL:
            problems.append(f"item {b} differs by {errs[-1]:.2e}")
        for name in ("attention", "scores_c2c", "scores_c2p", "scores_p2c"):
            if np.any(got[name][:, b, :, n:, :] != 0) or np.any(got[name][:, b, :, :, n:] != 0):
                problems.append(f"item {b}'s padding in {name}.npy is not exactly 0")
    line = f"{m['name']} batch: T={[len(i) for i in ids]} worst item {max(errs):.2e}"
    return (False, f"FAIL {line}: " + "; ".join(problems)) if problems else (True, f"ok   {line}")


def last_line(s):
    lines = [l for l in s.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(no message)"


def self_check():
    """The hand-written BertLayer against torch.nn's post-LayerNorm TransformerEncoderLayer and
    MultiheadAttention with the same weights: guards the reference itself."""
    w = {k: v for k, v in bert_weights(99).items()}
    w = {k: torch.from_numpy(v) for k, v in w.items()}
    p = "bert.encoder.layer.0."
    x = torch.from_numpy(np.random.default_rng(5).normal(0, 1, (9, C)))
    a, y = bert_layer(w, p, x, gelu)
    layer = torch.nn.TransformerEncoderLayer(C, H, I, dropout=0.0, activation="gelu", layer_norm_eps=EPS,
                                             batch_first=True, norm_first=False).double().eval()
    q, k, v = (p + "attention.self." + n for n in ("query", "key", "value"))
    with torch.no_grad():
        sa = layer.self_attn
        sa.in_proj_weight.copy_(torch.cat([w[q + ".weight"], w[k + ".weight"], w[v + ".weight"]]))
        sa.in_proj_bias.copy_(torch.cat([w[q + ".bias"], w[k + ".bias"], w[v + ".bias"]]))
        for mod, name in ((sa.out_proj, "attention.output.dense"), (layer.linear1, "intermediate.dense"),
                          (layer.linear2, "output.dense"), (layer.norm1, "attention.output.LayerNorm"),
                          (layer.norm2, "output.LayerNorm")):
            mod.weight.copy_(w[p + name + ".weight"])
            mod.bias.copy_(w[p + name + ".bias"])
        want_y = layer(x[None])[0]
        _, want_a = sa(x[None], x[None], x[None], need_weights=True, average_attn_weights=False)
    errs = scaled_error(y, want_y), scaled_error(a, want_a[0])
    return max(errs) < 1e-10, errs


class _Evil:
    """A pickle that runs a shell command when loaded by Python's pickle (torch.load)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def check_malicious_bin(cli, bert_dir, tmp):
    """A pytorch_model.bin whose pickle calls os.system is refused, and nothing runs."""
    d = os.path.join(tmp, "evil-bert")
    os.makedirs(d, exist_ok=True)
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(os.path.join(bert_dir, name), d)
    marker = os.path.join(tmp, "PWNED")
    torch.save({"bert.embeddings.word_embeddings.weight": torch.zeros(2, 2), "x": _Evil(marker)},
               os.path.join(d, "pytorch_model.bin"))
    r = cli_run([cli, "run", "--model", d, "--text", "hello"])
    out = r.stdout + r.stderr
    ok = r.returncode == 2 and "refused" in out and "posix.system" in out and not os.path.exists(marker)
    return ok, (f"{'ok  ' if ok else 'FAIL'} malicious pytorch_model.bin: exit {r.returncode}, "
                f"ran code: {os.path.exists(marker)}: {out.strip()[:160]}")


def main():
    cli = sys.argv[1]
    ok, errs = self_check()
    if not ok:
        print(f"FAIL reference self-check against torch.nn.TransformerEncoderLayer: {errs}")
        return 1
    keep = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as tmp:
        root = keep or tmp
        os.makedirs(root, exist_ok=True)
        models = make_models(root)
        results = []
        for m in models:
            for case in m["cases"]:
                results.append(check_case(cli, m, case, tmp))
                print(results[-1][1], flush=True)
        results.append(check_modernbert_batch(cli, next(m for m in models if m["name"] == "modernbert"), tmp))
        print(results[-1][1], flush=True)
        for name in ("deberta-v3", "deberta-conv"):
            results.append(check_deberta_batch(cli, next(m for m in models if m["name"] == name), tmp))
            print(results[-1][1], flush=True)
        results.append(check_malicious_bin(cli, next(m["dir"] for m in models if m["name"] == "bert"), tmp))
        print(results[-1][1], flush=True)
    failures = sum(1 for ok, _ in results if not ok)
    print("ok" if not failures else f"{failures} of {len(results)} case(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
