#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a Llama-family, GPT-2, GPT-NeoX, BLOOM or BERT Hugging Face folder (config.json,
model.safetensors in F32, F16 or BF16, and tokenizer.json or vocab.json + merges.txt) as one GGUF
file, as llama.cpp's convert_hf_to_gguf.py lays it out: Q and K rows permuted for llama, GPT-2's
Conv1D weights transposed, GPT-NeoX's and BLOOM's fused QKV regrouped as Q, K, V, Gemma's norms
+ 1, Phi-3's LongRoPE factors (tests/reference/gguf_reference.py's other_tensors), norms F32, the
matrices in TYPE (F32, F16, Q8_0, Q4_K or Q6_K, quantized by tests/reference/gguf_reference.py's
simple quantizers), or in llama-quantize's Q4_K_M mix (--ftype q4_k_m, or TYPE Q4_K_M: Q4_K
matrices, Q6_K for the head and for attn_v and ffn_down in the first and last eighth of the
layers and every third between; general.file_type 15). For benchmarks of real shapes (bench/,
docs), not for publishing models.

  gguf-from-folder.py HF_DIR OUT.gguf [TYPE]      (TYPE defaults to Q4_K)
  gguf-from-folder.py HF_DIR OUT.gguf --ftype q4_k_m

Tensors are read, quantized and written one at a time, a few thousand rows at once, so a 1B
model converts in a few GB of memory.
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "reference"))
import gguf_reference as ref  # noqa: E402

# llama_ftype (general.file_type) of a file whose matrices are all TYPE.
FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7, "Q4_K_M": 15}


def read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def read_tensor(path, data_start, e):
    a, b = e["data_offsets"]
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=data_start + a, shape=(b - a,))
    if e["dtype"] == "F32":
        return raw.view("<f4").reshape(e["shape"])
    if e["dtype"] == "F16":
        return raw.view("<f2").astype(np.float32).reshape(e["shape"])
    if e["dtype"] == "BF16":
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(e["shape"])
    raise SystemExit("%s: dtype %s is not F32, F16 or BF16" % (path, e["dtype"]))


def add_vocab_files(g, hf):
    """tokenizer.ggml.* of a GPT-2 style vocab.json + merges.txt (byte-level BPE)."""
    vocab = json.load(open(os.path.join(hf, "vocab.json"), encoding="utf-8"))
    merges = [line.rstrip("\n") for line in open(os.path.join(hf, "merges.txt"), encoding="utf-8")
              if line.strip() and not line.startswith("#version")]
    by_id = {i: t for t, i in vocab.items()}
    tokens = [by_id.get(i, "[UNUSED_%d]" % i) for i in range(max(by_id) + 1)]
    g.add("tokenizer.ggml.model", 8, "gpt2")
    g.add("tokenizer.ggml.pre", 8, "gpt-2")
    g.add("tokenizer.ggml.tokens", 9, (8, tokens))
    g.add("tokenizer.ggml.token_type", 9, (5, [1] * len(tokens)))
    g.add("tokenizer.ggml.merges", 9, (8, merges))


def new_writer(arch, hf, qtype):
    """A GGUF writer with the general.* keys and the folder's tokenizer."""
    g = ref.Writer()
    g.add("general.architecture", 8, arch)
    g.add("general.name", 8, os.path.basename(os.path.normpath(hf)))
    if qtype in FILE_TYPE:
        g.add("general.file_type", 4, FILE_TYPE[qtype])
    if not ref.add_vocabulary(g, hf) and os.path.exists(os.path.join(hf, "vocab.json")):
        add_vocab_files(g, hf)
    return g


def write_tensors(g, plan, out):
    """The header (tensor infos first: their offsets follow from the sizes alone), then each
    planned tensor (gguf name, dims, type, bytes, a function giving its float32 rows), read,
    quantized and written a few thousand rows at a time."""
    offsets, offset = [], 0
    for _, _, t, nbytes, _ in plan:
        offsets.append(offset)
        offset += nbytes + (-nbytes) % g.alignment
    head = b"GGUF" + struct.pack("<I", g.version) + g.count(len(plan)) + g.count(len(g.kv)) + \
        b"".join(g.kv)
    for (gname, dims, t, _, _), off in zip(plan, offsets):
        head += g.string(gname) + struct.pack("<I", len(dims)) + \
            b"".join(g.count(d) for d in dims) + struct.pack("<IQ", ref.TYPES[t], off)
    head += b"\0" * ((-len(head)) % g.alignment)
    with open(out, "wb") as f:
        f.write(head)
        for gname, dims, t, nbytes, rows in plan:
            rows = rows()
            for r in range(0, rows.shape[0], 4096):
                f.write(ref.quantize(t, np.asarray(rows[r:r + 4096], dtype=np.float32)))
            f.write(b"\0" * ((-nbytes) % g.alignment))
            print("%-28s %-5s %s" % (gname, t, dims), file=sys.stderr)


def write_other(cfg, hf, st, header, data_start, out, qtype):
    """gpt2, gpt_neox, bloom or bert, as gguf_reference.other_tensors writes them (the
    converter's transpositions and regrouped fused QKV)."""
    arch, keys = ref.other_hparams(cfg)
    g = new_writer(arch, hf, qtype)
    for key, vtype, v in keys:
        g.add(arch + "." + key, vtype, v)
    plan = []
    # The GGUF names written, for Q4_K_M's rule on a tied head.
    names = {gname for name, e in header.items() for gname, _ in ref.other_tensors(
        arch, cfg, name, np.broadcast_to(np.float32(0), e["shape"]))}
    for gname, a in ref.other_extra(arch, cfg):
        plan.append((gname, [a.size], "F32", a.size * 4, lambda a=a: a.reshape(1, -1)))
    for name, e in header.items():
        # Shapes first, from a stand-in of the same shape; the data when written.
        stand_in = np.broadcast_to(np.float32(0), e["shape"])  # no memory: views only
        for i, (gname, a) in enumerate(ref.other_tensors(arch, cfg, name, stand_in)):
            t = matrix_type(qtype, gname, cfg, names) if a.ndim == 2 else "F32"
            per, size = ref.LAYOUT[t]
            count = int(np.prod(a.shape))

            def rows(name=name, e=e, i=i):
                w = ref.other_tensors(arch, cfg, name, read_tensor(st, data_start, e))[i][1]
                return w.reshape(-1, w.shape[-1]) if w.ndim == 2 else w.reshape(1, -1)
            plan.append((gname, list(reversed(a.shape)), t, count // per * size, rows))
    write_tensors(g, plan, out)


def matrix_type(qtype, gname, cfg, gguf_names):
    """The type of the matrix gname: qtype, or under Q4_K_M llama-quantize's choice."""
    if qtype != "Q4_K_M":
        return qtype
    layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
    try:
        return ref.q4_k_m_type(gname, layers, "output.weight" in gguf_names)
    except ValueError as e:
        raise SystemExit(str(e))


def main():
    args = sys.argv[1:]
    if "--ftype" in args:
        i = args.index("--ftype")
        if i + 1 >= len(args) or args[i + 1].lower() != "q4_k_m":
            raise SystemExit("--ftype takes q4_k_m")
        args = args[:i] + ["Q4_K_M"] + args[i + 2:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    hf, out = args[0], args[1]
    qtype = args[2] if len(args) > 2 else "Q4_K"
    if qtype not in ("F32", "F16", "Q8_0", "Q4_K", "Q6_K", "Q4_K_M"):
        raise SystemExit("TYPE %s: F32, F16, Q8_0, Q4_K, Q6_K or Q4_K_M" % qtype)
    cfg = json.load(open(os.path.join(hf, "config.json")))
    arch = cfg["model_type"]
    if arch not in ("llama", "qwen2", "qwen3", "gpt2", "gpt_neox", "bloom", "bert", "gemma",
                    "gemma2", "gemma3_text", "phi3"):
        raise SystemExit("model_type %s: only llama, qwen2, qwen3, gpt2, gpt_neox, bloom, bert, "
                         "gemma, gemma2, gemma3_text and phi3 are written" % arch)
    st = os.path.join(hf, "model.safetensors")
    header, data_start = read_header(st)
    if arch not in ("llama", "qwen2", "qwen3"):
        return write_other(cfg, hf, st, header, data_start, out, qtype)
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    names = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
    layer = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}

    g = new_writer(arch, hf, qtype)
    g.add(arch + ".block_count", 4, cfg["num_hidden_layers"])
    g.add(arch + ".context_length", 4, cfg["max_position_embeddings"])
    g.add(arch + ".embedding_length", 4, cfg["hidden_size"])
    g.add(arch + ".feed_forward_length", 4, cfg["intermediate_size"])
    g.add(arch + ".attention.head_count", 4, heads)
    g.add(arch + ".attention.head_count_kv", 4, kv)
    g.add(arch + ".attention.layer_norm_rms_epsilon", 6, cfg.get("rms_norm_eps", 1e-6))
    g.add(arch + ".rope.freq_base", 6, cfg.get("rope_theta", 10000.0))
    if "head_dim" in cfg:
        g.add(arch + ".attention.key_length", 4, cfg["head_dim"])
        g.add(arch + ".attention.value_length", 4, cfg["head_dim"])

    plan = []
    has_output = "lm_head.weight" in header and not cfg.get("tie_word_embeddings")
    for name, e in header.items():
        if name == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        if name in names:
            gname = names[name]
        else:
            parts = name.split(".")
            gname = "blk.%s.%s.%s" % (parts[2], layer[".".join(parts[3:-1])], parts[-1])
        shape = e["shape"]
        t = "F32"
        if len(shape) == 2:
            t = matrix_type(qtype, gname, cfg, {"output.weight"} if has_output else set())
        per, size = ref.LAYOUT[t]

        def rows(name=name, e=e):
            w = read_tensor(st, data_start, e)
            if arch == "llama" and name.endswith(("q_proj.weight", "q_proj.bias")):
                w = ref.permute(np.asarray(w), heads)
            elif arch == "llama" and name.endswith(("k_proj.weight", "k_proj.bias")):
                w = ref.permute(np.asarray(w), kv)
            return w.reshape(-1, w.shape[-1]) if w.ndim == 2 else w.reshape(1, -1)
        plan.append((gname, list(reversed(shape)), t, int(np.prod(shape)) // per * size, rows))
    write_tensors(g, plan, out)


if __name__ == "__main__":
    main()
