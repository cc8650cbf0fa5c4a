// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/sparse_moe_block.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nn_test_util.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target
// that define the same helper names.
namespace sparse_moe_block_test {

using test::randomTensor;
using test::toDoubles;

constexpr int64_t B = 2, T = 3, C = 5, I = 6, E = 4, K = 2;

Linear linear(int64_t in, int64_t out, uint32_t seed, double scale = 1.0) {
  Linear l(in, out, false);
  l->weight = randomTensor({out, in}, seed, scale);
  return l;
}

SparseMoeBlock block(bool normTopK, bool shared = false) {
  SparseMoeBlock m;
  m.gate = linear(C, E, 1, 2.0);
  for (int e = 0; e < E; ++e) {
    GatedMlp& g = m.experts.emplace_back();
    g.gate = linear(C, I, 10 + 3 * e);
    g.up = linear(C, I, 11 + 3 * e);
    g.down = linear(I, C, 12 + 3 * e);
  }
  m.topK = K;
  m.normTopK = normTopK;
  if (shared) {  // Qwen2-MoE's shared expert, of another width, and its gate
    m.sharedExpert.gate = linear(C, I + 1, 30);
    m.sharedExpert.up = linear(C, I + 1, 31);
    m.sharedExpert.down = linear(I + 1, C, 32);
    m.sharedExpertGate = linear(C, 1, 33, 2.0);
  }
  return m;
}

/// row · Wᵀ with loops.
std::vector<double> linearRow(const Linear& l, const std::vector<double>& row) {
  const std::vector<double> w = toDoubles(l->weight);
  const std::size_t in = row.size(), out = w.size() / in;
  std::vector<double> y(out, 0.0);
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t i = 0; i < in; ++i) y[o] += row[i] * w[o * in + i];
  return y;
}

/// down(silu(gate(row)) · up(row)) with loops.
std::vector<double> gatedMlpRow(const GatedMlp& g, const std::vector<double>& row) {
  std::vector<double> h = linearRow(g.gate, row);
  const std::vector<double> u = linearRow(g.up, row);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = h[i] / (1 + std::exp(-h[i])) * u[i];
  return linearRow(g.down, h);
}

/// Every token through every expert, weighted by the router's renormalised (or not) top k, in
/// double precision: the block must agree although it runs each expert on its tokens only. With
/// `shared`, every token also through the shared expert times sigmoid(its gate).
void expectLoops(bool normTopK, bool shared = false) {
  SparseMoeBlock m = block(normTopK, shared);
  const torch::Tensor x = randomTensor({B, T, C}, 7);
  TraceRecorder rec(nullptr);
  int step = -1;
  MoeRouting routing;
  const torch::Tensor out = m.forward(x, Activation::Silu, rec, -1, &step, &routing);
  const std::vector<double> xs = toDoubles(x);
  std::vector<double> want;
  std::vector<double> wantExperts, wantWeights;
  for (int64_t n = 0; n < B * T; ++n) {
    const std::vector<double> row(xs.begin() + n * C, xs.begin() + (n + 1) * C);
    std::vector<double> p = linearRow(m.gate, row);
    const double mx = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - mx));
    for (double& v : p) v /= sum;
    std::vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    double kept = 0;
    for (int j = 0; j < K; ++j) kept += p[order[j]];
    std::vector<double> y(C, 0.0);
    for (int j = 0; j < K; ++j) {
      const GatedMlp& g = m.experts[static_cast<std::size_t>(order[j])];
      const double w = normTopK ? p[order[j]] / kept : p[order[j]];
      const std::vector<double> d = gatedMlpRow(g, row);
      for (int64_t c = 0; c < C; ++c) y[c] += w * d[c];
      wantExperts.push_back(order[j]);
      wantWeights.push_back(w);
    }
    if (shared) {
      const double gate = 1 / (1 + std::exp(-linearRow(m.sharedExpertGate, row)[0]));
      const std::vector<double> d = gatedMlpRow(m.sharedExpert, row);
      for (int64_t c = 0; c < C; ++c) y[c] += gate * d[c];
    }
    want.insert(want.end(), y.begin(), y.end());
  }
  test::expectAllNear(out, want, 1e-5,
                      shared     ? "with a shared expert"
                      : normTopK ? "renormalised"
                                 : "raw top-k");
  test::expectAllNear(routing.experts.to(torch::kFloat), wantExperts, 0, "experts");
  test::expectAllNear(routing.weights, wantWeights, 1e-6, "weights");
  EXPECT_EQ(test::shapeOf(routing.experts), (std::vector<int64_t>{B, T, K}));
}

TEST(SparseMoeBlock, MatchesLoopsWithTopKRenormalised) { expectLoops(true); }
TEST(SparseMoeBlock, MatchesLoopsWithRawTopK) { expectLoops(false); }
TEST(SparseMoeBlock, MatchesLoopsWithAGatedSharedExpert) { expectLoops(false, true); }

TEST(SparseMoeBlock, SharedExpertIsTracedAndAddedLast) {
  SparseMoeBlock m = block(false, true);
  const torch::Tensor x = randomTensor({B, T, C}, 7);
  LayerTrace trace;
  TraceRecorder rec(&trace);
  int step = -1;
  m.forward(x, Activation::Silu, rec, -1, &step, nullptr);
  ASSERT_GE(trace.steps.size(), 2u);
  const TraceStep& shared = trace.steps[trace.steps.size() - 2];
  EXPECT_EQ(shared.name, "shared_expert");
  EXPECT_EQ(shared.shape, (std::vector<int64_t>{B, T, C}));
  EXPECT_NE(findTraceStepKind(shared.kind), nullptr);
  EXPECT_EQ(trace.steps.back().kind, "add");
  EXPECT_EQ(step, static_cast<int>(trace.steps.size()) - 1);
}

TEST(SparseMoeBlock, ExpertsNobodyChoseAreNotRead) {
  SparseMoeBlock m = block(true);
  // Positive inputs and a router row of -10s: the last expert is nobody's choice.
  const torch::Tensor x = randomTensor({B, T, C}, 7).abs() + 0.1;
  m.gate->weight[E - 1].fill_(-10.0);
  TraceRecorder rec(nullptr);
  int step = -1;
  MoeRouting routing;
  const torch::Tensor out = m.forward(x, Activation::Silu, rec, -1, &step, &routing);
  for (double e : toDoubles(routing.experts.to(torch::kFloat))) ASSERT_NE(e, E - 1);
  // NaN weights there change nothing: its rows are never computed.
  GatedMlp& g = m.experts.back();
  g.down->weight = torch::full_like(g.down->weight, std::nanf(""));
  EXPECT_TRUE(torch::equal(m.forward(x, Activation::Silu, rec, -1, &step, nullptr), out));
}

}  // namespace sparse_moe_block_test
}  // namespace attnscope
