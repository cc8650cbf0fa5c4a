// SPDX-License-Identifier: GPL-3.0-or-later
// GgufFile and the ggml dequantization: files written by tests/reference/gguf_reference.py (no
// attnscope code) are read back, every readable type's blocks equal the float32 values Python
// computed from the published block layouts bit for bit, and hostile files (truncated, big-endian,
// huge counts, 10^6 keys, overlapping, unaligned or out-of-file tensors, unknown types) are
// refused with a message, quickly. readGgufVocabulary fills the tokenizer's struct from metadata.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "attnscope/error.h"
#include "expect_error.h"
#include "io/gguf_file.h"
#include "io/gguf_vocabulary_reader.h"
#include "python_check.h"
#include "temp_dir.h"

namespace attnscope {
namespace {

const std::string kScript = std::string(ATTNSCOPE_TEST_DATA) + "/../reference/gguf_reference.py";

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs gguf_reference.py with the arguments; false (and a skip) when numpy is missing.
bool runReference(const std::string& args) {
  const std::string cmd = std::string(test::kPython) + " " + kScript + " " + args + " 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(status, 0) << cmd;
  return status == 0;
}

// A GGUF file byte by byte, for the hostile cases the Python writer would not produce.
struct Bytes {
  std::string s;
  bool wide = true;
  Bytes& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes& count(uint64_t v) { return wide ? u64(v) : u32(static_cast<uint32_t>(v)); }
  Bytes& str(const std::string& v) {
    count(v.size());
    s += v;
    return *this;
  }
  Bytes& header(uint32_t version, uint64_t tensors, uint64_t keys) {
    s += "GGUF";
    u32(version);
    wide = version >= 2;
    return count(tensors).count(keys);
  }
  // A tensor info: name, dims, type, offset.
  Bytes& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) count(d);
    return u32(type).u64(offset);
  }
  Bytes& pad(std::size_t alignment = 32) {
    s.append((alignment - s.size() % alignment) % alignment, '\0');
    return *this;
  }
};

void expectRefused(const std::string& bytes, const std::string& word) {
  test::expectError([&] { GgufFile::fromBytes(bytes); }, ErrorKind::Format, word);
}

TEST(GgufFile, ReadsEveryValueTypeInVersions1To3) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  ASSERT_TRUE(runReference("metadata " + dir.path("")));
  for (int version = 1; version <= 3; ++version) {
    SCOPED_TRACE(version);
    const GgufFile f = GgufFile::open(dir.path("meta_v" + std::to_string(version) + ".gguf"));
    EXPECT_EQ(f.version(), static_cast<uint32_t>(version));
    EXPECT_EQ(f.alignment(), version == 3 ? 64u : 32u);
    ASSERT_NE(f.find("general.architecture"), nullptr);
    EXPECT_EQ(*f.find("general.architecture")->string(), "llama");
    EXPECT_EQ(f.find("test.scalar.0")->integer(), 200);
    EXPECT_EQ(f.find("test.scalar.1")->integer(), -100);
    EXPECT_EQ(f.find("test.scalar.2")->integer(), 60000);
    EXPECT_EQ(f.find("test.scalar.3")->integer(), -30000);
    EXPECT_EQ(f.find("test.scalar.4")->integer(), 4000000000);
    EXPECT_EQ(f.find("test.scalar.5")->integer(), -2000000000);
    EXPECT_EQ(f.find("test.scalar.6")->number(), 0.5);
    EXPECT_EQ(f.find("test.scalar.7")->integer(), 1);
    EXPECT_EQ(f.find("test.scalar.10")->integer(), std::nullopt);  // 2^63 + 5
    EXPECT_EQ(f.find("test.scalar.10")->number(), 9223372036854775813.0);
    EXPECT_EQ(f.find("test.scalar.11")->integer(), -(int64_t{1} << 40));
    EXPECT_EQ(f.find("test.scalar.12")->number(), 0.1);
    const GgufValue& strings = *f.find("test.strings");
    EXPECT_EQ(strings.elementType, GgufValueType::String);
    EXPECT_EQ(strings.strings, (std::vector<std::string>{"a", "", "h\xc3\xa9llo"}));
    EXPECT_EQ(f.find("test.floats")->numberAt(1), -2.0);
    EXPECT_EQ(f.find("test.ints")->integerAt(0), -1);
    EXPECT_EQ(f.find("test.ints")->integerAt(2), 2147483647);
    EXPECT_EQ(f.find("test.ints")->integerAt(3), std::nullopt);
    const GgufValue& nested = *f.find("test.nested");
    ASSERT_EQ(nested.arrays.size(), 3u);
    EXPECT_EQ(nested.arrays[0].integerAt(1), 2);
    EXPECT_EQ(nested.arrays[1].strings, (std::vector<std::string>{"x"}));
    EXPECT_EQ(nested.arrays[2].arrays.at(0).integerAt(0), -3);

    ASSERT_EQ(f.tensors().size(), 2u);
    const FloatTensor a = f.readFloat("a");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 4}));  // ggml dims [4, 2]: 2 rows of 4
    for (int i = 0; i < 8; ++i) EXPECT_EQ(a.data[i], static_cast<float>(i));
    const FloatTensor b = f.readFloat("b");
    EXPECT_EQ(b.data.front(), -1.0f);
    EXPECT_EQ(b.data.back(), 1.0f);
    EXPECT_EQ(f.findTensor("b")->offset % f.alignment(), 0u);

    // Every shorter file is refused, never read past its end.
    const std::string whole = readAll(dir.path("meta_v" + std::to_string(version) + ".gguf"));
    for (std::size_t n = 0; n < whole.size(); ++n)
      EXPECT_THROW(GgufFile::fromBytes(whole.substr(0, n)), Error) << n << " bytes";
  }
}

TEST(GgufFile, DequantizesEveryReadableTypeAsThePublishedLayoutsSay) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  ASSERT_TRUE(runReference("blocks " + dir.path("blocks.gguf")));
  const GgufFile f = GgufFile::open(dir.path("blocks.gguf"));
  int types = 0;
  for (const GgufTensorInfo& info : f.tensors()) {
    if (info.name.rfind("q.", 0) != 0) continue;
    ++types;
    const std::string type = info.name.substr(2);
    SCOPED_TRACE(type);
    EXPECT_EQ(ggmlTypeName(info.type), type);
    const FloatTensor got = f.readFloat(info.name);
    const FloatTensor want = f.readFloat("ref." + type);
    ASSERT_EQ(got.shape, want.shape);
    int mismatches = 0;
    for (std::size_t i = 0; i < got.data.size(); ++i) {
      if (std::memcmp(&got.data[i], &want.data[i], 4) == 0) continue;
      if (++mismatches <= 3)
        ADD_FAILURE() << "value " << i << ": " << got.data[i] << " != " << want.data[i];
    }
    EXPECT_EQ(mismatches, 0);
    // A row range is the same values as the whole tensor's rows.
    const uint64_t cols = info.columns();
    std::vector<float> rows(2 * cols);
    f.readRows(info, 1, 2, rows.data());
    EXPECT_EQ(std::memcmp(rows.data(), want.data.data() + cols, 2 * cols * 4), 0);
    test::expectError([&] { f.readRows(info, 2, 2, rows.data()); }, ErrorKind::InvalidArgument,
                      "outside tensor");
  }
  EXPECT_EQ(types, 15);
  // The test-side writer's quantizers (gguf_reference.py quantize: what the GGUF fixtures and
  // scripts/gguf-from-folder.py write), read back by attnscope: each value within half a step
  // of its 256-value block (a step is the block's largest |x| / 31 for Q6_K's 6 bits, / 15 for
  // Q4_K's 4 bits with a min, / 127 for Q8_0's 32-value blocks, read here per 256) plus the
  // rounding of the 6-bit / 8-bit scales. Measured: Q6_K 0.0160, Q4_K 0.058, Q8_0 0.0040 of the
  // block's largest |x|; a zero block reads as zeros.
  for (const auto& [type, bound] : std::vector<std::pair<std::string, double>>{
           {"Q6_K", 0.018}, {"Q4_K", 0.07}, {"Q8_0", 0.005}}) {
    SCOPED_TRACE("round trip " + type);
    const FloatTensor src = f.readFloat("src." + type), got = f.readFloat("rt." + type);
    ASSERT_EQ(src.shape, got.shape);
    double worst = 0;
    for (std::size_t b = 0; b < src.data.size() / 256; ++b) {
      double amax = 0, err = 0;
      for (std::size_t i = b * 256; i < (b + 1) * 256; ++i) {
        amax = std::max(amax, std::fabs(static_cast<double>(src.data[i])));
        err = std::max(err, std::fabs(static_cast<double>(got.data[i]) - src.data[i]));
      }
      if (amax == 0) {
        EXPECT_EQ(err, 0.0) << "block " << b;
        continue;
      }
      worst = std::max(worst, err / amax);
    }
    std::printf("%s round trip: max |error| %.4f of the block's largest |x|\n", type.c_str(),
                worst);
    EXPECT_GT(worst, 0.0);
    EXPECT_LE(worst, bound);
  }
  test::expectError([&] { f.readFloat("blk.3.attn_q.weight"); }, ErrorKind::Format,
                    "tensor blk.3.attn_q.weight is IQ2_XXS, which attnscope cannot read yet; "
                    "supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, "
                    "Q5_K, Q6_K, IQ4_NL, IQ4_XS");
}

TEST(GgufFile, RefusesWhatIsNotALittleEndianGgufFile) {
  expectRefused("", "not a GGUF file");
  expectRefused("GGML\3\0\0\0", "not a GGUF file");
  expectRefused(std::string("GGUF\0\0\0\3", 8) + std::string(16, '\0'), "big-endian");
  expectRefused(std::string("FUGG\0\0\0\3", 8), "big-endian");
  expectRefused(Bytes().header(4, 0, 0).s, "version 4");
  expectRefused(Bytes().header(0, 0, 0).s, "version 0");
  // An empty file of each version is a valid (vocabulary-less, tensor-less) file.
  for (uint32_t v = 1; v <= 3; ++v) EXPECT_NO_THROW(GgufFile::fromBytes(Bytes().header(v, 0, 0).s));
}

TEST(GgufFile, RefusesCountsTheFileCannotHoldBeforeAllocating) {
  expectRefused(Bytes().header(3, uint64_t{1} << 40, 0).s, "tensors");
  expectRefused(Bytes().header(3, 1000, 0).s, "more than the file's");
  expectRefused(Bytes().header(3, 0, uint64_t{1} << 62).s, "metadata keys");
  // A string or array whose length runs past the end.
  expectRefused(Bytes().header(3, 0, 1).count(uint64_t{1} << 62).s + std::string(64, '\0'),
                "file ends inside");
  expectRefused(Bytes().header(3, 0, 1).str("k").u32(9).u32(6).u64(uint64_t{1} << 60).s,
                "array elements");
  expectRefused(Bytes().header(3, 0, 1).str("k").u32(9).u32(8).u64(uint64_t{1} << 60).s,
                "array elements");
  expectRefused(Bytes().header(3, 0, 1).str("k").u32(13).u32(0).s, "unknown value type 13");
  expectRefused(
      Bytes().header(3, 0, 2).str("k").u32(0).s.append("\1") + Bytes().str("k").u32(0).s + "\1",
      "appears twice");
  Bytes deep;
  deep.header(3, 0, 1).str("k").u32(9);
  for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
  expectRefused(deep.s + std::string(64, '\0'), "nests arrays");
  expectRefused(Bytes().header(3, 0, 1).str("general.alignment").u32(4).u32(48).s, "power of two");
}

// The declared count is refused before one key is read: nothing is allocated for them.
TEST(GgufFile, RefusesAMillionKeysBeforeReadingThem) {
  Bytes b;
  b.header(3, 0, 1000000);
  b.s.reserve(24 * 1000000);
  for (int i = 0; i < 1000000; ++i) b.str("k" + std::to_string(i)).u32(0).s += '\1';
  const auto start = std::chrono::steady_clock::now();
  expectRefused(b.s, "metadata keys");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(GgufFile, RefusesTensorsOutsideOverlappingUnalignedOrOfUnknownType) {
  const auto file = [](std::vector<std::pair<uint32_t, uint64_t>> typeOffsets, std::size_t data,
                       std::vector<uint64_t> dims = {32}) {
    Bytes b;
    b.header(3, typeOffsets.size(), 0);
    int i = 0;
    for (const auto& [type, offset] : typeOffsets)
      b.tensor("t" + std::to_string(i++), dims, type, offset);
    b.pad();
    return b.s + std::string(data, '\0');
  };
  EXPECT_NO_THROW(GgufFile::fromBytes(file({{0, 0}, {0, 128}}, 256)));
  expectRefused(file({{0, 0}, {0, 96}}, 256), "overlaps");
  expectRefused(file({{0, 0}, {0, 136}}, 512), "not a multiple of the alignment");
  expectRefused(file({{0, 0}, {0, 160}}, 256), "runs past the end");
  expectRefused(file({{0, uint64_t{1} << 63}}, 256), "runs past the end");
  expectRefused(file({{99, 0}}, 256), "unknown ggml type 99");
  expectRefused(file({{4, 0}}, 256), "unknown ggml type 4");  // Q4_2, removed from ggml
  expectRefused(file({{12, 0}}, 256), "not a multiple of its block of 256");
  expectRefused(file({{0, 0}}, 256, {32, 0, 1, 1, 1}), "5 dimensions");
  expectRefused(file({{0, 0}}, 256, {uint64_t{1} << 62, uint64_t{1} << 62}), "overflows");
  expectRefused(file({{0, 0}, {0, 0}}, 256).replace(66, 2, "t0"), "appears twice");
}

TEST(GgufFile, RecognisesItsMagicWhateverTheFileIsCalled) {
  test::TempDir dir;
  std::ofstream(dir.path("blob"), std::ios::binary) << Bytes().header(3, 0, 0).s;
  std::ofstream(dir.path("model.gguf"), std::ios::binary) << "not gguf";
  EXPECT_TRUE(GgufFile::hasMagic(dir.path("blob")));
  EXPECT_FALSE(GgufFile::hasMagic(dir.path("model.gguf")));
  EXPECT_FALSE(GgufFile::hasMagic(dir.path("missing")));
  EXPECT_EQ(GgufFile::open(dir.path("blob")).version(), 3u);
  test::expectFormatErrorIn([&] { GgufFile::open(dir.path("model.gguf")); }, "", "not a GGUF file");
}

TEST(GgufVocabularyReader, FillsTheVocabularyFromTokenizerMetadata) {
  const auto floatBits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  Bytes b;
  b.header(3, 0, 7);
  b.str("tokenizer.ggml.model").u32(8).str("llama");
  b.str("tokenizer.ggml.tokens").u32(9).u32(8).count(2).str("<unk>").str("a");
  b.str("tokenizer.ggml.scores").u32(9).u32(6).count(2).u32(floatBits(0.0f)).u32(floatBits(-1.5f));
  b.str("tokenizer.ggml.token_type").u32(9).u32(5).count(2).u32(2).u32(1);
  b.str("tokenizer.ggml.bos_token_id").u32(4).u32(0);
  b.str("tokenizer.ggml.add_bos_token").u32(7).s += '\1';
  b.str("tokenizer.ggml.add_space_prefix").u32(7).s += '\0';
  const GgufVocabulary v = readGgufVocabulary(GgufFile::fromBytes(b.s), "x.gguf");
  EXPECT_EQ(v.model, "llama");
  EXPECT_EQ(v.tokens, (std::vector<std::string>{"<unk>", "a"}));
  EXPECT_EQ(v.scores, (std::vector<float>{0.0f, -1.5f}));
  EXPECT_EQ(v.tokenTypes, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(v.bosId, 0);
  EXPECT_EQ(v.eosId, std::nullopt);
  EXPECT_EQ(v.addBos, true);
  EXPECT_EQ(v.addSpacePrefix, false);
  EXPECT_EQ(v.source, "x.gguf");

  Bytes wrong;
  wrong.header(3, 0, 1).str("tokenizer.ggml.tokens").u32(4).u32(3);
  test::expectError([&] { readGgufVocabulary(GgufFile::fromBytes(wrong.s), "x.gguf"); },
                    ErrorKind::Format, "tokenizer.ggml.tokens must be an array of strings");
}

}  // namespace
}  // namespace attnscope
