// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

// How the core tests compare a computed float with a double-precision reference value: the rule
// of expectAllNear (nn/nn_test_util.h) and of the Python reference tests (tests/reference/
// tolerance.py). A tolerance `tol` is absolute while |want| <= 1 and relative above:
//   |got - want| <= tol · max(1, |want|).
// Why: float32 rounding grows with the magnitude (one ulp of 40 is 4e-6), and OpenBLAS's kernel
// sets (OPENBLAS_CORETYPE Prescott, Haswell, SkylakeX, ...) round and order the sums of a
// product differently, so an absolute tolerance on values far above 1 tests one CPU's ulps.
// Probabilities and other values in [0, 1] keep their absolute tolerance unchanged.
//
// For a sum of K products whose terms are larger than the result (cancellation), the rounding
// follows the terms, not the result: scale by their magnitude, Σ|a_k·b_k| (closeTolerance's
// first argument, closeError's `magnitude`).
namespace attnscope::test {

/// The tolerance for comparing a value with `want`: tol · max(1, |want|). Use as
/// EXPECT_NEAR(got, want, closeTolerance(want, 1e-5)).
inline double closeTolerance(double want, double tol) {
  return tol * std::max(1.0, std::abs(want));
}

/// |got − want| / max(1, |want|): the error closeTolerance bounds, for a test that keeps the worst
/// over many elements and compares it with tol once. Equal values (equal infinities too) give 0;
/// a NaN on either side gives infinity, so std::max(worst, closeError(...)) cannot drop it. With
/// `magnitude`, the scale is max(1, |magnitude|) instead: Σ|a_k·b_k| for a sum of products.
inline double closeError(double got, double want, double magnitude) {
  if (got == want) return 0.0;
  const double e = std::abs(got - want) / std::max(1.0, std::abs(magnitude));
  return std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
}
inline double closeError(double got, double want) { return closeError(got, want, want); }

}  // namespace attnscope::test
