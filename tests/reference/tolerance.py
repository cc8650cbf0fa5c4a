# SPDX-License-Identifier: GPL-3.0-or-later
"""How the reference tests measure the distance between attnscope's float32 numbers and a float64
reference: the same rule as the C++ tests' expectAllNear (tests/core/nn/nn_test_util.h) and
closeTolerance (tests/core/expect_close.h).

    scaled_error(have, want) = max over the elements of |have - want| / max(1, |want|)

so a tolerance TOL is absolute for |want| <= 1 and relative above: |have - want| <= TOL · max(1,
|want|). Why: float32 rounding grows with the magnitude (one ulp of 40 is 4e-6), and OpenBLAS's
kernel sets (OPENBLAS_CORETYPE Prescott, Haswell, SkylakeX, ...) round and order the sums of a
matrix product differently. An absolute tolerance on hidden states far above 1 would then test
the ulps of one CPU, not the arithmetic. Attention weights and probabilities lie in [0, 1], where
the error is the absolute one.

The reductions these tests compare are short (at most a few hundred terms), so float32's
accumulated error stays near 1e-6 of the size of the terms: the 1e-4 and 1e-5 tolerances of the
scripts leave ample room on every kernel set while a wrong formula moves the numbers by 1e-3 or
more. Where the terms are larger than the result (a dot product that cancels, or the value-weighted
norms ‖α_ij f_j‖ of a small α and a large f_j, whose error follows the largest norms), pass their
size as `magnitude`: the error is then |have - want| / max(1, |magnitude|).

The planted-fault checks ("the CLI must be far from this deliberately wrong variant") measure
with the same function and the same tolerance: "the wrong variant would have passed" is exactly
scaled_error(cli, wrong) <= TOL.
"""
import numpy as np


def _array(x):
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def scaled_error(have, want, magnitude=None):
    """max |have - want| / max(1, |want|) over the elements of two numpy arrays, torch tensors or
    numbers of the same shape; 0 for no elements. A NaN on either side or different shapes count
    as infinitely wrong, so `scaled_error(...) > TOL` cannot miss them. Infinities must match
    exactly (-inf against -inf is 0). With `magnitude` (a number, or an array that broadcasts to
    want's shape), the scale is max(1, |magnitude|) instead of max(1, |want|)."""
    h, w = _array(have), _array(want)
    if h.shape != w.shape:
        return float("inf")
    if h.size == 0:
        return 0.0
    if np.isnan(h).any() or np.isnan(w).any():
        return float("inf")
    scale = np.abs(w) if magnitude is None else np.broadcast_to(np.abs(_array(magnitude)), w.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(h - w) / np.maximum(1.0, scale)
    inf = np.isinf(h) | np.isinf(w)
    err = np.where(inf, np.where(h == w, 0.0, np.inf), err)
    return float(err.max())
