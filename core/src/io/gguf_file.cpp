// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "attnscope/error.h"
#include "attnscope/utf8.h"
#include "io/file_io.h"
#include "io/mapped_files.h"

namespace attnscope {
namespace {

// Far above any real file (llama.cpp writes a few dozen keys; tokenizer vocabularies are single
// array values), far below what would make a hostile file slow: a header of 10^6 keys is refused
// before one is read.
constexpr uint64_t kMaxMetadataKeys = 1 << 16;
constexpr uint64_t kMaxTensors = 1 << 20;
// Arrays of arrays: how deep, and how many inner arrays in the whole file (each costs a
// GgufValue, ~100 bytes, for 12 bytes of file).
constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kMaxInnerArrays = 1 << 20;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint64_t kMaxAlignment = 1 << 30;

[[noreturn]] void ggufError(const std::string& what) {
  throw Error(ErrorKind::Format, "gguf: " + what);
}

std::string ggufQuoted(const std::string& s) { return "'" + s + "'"; }

// Byte size of a fixed-size value type; 0 for strings and arrays.
uint64_t fixedSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::Bool:
      return 1;
    case GgufValueType::U16:
    case GgufValueType::I16:
      return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32:
      return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64:
      return 8;
    default:
      return 0;
  }
}

// The header, read through a cursor that never passes the end: every length is compared with
// what remains before it is used to allocate.
class Reader {
 public:
  Reader(const uint8_t* bytes, uint64_t size) : m_bytes(bytes), m_size(size) {}

  uint64_t position() const { return m_pos; }
  uint64_t remaining() const { return m_size - m_pos; }
  void setWide(bool wide) { m_wide = wide; }  // v2+: 64-bit counts and lengths

  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      ggufError(std::string("file ends inside ") + what + " (at byte " + std::to_string(m_pos) +
                " of " + std::to_string(m_size) + ")");
  }
  template <typename T>
  T fixed(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, m_bytes + m_pos, sizeof(T));
    m_pos += sizeof(T);
    return v;
  }
  // A count or length: 32-bit in version 1, 64-bit after.
  uint64_t count(const char* what) {
    return m_wide ? fixed<uint64_t>(what) : fixed<uint32_t>(what);
  }
  uint64_t countBytes() const { return m_wide ? 8 : 4; }
  std::string string(const char* what) {
    const uint64_t n = count(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(m_bytes + m_pos), static_cast<std::size_t>(n));
    m_pos += n;
    return s;
  }
  std::string rawBytes(uint64_t n, const char* what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(m_bytes + m_pos), static_cast<std::size_t>(n));
    m_pos += n;
    return s;
  }

 private:
  const uint8_t* m_bytes;
  uint64_t m_size;
  uint64_t m_pos = 0;
  bool m_wide = true;
};

GgufValueType valueType(uint32_t raw, const std::string& key) {
  if (raw > static_cast<uint32_t>(GgufValueType::F64))
    ggufError("metadata " + ggufQuoted(key) + " has unknown value type " + std::to_string(raw));
  return static_cast<GgufValueType>(raw);
}

struct ValueParser {
  Reader& reader;
  uint64_t innerArrays = 0;

  // The least bytes one element of the type takes in the file, so an array's count can be
  // checked against the bytes left before anything is reserved.
  uint64_t minimumSize(GgufValueType t) const {
    if (t == GgufValueType::String) return reader.countBytes();
    if (t == GgufValueType::Array) return 4 + reader.countBytes();
    return fixedSize(t);
  }

  GgufValue value(GgufValueType type, const std::string& key, int depth) {
    GgufValue v;
    v.type = type;
    if (type == GgufValueType::String) {
      v.strings.push_back(reader.string("a metadata string"));
      return v;
    }
    if (type != GgufValueType::Array) {
      v.raw = reader.rawBytes(fixedSize(type), "a metadata value");
      return v;
    }
    if (depth >= kMaxArrayDepth)
      ggufError("metadata " + ggufQuoted(key) + " nests arrays more than " +
                std::to_string(kMaxArrayDepth) + " deep");
    v.elementType = valueType(reader.fixed<uint32_t>("an array type"), key);
    v.count = reader.count("an array length");
    const uint64_t least = minimumSize(v.elementType);
    if (v.count > reader.remaining() / least)
      ggufError("metadata " + ggufQuoted(key) + " declares " + std::to_string(v.count) +
                " array elements, more than the " + std::to_string(reader.remaining()) +
                " bytes left in the file can hold");
    switch (v.elementType) {
      case GgufValueType::String:
        v.strings.reserve(static_cast<std::size_t>(v.count));
        for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(reader.string("a string"));
        break;
      case GgufValueType::Array:
        innerArrays += v.count;
        if (innerArrays > kMaxInnerArrays)
          ggufError("metadata holds more than " + std::to_string(kMaxInnerArrays) +
                    " arrays inside arrays");
        v.arrays.reserve(static_cast<std::size_t>(v.count));
        for (uint64_t i = 0; i < v.count; ++i)
          v.arrays.push_back(value(GgufValueType::Array, key, depth + 1));
        break;
      default:
        v.raw = reader.rawBytes(v.count * least, "an array");
    }
    return v;
  }
};

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::optional<int64_t> integerOf(GgufValueType type, const char* p) {
  auto get = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (type) {
    case GgufValueType::U8:
      return get(uint8_t{});
    case GgufValueType::I8:
      return get(int8_t{});
    case GgufValueType::Bool:
      return get(uint8_t{}) != 0 ? 1 : 0;
    case GgufValueType::U16:
      return get(uint16_t{});
    case GgufValueType::I16:
      return get(int16_t{});
    case GgufValueType::U32:
      return get(uint32_t{});
    case GgufValueType::I32:
      return get(int32_t{});
    case GgufValueType::I64:
      return get(int64_t{});
    case GgufValueType::U64: {
      const uint64_t v = get(uint64_t{});
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(v);
    }
    default:
      return std::nullopt;
  }
}

std::optional<double> numberOf(GgufValueType type, const char* p) {
  if (type == GgufValueType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (type == GgufValueType::F64) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  if (type == GgufValueType::U64) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  const std::optional<int64_t> i = integerOf(type, p);
  if (!i) return std::nullopt;
  return static_cast<double>(*i);
}

}  // namespace

const char* toString(GgufValueType type) {
  static const char* const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < std::size(names) ? names[i] : "unknown";
}

std::optional<int64_t> GgufValue::integer() const {
  if (isArray() || type == GgufValueType::String) return std::nullopt;
  return integerOf(type, raw.data());
}

std::optional<double> GgufValue::number() const {
  if (isArray() || type == GgufValueType::String) return std::nullopt;
  return numberOf(type, raw.data());
}

const std::string* GgufValue::string() const {
  return type == GgufValueType::String && strings.size() == 1 ? &strings.front() : nullptr;
}

std::optional<int64_t> GgufValue::integerAt(uint64_t i) const {
  const uint64_t size = fixedSize(elementType);
  if (!isArray() || size == 0 || i >= count) return std::nullopt;
  return integerOf(elementType, raw.data() + i * size);
}

std::optional<double> GgufValue::numberAt(uint64_t i) const {
  const uint64_t size = fixedSize(elementType);
  if (!isArray() || size == 0 || i >= count) return std::nullopt;
  return numberOf(elementType, raw.data() + i * size);
}

std::vector<int64_t> GgufTensorInfo::shape() const {
  return std::vector<int64_t>(dims.rbegin(), dims.rend());
}

uint64_t GgufTensorInfo::rows() const {
  uint64_t n = 1;
  for (std::size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

struct GgufFile::Impl {
  std::string storage;      // owns the bytes unless they are mapped
  void* mapping = nullptr;  // mmap of the whole file, read-only
  std::size_t mappingSize = 0;
  const uint8_t* bytes = nullptr;
  uint64_t size = 0;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t dataOffset = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;
  std::unordered_map<std::string, std::size_t> index;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (mapping) ::munmap(mapping, mappingSize);
  }

  void readHeader(Reader& r) {
    if (size < 4 || std::memcmp(bytes, "GGUF", 4) != 0) {
      if (size >= 4 && std::memcmp(bytes, "FUGG", 4) == 0)
        ggufError("this file is big-endian; attnscope reads little-endian GGUF files only");
      ggufError("not a GGUF file (it does not start with the bytes 'GGUF')");
    }
    r.fixed<uint32_t>("the magic");
    version = r.fixed<uint32_t>("the version");
    // A big-endian file's small version reads as 0x03000000 here (llama.cpp tells them so too).
    if (version != 0 && (version & 0xFFFF) == 0)
      ggufError("this file is big-endian (its version field reads " + std::to_string(version) +
                "); attnscope reads little-endian GGUF files only");
    if (version < 1 || version > 3)
      ggufError("version " + std::to_string(version) +
                " is not one attnscope reads (GGUF 1, 2 and 3)");
    r.setWide(version >= 2);
    const uint64_t tensorCount = r.count("the tensor count");
    const uint64_t keyCount = r.count("the metadata count");
    if (keyCount > kMaxMetadataKeys)
      ggufError("the header declares " + std::to_string(keyCount) +
                " metadata keys; attnscope reads at most " + std::to_string(kMaxMetadataKeys));
    if (tensorCount > kMaxTensors)
      ggufError("the header declares " + std::to_string(tensorCount) +
                " tensors; attnscope reads at most " + std::to_string(kMaxTensors));
    // The least a key/value (name length, one byte of name, type, one byte) and a tensor info
    // (name length, a byte, n_dims, one dim, type, offset) take: counts that cannot fit are
    // refused before anything is read.
    const uint64_t leastKey = r.countBytes() + 1 + 4 + 1;
    const uint64_t leastTensor = r.countBytes() + 1 + 4 + r.countBytes() + 4 + 8;
    if (keyCount * leastKey + tensorCount * leastTensor > r.remaining())
      ggufError("the header declares " + std::to_string(keyCount) + " metadata keys and " +
                std::to_string(tensorCount) + " tensors, more than the file's " +
                std::to_string(size) + " bytes can hold");
    readMetadata(r, keyCount);
    readTensorInfos(r, tensorCount);
    dataOffset = (r.position() + alignment - 1) / alignment * alignment;
    checkTensorSpans();
  }

  void readMetadata(Reader& r, uint64_t keyCount) {
    ValueParser parser{r};
    for (uint64_t i = 0; i < keyCount; ++i) {
      std::string key = r.string("a metadata key");
      if (key.empty()) ggufError("metadata key " + std::to_string(i) + " is empty");
      if (!isValidUtf8(key)) ggufError("metadata key " + std::to_string(i) + " is not UTF-8");
      const GgufValueType type = valueType(r.fixed<uint32_t>("a value type"), key);
      GgufValue value = parser.value(type, key, 0);
      if (!metadata.emplace(key, std::move(value)).second)
        ggufError("metadata key " + ggufQuoted(key) + " appears twice");
    }
    const auto it = metadata.find("general.alignment");
    if (it != metadata.end()) {
      const std::optional<int64_t> a = it->second.integer();
      if (!a || it->second.type == GgufValueType::Bool ||
          !isPowerOfTwo(static_cast<uint64_t>(*a)) || static_cast<uint64_t>(*a) > kMaxAlignment)
        ggufError("general.alignment must be a power of two up to 2^30");
      alignment = static_cast<uint64_t>(*a);
    }
  }

  void readTensorInfos(Reader& r, uint64_t tensorCount) {
    tensors.reserve(static_cast<std::size_t>(tensorCount));
    index.reserve(static_cast<std::size_t>(tensorCount));
    for (uint64_t i = 0; i < tensorCount; ++i) {
      GgufTensorInfo t;
      t.name = r.string("a tensor name");
      if (t.name.empty()) ggufError("tensor " + std::to_string(i) + " has an empty name");
      if (!isValidUtf8(t.name)) ggufError("tensor " + std::to_string(i) + "'s name is not UTF-8");
      const auto what = [&t] { return "tensor " + t.name; };
      const uint32_t nDims = r.fixed<uint32_t>("a tensor's dimension count");
      if (nDims < 1 || nDims > kMaxDims)
        ggufError(what() + " has " + std::to_string(nDims) + " dimensions (1 to 4 allowed)");
      // The product of the non-zero dimensions must fit too: rows() multiplies them.
      uint64_t elements = 1;
      uint64_t nonZero = 1;
      bool overflow = false;
      for (uint32_t d = 0; d < nDims; ++d) {
        const uint64_t n = r.count("a tensor's dimensions");
        if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
        if (n != 0 && nonZero > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n)
          overflow = true;
        if (n != 0) nonZero *= n;
        elements *= n;
        t.dims.push_back(n);
      }
      t.type = r.fixed<uint32_t>("a tensor's type");
      t.offset = r.fixed<uint64_t>("a tensor's offset");
      const GgmlTypeLayout* layout = ggmlTypeLayout(t.type);
      if (!layout) ggufError(what() + " has unknown ggml type " + std::to_string(t.type));
      const bool hasZero = elements == 0;
      if (overflow) ggufError(what() + " has dimensions whose product overflows");
      if (t.dims[0] % layout->blockSize != 0)
        ggufError(what() + " is " + layout->name + " with rows of " + std::to_string(t.dims[0]) +
                  " values, not a multiple of its block of " + std::to_string(layout->blockSize));
      if (!hasZero) {
        const uint64_t blocks = elements / layout->blockSize;
        if (blocks > std::numeric_limits<uint64_t>::max() / layout->blockBytes)
          ggufError(what() + " has a byte size that overflows");
        t.bytes = blocks * layout->blockBytes;
      }
      if (!index.emplace(t.name, tensors.size()).second)
        ggufError("tensor " + ggufQuoted(t.name) + " appears twice");
      tensors.push_back(std::move(t));
    }
  }

  // Every tensor aligned, inside the data section, and disjoint from every other.
  void checkTensorSpans() {
    if (tensors.empty()) return;  // a vocabulary-only file may end before the padding
    if (dataOffset > size) ggufError("file ends before its data section");
    const uint64_t dataSize = size - dataOffset;
    std::vector<const GgufTensorInfo*> byOffset;
    byOffset.reserve(tensors.size());
    for (const GgufTensorInfo& t : tensors) {
      if (t.offset % alignment != 0)
        ggufError("tensor " + t.name + " starts at offset " + std::to_string(t.offset) +
                  ", not a multiple of the alignment " + std::to_string(alignment));
      if (t.offset > dataSize || t.bytes > dataSize - t.offset)
        ggufError("tensor " + t.name + " (" + std::to_string(t.bytes) + " bytes at offset " +
                  std::to_string(t.offset) + ") runs past the end of the file (data section of " +
                  std::to_string(dataSize) + " bytes)");
      byOffset.push_back(&t);
    }
    std::sort(byOffset.begin(), byOffset.end(),
              [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
                return a->offset != b->offset ? a->offset < b->offset : a->bytes < b->bytes;
              });
    for (std::size_t i = 1; i < byOffset.size(); ++i) {
      const GgufTensorInfo& a = *byOffset[i - 1];
      const GgufTensorInfo& b = *byOffset[i];
      if (b.offset < a.offset + a.bytes)
        ggufError("tensor " + b.name + " (offset " + std::to_string(b.offset) +
                  ") overlaps tensor " + a.name + " (offset " + std::to_string(a.offset) + ", " +
                  std::to_string(a.bytes) + " bytes)");
    }
  }

  void validate() {
    Reader r(bytes, size);
    readHeader(r);
  }
};

GgufFile::GgufFile() : m_impl(std::make_unique<Impl>()) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::fromBytes(std::string bytes) {
  GgufFile file;
  Impl& impl = *file.m_impl;
  impl.storage = std::move(bytes);
  impl.bytes = reinterpret_cast<const uint8_t*>(impl.storage.data());
  impl.size = impl.storage.size();
  impl.validate();
  return file;
}

GgufFile GgufFile::open(const std::string& path) {
  std::size_t size = 0;
  void* mapping = mapLargeFile(path, &size);
  try {
    if (!mapping) return fromBytes(readFile(path));
    GgufFile file;
    Impl& impl = *file.m_impl;
    impl.mapping = mapping;
    impl.mappingSize = size;
    impl.bytes = static_cast<const uint8_t*>(mapping);
    impl.size = size;
    impl.validate();
    return file;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Format) throw;
    throw Error(ErrorKind::Format, std::string(e.what()) + " (" + path + ")");
  }
}

bool GgufFile::hasMagic(const std::string& path) {
  try {
    uint64_t size = 0;
    const int fd = openRegularFile(path, std::numeric_limits<uint64_t>::max(), &size);
    char magic[4] = {};
    const ssize_t n = size >= 4 ? ::pread(fd, magic, 4, 0) : 0;
    ::close(fd);
    return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  } catch (const Error&) {
    return false;
  }
}

uint32_t GgufFile::version() const { return m_impl->version; }
uint64_t GgufFile::alignment() const { return m_impl->alignment; }
const std::map<std::string, GgufValue>& GgufFile::metadata() const { return m_impl->metadata; }

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = m_impl->metadata.find(key);
  return it == m_impl->metadata.end() ? nullptr : &it->second;
}

const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return m_impl->tensors; }

const GgufTensorInfo* GgufFile::findTensor(const std::string& name) const {
  const auto it = m_impl->index.find(name);
  return it == m_impl->index.end() ? nullptr : &m_impl->tensors[it->second];
}

const uint8_t* GgufFile::tensorData(const GgufTensorInfo& info) const {
  const GgufTensorInfo* own = findTensor(info.name);
  if (own == nullptr || own->offset != info.offset || own->bytes != info.bytes)
    throw Error(ErrorKind::InvalidArgument,
                "gguf: tensor " + ggufQuoted(info.name) + " does not belong to this file");
  return m_impl->bytes + m_impl->dataOffset + info.offset;
}

void GgufFile::readRows(const GgufTensorInfo& info, uint64_t firstRow, uint64_t rowCount,
                        float* out) const {
  const GgmlTypeLayout* layout = ggmlTypeLayout(info.type);
  if (!layout || !layout->readable)
    ggufError("tensor " + info.name + " is " + ggmlTypeName(info.type) +
              ", which attnscope cannot read yet; supported: " + readableGgmlTypes());
  const uint64_t rows = info.rows();
  if (firstRow > rows || rowCount > rows - firstRow)
    throw Error(ErrorKind::InvalidArgument, "gguf: rows [" + std::to_string(firstRow) + ", " +
                                                std::to_string(firstRow + rowCount) +
                                                ") are outside tensor " + info.name + " of " +
                                                std::to_string(rows) + " rows");
  const uint8_t* data = tensorData(info);
  const uint64_t rowBytes = info.columns() / layout->blockSize * layout->blockBytes;
  dequantizeValues(static_cast<GgmlType>(info.type), data + firstRow * rowBytes, out,
                   rowCount * info.columns());
}

FloatTensor GgufFile::readFloat(const std::string& name) const {
  const GgufTensorInfo* info = findTensor(name);
  if (!info) ggufError("missing tensor " + ggufQuoted(name));
  FloatTensor out = FloatTensor::uninitialized(info->shape());
  readRows(*info, 0, info->rows(), out.data.data());
  return out;
}

}  // namespace attnscope
