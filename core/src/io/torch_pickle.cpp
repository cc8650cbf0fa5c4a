// SPDX-License-Identifier: GPL-3.0-or-later
// The restricted unpickler for torch.save's data.pkl, apart from the zip archive and LibTorch so
// that the fuzz targets (built without LibTorch) reach it on raw bytes. It builds plain values
// (no objects, no calls): the only globals it accepts are the tensor rebuild functions, the
// storage types and collections.OrderedDict, and "calling" them is done here in C++.
#include "io/torch_pickle.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "attnscope/error.h"

namespace attnscope {
namespace {

constexpr int kMaxNesting = 64;  // containers inside containers, when the result is walked
// The unpickler's own bookkeeping (values, stack, memo) may use this much beyond the file's size.
// Every opcode makes at most a few small values, so a real data.pkl, a small part of its file,
// stays far below; 50 MB of EMPTY_LIST opcodes would otherwise take ~10 GB.
constexpr uint64_t kPickleBookkeepingBytes = 64ull << 20;
// A tensor's rank; a larger size tuple is refused before its items are read.
constexpr std::size_t kMaxRank = 64;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::Format, path + ": " + what);
}

// ---------------------------------------------------------------------------------------------
// Pickle values.

struct Storage {
  DType dtype = DType::F32;
  std::string key;
  uint64_t numel = 0;
};

struct TensorView {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;
  std::vector<int64_t> shape, stride;
};

struct Value {
  enum Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, StorageRef, Tensor };
  Kind kind = None;
  int64_t i = 0;
  double f = 0;
  std::string s;                              // Str; Global "module.name"
  std::vector<std::shared_ptr<Value>> items;  // Tuple, List
  std::vector<std::pair<std::shared_ptr<Value>, std::shared_ptr<Value>>> dict;  // Dict, in order
  std::shared_ptr<Storage> storage;                                             // StorageRef
  std::shared_ptr<TensorView> tensor;                                           // Tensor
};
using ValuePtr = std::shared_ptr<Value>;

const char* kindName(Value::Kind k) {
  switch (k) {
    case Value::None:
      return "None";
    case Value::Bool:
      return "bool";
    case Value::Int:
      return "int";
    case Value::Float:
      return "float";
    case Value::Str:
      return "str";
    case Value::Tuple:
      return "tuple";
    case Value::List:
      return "list";
    case Value::Dict:
      return "dict";
    case Value::Global:
      return "global";
    case Value::StorageRef:
      return "storage";
    case Value::Tensor:
      return "tensor";
  }
  return "?";
}

const std::map<std::string, DType>& storageTypes() {
  static const std::map<std::string, DType> types = {
      {"torch.FloatStorage", DType::F32},     {"torch.HalfStorage", DType::F16},
      {"torch.BFloat16Storage", DType::BF16}, {"torch.DoubleStorage", DType::F64},
      {"torch.LongStorage", DType::I64},      {"torch.IntStorage", DType::I32},
      {"torch.ShortStorage", DType::I16},     {"torch.CharStorage", DType::I8},
      {"torch.ByteStorage", DType::U8},       {"torch.BoolStorage", DType::BOOL}};
  return types;
}

bool allowedGlobal(const std::string& g) {
  return g == "collections.OrderedDict" || g == "torch._utils._rebuild_tensor_v2" ||
         g == "torch._utils._rebuild_parameter" || storageTypes().count(g) > 0;
}

class Unpickler {
 public:
  /// budget: the bytes of values, stack and memo the pickle may make before it is refused.
  Unpickler(const std::string& path, const uint8_t* data, size_t size, uint64_t budget)
      : m_path(path), m_p(data), m_size(size), m_budget(budget) {}
  // Every value ever made is held here, so cycles (a list appended to itself through the memo)
  // and deep chains are broken and freed flatly when the unpickler goes away.
  ~Unpickler() {
    for (auto& v : m_all) {
      v->items.clear();
      v->dict.clear();
    }
  }

  ValuePtr run() {
    while (true) {
      const size_t at = m_pos;
      const uint8_t op = byte();
      switch (op) {
        case 0x80:
          byte();
          break;  // PROTO
        case 0x95:
          take(8);
          break;   // FRAME
        case '.':  // STOP
          if (m_stack.size() != 1 || !m_marks.empty()) fail(m_path, "malformed pickle (STOP)");
          return m_stack.back();
        case '}':
          push(make(Value::Dict));
          break;  // EMPTY_DICT
        case ']':
          push(make(Value::List));
          break;  // EMPTY_LIST
        case ')':
          push(make(Value::Tuple));
          break;   // EMPTY_TUPLE
        case '(':  // MARK
          m_marks.push_back(m_stack.size());
          break;
        case 't': {  // TUPLE
          auto t = make(Value::Tuple);
          t->items = popToMark();
          charge(t->items.size() * sizeof(ValuePtr));
          push(t);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1/2/3
          const size_t n = op - 0x84;
          need(n);
          auto t = make(Value::Tuple);
          t->items.assign(m_stack.end() - long(n), m_stack.end());
          m_stack.resize(m_stack.size() - n);
          push(t);
          break;
        }
        case 'X':
          pushStr(le(4));
          break;  // BINUNICODE
        case 0x8c:
          pushStr(byte());
          break;  // SHORT_BINUNICODE
        case 0x8d:
          pushStr(le(8));
          break;  // BINUNICODE8
        case 'J':
          pushInt(int32_t(uint32_t(le(4))));
          break;  // BININT
        case 'K':
          pushInt(byte());
          break;  // BININT1
        case 'M':
          pushInt(int64_t(le(2)));
          break;      // BININT2
        case 0x8a: {  // LONG1
          const size_t n = byte();
          if (n > 8) fail(m_path, "malformed pickle (integer wider than 64 bits)");
          const uint8_t* b = take(n);
          uint64_t u = 0;
          for (size_t k = 0; k < n; ++k) u |= uint64_t(b[k]) << (8 * k);
          if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~uint64_t(0) << (8 * n);  // sign extend
          pushInt(int64_t(u));
          break;
        }
        case 'G': {  // BINFLOAT (big-endian)
          const uint8_t* b = take(8);
          uint64_t u = 0;
          for (int k = 0; k < 8; ++k) u = (u << 8) | b[k];
          auto v = make(Value::Float);
          std::memcpy(&v->f, &u, 8);
          push(v);
          break;
        }
        case 0x88:
        case 0x89: {  // NEWTRUE / NEWFALSE
          auto v = make(Value::Bool);
          v->i = op == 0x88;
          push(v);
          break;
        }
        case 'N':
          push(make(Value::None));
          break;  // NONE
        case 'q':
          memoPut(byte());
          break;  // BINPUT
        case 'r':
          memoPut(le(4));
          break;  // LONG_BINPUT
        case 0x94:
          memoPut(m_memo.size());
          break;  // MEMOIZE
        case 'h':
          memoGet(byte());
          break;  // BINGET
        case 'j':
          memoGet(le(4));
          break;     // LONG_BINGET
        case 's': {  // SETITEM
          need(3);
          ValuePtr v = pop(), k = pop();
          charge(2 * sizeof(ValuePtr));
          dictOf(m_stack.back())->dict.emplace_back(k, v);
          break;
        }
        case 'u': {  // SETITEMS
          auto items = popToMark();
          if (items.size() % 2) fail(m_path, "malformed pickle (SETITEMS)");
          need(1);
          auto d = dictOf(m_stack.back());
          charge(items.size() * sizeof(ValuePtr));
          for (size_t k = 0; k < items.size(); k += 2) d->dict.emplace_back(items[k], items[k + 1]);
          break;
        }
        case 'a': {  // APPEND
          need(2);
          ValuePtr v = pop();
          charge(sizeof(ValuePtr));
          listOf(m_stack.back())->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          auto items = popToMark();
          need(1);
          auto l = listOf(m_stack.back());
          charge(items.size() * sizeof(ValuePtr));
          l->items.insert(l->items.end(), items.begin(), items.end());
          break;
        }
        case 'Q': {  // BINPERSID
          need(1);
          push(persistentLoad(pop()));
          break;
        }
        case 'c': {  // GLOBAL
          const std::string module = line(), name = line();
          pushGlobal(module, name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL (protocol 4)
          need(2);
          ValuePtr name = pop(), module = pop();
          if (name->kind != Value::Str || module->kind != Value::Str)
            fail(m_path, "malformed pickle (STACK_GLOBAL)");
          pushGlobal(module->s, name->s);
          break;
        }
        case 'R': {  // REDUCE
          need(2);
          ValuePtr args = pop(), fn = pop();
          push(reduce(fn, args));
          break;
        }
        case 'b': {  // BUILD
          need(2);
          pop();  // the state; only a dict's (OrderedDict._metadata) is accepted, and ignored
          if (m_stack.back()->kind != Value::Dict)
            fail(m_path, std::string("refused: BUILD on a ") + kindName(m_stack.back()->kind) +
                             " (attnscope never runs code from a model file)");
          break;
        }
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail(m_path, std::string("refused: unsupported pickle opcode ") + hex + " at byte " +
                           std::to_string(at) + " (only tensors and containers are read)");
        }
      }
    }
  }

 private:
  // Counts what the pickle makes against the budget: values, stack slots, memo entries and
  // strings (popped slots are not given back, so the count bounds the work too).
  void charge(uint64_t bytes) {
    m_used += bytes;
    if (m_used > m_budget)
      fail(m_path, "malformed pickle (data.pkl would need more than " +
                       std::to_string(m_budget >> 20) +
                       " MiB to read, far more than a state dict of this size)");
  }
  ValuePtr make(Value::Kind k) {
    // The value, its shared_ptr control block and its slot in m_all.
    charge(sizeof(Value) + 32 + sizeof(ValuePtr));
    auto v = std::make_shared<Value>();
    v->kind = k;
    m_all.push_back(v);
    return v;
  }
  uint8_t byte() { return *take(1); }
  const uint8_t* take(uint64_t n) {
    if (n > m_size - m_pos) fail(m_path, "malformed pickle (truncated data.pkl)");
    const uint8_t* p = m_p + m_pos;
    m_pos += size_t(n);
    return p;
  }
  uint64_t le(int n) {
    const uint8_t* b = take(uint64_t(n));
    uint64_t u = 0;
    for (int k = 0; k < n; ++k) u |= uint64_t(b[k]) << (8 * k);
    return u;
  }
  std::string line() {
    const size_t start = m_pos;
    while (m_pos < m_size && m_p[m_pos] != '\n') {
      if (m_pos - start > 256) fail(m_path, "malformed pickle (GLOBAL name too long)");
      ++m_pos;
    }
    if (m_pos >= m_size) fail(m_path, "malformed pickle (truncated GLOBAL)");
    std::string s(reinterpret_cast<const char*>(m_p + start), m_pos - start);
    ++m_pos;
    return s;
  }
  void push(ValuePtr v) {
    charge(sizeof(ValuePtr));
    m_stack.push_back(std::move(v));
  }
  void need(size_t n) {
    const size_t floor = m_marks.empty() ? 0 : m_marks.back();
    if (m_stack.size() < floor + n) fail(m_path, "malformed pickle (stack underflow)");
  }
  ValuePtr pop() {
    ValuePtr v = std::move(m_stack.back());
    m_stack.pop_back();
    return v;
  }
  std::vector<ValuePtr> popToMark() {
    if (m_marks.empty()) fail(m_path, "malformed pickle (no MARK)");
    const size_t m = m_marks.back();
    m_marks.pop_back();
    std::vector<ValuePtr> out(m_stack.begin() + long(m), m_stack.end());
    m_stack.resize(m);
    return out;
  }
  void pushStr(uint64_t n) {
    const uint8_t* b = take(n);  // bounded by data.pkl's size before anything is allocated
    charge(n);
    auto v = make(Value::Str);
    v->s.assign(reinterpret_cast<const char*>(b), size_t(n));
    push(v);
  }
  void pushInt(int64_t i) {
    auto v = make(Value::Int);
    v->i = i;
    push(v);
  }
  void memoPut(uint64_t k) {
    need(1);
    charge(64);  // a map node
    m_memo[k] = m_stack.back();
  }
  void memoGet(uint64_t k) {
    auto it = m_memo.find(k);
    if (it == m_memo.end()) fail(m_path, "malformed pickle (memo key " + std::to_string(k) + ")");
    push(it->second);
  }
  ValuePtr dictOf(const ValuePtr& v) {
    if (v->kind != Value::Dict) fail(m_path, "malformed pickle (SETITEM on a non-dict)");
    return v;
  }
  ValuePtr listOf(const ValuePtr& v) {
    if (v->kind != Value::List) fail(m_path, "malformed pickle (APPEND on a non-list)");
    return v;
  }
  void pushGlobal(const std::string& module, const std::string& name) {
    const std::string g = module + "." + name;
    if (!allowedGlobal(g))
      fail(m_path, "refused: the pickle asks for " + g +
                       ", which is not a tensor or a container (attnscope never runs code from "
                       "a model file)");
    auto v = make(Value::Global);
    v->s = g;
    push(v);
  }

  int64_t intArg(const ValuePtr& v, const char* what) {
    if (v->kind != Value::Int) fail(m_path, std::string("malformed tensor (") + what + ")");
    return v->i;
  }
  std::vector<int64_t> intTuple(const ValuePtr& v, const char* what) {
    if (v->kind != Value::Tuple) fail(m_path, std::string("malformed tensor (") + what + ")");
    std::vector<int64_t> out;
    for (const auto& x : v->items) out.push_back(intArg(x, what));
    return out;
  }

  ValuePtr persistentLoad(const ValuePtr& pid) {
    // ('storage', <storage type>, key, location, numel)
    if (pid->kind != Value::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Value::Str ||
        pid->items[0]->s != "storage" || pid->items[1]->kind != Value::Global ||
        pid->items[2]->kind != Value::Str || pid->items[3]->kind != Value::Str ||
        pid->items[4]->kind != Value::Int)
      fail(m_path, "refused: unknown persistent id (only ('storage', type, key, location, numel))");
    auto type = storageTypes().find(pid->items[1]->s);
    if (type == storageTypes().end())
      fail(m_path, "refused: " + pid->items[1]->s + " is not a storage type");
    if (pid->items[4]->i < 0) fail(m_path, "malformed storage (negative size)");
    const std::string& key = pid->items[2]->s;
    auto& slot = m_storages[key];
    if (!slot) {
      slot = std::make_shared<Storage>();
      slot->dtype = type->second;
      slot->key = key;
      slot->numel = uint64_t(pid->items[4]->i);
    } else if (slot->dtype != type->second || slot->numel != uint64_t(pid->items[4]->i)) {
      fail(m_path, "malformed storage (" + key + " declared twice with different types)");
    }
    auto v = make(Value::StorageRef);
    v->storage = slot;
    return v;
  }

  ValuePtr reduce(const ValuePtr& fn, const ValuePtr& args) {
    if (fn->kind != Value::Global || args->kind != Value::Tuple)
      fail(m_path, "refused: REDUCE on a " + std::string(kindName(fn->kind)) +
                       " (attnscope never runs code from a model file)");
    const auto& a = args->items;
    if (fn->s == "collections.OrderedDict") {
      if (!a.empty()) fail(m_path, "malformed pickle (OrderedDict with arguments)");
      return make(Value::Dict);
    }
    if (fn->s == "torch._utils._rebuild_tensor_v2") {
      // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
      if (a.size() < 4 || a[0]->kind != Value::StorageRef)
        fail(m_path, "malformed tensor (_rebuild_tensor_v2 arguments)");
      auto t = std::make_shared<TensorView>();
      t->storage = a[0]->storage;
      t->offset = intArg(a[1], "storage offset");
      // Before the items are read: one memoized tuple of a million items could otherwise be
      // read again by every tensor that names it.
      if ((a[2]->kind == Value::Tuple && a[2]->items.size() > kMaxRank) ||
          (a[3]->kind == Value::Tuple && a[3]->items.size() > kMaxRank))
        fail(m_path, "malformed tensor (more than " + std::to_string(kMaxRank) + " dimensions)");
      t->shape = intTuple(a[2], "size");
      t->stride = intTuple(a[3], "stride");
      if (t->shape.size() != t->stride.size())
        fail(m_path, "malformed tensor (size and stride differ in length)");
      auto v = make(Value::Tensor);
      v->tensor = t;
      return v;
    }
    if (fn->s == "torch._utils._rebuild_parameter") {  // (tensor, requires_grad, backward_hooks)
      if (a.empty() || a[0]->kind != Value::Tensor)
        fail(m_path, "malformed tensor (_rebuild_parameter arguments)");
      return a[0];
    }
    fail(m_path, "refused: calling " + fn->s +
                     " (attnscope never runs code from a model file)");  // storage types
  }

  std::string m_path;
  const uint8_t* m_p;
  size_t m_size;
  size_t m_pos = 0;
  std::vector<ValuePtr> m_stack;
  std::vector<size_t> m_marks;
  std::map<uint64_t, ValuePtr> m_memo;
  std::map<std::string, std::shared_ptr<Storage>> m_storages;
  std::vector<ValuePtr> m_all;
  uint64_t m_budget;
  uint64_t m_used = 0;
};

// ---------------------------------------------------------------------------------------------

struct Leaf {
  std::string name;
  std::shared_ptr<TensorView> tensor;
};

/// What walking the state dict has seen: every dict once, every name once, and the bytes of the
/// names bounded, so that work follows the file's real size. A pickle can refer to one dict many
/// times through its memo: a chain of dicts each holding the next twice is 2^40 paths in 40 levels
/// of a 1.6 kB file.
struct Walk {
  std::set<const Value*> dicts;
  std::set<std::string> names;
  uint64_t nameBytes = 0;
  uint64_t maxNameBytes = 0;
};

/// A name for a message: a key may be a megabyte long.
std::string shortName(const std::string& name) {
  return name.size() <= 200 ? name : name.substr(0, 200) + "...";
}

void collect(const std::string& path, const ValuePtr& dict, const std::string& prefix, bool nested,
             int depth, Walk& walk, std::vector<Leaf>& out) {
  if (depth > kMaxNesting) fail(path, "malformed checkpoint (dicts nested too deeply)");
  if (!walk.dicts.insert(dict.get()).second)
    fail(path, "malformed state dict (" + (prefix.empty() ? "a dict" : shortName(prefix)) +
                   " is a dict that appears twice; a state dict is a tree)");
  for (const auto& [k, v] : dict->dict) {
    if (k->kind != Value::Str) fail(path, "malformed state dict (a key is not a string)");
    const std::string name = prefix + k->s;
    walk.nameBytes += name.size();
    if (walk.nameBytes > walk.maxNameBytes)
      fail(path, "malformed state dict (its names add up to more than the file holds)");
    if (!walk.names.insert(name).second)
      fail(path, "malformed state dict (" + shortName(name) + " twice)");
    if (v->kind == Value::Tensor) {
      out.push_back({name, v->tensor});
    } else if (v->kind == Value::Dict && nested) {
      collect(path, v, name + ".", nested, depth + 1, walk, out);
    } else {
      fail(path, "malformed state dict (" + shortName(name) + " is a " + kindName(v->kind) +
                     ", not a tensor)");
    }
  }
}

bool isWrapperKey(const std::string& k) { return k == "state_dict" || k == "model"; }

}  // namespace

std::vector<PickledTensor> readStateDictPickle(const std::string& path, const uint8_t* data,
                                               std::size_t size, uint64_t fileSize) {
  if (fileSize < size) fileSize = size;
  Unpickler unpickler(path, data, size, kPickleBookkeepingBytes + fileSize);
  ValuePtr top = unpickler.run();
  if (top->kind != Value::Dict)
    fail(path, std::string("malformed checkpoint (the top level is a ") + kindName(top->kind) +
                   ", not a state dict)");

  std::vector<Leaf> leaves;
  Walk walk;
  // Names are keys of the pickle, with a wrapper's prefixes: a few times its size at most.
  walk.maxNameBytes = 4 * uint64_t(size) + (1u << 20);
  const Value* wrapped = nullptr;
  bool allTensors = true;
  for (const auto& [k, v] : top->dict) {
    if (v->kind != Value::Tensor) allTensors = false;
    if (!wrapped && k->kind == Value::Str && isWrapperKey(k->s) && v->kind == Value::Dict)
      wrapped = v.get();
  }
  if (!allTensors && wrapped) {
    for (const auto& [k, v] : top->dict)
      if (v.get() == wrapped) collect(path, v, "", true, 0, walk, leaves);
  } else {
    collect(path, top, "", false, 0, walk, leaves);
  }

  std::vector<PickledTensor> out;
  out.reserve(leaves.size());
  for (const Leaf& leaf : leaves) {
    const TensorView& t = *leaf.tensor;
    PickledTensor p;
    p.name = leaf.name;
    p.dtype = t.storage->dtype;
    p.storageKey = t.storage->key;
    p.storageNumel = t.storage->numel;
    p.offset = t.offset;
    p.shape = t.shape;
    p.stride = t.stride;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace attnscope
