#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""attnscope-cli download against the Hub stand-in (tests/app/hub/hub_stand_in.py), never the
internet: one stand-in for the whole script, a fresh cache folder per case.

Checks the cache layout byte for byte against huggingface_hub's documented one (blobs named by
ETag holding the file's bytes, snapshots/<commit>/<file> as relative links to ../../blobs/<etag>,
refs/main holding the commit without a newline, CACHEDIR.TAG, nothing else in the repo folder),
that only the files attnscope needs are fetched, resume after a dropped connection and after
kill -9, no partial state in snapshots/ after a cancel or a kill, two concurrent downloads
sharing one transfer, offline mode, human messages for gated and missing models, the token never
in any output and never sent to the CDN, and that the downloaded GPT-2 fixture then runs.
Usage: download_test.py ATTNSCOPE_CLI. Exit 0: pass, 1: a check failed.
"""
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "app", "hub"))
import hub_stand_in  # noqa: E402

CLI = sys.argv[1]
HUB = hub_stand_in.StandIn()
TOKEN = hub_stand_in.TOKEN
failures = []
outputs = []  # every stdout and stderr, to check that the token is never printed


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message, flush=True)
    return condition


def env_for(cache, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGING", "TRANSFORMERS_")) and "proxy" not in k.lower()}
    env.update({"HF_HUB_CACHE": cache, "HF_ENDPOINT": HUB.endpoint, "HOME": cache + "/home",
                "HF_TOKEN": TOKEN})
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def cli(cache, *args, **extra):
    r = subprocess.run([CLI, *args], env=env_for(cache, **extra), capture_output=True, text=True, timeout=60)
    outputs.append(r.stdout + r.stderr)
    return r


def start(cache, *args, **extra):
    return subprocess.Popen([CLI, *args], env=env_for(cache, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(p):
    out, err = p.communicate(timeout=60)
    outputs.append(out + err)
    return p.returncode, out, err


def new_cache():
    return tempfile.mkdtemp(dir=ROOT)


def repo_dir(cache, repo_id):
    return os.path.join(cache, "models--" + repo_id.replace("/", "--"))


def etag_of(repo, name):
    data = repo["files"][name]
    return hashlib.sha256(data).hexdigest() if name in repo["lfs"] else hub_stand_in.git_sha1(data)


def tree(folder):
    """Every entry below folder: relative path -> ("link", target) | ("file", bytes) | ("dir",)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                out[rel] = ("dir",)
            else:
                with open(path, "rb") as f:
                    out[rel] = ("file", f.read())
    return out


def expected_tree(repo_id, files):
    """huggingface_hub's layout for `files` of repo_id at main, as its documentation draws it."""
    repo = HUB.repos[HUB.renamed.get(repo_id, repo_id)]
    commit = repo["commit"]
    out = {"blobs": ("dir",), "refs": ("dir",), "snapshots": ("dir",), "refs/main": ("file", commit.encode()),
           "snapshots/" + commit: ("dir",)}
    for name in files:
        etag = etag_of(repo, name)
        out["blobs/" + etag] = ("file", repo["files"][name])
        parts = name.split("/")
        for i in range(1, len(parts)):
            out["snapshots/" + commit + "/" + "/".join(parts[:i])] = ("dir",)
        out["snapshots/" + commit + "/" + name] = ("link", "../" * (len(parts) + 1) + "blobs/" + etag)
    return out


def check_layout(cache, repo_id, files, what):
    got, want = tree(repo_dir(cache, repo_id)), expected_tree(repo_id, files)
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            shown = lambda v: v if v is None or v[0] != "file" else ("file", len(v[1]), v[1][:40])
            check(False, f"{what}: {k}: got {shown(got.get(k))}, want {shown(want.get(k))}")
            return False
    with open(os.path.join(cache, "CACHEDIR.TAG"), "rb") as f:
        check(f.read().startswith(b"Signature: 8a477f597d28d172789f06886806bc55"), f"{what}: CACHEDIR.TAG")
    return True


def cdn_gets(sha=""):
    return [r for r in HUB.requests("cdn", "GET", sha)]


def no_snapshot_entries(cache, repo_id, what):
    snapshots = os.path.join(repo_dir(cache, repo_id), "snapshots")
    left = [e for e in tree(snapshots).items()] if os.path.isdir(snapshots) else []
    check(not [e for e in left if e[1][0] != "dir"], f"{what}: snapshots/ holds {left}")
    check(not os.path.exists(os.path.join(repo_dir(cache, repo_id), "refs", "main")), f"{what}: refs/main written")


def error_line(stderr):
    """The error: the last line, after any progress lines (which never name the command)."""
    lines = stderr.strip().splitlines()
    return lines[-1] if lines and sum(l.startswith("attnscope-cli ") for l in lines) == 1 else ""


def wait_for_partial(path, least, p, seconds=10):
    end = time.time() + seconds
    while time.time() < end and p.poll() is None:
        if os.path.exists(path) and os.path.getsize(path) >= least:
            return True
        time.sleep(0.01)
    return False


TINY = ["config.json", "generation_config.json", "tokenizer_config.json", "vocab.json", "merges.txt", "model.safetensors"]


def test_first_download():
    cache = new_cache()
    r = cli(cache, "download", "org/tiny-gpt2")
    if not check(r.returncode == 0, f"download org/tiny-gpt2: exit {r.returncode}: {r.stderr}"):
        return
    commit = HUB.repos["org/tiny-gpt2"]["commit"]
    snapshot = os.path.join(repo_dir(cache, "org/tiny-gpt2"), "snapshots", commit)
    check(f"path: {snapshot}\n" in r.stdout, f"no path line: {r.stdout}")
    check("run: attnscope-cli run --model org/tiny-gpt2 --text" in r.stdout, f"no run line: {r.stdout}")
    check("[6/6] model.safetensors" in r.stderr and " of " in r.stderr, f"no progress on stderr: {r.stderr}")
    check_layout(cache, "org/tiny-gpt2", TINY, "org/tiny-gpt2")
    # The token goes to the Hub, never to the CDN the LFS files are redirected to.
    hub_requests = HUB.requests("hub")
    check(hub_requests and all(q["headers"].get("authorization") == "Bearer " + TOKEN for q in hub_requests),
          "a request to the Hub without the token")
    check(all("authorization" not in q["headers"] for q in HUB.requests("cdn")), "the token was sent to the CDN")
    # A second download of the same revision fetches nothing again; --include adds a nested file.
    before = len(cdn_gets()), len(HUB.requests("hub", "GET", "/resolve/"))
    r = cli(cache, "download", "org/tiny-gpt2", "--include", "onnx/", "README.md")
    check(r.returncode == 0, f"second download: {r.stderr}")
    check(len(cdn_gets()) == before[0] + 1 and len(cdn_gets(etag_of(HUB.repos["org/tiny-gpt2"], "onnx/model.onnx"))) == 1,
          "the second download fetched more than onnx/model.onnx from the CDN")
    check(len(HUB.requests("hub", "GET", "/resolve/")) == before[1] + 1, "the second download fetched a git file again")
    check_layout(cache, "org/tiny-gpt2", TINY + ["onnx/model.onnx", "README.md"], "with --include")

    # The README's first step: a bare name the Hub has moved (a relative 307, like gpt2), then run.
    r = cli(cache, "download", "tiny-gpt2")
    check(r.returncode == 0 and "run: attnscope-cli run --model tiny-gpt2 --text" in r.stdout,
          f"download tiny-gpt2: {r.returncode} {r.stdout} {r.stderr}")
    check_layout(cache, "tiny-gpt2", TINY, "the renamed repo")
    r = cli(cache, "run", "--model", "tiny-gpt2", "--text", "hehe he")
    check(r.returncode == 0 and "attention" in r.stdout.lower(), f"run --model tiny-gpt2: {r.returncode} {r.stdout} {r.stderr}")
    # Offline, the cached model is found without a request.
    count = len(HUB.log)
    r = cli(cache, "download", "org/tiny-gpt2", HF_HUB_OFFLINE="1")
    check(r.returncode == 0 and "HF_HUB_OFFLINE" in r.stdout and "--model org/tiny-gpt2" in r.stdout,
          f"offline, cached: {r.returncode} {r.stdout} {r.stderr}")
    r = cli(cache, "download", "org/sharded", HF_HUB_OFFLINE="1")
    check(r.returncode == 2 and "HF_HUB_OFFLINE" in error_line(r.stderr),
          f"offline, not cached: {r.returncode} {r.stderr}")
    check(len(HUB.log) == count, "offline mode made a request")


def test_file_choice():
    cache = new_cache()
    r = cli(cache, "download", "org/sharded")
    check(r.returncode == 0, f"org/sharded: {r.stderr}")
    check_layout(cache, "org/sharded", ["config.json", "tokenizer.json", "model.safetensors.index.json",
                                        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"], "sharded")
    r = cli(cache, "download", "org/bin-only")
    check(r.returncode == 0, f"org/bin-only: {r.stderr}")
    check_layout(cache, "org/bin-only", ["config.json", "vocab.txt", "pytorch_model.bin"], "bin-only")
    r = cli(cache, "download", "org/gguf", "--include", "*Q8_0.gguf")
    commit = HUB.repos["org/gguf"]["commit"]
    gguf = os.path.join(repo_dir(cache, "org/gguf"), "snapshots", commit, "tiny-Q8_0.gguf")
    check(r.returncode == 0 and f"run: attnscope-cli run --model {gguf} --text" in r.stdout, f"gguf: {r.stdout} {r.stderr}")
    check_layout(cache, "org/gguf", ["tiny-Q8_0.gguf"], "gguf")


def test_errors():
    cache = new_cache()
    cases = [
        (["download", "org/gated"], {"HF_TOKEN": None},
         "org/gated: this model is gated: accept its licence on the Hub and set HF_TOKEN"),
        (["download", "org/missing"], {}, "no such model or revision: org/missing"),
        (["download", "org/tiny-gpt2", "--revision", "nope"], {}, "no such model or revision: org/tiny-gpt2 at revision 'nope'"),
        (["download", "org/huge"], {}, "not enough disk space for org/huge"),
        (["download", "org/corrupt"], {}, "model.safetensors of org/corrupt arrived corrupt (its sha256 differs"),
        (["download", "org/tiny-gpt2"], {"HF_ENDPOINT": "http://127.0.0.1:9"}, "cannot reach 127.0.0.1"),
    ]
    for args, extra, want in cases:
        r = cli(cache, *args, **extra)
        check(r.returncode == 2 and error_line(r.stderr).startswith("attnscope-cli download: ") and want in error_line(r.stderr),
              f"{' '.join(args)} {extra}: exit {r.returncode}, wanted 2 and a last line with '{want}': {r.stderr}")
    corrupt = repo_dir(cache, "org/corrupt")
    check(not any(f.endswith(".incomplete") or len(f) == 64 for f in os.listdir(os.path.join(corrupt, "blobs"))),
          f"a corrupt transfer left a blob: {os.listdir(os.path.join(corrupt, 'blobs'))}")
    check(not [r for r in cdn_gets(etag_of(HUB.repos["org/huge"], "model.safetensors"))], "org/huge was fetched")
    r = cli(cache, "download", "org/gated")
    check(r.returncode == 0, f"org/gated with the token: {r.stderr}")


def test_drop_and_resume():
    cache = new_cache()
    sha = etag_of(HUB.repos["org/flaky"], "model.safetensors")
    r = cli(cache, "download", "org/flaky")
    check(r.returncode == 0 and "connection lost" in r.stderr, f"org/flaky: {r.returncode} {r.stderr}")
    # Qt Network may resend the first GET once by itself when the connection breaks; what
    # counts is that the last request continues the file with a Range.
    ranges = [q["headers"].get("range") for q in cdn_gets(sha)]
    check(2 <= len(ranges) <= 3 and ranges[0] is None and ranges[-1] and ranges[-1].startswith("bytes=")
          and 0 < int(ranges[-1][6:].rstrip("-")) <= hub_stand_in.DROP_AT, f"org/flaky's requests: ranges {ranges}")
    check_layout(cache, "org/flaky", ["config.json", "model.safetensors"], "after a drop")


def test_kill_cancel_concurrent():
    repo = HUB.repos["org/slow"]
    sha = etag_of(repo, "model.safetensors")
    # kill -9 in the middle of the file: nothing in snapshots/, the partial blob stays.
    cache = new_cache()
    partial = os.path.join(repo_dir(cache, "org/slow"), "blobs", sha + ".incomplete")
    p = start(cache, "download", "org/slow")
    check(wait_for_partial(partial, 64 * 1024, p), "the slow download never started")
    p.kill()
    finish(p)
    no_snapshot_entries(cache, "org/slow", "after kill -9")
    kept = os.path.getsize(partial) if os.path.exists(partial) else 0
    check(kept >= 64 * 1024, f"kill -9 left {kept} bytes to resume from")
    # Two processes resume it at once: one transfer from where the killed one stopped (the lock
    # is the kernel's, so the dead process holds none); the other waits and reuses the blob.
    gets = len(cdn_gets(sha))
    results = [finish(q) for q in (start(cache, "download", "org/slow"), start(cache, "download", "org/slow"))]
    check(all(code == 0 for code, _, _ in results), f"concurrent resumes: {[(c, e) for c, _, e in results]}")
    check(any("resuming model.safetensors from" in err for _, _, err in results), "no process resumed")
    resumed = [q["headers"].get("range") for q in cdn_gets(sha)[gets:]]
    check(len(resumed) == 1 and resumed[0] and int(resumed[0][6:].rstrip("-")) >= kept,
          f"the resumes asked the CDN for {resumed}, {kept} bytes kept")
    check_layout(cache, "org/slow", ["config.json", "model.safetensors"], "resumed after kill -9")

    # Ctrl-C: a clean stop, one line, nothing linked, the partial file kept for later.
    cache = new_cache()
    partial = os.path.join(repo_dir(cache, "org/slow"), "blobs", sha + ".incomplete")
    p = start(cache, "download", "org/slow")
    check(wait_for_partial(partial, 16 * 1024, p), "the slow download never started")
    sent = time.time()
    p.send_signal(signal.SIGINT)
    code, out, err = finish(p)
    check(code == 2 and "download cancelled" in error_line(err) and time.time() - sent < 2,
          f"Ctrl-C: exit {code} after {time.time() - sent:.1f} s: {err}")
    no_snapshot_entries(cache, "org/slow", "after Ctrl-C")
    check(os.path.exists(partial), "Ctrl-C removed the partial file")


def main():
    global ROOT
    with tempfile.TemporaryDirectory() as root:
        ROOT = root
        started = time.time()
        for test in (test_first_download, test_file_choice, test_errors, test_drop_and_resume,
                     test_kill_cancel_concurrent):
            t = time.time()
            test()
            print(f"{test.__name__}: {time.time() - t:.2f} s", flush=True)
        check(not [o for o in outputs if TOKEN in o], "the token appeared in an output")
        print(f"{len(outputs)} runs of attnscope-cli in {time.time() - started:.1f} s")
    HUB.close()
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all download checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
