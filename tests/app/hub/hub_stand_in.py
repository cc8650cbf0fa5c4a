#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the Hugging Face Hub on 127.0.0.1, for the download tests (never the internet).

It answers the requests huggingface_hub and attnscope make, with the Hub's headers:
  GET  /api/models/{repo}/revision/{rev}   {"sha": commit, "siblings": [{"rfilename": ...}]}
  HEAD/GET /{repo}/resolve/{rev}/{file}     files kept in git: 200, ETag "<git blob sha1>";
                                            LFS files: 302 to a second server (the "CDN", another
                                            port, so another origin) with X-Linked-Etag
                                            "<sha256>" and X-Linked-Size
  GET  /blobs/{sha256} on the CDN           the bytes, with Range (206, Content-Range, 416)
Every answer from the Hub carries X-Repo-Commit. Errors carry X-Error-Code as the Hub's do:
a gated repository (401 GatedRepo without the token, 200 with it), a missing one (404
RepoNotFound), a missing revision (404 RevisionNotFound). A renamed repository answers with a
relative 307 to its new name, as "gpt2" does for "openai-community/gpt2".

Behaviours for the robustness tests, per LFS file: "drop" (the first GET closes the connection
after DROP_AT bytes), "slow" (a GET without Range trickles), "corrupt" (the CDN sends other bytes
than the sha256 promises), "huge" (X-Linked-Size of a petabyte). Every request is logged
(method, path, headers) for the tests to inspect.

Run as a program it prints {"hub": PORT, "cdn": PORT} on one line and serves until stdin closes
(the window's test drives it so); the CLI test imports it and runs it in threads.
"""
import hashlib
import json
import random
import socket
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "hf_standin_secret_0123456789"
DROP_AT = 200_000
SLOW_CHUNK, SLOW_PAUSE = 16 * 1024, 0.02  # about 800 kB/s


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def commit_of(name):
    return hashlib.sha1(("commit " + name).encode()).hexdigest()


def tiny_gpt2_files(seed=5):
    """A one-layer GPT-2 in the Hugging Face layout, float32, from json + struct alone."""
    rng = random.Random(seed)
    L, H, C, P = 1, 2, 8, 16
    b2u = {}
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    b2u = {b: chr(c) for b, c in zip(bs, cs)}
    vocab = {b2u[b]: b for b in range(256)}
    vocab.update({b2u[ord("h")] + b2u[ord("e")]: 256})
    V = len(vocab)
    shapes = {"wte.weight": (V, C), "wpe.weight": (P, C)}
    for l in range(L):
        p = f"h.{l}."
        shapes.update({p + "ln_1.weight": (C,), p + "ln_1.bias": (C,), p + "attn.c_attn.weight": (C, 3 * C),
                       p + "attn.c_attn.bias": (3 * C,), p + "attn.c_proj.weight": (C, C), p + "attn.c_proj.bias": (C,),
                       p + "ln_2.weight": (C,), p + "ln_2.bias": (C,), p + "mlp.c_fc.weight": (C, 4 * C),
                       p + "mlp.c_fc.bias": (4 * C,), p + "mlp.c_proj.weight": (4 * C, C), p + "mlp.c_proj.bias": (C,)})
    shapes.update({"ln_f.weight": (C,), "ln_f.bias": (C,)})
    header, data = {}, b""
    for name, shape in shapes.items():
        count = 1
        for d in shape:
            count *= d
        ones = name.endswith(".weight") and name.split(".")[-2].startswith("ln")
        values = [1.0 + rng.gauss(0, 0.1) if ones else rng.gauss(0, 0.3) for _ in range(count)]
        blob = struct.pack(f"<{count}f", *values)
        header["transformer." + name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    config = {"model_type": "gpt2", "n_layer": L, "n_head": H, "n_embd": C, "n_ctx": P, "n_positions": P,
              "vocab_size": V, "layer_norm_epsilon": 1e-5}
    return {
        "config.json": json.dumps(config, indent=2).encode(),
        "generation_config.json": b'{"bos_token_id": 0, "eos_token_id": 0}\n',
        "tokenizer_config.json": b'{"model_max_length": 16}\n',
        "vocab.json": json.dumps(vocab).encode(),
        "merges.txt": ("#version: 0.2\n" + b2u[ord("h")] + " " + b2u[ord("e")] + "\n").encode(),
        "model.safetensors": struct.pack("<Q", len(text)) + text + data,
    }


def noise(size, seed):
    return random.Random(seed).randbytes(size)


def repositories():
    """repo id -> {"files": {name: bytes}, "lfs": {names}, "gated": bool, "behaviour": {name: str}}."""
    gpt2 = tiny_gpt2_files()
    config = b'{"model_type": "gpt2"}\n'
    repos = {
        "org/tiny-gpt2": {"files": {**gpt2, "README.md": b"# tiny\n", "pytorch_model.bin": noise(3000, 1),
                                    "onnx/model.onnx": noise(2000, 2), "flax_model.msgpack": noise(1000, 3)}},
        "org/sharded": {"files": {"config.json": config, "tokenizer.json": b"{}\n",
                                  "model.safetensors.index.json": json.dumps({"metadata": {}, "weight_map": {
                                      "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",
                                      "c": "model-00001-of-00002.safetensors"}}).encode(),
                                  "model-00001-of-00002.safetensors": noise(5000, 4),
                                  "model-00002-of-00002.safetensors": noise(4000, 5),
                                  "consolidated.safetensors": noise(9000, 6), "pytorch_model.bin": noise(9000, 7)}},
        "org/bin-only": {"files": {"config.json": config, "vocab.txt": b"[PAD]\n", "pytorch_model.bin": noise(3000, 8),
                                   "tf_model.h5": noise(3000, 9)}},
        "org/gguf": {"files": {"README.md": b"# gguf\n", "tiny-Q8_0.gguf": b"GGUF" + noise(3000, 10),
                               "tiny-F16.gguf": b"GGUF" + noise(5000, 11)}},
        "org/gated": {"files": {"config.json": config, "model.safetensors": noise(2000, 12)}, "gated": True},
        "org/flaky": {"files": {"config.json": config, "model.safetensors": noise(600_000, 13)},
                      "behaviour": {"model.safetensors": "drop"}},
        "org/slow": {"files": {"config.json": config, "model.safetensors": noise(1_000_000, 14)},
                     "behaviour": {"model.safetensors": "slow"}},
        "org/corrupt": {"files": {"config.json": config, "model.safetensors": noise(3000, 15)},
                        "behaviour": {"model.safetensors": "corrupt"}},
        "org/huge": {"files": {"config.json": config, "model.safetensors": noise(100, 16)},
                     "behaviour": {"model.safetensors": "huge"}},
    }
    for name, repo in repos.items():
        repo.setdefault("gated", False)
        repo.setdefault("behaviour", {})
        repo["lfs"] = {f for f in repo["files"] if f.endswith((".safetensors", ".bin", ".gguf", ".onnx", ".msgpack", ".h5"))}
        repo["commit"] = commit_of(name)
    return repos


class StandIn:
    """The Hub and its CDN, each a threaded HTTP server on 127.0.0.1 with an OS-chosen port."""

    def __init__(self):
        self.repos = repositories()
        self.renamed = {"tiny-gpt2": "org/tiny-gpt2"}
        self.blobs = {}  # sha256 -> (repo, file)
        for repo_id, repo in self.repos.items():
            for f in repo["lfs"]:
                self.blobs[hashlib.sha256(repo["files"][f]).hexdigest()] = (repo_id, f)
        self.log = []
        self.lock = threading.Lock()
        self.dropped = set()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                stand_in.handle(self, "HEAD")

            def do_GET(self):
                stand_in.handle(self, "GET")

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client that hangs up (a cancel, a kill) is part of the tests

        self.hub = Server(("127.0.0.1", 0), Handler)
        self.cdn = Server(("127.0.0.1", 0), Handler)
        self.hub.daemon_threads = self.cdn.daemon_threads = True
        self.hub_port = self.hub.server_address[1]
        self.cdn_port = self.cdn.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.hub_port}"
        for server in (self.hub, self.cdn):
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self):
        self.hub.shutdown()
        self.cdn.shutdown()

    def requests(self, server=None, method=None, contains=""):
        with self.lock:
            return [r for r in self.log if (server is None or r["server"] == server) and
                    (method is None or r["method"] == method) and contains in r["path"]]

    # --- answers -------------------------------------------------------------------------------

    def send(self, h, status, headers=None, body=b"", head=False):
        h.send_response(status)
        headers = dict(headers or {})
        headers.setdefault("Content-Length", str(len(body)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        if not head and body:
            h.wfile.write(body)

    def error(self, h, status, code, message, head, commit=None):
        headers = {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}
        if commit:
            headers["X-Repo-Commit"] = commit
        self.send(h, status, headers, json.dumps({"error": message}).encode(), head)

    def handle(self, h, method):
        server = "cdn" if h.server is self.cdn else "hub"
        with self.lock:
            self.log.append({"server": server, "method": method, "path": h.path,
                             "headers": {k.lower(): v for k, v in h.headers.items()}})
        head = method == "HEAD"
        try:
            if server == "cdn":
                return self.blob(h, head)
            path = urllib.parse.urlsplit(h.path).path
            if path.startswith("/api/models/") and "/revision/" in path:
                repo_id, rev = path[len("/api/models/"):].split("/revision/", 1)
                return self.api(h, urllib.parse.unquote(repo_id), urllib.parse.unquote(rev), head)
            if "/resolve/" in path:
                repo_id, rest = path[1:].split("/resolve/", 1)
                rev, _, file = rest.partition("/")
                return self.resolve(h, urllib.parse.unquote(repo_id), urllib.parse.unquote(rev),
                                    urllib.parse.unquote(file), head)
            self.error(h, 404, "NotFound", "not found", head)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def repo(self, h, repo_id, rev, head, path_after):
        """The repository and commit a request names, or None once an error answer is sent."""
        if repo_id in self.renamed:
            self.send(h, 307, {"Location": path_after(self.renamed[repo_id])}, b"", head)
            return None
        repo = self.repos.get(repo_id)
        if repo is None:
            self.error(h, 404, "RepoNotFound", "Repository not found", head)
            return None
        if repo["gated"] and h.headers.get("Authorization") != "Bearer " + TOKEN:
            self.error(h, 401, "GatedRepo", "Access to model " + repo_id + " is restricted.", head)
            return None
        if rev not in ("main", repo["commit"]):
            self.error(h, 404, "RevisionNotFound", "Invalid rev id: " + rev, head)
            return None
        return repo

    def api(self, h, repo_id, rev, head):
        quoted = urllib.parse.quote(rev, safe="")
        repo = self.repo(h, repo_id, rev, head, lambda new: f"/api/models/{new}/revision/{quoted}")
        if repo is None:
            return
        body = json.dumps({"id": repo_id, "sha": repo["commit"],
                           "siblings": [{"rfilename": f} for f in sorted(repo["files"])]}).encode()
        self.send(h, 200, {"Content-Type": "application/json"}, body, head)

    def resolve(self, h, repo_id, rev, file, head):
        repo = self.repo(h, repo_id, rev, head,
                         lambda new: f"/{new}/resolve/{urllib.parse.quote(rev, safe='')}/{urllib.parse.quote(file)}")
        if repo is None:
            return
        data = repo["files"].get(file)
        if data is None:
            return self.error(h, 404, "EntryNotFound", "Entry not found", head, repo["commit"])
        headers = {"X-Repo-Commit": repo["commit"]}
        if file in repo["lfs"]:
            sha = hashlib.sha256(data).hexdigest()
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n".encode()
            size = 10 ** 15 if repo["behaviour"].get(file) == "huge" else len(data)
            headers.update({"ETag": f'"{git_sha1(pointer)}"', "X-Linked-Etag": f'"{sha}"',
                            "X-Linked-Size": str(size),
                            "Location": f"http://127.0.0.1:{self.cdn_port}/blobs/{sha}?signature=abc"})
            return self.send(h, 302, headers, b"", head)
        headers["ETag"] = f'"{git_sha1(data)}"'
        self.ranged(h, data, headers, head, "")

    def blob(self, h, head):
        sha = urllib.parse.urlsplit(h.path).path.rsplit("/", 1)[-1]
        if sha not in self.blobs:
            return self.error(h, 404, "NotFound", "no such blob", head)
        repo_id, file = self.blobs[sha]
        data = self.repos[repo_id]["files"][file]
        behaviour = self.repos[repo_id]["behaviour"].get(file, "")
        if behaviour == "corrupt":
            data = bytes([data[0] ^ 1]) + data[1:]
        self.ranged(h, data, {"ETag": f'"{sha}"'}, head, behaviour)

    def ranged(self, h, data, headers, head, behaviour):
        start = 0
        spec = h.headers.get("Range")
        if spec:
            start = int(spec.split("=", 1)[1].split("-", 1)[0])
            if start >= len(data):
                return self.send(h, 416, {"Content-Range": f"bytes */{len(data)}"}, b"", head)
        part = data[start:]
        headers["Content-Length"] = str(len(part))
        headers["Accept-Ranges"] = "bytes"
        if spec:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        h.send_response(206 if spec else 200)
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        if head:
            return
        key = h.path
        if behaviour == "drop" and key not in self.dropped:
            self.dropped.add(key)
            h.wfile.write(part[:DROP_AT])
            h.wfile.flush()
            h.connection.shutdown(socket.SHUT_RDWR)
            h.close_connection = True
            return
        if behaviour == "slow" and not spec:
            for at in range(0, len(part), SLOW_CHUNK):
                h.wfile.write(part[at:at + SLOW_CHUNK])
                h.wfile.flush()
                time.sleep(SLOW_PAUSE)
            return
        h.wfile.write(part)


def main():
    stand_in = StandIn()
    print(json.dumps({"hub": stand_in.hub_port, "cdn": stand_in.cdn_port, "token": TOKEN}), flush=True)
    sys.stdin.read()  # until the test closes our stdin (or dies)
    stand_in.close()


if __name__ == "__main__":
    main()
