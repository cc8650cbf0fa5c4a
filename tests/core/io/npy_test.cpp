// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "attnscope/error.h"
#include "expect_error.h"
#include "python_check.h"
#include "temp_dir.h"

namespace attnscope {
namespace {

std::vector<float> values(const FloatTensor::Storage& data) { return {data.begin(), data.end()}; }

using test::TempDir;

FloatTensor ramp(std::vector<int64_t> shape) {
  FloatTensor t(std::move(shape));
  for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.25f * static_cast<float>(i) - 3.0f;
  return t;
}

// The dict text between the length field and the padding, read back from raw bytes.
std::string headerText(const std::string& bytes) {
  const std::size_t length = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  return bytes.substr(10, length);
}

void expectRoundTrip(const FloatTensor& t) {
  TempDir dir;
  writeNpy(dir.path("t.npy"), t);
  const FloatTensor back = readNpy(dir.path("t.npy"));
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.data, t.data);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.npy"});  // no temporary left behind
}

template <typename F>
void expectFormatError(F&& f, const std::string& word) {
  test::expectError(f, ErrorKind::Format, word);
}

TEST(NpyTest, RoundTripsScalar) {
  FloatTensor t(std::vector<int64_t>{});
  t.data[0] = 3.5f;
  expectRoundTrip(t);
  EXPECT_NE(headerText(npyBytes(t)).find("'shape': ()"), std::string::npos);
}

TEST(NpyTest, RoundTripsVectorWithTrailingComma) {
  expectRoundTrip(ramp({5}));
  EXPECT_NE(headerText(npyBytes(ramp({5}))).find("'shape': (5,)"), std::string::npos);
}

TEST(NpyTest, RoundTripsFiveDimensions) { expectRoundTrip(ramp({2, 1, 3, 2, 4})); }

TEST(NpyTest, RoundTripsEmptyTensor) { expectRoundTrip(ramp({0, 3})); }

TEST(NpyTest, RoundTripsSpecialValues) {
  FloatTensor t({4});
  t.data = {INFINITY, -0.0f, 1e-45f, -3.4e38f};
  expectRoundTrip(t);
}

TEST(NpyTest, HeaderIsVersion1AlignedTo64AndNewlineTerminated) {
  for (std::size_t rank = 0; rank <= 8; ++rank) {
    std::vector<int64_t> shape(rank, 1);
    if (rank) shape[0] = 123456;
    const FloatTensor t = ramp(shape);
    const std::string bytes = npyBytes(t);
    ASSERT_EQ(bytes.compare(0, 6, "\x93NUMPY"), 0);
    EXPECT_EQ(bytes[6], 1);
    EXPECT_EQ(bytes[7], 0);
    const std::size_t preamble = bytes.size() - t.data.size() * 4;
    EXPECT_EQ(preamble % 64, 0u) << "rank " << rank;
    const std::string header = headerText(bytes);
    EXPECT_EQ(10 + header.size(), preamble);
    EXPECT_EQ(header.back(), '\n');
    EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (", 0), 0u) << header;
  }
}

TEST(NpyTest, UsesVersion2OnlyWhenHeaderExceeds65535Bytes) {
  // 30000 unit dimensions make a ~90 KB shape tuple (NumPy itself caps rank, our reader does not).
  FloatTensor t(std::vector<int64_t>(30000, 1));
  t.data[0] = 2.5f;
  const std::string bytes = npyBytes(t);
  EXPECT_EQ(bytes[6], 2);
  const std::size_t length = static_cast<uint8_t>(bytes[8]) |
                             (static_cast<uint8_t>(bytes[9]) << 8) |
                             (static_cast<std::size_t>(static_cast<uint8_t>(bytes[10])) << 16);
  EXPECT_GT(length, 65535u);
  EXPECT_EQ((12 + length) % 64, 0u);
  EXPECT_EQ(bytes.size(), 12 + length + 4);
  expectRoundTrip(t);
}

TEST(NpyTest, StoresLittleEndianFloatBits) {
  FloatTensor t({1});
  t.data[0] = 1.0f;  // 0x3f800000
  const std::string bytes = npyBytes(t);
  EXPECT_EQ(bytes.substr(bytes.size() - 4), std::string("\x00\x00\x80\x3f", 4));
}

TEST(NpyTest, RejectsShapeDataMismatchOnWrite) {
  FloatTensor t({2, 3});
  t.data.pop_back();
  test::expectError([&] { npyBytes(t); }, ErrorKind::InvalidArgument, "5 values");
}

TEST(NpyTest, WriteFailureIsIoErrorNamingPathAndLeavesNoTemporary) {
  TempDir dir;
  std::filesystem::create_directory(dir.path("target"));  // rename over a directory fails
  test::expectError([&] { writeNpy(dir.path("target"), ramp({3})); }, ErrorKind::Io,
                    "cannot write " + dir.path("target") + ": ");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target"});

  test::expectError([&] { writeNpy(dir.path("missing/t.npy"), ramp({3})); }, ErrorKind::Io,
                    "No such file");
}

TEST(NpyTest, WriteReplacesExistingFile) {
  TempDir dir;
  writeNpy(dir.path("t.npy"), ramp({100}));
  writeNpy(dir.path("t.npy"), ramp({2}));
  EXPECT_EQ(readNpy(dir.path("t.npy")).shape, std::vector<int64_t>{2});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"t.npy"});
}

TEST(NpyTest, ReadMissingFileIsIoError) {
  test::expectError([] { readNpy("/nonexistent/attnscope.npy"); }, ErrorKind::Io,
                    "cannot read /nonexistent/attnscope.npy");
}

// Builds a .npy by hand around an arbitrary dict, so each check meets exactly one defect.
std::string npyWithHeader(const std::string& dict, std::size_t dataBytes, char major = 1) {
  std::string header = dict;
  header.append(63 - (10 + header.size()) % 64, ' ');
  header.push_back('\n');
  std::string out = std::string("\x93NUMPY", 6) + major + '\0';
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + std::string(dataBytes, '\0');
}

TEST(NpyTest, ReadsHandWrittenHeaderVariants) {
  TempDir dir;
  dir.writeBytes("a.npy",
                 npyWithHeader("{\"shape\": (2, 2), 'fortran_order': False, 'descr': '<f4'}", 16));
  EXPECT_EQ(readNpy(dir.path("a.npy")).shape, (std::vector<int64_t>{2, 2}));
}

TEST(NpyTest, RejectsMalformedFiles) {
  TempDir dir;
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "magic"},
      {"PK\x03\x04 not numpy at all", "magic"},
      {npyWithHeader(good, 8, 9), "version"},
      {npyWithHeader(good, 8).substr(0, 20), "past the end"},
      {npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16), "<f8"},
      {npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8), ">f4"},
      {npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8), "Fortran"},
      {npyWithHeader(good, 4), "data bytes"},
      {npyWithHeader(good, 12), "data bytes"},
      {npyWithHeader("{'descr': '<f4', 'shape': (2,), }", 8), "fortran_order"},
      {npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8), "shape"},
      {npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8),
       "unexpected key"},
      {npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", 8), "'}'"},
      {npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (4294967296, 4294967296, 4294967296), }",
                     8),
       "too large"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const std::string name = "bad" + std::to_string(i) + ".npy";
    dir.writeBytes(name, cases[i].first);
    expectFormatError([&] { readNpy(dir.path(name)); }, cases[i].second);
  }
}

TEST(NpyTest, NumPyReadsWhatWeWrite) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3, 4}, {2, 1, 3, 2, 4}, {0, 3}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const FloatTensor t = ramp(shapes[i]);
    const std::string path = dir.path("t" + std::to_string(i) + ".npy");
    writeNpy(path, t);
    const auto result =
        test::runPython(dir.path("check.py"),
                        "import sys, numpy as np\n"
                        "a = np.load(sys.argv[1], allow_pickle=False)\n"
                        "assert a.dtype == np.float32 and a.flags['C_CONTIGUOUS']\n"
                        "print(list(a.shape), repr(float(a.astype(np.float64).sum())))\n",
                        path);
    ASSERT_EQ(result.exitCode, 0) << result.output;
    double sum = 0;
    for (float v : t.data) sum += v;
    std::istringstream out(result.output);
    std::string shapeText, sumText;
    std::getline(out, shapeText, ']');
    out >> sumText;
    EXPECT_EQ(shapeText + "]", t.shapeString());
    EXPECT_DOUBLE_EQ(std::stod(sumText), sum);
  }
}

TEST(NpyTest, WeReadWhatNumPyWrites) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  TempDir dir;
  const auto result = test::runPython(
      dir.path("make.py"),
      "import sys, numpy as np\n"
      "np.save(sys.argv[1] + '/a.npy', (np.arange(24, dtype=np.float32) * 0.5).reshape(2, 3, 4))\n"
      "np.save(sys.argv[1] + '/s.npy', np.float32(7.25))\n"
      "np.save(sys.argv[1] + '/v.npy', np.array([1, 2, 3], dtype=np.float32))\n"
      "np.save(sys.argv[1] + '/f.npy', np.asfortranarray(np.ones((2, 3), dtype=np.float32)))\n"
      "np.save(sys.argv[1] + '/d.npy', np.ones(3))\n",
      dir.path(""));
  ASSERT_EQ(result.exitCode, 0) << result.output;
  const FloatTensor a = readNpy(dir.path("a.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4}));
  for (std::size_t i = 0; i < a.data.size(); ++i) EXPECT_EQ(a.data[i], 0.5f * i);
  EXPECT_EQ(values(readNpy(dir.path("s.npy")).data), std::vector<float>{7.25f});
  EXPECT_EQ(values(readNpy(dir.path("v.npy")).data), (std::vector<float>{1, 2, 3}));
  expectFormatError([&] { readNpy(dir.path("f.npy")); }, "Fortran");
  expectFormatError([&] { readNpy(dir.path("d.npy")); }, "<f8");
}

}  // namespace
}  // namespace attnscope
