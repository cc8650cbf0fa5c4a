// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/safetensors.h"
#include "attnscope/utf8.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "io/file_io.h"
#include "io/ggml_quants.h"
#include "io/mapped_files.h"
#include "io/strict_json.h"

// Tensor bytes are little-endian in the file and are copied as host values.
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "attnscope's safetensors code assumes a little-endian host"
#endif

namespace attnscope {

namespace {

using Json = nlohmann::json;
// The writer keeps its tensors' order in the header, as the reference writer does.
using OrderedJson = nlohmann::ordered_json;

// The reference implementation's limit; a larger header is a malicious or broken file.
constexpr uint64_t kMaxHeaderSize = 100ULL * 1000 * 1000;
// A valid header nests at most object -> tensor object -> shape array.
constexpr std::size_t kMaxDepth = 3;

struct DTypeSpec {
  DType dtype;
  const char* name;  // the spec's spelling
  std::size_t size;
};
// Every DType, in enum order, so the table can be indexed by the enum value.
constexpr DTypeSpec kDTypes[] = {{DType::F64, "F64", 8}, {DType::F32, "F32", 4},
                                 {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
                                 {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
                                 {DType::I16, "I16", 2}, {DType::I8, "I8", 1},
                                 {DType::U8, "U8", 1},   {DType::BOOL, "BOOL", 1}};
constexpr bool tableMatchesEnum() {
  for (std::size_t i = 0; i < std::size(kDTypes); ++i)
    if (static_cast<std::size_t>(kDTypes[i].dtype) != i) return false;
  return std::size(kDTypes) == static_cast<std::size_t>(DType::BOOL) + 1;
}
static_assert(tableMatchesEnum(), "kDTypes must list every DType in enum order");

constexpr const DTypeSpec& specOf(DType d) { return kDTypes[static_cast<std::size_t>(d)]; }

[[noreturn]] void safetensorsError(const std::string& what) {
  throw Error(ErrorKind::Format, "safetensors: " + what);
}

std::string quoted(const std::string& name) { return "'" + name + "'"; }

std::string offsetsString(const TensorInfo& t) {
  return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
}

uint64_t readU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

float bfloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

DType parseDType(const std::string& name, const std::string& spelling) {
  for (const DTypeSpec& spec : kDTypes)
    if (spelling == spec.name) return spec.dtype;
  safetensorsError("tensor " + quoted(name) + " has unknown dtype '" + spelling + "'");
}

// The header in one linear pass (see parseJsonChecked), refusing duplicate keys, which nlohmann
// would resolve silently to the last, and nesting deeper than a valid header's.
struct Header {
  Json root;
  std::vector<std::string> order;  // top-level keys in file order
};

Header parseHeader(std::string_view header) {
  CheckedJson parsed = parseJsonChecked(header, kMaxDepth, /*keepTopLevelOrder=*/true);
  switch (parsed.problem) {
    case CheckedJson::Problem::None:
      break;
    case CheckedJson::Problem::DuplicateKey:
      safetensorsError("duplicate key '" + parsed.detail + "' in header");
    case CheckedJson::Problem::TooDeep:
      safetensorsError("header is nested too deeply");
    case CheckedJson::Problem::Invalid:
      safetensorsError("header is invalid JSON: " + parsed.detail);
  }
  return {std::move(parsed.value), std::move(parsed.topLevelKeys)};
}

std::map<std::string, std::string> parseMetadata(const Json& value) {
  if (!value.is_object()) safetensorsError("__metadata__ must be an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string())
      safetensorsError("__metadata__ value for " + quoted(key) + " must be a string");
    metadata.emplace(key, v.get<std::string>());
  }
  return metadata;
}

TensorInfo parseTensorEntry(const std::string& name, const Json& entry, uint64_t dataSize) {
  TensorInfo t;
  t.name = name;
  // Built only for a message: a header of 160,000 tensors must not build 160,000 strings.
  const auto what = [&name] { return "tensor " + quoted(name); };
  if (!entry.is_object()) safetensorsError(what() + " must be an object");
  for (const auto& [key, v] : entry.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      safetensorsError(what() + " has unexpected field " + quoted(key));
  if (!entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
    safetensorsError(what() + " needs 'dtype', 'shape' and 'data_offsets'");

  const Json& dtype = entry["dtype"];
  if (!dtype.is_string()) safetensorsError(what() + " has a dtype that is not a string");
  t.dtype = parseDType(name, dtype.get<std::string>());

  const Json& shape = entry["shape"];
  if (!shape.is_array()) safetensorsError(what() + " has a shape that is not an array");
  uint64_t count = 1;
  bool overflow = false;
  for (const Json& d : shape) {
    // JSON integers above 2^64 or with a fraction arrive as floats and are refused here too.
    if (!d.is_number_unsigned() ||
        d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      safetensorsError(what() + " has shape " + shape.dump() +
                       "; dimensions must be non-negative integers");
    const uint64_t ud = d.get<uint64_t>();
    t.shape.push_back(static_cast<int64_t>(ud));
    if (ud != 0 && count > std::numeric_limits<uint64_t>::max() / ud) overflow = true;
    count *= ud;
  }
  // A zero dimension makes any product empty, so overflow only matters without one.
  const bool hasZero = std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end();
  const uint64_t elementSize = byteSize(t.dtype);
  if (!hasZero && (overflow || count > std::numeric_limits<uint64_t>::max() / elementSize))
    safetensorsError(what() + " has shape " + FloatTensor::formatShape(t.shape) +
                     " whose byte size overflows");
  const uint64_t bytes = hasZero ? 0 : count * elementSize;

  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    safetensorsError(what() + " has data_offsets " + offsets.dump() +
                     "; expected [begin, end] as non-negative integers");
  t.begin = offsets[0].get<uint64_t>();
  t.end = offsets[1].get<uint64_t>();
  if (t.begin > t.end)
    safetensorsError(what() + " has reversed data_offsets " + offsetsString(t) + " (begin > end)");
  if (t.end > dataSize)
    safetensorsError(what() + " has data_offsets " + offsetsString(t) +
                     " out of range (data section is " + std::to_string(dataSize) + " bytes)");
  if (t.end - t.begin != bytes)
    safetensorsError(what() + " has shape " + FloatTensor::formatShape(t.shape) + " (" +
                     toString(t.dtype) + ", " + std::to_string(bytes) +
                     " bytes) but data_offsets span " + std::to_string(t.end - t.begin) + " bytes");
  return t;
}

}  // namespace

const char* toString(DType d) { return specOf(d).name; }

std::size_t byteSize(DType d) { return specOf(d).size; }

namespace {

/// The live mappings, [begin, end) by begin, for insideMappedFile. Never destroyed: a file may be
/// closed by a static destructor after main (a model kept in a static), after these would be.
std::mutex& mappingsMutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::map<const uint8_t*, const uint8_t*>& liveMappings() {
  static auto* m = new std::map<const uint8_t*, const uint8_t*>();
  return *m;
}

}  // namespace

bool insideMappedFile(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  const std::lock_guard<std::mutex> lock(mappingsMutex());
  const auto& live = liveMappings();
  auto it = live.upper_bound(p);  // the first mapping that begins after p
  if (it == live.begin()) return false;
  --it;
  return p >= it->first && bytes <= static_cast<std::size_t>(it->second - p);
}

void* mapLargeFile(const std::string& path, std::size_t* size) {
  // Regular files only, checked before open: a FIFO would block and a device never ends.
  uint64_t fileSize = 0;
  const int fd = openRegularFile(path, std::numeric_limits<uint64_t>::max(), &fileSize);
  void* mapping = MAP_FAILED;
  if (fileSize >= kSafetensorsMapFrom)
    mapping = ::mmap(nullptr, static_cast<std::size_t>(fileSize), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  *size = mapping == MAP_FAILED ? 0 : static_cast<std::size_t>(fileSize);
  return mapping == MAP_FAILED ? nullptr : mapping;
}

struct SafetensorsFile::Impl {
  std::string storage;      // owns the bytes unless they are mapped
  void* mapping = nullptr;  // mmap of the whole file, read-only
  std::size_t mappingSize = 0;
  const uint8_t* bytes = nullptr;
  std::size_t size = 0;
  const uint8_t* data = nullptr;  // start of the data section
  uint64_t dataSize = 0;
  std::map<std::string, std::string> metadata;
  std::vector<TensorInfo> tensors;
  std::unordered_map<std::string, std::size_t> index;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (!mapping) return;
    {
      const std::lock_guard<std::mutex> lock(mappingsMutex());
      liveMappings().erase(static_cast<const uint8_t*>(mapping));
    }
    ::munmap(mapping, mappingSize);
  }

  // Everything from the file is checked against `size` before it is used or allocated.
  void validate() {
    if (size < 8)
      safetensorsError("file is too short (" + std::to_string(size) +
                       " bytes) to hold the 8-byte header length");
    const uint64_t headerSize = readU64(bytes);
    if (headerSize > kMaxHeaderSize)
      safetensorsError("header length " + std::to_string(headerSize) + " exceeds the 100 MB limit");
    if (headerSize > size - 8)
      safetensorsError("header length " + std::to_string(headerSize) +
                       " runs past the end of the file (" + std::to_string(size) + " bytes)");
    const std::string_view header(reinterpret_cast<const char*>(bytes + 8), headerSize);
    std::size_t bad = 0;
    if (!isValidUtf8(header, &bad))
      safetensorsError("header is not valid UTF-8 (byte " + std::to_string(bad) +
                       " of the header)");
    // Also rejects a byte-order mark, which nlohmann would skip but the spec does not allow.
    if (header.empty() || header.front() != '{')
      safetensorsError("header must be a JSON object starting with '{'");
    const Header parsed = parseHeader(header);
    const Json& root = parsed.root;
    if (!root.is_object()) safetensorsError("header must be a JSON object");

    data = bytes + 8 + headerSize;
    dataSize = size - 8 - headerSize;
    tensors.reserve(parsed.order.size());
    for (const std::string& key : parsed.order) {
      const Json& value = root.find(key).value();
      if (key == "__metadata__")
        metadata = parseMetadata(value);
      else
        tensors.push_back(parseTensorEntry(key, value, dataSize));
    }

    // Sorted by offsets, the spans must tile the data section exactly, as in the reference
    // implementation; empty tensors sit between them.
    std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t cursor = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& t : tensors) {
      if (t.begin < cursor)
        safetensorsError("tensor " + quoted(t.name) + " (data_offsets " + offsetsString(t) +
                         ") overlaps tensor " + quoted(previous->name) + " (data_offsets " +
                         offsetsString(*previous) + ")");
      if (t.begin > cursor)
        safetensorsError("gap of " + std::to_string(t.begin - cursor) + " bytes before tensor " +
                         quoted(t.name) + " (data_offsets " + offsetsString(t) + ")");
      cursor = t.end;
      previous = &t;
    }
    if (cursor != dataSize)
      safetensorsError(std::to_string(dataSize - cursor) + " trailing bytes after the last tensor");
    index.reserve(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) index.emplace(tensors[i].name, i);
  }
};

SafetensorsFile::SafetensorsFile() : m_impl(std::make_unique<Impl>()) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::fromBytes(std::string bytes) {
  SafetensorsFile file;
  Impl& impl = *file.m_impl;
  impl.storage = std::move(bytes);
  impl.bytes = reinterpret_cast<const uint8_t*>(impl.storage.data());
  impl.size = impl.storage.size();
  impl.validate();
  return file;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  std::size_t size = 0;
  void* mapping = mapLargeFile(path, &size);
  if (!mapping) {
    // Small files, or filesystems that cannot map: read instead. readFile reports Io errors.
    try {
      return fromBytes(readFile(path));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Format) throw;
      throw Error(ErrorKind::Format, std::string(e.what()) + " (" + path + ")");
    }
  }
  SafetensorsFile file;
  Impl& impl = *file.m_impl;
  impl.mapping = mapping;
  impl.mappingSize = size;
  impl.bytes = static_cast<const uint8_t*>(mapping);
  {
    const std::lock_guard<std::mutex> lock(mappingsMutex());
    liveMappings()[impl.bytes] = impl.bytes + size;
  }
  impl.size = size;
  try {
    impl.validate();
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, std::string(e.what()) + " (" + path + ")");
  }
  return file;
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return m_impl->metadata;
}

const std::vector<TensorInfo>& SafetensorsFile::tensors() const { return m_impl->tensors; }

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  const auto it = m_impl->index.find(name);
  return it == m_impl->index.end() ? nullptr : &m_impl->tensors[it->second];
}

const uint8_t* SafetensorsFile::rawData(const TensorInfo& info) const {
  if (info.begin > info.end || info.end > m_impl->dataSize)
    throw Error(ErrorKind::InvalidArgument, "safetensors: data_offsets " + offsetsString(info) +
                                                " of tensor " + quoted(info.name) +
                                                " do not belong to this file");
  return m_impl->data + info.begin;
}

FloatTensor SafetensorsFile::readFloat(const std::string& name) const {
  const TensorInfo* info = find(name);
  if (!info) safetensorsError("missing tensor " + quoted(name));
  const std::size_t count =
      static_cast<std::size_t>((info->end - info->begin) / byteSize(info->dtype));
  FloatTensor out;
  out.shape = info->shape;
  out.data.resize(count);
  const uint8_t* src = rawData(*info);
  float* dst = out.data.data();
  // memcpy per element: offsets in foreign files need not be aligned.
  switch (info->dtype) {
    case DType::F32:
      if (count) std::memcpy(dst, src, count * 4);
      break;
    case DType::F64:
      for (std::size_t i = 0; i < count; ++i) {
        double v;
        std::memcpy(&v, src + 8 * i, 8);
        dst[i] = static_cast<float>(v);
      }
      break;
    case DType::F16:
    case DType::BF16: {
      const bool half = info->dtype == DType::F16;
      for (std::size_t i = 0; i < count; ++i) {
        uint16_t v;
        std::memcpy(&v, src + 2 * i, 2);
        dst[i] = half ? halfBitsToFloat(v) : bfloat16ToFloat(v);
      }
      break;
    }
    default:
      safetensorsError("tensor " + quoted(name) + " has dtype " + toString(info->dtype) +
                       ", not a floating-point type");
  }
  return out;
}

std::string safetensorsBytes(const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  OrderedJson header = OrderedJson::object();
  // ordered_json's operator[] and contains() search linearly: names are checked in a hash set and
  // entries appended, so writing stays linear in the number of tensors.
  auto& entries = header.get_ref<OrderedJson::object_t&>();
  std::unordered_set<std::string> names;
  if (!metadata.empty()) entries.emplace_back("__metadata__", metadata);
  uint64_t offset = 0;
  for (const NamedTensor& nt : tensors) {
    const FloatTensor& t = nt.tensor;
    const std::string what = "safetensors: tensor " + quoted(nt.name);
    if (nt.name == "__metadata__")
      throw Error(ErrorKind::InvalidArgument, what + ": the name is reserved");
    if (!names.insert(nt.name).second)
      throw Error(ErrorKind::InvalidArgument, what + " appears twice");
    for (int64_t d : t.shape)
      if (d < 0)
        throw Error(ErrorKind::InvalidArgument,
                    what + " has a negative dimension in shape " + t.shapeString());
    if (FloatTensor::countOf(t.shape) != t.data.size())
      throw Error(ErrorKind::InvalidArgument, what + " has shape " + t.shapeString() + " but " +
                                                  std::to_string(t.data.size()) + " values");
    const uint64_t bytes = t.data.size() * sizeof(float);
    entries.emplace_back(nt.name, OrderedJson{{"dtype", "F32"},
                                              {"shape", t.shape},
                                              {"data_offsets", {offset, offset + bytes}}});
    offset += bytes;
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const OrderedJson::exception&) {
    throw Error(ErrorKind::InvalidArgument,
                "safetensors: a tensor name or metadata entry is not valid UTF-8");
  }
  // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + json.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  out += json;
  for (const NamedTensor& nt : tensors)
    out.append(reinterpret_cast<const char*>(nt.tensor.data.data()),
               nt.tensor.data.size() * sizeof(float));
  return out;
}

void writeSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  writeOutputFile(path, safetensorsBytes(tensors, metadata));
}

}  // namespace attnscope
