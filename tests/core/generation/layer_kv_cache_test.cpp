// SPDX-License-Identifier: GPL-3.0-or-later
// The key/value cache inside scaledDotProduct and the masks of queries after cached keys, against
// one whole-sequence attention.
#include <gtest/gtest.h>

#include "generation/layer_kv_cache.h"
#include "nn/attention_mask.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

TEST(LayerKvCache, StepsThroughTheCacheEqualOneCausalAttention) {
  torch::manual_seed(3);
  const int64_t T = 7;
  const torch::Tensor q = torch::randn({1, 2, T, 16}), k = torch::randn({1, 2, T, 16}),
                      v = torch::randn({1, 2, T, 16});
  TraceRecorder rec(nullptr);
  for (const SdpaKernel kernel : {SdpaKernel::Reference, SdpaKernel::Blocked}) {
    SdpaOptions full;
    full.mask = causalMask(T);
    full.scale = 0.25;
    full.kernel = kernel;
    const ScaledDotProduct want = scaledDotProduct(q, k, v, full, rec, -1, -1, -1);
    LayerKvCache cache;
    cache.reserve(3);  // too small: the storage must grow and keep what it holds
    SdpaOptions o = full;
    o.buffers.kvCache = &cache;
    o.mask = causalMask(4);
    scaledDotProduct(q.narrow(2, 0, 4), k.narrow(2, 0, 4), v.narrow(2, 0, 4), o, rec, -1, -1, -1);
    o.mask = torch::Tensor();  // one query after cached keys sees them all
    for (int64_t t = 4; t < T; ++t) {
      const ScaledDotProduct got = scaledDotProduct(q.narrow(2, t, 1), k.narrow(2, t, 1),
                                                    v.narrow(2, t, 1), o, rec, -1, -1, -1);
      EXPECT_TRUE(torch::allclose(got.attention, want.attention.narrow(2, t, 1).narrow(3, 0, t + 1),
                                  1e-5, 1e-6));
      EXPECT_TRUE(torch::allclose(got.values, want.values.narrow(2, t, 1), 1e-5, 1e-6));
    }
    EXPECT_EQ(cache.length(), T);
  }
}

TEST(LayerKvCache, StoredReadsBackWithoutAppending) {
  // Cross-attention: the encoder's keys and values are appended once and read back every step.
  LayerKvCache cache;
  EXPECT_FALSE(cache.stored(-1).first.defined());
  const torch::Tensor k = torch::randn({1, 2, 5, 8}), v = torch::randn({1, 2, 5, 8});
  cache.append(k, v, -1);
  for (int i = 0; i < 2; ++i) {
    const auto [sk, sv] = cache.stored(-1);
    EXPECT_TRUE(sk.equal(k));
    EXPECT_TRUE(sv.equal(v));
    EXPECT_EQ(cache.length(), 5);
  }
  EXPECT_FALSE(cache.stored(0).first.defined());  // a per-head slot never written
}

TEST(LayerKvCache, MasksCountFromTheQueryOffset) {
  MaskOptions o;
  o.keyLengths = {5};
  o.queries = 2;
  o.keys = 5;
  o.causal = true;
  o.slidingWindow = 3;
  o.queryOffset = 3;  // queries at positions 3 and 4
  const torch::Tensor visible = buildMask(o).dense().eq(0)[0][0];
  const torch::Tensor want =
      torch::tensor({0, 1, 1, 1, 0, 0, 0, 1, 1, 1}, torch::kBool).view({2, 5});
  EXPECT_TRUE(visible.equal(want)) << visible;
  o.slidingWindow = 0;
  o.queries = 1;
  o.queryOffset = 4;
  EXPECT_FALSE(buildMask(o).defined());  // the last position sees every key: nothing to mask
}

}  // namespace
}  // namespace attnscope
