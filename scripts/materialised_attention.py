#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The baseline of issue 33: a Llama-3.2-1B-shaped model in plain PyTorch that keeps every head's
attention, as transformers' eager attention does with output_attentions=True, and the input length
T at which that runs out of memory. attnscope computes the same heads on demand at T = 8192.

  /usr/bin/python3 scripts/materialised_attention.py --out build-bench/materialised.json

Each T runs in a child process whose address space is capped at --memory-gib (default: 90 % of
the memory available when it starts), so running out is a clean allocation failure, not the
kernel's OOM killer; a run that ends any other way stops the script with an error.
Random weights, float32 (transformers' default dtype), grouped-query attention with rotary
positions; what is stored per layer is softmax(q k^T / sqrt(d) + causal mask): [1, H, T, T] float32.
The search doubles T from --start until a run fails, then bisects to --step tokens.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

SHAPES = dict(layers=16, hidden=2048, heads=32, kv_heads=8, head_dim=64, intermediate=8192,
              vocab=128256, rope_theta=500000.0)


def forward(T, threads, layers):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    s = dict(SHAPES, layers=layers)
    H, KV, D, C, I = s["heads"], s["kv_heads"], s["head_dim"], s["hidden"], s["intermediate"]

    def w(*shape):
        return torch.randn(*shape) * 0.02

    emb = w(s["vocab"], C)
    blocks = [dict(q=w(H * D, C), k=w(KV * D, C), v=w(KV * D, C), o=w(C, H * D),
                   gate=w(I, C), up=w(I, C), down=w(C, I)) for _ in range(s["layers"])]
    ids = torch.randint(0, s["vocab"], (1, T))
    inv = 1.0 / (s["rope_theta"] ** (torch.arange(0, D, 2).float() / D))
    ang = torch.outer(torch.arange(T).float(), inv)
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)

    def rope(x):
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rot * sin

    def rms(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)

    mask = torch.full((T, T), float("-inf")).triu(1)
    attentions = []
    with torch.no_grad():
        x = emb[ids]
        for b in blocks:
            h = rms(x)
            q = rope((h @ b["q"].T).view(1, T, H, D).transpose(1, 2))
            k = rope((h @ b["k"].T).view(1, T, KV, D).transpose(1, 2))
            v = (h @ b["v"].T).view(1, T, KV, D).transpose(1, 2)
            k = k.repeat_interleave(H // KV, 1)
            v = v.repeat_interleave(H // KV, 1)
            p = torch.softmax(q @ k.transpose(-1, -2) / D ** 0.5 + mask, -1)
            attentions.append(p)  # what output_attentions returns: every layer's [1, H, T, T]
            x = x + (p @ v).transpose(1, 2).reshape(1, T, H * D) @ b["o"].T
            h = rms(x)
            x = x + (torch.nn.functional.silu(h @ b["gate"].T) * (h @ b["up"].T)) @ b["down"].T
    return sum(a.numel() * a.element_size() for a in attentions)


def child(args):
    limit = int(args.memory_gib * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t0 = time.time()
    try:
        stored = forward(args.child, args.threads, args.layers)
    except (RuntimeError, MemoryError) as e:
        # Only an allocation that failed is "out of memory"; anything else is a broken run.
        text = str(e)
        if not isinstance(e, MemoryError) and "allocate" not in text and "memory" not in text:
            raise
        print(json.dumps({"T": args.child, "ok": False, "error": text.splitlines()[0][:200],
                          "seconds": time.time() - t0}))
        return
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"T": args.child, "ok": True, "stored_attention_bytes": stored,
                      "peak_rss_bytes": peak, "seconds": time.time() - t0}))


def run(T, args):
    cmd = [sys.executable, __file__, "--child", str(T), "--threads", str(args.threads),
           "--memory-gib", str(args.memory_gib), "--layers", str(args.layers)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        # No verdict: killed (the kernel's OOM killer, when other processes hold memory the cap
        # assumed free) or crashed. Neither is a measurement.
        sys.exit(f"T = {T}: the run ended without a result (exit {out.returncode}): "
                 f"{(out.stderr.strip().splitlines() or ['killed'])[-1][:300]}")
    r = json.loads(lines[-1])
    print(json.dumps(r), file=sys.stderr, flush=True)
    return r


def main():
    # The cap defaults to 90 % of what is available now, so that the cap, not the kernel's OOM
    # killer (which may pick another process), ends the run.
    with open("/proc/meminfo") as f:
        avail = next(int(l.split()[1]) for l in f if l.startswith("MemAvailable:"))
    mem = 0.9 * avail / (1 << 20)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory-gib", type=float, default=round(mem, 1))
    ap.add_argument("--layers", type=int, default=SHAPES["layers"])
    ap.add_argument("--start", type=int, default=1024)
    ap.add_argument("--step", type=int, default=256)
    ap.add_argument("--out")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    runs, good, bad = [], None, None
    T = args.start
    while bad is None:  # doubling
        r = run(T, args)
        runs.append(r)
        if r["ok"]:
            good, T = T, T * 2
        else:
            bad = T
    lo = good or 0
    while bad - lo > args.step:  # bisection
        mid = (lo + bad) // 2 // 64 * 64
        if mid <= lo:
            break
        r = run(mid, args)
        runs.append(r)
        if r["ok"]:
            lo = mid
        else:
            bad = mid
    if lo == 0:
        sys.exit(f"not even T = {bad} fits in {args.memory_gib} GiB: nothing measured")
    result = {"shapes": dict(SHAPES, layers=args.layers), "memory_gib": args.memory_gib,
              "threads": args.threads, "largest_ok_T": lo, "first_failing_T": bad, "runs": runs}
    print(f"materialised attention: T = {lo} fits in {args.memory_gib} GiB, T = {bad} runs out "
          f"of memory")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
