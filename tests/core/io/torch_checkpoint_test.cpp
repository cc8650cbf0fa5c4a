// SPDX-License-Identifier: GPL-3.0-or-later
// readTorchCheckpoint: real torch.save files (made by tests/reference/make_bin_fixtures.py with
// the system PyTorch) read back bit-exactly, code-running pickles refused without running, and
// hand-made hostile archives (LibTorch's own zip writer) rejected with Error, never a crash.
#include "io/torch_checkpoint.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "attnscope/error.h"
#include "expect_error.h"
#include "python_check.h"
#include "temp_dir.h"

namespace attnscope {
namespace {

using test::expectError;
using test::TempDir;

#ifndef ATTNSCOPE_TEST_DATA
#error "ATTNSCOPE_TEST_DATA must name tests/data"
#endif
const std::string kScript = std::string(ATTNSCOPE_TEST_DATA) + "/../reference/make_bin_fixtures.py";

const std::string kRefusal = "which is not a tensor or a container (attnscope never runs code";

class TorchFixtures : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::pythonHasModule("torch")) return;
    s_dir = std::make_unique<TempDir>();
    const std::string cmd = std::string(test::kPython) + " " + kScript + " " + s_dir->path("") +
                            " >" + s_dir->path("log.txt") + " 2>&1";
    s_ok = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() { s_dir.reset(); }
  void SetUp() override {
    if (!s_dir) ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("torch");
    ASSERT_TRUE(s_ok) << s_dir->readBytes("log.txt");
  }
  static std::string fx(const std::string& name) { return s_dir->path(name); }

  static inline std::unique_ptr<TempDir> s_dir;
  static inline bool s_ok = false;
};

TEST_F(TorchFixtures, StateDictReadsBackBitExactly) {
  const auto tensors = readTorchCheckpoint(fx("state.bin"));
  std::ifstream expected(fx("expected.txt"));
  std::string line;
  size_t i = 0;
  while (std::getline(expected, line)) {
    std::istringstream in(line);
    std::string name, dtype;
    in >> name >> dtype;
    std::vector<int64_t> shape;
    for (int64_t d; in >> d;) shape.push_back(d);
    ASSERT_LT(i, tensors.size());
    const auto& t = tensors[i++];
    SCOPED_TRACE(name);
    EXPECT_EQ(t.name, name);
    EXPECT_EQ(std::string(toString(t.dtype)), dtype);
    EXPECT_EQ(t.shape, shape);
    const std::string raw = s_dir->readBytes(name + ".raw");
    ASSERT_EQ(t.bytes.size(), raw.size());
    EXPECT_EQ(std::string(t.bytes.begin(), t.bytes.end()), raw);
  }
  EXPECT_EQ(i, tensors.size());
  EXPECT_EQ(i, 15u);
}

TEST_F(TorchFixtures, WrappedStateDictIsUnwrappedAndFlattened) {
  const auto tensors = readTorchCheckpoint(fx("wrapped.bin"));
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].name, "enc.a");
  EXPECT_EQ(tensors[1].name, "enc.b.c");
  EXPECT_EQ(tensors[1].shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(tensors[2].name, "w");
  float w[3];
  ASSERT_EQ(tensors[2].bytes.size(), sizeof w);
  std::memcpy(w, tensors[2].bytes.data(), sizeof w);
  EXPECT_EQ(w[0], 2.0f);
  EXPECT_EQ(w[2], 2.0f);
}

TEST_F(TorchFixtures, OsSystemIsRefusedAndNotRun) {
  expectError([] { readTorchCheckpoint(fx("evil_system.bin")); }, ErrorKind::Format,
              "refused: the pickle asks for posix.system, " + kRefusal);
  EXPECT_FALSE(std::filesystem::exists(fx("marker")));
  // The fixture is really hostile: Python's own unpickler runs it.
  const std::string cmd = std::string(test::kPython) + " -c \"import torch; torch.load('" +
                          fx("evil_system.bin") + "')\" >/dev/null 2>&1";
  std::system(cmd.c_str());
  EXPECT_TRUE(std::filesystem::exists(fx("marker")));
  std::filesystem::remove(fx("marker"));
}

TEST_F(TorchFixtures, EvalAndGetattrAreRefused) {
  expectError([] { readTorchCheckpoint(fx("evil_eval.bin")); }, ErrorKind::Format,
              "refused: the pickle asks for __builtin__.eval, " + kRefusal);
  expectError([] { readTorchCheckpoint(fx("evil_getattr.bin")); }, ErrorKind::Format,
              "refused: the pickle asks for __builtin__.getattr, " + kRefusal);
  EXPECT_FALSE(std::filesystem::exists(fx("marker")));
}

TEST_F(TorchFixtures, LegacyFormatIsRefusedClearly) {
  expectError([] { readTorchCheckpoint(fx("legacy.bin")); }, ErrorKind::Format,
              "legacy format, re-save with torch.save's default");
}

// Truncations and byte flips of a real file: an Error or (for harmless flips) a result, never a
// crash or another exception type.
TEST_F(TorchFixtures, TruncatedAndCorruptedFilesGiveErrors) {
  const std::string good = s_dir->readBytes("state.bin");
  TempDir tmp;
  const std::string bad = tmp.path("bad.bin");
  for (size_t len = 0; len < good.size(); len += 97) {
    tmp.writeBytes("bad.bin", good.substr(0, len));
    EXPECT_THROW(readTorchCheckpoint(bad), Error) << "truncated to " << len;
  }
  std::mt19937 rng(7);
  for (int round = 0; round < 400; ++round) {
    std::string b = good;
    for (int k = 0; k < 4; ++k) b[rng() % b.size()] = char(rng());
    tmp.writeBytes("bad.bin", b);
    try {
      readTorchCheckpoint(bad);
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << round << ": " << e.what();
    }
  }
}

// ---- hand-made archives, no Python needed ----------------------------------------------------

std::string str(const std::string& s) {  // BINUNICODE
  const uint32_t n = uint32_t(s.size());
  std::string out = "X";
  for (int k = 0; k < 4; ++k) out += char((n >> (8 * k)) & 0xff);
  return out + s;
}
std::string i1(int v) { return std::string("K") + char(v); }
const std::string kHead = "\x80\x02";

// {name: tensor over storage "0" of `numel` floats, offset, size (n,), stride (1,)}
std::string tensorPickle(int numel, int offset, int n) {
  return kHead + "}(" + str("w") + "ctorch._utils\n_rebuild_tensor_v2\n((" + str("storage") +
         "ctorch\nFloatStorage\n" + str("0") + str("cpu") + i1(numel) + "tQ" + i1(offset) + i1(n) +
         "\x85" + i1(1) + "\x85" + "\x89" + "ccollections\nOrderedDict\n)RtRu.";
}

void writeArchive(const std::string& path, const std::string& pkl,
                  const std::vector<std::pair<std::string, std::string>>& records = {}) {
  caffe2::serialize::PyTorchStreamWriter w(path);
  w.writeRecord("data.pkl", pkl.data(), pkl.size());
  for (const auto& [name, bytes] : records) w.writeRecord(name, bytes.data(), bytes.size());
  w.writeEndOfFile();
}

TEST(TorchCheckpoint, HandMadeTensorReads) {
  TempDir dir;
  const std::string floats("\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40", 12);  // 1 2 3
  writeArchive(dir.path("a.bin"), tensorPickle(3, 1, 2), {{"data/0", floats}});
  const auto t = readTorchCheckpoint(dir.path("a.bin"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "w");
  EXPECT_EQ(t[0].dtype, DType::F32);
  EXPECT_EQ(t[0].shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(std::string(t[0].bytes.begin(), t[0].bytes.end()), floats.substr(4));
}

TEST(TorchCheckpoint, ViewOutsideItsStorageIsRefused) {
  TempDir dir;
  writeArchive(dir.path("a.bin"), tensorPickle(3, 2, 2), {{"data/0", std::string(12, '\0')}});
  expectError([&] { readTorchCheckpoint(dir.path("a.bin")); }, ErrorKind::Format, "out of bounds");
  // the storage claims more elements than its record holds
  writeArchive(dir.path("b.bin"), tensorPickle(9, 0, 2), {{"data/0", std::string(12, '\0')}});
  expectError([&] { readTorchCheckpoint(dir.path("b.bin")); }, ErrorKind::Format, "fewer than");
  // no record at all
  writeArchive(dir.path("c.bin"), tensorPickle(3, 0, 2));
  expectError([&] { readTorchCheckpoint(dir.path("c.bin")); }, ErrorKind::Format, "no data/0");
}

TEST(TorchCheckpoint, HostilePicklesAreRejected) {
  TempDir dir;
  const std::string p = dir.path("h.bin");
  auto check = [&](const std::string& pkl, const std::string& word) {
    writeArchive(p, pkl);
    expectError([&] { readTorchCheckpoint(p); }, ErrorKind::Format, word);
  };
  check(kHead + "X\xf0\xff\xff\xff" + "abc", "truncated data.pkl");  // huge string length
  check(kHead + "\x8d\xff\xff\xff\xff\xff\xff\xff\x7f", "truncated data.pkl");
  check(kHead + "(ibuiltins\nexec\n.", "refused: unsupported pickle opcode 0x69");  // INST
  check(kHead + "cbuiltins\nexec\n.", "refused: the pickle asks for builtins.exec");
  check(kHead + "ctorch._utils\n_load_from_bytes\n.", "torch._utils._load_from_bytes");
  check(kHead + "ctorch.storage\n_load_from_bytes\n.", "torch.storage._load_from_bytes");
  check(kHead + "ctorch\nFloatStorage\n)R.", "refused: calling torch.FloatStorage");
  check(kHead + std::string("}q\0", 3) + str("a") +
            "]q\x01h\x01"
            "as.",
        "a is a list");  // self-cycle
  check(kHead + "}" + str("a") + ")" + std::string(200000, '\x85') + "s.", "a is a tuple");
  check(kHead + std::string(100000, '}') + ".", "malformed pickle (STOP)");
  check(kHead + "h\x05.", "memo key 5");
  check(kHead + "s.", "stack underflow");
  check(kHead + "]}b.", "refused: BUILD on a list");
  check(kHead + "(" + str("storage") + "cbuiltins\nint\n" + "tQ.", "builtins.int");
  check(kHead + "}" + str("w") + i1(3) + "s.", "w is a int");
  check(kHead + "].", "top level is a list");
}

// Issue 34: work and memory follow the file's real size, whatever its memo refers to.
TEST(TorchCheckpoint, MemoDagOfDictsIsRefusedNotWalked) {
  TempDir dir;
  // {"state_dict": D0}, D_i = {"a": D_i+1, "b": D_i+1} (the second a memo reference), D_40 = {}:
  // 2^40 paths in 40 levels of a 1.6 kB pickle.
  std::string dicts = "}";
  for (int i = 39; i >= 0; --i)
    dicts = "}(" + str("a") + dicts + "q" + char(i + 1) + str("b") + "h" + char(i + 1) + "u";
  const std::string pkl = kHead + "}" + str("state_dict") + dicts + "s" + str("x") + i1(1) + "s.";
  writeArchive(dir.path("dag.bin"), pkl);
  expectError([&] { readTorchCheckpoint(dir.path("dag.bin")); }, ErrorKind::Format,
              "is a dict that appears twice");
}

TEST(TorchCheckpoint, PickleBookkeepingIsBoundedByTheFileSize) {
  TempDir dir;
  // A megabyte of EMPTY_LIST opcodes: ~200 bytes of values and stack per byte unbounded.
  writeArchive(dir.path("lists.bin"), kHead + std::string(1 << 20, ']') + ".");
  expectError([&] { readTorchCheckpoint(dir.path("lists.bin")); }, ErrorKind::Format,
              "MiB to read, far more than a state dict");
  // One key of a megabyte named under ten entries (empty dicts) of a wrapped dict: 10 MB of names.
  std::string inner = "}(";
  for (int k = 0; k < 10; ++k) inner += str(std::string(1, char('a' + k))) + "}";
  const std::string big = str(std::string(1 << 20, 'k'));
  writeArchive(dir.path("names.bin"), kHead + "}" + str("state_dict") + "}" + big + inner + "uss.");
  expectError([&] { readTorchCheckpoint(dir.path("names.bin")); }, ErrorKind::Format,
              "names add up to more than the file holds");
  // A size tuple of 65 items is refused before it is read.
  std::string shape = "(";
  for (int k = 0; k < 65; ++k) shape += i1(1);
  std::string pkl = kHead + "}(" + str("w") + "ctorch._utils\n_rebuild_tensor_v2\n((" +
                    str("storage") + "ctorch\nFloatStorage\n" + str("0") + str("cpu") + i1(1) +
                    "tQ" + i1(0) + shape + "t" + shape + "t" + "\x89" +
                    "ccollections\nOrderedDict\n)RtRu.";
  writeArchive(dir.path("rank.bin"), pkl, {{"data/0", std::string(4, '\0')}});
  expectError([&] { readTorchCheckpoint(dir.path("rank.bin")); }, ErrorKind::Format,
              "more than 64 dimensions");
}

TEST(TorchCheckpoint, NotACheckpoint) {
  TempDir dir;
  expectError([&] { readTorchCheckpoint(dir.path("missing.bin")); }, ErrorKind::Io, "missing.bin");
  dir.writeBytes("text.bin", "hello world");
  expectError([&] { readTorchCheckpoint(dir.path("text.bin")); }, ErrorKind::Format,
              "not a PyTorch checkpoint");
  dir.writeBytes("empty.bin", "");
  expectError([&] { readTorchCheckpoint(dir.path("empty.bin")); }, ErrorKind::Format,
              "not a PyTorch checkpoint");
  dir.writeBytes("pk.bin", std::string("PK\x03\x04", 4) + std::string(100, 'x'));
  expectError([&] { readTorchCheckpoint(dir.path("pk.bin")); }, ErrorKind::Format,
              "truncated or corrupted zip archive");
}

}  // namespace
}  // namespace attnscope
