#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes pytorch_model.bin-style fixtures for tests/core/io/torch_checkpoint_test.cpp.

usage: make_bin_fixtures.py OUT_DIR

  state.bin      torch.save(model.state_dict()) of a small module: Embedding, Linear, LayerNorm
                 (F32), a Linear in F16 and one in BF16, an int64 and a bool buffer, a transposed
                 view and an offset slice that share storage with other entries
  expected.txt   one line per tensor of state.bin: name dtype dims... ; raw bytes in <name>.raw
                 (contiguous, little-endian)
  wrapped.bin    {"state_dict": {"enc": {...}, "w": t}, "epoch": 3, "lr": 0.5}
  evil_system.bin, evil_eval.bin, evil_getattr.bin   __reduce__ to os.system / eval / getattr;
                 evil_system would `touch OUT_DIR/marker` when loaded with pickle
  legacy.bin     the pre-1.6 (non-zip) format
Nothing here loads the evil files.
"""
import os
import sys

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)

DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.int64: "I64", torch.bool: "BOOL", torch.float64: "F64", torch.int32: "I32"}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(5, 4)
        self.lin = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.half_lin = torch.nn.Linear(4, 2).half()
        self.bf_lin = torch.nn.Linear(2, 2).to(torch.bfloat16)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)
        base = torch.arange(12, dtype=torch.float64) * 0.25 - 1.0
        self.register_buffer("positions", torch.arange(7, dtype=torch.int64) - 3)
        self.register_buffer("flags", torch.tensor([True, False, True]))
        self.register_buffer("base", base)                # storage shared with the next two
        self.register_buffer("base_slice", base[3:9])     # offset 3
        self.register_buffer("base_grid_t", base.view(3, 4).t())  # strided (4,3) view
        self.register_buffer("lin_weight_t", self.lin.weight.data.t())  # shares lin.weight


model = Model()
sd = model.state_dict()
assert hasattr(sd, "_metadata")
torch.save(sd, os.path.join(out, "state.bin"))
with open(os.path.join(out, "expected.txt"), "w") as f:
    for name, t in sd.items():
        f.write(" ".join([name, DTYPE[t.dtype]] + [str(d) for d in t.shape]) + "\n")
        c = t.contiguous()
        if c.dtype == torch.bfloat16:
            c = c.view(torch.int16)
        with open(os.path.join(out, name + ".raw"), "wb") as r:
            r.write(c.numpy().tobytes())

torch.save({"state_dict": {"enc": {"a": torch.ones(2), "b": {"c": torch.zeros(1, 2)}},
                           "w": torch.full((3,), 2.0)},
            "epoch": 3, "lr": 0.5, "name": "run"},
           os.path.join(out, "wrapped.bin"))

marker = os.path.join(out, "marker")


class EvilSystem:
    def __reduce__(self):
        return (os.system, ("touch " + marker,))


class EvilEval:
    def __reduce__(self):
        return (eval, ("open(%r, 'w').write('x')" % marker,))


class EvilGetattr:
    def __reduce__(self):
        return (getattr, ("abc", "upper"))


torch.save({"w": torch.ones(2), "x": EvilSystem()}, os.path.join(out, "evil_system.bin"))
torch.save({"x": EvilEval()}, os.path.join(out, "evil_eval.bin"))
torch.save({"x": EvilGetattr()}, os.path.join(out, "evil_getattr.bin"))
torch.save(sd, os.path.join(out, "legacy.bin"), _use_new_zipfile_serialization=False)
print("ok")
