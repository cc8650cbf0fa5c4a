// SPDX-License-Identifier: GPL-3.0-or-later
// Loading a model costs at most 1.1x its file size: F32 weights are views of the mapped file and
// F16/BF16 weights stay in their dtype, so opening a folder copies no weights. Mapped weights are
// checked against the machine's available memory, not a run's limit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "attnscope/model_spec.h"
#include "expect_error.h"
#include "models/checkpoint_folder.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

/// Resident set size of this process, from /proc/self/status.
uint64_t residentBytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      uint64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

uint64_t folderWeightBytes(const std::string& folder) {
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (e.path().extension() == ".safetensors") n += fs::file_size(e.path());
  }
  return n;
}

class LoadingMemory : public ::testing::TestWithParam<test::TinyStorage> {};

TEST_P(LoadingMemory, OpeningAFolderHoldsNoSecondCopyOfTheWeights) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "resident memory is not the program's under AddressSanitizer (shadow memory, "
                  "the quarantine of freed blocks)";
#endif
  test::TempDir dir;
  // Warm the runtime up on a tiny model first, so only the big model's cost is measured.
  test::writeTinyGpt2(dir.path("small"), test::TinyGpt2{});
  ModelSpec small;
  small.source = dir.path("small");
  RunRequest warm;
  warm.texts = {"he"};
  warm.device = DeviceKind::Cpu;
  ASSERT_NO_THROW(openModel(small)->run(warm));

  test::TinyGpt2 spec;
  spec.layers = 4;
  spec.embd = 384;
  spec.heads = 6;
  spec.positions = 64;
  spec.vocab = 8192;
  spec.storage = GetParam();
  test::writeTinyGpt2(dir.path("big"), spec);
  const uint64_t fileBytes = folderWeightBytes(dir.path("big"));
  ASSERT_GT(fileBytes, 20u << 20);

  ModelSpec big;
  big.source = dir.path("big");
  const uint64_t before = residentBytes();
  const auto model = openModel(big);
  const uint64_t after = residentBytes();
  const uint64_t grown = after > before ? after - before : 0;
  // The mapped pages are not read yet: opening itself stays far under the 1.1x budget. A copy
  // of the weights (float32 or widened) would be at least 1.0x the file.
  EXPECT_LT(grown, fileBytes / 4) << "opening grew RSS by " << grown << " bytes for a " << fileBytes
                                  << "-byte checkpoint";
  EXPECT_LE(model->info().parameterBytes, fileBytes);

  // Running touches every weight once; widened F16/BF16 copies last one layer at a time.
  RunRequest request;
  request.texts = {"he the"};
  request.device = DeviceKind::Cpu;
  request.keepScores = false;
  ASSERT_NO_THROW(model->run(request));
  const uint64_t ran = residentBytes();
  EXPECT_LT(ran - before, fileBytes * 11 / 10 + (8u << 20))
      << "after a run RSS grew by " << (ran - before);

  // The weights are file pages: reported, not counted against the run's limit. A compact weight
  // is widened while it is used, which the working memory counts (wte, the largest, [V, C]).
  const ModelInfo info = model->info();
  EXPECT_EQ(info.mappedBytes, info.parameterBytes);
  const MemoryEstimate e = model->estimate(request);
  EXPECT_EQ(e.mappedWeights, e.weights);
  EXPECT_EQ(e.total, e.attention + e.scores + e.working);
  if (GetParam() != test::TinyStorage::F32) {
    EXPECT_GE(e.working, uint64_t(spec.vocab) * spec.embd * sizeof(float));
  }
}

/// A folder whose weight file has `bytes` bytes (sparse: nothing is written, and nothing reads it
/// before the check).
std::string folderWithWeights(test::TempDir& dir, const std::string& file, uint64_t bytes) {
  const std::string folder = dir.path("m");
  fs::create_directories(folder);
  std::ofstream(fs::path(folder) / file).close();
  fs::resize_file(fs::path(folder) / file, bytes);
  return folder;
}

constexpr uint64_t kGiB = 1ull << 30;

// An 8B model's 16 GB of safetensors open with the default 8 GiB limit on a machine that has the
// memory: mapped pages are checked against what is available, and a limit raised past them opens
// them anyway.
TEST(WeightsFit, MappedWeightsAreCheckedAgainstAvailableMemory) {
  test::TempDir dir;
  const std::string folder = folderWithWeights(dir, "model.safetensors", 3 * kGiB);
  EXPECT_NO_THROW(checkWeightsFit(folder, "m", 1 * kGiB, 4 * kGiB));
  test::expectError([&] { checkWeightsFit(folder, "m", 1 * kGiB, 2 * kGiB); },
                    ErrorKind::ResourceLimit, "available");
  EXPECT_NO_THROW(checkWeightsFit(folder, "m", 4 * kGiB, 2 * kGiB)) << "the user raised the limit";
}

// pytorch_model.bin is read into memory (three times its size while converted): the run's limit
// applies whatever the machine has.
TEST(WeightsFit, WeightsReadIntoMemoryAreCheckedAgainstTheLimit) {
  test::TempDir dir;
  const std::string folder = folderWithWeights(dir, "pytorch_model.bin", 1 * kGiB);
  test::expectError([&] { checkWeightsFit(folder, "m", 2 * kGiB, 100 * kGiB); },
                    ErrorKind::ResourceLimit, "loading its weights");
  EXPECT_NO_THROW(checkWeightsFit(folder, "m", 4 * kGiB, 1 * kGiB));
  // A safetensors file too small to be mapped is read too.
  test::TempDir small;
  const std::string tiny = folderWithWeights(small, "model.safetensors", 1000);
  test::expectError([&] { checkWeightsFit(tiny, "m", 999, 100 * kGiB); }, ErrorKind::ResourceLimit,
                    "loading its weights");
}

std::string storageName(const ::testing::TestParamInfo<test::TinyStorage>& info) {
  static const char* const names[] = {"F32", "F16", "BF16", "Sharded"};
  return names[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LoadingMemory,
                         ::testing::Values(test::TinyStorage::F32, test::TinyStorage::F16,
                                           test::TinyStorage::BF16),
                         storageName);

}  // namespace
}  // namespace attnscope
