// SPDX-License-Identifier: GPL-3.0-or-later
// GgufFile::fromBytes on arbitrary bytes: it must accept or throw Error(Format), never read out of
// bounds; every tensor it accepts lies inside the file, and every readable one dequantizes. The
// Llama mapping (GgufModel) and the vocabulary reader must likewise accept or refuse what the
// reader accepted.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "io/gguf_file.h"
#include "io/gguf_vocabulary_reader.h"
#include "models/gguf_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  fuzz::expectOnlyUserErrors([&] {
    const GgufFile file =
        GgufFile::fromBytes(std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expectOnlyUserErrors([&] {
      const GgufVocabulary v = readGgufVocabulary(file, "fuzz");
      if (v.source != "fuzz") fuzz::fail("vocabulary source lost");
    });
    uint64_t values = 0;
    for (const GgufTensorInfo& info : file.tensors()) {
      if (info.offset > size || info.bytes > size - info.offset)
        fuzz::fail("accepted tensor outside the file");
      if (file.findTensor(info.name) == nullptr) fuzz::fail("listed tensor not found by name");
      values += info.columns() * info.rows();
    }
    // Dequantize only what a small input can hold (a zero-size tensor aside, values <= 2 * bytes).
    if (values > (uint64_t{1} << 20)) return;
    for (const GgufTensorInfo& info : file.tensors()) {
      fuzz::expectOnlyUserErrors([&] {
        const FloatTensor t = file.readFloat(info.name);
        if (t.data.size() != info.columns() * info.rows()) fuzz::fail("readFloat size != shape");
      });
    }
    fuzz::expectOnlyUserErrors([&] {
      const GgufModel model(file);
      const std::string weights = model.float32Safetensors(uint64_t{1} << 24);
      if (weights.size() < model.float32Bytes()) fuzz::fail("weights shorter than their bytes");
    });
  });
  return 0;
}
