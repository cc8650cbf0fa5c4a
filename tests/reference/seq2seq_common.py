# SPDX-License-Identifier: GPL-3.0-or-later
"""What the encoder-decoder reference tests (t5_reference.py, bart_reference.py) share: running
`attnscope-cli run --dump` and reading its five arrays, padded masks and batches, and comparing
attention blocks with their padding. No attnscope code."""
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_batch import cli_run  # noqa: E402
from tolerance import scaled_error  # noqa: E402


def key_mask(lengths, Tq, Tk, causal):
    m = torch.zeros(len(lengths), 1, Tq, Tk, dtype=torch.float64)
    for b, n in enumerate(lengths):
        m[b, :, :, n:] = float("-inf")
    if causal:
        m = m.masked_fill(torch.ones(Tq, Tk).tril() == 0, float("-inf"))
    return m


def padded(rows):
    T = max(len(r) for r in rows)
    return torch.tensor([r + [0] * (T - len(r)) for r in rows]), [len(r) for r in rows]


def run_cli(cli, folder, out, sources, extra):
    """`run --model folder --text ... --dump --json` plus extra flags. Returns the five dumped arrays,
    tokens.json, decoder_tokens.json, run.json and stdout."""
    os.makedirs(out, exist_ok=True)
    dump, js = os.path.join(out, "dump"), os.path.join(out, "run.json")
    args = [cli, "run", "--model", folder, "--dump", dump, "--json", js, *extra]
    for s in sources:
        args += ["--text", s]
    p = cli_run(args)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    load = lambda n: np.load(os.path.join(dump, n))
    tok = lambda n: json.load(open(os.path.join(dump, n), encoding="utf-8"))
    return ({"self": load("attention.npy"), "decoder_self": load("decoder_attention.npy"),
             "cross": load("cross_attention.npy"), "output": load("output.npy"),
             "decoder_output": load("decoder_output.npy"),
             "logits": load("logits.npy") if os.path.exists(os.path.join(dump, "logits.npy")) else None},
            tok("tokens.json"), tok("decoder_tokens.json"), json.load(open(js, encoding="utf-8")), p.stdout)


def compare(name, got, want, rows, cols):
    """scaled_error(got, want) (tolerance.py: |got - want| / max(1, |want|); attention is at most 1)
    over the real [rows, cols] block of each item; the padding must be exactly 0."""
    worst = 0.0
    for b in range(got.shape[1]):
        g, w = got[:, b], want[:, b].numpy()
        worst = max(worst, scaled_error(g[..., : rows[b], : cols[b]], w[..., : rows[b], : cols[b]]))
        pad = np.concatenate([g[..., rows[b]:, :].ravel(), g[..., :, cols[b]:].ravel()])
        if pad.size and np.any(pad != 0):
            raise AssertionError(f"{name}: item {b} has nonzero padding")
    return worst




def greedy(ref, memory, source_lengths, steps):
    """Greedy decoding from ref.start, every step over the whole prefix, each item stopping at
    ref.eos."""
    out = [[ref.start] for _ in source_lengths]
    done = [False] * len(out)
    for _ in range(steps):
        ids, lengths = padded(out)
        h, _, _ = ref.decode(memory, source_lengths, ids, lengths)
        for b in range(len(out)):
            if not done[b]:
                out[b].append(int(ref.logits(h[b, lengths[b] - 1]).argmax()))
                done[b] = out[b][-1] == ref.eos
        if all(done):
            break
    return out


class Reference:
    """A float64 forward pass of one checkpoint: encode(ids, lengths) -> (memory, attention),
    decode(memory, source_lengths, ids, lengths) -> (hidden, self-attention, cross-attention),
    logits(hidden [C]) -> [V]; start and eos are the decoder's first and last ids."""

    def __init__(self, encode, decode, logits, start, eos):
        self.encode, self.decode, self.logits, self.start, self.eos = encode, decode, logits, start, eos


_GENERATED = []  # the case whose `generate` was checked (one per process)


def check_generate(cli, ref, folder, source, memory, n_source, want, tol, p_tol):
    """`attnscope-cli generate` (greedy, through the decoder's key/value cache and the cached
    cross-attention keys and values) on one source: the ids must be the greedy reference's `want`
    (the start token, then up to 6 generated), each step's "attention" row [L][H][s + 1] the
    decoder self-attention row of its query (position s) in ONE reference decode over the final
    ids, its "cross_attention" row [L][H][T_source] that query's cross-attention row, and its
    candidates' probabilities the reference's softmax at that query. Returns the problems."""
    js = os.path.join(folder + "_gen", "generate.json")
    steps = len(want) - 1
    p = cli_run([cli, "generate", "--model", folder, "--text", source, "--max-new-tokens", str(steps),
                 "--json", js], text=False)
    if p.returncode != 0:
        return [f"generate exited {p.returncode}: {p.stderr.decode(errors='replace').strip()}"]
    with open(js, encoding="utf-8") as f:
        got = json.load(f)
    if got["ids"] != want:
        return [f"generate gave ids {got['ids']}, the greedy reference {want}"]
    if len(got.get("source_ids", [])) != n_source:
        return [f"generate's source_ids {got.get('source_ids')} are not the {n_source} source tokens"]
    ids = torch.tensor([want])
    hidden, self_att, cross_att = ref.decode(memory, [n_source], ids, [len(want)])
    worst, p_worst = 0.0, 0.0
    for s, step in enumerate(got["steps"]):
        row, cross = np.array(step["attention"]), np.array(step.get("cross_attention", []))
        want_row, want_cross = self_att[:, 0, :, s, :s + 1].numpy(), cross_att[:, 0, :, s, :n_source].numpy()
        if row.shape != want_row.shape or cross.shape != want_cross.shape:
            return [f"generate step {s}: rows {row.shape} and {cross.shape}, want {want_row.shape} and "
                    f"{want_cross.shape}"]
        worst = max(worst, scaled_error(row, want_row), scaled_error(cross, want_cross))
        probs = torch.softmax(ref.logits(hidden[0, s]), -1)
        p_worst = max(p_worst, scaled_error([c["p"] for c in step["candidates"]],
                                            [float(probs[c["id"]]) for c in step["candidates"]]))
    print(f"    generate: {len(got['steps'])} steps, self and cross rows {worst:.2e} from one decode, "
          f"p {p_worst:.1e}")
    problems = []
    if not worst < tol:
        problems.append(f"generate's self/cross rows differ from one decode by {worst:.2e}")
    if not p_worst < p_tol:
        problems.append(f"generate's candidate probabilities differ by {p_worst:.2e}")
    return problems


def check_run(cli, ref, folder, name, sources, target, check_ids, tol=1e-4, p_tol=1e-5, steps=6):
    """Runs the CLI with --target and with --generate on `sources` and compares every attention
    kind, both outputs (to tol) and the top-5 next tokens (probabilities to p_tol), each as
    scaled_error (absolute up to 1, relative above), and the greedy tokens with `ref`.
    check_ids(source ids, decoder ids) returns the tokenizer's problems. The first call in a
    process also checks `generate` on the first source (check_generate). Prints one line (and the
    problems); returns whether all agree."""
    try:
        dumps, src_tokens, dec_tokens, run, _ = run_cli(cli, folder, folder + "_out", sources, ["--target", target])
    except RuntimeError as e:
        if "cannot open libsentencepiece" in str(e):  # the library is optional (dlopened)
            print(f"skipped: {name}: no libsentencepiece")
            return True
        raise
    src = [[t["id"] for t in item] for item in src_tokens]
    dec = [[t["id"] for t in item] for item in dec_tokens]
    problems = check_ids(src, dec)

    ids, lengths = padded(src)
    memory, enc_att = ref.encode(ids, lengths)
    dids, dlengths = padded(dec)
    hidden, dec_att, cross_att = ref.decode(memory, lengths, dids, dlengths)
    errors = {"self": compare("self", dumps["self"], enc_att, lengths, lengths),
              "decoder_self": compare("decoder_self", dumps["decoder_self"], dec_att, dlengths, dlengths),
              "cross": compare("cross", dumps["cross"], cross_att, dlengths, lengths),
              "output": max(scaled_error(dumps["output"][b, :n], memory[b, :n]) for b, n in enumerate(lengths)),
              "decoder_output": max(scaled_error(dumps["decoder_output"][b, :n], hidden[b, :n])
                                    for b, n in enumerate(dlengths))}
    # logits.npy: the decoder's head at every decoder position (the whole distribution).
    if dumps["logits"] is None or dumps["logits"].shape[:2] != tuple(dids.shape):
        problems.append(f"logits.npy missing or shaped {None if dumps['logits'] is None else dumps['logits'].shape}")
    else:
        errors["logits"] = max(scaled_error(dumps["logits"][b, :n], ref.logits(hidden[b, :n]))
                               for b, n in enumerate(dlengths))
        if any(np.abs(dumps["logits"][b, n:]).max(initial=0) != 0 for b, n in enumerate(dlengths)):
            problems.append("logits.npy padding is not zero")
    worst = max(errors.values())
    if not worst < tol:
        problems.append("max |ours - pytorch| / max(1, |pytorch|): " + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
    peak = {k: float(dumps[k][:, 0].max(-1).mean()) for k in ("self", "decoder_self", "cross")}
    if min(peak.values()) < 0.5:
        problems.append(f"attention not peaked enough to test anything: mean row max {peak}")
    for b, item in enumerate(run["next_tokens"]):
        top = torch.topk(torch.softmax(ref.logits(hidden[b, dlengths[b] - 1]), -1), 5)
        if [p["id"] for p in item] != top.indices.tolist() or \
                scaled_error([p["p"] for p in item], top.values) > p_tol:
            problems.append(f"next tokens of item {b}: {item} vs {top.indices.tolist()} {top.values.tolist()}")

    # Greedy generation from the start token alone.
    gen_dumps, _, gen_tokens, gen_run, stdout = run_cli(cli, folder, folder + "_gen", sources,
                                                        ["--generate", str(steps)])
    want = greedy(ref, memory, lengths, steps)
    got = [[t["id"] for t in item] for item in gen_tokens]
    if got != want:
        problems.append(f"greedy tokens {got} differ from the reference's {want}")
    if [[t["id"] for t in item] for item in gen_run["generated"]] != [w[1:] for w in want]:
        problems.append(f"run.json 'generated' {gen_run['generated']} differs from {want}")
    if "generated after text 1:" not in stdout:
        problems.append("the CLI does not print the generated text")
    gworst = 0.0
    if got == want:  # the attention over the generated inputs, once they are the same inputs
        gids, glengths = padded(want)
        _, gself, gcross = ref.decode(memory, lengths, gids, glengths)
        gworst = max(compare("decoder_self", gen_dumps["decoder_self"], gself, glengths, glengths),
                     compare("cross", gen_dumps["cross"], gcross, glengths, lengths))
    if not gworst < tol:
        problems.append(f"generated run: max |ours - pytorch| / max(1, |pytorch|) = {gworst:.2e}")
    if not _GENERATED:  # the first case only: each check costs a CLI run
        _GENERATED.append(name)
        problems += check_generate(cli, ref, folder, sources[0], memory[:1, :lengths[0]], lengths[0],
                                   want[0], tol, p_tol)

    print(f"{'FAIL' if problems else 'ok'}: {name}: max |ours - pytorch| / max(1, |pytorch|) = "
          f"{max(worst, gworst):.2e} (attention "
          f"{max(errors['self'], errors['decoder_self'], errors['cross'], gworst):.2e}), mean row max "
          f"{', '.join(f'{k} {v:.2f}' for k, v in peak.items())}, greedy {want[0][1:]}")
    for p in problems:
        print(f"    {p}")
    return not problems


def run_cases(prefix, label, cases, check):
    """main() of a reference test: argv is ATTNSCOPE_CLI [KEEP_DIR]; check(cli, tmp, *case) per
    case. Returns the exit code."""
    cli = sys.argv[1]
    keep = sys.argv[2] if len(sys.argv) > 2 else None
    tmp = keep or tempfile.mkdtemp(prefix=prefix)
    if keep:
        shutil.rmtree(keep, ignore_errors=True)
        os.makedirs(keep)
    try:
        ok = True
        for case in cases:
            ok &= check(cli, tmp, *case)
        # The first case again with the step-by-step attention kernel (CMake names the blocked one
        # for the run above): both kernels must give the reference's numbers.
        if os.environ.get("ATTNSCOPE_ATTENTION_KERNEL") != "reference":
            os.environ["ATTNSCOPE_ATTENTION_KERNEL"] = "reference"
            print("the first case with ATTNSCOPE_ATTENTION_KERNEL=reference:")
            sub = os.path.join(tmp, "reference-kernel")
            os.makedirs(sub)
            ok &= check(cli, sub, *cases[0])
        print(f"{len(cases)} {label} reference comparisons: {'all within 1e-4 · max(1, |value|)' if ok else 'FAILED'}")
        return 0 if ok else 1
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
