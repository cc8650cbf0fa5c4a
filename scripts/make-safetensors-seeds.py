#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the small seed inputs in tests/fuzz/corpus/safetensors/ from the spec, by hand (json +
struct, no attnscope code), so the fuzzer starts from valid files and near misses.
Run from the repository root: python3 scripts/make-safetensors-seeds.py"""
import json
import os
import struct

OUT = os.path.join('tests', 'fuzz', 'corpus', 'safetensors')


def safetensors(header, data):
    h = json.dumps(header, separators=(',', ':')).encode('utf-8')
    h += b' ' * ((8 - len(h) % 8) % 8)
    return struct.pack('<Q', len(h)) + h + data


def main():
    os.makedirs(OUT, exist_ok=True)
    f32 = struct.pack('<6f', 1, -2, 0.5, 3, 0, 1e-3)
    f16 = struct.pack('<3H', 0x3C00, 0x0001, 0x7C00)
    valid = safetensors({
        '__metadata__': {'format': 'pt'},
        'w': {'dtype': 'F32', 'shape': [2, 3], 'data_offsets': [0, 24]},
        'h': {'dtype': 'F16', 'shape': [3], 'data_offsets': [24, 30]},
        'e': {'dtype': 'BF16', 'shape': [0], 'data_offsets': [30, 30]},
    }, f32 + f16)
    seeds = {
        'valid_small.safetensors': valid,
        'truncated.safetensors': valid[:-5],
        'empty_header.safetensors': safetensors({}, b''),
        'huge_header_length.safetensors': struct.pack('<Q', 10**12) + b'{}',
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
