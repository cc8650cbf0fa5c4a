#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""GGUF files for attnscope's tests, written here from the published format (llama.cpp's
docs/gguf.md, ggml-common.h's block structs), with no attnscope code.

  gguf_reference.py blocks OUT.gguf    random blocks of every readable type ("q.TYPE") beside
                                        their float32 values computed here ("ref.TYPE"), one
                                        IQ2_XXS tensor, which attnscope must refuse by name, and
                                        the writer's quantizers' output ("rt.TYPE": Q6_K, Q4_K,
                                        Q8_0) beside the floats they quantized ("src.TYPE")
  gguf_reference.py metadata DIR       meta_v1/v2/v3.gguf: every value type, nested arrays, two
                                        tensors; v3 with general.alignment 64
  gguf_reference.py unmappable DIR     small llama files the Llama family must refuse
  gguf_reference.py llama HF_DIR DIR [TYPES]
                                       the Llama folder's config.json + model.safetensors as
                                        llama_{F32,F16,Q8_0,Q4_K}.gguf (or the comma-separated
                                        TYPES, Q4_K_M the mix q4_k_m_type gives), with Q and K
                                        rows permuted as
                                        convert_hf_to_gguf.py's LlamaModel.permute does; a
                                        qwen2 folder as qwen2_F32.gguf, unpermuted, as
                                        convert_hf_to_gguf.py's Qwen2Model writes it. A byte-level
                                        BPE tokenizer.json in the folder goes in as
                                        tokenizer.ggml.* (model gpt2, pre gpt-2)
  gguf_reference.py llama_split HF_DIR DIR TYPES N
                                       the same, each as N split files
                                        (llama_TYPE-00001-of-0000N.gguf, ...), as llama.cpp's
                                        gguf-split writes them
  gguf_reference.py convert HF_DIR[,HF_DIR...] DIR TYPES
                                       gpt2, gpt_neox, bloom, bert, gemma, gemma2, gemma3_text
                                        or phi3 folders as ARCH_TYPE.gguf for each
                                        comma-separated TYPE, as convert_hf_to_gguf.py writes
                                        them (other_tensors); a type F16:qkv (or F16:norm)
                                        writes ARCH_F16_qkv.gguf with the planted mistake
  gguf_reference.py bpe_tokenizer DIR  DIR/tokenizer.json: GPT-2's byte-level BPE form with 301
                                        tokens (256 bytes, 44 merges learnt here from a sentence,
                                        <|endoftext|>)
  gguf_reference.py tiny_llama DIR [WIDTH]
                                       DIR: a one-layer Llama folder (config.json, F32
                                        model.safetensors of random weights, the bpe_tokenizer),
                                        64 wide (or WIDTH, 256 for K-quants)
  gguf_reference.py vocab HF_DIR OUT   OUT: a vocabulary-only GGUF (no tensors) of the folder's
                                        byte-level BPE tokenizer.json, as llama.cpp's
                                        models/ggml-vocab-*.gguf files are

The dequantization below is numpy float32 arithmetic in the order ggml's reference code uses
(each product and sum rounded to float32, no fused multiply-add), so attnscope must match it bit
for bit.
"""
import json
import math
import os
import struct
import sys

import numpy as np

QK_K = 256
TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q2_K": 10,
         "Q3_K": 11, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "IQ2_XXS": 16, "IQ4_NL": 20,
         "IQ4_XS": 23, "BF16": 30}
# (values per block, bytes per block)
LAYOUT = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q4_0": (32, 18), "Q4_1": (32, 20),
          "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34), "Q2_K": (256, 84),
          "Q3_K": (256, 110), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
          "IQ4_NL": (32, 18), "IQ4_XS": (256, 136), "IQ2_XXS": (256, 66)}
IQ4_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                      dtype=np.float32)
f32 = np.float32


def half(b, at):
    return f32(np.frombuffer(bytes(b[at:at + 2]), dtype="<f2")[0])


def nibbles(qs):
    """16 bytes -> 32 values: low nibbles first, then high nibbles."""
    return np.concatenate([qs & 15, qs >> 4]).astype(np.int32)


def dq_block(t, b):
    """One block's float32 values, from the struct layout of ggml-common.h."""
    b = np.frombuffer(bytes(b), dtype=np.uint8)
    if t == "Q8_0":
        return b[2:].view(np.int8).astype(f32) * half(b, 0)
    if t == "Q4_0":
        return (nibbles(b[2:]) - 8).astype(f32) * half(b, 0)
    if t == "Q4_1":
        return nibbles(b[4:]).astype(f32) * half(b, 0) + half(b, 2)
    if t in ("Q5_0", "Q5_1"):
        off = 2 if t == "Q5_0" else 4
        qh = int.from_bytes(bytes(b[off:off + 4]), "little")
        high = np.array([(qh >> j) & 1 for j in range(32)], dtype=np.int32) << 4
        q = nibbles(b[off + 4:]) | high
        if t == "Q5_0":
            return (q - 16).astype(f32) * half(b, 0)
        return q.astype(f32) * half(b, 0) + half(b, 2)
    if t == "IQ4_NL":
        return half(b, 0) * IQ4_LEVELS[nibbles(b[2:])]
    if t == "Q2_K":
        scales, qs, d, dmin = b[:16], b[16:80], half(b, 80), half(b, 82)
        out = []
        for n in range(2):
            q = qs[32 * n:32 * n + 32]
            for j in range(4):
                for part in range(2):
                    sc = scales[8 * n + 2 * j + part]
                    vals = ((q[16 * part:16 * part + 16] >> (2 * j)) & 3).astype(f32)
                    out.append((d * f32(sc & 15)) * vals - dmin * f32(sc >> 4))
        return np.concatenate(out)
    if t == "Q3_K":
        hmask, qs, packed, d = b[:32], b[32:96], b[96:108], half(b, 108)
        # 16 scales of 6 bits: low 4 bits in bytes 0-7 (low nibbles, then high nibbles), the top
        # 2 bits in bytes 8-11, two bits per scale, scales 0-3 in bits 0-1 and so on.
        sc = [((packed[i] & 15) if i < 8 else (packed[i - 8] >> 4)) |
              (((packed[8 + i % 4] >> (2 * (i // 4))) & 3) << 4) for i in range(16)]
        out = []
        for n in range(2):
            q = qs[32 * n:32 * n + 32]
            for j in range(4):
                bit = 1 << (4 * n + j)
                for part in range(2):
                    idx = slice(16 * part, 16 * part + 16)
                    v = ((q[idx] >> (2 * j)) & 3).astype(np.int32) - np.where(hmask[idx] & bit, 0, 4)
                    out.append((d * f32(sc[8 * n + 2 * j + part] - 32)) * v.astype(f32))
        return np.concatenate(out)
    if t in ("Q4_K", "Q5_K"):
        d, dmin, packed = half(b, 0), half(b, 2), b[4:16]
        qh = b[16:48] if t == "Q5_K" else None
        qs = b[48:] if t == "Q5_K" else b[16:]
        scales, mins = [], []
        for j in range(8):  # 6-bit scale and min: bytes 0-3 and 4-7, top bits of 8-11 after
            if j < 4:
                scales.append(packed[j] & 63)
                mins.append(packed[j + 4] & 63)
            else:
                scales.append((packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4))
                mins.append((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4))
        out = []
        for k in range(4):
            q = qs[32 * k:32 * k + 32]
            for part in range(2):
                v = ((q >> 4) if part else (q & 15)).astype(np.int32)
                if qh is not None:
                    v = v + np.where(qh & (1 << (2 * k + part)), 16, 0)
                j = 2 * k + part
                out.append((d * f32(scales[j])) * v.astype(f32) - dmin * f32(mins[j]))
        return np.concatenate(out)
    if t == "Q6_K":
        ql, qh, sc, d = b[:128], b[128:192], b[192:208].view(np.int8), half(b, 208)
        out = np.zeros(256, dtype=f32)
        for n in range(2):
            l_, h_, s_ = ql[64 * n:64 * n + 64], qh[32 * n:32 * n + 32], sc[8 * n:8 * n + 8]
            for r in range(4):  # quarter r of the 128 values
                low = (l_[32 * (r % 2):32 * (r % 2) + 32] >> (4 * (r // 2))) & 15
                q = (low | (((h_ >> (2 * r)) & 3) << 4)).astype(np.int32) - 32
                for l in range(32):
                    out[128 * n + 32 * r + l] = (d * f32(s_[l // 16 + 2 * r])) * f32(q[l])
        return out
    if t == "IQ4_XS":
        d, sh, sl, qs = half(b, 0), int(b[2]) | (int(b[3]) << 8), b[4:8], b[8:]
        out = []
        for ib in range(8):
            ls = ((sl[ib // 2] >> (4 * (ib % 2))) & 15) | (((sh >> (2 * ib)) & 3) << 4)
            out.append((d * f32(ls - 32)) * IQ4_LEVELS[nibbles(qs[16 * ib:16 * ib + 16])])
        return np.concatenate(out)
    raise ValueError(t)


def dequantize(t, raw, count):
    if t == "F32":
        return np.frombuffer(raw, dtype="<f4").copy()
    if t == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(f32)
    if t == "BF16":
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(f32)
    n, size = LAYOUT[t]
    return np.concatenate([dq_block(t, raw[i * size:(i + 1) * size]) for i in range(count // n)])


# ------------------------------------------------------------------------------------------
# The writer


class Writer:
    """GGUF version 1, 2 or 3: counts and lengths are 32-bit in version 1, 64-bit after."""

    def __init__(self, version=3, alignment=32):
        self.version, self.alignment = version, alignment
        self.kv, self.tensors = [], []

    def count(self, n):
        return struct.pack("<I" if self.version == 1 else "<Q", n)

    def string(self, s):
        b = s.encode()
        return self.count(len(b)) + b

    def value(self, vtype, v):
        fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
               11: "<q", 12: "<d"}
        if vtype == 8:
            return self.string(v)
        if vtype == 9:
            etype, items = v
            return struct.pack("<I", etype) + self.count(len(items)) + b"".join(
                self.value(etype, x) for x in items)
        return struct.pack(fmt[vtype], v)

    def add(self, key, vtype, v):
        self.kv.append(self.string(key) + struct.pack("<I", vtype) + self.value(vtype, v))

    def tensor(self, name, dims, tname, raw):
        self.tensors.append((name, dims, TYPES[tname], raw))

    def bytes(self):
        out = b"GGUF" + struct.pack("<I", self.version) + self.count(len(self.tensors)) + \
              self.count(len(self.kv)) + b"".join(self.kv)
        offset, infos, data = 0, [], b""
        for name, dims, t, raw in self.tensors:
            infos.append(self.string(name) + struct.pack("<I", len(dims)) +
                         b"".join(self.count(d) for d in dims) + struct.pack("<IQ", t, offset))
            pad = (-len(raw)) % self.alignment
            data += raw + b"\0" * pad
            offset += len(raw) + pad
        out += b"".join(infos)
        out += b"\0" * ((-len(out)) % self.alignment)
        return out + data


# ------------------------------------------------------------------------------------------
# Quantizers (simple, valid encodings: the error they leave is what the tests measure)


def quantize(t, rows):
    """rows [n, k] float -> raw bytes of type t (all blocks at once)."""
    rows = np.asarray(rows, dtype=f32)
    if t == "F32":
        return rows.astype("<f4").tobytes()
    if t == "F16":
        return rows.astype("<f2").tobytes()
    x = rows.reshape(-1, LAYOUT[t][0])
    n = x.shape[0]
    if t == "Q8_0":
        d = (np.abs(x).max(axis=1) / 127).astype(np.float16)
        dd = d.astype(f32)[:, None]
        q = np.round(np.divide(x, dd, out=np.zeros_like(x), where=dd != 0))
        return np.concatenate([d.view(np.uint8).reshape(n, 2),
                               q.astype(np.int8).view(np.uint8)], axis=1).tobytes()
    if t == "Q4_K":
        # Eight sub-blocks of 32, each value = d * scale * q - dmin * min, with 6-bit scales and
        # mins packed as get_scale_min_k4 reads them, and 4-bit q (low nibbles, then high).
        sub = x.reshape(n, 8, 32)
        mn = np.minimum(sub.min(axis=2), 0)
        sc = (sub.max(axis=2) - mn) / 15
        d = np.maximum(sc.max(axis=1) / 63, 1e-8).astype(np.float16)
        dmin = np.maximum((-mn).max(axis=1) / 63, 1e-8).astype(np.float16)
        isc = np.clip(np.round(sc / d.astype(f32)[:, None]), 1, 63).astype(np.uint8)
        imn = np.clip(np.round(-mn / dmin.astype(f32)[:, None]), 0, 63).astype(np.uint8)
        packed = np.zeros((n, 12), dtype=np.uint8)
        packed[:, 0:4] = isc[:, 0:4] | ((isc[:, 4:8] >> 4) << 6)
        packed[:, 4:8] = imn[:, 0:4] | ((imn[:, 4:8] >> 4) << 6)
        packed[:, 8:12] = (isc[:, 4:8] & 15) | ((imn[:, 4:8] & 15) << 4)
        step = d.astype(f32)[:, None, None] * isc[:, :, None]
        offset = dmin.astype(f32)[:, None, None] * imn[:, :, None]
        q = np.clip(np.round((sub + offset) / step), 0, 15).astype(np.uint8)
        qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(n, 128)
        return np.concatenate([d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2),
                               packed, qs], axis=1).tobytes()
    if t == "Q6_K":
        # block_q6_K (ggml-common.h): ql[128] low 4 bits, qh[64] high 2 bits, scales[16] int8, d
        # f16; value = d * scale[16-value group] * (q - 32), q of 6 bits. As
        # quantize_row_q6_K_ref lays it out, with a plain scale per group (its largest |x| to 31)
        # instead of make_qx_quants' search.
        sub = x.reshape(n, 16, 16)
        sc = np.abs(sub).max(axis=2) / 31
        d = (sc.max(axis=1) / 127).astype(np.float16)
        dd = d.astype(f32)[:, None]
        isc = np.clip(np.round(np.divide(sc, dd, out=np.zeros_like(sc), where=dd != 0)), 0, 127)
        step = (dd * isc.astype(f32))[:, :, None]
        q = np.round(np.divide(sub, step, out=np.zeros_like(sub), where=step != 0))
        L = (np.clip(q, -32, 31) + 32).astype(np.uint8).reshape(n, 2, 4, 32)  # halves of 128
        ql = np.concatenate([(L[:, :, 0] & 15) | ((L[:, :, 2] & 15) << 4),
                             (L[:, :, 1] & 15) | ((L[:, :, 3] & 15) << 4)], axis=2)  # [n, 2, 64]
        qh = (L[:, :, 0] >> 4) | ((L[:, :, 1] >> 4) << 2) | ((L[:, :, 2] >> 4) << 4) | \
            ((L[:, :, 3] >> 4) << 6)  # [n, 2, 32]
        return np.concatenate([ql.reshape(n, 128), qh.reshape(n, 64),
                               isc.astype(np.int8).view(np.uint8), d.view(np.uint8).reshape(n, 2)],
                              axis=1).tobytes()
    raise ValueError(t)


def use_more_bits(layer, layers):
    """llama.cpp's llama_tensor_get_type: the layers whose attn_v and ffn_down a _M mix keeps at
    more bits (the first and last eighth, and every third between)."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def q4_k_m_type(gname, layers, has_output):
    """The type llama-quantize gives a matrix of a dense model for LLAMA_FTYPE_MOSTLY_Q4_K_M
    (llama_tensor_get_type): the head (or the tied token_embd) Q6_K, attn_v and ffn_down Q6_K in
    the use_more_bits layers, every other matrix Q4_K. A fused attn_qkv would be Q5_K, which this
    writer does not quantize."""
    if gname == "output.weight" or (not has_output and gname == "token_embd.weight"):
        return "Q6_K"
    if gname.endswith("attn_qkv.weight"):
        raise ValueError("Q4_K_M makes %s Q5_K, which this writer cannot quantize" % gname)
    parts = gname.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in ("attn_v", "ffn_down") and \
            use_more_bits(int(parts[1]), layers):
        return "Q6_K"
    return "Q4_K"


# ------------------------------------------------------------------------------------------
# Commands


def random_blocks(t, n, rng):
    """n blocks of random bytes (every bit pattern of quants, scales, mins and signs) whose f16
    scale fields hold finite values of both signs, zero and subnormals among them."""
    size = LAYOUT[t][1]
    raw = bytearray(rng.integers(0, 256, n * size, dtype=np.uint8).tobytes())
    halves = {"Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2],
              "IQ4_NL": [0], "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2],
              "Q6_K": [208], "IQ4_XS": [0]}.get(t, [])
    specials = [0.0, -0.0, 6.0e-8, -3.0e-5, 1.0, -2.5]
    for i in range(n):
        for at in halves:
            v = specials[i] if i < len(specials) else rng.normal(0, 0.05) * (1 if i % 2 else -1)
            raw[i * size + at:i * size + at + 2] = np.float16(v).tobytes()
    if t in ("F16", "BF16", "F32"):  # finite values of every sign and size
        vals = rng.normal(0, 3, n).astype(f32)
        raw = bytearray(vals.astype({"F16": "<f2", "F32": "<f4"}.get(t, "<f4")).tobytes())
        if t == "BF16":
            raw = bytearray((vals.view(np.uint32) >> 16).astype("<u2").tobytes())
    return bytes(raw)


def cmd_blocks(path):
    rng = np.random.default_rng(7)
    w = Writer()
    for t in LAYOUT:
        if t == "IQ2_XXS":
            continue
        per_block = LAYOUT[t][0]
        rows, cols = 3, max(per_block, 32) * 2  # three rows of two blocks (64 values for plain types)
        raw = random_blocks(t, rows * cols // per_block, rng)
        w.tensor("q." + t, [cols, rows], t, raw)
        w.tensor("ref." + t, [cols, rows], "F32",
                 dequantize(t, raw, rows * cols).astype("<f4").tobytes())
    w.tensor("blk.3.attn_q.weight", [256, 1], "IQ2_XXS", bytes(66))
    # The writer's quantizers round-tripped: "src.TYPE" float32 values of every magnitude (a zero
    # block among them) and "rt.TYPE" the same quantized here, for attnscope to dequantize.
    src = (rng.normal(0, 1, (3, 512)) * rng.choice([1e-3, 1.0, 20.0], (3, 512))).astype(f32)
    src[1, 256:] = 0
    for t in ("Q6_K", "Q4_K", "Q8_0"):
        w.tensor("src." + t, [512, 3], "F32", src.astype("<f4").tobytes())
        with np.errstate(divide="ignore", invalid="ignore"):  # Q4_K's zero block: d = 0
            w.tensor("rt." + t, [512, 3], t, quantize(t, src))
    open(path, "wb").write(w.bytes())


def cmd_metadata(folder):
    for version in (1, 2, 3):
        w = Writer(version, 64 if version == 3 else 32)
        w.add("general.architecture", 8, "llama")
        if version == 3:
            w.add("general.alignment", 4, 64)
        for vtype, v in ((0, 200), (1, -100), (2, 60000), (3, -30000), (4, 4000000000),
                         (5, -2000000000), (6, 0.5), (7, True), (10, 2 ** 63 + 5), (11, -(2 ** 40)),
                         (12, 0.1)):
            w.add("test.scalar.%d" % vtype, vtype, v)
        w.add("test.strings", 9, (8, ["a", "", "héllo"]))
        w.add("test.floats", 9, (6, [1.5, -2.0]))
        w.add("test.ints", 9, (5, [-1, 7, 2 ** 31 - 1]))
        w.add("test.nested", 9, (9, [(4, [1, 2]), (8, ["x"]), (9, [(1, [-3])])]))
        w.tensor("a", [4, 2], "F32", np.arange(8, dtype="<f4").tobytes())
        w.tensor("b", [32], "F16", np.linspace(-1, 1, 32).astype("<f2").tobytes())
        open(os.path.join(folder, "meta_v%d.gguf" % version), "wb").write(w.bytes())


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        assert e["dtype"] == "F32"
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").reshape(e["shape"])
    return out


def permute(w, n_head):
    """convert_hf_to_gguf.py LlamaModel.permute: each head's rows [2, D/2] -> [D/2, 2]."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_factors(cfg, s):
    """Each RoPE pair's divisor under Llama 3's scaling, from config.json's rope_scaling."""
    dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    base = cfg.get("rope_theta", 10000.0)
    factor, low, high = s["factor"], s.get("low_freq_factor", 1.0), s.get("high_freq_factor", 4.0)
    old = s.get("original_max_position_embeddings", 8192)
    out = []
    for i in range(0, dim, 2):
        wavelen = 2 * math.pi * base ** (i / dim)
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out)


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes onto printable characters (encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def cmd_bpe_tokenizer(folder, merges=44):
    """A GPT-2-style tokenizer.json: byte tokens, merges learnt greedily from a sentence."""
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: i for i, b in enumerate(sorted(b2u))}
    text = ("the cat sat on the mat and the dog sat on the cat; hello world, 1234 times. the "
            "quick brown fox jumps over the lazy dog, then the dog jumps over the fox")
    words = [[b2u[b] for b in (w if i == 0 else " " + w).encode()]
             for i, w in enumerate(text.split(" "))]
    merge_list = []
    while len(merge_list) < merges:
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = max(sorted(counts), key=lambda p: counts[p])  # ties: the first in sorted order
        merge_list.append(best)
        vocab[best[0] + best[1]] = len(vocab)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [best[0] + best[1]]
                i += 1
    end = "<|endoftext|>"
    vocab[end] = len(vocab)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": vocab[end], "content": end, "single_word": False,
                            "lstrip": False, "rstrip": False, "normalized": True,
                            "special": True}],
          "normalizer": None, "pre_tokenizer": byte_level,
          "post_processor": dict(byte_level, trim_offsets=False),
          "decoder": byte_level,
          "model": {"type": "BPE", "dropout": None, "unk_token": None,
                    "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                    "byte_fallback": False, "vocab": vocab,
                    "merges": [a + " " + b for a, b in merge_list]}}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)


def add_vocabulary(g, hf):
    """tokenizer.ggml.* of a byte-level BPE tokenizer.json, as convert_hf_to_gguf.py's
    get_vocab_base writes them: tokens by id, normal or control (special added tokens), merges."""
    path = os.path.join(hf, "tokenizer.json")
    if not os.path.exists(path):
        return False
    tj = json.load(open(path, encoding="utf-8"))
    if tj["model"]["type"] != "BPE":
        return False
    by_id = {i: (t, 1) for t, i in tj["model"]["vocab"].items()}
    for a in tj["added_tokens"]:
        by_id[a["id"]] = (a["content"], 3 if a["special"] else 4)
    ids = range(max(by_id) + 1)
    g.add("tokenizer.ggml.model", 8, "gpt2")
    g.add("tokenizer.ggml.pre", 8, "gpt-2")
    g.add("tokenizer.ggml.tokens", 9, (8, [by_id[i][0] for i in ids]))
    g.add("tokenizer.ggml.token_type", 9, (5, [by_id[i][1] for i in ids]))
    g.add("tokenizer.ggml.merges", 9, (8, tj["model"]["merges"]))
    special = [a["id"] for a in tj["added_tokens"] if a["special"]]
    if special:
        g.add("tokenizer.ggml.bos_token_id", 4, special[0])
        g.add("tokenizer.ggml.eos_token_id", 4, special[0])
    return True


def cmd_tiny_llama(folder, width=64):
    os.makedirs(folder, exist_ok=True)
    cmd_bpe_tokenizer(folder)
    # 256 wide: every matrix's rows are whole K-quant blocks (the llama command's Q4_K).
    c, heads, kv, inner, vocab = width, 4, 2, 96 if width == 64 else width, 301
    cfg = {"model_type": "llama", "vocab_size": vocab, "hidden_size": c,
           "intermediate_size": inner, "num_hidden_layers": 1, "num_attention_heads": heads,
           "num_key_value_heads": kv, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "tie_word_embeddings": False}
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    d = c // heads
    shapes = {"model.embed_tokens.weight": [vocab, c], "model.norm.weight": [c],
              "lm_head.weight": [vocab, c],
              "model.layers.0.input_layernorm.weight": [c],
              "model.layers.0.post_attention_layernorm.weight": [c],
              "model.layers.0.self_attn.q_proj.weight": [heads * d, c],
              "model.layers.0.self_attn.k_proj.weight": [kv * d, c],
              "model.layers.0.self_attn.v_proj.weight": [kv * d, c],
              "model.layers.0.self_attn.o_proj.weight": [c, heads * d],
              "model.layers.0.mlp.gate_proj.weight": [inner, c],
              "model.layers.0.mlp.up_proj.weight": [inner, c],
              "model.layers.0.mlp.down_proj.weight": [c, inner]}
    rng = np.random.default_rng(3)
    header, data = {}, b""
    for name, shape in shapes.items():
        w = rng.normal(0, 0.3 if "proj" in name else 0.1, shape).astype("<f4")
        if "norm" in name:
            w += 1
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [len(data), len(data) + w.nbytes]}
        data += w.tobytes()
    h = json.dumps(header).encode()
    h += b" " * ((-len(h)) % 8)
    open(os.path.join(folder, "model.safetensors"), "wb").write(
        struct.pack("<Q", len(h)) + h + data)


def cmd_vocab(hf, out):
    g = Writer()
    g.add("general.architecture", 8, "llama")
    g.add("general.name", 8, "attnscope test vocabulary")
    assert add_vocabulary(g, hf), "no byte-level BPE tokenizer.json in " + hf
    open(out, "wb").write(g.bytes())


def cmd_llama(hf, folder, types=None, splits=1):
    cfg = json.load(open(os.path.join(hf, "config.json")))
    arch = cfg["model_type"]
    assert arch in ("llama", "qwen2")
    w = read_safetensors(os.path.join(hf, "model.safetensors"))
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    layer = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    if types is None:
        types = ("F32", "F16", "Q8_0", "Q4_K", "Q4_K_M") if arch == "llama" else ("F32",)
    for qtype in types:
        g = Writer()
        g.add("general.architecture", 8, arch)
        g.add("general.name", 8, "attnscope test " + arch)
        if qtype == "Q4_K_M":
            g.add("general.file_type", 4, 15)  # llama_ftype LLAMA_FTYPE_MOSTLY_Q4_K_M
        add_vocabulary(g, hf)
        g.add(arch + ".block_count", 4, cfg["num_hidden_layers"])
        g.add(arch + ".context_length", 4, cfg["max_position_embeddings"])
        g.add(arch + ".embedding_length", 4, cfg["hidden_size"])
        g.add(arch + ".feed_forward_length", 4, cfg["intermediate_size"])
        g.add(arch + ".attention.head_count", 4, heads)
        g.add(arch + ".attention.head_count_kv", 4, kv)
        g.add(arch + ".attention.layer_norm_rms_epsilon", 6, cfg.get("rms_norm_eps", 1e-6))
        g.add(arch + ".rope.freq_base", 6, cfg.get("rope_theta", 10000.0))
        scaling = cfg.get("rope_scaling") or {}
        if scaling.get("rope_type") == "llama3":  # convert_hf_to_gguf.py's LlamaModel: factors
            g.tensor("rope_freqs.weight", [cfg["hidden_size"] // heads // 2], "F32",
                     quantize("F32", llama3_factors(cfg, scaling)))
        for name, t in w.items():
            if name in names:
                gname = names[name]
            else:
                parts = name.split(".")
                gname = "blk.%s.%s.%s" % (parts[2], layer[".".join(parts[3:-1])], parts[-1])
            if arch == "llama" and name.endswith(("q_proj.weight", "q_proj.bias")):
                t = permute(t, heads)
            elif arch == "llama" and name.endswith(("k_proj.weight", "k_proj.bias")):
                t = permute(t, kv)
            # Norms stay F32, as llama.cpp's converter keeps 1-D tensors; Q4_K_M is
            # llama-quantize's mix (q4_k_m_type).
            tt = qtype if t.ndim == 2 else "F32"
            if tt == "Q4_K_M":
                tt = q4_k_m_type(gname, cfg["num_hidden_layers"], "lm_head.weight" in w)
            g.tensor(gname, list(reversed(t.shape)), tt, quantize(tt, t))
        if splits == 1:
            open(os.path.join(folder, "%s_%s.gguf" % (arch, qtype)), "wb").write(g.bytes())
            continue
        # As llama.cpp's gguf-split writes a model: NAME-0000i-of-0000N.gguf, each a GGUF of its
        # share of the tensors; the first holds every key, the others only split.*; split.no
        # (u16) counts from 0, split.count (u16), split.tensors.count (i32) is the total.
        per = -(-len(g.tensors) // splits)
        for i in range(splits):
            part = Writer()
            part.kv = (list(g.kv) if i == 0 else []) + [
                part.string("split.no") + struct.pack("<IH", 2, i),
                part.string("split.count") + struct.pack("<IH", 2, splits),
                part.string("split.tensors.count") + struct.pack("<Ii", 5, len(g.tensors))]
            part.tensors = g.tensors[i * per:(i + 1) * per]
            name = "%s_%s-%05d-of-%05d.gguf" % (arch, qtype, i + 1, splits)
            open(os.path.join(folder, name), "wb").write(part.bytes())


# ------------------------------------------------------------------------------------------
# gpt2, gptneox, bloom and bert, as convert_hf_to_gguf.py's GPT2Model, GPTNeoXModel, BloomModel
# and BertModel write them


def other_hparams(cfg):
    """(GGUF architecture, [(key, value type, value)] of its {arch}.* keys), as each model's
    set_gguf_parameters writes them."""
    t = cfg["model_type"]
    if t == "gpt2":
        c = cfg["n_embd"]
        return "gpt2", [("block_count", 4, cfg["n_layer"]),
                        ("context_length", 4, cfg.get("n_ctx", cfg.get("n_positions", 1024))),
                        ("embedding_length", 4, c),
                        ("feed_forward_length", 4, cfg.get("n_inner") or 4 * c),
                        ("attention.head_count", 4, cfg["n_head"]),
                        ("attention.layer_norm_epsilon", 6, cfg.get("layer_norm_epsilon", 1e-5))]
    if t == "gpt_neox":
        c, heads = cfg["hidden_size"], cfg["num_attention_heads"]
        return "gptneox", [("context_length", 4, cfg["max_position_embeddings"]),
                           ("embedding_length", 4, c), ("block_count", 4, cfg["num_hidden_layers"]),
                           ("feed_forward_length", 4, cfg["intermediate_size"]),
                           ("rope.dimension_count", 4,
                            int(cfg.get("rotary_pct", 0.25) * (c // heads))),
                           ("attention.head_count", 4, heads),
                           ("use_parallel_residual", 7, cfg.get("use_parallel_residual", True)),
                           ("attention.layer_norm_epsilon", 6, cfg.get("layer_norm_eps", 1e-5))]
    if t == "bloom":
        c = cfg.get("hidden_size", cfg.get("n_embed"))
        heads = cfg.get("n_head", cfg.get("num_attention_heads"))
        return "bloom", [("context_length", 4, cfg.get("seq_length", c)),
                         ("embedding_length", 4, c), ("feed_forward_length", 4, 4 * c),
                         ("block_count", 4, cfg.get("n_layer", cfg.get("num_hidden_layers"))),
                         ("attention.head_count", 4, heads), ("attention.head_count_kv", 4, heads),
                         ("attention.layer_norm_epsilon", 6, cfg.get("layer_norm_epsilon", 1e-5))]
    if t == "bert":
        return "bert", [("block_count", 4, cfg["num_hidden_layers"]),
                        ("context_length", 4, cfg["max_position_embeddings"]),
                        ("embedding_length", 4, cfg["hidden_size"]),
                        ("feed_forward_length", 4, cfg["intermediate_size"]),
                        ("attention.head_count", 4, cfg["num_attention_heads"]),
                        ("attention.layer_norm_epsilon", 6, cfg.get("layer_norm_eps", 1e-12)),
                        ("attention.causal", 7, False)]
    if t in GEMMA_ARCH:
        # GemmaModel, Gemma2Model and Gemma3Model.set_gguf_parameters: head_dim as key_length; no
        # query_pre_attn_scalar, no layer pattern (llama.cpp knows them per architecture).
        arch, heads = GEMMA_ARCH[t], cfg["num_attention_heads"]
        keys = [("context_length", 4, cfg["max_position_embeddings"]),
                ("embedding_length", 4, cfg["hidden_size"]),
                ("block_count", 4, cfg["num_hidden_layers"]),
                ("feed_forward_length", 4, cfg["intermediate_size"]),
                ("attention.head_count", 4, heads),
                ("attention.head_count_kv", 4, cfg.get("num_key_value_heads", heads)),
                ("attention.layer_norm_rms_epsilon", 6, cfg["rms_norm_eps"]),
                ("attention.key_length", 4, cfg["head_dim"]),
                ("attention.value_length", 4, cfg["head_dim"])]
        if arch == "gemma2":
            keys += [("attn_logit_softcapping", 6, cfg["attn_logit_softcapping"]),
                     ("final_logit_softcapping", 6, cfg["final_logit_softcapping"]),
                     ("attention.sliding_window", 4, cfg["sliding_window"])]
        if arch == "gemma3":
            keys += [("rope.freq_base", 6, cfg.get("rope_theta", 1e6)),
                     ("attention.sliding_window", 4, cfg["sliding_window"])]
            if cfg.get("rope_scaling"):  # linear, on the global layers only
                keys += [("rope.scaling.type", 8, "linear"),
                         ("rope.scaling.factor", 6, cfg["rope_scaling"]["factor"])]
        return arch, keys
    if t == "phi3":
        # Phi3MiniModel.set_gguf_parameters; the LongRoPE factors are tensors (other_extra).
        c, heads = cfg["hidden_size"], cfg["num_attention_heads"]
        keys = [("context_length", 4, cfg["max_position_embeddings"]),
                ("rope.scaling.original_context_length", 4,
                 cfg["original_max_position_embeddings"]),
                ("embedding_length", 4, c), ("feed_forward_length", 4, cfg["intermediate_size"]),
                ("block_count", 4, cfg["num_hidden_layers"]), ("attention.head_count", 4, heads),
                ("attention.head_count_kv", 4, cfg.get("num_key_value_heads", heads)),
                ("attention.layer_norm_rms_epsilon", 6, cfg["rms_norm_eps"]),
                ("rope.dimension_count", 4,
                 int(cfg.get("partial_rotary_factor", 1.0) * c) // heads),
                ("rope.freq_base", 6, cfg.get("rope_theta", 10000.0)),
                ("attention.sliding_window", 4, cfg.get("sliding_window") or 0)]
        if cfg.get("rope_scaling"):
            scale = cfg["max_position_embeddings"] / cfg["original_max_position_embeddings"]
            orig = cfg["original_max_position_embeddings"]
            keys.append(("rope.scaling.attn_factor", 6,
                         math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1 else 1.0))
        return "phi3", keys
    raise ValueError("model_type %s is not written" % t)


def other_extra(arch, cfg):
    """[(GGUF name, array)] a converter writes from config.json alone: Phi-3's LongRoPE factors
    (Phi3MiniModel.generate_extra_tensors)."""
    s = cfg.get("rope_scaling") or {}
    if arch != "phi3" or not s:
        return []
    return [("rope_factors_long.weight", np.array(s["long_factor"], dtype=f32)),
            ("rope_factors_short.weight", np.array(s["short_factor"], dtype=f32))]


GEMMA_ARCH = {"gemma": "gemma", "gemma2": "gemma2", "gemma3_text": "gemma3"}
LLAMA_LIKE_TOP = {"embed_tokens": "token_embd", "norm": "output_norm"}
LLAMA_LIKE_ATTN = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                   "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
                   "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                   "mlp.down_proj": "ffn_down"}
GEMMA2_LAYER = dict(LLAMA_LIKE_ATTN, **{
    "input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"})
OTHER_TOP = {
    "gemma": LLAMA_LIKE_TOP, "gemma2": LLAMA_LIKE_TOP, "gemma3": LLAMA_LIKE_TOP,
    "phi3": LLAMA_LIKE_TOP,
    "gpt2": {"wte": "token_embd", "wpe": "position_embd", "ln_f": "output_norm"},
    "gptneox": {"embed_in": "token_embd", "final_layer_norm": "output_norm", "embed_out": "output"},
    "bloom": {"word_embeddings": "token_embd", "word_embeddings_layernorm": "token_embd_norm",
              "ln_f": "output_norm"},
    "bert": {"embeddings.word_embeddings": "token_embd",
             "embeddings.position_embeddings": "position_embd",
             "embeddings.token_type_embeddings": "token_types",
             "embeddings.LayerNorm": "token_embd_norm"}}
OTHER_LAYER = {
    "gemma": dict(LLAMA_LIKE_ATTN, input_layernorm="attn_norm",
                  post_attention_layernorm="ffn_norm"),
    "gemma2": GEMMA2_LAYER, "gemma3": GEMMA2_LAYER,
    "phi3": {"input_layernorm": "attn_norm", "self_attn.qkv_proj": "attn_qkv",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_up_proj": "ffn_up", "mlp.down_proj": "ffn_down"},
    "gpt2": {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
             "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"},
    "gptneox": {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                "attention.query_key_value": "attn_qkv", "attention.dense": "attn_output",
                "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"},
    "bloom": {"input_layernorm": "attn_norm", "self_attention.query_key_value": "attn_qkv",
              "self_attention.dense": "attn_output", "post_attention_layernorm": "ffn_norm",
              "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"},
    "bert": {"attention.self.query": "attn_q", "attention.self.key": "attn_k",
             "attention.self.value": "attn_v", "attention.output.dense": "attn_output",
             "attention.output.LayerNorm": "attn_output_norm", "intermediate.dense": "ffn_up",
             "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm"}}
OTHER_PREFIX = {"gpt2": "transformer.", "gptneox": "gpt_neox.", "bloom": "transformer.",
                "bert": "bert.", "gemma": "model.", "gemma2": "model.", "gemma3": "model.",
                "phi3": "model."}
LAYER_PREFIX = {"gpt2": "h.", "gptneox": "layers.", "bloom": "h.", "bert": "encoder.layer.",
                "gemma": "layers.", "gemma2": "layers.", "gemma3": "layers.", "phi3": "layers."}


def other_tensors(arch, cfg, name, w, mistake=None):
    """[(GGUF name, array)] for one Hugging Face tensor, as modify_tensors writes it: GPT-2's
    Conv1D weights transposed, GPT-NeoX's and BLOOM's per-head query_key_value regrouped as all
    of Q, K, V, the tied head written again as output.weight (gpt2, bloom), buffers, pooler and
    masked-LM head dropped (bert), 1 added to every norm weight and the tied head dropped (gemma,
    gemma2, gemma3), Phi-3's fused qkv_proj and gate_up_proj kept as they are. mistake "qkv"
    plants the error a reader could make: GPT-NeoX and BLOOM's fused rows left per head, GPT-2's
    and BERT's Q and K exchanged, Phi-3's fused K and V rows exchanged (a wrong split); mistake
    "norm": Gemma's norms as a reader that does not take the 1 off again sees them."""
    w = np.asarray(w, dtype=f32)
    if name == "lm_head.weight" and arch in OTHER_TOP and "embed_tokens" in OTHER_TOP[arch]:
        return [] if arch.startswith("gemma") else [("output.weight", w)]
    if arch.startswith("gemma") and name.endswith("norm.weight"):
        w = w + (2 if mistake == "norm" else 1)
    if name.startswith(OTHER_PREFIX[arch]):
        name = name[len(OTHER_PREFIX[arch]):]
    if name.endswith((".attn.bias", ".attn.masked_bias", "position_ids")) or \
            name.startswith(("pooler.", "cls.")) or "rotary_emb" in name:
        return []
    module, suffix = name.rsplit(".", 1)
    if module in OTHER_TOP[arch]:
        out = [(OTHER_TOP[arch][module] + "." + suffix, w)]
        if arch in ("gpt2", "bloom") and out[0][0] == "token_embd.weight":
            out.append(("output.weight", w))
        return out
    assert module.startswith(LAYER_PREFIX[arch]), name
    layer, kind = module[len(LAYER_PREFIX[arch]):].split(".", 1)
    gname = "blk.%s.%s.%s" % (layer, OTHER_LAYER[arch][kind], suffix)
    if arch == "gpt2" and w.ndim == 2:
        w = w.T
    heads = cfg.get("num_attention_heads", cfg.get("n_head"))
    if arch in ("gptneox", "bloom") and kind.endswith("query_key_value") and mistake != "qkv":
        # [heads, 3, head_dim, ...] -> [3, heads, head_dim, ...]
        w = w.reshape(heads, 3, -1, *w.shape[1:]).swapaxes(0, 1).reshape(w.shape)
    if mistake == "qkv" and arch == "phi3" and kind == "self_attn.qkv_proj":
        kv = cfg.get("num_key_value_heads", heads) * (cfg["hidden_size"] // heads)
        q = w.shape[0] - 2 * kv
        w = np.concatenate([w[:q], w[q + kv:], w[q:q + kv]])
    if mistake == "qkv" and arch == "gpt2" and kind == "attn.c_attn":
        third = w.shape[0] // 3
        w = np.concatenate([w[third:2 * third], w[:third], w[2 * third:]])
    if mistake == "qkv" and arch == "bert" and kind in ("attention.self.query",
                                                         "attention.self.key"):
        gname = gname.replace("attn_q.", "attn_K.").replace("attn_k.", "attn_q.").replace(
            "attn_K.", "attn_k.")
    return [(gname, w)]


def cmd_convert(hf, folder, types):
    """gpt2, gpt_neox, bloom or bert folder -> ARCH_TYPE.gguf; a TYPE:MISTAKE type ->
    ARCH_TYPE_MISTAKE.gguf."""
    cfg = json.load(open(os.path.join(hf, "config.json")))
    arch, keys = other_hparams(cfg)
    w = read_safetensors(os.path.join(hf, "model.safetensors"))
    for qtype in types:
        qtype, _, mistake = qtype.partition(":")
        g = Writer()
        g.add("general.architecture", 8, arch)
        g.add("general.name", 8, "attnscope test " + arch)
        add_vocabulary(g, hf)
        for key, vtype, v in keys:
            g.add(arch + "." + key, vtype, v)
        for gname, a in other_extra(arch, cfg):
            g.tensor(gname, list(reversed(a.shape)), "F32", quantize("F32", a))
        for name, t in w.items():
            for gname, a in other_tensors(arch, cfg, name, t, mistake or None):
                tt = qtype if a.ndim == 2 else "F32"
                g.tensor(gname, list(reversed(a.shape)), tt, quantize(tt, a))
        tail = "_" + mistake if mistake else ""
        open(os.path.join(folder, "%s_%s%s.gguf" % (arch, qtype, tail)), "wb").write(g.bytes())


def cmd_unmappable(folder):
    """Small llama files the Llama family must refuse, each for one reason."""
    def llama(name, arch="llama", extra_tensor=None, extra_kv=(), extra_values=np.zeros(32)):
        w = Writer()
        w.add("general.architecture", 8, arch)
        for key, v in (("block_count", 1), ("embedding_length", 32), ("feed_forward_length", 32),
                       ("attention.head_count", 2)) + tuple(extra_kv):
            w.add(arch + "." + key, 4, v)
        w.tensor("token_embd.weight", [32, 4], "F32", bytes(4 * 128))
        if extra_tensor:
            w.tensor(extra_tensor, [len(extra_values)], "F32", quantize("F32", extra_values))
        open(os.path.join(folder, name + ".gguf"), "wb").write(w.bytes())
    llama("arch", arch="falcon")
    llama("rope_freqs", extra_tensor="rope_freqs.weight", extra_values=np.full(8, 2.0))
    llama("fused_qkv", extra_tensor="blk.0.attn_qkv.weight")
    llama("partial_rotary", extra_kv=(("rope.dimension_count", 8),))
    llama("past_blocks", extra_tensor="blk.3.attn_norm.weight")
    llama("gpt2_kv_heads", arch="gpt2", extra_kv=(("attention.head_count_kv", 1),))
    llama("phi3_one_factor_list", arch="phi3", extra_tensor="rope_factors_long.weight",
          extra_values=np.ones(8))
    llama("gemma2_value_length", arch="gemma2",
          extra_kv=(("attention.key_length", 16), ("attention.value_length", 8)))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "blocks":
        cmd_blocks(sys.argv[2])
    elif cmd == "metadata":
        cmd_metadata(sys.argv[2])
    elif cmd == "unmappable":
        cmd_unmappable(sys.argv[2])
    elif cmd == "llama":
        cmd_llama(sys.argv[2], sys.argv[3], sys.argv[4].split(",") if len(sys.argv) > 4 else None)
    elif cmd == "llama_split":
        cmd_llama(sys.argv[2], sys.argv[3], sys.argv[4].split(","), int(sys.argv[5]))
    elif cmd == "convert":
        for hf in sys.argv[2].split(","):
            cmd_convert(hf, sys.argv[3], sys.argv[4].split(","))
    elif cmd == "bpe_tokenizer":
        cmd_bpe_tokenizer(sys.argv[2])
    elif cmd == "tiny_llama":
        cmd_tiny_llama(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 64)
    elif cmd == "vocab":
        cmd_vocab(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)
