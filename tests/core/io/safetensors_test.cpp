// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/safetensors.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "attnscope/error.h"
#include "expect_error.h"
#include "python_check.h"
#include "temp_dir.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target
// that define the same helper names.
namespace safetensors_test {

std::vector<float> values(const FloatTensor::Storage& data) { return {data.begin(), data.end()}; }

using test::TempDir;

std::string u64le(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out;
}

// A file assembled by hand from header text and data, independent of our writer.
std::string stFile(const std::string& header, const std::string& data = "") {
  return u64le(header.size()) + header + data;
}

template <typename T>
std::string bytesOf(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

void expectFormat(const std::string& bytes, const std::string& word) {
  test::expectError([&] { SafetensorsFile::fromBytes(bytes); }, ErrorKind::Format, word);
}

FloatTensor ramp(std::vector<int64_t> shape, float scale) {
  FloatTensor t(std::move(shape));
  for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = scale * static_cast<float>(i) - 1.0f;
  return t;
}

std::vector<NamedTensor> sampleTensors() {
  return {{"layers.0.attn.weight", ramp({2, 3}, 0.5f)},
          {"bias", ramp({5}, -0.25f)},
          {"scalar", ramp({}, 2.0f)},
          {"empty", ramp({0, 4}, 1.0f)},
          {"z.last", ramp({3, 1, 2}, 1e-3f)}};
}

const std::map<std::string, std::string> kMetadata = {{"format", "pt"},
                                                      {"note", "h\xc3\xa9llo \"quoted\""}};

TEST(SafetensorsTest, DTypeNamesAndSizesFollowTheSpec) {
  EXPECT_STREQ(toString(DType::BF16), "BF16");
  EXPECT_STREQ(toString(DType::BOOL), "BOOL");
  EXPECT_EQ(byteSize(DType::F64), 8u);
  EXPECT_EQ(byteSize(DType::F16), 2u);
  EXPECT_EQ(byteSize(DType::U8), 1u);
}

TEST(SafetensorsTest, RoundTripsTensorsAndMetadataThroughAFile) {
  TempDir dir;
  const auto tensors = sampleTensors();
  writeSafetensors(dir.path("m.safetensors"), tensors, kMetadata);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});

  const SafetensorsFile file = SafetensorsFile::open(dir.path("m.safetensors"));
  EXPECT_EQ(file.metadata(), kMetadata);
  ASSERT_EQ(file.tensors().size(), tensors.size());
  uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& info = file.tensors()[i];
    EXPECT_EQ(info.name, tensors[i].name);  // offsets follow the given order
    EXPECT_EQ(info.dtype, DType::F32);
    EXPECT_EQ(info.begin, offset);
    offset += tensors[i].tensor.data.size() * 4;
    EXPECT_EQ(info.end, offset);
    const FloatTensor back = file.readFloat(tensors[i].name);
    EXPECT_EQ(back.shape, tensors[i].tensor.shape);
    EXPECT_EQ(back.data, tensors[i].tensor.data);
    ASSERT_EQ(file.find(tensors[i].name), &info);
  }
  EXPECT_EQ(file.find("nope"), nullptr);
}

TEST(SafetensorsTest, WriterLayoutFollowsTheSpec) {
  const std::string bytes = safetensorsBytes(sampleTensors(), kMetadata);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));  // padded only with spaces
  EXPECT_NE(header.find("\"__metadata__\":{\"format\":\"pt\""), std::string::npos) << header;
  EXPECT_NE(header.find("\"bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[24,44]}"),
            std::string::npos)
      << header;
  EXPECT_EQ(bytes.size(), 8 + n + (6 + 5 + 1 + 0 + 6) * 4);

  const std::string noMeta = safetensorsBytes(sampleTensors());
  EXPECT_EQ(noMeta.find("__metadata__"), std::string::npos);
  EXPECT_TRUE(SafetensorsFile::fromBytes(noMeta).metadata().empty());
}

TEST(SafetensorsTest, EmptyFileAndMetadataOnlyAreValid) {
  EXPECT_TRUE(SafetensorsFile::fromBytes(safetensorsBytes({})).tensors().empty());
  EXPECT_EQ(SafetensorsFile::fromBytes(stFile("{}")).tensors().size(), 0u);
  EXPECT_EQ(SafetensorsFile::fromBytes(stFile("{\"__metadata__\":{\"a\":\"b\"}}   ")).metadata(),
            (std::map<std::string, std::string>{{"a", "b"}}));
}

TEST(SafetensorsTest, LargeFileIsMappedAndReadBack) {
  TempDir dir;
  // 8 MB: above the mmap threshold.
  const std::vector<NamedTensor> tensors = {{"big", ramp({2048, 1024}, 1e-4f)},
                                            {"small", ramp({3}, 1.0f)}};
  writeSafetensors(dir.path("big.safetensors"), tensors);
  SafetensorsFile file = SafetensorsFile::open(dir.path("big.safetensors"));
  EXPECT_EQ(file.readFloat("big").data, tensors[0].tensor.data);
  EXPECT_EQ(file.readFloat("small").data, tensors[1].tensor.data);
  SafetensorsFile moved = std::move(file);
  EXPECT_EQ(moved.readFloat("small").data, tensors[1].tensor.data);
}

std::vector<float> decode(const char* dtype, const std::vector<uint16_t>& bits) {
  const std::string header = std::string("{\"t\":{\"dtype\":\"") + dtype + "\",\"shape\":[" +
                             std::to_string(bits.size()) + "],\"data_offsets\":[0," +
                             std::to_string(bits.size() * 2) + "]}}";
  return values(SafetensorsFile::fromBytes(stFile(header, bytesOf(bits))).readFloat("t").data);
}

TEST(SafetensorsTest, DecodesHalfPrecisionBitPatterns) {
  const auto v = decode("F16", {0x3C00, 0xC000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8001, 0x03FF,
                                0x0400, 0x7BFF, 0x8000, 0x3555, 0x0000});
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[3], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_EQ(v[5], std::ldexp(1.0f, -24));  // smallest subnormal, 5.96e-8
  EXPECT_FLOAT_EQ(v[5], 5.9604645e-8f);
  EXPECT_EQ(v[6], -std::ldexp(1.0f, -24));
  EXPECT_EQ(v[7], std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(v[8], std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(v[9], 65504.0f);
  EXPECT_EQ(v[10], 0.0f);
  EXPECT_TRUE(std::signbit(v[10]));
  EXPECT_EQ(v[11], 0.333251953125f);
  EXPECT_FALSE(std::signbit(v[12]));
}

TEST(SafetensorsTest, DecodesBFloat16BitPatterns) {
  const auto v = decode("BF16", {0x3F80, 0xC000, 0x7F80, 0xFF80, 0x7FC0, 0x4049, 0x0001, 0x8000});
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[3], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_EQ(v[5], 3.140625f);
  EXPECT_EQ(v[6], std::ldexp(1.0f, -133));  // float subnormal
  EXPECT_TRUE(std::signbit(v[7]));
}

TEST(SafetensorsTest, DecodesDoubleAndUnalignedOffsets) {
  // An F16 of 1 element first puts the F64 at offset 2: not 8-byte aligned.
  const std::vector<double> doubles = {1.5, -0.1, 1e-50};
  const std::string header =
      "{\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]},"
      "\"d\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[2,26]}}";
  const auto file = SafetensorsFile::fromBytes(
      stFile(header, bytesOf(std::vector<uint16_t>{0x3C00}) + bytesOf(doubles)));
  const auto v = values(file.readFloat("d").data);
  EXPECT_EQ(v, (std::vector<float>{1.5f, static_cast<float>(-0.1), 0.0f}));
  EXPECT_EQ(values(file.readFloat("h").data), std::vector<float>{1.0f});
}

TEST(SafetensorsTest, RawDataAndNonFloatDTypes) {
  const std::vector<int32_t> ints = {7, -8, 9};
  const auto file = SafetensorsFile::fromBytes(
      stFile("{\"i\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[0,12]}}", bytesOf(ints)));
  const TensorInfo* info = file.find("i");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, DType::I32);
  EXPECT_EQ(std::memcmp(file.rawData(*info), ints.data(), 12), 0);
  test::expectError([&] { file.readFloat("i"); }, ErrorKind::Format, "not a floating-point");
  test::expectError([&] { file.readFloat("nope"); }, ErrorKind::Format,
                    "safetensors: missing tensor 'nope'");
}

TEST(SafetensorsTest, RejectsTruncatedAndOversizedHeaders) {
  expectFormat("", "too short");
  expectFormat(std::string(7, '\0'), "too short");
  const auto start = std::chrono::steady_clock::now();
  expectFormat(u64le(uint64_t{1} << 63) + "{}", "exceeds the 100 MB limit");
  expectFormat(u64le(1000000000000ULL) + "{}", "exceeds");
  expectFormat(u64le(~uint64_t{0}), "exceeds");
  expectFormat(u64le(100000001) + "{}", "exceeds");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  expectFormat(u64le(100) + std::string(12, ' '), "runs past the end of the file (20 bytes)");
  expectFormat(u64le(3) + "{}", "past the end");
  // Truncating a valid file anywhere inside must be caught.
  const std::string good = safetensorsBytes(sampleTensors(), kMetadata);
  for (std::size_t cut = 0; cut < good.size(); cut += 7) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    EXPECT_THROW(SafetensorsFile::fromBytes(good.substr(0, cut)), Error);
  }
}

TEST(SafetensorsTest, RejectsBadTextAndJson) {
  expectFormat(stFile("{\"\xff\":{}}"), "UTF-8");
  expectFormat(stFile("{\"\xc0\xaf\":{}}"), "UTF-8");          // overlong '/'
  expectFormat(stFile("{\"\xed\xa0\x80\":{}}"), "UTF-8");      // surrogate
  expectFormat(stFile("{\"\xf4\x90\x80\x80\":{}}"), "UTF-8");  // above U+10FFFF
  expectFormat(stFile("{\"\xe2\x82\":{}}"), "UTF-8");          // cut short
  expectFormat(stFile("{\"a\":"), "invalid JSON");
  expectFormat(stFile("{} {}"), "invalid JSON");
  expectFormat(stFile("[1, 2]"), "JSON object");
  expectFormat(stFile("\"text\""), "JSON object");
  expectFormat(stFile("\xef\xbb\xbf{}"), "JSON object");  // byte-order mark
  expectFormat(stFile(""), "JSON object");
  expectFormat(stFile("{\"a\":{\"dtype\":{\"x\":[[1]]}}}"), "nested too deeply");
}

TEST(SafetensorsTest, RejectsBadTensorEntries) {
  const auto entry = [](const std::string& dtype, const std::string& shape,
                        const std::string& offsets) {
    return "{\"a\":{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets +
           "}}";
  };
  const std::string d8(8, '\0');
  expectFormat(stFile(entry("\"F8\"", "[2]", "[0,8]"), d8), "unknown dtype 'F8'");
  expectFormat(stFile(entry("\"f32\"", "[2]", "[0,8]"), d8), "unknown dtype");
  expectFormat(stFile(entry("32", "[2]", "[0,8]"), d8), "dtype that is not a string");
  expectFormat(stFile(entry("\"F32\"", "[-2]", "[0,8]"), d8), "non-negative integers");
  expectFormat(stFile(entry("\"F32\"", "[2.0]", "[0,8]"), d8), "non-negative integers");
  expectFormat(stFile(entry("\"F32\"", "[\"2\"]", "[0,8]"), d8), "non-negative integers");
  expectFormat(stFile(entry("\"F32\"", "[1e30]", "[0,8]"), d8), "non-negative integers");
  expectFormat(stFile(entry("\"F32\"", "2", "[0,8]"), d8), "not an array");
  expectFormat(stFile(entry("\"F32\"", "[4294967296,4294967296]", "[0,8]"), d8), "overflows");
  expectFormat(stFile(entry("\"F32\"", "[4611686018427387904]", "[0,8]"), d8), "overflows");
  expectFormat(stFile(entry("\"F32\"", "[2,3]", "[0,20]"), std::string(20, '\0')),
               "safetensors: tensor 'a' has shape [2, 3] (F32, 24 bytes) but data_offsets span "
               "20 bytes");
  expectFormat(stFile(entry("\"F32\"", "[2]", "[0,100]"), d8), "out of range");
  expectFormat(stFile(entry("\"F32\"", "[2]", "[8,0]"), d8), "reversed");
  expectFormat(stFile(entry("\"F32\"", "[2]", "[0,8,8]"), d8), "data_offsets");
  expectFormat(stFile(entry("\"F32\"", "[2]", "[-1,8]"), d8), "data_offsets");
  expectFormat(stFile(entry("\"F32\"", "[2]", "{}"), d8), "data_offsets");
  expectFormat(stFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", d8), "needs");
  expectFormat(stFile("{\"a\":[]}"), "must be an object");
  expectFormat(stFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],\"x\":1}}",
                      std::string(4, '\0')),
               "unexpected field 'x'");
  // A zero dimension makes the product empty even when the others would overflow.
  EXPECT_NO_THROW(SafetensorsFile::fromBytes(
      stFile(entry("\"F32\"", "[4611686018427387904,4611686018427387904,0]", "[0,0]"))));
}

TEST(SafetensorsTest, RejectsBadLayouts) {
  const auto two = [](const std::string& a, const std::string& b) {
    return "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + a +
           "},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + b + "}}";
  };
  expectFormat(stFile(two("[0,8]", "[4,12]"), std::string(12, '\0')),
               "tensor 'b' (data_offsets [4, 12]) overlaps tensor 'a'");
  expectFormat(stFile(two("[0,8]", "[0,8]"), std::string(16, '\0')), "overlaps");
  expectFormat(stFile(two("[0,8]", "[12,20]"), std::string(20, '\0')),
               "gap of 4 bytes before tensor 'b'");
  expectFormat(stFile(two("[8,16]", "[16,24]"), std::string(24, '\0')), "gap of 8 bytes");
  expectFormat(stFile(two("[0,8]", "[8,16]"), std::string(20, '\0')), "4 trailing bytes");
  expectFormat(stFile("{}", "x"), "trailing");
  // Written out of order in the header but tiling exactly is fine; tensors() is in offset order.
  const auto file =
      SafetensorsFile::fromBytes(stFile(two("[8,16]", "[0,8]"), std::string(16, '\0')));
  EXPECT_EQ(file.tensors()[0].name, "b");
  // An empty tensor inside another tensor's span overlaps it.
  expectFormat(stFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
                      std::string(8, '\0')),
               "overlaps");
}

TEST(SafetensorsTest, RejectsDuplicateKeysAndBadMetadata) {
  const std::string a = "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}";
  const std::string d4(4, '\0');
  expectFormat(stFile("{\"a\":" + a + ",\"a\":" + a + "}", d4), "duplicate key 'a'");
  expectFormat(stFile("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],"
                      "\"data_offsets\":[0,4]}}",
                      d4),
               "duplicate key 'dtype'");
  expectFormat(stFile("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"), "duplicate key 'k'");
  expectFormat(stFile("{\"__metadata__\":{\"k\":1}}"), "__metadata__ value for 'k'");
  expectFormat(stFile("{\"__metadata__\":{\"k\":null}}"), "__metadata__");
  expectFormat(stFile("{\"__metadata__\":[\"k\"]}"), "__metadata__ must be an object");
  expectFormat(stFile("{\"__metadata__\":\"k\"}"), "__metadata__ must be an object");
}

TEST(SafetensorsTest, OpenReportsIoAndFormatErrorsWithThePath) {
  TempDir dir;
  test::expectError([&] { SafetensorsFile::open(dir.path("missing.safetensors")); }, ErrorKind::Io,
                    "cannot read " + dir.path("missing.safetensors"));
  test::expectError([&] { SafetensorsFile::open(dir.path("")); }, ErrorKind::Io, "cannot read");
  dir.writeBytes("bad.safetensors", "short");
  test::expectError([&] { SafetensorsFile::open(dir.path("bad.safetensors")); }, ErrorKind::Format,
                    dir.path("bad.safetensors"));
}

TEST(SafetensorsTest, WriterRejectsInconsistentInputAndFailsAtomically) {
  FloatTensor bad({2, 2});
  bad.data.pop_back();
  test::expectError(
      [&] {
        safetensorsBytes({{"x", bad}});
      },
      ErrorKind::InvalidArgument, "tensor 'x' has shape [2, 2] but 3 values");
  test::expectError(
      [&] {
        safetensorsBytes({{"x", ramp({1}, 1)}, {"x", ramp({1}, 1)}});
      },
      ErrorKind::InvalidArgument, "twice");
  test::expectError(
      [&] {
        safetensorsBytes({{"__metadata__", ramp({1}, 1)}});
      },
      ErrorKind::InvalidArgument, "reserved");
  test::expectError(
      [&] {
        safetensorsBytes({{"\xff", ramp({1}, 1)}});
      },
      ErrorKind::InvalidArgument, "UTF-8");

  TempDir dir;
  std::filesystem::create_directory(dir.path("target"));
  test::expectError([&] { writeSafetensors(dir.path("target"), sampleTensors()); }, ErrorKind::Io,
                    "cannot write " + dir.path("target"));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target"});
}

// The reader a Python user would write from the spec: json + struct + numpy.
const char* kPythonReader = R"PY(
import json, struct, sys
import numpy as np
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
assert (8 + n) % 8 == 0
h = json.loads(b[8:8 + n].decode('utf-8'))
data = b[8 + n:]
meta = h.pop('__metadata__', {})
spans = sorted(tuple(v['data_offsets']) for v in h.values())
pos = 0
for s, e in spans:
    assert s == pos, (s, pos)
    pos = e
assert pos == len(data)
for k in sorted(h):
    v = h[k]
    assert v['dtype'] == 'F32'
    s, e = v['data_offsets']
    a = np.frombuffer(data[s:e], dtype='<f4').reshape(v['shape'])
    print('tensor', k, list(a.shape), repr(float(a.astype(np.float64).sum())))
print('meta', json.dumps(meta, sort_keys=True, ensure_ascii=False))
)PY";

TEST(SafetensorsTest, SpecReaderInPythonReadsWhatWeWrite) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("torch");
  TempDir dir;
  auto tensors = sampleTensors();
  std::sort(tensors.begin(), tensors.end(),
            [](const NamedTensor& a, const NamedTensor& b) { return a.name < b.name; });
  writeSafetensors(dir.path("m.safetensors"), tensors, kMetadata);
  const auto result =
      test::runPython(dir.path("read.py"), kPythonReader, dir.path("m.safetensors"));
  ASSERT_EQ(result.exitCode, 0) << result.output;

  std::istringstream out(result.output);
  for (const NamedTensor& nt : tensors) {
    std::string word, name, shape, sum;
    out >> word >> name;
    std::getline(out, shape, ']');
    out >> sum;
    EXPECT_EQ(word, "tensor");
    EXPECT_EQ(name, nt.name);
    EXPECT_EQ(shape.substr(1) + "]", nt.tensor.shapeString());
    double expected = 0;
    for (float v : nt.tensor.data) expected += v;
    EXPECT_DOUBLE_EQ(std::stod(sum), expected) << nt.name;
  }
  std::string rest;
  std::getline(out >> std::ws, rest);
  EXPECT_EQ(rest, "meta {\"format\": \"pt\", \"note\": \"h\xc3\xa9llo \\\"quoted\\\"\"}");
}

// Torch makes the values (including F16/BF16 rounding and subnormals), the bytes are laid out by
// hand per the spec, and the expected float32 values come back as hex bit patterns.
const char* kPythonWriter = R"PY(
import json, struct, sys
import torch
torch.manual_seed(0)
special = torch.tensor([1.0, -2.0, float('inf'), -float('inf'), 6e-8, -3e-6, 65504.0, 0.0, -0.0,
                        1e-40, 3.3e38])
tensors = [
    ('f32', torch.randn(3, 4)),
    ('f16', torch.cat([torch.randn(7), special]).to(torch.float16)),
    ('bf16', (torch.randn(2, 5) * 1000).to(torch.bfloat16)),
    ('special_bf16', special.to(torch.bfloat16)),
    ('f64', torch.randn(3, dtype=torch.float64)),
    ('odd_f16', torch.randn(1).to(torch.float16)),
    ('scalar', torch.tensor(2.5)),
    ('empty', torch.zeros(0, 3)),
]
names = {torch.float32: 'F32', torch.float16: 'F16', torch.bfloat16: 'BF16', torch.float64: 'F64'}
ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}
header, data = {'__metadata__': {'source': 'torch'}}, b''
for name, t in tensors:
    raw = t.contiguous().view(ints[t.element_size()]).numpy().tobytes()
    header[name] = {'dtype': names[t.dtype], 'shape': list(t.shape),
                    'data_offsets': [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(header).encode('utf-8')
h += b' ' * ((8 - len(h) % 8) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + data)
for name, t in tensors:
    bits = t.float().flatten().numpy().view('<u4')
    print(name, ','.join(str(d) for d in t.shape) or '-', ' '.join('%08x' % b for b in bits))
)PY";

TEST(SafetensorsTest, WeReadWhatASpecWriterInPythonWrites) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("torch");
  TempDir dir;
  const auto result =
      test::runPython(dir.path("write.py"), kPythonWriter, dir.path("t.safetensors"));
  ASSERT_EQ(result.exitCode, 0) << result.output;
  const SafetensorsFile file = SafetensorsFile::open(dir.path("t.safetensors"));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"source", "torch"}}));

  std::istringstream out(result.output);
  std::string line;
  int checked = 0;
  while (std::getline(out, line)) {
    std::istringstream fields(line);
    std::string name, dims, hex;
    fields >> name >> dims;
    SCOPED_TRACE(name);
    std::vector<int64_t> shape;
    if (dims != "-") {
      std::istringstream d(dims);
      for (std::string part; std::getline(d, part, ',');) shape.push_back(std::stoll(part));
    }
    std::vector<uint32_t> expected;
    while (fields >> hex) expected.push_back(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)));

    const FloatTensor t = file.readFloat(name);
    EXPECT_EQ(t.shape, shape);
    ASSERT_EQ(t.data.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &t.data[i], 4);
      EXPECT_EQ(bits, expected[i]) << "element " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

}  // namespace safetensors_test
}  // namespace attnscope
