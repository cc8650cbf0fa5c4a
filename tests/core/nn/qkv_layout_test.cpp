// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/qkv_layout.h"

#include <gtest/gtest.h>

#include "nn_test_util.h"

namespace attnscope {
namespace {

using test::expectAllNear;
using test::randomTensor;
using test::shapeOf;
using test::stepNames;

constexpr int64_t B = 2, T = 3, H = 4, hd = 5, C = H * hd;

/// part 0/1/2 = q/k/v gathered from qkv [B, T, 3C] by index arithmetic -> [B, H, T, hd] row-major.
std::vector<double> gather(const torch::Tensor& qkv, int part, QkvLayout layout) {
  const auto a = qkv.accessor<float, 3>();
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < hd; ++d) {
          const int64_t c = layout == QkvLayout::Split
                                ? part * C + h * hd + d        // [q | k | v]
                                : h * 3 * hd + part * hd + d;  // per head [q_h k_h v_h]
          out.push_back(a[b][t][c]);
        }
  return out;
}

TEST(QkvLayout, SplitTakesThreeContiguousBlocks) {
  const torch::Tensor qkv = randomTensor({B, T, 3 * C}, 1);
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const int in = rec.record("qkv", "self.c_attn(x)", "linear", qkv);
  const QkvHeads r = splitFusedQkv(qkv, QkvLayout::Split, H, rec, in);
  const torch::Tensor* parts[3] = {&r.q, &r.k, &r.v};
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(shapeOf(*parts[p]), (std::vector<int64_t>{B, H, T, hd}));
    expectAllNear(*parts[p], gather(qkv, p, QkvLayout::Split), 0.0,
                  "split part " + std::to_string(p));
  }
  EXPECT_EQ(stepNames(trace),
            (std::vector<std::string>{"qkv", "q_split", "q", "k_split", "k", "v_split", "v"}));
  EXPECT_EQ(r.qStep, 2);
  EXPECT_EQ(r.kStep, 4);
  EXPECT_EQ(r.vStep, 6);
  EXPECT_EQ(trace.steps[1].inputs, (std::vector<int>{in}));
  EXPECT_EQ(trace.steps[2].inputs, (std::vector<int>{1}));
  EXPECT_EQ(trace.steps[1].shape, (std::vector<int64_t>{B, T, C}));
  EXPECT_EQ(trace.steps[6].shape, (std::vector<int64_t>{B, H, T, hd}));
}

TEST(QkvLayout, InterleavedPerHeadTakesQkvOfEachHeadInTurn) {
  const torch::Tensor qkv = randomTensor({B, T, 3 * C}, 2);
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const QkvHeads r = splitFusedQkv(qkv, QkvLayout::InterleavedPerHead, H, rec, -1);
  const torch::Tensor* parts[3] = {&r.q, &r.k, &r.v};
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(shapeOf(*parts[p]), (std::vector<int64_t>{B, H, T, hd}));
    expectAllNear(*parts[p], gather(qkv, p, QkvLayout::InterleavedPerHead), 0.0,
                  "part " + std::to_string(p));
  }
  // The two layouts really differ on the same input.
  EXPECT_FALSE(torch::equal(r.q.contiguous(),
                            splitFusedQkv(qkv, QkvLayout::Split, H, rec, -1).q.contiguous()));
  trace.steps.resize(5);
  EXPECT_EQ(stepNames(trace), (std::vector<std::string>{"qkv", "qkv", "q", "k", "v"}));
  EXPECT_EQ(trace.steps[0].shape, (std::vector<int64_t>{B, T, H, 3 * hd}));
  EXPECT_EQ(trace.steps[1].shape, (std::vector<int64_t>{B, H, T, 3 * hd}));
  EXPECT_EQ((std::vector<int>{r.qStep, r.kStep, r.vStep}), (std::vector<int>{2, 3, 4}));
  for (int s = 2; s < 5; ++s) {
    EXPECT_EQ(trace.steps[s].inputs, (std::vector<int>{1}));
    EXPECT_EQ(trace.steps[s].shape, (std::vector<int64_t>{B, H, T, hd}));
  }
}

TEST(QkvLayout, SplitHeadsAndMergeHeadsRoundTrip) {
  const torch::Tensor x = randomTensor({B, T, C}, 3);
  const torch::Tensor heads = splitHeads(x, H);
  EXPECT_EQ(shapeOf(heads), (std::vector<int64_t>{B, H, T, hd}));
  const auto a = x.accessor<float, 3>();
  std::vector<double> want;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < hd; ++d) want.push_back(a[b][t][h * hd + d]);
  expectAllNear(heads, want, 0.0, "splitHeads");
  const torch::Tensor merged = mergeHeads(heads);
  EXPECT_EQ(shapeOf(merged), (std::vector<int64_t>{B, T, C}));
  EXPECT_TRUE(merged.is_contiguous());
  EXPECT_TRUE(torch::equal(merged, x));
  // mergeHeads of a head tensor built by hand.
  const torch::Tensor y = randomTensor({B, H, T, hd}, 4);
  const auto ya = y.accessor<float, 4>();
  std::vector<double> wantMerged;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) wantMerged.push_back(ya[b][c / hd][t][c % hd]);
  expectAllNear(mergeHeads(y), wantMerged, 0.0, "mergeHeads");
}

TEST(QkvLayout, RepeatKvGivesQueryHeadHTheKvHeadHOverGroups) {
  const int64_t Hkv = 2, groups = 3;
  const torch::Tensor x = randomTensor({B, Hkv, T, hd}, 5);
  const torch::Tensor r = repeatKv(x, groups);
  EXPECT_EQ(shapeOf(r), (std::vector<int64_t>{B, Hkv * groups, T, hd}));
  const auto a = x.accessor<float, 4>();
  std::vector<double> want;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv * groups; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < hd; ++d) want.push_back(a[b][h / groups][t][d]);
  expectAllNear(r, want, 0.0, "repeatKv");
  const torch::Tensor same = repeatKv(x, 1);
  EXPECT_TRUE(same.is_same(x));
}

}  // namespace
}  // namespace attnscope
