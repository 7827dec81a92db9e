#include "core/llama2c.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/mapped_file.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

constexpr uint32_t kLlama2cMagic = 0x616b3432;  // "ak42"
constexpr uint64_t kLegacyHeaderBytes = 7 * sizeof(int32_t);
constexpr uint64_t kVersionedHeaderBytes = 256;
constexpr int64_t kMaxDimension = int64_t{1} << 20;  // far above any llama2.c model, far below overflow
constexpr int64_t kMaxLayers = 4096;
constexpr const char* kLlama2cHint = "the file is corrupt, truncated, or not a llama2.c checkpoint";

int32_t int32At(std::span<const std::byte> bytes, size_t offset) {
  int32_t value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);  // llama2.c writes the host's (little) endianness
  return value;
}

struct Header {
  Llama2cVersion version = Llama2cVersion::Legacy;
  int64_t dim = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0, vocab = 0, seqLen = 0;
  bool shared = true;     // the classifier is the token embedding
  int64_t groupSize = 0;  // Q8_0 only
  uint64_t dataOffset = kLegacyHeaderBytes;

  int64_t headSize() const { return dim / heads; }
  int64_t kvDim() const { return kvHeads * headSize(); }
};

// The header's fields, checked one by one; nullopt with `why` set (field, expected, found) on the first that
// is wrong.
struct FieldProblem {
  std::string field, expected, found;
};

std::optional<FieldProblem> checkDimensions(const Header& h) {
  const auto bad = [](const char* field, std::string expected, int64_t found) {
    return FieldProblem{field, std::move(expected), std::to_string(found)};
  };
  const std::string range = "1.." + std::to_string(kMaxDimension);
  if (h.dim < 1 || h.dim > kMaxDimension) return bad("dim", range, h.dim);
  if (h.hidden < 1 || h.hidden > kMaxDimension) return bad("hidden_dim", range, h.hidden);
  if (h.layers < 1 || h.layers > kMaxLayers)
    return bad("n_layers", "1.." + std::to_string(kMaxLayers), h.layers);
  if (h.heads < 1 || h.heads > h.dim || h.dim % h.heads != 0)
    return bad("n_heads", "a divisor of dim = " + std::to_string(h.dim), h.heads);
  if (h.headSize() % 2 != 0)
    return bad("n_heads", "a head size dim / n_heads that is even (RoPE rotates pairs)", h.heads);
  if (h.kvHeads < 1 || h.kvHeads > h.heads || h.heads % h.kvHeads != 0)
    return bad("n_kv_heads", "a divisor of n_heads = " + std::to_string(h.heads), h.kvHeads);
  if (h.vocab < 1 || h.vocab > kMaxDimension)
    return bad("vocab_size", range + " (its sign is the tie flag)", h.vocab);
  if (h.seqLen < 1 || h.seqLen > kMaxDimension) return bad("seq_len", range, h.seqLen);
  return std::nullopt;
}

// The tensors in file order, as the reader lays them over the file.
class Layout {
 public:
  explicit Layout(uint64_t dataOffset) { m_header.dataOffset = dataOffset; }

  void floats(std::string name, std::vector<int64_t> shape, std::shared_ptr<const StoredLayout> stored = {}) {
    TensorInfo& t = add(std::move(name), std::move(shape));
    t.dataEnd = t.dataBegin + t.numel * sizeof(float);
    t.stored = std::move(stored);
    m_cursor = t.dataEnd;
  }
  // int8 values, then one float32 scale per group of them.
  void q8(std::string name, std::vector<int64_t> shape, int64_t groupSize,
          std::shared_ptr<const std::vector<int64_t>> rowOrder) {
    TensorInfo& t = add(std::move(name), std::move(shape));
    t.dataEnd = t.dataBegin + t.numel;
    auto stored = std::make_shared<StoredLayout>();
    stored->groupSize = groupSize;
    stored->scalesBegin = t.dataEnd;
    stored->rowOrder = std::move(rowOrder);
    t.stored = std::move(stored);
    m_cursor = t.dataEnd + t.numel / static_cast<uint64_t>(groupSize) * sizeof(float);
  }
  void skipFloats(uint64_t count) { m_cursor += count * sizeof(float); }
  uint64_t fileBytes() const { return m_header.dataOffset + m_cursor; }
  const std::vector<TensorInfo>& tensors() const { return m_header.tensors; }
  SafetensorsHeader take() { return std::move(m_header); }

 private:
  TensorInfo& add(std::string name, std::vector<int64_t> shape) {
    TensorInfo& t = m_header.tensors.emplace_back();
    t.name = std::move(name);
    t.dtype = DType::F32;  // as presented (Q8_0 is dequantised on read)
    t.numel = 1;
    for (int64_t d : shape) t.numel *= static_cast<uint64_t>(d);
    t.shape = std::move(shape);
    t.dataBegin = m_cursor;
    return t;
  }

  SafetensorsHeader m_header;
  uint64_t m_cursor = 0;
};

std::string layerTensor(int64_t layer, const char* what) {
  return "model.layers." + std::to_string(layer) + "." + what + ".weight";
}

// The weights llama2.c serialises per layer (all layers of one kind, then the next kind), with their
// Hugging Face names and shapes.
struct LayerWeight {
  const char* name;
  int64_t rows, columns;
  std::shared_ptr<const std::vector<int64_t>> rowOrder;  // wq, wk: one for all layers
};

// The file's size for this header, by arithmetic alone (nothing allocated: a hostile header cannot make the
// reader build a layout it then finds does not fit). Dimensions are checked first: no term overflows.
uint64_t layoutBytes(const Header& h) {
  const auto d = static_cast<uint64_t>(h.dim), layers = static_cast<uint64_t>(h.layers);
  const uint64_t norms = (2 * layers + 1) * d;
  const uint64_t matrices = static_cast<uint64_t>(h.vocab) * d * (h.shared ? 1 : 2) +
                            layers * (2 * d * d + 2 * static_cast<uint64_t>(h.kvDim()) * d +
                                      3 * static_cast<uint64_t>(h.hidden) * d);
  switch (h.version) {
    case Llama2cVersion::Legacy:
      return kLegacyHeaderBytes +
             sizeof(float) * (norms + matrices + static_cast<uint64_t>(h.seqLen * h.headSize()));
    case Llama2cVersion::Float32:
      return kVersionedHeaderBytes + sizeof(float) * (norms + matrices);
    case Llama2cVersion::Q8:  // every matrix has dim, a multiple of the group, as a factor of its size
      return kVersionedHeaderBytes + sizeof(float) * norms + matrices +
             sizeof(float) * (matrices / static_cast<uint64_t>(h.groupSize));
  }
  return 0;
}

Layout layOut(const Header& h) {
  const auto qOrder = std::make_shared<const std::vector<int64_t>>(rotateHalfRowOrder(h.heads, h.headSize()));
  const auto kOrder =
      std::make_shared<const std::vector<int64_t>>(rotateHalfRowOrder(h.kvHeads, h.headSize()));
  auto plainLayout = [](std::shared_ptr<const std::vector<int64_t>> order) {
    auto s = std::make_shared<StoredLayout>();
    s->rowOrder = std::move(order);
    return std::shared_ptr<const StoredLayout>(std::move(s));
  };
  const std::shared_ptr<const StoredLayout> qLayout = plainLayout(qOrder), kLayout = plainLayout(kOrder);
  const LayerWeight attention[] = {{"self_attn.q_proj", h.dim, h.dim, qOrder},
                                   {"self_attn.k_proj", h.kvDim(), h.dim, kOrder},
                                   {"self_attn.v_proj", h.kvDim(), h.dim, nullptr},
                                   {"self_attn.o_proj", h.dim, h.dim, nullptr}};
  const LayerWeight ffn[] = {{"mlp.gate_proj", h.hidden, h.dim, nullptr},  // w1
                             {"mlp.down_proj", h.dim, h.hidden, nullptr},  // w2
                             {"mlp.up_proj", h.hidden, h.dim, nullptr}};   // w3
  Layout out(h.dataOffset);
  auto norms = [&](const char* what) {
    for (int64_t l = 0; l < h.layers; ++l) out.floats(layerTensor(l, what), {h.dim});
  };
  auto weights = [&](const LayerWeight& w) {
    for (int64_t l = 0; l < h.layers; ++l) {
      std::string name = layerTensor(l, w.name);
      if (h.version == Llama2cVersion::Q8) {
        out.q8(std::move(name), {w.rows, w.columns}, h.groupSize, w.rowOrder);
      } else {
        const std::shared_ptr<const StoredLayout> stored = w.rowOrder == qOrder   ? qLayout
                                                           : w.rowOrder == kOrder ? kLayout
                                                                                  : nullptr;
        out.floats(std::move(name), {w.rows, w.columns}, stored);
      }
    }
  };
  auto matrix = [&](const char* name, int64_t rows) {
    if (h.version == Llama2cVersion::Q8)
      out.q8(name, {rows, h.dim}, h.groupSize, nullptr);
    else
      out.floats(name, {rows, h.dim});
  };
  if (h.version == Llama2cVersion::Legacy) {
    matrix("model.embed_tokens.weight", h.vocab);
    norms("input_layernorm");
    for (const LayerWeight& w : attention) weights(w);
    norms("post_attention_layernorm");
    for (const LayerWeight& w : ffn) weights(w);
    out.floats("model.norm.weight", {h.dim});
    out.skipFloats(2 * static_cast<uint64_t>(h.seqLen * h.headSize() / 2));  // RoPE cos and sin tables
  } else {
    norms("input_layernorm");
    norms("post_attention_layernorm");
    out.floats("model.norm.weight", {h.dim});
    matrix("model.embed_tokens.weight", h.vocab);
    for (const LayerWeight& w : attention) weights(w);
    for (const LayerWeight& w : ffn) weights(w);
  }
  if (!h.shared) matrix("lm_head.weight", h.vocab);
  return out;
}

Header legacyHeader(std::span<const std::byte> file) {
  Header h;
  h.dim = int32At(file, 0);
  h.hidden = int32At(file, 4);
  h.layers = int32At(file, 8);
  h.heads = int32At(file, 12);
  h.kvHeads = int32At(file, 16);
  const int64_t vocab = int32At(file, 20);
  h.vocab = vocab < 0 ? -vocab : vocab;
  h.shared = vocab > 0;
  h.seqLen = int32At(file, 24);
  return h;
}

[[noreturn]] void malformed(const std::string& label, const std::string& what, const FieldProblem& p) {
  throw Error({.what = what,
               .where = label + ": header field " + p.field,
               .expected = p.expected,
               .found = p.found,
               .hint = kLlama2cHint});
}

void requireHeaderBytes(std::span<const std::byte> file, uint64_t bytes, const std::string& label) {
  if (file.size() < bytes)
    throw Error({.what = "file shorter than its header",
                 .where = label,
                 .expected = std::to_string(bytes) + " bytes of llama2.c header",
                 .found = std::to_string(file.size()) + " bytes",
                 .hint = kLlama2cHint});
}

Header versionedHeader(std::span<const std::byte> file, const std::string& label) {
  requireHeaderBytes(file, kVersionedHeaderBytes, label);
  Header h;
  const int32_t version = int32At(file, 4);
  if (version != 1 && version != 2)
    malformed(label, "unsupported llama2.c format version",
              {"version", "1 (float32) or 2 (Q8_0)", std::to_string(version)});
  h.version = version == 1 ? Llama2cVersion::Float32 : Llama2cVersion::Q8;
  h.dim = int32At(file, 8);
  h.hidden = int32At(file, 12);
  h.layers = int32At(file, 16);
  h.heads = int32At(file, 20);
  h.kvHeads = int32At(file, 24);
  h.vocab = int32At(file, 28);
  h.seqLen = int32At(file, 32);
  const auto flag = static_cast<uint8_t>(file[36]);
  if (flag > 1)
    malformed(label, "bad shared-classifier flag", {"shared_classifier", "0 or 1", std::to_string(flag)});
  h.shared = flag == 1;
  if (h.version == Llama2cVersion::Q8) h.groupSize = int32At(file, 37);
  h.dataOffset = kVersionedHeaderBytes;
  return h;
}

}  // namespace

bool looksLikeLlama2c(std::span<const std::byte> head, uint64_t fileSize) {
  if (head.size() >= sizeof(uint32_t)) {
    uint32_t magic;
    std::memcpy(&magic, head.data(), sizeof magic);
    if (magic == kLlama2cMagic) return true;
  }
  if (head.size() < kLegacyHeaderBytes) return false;
  const Header h = legacyHeader(head);
  return !checkDimensions(h) && layoutBytes(h) == fileSize;
}

Llama2cCheckpoint openLlama2c(const fs::path& path) {
  MappedFile file = MappedFile::open(path);
  const std::string label = path.string();
  const std::span<const std::byte> bytes = file.bytes();
  uint32_t magic = 0;
  if (bytes.size() >= sizeof magic) std::memcpy(&magic, bytes.data(), sizeof magic);
  Header h;
  if (magic == kLlama2cMagic) {
    h = versionedHeader(bytes, label);
  } else {
    requireHeaderBytes(bytes, kLegacyHeaderBytes, label);
    h = legacyHeader(bytes);
  }
  if (const auto problem = checkDimensions(h)) malformed(label, "llama2.c header out of range", *problem);
  // export.py halves the group size until it divides dim: every weight has dim as a factor of its size.
  if (h.version == Llama2cVersion::Q8 && (h.groupSize < 1 || h.dim % h.groupSize != 0))
    malformed(label, "bad Q8_0 group size",
              {"group_size", "a divisor of dim = " + std::to_string(h.dim), std::to_string(h.groupSize)});
  if (layoutBytes(h) != bytes.size())
    throw Error({.what = "file size does not match the header's dimensions",
                 .where = label,
                 .expected = std::to_string(layoutBytes(h)) + " bytes for dim " + std::to_string(h.dim) +
                             ", hidden_dim " + std::to_string(h.hidden) + ", " + std::to_string(h.layers) +
                             " layers, vocab " + std::to_string(h.vocab) + (h.shared ? ", tied" : ", untied"),
                 .found = std::to_string(bytes.size()) + " bytes",
                 .hint = kLlama2cHint});
  Layout layout = layOut(h);
  if (layout.fileBytes() != bytes.size())  // the arithmetic and the layout disagree: a bug here, not the file
    throw Error({.what = "internal error: llama2.c layout does not cover the file",
                 .where = label,
                 .expected = std::to_string(bytes.size()) + " bytes",
                 .found = std::to_string(layout.fileBytes()) + " bytes laid out"});
  SafetensorsHeader header = layout.take();
  Llama2cCheckpoint out;
  out.version = h.version;
  out.format = h.version == Llama2cVersion::Legacy ? "llama2.c legacy (v0)"
               : h.version == Llama2cVersion::Float32
                   ? "llama2.c version 1 (float32)"
                   : "llama2.c version 2 (Q8_0, groups of " + std::to_string(h.groupSize) + ")";
  out.config = Json{{"architectures", {"LlamaForCausalLM"}},
                    {"model_type", "llama"},
                    {"hidden_size", h.dim},
                    {"intermediate_size", h.hidden},
                    {"num_hidden_layers", h.layers},
                    {"num_attention_heads", h.heads},
                    {"num_key_value_heads", h.kvHeads},
                    {"vocab_size", h.vocab},
                    {"max_position_embeddings", h.seqLen},
                    {"rms_norm_eps", 1e-5},
                    {"rope_theta", 10000.0},
                    {"hidden_act", "silu"},
                    {"tie_word_embeddings", h.shared},
                    {"torch_dtype", "float32"}};
  out.tensors = SafetensorsFile::fromLayout(std::move(file), std::move(header));
  return out;
}

}  // namespace sharelens
