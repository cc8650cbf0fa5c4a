// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 33: a run holds its attention mask as runs of visible keys (AttentionMask), never as the
// [B, 1, Tq, Tk] tensor (4.3 GB at T = 32,768) where the blocked kernel runs (every long input,
// every run on demand), and the tiles recomputed on demand read the runs too. The numbers are the
// stored attention's (on_demand_attention_test); this checks that the tensor is never made on the
// way.
#include <gtest/gtest.h>

#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "nn/attention_mask.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
namespace {

TEST(MaskRuns, AttentionOnDemandMakesNoMaskTensor) {
  test::TempDir dir;
  test::TinyGpt2 spec;
  spec.positions = 64;
  writeTinyGpt2(dir.path("gpt2"), spec);
  ModelSpec ms;
  ms.source = dir.path("gpt2");
  const auto model = openModel(ms);
  RunRequest r;
  r.texts = {"hello world, hello world, hello", "abc"};  // padded: the items' runs differ
  r.device = DeviceKind::Cpu;
  // Stored, a short input may take the step-by-step path, which adds the mask's tensor (below
  // kBlockedMinScores cells, where the tensor is small); on demand every layer takes the kernel.
  const AttentionResult stored = model->run(r);
  r.attentionOnDemand = true;
  const uint64_t before = AttentionMask::tensorsMade();
  const AttentionResult lazy = model->run(r);
  std::vector<float> tile(4 * 6);
  lazy.group().source->tile(1, 1, 2, 0, 4, 0, 6, tile.data());  // item 1 is the shorter
  const int length = stored.group().keyLengths.at(1);
  ASSERT_LT(length, 6);
  EXPECT_EQ(AttentionMask::tensorsMade(), before) << "a run made its mask into a tensor";
  // The tile's masked cells are the stored attention's zeros, its rows the stored rows.
  const float* want = stored.group().headMatrix(1, 1, 2);
  const int Tk = stored.group().keys();
  for (int q = 0; q < 4; ++q)
    for (int k = 0; k < 6; ++k) {
      const float got = tile[static_cast<std::size_t>(q * 6 + k)];
      EXPECT_NEAR(got, want[q * Tk + k], 1e-6) << q << "," << k;
      if (k > q || k >= length) {
        EXPECT_EQ(got, 0.0f) << q << "," << k;
      }
    }
}

}  // namespace
}  // namespace attnscope
