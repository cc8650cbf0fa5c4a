// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace attnscope::test {

/// A header-only GGUF (version 3, from llama.cpp's docs/gguf.md): general.architecture,
/// general.file_type when given, and one F32 tensor "w" of 32 zeros. Enough for the model stores'
/// listing (findGgufModels reads headers only), not to open as a model.
inline std::string tinyGguf(const std::string& arch, std::optional<uint32_t> fileType) {
  std::string b = "GGUF";
  const auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  const auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  const auto str = [&](const std::string& s) {
    u64(s.size());
    b += s;
  };
  u32(3);                 // version
  u64(1);                 // tensors
  u64(fileType ? 2 : 1);  // metadata keys
  str("general.architecture");
  u32(8);  // string
  str(arch);
  if (fileType) {
    str("general.file_type");
    u32(4);  // u32
    u32(*fileType);
  }
  str("w");
  u32(1);                                     // dimensions
  u64(32);                                    // ne[0]
  u32(0);                                     // F32
  u64(0);                                     // offset in the data section
  b.append((32 - b.size() % 32) % 32, '\0');  // the data section is 32-byte aligned
  b.append(32 * 4, '\0');
  return b;
}

}  // namespace attnscope::test
