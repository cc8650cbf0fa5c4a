# SPDX-License-Identifier: GPL-3.0-or-later
"""What the decoder reference tests share: writing Hugging Face checkpoint folders with json,
struct, numpy and torch (safetensors in F32/F16/BF16, sharded safetensors, pytorch_model.bin), a
byte-level BPE tokenizer.json, and running `attnscope-cli run --dump`. No attnscope code: the
tests share nothing with what they check."""
import json
import os
import struct

import numpy as np
import torch

from cli_batch import cli_run


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


def add_merges(word, vocab, merges):
    """Adds to a BPE vocabulary and merge list what builds `word` (already in the model's symbols,
    every character in `vocab`) left to right."""
    acc = word[0]
    for ch in word[1:]:
        if acc + ch not in vocab:
            merges.append(f"{acc} {ch}")
            vocab[acc + ch] = len(vocab)
        acc += ch


def write_tokenizer(path, words=(), bos=None):
    """A byte-level BPE tokenizer.json: ids 0..255 are the bytes, then merges that build `words`,
    then the special tokens. With `bos`, a TemplateProcessing post-processor puts it first (as
    Llama's tokenizers do). Returns the vocabulary size."""
    b2u = bytes_to_unicode()
    sym = lambda s: "".join(b2u[b] for b in s.encode())
    vocab = {b2u[b]: b for b in range(256)}
    merges = []
    for word in words:
        add_merges(sym(word), vocab, merges)
    specials = ["<s>", "</s>"]
    added = []
    for t in specials:
        added.append({"id": len(vocab) + len(added), "content": t, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    post = None
    if bos:
        bos_id = next(a["id"] for a in added if a["content"] == bos)
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": post,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                     "vocab": vocab, "merges": merges}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    return len(vocab) + len(added)


def _encode(array, dtype):
    """float64 numpy -> (raw little-endian bytes, the stored values as float64 torch)."""
    t = torch.from_numpy(np.ascontiguousarray(array))
    if dtype == "BF16":
        b = t.to(torch.bfloat16)
        return b.view(torch.int16).numpy().tobytes(), b.double()
    np_dtype = {"F32": "<f4", "F16": "<f2"}[dtype]
    v = np.ascontiguousarray(array.astype(np_dtype))
    return v.tobytes(), torch.from_numpy(v.astype(np.float64))


def _write_one(path, names, tensors, dtype, stored):
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in names:
        raw, value = _encode(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
        stored[name] = value
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def write_weights(folder, tensors, fmt="F32"):
    """tensors: name -> float64 numpy. fmt: F32, F16, BF16 (model.safetensors), sharded (two F32
    shards and model.safetensors.index.json) or bin (pytorch_model.bin). Returns the stored values
    as float64 torch tensors (what the CLI reads)."""
    stored = {}
    names = sorted(tensors)
    if fmt == "bin":
        sd = torch.nn.Module().state_dict()  # an OrderedDict with _metadata, as state_dict() gives
        for name in names:
            t = torch.from_numpy(np.ascontiguousarray(tensors[name].astype("<f4")))
            sd[name] = t
            stored[name] = t.double()
        torch.save(sd, os.path.join(folder, "pytorch_model.bin"))
    elif fmt == "sharded":
        half = len(names) // 2
        files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
        weight_map = {}
        for part, file in zip((names[:half], names[half:]), files):
            _write_one(os.path.join(folder, file), part, tensors, "F32", stored)
            weight_map.update({n: file for n in part})
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    else:
        _write_one(os.path.join(folder, "model.safetensors"), names, tensors, fmt, stored)
    return stored


def run_cli(cli, model, texts, out, extra=()):
    """Runs `run --model model --text ... --dump out/dump --json out/run.json`. Returns
    (attention [L, B, H, T, T], output [B, T, C], tokens per item, run.json, stdout)."""
    dump, js = os.path.join(out, "dump"), os.path.join(out, "run.json")
    args = [cli, "run", "--model", model, "--json", js, "--dump", dump, *extra]
    for t in texts:
        args += ["--text", t]
    p = cli_run(args)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    attention = np.load(os.path.join(dump, "attention.npy"))
    output = np.load(os.path.join(dump, "output.npy"))
    with open(os.path.join(dump, "tokens.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    with open(js, encoding="utf-8") as f:
        run = json.load(f)
    return attention, output, tokens, run, p.stdout


def peakedness(attention):
    """Mean over layers, heads and the rows with at least 4 keys of the row maximum, for one item's
    [L, H, T, T] causal attention: 1/n would be uniform."""
    T = attention.shape[-1]
    rows = [attention[..., i, : i + 1].max(-1).mean() for i in range(3, T)]
    return float(np.mean(rows))


def check_generate(cli, model, prompt, forward, name, failures, report, n=6, tol=1e-5, p_tol=1e-5):
    """`attnscope-cli generate` (greedy, through the key/value cache) against a reference forward:
    forward(ids) -> (attention [L, H, T, T], next-token probabilities [V] after ids). Each step's
    attention row [L][H][T_step] must equal the row of ONE forward over the final ids (within tol,
    as scaled_error), the ids those of a greedy decoder written here over `forward`, and each
    step's candidates the reference's top ones with their probabilities."""
    from tolerance import scaled_error
    js = os.path.join(model, "generate.json")
    args = [cli, "generate", "--model", model, "--text", prompt, "--max-new-tokens", str(n), "--json", js]
    p = cli_run(args, text=False)  # bytes: a random model writes any bytes
    if p.returncode != 0:
        failures.append(f"{name}: generate exited {p.returncode}: {p.stderr.decode(errors='replace').strip()}")
        return
    with open(js, encoding="utf-8") as f:
        got = json.load(f)
    ids, steps = got["ids"], got["steps"]
    T0 = len(ids) - len(steps)
    with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
        eos = json.load(f).get("eos_token_id")
    # Fewer steps only when the last is the end-of-sequence token.
    if T0 < 1 or not (len(steps) == n or (0 < len(steps) < n and steps[-1]["id"] == eos)):
        failures.append(f"{name}: generate gave {len(steps)} steps after {T0} prompt tokens, want {n}")
        return
    seq, p_worst = list(ids[:T0]), 0.0
    for s, step in enumerate(steps):
        probs = np.asarray(forward(seq)[1], dtype=np.float64)
        want = int(np.argmax(probs))
        if step["id"] != want:
            failures.append(f"{name}: generated id {step['id']} at step {s}, the greedy reference {want}")
            return
        top = [int(i) for i in np.argsort(-probs, kind="stable")[:len(step["candidates"])]]
        have = [c["id"] for c in step["candidates"]]
        if have[:1] != top[:1] or set(have) != set(top):
            failures.append(f"{name} step {s}: candidates {have}, want {top}")
        p_worst = max(p_worst, scaled_error([c["p"] for c in step["candidates"]], [probs[i] for i in have]))
        seq.append(want)
    attention = np.asarray(forward(ids)[0], dtype=np.float64)
    worst = 0.0
    for s, step in enumerate(steps):
        q = T0 - 1 + s  # the query whose output predicted step s's token
        row = np.array(step["attention"], dtype=np.float64)
        want = attention[:, :, q, :q + 1]
        if row.shape != want.shape:
            failures.append(f"{name} step {s}: attention shape {row.shape}, want {want.shape}")
            return
        worst = max(worst, scaled_error(row, want))
    if worst > tol:
        failures.append(f"{name}: generation's attention rows differ from one full forward by {worst:.3g}")
    if p_worst > p_tol:
        failures.append(f"{name}: generation's candidate probabilities differ by {p_worst:.3g}")
    report.append(f"{name:32s} generate: {len(steps)} steps after {T0} tokens, rows {worst:.2e}, "
                  f"p {p_worst:.1e}")
