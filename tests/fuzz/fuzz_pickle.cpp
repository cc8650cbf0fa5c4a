// SPDX-License-Identifier: GPL-3.0-or-later
// readStateDictPickle (the restricted unpickler of torch.save's data.pkl, no LibTorch) on
// arbitrary bytes: it accepts them or throws Error(Format), never runs out of its budget of
// memory or time (a memo DAG or a list appended to itself is walked once), never another
// exception. Every tensor it accepts has a name seen once, a storage key, a size and a stride of
// the same rank (at most 64).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "attnscope/error.h"
#include "fuzz_check.h"
#include "io/torch_pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  fuzz::expectOnlyUserErrors([&] {
    const auto tensors = readStateDictPickle("data.pkl", data, size, size);
    std::set<std::string> names;
    for (const PickledTensor& t : tensors) {
      if (!names.insert(t.name).second) fuzz::fail("a tensor name twice");
      if (t.shape.size() != t.stride.size()) fuzz::fail("size and stride differ in rank");
      if (t.shape.size() > 64) fuzz::fail("rank above 64");
    }
  });
  return 0;
}
