// SPDX-License-Identifier: GPL-3.0-or-later
// A restricted reader for torch.save zip archives. The pickle in data.pkl is interpreted by the
// small unpickler of io/torch_pickle.cpp (no LibTorch, fuzzed on raw bytes), which builds plain
// values and runs no code; the archive, the storages and the views' bounds are checked here.
// LibTorch's own torch::pickle_load is not used: in 1.13 it asserts on the BUILD of an
// OrderedDict's `_metadata` that every nn.Module.state_dict() carries.
#include "io/torch_checkpoint.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/versions.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "attnscope/error.h"
#include "io/file_io.h"
#include "io/torch_pickle.h"

namespace attnscope {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::Format, path + ": " + what);
}

/// A name for a message: a key may be a megabyte long.
std::string shortName(const std::string& name) {
  return name.size() <= 200 ? name : name.substr(0, 200) + "...";
}

// ---------------------------------------------------------------------------------------------
// The zip central directory, read by hand only to bound record sizes before LibTorch allocates
// them (a hostile entry could claim terabytes of deflated data). torch.save stores, never
// compresses, so anything else is refused.

struct ZipEntry {
  uint64_t size = 0;
  uint16_t method = 0;
  uint32_t crc = 0;          // CRC-32 of the stored bytes, as the central directory says
  uint64_t localOffset = 0;  // where the entry's local header starts
};

uint16_t le16(const unsigned char* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint64_t le64(const unsigned char* p) { return uint64_t(le32(p)) | (uint64_t(le32(p + 4)) << 32); }

std::string readRange(std::ifstream& in, const std::string& path, uint64_t offset, uint64_t n) {
  std::string out(n, '\0');
  in.clear();
  in.seekg(std::streamoff(offset));
  if (!in.read(out.data(), std::streamsize(n))) fail(path, "truncated or corrupted zip archive");
  return out;
}

// Names are keyed without the archive folder ("archive/data/0" -> "data/0").
std::map<std::string, ZipEntry> readCentralDirectory(std::ifstream& in, const std::string& path,
                                                     uint64_t fileSize) {
  const std::string bad = "truncated or corrupted zip archive";
  if (fileSize < 22) fail(path, bad);
  const uint64_t tailSize = std::min<uint64_t>(fileSize, 22 + 65535 + 20 + 56);
  const std::string tail = readRange(in, path, fileSize - tailSize, tailSize);
  const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
  int64_t eocd = -1;
  for (int64_t i = int64_t(tailSize) - 22; i >= 0; --i)
    if (le32(t + i) == 0x06054b50u) {
      eocd = i;
      break;
    }
  if (eocd < 0) fail(path, bad + " (no end-of-central-directory record)");
  uint64_t count = le16(t + eocd + 10);
  uint64_t cdSize = le32(t + eocd + 12);
  uint64_t cdOffset = le32(t + eocd + 16);
  if (count == 0xFFFF || cdSize == 0xFFFFFFFFu || cdOffset == 0xFFFFFFFFu) {  // zip64
    if (eocd < 20 || le32(t + eocd - 20) != 0x07064b50u) fail(path, bad + " (zip64 locator)");
    const uint64_t z64 = le64(t + eocd - 20 + 8);
    if (z64 > fileSize || fileSize - z64 < 56) fail(path, bad + " (zip64 record)");
    const std::string rec = readRange(in, path, z64, 56);
    const auto* r = reinterpret_cast<const unsigned char*>(rec.data());
    if (le32(r) != 0x06064b50u) fail(path, bad + " (zip64 record)");
    count = le64(r + 32);
    cdSize = le64(r + 40);
    cdOffset = le64(r + 48);
  }
  if (cdOffset > fileSize || cdSize > fileSize - cdOffset || count > cdSize / 46 + 1)
    fail(path, bad + " (central directory out of bounds)");
  const std::string cd = readRange(in, path, cdOffset, cdSize);
  const auto* c = reinterpret_cast<const unsigned char*>(cd.data());
  std::map<std::string, ZipEntry> entries;
  uint64_t pos = 0;
  std::string prefix;
  for (uint64_t i = 0; i < count; ++i) {
    if (cdSize - pos < 46 || le32(c + pos) != 0x02014b50u) fail(path, bad + " (central directory)");
    ZipEntry e;
    e.method = le16(c + pos + 10);
    e.crc = le32(c + pos + 16);
    e.localOffset = le32(c + pos + 42);
    uint64_t comp = le32(c + pos + 20);
    e.size = le32(c + pos + 24);
    const uint64_t nameLen = le16(c + pos + 28), extraLen = le16(c + pos + 30),
                   commentLen = le16(c + pos + 32);
    if (cdSize - pos - 46 < nameLen + extraLen + commentLen)
      fail(path, bad + " (central directory)");
    std::string name(reinterpret_cast<const char*>(c + pos + 46), nameLen);
    // zip64 sizes: uncompressed first, then compressed, each present only when saturated
    if (e.size == 0xFFFFFFFFu || comp == 0xFFFFFFFFu) {
      const unsigned char* x = c + pos + 46 + nameLen;
      uint64_t xp = 0;
      while (xp + 4 <= extraLen) {
        const uint16_t id = le16(x + xp), len = le16(x + xp + 2);
        if (xp + 4 + len > extraLen) break;
        if (id == 0x0001) {
          uint64_t q = xp + 4;
          if (e.size == 0xFFFFFFFFu && q + 8 <= xp + 4 + len) {
            e.size = le64(x + q);
            q += 8;
          }
          if (comp == 0xFFFFFFFFu && q + 8 <= xp + 4 + len) {
            comp = le64(x + q);
            q += 8;
          }
          if (e.localOffset == 0xFFFFFFFFu && q + 8 <= xp + 4 + len) e.localOffset = le64(x + q);
        }
        xp += 4 + len;
      }
    }
    if (e.size > fileSize || comp > fileSize) fail(path, bad + " (entry " + name + " too large)");
    // LibTorch takes the first entry's folder as the archive's and finds records under it; check
    // that up front (its reader leaks its zip state when its constructor throws).
    const auto slash = name.find('/');
    if (slash == std::string::npos || (i > 0 && name.compare(0, slash + 1, prefix) != 0))
      fail(path, bad + " (entry " + name + " is outside the archive folder)");
    if (i == 0) prefix = name.substr(0, slash + 1);
    entries[name.substr(slash + 1)] = e;
    pos += 46 + nameLen + extraLen + commentLen;
  }
  if (!entries.count("version") && !entries.count(".data/version"))
    fail(path, "not a PyTorch checkpoint (the zip archive has no version record)");
  return entries;
}

uint32_t crc32Of(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes) {
    crc ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// LibTorch's reader reads the version record inside its constructor, and when that throws (a
// damaged local header, a CRC mismatch, a version it does not know) it leaks its zip state
// (ASan's leak check found it). The same checks here first, with our own message.
void checkVersionRecord(std::ifstream& in, const std::string& path, uint64_t fileSize,
                        const std::map<std::string, ZipEntry>& entries) {
  const std::string bad = "truncated or corrupted zip archive";
  const auto it =
      entries.count(".data/version") ? entries.find(".data/version") : entries.find("version");
  const ZipEntry& e = it->second;
  if (e.localOffset > fileSize || fileSize - e.localOffset < 30) fail(path, bad + " (version)");
  const std::string local = readRange(in, path, e.localOffset, 30);
  const auto* h = reinterpret_cast<const unsigned char*>(local.data());
  if (le32(h) != 0x04034b50u || le16(h + 8) != 0) fail(path, bad + " (version record header)");
  const uint64_t data = e.localOffset + 30 + le16(h + 26) + le16(h + 28);
  if (e.size > 32 || data > fileSize || fileSize - data < e.size) fail(path, bad + " (version)");
  const std::string version = readRange(in, path, data, e.size);
  if (crc32Of(version) != e.crc) fail(path, bad + " (the version record's checksum differs)");
  uint64_t v = 0;
  std::size_t digits = 0;
  while (digits < version.size() && version[digits] >= '0' && version[digits] <= '9')
    v = v * 10 + static_cast<uint64_t>(version[digits++] - '0');
  if (digits == 0 || digits > 6 || v < caffe2::serialize::kMinSupportedFileFormatVersion ||
      v > caffe2::serialize::kMaxSupportedFileFormatVersion)
    fail(path, "unsupported PyTorch checkpoint version '" + version.substr(0, 8) +
                   "' (this LibTorch reads " +
                   std::to_string(caffe2::serialize::kMinSupportedFileFormatVersion) + " to " +
                   std::to_string(caffe2::serialize::kMaxSupportedFileFormatVersion) + ")");
}

}  // namespace

// Long (~145 lines) on purpose: the zip entry, pickle and storage checks run in the order the
// format requires, each refusing before the next reads anything; split, every piece would need
// the archive, the entry table and the records so far.
std::vector<TorchTensorRecord> readTorchCheckpoint(const std::string& path) {
  // stat before the stream opens it: a FIFO would block the open, a device never ends.
  requireRegularFile(path, std::numeric_limits<uint64_t>::max());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, fileErrorMessage("read", path, errno));
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) throw Error(ErrorKind::Io, fileErrorMessage("read", path, errno));
  const uint64_t fileSize = uint64_t(end);
  {
    const std::string head = fileSize >= 4 ? readRange(in, path, 0, 4) : std::string();
    if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80)
      fail(path,
           "legacy format, re-save with torch.save's default (zip) format "
           "(torch.save(obj, path) without _use_new_zipfile_serialization=False), "
           "or convert to safetensors");
    if (head != std::string("PK\x03\x04", 4))
      fail(path, "not a PyTorch checkpoint (expected a torch.save zip archive)");
  }
  const auto entries = readCentralDirectory(in, path, fileSize);
  checkVersionRecord(in, path, fileSize, entries);
  for (const auto& [name, e] : entries)
    if (e.method != 0)
      fail(path, "refused: zip entry " + name + " is compressed (torch.save stores entries)");

  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    auto record = [&](const std::string& name) {
      auto it = entries.find(name);
      if (it == entries.end() || !reader.hasRecord(name))
        fail(path, "malformed checkpoint (no " + name + " in the archive)");
      auto [ptr, size] = reader.getRecord(name);
      return std::make_pair(std::move(ptr), size);
    };
    if (reader.hasRecord("byteorder")) {
      auto [ptr, size] = record("byteorder");
      const std::string order(static_cast<const char*>(ptr.get()), size);
      if (order != "little") fail(path, "refused: byte order '" + order + "' (only little)");
    }
    auto [pkl, pklSize] = record("data.pkl");
    const auto leaves =
        readStateDictPickle(path, static_cast<const uint8_t*>(pkl.get()), pklSize, fileSize);

    std::map<std::string, std::pair<at::DataPtr, size_t>> storageBytes;
    const uint64_t budget = 4 * fileSize + (1u << 20);  // views may share storage (tied weights)
    uint64_t total = 0;
    std::vector<TorchTensorRecord> out;
    for (const PickledTensor& t : leaves) {
      const uint64_t elem = byteSize(t.dtype);
      const std::string where = "tensor " + shortName(t.name);
      auto sit = storageBytes.find(t.storageKey);
      if (sit == storageBytes.end()) {
        sit = storageBytes.emplace(t.storageKey, record("data/" + t.storageKey)).first;
        if (t.storageNumel > sit->second.second / elem)
          fail(path, where + ": storage " + t.storageKey + " holds " +
                         std::to_string(sit->second.second) + " bytes, fewer than its " +
                         std::to_string(t.storageNumel) + " elements");
      }
      // Bounds: offset + sum((size-1)*stride) < numel, no negative sizes, strides or offsets.
      if (t.offset < 0) fail(path, where + ": negative storage offset");
      uint64_t numel = 1, last = uint64_t(t.offset);
      bool empty = false;
      for (size_t d = 0; d < t.shape.size(); ++d) {
        if (t.shape[d] < 0 || t.stride[d] < 0) fail(path, where + ": negative size or stride");
        if (t.shape[d] == 0) empty = true;
      }
      for (size_t d = 0; d < t.shape.size() && !empty; ++d) {
        const uint64_t n = uint64_t(t.shape[d]), st = uint64_t(t.stride[d]);
        if (n > std::numeric_limits<uint64_t>::max() / numel) fail(path, where + ": too large");
        numel *= n;
        if (st != 0 && (n - 1) > (std::numeric_limits<uint64_t>::max() / 2 - last) / st)
          fail(path, where + ": view out of bounds");
        last += (n - 1) * st;
      }
      if (empty) numel = 0;
      if (!empty && last >= t.storageNumel)
        fail(path, where + ": view out of bounds (needs element " + std::to_string(last) +
                       " of a storage of " + std::to_string(t.storageNumel) + ")");
      if (numel > t.storageNumel && numel > 0)
        fail(path, where + ": a broadcast view larger than its storage is not supported");
      total += numel * elem;
      if (total > budget) fail(path, "malformed checkpoint (tensors add up to more than the file)");

      TorchTensorRecord r;
      r.name = t.name;
      r.dtype = t.dtype;
      r.shape = t.shape;
      r.bytes.resize(size_t(numel * elem));
      const auto* src = static_cast<const uint8_t*>(sit->second.first.get());
      if (numel > 0) {
        // Walk the view in row-major order, copying runs of the innermost contiguous dimension.
        const size_t nd = t.shape.size();
        std::vector<int64_t> idx(nd, 0);
        uint8_t* dst = r.bytes.data();
        const bool innerContig = nd == 0 || t.stride[nd - 1] == 1;
        const uint64_t run = innerContig && nd > 0 ? uint64_t(t.shape[nd - 1]) : 1;
        for (uint64_t done = 0; done < numel; done += run) {
          uint64_t off = uint64_t(t.offset);
          for (size_t d = 0; d < nd; ++d) off += uint64_t(idx[d]) * uint64_t(t.stride[d]);
          std::memcpy(dst, src + off * elem, size_t(run * elem));
          dst += run * elem;
          // advance the index (skipping the innermost dimension when it is copied as a run)
          size_t d = innerContig && nd > 0 ? nd - 1 : nd;
          while (d > 0) {
            --d;
            if (++idx[d] < t.shape[d]) break;
            idx[d] = 0;
          }
        }
      }
      out.push_back(std::move(r));
    }
    return out;
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    fail(path,
         std::string("truncated or corrupted checkpoint (") + e.what_without_backtrace() + ")");
  } catch (const std::bad_alloc&) {
    fail(path, "corrupted checkpoint (a record is too large)");
  } catch (const std::exception& e) {
    fail(path, std::string("truncated or corrupted checkpoint (") + e.what() + ")");
  }
}

}  // namespace attnscope
