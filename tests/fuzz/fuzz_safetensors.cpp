// SPDX-License-Identifier: GPL-3.0-or-later
// SafetensorsFile::fromBytes on arbitrary bytes: it must accept or throw Error(Format), never read
// out of bounds, and every tensor it accepts must be readable.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/safetensors.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  fuzz::expectOnlyUserErrors([&] {
    const SafetensorsFile file =
        SafetensorsFile::fromBytes(std::string(reinterpret_cast<const char*>(data), size));
    for (const TensorInfo& info : file.tensors()) {
      if (info.end < info.begin || info.end > size) fuzz::fail("accepted tensor outside the file");
      if (file.find(info.name) == nullptr) fuzz::fail("listed tensor not found by name");
      fuzz::expectOnlyUserErrors([&] {
        const FloatTensor t = file.readFloat(info.name);
        if (t.data.size() != FloatTensor::countOf(info.shape))
          fuzz::fail("readFloat size != shape");
      });
    }
  });
  return 0;
}
