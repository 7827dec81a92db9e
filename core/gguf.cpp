#include "core/gguf.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "core/text.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kMaxTensors = 200'000;
constexpr uint64_t kMaxKeyValues = 1'000'000;
constexpr uint64_t kMaxNameBytes = 65'535;
constexpr uint32_t kMaxDims = 4;                 // GGML_MAX_DIMS
constexpr uint64_t kMaxDim = uint64_t{1} << 40;  // far above any tensor, far below overflow of a product
constexpr int kMaxArrayDepth = 8;                // arrays of arrays are allowed; their nesting is bounded
constexpr uint64_t kKeptArrayLength = 4096;      // numeric arrays up to this long are kept (per-layer counts)
constexpr const char* kGgufHint = "the file is corrupt, truncated, or not a GGUF file";
constexpr const char* kReadTypes = "F32, F16, BF16, F64, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K";
constexpr uint64_t kMaxKeptElements = 65'536;  // numeric array elements kept as JSON, the whole file
constexpr uint64_t kMaxPermutedRows = uint64_t{1} << 22;  // an attention matrix's rows, far above any model

// GGUF metadata value types (gguf.md, gguf_metadata_value_type).
enum ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12
};

uint64_t scalarBytes(uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool:
      return 1;
    case kU16:
    case kI16:
      return 2;
    case kU32:
    case kI32:
    case kF32:
      return 4;
    case kU64:
    case kI64:
    case kF64:
      return 8;
    default:
      return 0;  // string, array, unknown
  }
}

// ggml_type numbers (ggml.h) and their names, for messages; the ones read map to a DType or to blocks.
struct GgmlType {
  uint32_t id;
  const char* name;
  std::optional<DType> dtype;  // read as plain elements
  GgmlBlocks blocks = GgmlBlocks::None;
};
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", DType::F32},
    {1, "F16", DType::F16},
    {2, "Q4_0", {}, GgmlBlocks::Q4_0},
    {3, "Q4_1", {}, GgmlBlocks::Q4_1},
    {6, "Q5_0", {}, GgmlBlocks::Q5_0},
    {7, "Q5_1", {}, GgmlBlocks::Q5_1},
    {8, "Q8_0", {}, GgmlBlocks::Q8_0},
    {9, "Q8_1", {}},
    {10, "Q2_K", {}},
    {11, "Q3_K", {}},
    {12, "Q4_K", {}, GgmlBlocks::Q4_K},
    {13, "Q5_K", {}, GgmlBlocks::Q5_K},
    {14, "Q6_K", {}, GgmlBlocks::Q6_K},
    {15, "Q8_K", {}},
    {16, "IQ2_XXS", {}},
    {17, "IQ2_XS", {}},
    {18, "IQ3_XXS", {}},
    {19, "IQ1_S", {}},
    {20, "IQ4_NL", {}},
    {21, "IQ3_S", {}},
    {22, "IQ2_S", {}},
    {23, "IQ4_XS", {}},
    {24, "I8", {}},
    {25, "I16", {}},
    {26, "I32", {}},
    {27, "I64", {}},
    {28, "F64", DType::F64},
    {29, "IQ1_M", {}},
    {30, "BF16", DType::BF16},
    {34, "TQ1_0", {}},
    {35, "TQ2_0", {}},
    {39, "MXFP4", {}},
};

const GgmlType* ggmlType(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

// A bounds-checked little-endian cursor over the header; every read names what it was reading.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, std::string label) : m_bytes(bytes), m_label(std::move(label)) {}

  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, m_bytes.data() + m_at, sizeof value);
    m_at += sizeof value;
    return value;
  }
  std::string_view string(const std::string& what, uint64_t maxBytes) {
    const auto length = read<uint64_t>(what + " length");
    if (length > maxBytes)
      throw Error({.what = "GGUF string too long",
                   .where = m_label + ": " + what,
                   .expected = "at most " + std::to_string(maxBytes) + " bytes",
                   .found = std::to_string(length) + " bytes",
                   .hint = kGgufHint});
    need(length, what);
    const std::string_view s(reinterpret_cast<const char*>(m_bytes.data() + m_at), length);
    m_at += length;
    return s;
  }
  // A string that is kept (a key, a tensor name, a metadata value): it must be UTF-8, as gguf.md says,
  // since it goes into JSON, reports and config.json.
  std::string_view text(const std::string& what, uint64_t maxBytes) {
    const std::string_view s = string(what, maxBytes);
    if (!isValidUtf8(s))
      throw Error({.what = "GGUF string is not valid UTF-8",
                   .where = m_label + ": " + what,
                   .expected = "UTF-8 text",
                   .found = std::to_string(s.size()) + " bytes that are not",
                   .hint = kGgufHint});
    return s;
  }
  // Whether `n` more numeric array elements may be kept as JSON (a hostile file of many short arrays
  // would otherwise cost sixteen times its size in memory).
  bool keep(uint64_t n) {
    if (n > kMaxKeptElements - m_kept) return false;
    m_kept += n;
    return true;
  }
  void skip(uint64_t bytes, const std::string& what) {
    need(bytes, what);
    m_at += bytes;
  }
  uint64_t remaining() const { return m_bytes.size() - m_at; }
  uint64_t offset() const { return m_at; }
  const std::string& label() const { return m_label; }

 private:
  void need(uint64_t bytes, const std::string& what) const {
    if (bytes > remaining())
      throw Error({.what = "GGUF header ends early",
                   .where = m_label + ": " + what + " at byte " + std::to_string(m_at),
                   .expected = std::to_string(bytes) + " more bytes",
                   .found = std::to_string(remaining()),
                   .hint = kGgufHint});
  }
  std::span<const std::byte> m_bytes;
  std::string m_label;
  uint64_t m_at = 0;
  uint64_t m_kept = 0;
};

// A metadata value as kept: scalars and short numeric arrays as JSON; other arrays by length only.
struct MetaValue {
  uint32_t type = 0;
  Json value;                // null for arrays not kept
  uint32_t elementType = 0;  // arrays
  uint64_t arrayLength = 0;  // arrays
};

Json readScalar(Cursor& in, uint32_t type, const std::string& what) {
  switch (type) {
    case kU8:
      return in.read<uint8_t>(what);
    case kI8:
      return in.read<int8_t>(what);
    case kU16:
      return in.read<uint16_t>(what);
    case kI16:
      return in.read<int16_t>(what);
    case kU32:
      return in.read<uint32_t>(what);
    case kI32:
      return in.read<int32_t>(what);
    case kF32: {  // the shortest decimal that reads back as this float: 1e-06, not 9.99999997e-07
      const auto f = in.read<float>(what);
      std::array<char, 32> text{};
      const auto end = std::to_chars(text.data(), text.data() + text.size(), f).ptr;
      double shortest = f;
      std::from_chars(text.data(), end, shortest);
      return shortest;
    }
    case kU64:
      return in.read<uint64_t>(what);
    case kI64:
      return in.read<int64_t>(what);
    case kF64:
      return in.read<double>(what);
    case kBool: {
      const auto b = in.read<uint8_t>(what);
      if (b > 1)
        throw Error({.what = "GGUF bool is neither 0 nor 1",
                     .where = in.label() + ": " + what,
                     .expected = "0 or 1",
                     .found = std::to_string(b),
                     .hint = kGgufHint});
      return b == 1;
    }
    case kString:
      return std::string(in.text(what, in.remaining()));
  }
  throw Error({.what = "unknown GGUF metadata value type",
               .where = in.label() + ": " + what,
               .expected = "0..12 (u8 ... f64)",
               .found = std::to_string(type),
               .hint = kGgufHint});
}

MetaValue readValue(Cursor& in, uint32_t type, const std::string& what, int depth);

// An array's elements: fixed-size ones are skipped in one step unless short and kept; strings and arrays one
// by one (each at least 8 bytes, so their count is bounded by the bytes left).
MetaValue readArray(Cursor& in, const std::string& what, int depth) {
  if (depth >= kMaxArrayDepth)
    throw Error({.what = "GGUF arrays nested too deep",
                 .where = in.label() + ": " + what,
                 .expected = "at most " + std::to_string(kMaxArrayDepth) + " levels",
                 .found = "more",
                 .hint = kGgufHint});
  MetaValue v;
  v.type = kArray;
  v.elementType = in.read<uint32_t>(what + " element type");
  v.arrayLength = in.read<uint64_t>(what + " length");
  if (const uint64_t size = scalarBytes(v.elementType); size > 0) {
    if (v.arrayLength > in.remaining() / size)
      throw Error({.what = "GGUF array longer than the file",
                   .where = in.label() + ": " + what,
                   .expected = "at most " + std::to_string(in.remaining() / size) + " elements",
                   .found = std::to_string(v.arrayLength),
                   .hint = kGgufHint});
    if (v.arrayLength <= kKeptArrayLength && in.keep(v.arrayLength)) {
      v.value = Json::array();
      for (uint64_t i = 0; i < v.arrayLength; ++i) v.value.push_back(readScalar(in, v.elementType, what));
    } else {
      in.skip(v.arrayLength * size, what);
    }
    return v;
  }
  if (v.elementType != kString && v.elementType != kArray)
    readScalar(in, v.elementType, what + " element type");  // throws: unknown type
  if (v.arrayLength > in.remaining() / 8)
    throw Error({.what = "GGUF array longer than the file",
                 .where = in.label() + ": " + what,
                 .expected = "at most " + std::to_string(in.remaining() / 8) + " elements",
                 .found = std::to_string(v.arrayLength),
                 .hint = kGgufHint});
  for (uint64_t i = 0; i < v.arrayLength; ++i) {
    if (v.elementType == kString)
      in.string(what + "[" + std::to_string(i) + "]", in.remaining());
    else
      readValue(in, kArray, what + "[" + std::to_string(i) + "]", depth + 1);
  }
  return v;
}

MetaValue readValue(Cursor& in, uint32_t type, const std::string& what, int depth) {
  if (type == kArray) return readArray(in, what, depth);
  MetaValue v;
  v.type = type;
  v.value = readScalar(in, type, what);
  return v;
}

struct RawTensor {
  std::string name;          // as in the file
  std::vector<uint64_t> ne;  // ne[0] first
  const GgmlType* type = nullptr;
  uint64_t offset = 0;  // from the data section
  uint64_t numel = 1;
  uint64_t bytes = 0;
};

struct Parsed {
  uint32_t version = 0;
  std::map<std::string, MetaValue> metadata;
  std::vector<RawTensor> tensors;
  uint64_t dataOffset = 0;
};

[[noreturn]] void bad(const std::string& where, const std::string& what, std::string expected,
                      std::string found, const std::string& hint = kGgufHint) {
  throw Error({.what = what,
               .where = where,
               .expected = std::move(expected),
               .found = std::move(found),
               .hint = hint});
}

RawTensor readTensorInfo(Cursor& in, uint64_t index) {
  RawTensor t;
  const std::string what = "tensor info " + std::to_string(index);
  t.name = std::string(in.text(what + " name", kMaxNameBytes));
  const std::string where = in.label() + ": tensor '" + t.name + "'";
  const auto dims = in.read<uint32_t>(what + " n_dims");
  if (dims < 1 || dims > kMaxDims)
    bad(where, "bad GGUF tensor rank", "1.." + std::to_string(kMaxDims), std::to_string(dims));
  for (uint32_t d = 0; d < dims; ++d) {
    const auto n = in.read<uint64_t>(what + " ne[" + std::to_string(d) + "]");
    if (n < 1 || n > kMaxDim)
      bad(where, "GGUF tensor dimension out of range", "1.." + std::to_string(kMaxDim), std::to_string(n));
    if (t.numel > kMaxDim / n)
      bad(where, "GGUF tensor too large", "at most " + std::to_string(kMaxDim) + " elements", "more");
    t.numel *= n;
    t.ne.push_back(n);
  }
  const auto type = in.read<uint32_t>(what + " type");
  t.type = ggmlType(type);
  if (!t.type || (!t.type->dtype && t.type->blocks == GgmlBlocks::None))
    bad(where, "GGUF element type not read by ShareLens", kReadTypes,
        (t.type ? std::string(t.type->name) : "unknown") + " (ggml type " + std::to_string(type) + ")",
        "re-quantise it with llama.cpp's llama-quantize to Q8_0 (or Q4_K_M, Q5_K_M, Q6_K), or open the "
        "original "
        "safetensors checkpoint");
  t.offset = in.read<uint64_t>(what + " offset");
  if (t.type->dtype) {
    t.bytes = t.numel * dtypeSize(*t.type->dtype);
  } else {
    const GgmlBlockShape block = ggmlBlockShape(t.type->blocks);
    if (t.ne[0] % block.values != 0)
      bad(where, "GGUF row length is not a whole number of blocks",
          "a multiple of " + std::to_string(block.values) + " for " + t.type->name, std::to_string(t.ne[0]));
    t.bytes = t.numel / block.values * block.bytes;
  }
  return t;
}

Parsed parse(std::span<const std::byte> file, const std::string& label) {
  Cursor in(file, label);
  Parsed p;
  if (in.read<uint32_t>("magic") != kGgufMagic)
    bad(label, "not a GGUF file", "the magic \"GGUF\"", "other bytes");
  p.version = in.read<uint32_t>("version");
  if (p.version != 2 && p.version != 3)
    bad(label + ": header field version", "unsupported GGUF version", "2 or 3", std::to_string(p.version),
        p.version == 1 ? "GGUF version 1 (2023) is not read: convert the model again with a current llama.cpp"
                       : kGgufHint);
  const auto tensorCount = in.read<uint64_t>("tensor count");
  const auto kvCount = in.read<uint64_t>("metadata count");
  if (tensorCount > kMaxTensors)
    bad(label + ": header field tensor_count", "too many GGUF tensors",
        "at most " + std::to_string(kMaxTensors), std::to_string(tensorCount));
  if (kvCount > kMaxKeyValues || kvCount > in.remaining() / 12)  // a key-value pair takes 12 bytes or more
    bad(label + ": header field metadata_kv_count", "too many GGUF metadata entries for the file",
        "at most " + std::to_string(std::min(kMaxKeyValues, in.remaining() / 12)), std::to_string(kvCount));
  for (uint64_t i = 0; i < kvCount; ++i) {
    std::string key(in.text("metadata key " + std::to_string(i), kMaxNameBytes));
    const auto type = in.read<uint32_t>("metadata '" + key + "' type");
    MetaValue value = readValue(in, type, "metadata '" + key + "'", 0);
    if (!p.metadata.emplace(key, std::move(value)).second)
      bad(label + ": metadata '" + key + "'", "GGUF metadata key appears twice", "unique keys",
          "a second '" + key + "'");
  }
  if (tensorCount > in.remaining() / 24)  // name length, n_dims, one ne, type and offset: 24 bytes or more
    bad(label + ": header field tensor_count", "more GGUF tensors than the file can describe",
        "at most " + std::to_string(in.remaining() / 24), std::to_string(tensorCount));
  std::set<std::string_view> names;
  p.tensors.reserve(tensorCount);
  for (uint64_t i = 0; i < tensorCount; ++i) {
    p.tensors.push_back(readTensorInfo(in, i));
    if (!names.insert(p.tensors.back().name).second)
      bad(label + ": tensor '" + p.tensors.back().name + "'", "GGUF tensor name appears twice",
          "unique names", "a second one");
  }
  uint64_t alignment = 32;
  if (auto it = p.metadata.find("general.alignment"); it != p.metadata.end()) {
    const MetaValue& a = it->second;
    if (a.type != kU32 || a.value.get<uint64_t>() == 0 ||
        (a.value.get<uint64_t>() & (a.value.get<uint64_t>() - 1)))
      bad(label + ": metadata 'general.alignment'", "bad GGUF alignment", "a u32 power of two",
          a.type == kU32 ? std::to_string(a.value.get<uint64_t>())
                         : "a value of type " + std::to_string(a.type));
    alignment = a.value.get<uint64_t>();
  }
  p.dataOffset = (in.offset() + alignment - 1) / alignment * alignment;
  if (p.dataOffset > file.size())
    bad(label, "GGUF file ends before its data section", std::to_string(p.dataOffset) + " bytes or more",
        std::to_string(file.size()) + " bytes");
  const uint64_t dataBytes = file.size() - p.dataOffset;
  std::vector<const RawTensor*> byOffset;
  for (const RawTensor& t : p.tensors) {
    const std::string where = label + ": tensor '" + t.name + "'";
    if (t.offset % alignment != 0)
      bad(where, "GGUF tensor offset not aligned", "a multiple of " + std::to_string(alignment),
          std::to_string(t.offset));
    if (t.offset > dataBytes || t.bytes > dataBytes - t.offset)
      bad(where, "GGUF tensor data past the end of the file",
          "bytes [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.bytes) +
              ") of the data section",
          std::to_string(dataBytes) + " bytes of data");
    byOffset.push_back(&t);
  }
  std::sort(byOffset.begin(), byOffset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->offset < byOffset[i - 1]->offset + byOffset[i - 1]->bytes)
      bad(label + ": tensor '" + byOffset[i]->name + "'", "GGUF tensors overlap",
          "data after '" + byOffset[i - 1]->name + "' ends at " +
              std::to_string(byOffset[i - 1]->offset + byOffset[i - 1]->bytes),
          "it starts at " + std::to_string(byOffset[i]->offset));
  return p;
}

// ---- architectures --------------------------------------------------------------------------------------

struct Architecture {
  const char* name;       // general.architecture
  const char* hfClass;    // architectures[0]
  const char* modelType;  // model_type
  bool interleavedRope;   // llama.cpp's LLAMA_ROPE_TYPE_NORM: attn_q / attn_k rows were permuted
  bool normsPlusOne;      // convert_hf_to_gguf.py stored RMSNorm weights as 1 + w
  // blk.N.<part> -> model.layers.N.<hf>
  std::vector<std::pair<std::string_view, std::string_view>> parts;
};

const std::vector<std::pair<std::string_view, std::string_view>> kLlamaParts = {
    {"attn_norm", "input_layernorm"},   {"ffn_norm", "post_attention_layernorm"},
    {"attn_q", "self_attn.q_proj"},     {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},     {"attn_output", "self_attn.o_proj"},
    {"ffn_gate", "mlp.gate_proj"},      {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},      {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}};

const std::vector<std::pair<std::string_view, std::string_view>> kGemma3Parts = {
    {"attn_norm", "input_layernorm"},
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}};

const Architecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", "llama", true, false, kLlamaParts},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", false, false, kLlamaParts},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", false, false, kLlamaParts},
    {"gemma3", "Gemma3ForCausalLM", "gemma3_text", false, true, kGemma3Parts},
};

// The Hugging Face name of a GGUF tensor; the GGUF name when it has none (kept, and listed as such).
std::string hfName(const Architecture& arch, const std::string& name) {
  if (name == "token_embd.weight") return "model.embed_tokens.weight";
  if (name == "output_norm.weight") return "model.norm.weight";
  if (name == "output.weight") return "lm_head.weight";
  if (name.rfind("blk.", 0) != 0) return name;
  const size_t dot = name.find('.', 4), last = name.rfind('.');
  if (dot == std::string::npos || dot == 4 || last <= dot) return name;
  const std::string layer = name.substr(4, dot - 4);
  if (!std::all_of(layer.begin(), layer.end(), [](char c) { return c >= '0' && c <= '9'; })) return name;
  const std::string_view part = std::string_view(name).substr(dot + 1, last - dot - 1);
  const std::string_view suffix = std::string_view(name).substr(last);  // ".weight", ".bias"
  for (const auto& [gguf, hf] : arch.parts)
    if (part == gguf) return "model.layers." + layer + "." + std::string(hf) + std::string(suffix);
  return name;
}

// ---- config from metadata -------------------------------------------------------------------------------

class Metadata {
 public:
  Metadata(const std::map<std::string, MetaValue>& values, std::string label, std::string arch)
      : m_values(values), m_label(std::move(label)), m_arch(std::move(arch)) {}

  // {arch}.<key> as a number; an array of equal numbers (per-layer values) counts as one.
  std::optional<double> number(const std::string& key) const {
    const std::string full = m_arch + "." + key;
    const auto it = m_values.find(full);
    if (it == m_values.end()) return std::nullopt;
    const Json& v = it->second.value;
    if (v.is_number()) return v.get<double>();
    if (v.is_array() && !v.empty() && v[0].is_number() &&
        std::all_of(v.begin(), v.end(), [&](const Json& x) { return x == v[0]; }))
      return v[0].get<double>();
    if (v.is_array() && !v.empty() && v[0].is_number())
      bad(m_label + ": metadata '" + full + "'", "GGUF metadata value not read", "one number for every layer",
          "per-layer values that differ", "models whose layers differ in shape are not read");
    bad(m_label + ": metadata '" + full + "'", "GGUF metadata value of the wrong type", "a number",
        "a value of GGUF type " + std::to_string(it->second.type), kGgufHint);
  }
  // A real number that must be finite and above zero (norm epsilon, RoPE base, scaling factor).
  std::optional<double> positiveReal(const std::string& key) const {
    const std::optional<double> v = number(key);
    if (v && !(std::isfinite(*v) && *v > 0))
      bad(m_label + ": metadata '" + m_arch + "." + key + "'", "GGUF metadata value out of range",
          "a finite number above 0", std::isfinite(*v) ? Json(*v).dump() : "not finite");
    return v;
  }
  int64_t positive(const std::string& key) const {
    const std::optional<double> v = number(key);
    if (!v) bad(m_label, "GGUF metadata key missing", "'" + m_arch + "." + key + "'", "absent", kGgufHint);
    if (!(*v >= 1 && *v <= static_cast<double>(kMaxDim)) ||
        *v != static_cast<double>(static_cast<int64_t>(*v)))
      bad(m_label + ": metadata '" + m_arch + "." + key + "'", "GGUF metadata value out of range",
          "a whole number >= 1", Json(*v).dump());
    return static_cast<int64_t>(*v);
  }
  std::optional<std::string> string(const std::string& key) const {
    const auto it = m_values.find(key);
    if (it == m_values.end() || !it->second.value.is_string()) return std::nullopt;
    return it->second.value.get<std::string>();
  }
  std::optional<uint64_t> arrayLength(const std::string& key) const {
    const auto it = m_values.find(key);
    if (it == m_values.end() || it->second.type != kArray) return std::nullopt;
    return it->second.arrayLength;
  }

 private:
  const std::map<std::string, MetaValue>& m_values;
  std::string m_label, m_arch;
};

Json configOf(const Architecture& arch, const Metadata& meta, const Parsed& p) {
  Json c{{"architectures", {arch.hfClass}}, {"model_type", arch.modelType}};
  c["hidden_size"] = meta.positive("embedding_length");
  c["num_hidden_layers"] = meta.positive("block_count");
  c["intermediate_size"] = meta.positive("feed_forward_length");
  const int64_t heads = meta.positive("attention.head_count");
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] =
      meta.number("attention.head_count_kv") ? meta.positive("attention.head_count_kv") : heads;
  if (meta.number("context_length")) c["max_position_embeddings"] = meta.positive("context_length");
  if (auto eps = meta.positiveReal("attention.layer_norm_rms_epsilon")) c["rms_norm_eps"] = *eps;
  if (auto theta = meta.positiveReal("rope.freq_base")) c["rope_theta"] = *theta;
  if (meta.number("attention.key_length")) c["head_dim"] = meta.positive("attention.key_length");
  if (const auto type = meta.string(std::string(arch.name) + ".rope.scaling.type"); type && *type != "none")
    c["rope_scaling"] =
        Json{{"rope_type", *type}, {"factor", meta.positiveReal("rope.scaling.factor").value_or(1.0)}};
  // vocab_size: the metadata's, else the tokenizer's token list, else the embedding's rows.
  if (meta.number("vocab_size")) {
    c["vocab_size"] = meta.positive("vocab_size");
  } else if (const auto tokens = meta.arrayLength("tokenizer.ggml.tokens"); tokens && *tokens > 0) {
    c["vocab_size"] = *tokens;
  } else {
    for (const RawTensor& t : p.tensors)
      if (t.name == "token_embd.weight" && t.ne.size() == 2) c["vocab_size"] = t.ne[1];
  }
  const bool untied =
      std::any_of(p.tensors.begin(), p.tensors.end(), [](auto& t) { return t.name == "output.weight"; });
  c["tie_word_embeddings"] = !untied;
  c["torch_dtype"] = "float32";
  if (std::string_view(arch.name) == "gemma3") {
    c["hidden_activation"] = "gelu_pytorch_tanh";
    // llama.cpp hard-codes what the file does not carry: queries scaled by 1/sqrt(head_dim), except the 27B
    // model (62 layers), scaled by 1/sqrt(hidden / heads) as its config's query_pre_attn_scalar 168 says;
    // the local layers' RoPE base; the five-local-one-global pattern.
    if (c["num_hidden_layers"] == 62)
      c["query_pre_attn_scalar"] = c["hidden_size"].get<int64_t>() / heads;
    else if (c.contains("head_dim"))
      c["query_pre_attn_scalar"] = c["head_dim"];
    if (meta.number("attention.sliding_window"))
      c["sliding_window"] = meta.positive("attention.sliding_window");
    c["rope_local_base_freq"] = 10000.0;
    c["sliding_window_pattern"] = 6;
  } else {
    c["hidden_act"] = "silu";
  }
  return c;
}

std::string formatLabel(const Parsed& p, const std::string& arch) {
  std::map<std::string, int> counts;
  for (const RawTensor& t : p.tensors) ++counts[t.type->name];
  std::string out = "GGUF v" + std::to_string(p.version) + " (" + arch;
  const char* sep = "; ";
  for (const auto& [type, n] : counts) {
    out += sep + type + " x" + std::to_string(n);
    sep = ", ";
  }
  return out + ")";
}

}  // namespace

bool looksLikeGguf(std::span<const std::byte> head) {
  uint32_t magic = 0;
  if (head.size() < sizeof magic) return false;
  std::memcpy(&magic, head.data(), sizeof magic);
  return magic == kGgufMagic;
}

GgufCheckpoint openGguf(const fs::path& path) {
  MappedFile file = MappedFile::open(path);
  const std::string label = path.string();
  const Parsed p = parse(file.bytes(), label);

  const auto archIt = p.metadata.find("general.architecture");
  if (archIt == p.metadata.end())
    bad(label, "GGUF metadata key missing", "'general.architecture' (a string)", "absent");
  if (!archIt->second.value.is_string())
    bad(label + ": metadata 'general.architecture'", "GGUF metadata value of the wrong type", "a string",
        "a value of GGUF type " + std::to_string(archIt->second.type));
  const std::string archName = archIt->second.value.get<std::string>();
  const Architecture* arch = nullptr;
  for (const Architecture& a : kArchitectures)
    if (archName == a.name) arch = &a;
  if (!arch)
    bad(label + ": metadata 'general.architecture'", "GGUF architecture not read by ShareLens",
        "llama, qwen2, qwen3 or gemma3", "'" + archName + "'",
        "open the model's original Hugging Face checkpoint (safetensors or pytorch_model.bin)");
  if (auto split = p.metadata.find("split.count");
      split != p.metadata.end() && split->second.value.is_number() && split->second.value.get<double>() > 1)
    bad(label + ": metadata 'split.count'", "one part of a split GGUF model", "a whole model in one file",
        split->second.value.dump() + " parts",
        "merge the parts with llama.cpp's `llama-gguf-split --merge FIRST-PART OUT.gguf` and open OUT.gguf");
  const Metadata meta(p.metadata, label, archName);
  GgufCheckpoint out;
  out.config = configOf(*arch, meta, p);
  out.format = formatLabel(p, archName);

  const int64_t heads = out.config["num_attention_heads"], kvHeads = out.config["num_key_value_heads"];
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const std::vector<int64_t>>>
      rowOrders;  // heads, rows
  const auto ropeRows = [&](int64_t headCount, int64_t rows, const std::string& where) {
    if (rows > static_cast<int64_t>(kMaxPermutedRows))
      bad(where, "attention matrix with more rows than any model has",
          "at most " + std::to_string(kMaxPermutedRows), std::to_string(rows), kGgufHint);
    if (rows % headCount != 0 || (rows / headCount) % 2 != 0)
      bad(where, "attention rows do not split into heads of even size",
          "a multiple of 2 x " + std::to_string(headCount) + " heads", std::to_string(rows) + " rows",
          "the metadata's head counts do not fit the tensor");
    auto& order = rowOrders[{headCount, rows}];
    if (!order)
      order = std::make_shared<const std::vector<int64_t>>(rotateHalfRowOrder(headCount, rows / headCount));
    return order;
  };

  SafetensorsHeader header;
  header.dataOffset = p.dataOffset;
  std::set<std::string> seen;
  for (const RawTensor& raw : p.tensors) {
    TensorInfo& t = header.tensors.emplace_back();
    t.name = hfName(*arch, raw.name);
    const std::string where = label + ": tensor '" + raw.name + "'";
    if (!seen.insert(t.name).second)
      bad(where, "two GGUF tensors map to one name", "one tensor per name", "a second '" + t.name + "'");
    t.shape.assign(raw.ne.rbegin(), raw.ne.rend());
    t.numel = raw.numel;
    t.dataBegin = raw.offset;
    t.dataEnd = raw.offset + raw.bytes;
    t.dtype = raw.type->dtype.value_or(DType::F32);
    auto stored = std::make_shared<StoredLayout>();
    stored->blocks = raw.type->blocks;
    const std::string_view name = raw.name;
    // llama.cpp's LlamaModel permutes the rows of q and k, their biases too (one row per element).
    const bool query = name.ends_with(".attn_q.weight") || name.ends_with(".attn_q.bias");
    const bool key = name.ends_with(".attn_k.weight") || name.ends_with(".attn_k.bias");
    if (arch->interleavedRope && (query || key) && t.shape.size() <= 2)
      stored->rowOrder = ropeRows(query ? heads : kvHeads, t.shape[0], where);
    // Gemma3Model stores its text model's RMSNorm weights as 1 + w; tensors kept under their GGUF names (a
    // vision tower's) were not changed.
    if (arch->normsPlusOne && name.ends_with("norm.weight") && t.name != raw.name) stored->offset = -1.0f;
    if (stored->blocks != GgmlBlocks::None || stored->rowOrder || stored->offset != 0)
      t.stored = std::move(stored);
  }
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.dataBegin < b.dataBegin; });
  for (const auto& [key, value] : p.metadata)
    if (key.rfind("general.", 0) == 0 && value.value.is_string())
      header.metadata[key] = value.value.get<std::string>();
  if (std::any_of(p.tensors.begin(), p.tensors.end(), [](auto& t) { return t.name == "rope_freqs.weight"; }))
    header.warnings.push_back(
        "rope_freqs.weight (Llama 3 RoPE frequency factors) is listed but not applied: forward passes on "
        "this file use unscaled RoPE; open the original checkpoint for hidden states");
  out.tensors = SafetensorsFile::fromLayout(std::move(file), std::move(header));
  return out;
}

}  // namespace sharelens
