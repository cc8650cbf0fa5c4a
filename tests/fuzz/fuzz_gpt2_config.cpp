// SPDX-License-Identifier: GPL-3.0-or-later
// The Hugging Face config.json reader (Gpt2Config::fromJson) on arbitrary text: it accepts a
// consistent configuration or throws Error(Format), never anything else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "models/gpt2_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  fuzz::expectOnlyUserErrors([&] {
    const Gpt2Config c =
        Gpt2Config::fromJson(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (c.nLayer <= 0 || c.nHead <= 0 || c.nEmbd <= 0 || c.nEmbd % c.nHead != 0 ||
        c.nPositions <= 0 || c.vocabSize <= 0) {
      fuzz::fail("accepted an inconsistent config");
    }
  });
  return 0;
}
