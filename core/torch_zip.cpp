#include "core/torch_zip.hpp"

#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "core/text.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

constexpr const char* kTorchZipHint = "the file is corrupt or truncated; re-save it with torch.save";

template <class T>
T readLE(std::span<const std::byte> bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);  // little-endian hosts, as the formats are
  return value;
}

// ---- zip -------------------------------------------------------------------------------------------------

struct ZipEntry {
  uint64_t dataOffset = 0, size = 0;
};

class ZipDirectory {
 public:
  ZipDirectory(std::span<const std::byte> file, std::string label) : m_file(file), m_label(std::move(label)) {
    const uint64_t eocd = findEndOfDirectory();
    uint64_t entries = readLE<uint16_t>(m_file, eocd + 10), offset = readLE<uint32_t>(m_file, eocd + 16);
    if (entries == 0xFFFF || offset == 0xFFFFFFFF) {  // ZIP64: the locator sits just before the record
      need(eocd >= 20 && readLE<uint32_t>(m_file, eocd - 20) == 0x07064b50,
           "the ZIP64 end-of-directory locator", eocd);
      const uint64_t record = readLE<uint64_t>(m_file, eocd - 12);
      need(fits(record, 56) && readLE<uint32_t>(m_file, record) == 0x06064b50,
           "the ZIP64 end-of-directory record", record);
      entries = readLE<uint64_t>(m_file, record + 32);
      offset = readLE<uint64_t>(m_file, record + 48);
    }
    for (uint64_t i = 0; i < entries; ++i) offset = readCentralEntry(offset);
  }

  const ZipEntry* find(const std::string& name) const {
    const auto it = m_entries.find(name);
    return it == m_entries.end() ? nullptr : &it->second;
  }
  const std::map<std::string, ZipEntry>& entries() const { return m_entries; }

 private:
  // Whether n bytes from `at` (a value read from the file: anything up to 2^64) lie inside it.
  bool fits(uint64_t at, uint64_t n) const { return at <= m_file.size() && m_file.size() - at >= n; }
  void need(bool ok, const std::string& what, uint64_t at) const {
    if (!ok)
      throw Error({.what = "malformed zip archive",
                   .where = m_label + " at byte " + std::to_string(at),
                   .expected = what,
                   .hint = kTorchZipHint});
  }
  uint64_t findEndOfDirectory() const {
    const uint64_t size = m_file.size();
    need(size >= 22, "an end-of-central-directory record (22 bytes)", 0);
    const uint64_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;  // after it, at most a comment
    for (uint64_t at = size - 22;; --at) {
      if (readLE<uint32_t>(m_file, at) == 0x06054b50) return at;
      if (at == lowest) break;
    }
    need(false, "an end-of-central-directory record", size);
    return 0;
  }
  uint64_t readCentralEntry(uint64_t at) {
    need(fits(at, 46) && readLE<uint32_t>(m_file, at) == 0x02014b50, "a central directory entry", at);
    const auto method = readLE<uint16_t>(m_file, at + 10);
    uint64_t compressed = readLE<uint32_t>(m_file, at + 20), size = readLE<uint32_t>(m_file, at + 24);
    const uint64_t nameLength = readLE<uint16_t>(m_file, at + 28),
                   extraLength = readLE<uint16_t>(m_file, at + 30),
                   commentLength = readLE<uint16_t>(m_file, at + 32);
    uint64_t local = readLE<uint32_t>(m_file, at + 42);
    need(fits(at, 46 + nameLength + extraLength + commentLength), "a central directory entry inside the file",
         at);
    const uint64_t end = at + 46 + nameLength + extraLength + commentLength,
                   extraEnd = at + 46 + nameLength + extraLength;
    std::string name(reinterpret_cast<const char*>(m_file.data() + at + 46), nameLength);
    // The ZIP64 extra field holds the 64-bit values of the fields saturated above, in this order.
    for (uint64_t e = at + 46 + nameLength; e + 4 <= extraEnd;) {
      const auto id = readLE<uint16_t>(m_file, e), length = readLE<uint16_t>(m_file, e + 2);
      uint64_t field = e + 4;
      if (id == 0x0001) {
        for (uint64_t* value : {&size, &compressed, &local})
          if (*value == 0xFFFFFFFF && field + 8 <= e + 4 + length && field + 8 <= extraEnd) {
            *value = readLE<uint64_t>(m_file, field);
            field += 8;
          }
      }
      e += 4 + length;
    }
    if (method != 0)
      throw Error({.what = "compressed zip entry",
                   .where = m_label + ": " + name,
                   .expected = "stored entries (method 0), as torch.save writes them",
                   .found = "compression method " + std::to_string(method),
                   .hint = "re-save the checkpoint with torch.save"});
    need(fits(local, 30) && readLE<uint32_t>(m_file, local) == 0x04034b50, "a local file header", local);
    const uint64_t data =
        local + 30 + readLE<uint16_t>(m_file, local + 26) + uint64_t{readLE<uint16_t>(m_file, local + 28)};
    need(fits(data, size) && compressed == size, "entry data inside the file: " + name, local);
    m_entries[name] = {data, size};
    return end;
  }

  std::span<const std::byte> m_file;
  std::string m_label;
  std::map<std::string, ZipEntry> m_entries;
};

// ---- the restricted unpickler ----------------------------------------------------------------------------

struct Value;
using ValuePtr = Value*;  // owned by the Unpickler's arena: no recursive destruction, no leaked cycles

struct Global {
  std::string module, name;
  std::string full() const { return module + "." + name; }
};
struct StorageRef {
  DType dtype;
  std::string key;
  uint64_t numel;
};
struct TensorRefP {
  std::shared_ptr<StorageRef> storage;
  uint64_t offset = 0;
  std::vector<int64_t> shape, stride;
};
struct Mark {};
using Items = std::vector<ValuePtr>;
using Pairs = std::vector<std::pair<ValuePtr, ValuePtr>>;

struct Value {
  std::variant<std::monostate, bool, int64_t, double, std::string, Items /*tuple or list*/, Pairs, Global,
               std::shared_ptr<StorageRef>, TensorRefP, Mark>
      v;
  bool isList = false;  // Items: a list (appendable) rather than a tuple
};

// Storage types torch.save names for each element type (torch/storage.py's legacy typed storages).
std::optional<DType> storageDType(const std::string& name) {
  static const std::map<std::string, DType> types = {
      {"FloatStorage", DType::F32},  {"HalfStorage", DType::F16}, {"BFloat16Storage", DType::BF16},
      {"DoubleStorage", DType::F64}, {"LongStorage", DType::I64}, {"IntStorage", DType::I32},
      {"ShortStorage", DType::I16},  {"CharStorage", DType::I8},  {"ByteStorage", DType::U8},
      {"BoolStorage", DType::Bool}};
  const auto it = types.find(name);
  return it == types.end() ? std::nullopt : std::optional(it->second);
}

class Unpickler {
 public:
  Unpickler(std::span<const std::byte> data, std::string label) : m_data(data), m_label(std::move(label)) {}

  ValuePtr load() {
    for (;;) {
      const auto op = static_cast<uint8_t>(byte());
      switch (op) {
        case 0x80:
          byte();
          break;  // PROTO
        case 0x95:
          take(8);
          break;  // FRAME
        case '.':
          return pop();  // STOP
        case '(':
          push(make(Mark{}));
          break;  // MARK
        case ')':
          push(make(Items{}));
          break;  // EMPTY_TUPLE
        case ']':
          push(list(Items{}));
          break;  // EMPTY_LIST
        case '}':
          push(make(Pairs{}));
          break;  // EMPTY_DICT
        case 'N':
          push(make(std::monostate{}));
          break;  // NONE
        case 0x88:
          push(make(true));
          break;  // NEWTRUE
        case 0x89:
          push(make(false));
          break;  // NEWFALSE
        case 'K':
          push(make(int64_t{static_cast<uint8_t>(byte())}));
          break;  // BININT1
        case 'M':
          push(make(int64_t{readLE<uint16_t>(take(2), 0)}));
          break;  // BININT2
        case 'J':
          push(make(int64_t{readLE<int32_t>(take(4), 0)}));
          break;  // BININT
        case 0x8a:
          push(make(longInteger(static_cast<uint8_t>(byte()))));
          break;  // LONG1
        case 'G':
          push(make(bigEndianDouble()));
          break;  // BINFLOAT
        case 'X':
          push(make(text(readLE<uint32_t>(take(4), 0))));
          break;  // BINUNICODE
        case 0x8c:
          push(make(text(static_cast<uint8_t>(byte()))));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push(make(text(readLE<uint64_t>(take(8), 0))));
          break;  // BINUNICODE8
        case 'q':
          m_memo[static_cast<uint8_t>(byte())] = top();
          break;  // BINPUT
        case 'r':
          m_memo[readLE<uint32_t>(take(4), 0)] = top();
          break;  // LONG_BINPUT
        case 0x94:
          m_memo[m_memo.size()] = top();
          break;  // MEMOIZE
        case 'h':
          push(memo(static_cast<uint8_t>(byte())));
          break;  // BINGET
        case 'j':
          push(memo(readLE<uint32_t>(take(4), 0)));
          break;  // LONG_BINGET
        case 't':
          push(make(popToMark()));
          break;  // TUPLE
        case 0x85:
          push(make(Items{pop()}));
          break;  // TUPLE1
        case 0x86: {
          auto b = pop(), a = pop();
          push(make(Items{a, b}));
          break;
        }  // TUPLE2
        case 0x87: {
          auto c = pop(), b = pop(), a = pop();
          push(make(Items{a, b, c}));
          break;
        }  // TUPLE3
        case 'l':
          push(list(popToMark()));
          break;  // LIST
        case 'a': {
          auto v = pop();
          as<Items>(top(), "a list").push_back(v);
          break;
        }  // APPEND
        case 'e': {
          auto items = popToMark();
          auto& l = as<Items>(top(), "a list");
          l.insert(l.end(), items.begin(), items.end());
          break;
        }  // APPENDS
        case 's': {
          auto v = pop(), k = pop();
          as<Pairs>(top(), "a dict").emplace_back(k, v);
          break;
        }  // SETITEM
        case 'u':
          setItems();
          break;     // SETITEMS
        case 'c': {  // GLOBAL: "module\nname\n", read in that order
          std::string module = line();
          push(global(module, line()));
          break;
        } break;  // GLOBAL
        case 0x93: {
          auto name = pop(), module = pop();
          push(global(as<std::string>(module, "a module name"), as<std::string>(name, "a name")));
          break;
        }  // STACK_GLOBAL
        case 'R': {
          auto args = pop(), callable = pop();
          push(reduce(callable, args));
          break;
        }  // REDUCE
        case 'b':
          pop();
          break;  // BUILD: the state of an OrderedDict (its _metadata) is not weights
        case 'Q':
          push(persistentLoad(pop()));
          break;  // BINPERSID
        default:
          fail("a pickle opcode of a state dict", "opcode 0x" + hex(op));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& expected, const std::string& found) const {
    throw Error({.what = "unreadable pickle in a PyTorch checkpoint",
                 .where = m_label + " at byte " + std::to_string(m_at),
                 .expected = expected,
                 .found = found,
                 .hint = "only state dicts of tensors are read (what torch.load(weights_only=True) allows)"});
  }
  static std::string hex(unsigned v) {
    const char* digits = "0123456789abcdef";
    return std::string{digits[(v >> 4) & 15], digits[v & 15]};
  }
  std::byte byte() { return take(1)[0]; }
  std::span<const std::byte> take(uint64_t n) {
    if (n > m_data.size() - m_at) fail(std::to_string(n) + " more bytes", "the end of data.pkl");
    const auto out = m_data.subspan(m_at, n);
    m_at += n;
    return out;
  }
  std::string text(uint64_t n) {
    const auto bytes = take(n);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
  std::string line() {
    std::string out;
    for (char c; (c = static_cast<char>(byte())) != '\n';) out += c;
    return out;
  }
  int64_t longInteger(uint8_t n) {
    if (n > 8) fail("an integer of at most 8 bytes", std::to_string(n) + " bytes");
    const auto bytes = take(n);
    uint64_t v = 0;
    for (uint8_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
    if (n > 0 && n < 8 && (static_cast<uint8_t>(bytes[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign
    return static_cast<int64_t>(v);
  }
  double bigEndianDouble() {
    const auto bytes = take(8);
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = bits << 8 | static_cast<uint8_t>(bytes[i]);
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  void push(ValuePtr v) {
    if (m_stack.size() > 1'000'000) fail("a stack of a state dict's depth", "over a million entries");
    m_stack.push_back(std::move(v));
  }
  ValuePtr pop() {
    if (m_stack.empty()) fail("a value on the stack", "an empty stack");
    ValuePtr v = std::move(m_stack.back());
    m_stack.pop_back();
    return v;
  }
  const ValuePtr& top() {
    if (m_stack.empty()) fail("a value on the stack", "an empty stack");
    return m_stack.back();
  }
  ValuePtr memo(uint64_t key) {
    const auto it = m_memo.find(key);
    if (it == m_memo.end()) fail("a memoised value", "memo key " + std::to_string(key) + " never stored");
    return it->second;
  }
  Items popToMark() {
    Items items;
    for (;;) {
      ValuePtr v = pop();
      if (std::holds_alternative<Mark>(v->v)) break;
      items.push_back(std::move(v));
    }
    return {items.rbegin(), items.rend()};
  }
  // Every value lives in the arena until the Unpickler goes: a pickle of N bytes makes at most N values.
  template <class T>
  ValuePtr make(T value) {
    Value& v = m_values.emplace_back();
    v.v = std::move(value);
    return &v;
  }
  ValuePtr list(Items items) {
    ValuePtr p = make(std::move(items));
    p->isList = true;
    return p;
  }
  void setItems() {
    Items items = popToMark();
    if (items.size() % 2) fail("key-value pairs", std::to_string(items.size()) + " items");
    auto& pairs = as<Pairs>(top(), "a dict");
    for (size_t i = 0; i < items.size(); i += 2) pairs.emplace_back(items[i], items[i + 1]);
  }
  template <class T>
  T& as(const ValuePtr& v, const char* what) {
    if (!std::holds_alternative<T>(v->v)) fail(what, "another kind of value");
    return std::get<T>(v->v);
  }
  ValuePtr global(const std::string& module, const std::string& name) {
    const Global g{module, name};
    const std::string full = g.full();
    const bool allowed = full == "collections.OrderedDict" || full == "torch._utils._rebuild_tensor_v2" ||
                         full == "torch._utils._rebuild_parameter" ||
                         (module == "torch" && storageDType(name).has_value());
    if (!allowed)
      throw Error(
          {.what = "a PyTorch checkpoint asks to run code ShareLens does not run",
           .where = m_label + " at byte " + std::to_string(m_at),
           .expected = "tensors, storages and (ordered) dicts only",
           .found = "the global " + full,
           .hint = "save the weights alone (model.state_dict()), or convert the file to safetensors"});
    return make(g);
  }
  ValuePtr reduce(const ValuePtr& callable, const ValuePtr& argsValue) {
    const std::string f = as<Global>(callable, "a callable global").full();
    Items& args = as<Items>(argsValue, "an argument tuple");
    if (f == "collections.OrderedDict") return make(Pairs{});
    if (f == "torch._utils._rebuild_parameter") {
      if (args.empty()) fail("a tensor to make a parameter of", "no arguments");
      return args[0];
    }
    if (f != "torch._utils._rebuild_tensor_v2")
      fail("a call that builds a dict or a tensor", "a call of " + f);
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    if (args.size() < 4) fail("_rebuild_tensor_v2's arguments", std::to_string(args.size()) + " arguments");
    TensorRefP t;
    t.storage = as<std::shared_ptr<StorageRef>>(args[0], "a storage");
    t.offset = static_cast<uint64_t>(as<int64_t>(args[1], "a storage offset"));
    for (const ValuePtr& d : as<Items>(args[2], "a size tuple")) t.shape.push_back(as<int64_t>(d, "a size"));
    for (const ValuePtr& d : as<Items>(args[3], "a stride tuple"))
      t.stride.push_back(as<int64_t>(d, "a stride"));
    return make(t);
  }
  ValuePtr persistentLoad(const ValuePtr& pid) {
    Items& id = as<Items>(pid, "a persistent id tuple");
    if (id.size() != 5 || as<std::string>(id[0], "'storage'") != "storage")
      fail("('storage', type, key, location, numel)",
           "a persistent id of " + std::to_string(id.size()) + " items");
    const Global& type = as<Global>(id[1], "a storage type");
    const std::optional<DType> dtype = type.module == "torch" ? storageDType(type.name) : std::nullopt;
    if (!dtype) fail("a storage type (torch.FloatStorage, ...)", "the global " + type.full());
    auto s = std::make_shared<StorageRef>();
    s->dtype = *dtype;
    s->key = as<std::string>(id[2], "a storage key");
    const int64_t numel = as<int64_t>(id[4], "a storage size");
    if (numel < 0) fail("a storage size >= 0", std::to_string(numel));
    s->numel = static_cast<uint64_t>(numel);
    return make(s);
  }

  std::span<const std::byte> m_data;
  std::string m_label;
  uint64_t m_at = 0;
  std::deque<Value> m_values;  // the arena (stable addresses)
  std::vector<ValuePtr> m_stack;
  std::map<uint64_t, ValuePtr> m_memo;
};

// ---- tensors ---------------------------------------------------------------------------------------------

// The tensors of nested dicts, named with dots. Each dict is entered once (a pickle's memo can make a dict
// hold itself, or the same dict many times over), at most 16 deep.
void collectTensors(const ValuePtr& value, const std::string& prefix,
                    std::vector<std::pair<std::string, TensorRefP>>& out, std::set<const Value*>& entered,
                    int depth) {
  if (depth > 16) return;
  if (const auto* t = std::get_if<TensorRefP>(&value->v)) {
    out.emplace_back(prefix, *t);
  } else if (const auto* pairs = std::get_if<Pairs>(&value->v)) {
    if (!entered.insert(value).second) return;
    for (const auto& [key, item] : *pairs)
      if (const auto* name = std::get_if<std::string>(&key->v))
        collectTensors(item, prefix.empty() ? *name : prefix + "." + *name, out, entered, depth + 1);
  }
}

}  // namespace

bool looksLikeZip(std::span<const std::byte> head) {
  return head.size() >= 4 && readLE<uint32_t>(head, 0) == 0x04034b50;
}

std::unique_ptr<SafetensorsFile> openTorchZip(const fs::path& path) {
  MappedFile file = MappedFile::open(path);
  const std::string label = path.string();
  const std::span<const std::byte> bytes = file.bytes();
  const ZipDirectory zip(bytes, label);
  std::string archive;  // the entries' folder, named by whoever saved it
  for (const auto& [name, entry] : zip.entries())
    if (name.size() >= 9 && name.ends_with("/data.pkl") && name.find('/') == name.size() - 9)
      archive = name.substr(0, name.size() - 8);
  if (archive.empty())
    throw Error({.what = "not a PyTorch checkpoint",
                 .where = label,
                 .expected = "a zip with ARCHIVE/data.pkl (torch.save since PyTorch 1.6)",
                 .found = std::to_string(zip.entries().size()) + " entries, none of them data.pkl",
                 .hint = "ShareLens reads PyTorch zip checkpoints, safetensors and llama2.c files"});
  const ZipEntry& pickle = *zip.find(archive + "data.pkl");
  Unpickler unpickler(bytes.subspan(pickle.dataOffset, pickle.size), label + ": " + archive + "data.pkl");
  const ValuePtr root = unpickler.load();  // lives as long as the unpickler
  std::vector<std::pair<std::string, TensorRefP>> tensors;
  std::set<const Value*> entered;
  collectTensors(root, "", tensors, entered, 0);
  if (tensors.empty())
    throw Error({.what = "no tensors in the PyTorch checkpoint",
                 .where = label,
                 .expected = "a state dict: a dict of names to tensors",
                 .found = "nothing that is a tensor",
                 .hint = "save model.state_dict()"});
  SafetensorsHeader header;
  header.dataOffset = 0;  // TensorInfo offsets are the file's own
  for (auto& [name, t] : tensors) {
    // A name goes into reports, JSON and config files: UTF-8, as pickle's unicode strings are meant to be
    // (not quoted here: its bytes are what is wrong).
    if (!isValidUtf8(name))
      throw Error({.what = "a tensor name is not valid UTF-8",
                   .where = label + ": " + archive + "data.pkl",
                   .expected = "UTF-8 text",
                   .found = std::to_string(name.size()) + " bytes that are not",
                   .hint = kTorchZipHint});
    const std::string where = label + ": tensor '" + name + "'";
    const ZipEntry* storage = zip.find(archive + "data/" + t.storage->key);
    if (!storage)
      throw Error({.what = "tensor storage missing from the archive",
                   .where = where,
                   .expected = "the entry " + archive + "data/" + t.storage->key,
                   .hint = kTorchZipHint});
    TensorInfo info;
    info.name = name;
    info.dtype = t.storage->dtype;
    info.shape = t.shape;
    info.numel = 1;
    int64_t expected = 1;
    for (size_t i = t.shape.size(); i-- > 0;) {
      if (t.shape[i] < 0 || i >= t.stride.size() || (t.shape[i] > 1 && t.stride[i] != expected))
        throw Error({.what = "non-contiguous tensor",
                     .where = where,
                     .expected = "row-major strides for its shape",
                     .found = "a view with other strides",
                     .hint = "save contiguous tensors (tensor.contiguous()) in the state dict"});
      if (t.shape[i] > 0 && info.numel > t.storage->numel / static_cast<uint64_t>(t.shape[i]))
        throw Error({.what = "tensor larger than its storage",
                     .where = where,
                     .expected = "at most " + std::to_string(t.storage->numel) + " elements",
                     .found = "shape " + shapeToString(t.shape),
                     .hint = kTorchZipHint});
      expected *= t.shape[i];  // no overflow: bounded by the storage's size just checked
      info.numel *= static_cast<uint64_t>(t.shape[i]);
    }
    const uint64_t element = dtypeSize(info.dtype);
    if (t.offset > t.storage->numel || info.numel > t.storage->numel - t.offset ||
        t.storage->numel > storage->size / element)  // no product: numel comes from the pickle
      throw Error(
          {.what = "tensor outside its storage",
           .where = where,
           .expected = "elements within its storage of " + std::to_string(storage->size / element),
           .found = "offset " + std::to_string(t.offset) + " + " + std::to_string(info.numel) + " elements",
           .hint = kTorchZipHint});
    info.dataBegin = storage->dataOffset + t.offset * element;
    info.dataEnd = info.dataBegin + info.numel * element;
    header.tensors.push_back(std::move(info));
  }
  return SafetensorsFile::fromLayout(std::move(file), std::move(header));
}

}  // namespace sharelens
