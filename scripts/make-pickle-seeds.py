#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the seed inputs in tests/fuzz/corpus/pickle/: data.pkl bytes as torch.save writes them
(protocol 2, storages as persistent ids, OrderedDict with _metadata), made with Python's own
pickle and stand-ins for the torch globals (no PyTorch, no attnscope code), plus hostile ones: a
memo DAG (each dict holds the next twice), nested lists, a list appended to itself, a refused
global. Run from the repository root: python3 scripts/make-pickle-seeds.py"""
import collections
import io
import os
import pickle
import sys
import types

OUT = os.path.join('tests', 'fuzz', 'corpus', 'pickle')


def stand_in(module, name, obj):
    """Registers obj as module.name, so pickle writes that global for it."""
    mod = sys.modules.get(module)
    if mod is None:
        mod = types.ModuleType(module)
        sys.modules[module] = mod
    obj.__module__ = module
    obj.__qualname__ = name
    obj.__name__ = name
    setattr(mod, name, obj)
    return obj


def _rebuild_tensor_v2(*args):
    raise RuntimeError('stand-in')


def _rebuild_parameter(*args):
    raise RuntimeError('stand-in')


stand_in('torch', '_utils', types.ModuleType('torch._utils'))
sys.modules['torch._utils'] = sys.modules['torch']._utils
stand_in('torch._utils', '_rebuild_tensor_v2', _rebuild_tensor_v2)
stand_in('torch._utils', '_rebuild_parameter', _rebuild_parameter)
FloatStorage = stand_in('torch', 'FloatStorage', type('FloatStorage', (), {}))
HalfStorage = stand_in('torch', 'HalfStorage', type('HalfStorage', (), {}))
LongStorage = stand_in('torch', 'LongStorage', type('LongStorage', (), {}))


class Storage:
    def __init__(self, kind, key, numel):
        self.pid = ('storage', kind, key, 'cpu', numel)


class Tensor:
    def __init__(self, storage, offset, size, stride, parameter=False):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())
        self.parameter = parameter

    def __reduce__(self):
        if self.parameter:
            return (_rebuild_parameter, (Tensor(*self.args[:4]), False, collections.OrderedDict()))
        return (_rebuild_tensor_v2, self.args)


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, Storage) else None


def dumps(obj):
    out = io.BytesIO()
    Pickler(out, protocol=2).dump(obj)
    return out.getvalue()


def state_dict(items):
    d = collections.OrderedDict(items)
    d._metadata = collections.OrderedDict({'': {'version': 1}})
    return d


def main():
    os.makedirs(OUT, exist_ok=True)
    s0, s1, s2 = Storage(FloatStorage, '0', 12), Storage(HalfStorage, '1', 4), Storage(LongStorage, '2', 3)
    normal = state_dict([
        ('embed.weight', Tensor(s0, 0, [3, 4], [4, 1])),
        ('lm_head.weight', Tensor(s0, 0, [3, 4], [4, 1])),  # tied: the same storage
        ('ln.weight', Tensor(s1, 0, [4], [1], parameter=True)),
        ('ln.bias', Tensor(s0, 4, [2, 2], [1, 2])),  # a transposed view
        ('position_ids', Tensor(s2, 0, [1, 3], [3, 1])),
        ('scalar', Tensor(s1, 3, [], [])),
    ])
    wrapped = {'state_dict': collections.OrderedDict([
        ('encoder', collections.OrderedDict([('layer.0.w', Tensor(s0, 0, [12], [1]))])),
        ('head.b', Tensor(s1, 0, [4], [1]))]), 'epoch': 3, 'lr': 1e-3, 'note': 'x'}

    level = {'w': Tensor(s0, 0, [1], [1])}
    for i in range(40):
        level = {'a%d' % i: level, 'b%d' % i: level}  # memo: the second is a BINGET
    dag = {'state_dict': level, 'step': 1}

    nested = []
    for _ in range(200):
        nested = [nested, [1, 2.5, 'x', None, True]]
    cyclic = []
    cyclic.append(cyclic)

    seeds = {
        'valid_state_dict.pkl': dumps(normal),
        'valid_wrapped.pkl': dumps(wrapped),
        'bad_memo_dag.pkl': dumps(dag),
        'bad_nested_lists.pkl': dumps({'lists': nested, 'w': Tensor(s0, 0, [1], [1])}),
        'bad_cyclic_list.pkl': dumps({'w': cyclic}),
        'bad_empty_lists.pkl': b'\x80\x02' + b']' * 4000 + b'.',
        'bad_refused_global.pkl': b'\x80\x02cposix\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.',
        'bad_truncated.pkl': dumps(normal)[:-7],
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
