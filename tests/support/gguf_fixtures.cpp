#include "tests/support/gguf_fixtures.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>

#include "core/checkpoint.hpp"
#include "core/dtype.hpp"

namespace fs = std::filesystem;

namespace sharelens::testing {
namespace {

// gguf.md's metadata value types used here.
constexpr uint32_t kTypeU32 = 4, kTypeF32 = 6, kTypeString = 8, kTypeArray = 9;

template <class T>
void put(std::vector<std::byte>& out, T value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof value);
}

void putString(std::vector<std::byte>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

void putHalf(std::vector<std::byte>& out, float value) {
  put<uint16_t>(out, floatToHalf(value));
}

}  // namespace

void GgufBuilder::raw(const std::string& key, uint32_t type, std::vector<std::byte> value) {
  putString(m_metadata, key);
  put<uint32_t>(m_metadata, type);
  m_metadata.insert(m_metadata.end(), value.begin(), value.end());
  ++m_metadataCount;
}

void GgufBuilder::u32(const std::string& key, uint32_t value) {
  std::vector<std::byte> v;
  put(v, value);
  raw(key, kTypeU32, std::move(v));
}

void GgufBuilder::f32(const std::string& key, float value) {
  std::vector<std::byte> v;
  put(v, value);
  raw(key, kTypeF32, std::move(v));
}

void GgufBuilder::string(const std::string& key, const std::string& value) {
  std::vector<std::byte> v;
  putString(v, value);
  raw(key, kTypeString, std::move(v));
}

void GgufBuilder::stringArray(const std::string& key, const std::vector<std::string>& values) {
  std::vector<std::byte> v;
  put<uint32_t>(v, kTypeString);
  put<uint64_t>(v, values.size());
  for (const std::string& s : values) putString(v, s);
  raw(key, kTypeArray, std::move(v));
}

void GgufBuilder::u32Array(const std::string& key, const std::vector<uint32_t>& values) {
  std::vector<std::byte> v;
  put<uint32_t>(v, kTypeU32);
  put<uint64_t>(v, values.size());
  for (uint32_t x : values) put(v, x);
  raw(key, kTypeArray, std::move(v));
}

void GgufBuilder::tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                         std::vector<std::byte> data) {
  m_tensors.push_back({name, std::move(ne), type, std::move(data)});
}

std::vector<std::byte> GgufBuilder::bytes(uint32_t version, uint64_t alignment) const {
  std::vector<std::byte> out;
  put<uint32_t>(out, 0x46554747);  // "GGUF"
  put<uint32_t>(out, version);
  put<uint64_t>(out, m_tensors.size());
  put<uint64_t>(out, m_metadataCount);
  out.insert(out.end(), m_metadata.begin(), m_metadata.end());
  const auto aligned = [&](uint64_t n) { return (n + alignment - 1) / alignment * alignment; };
  uint64_t offset = 0;
  for (const Tensor& t : m_tensors) {
    putString(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t n : t.ne) put(out, n);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, offset);
    offset = aligned(offset + t.data.size());
  }
  out.resize(aligned(out.size()));
  for (const Tensor& t : m_tensors) {  // padded between tensors, not after the last
    out.resize(aligned(out.size()));
    out.insert(out.end(), t.data.begin(), t.data.end());
  }
  return out;
}

void GgufBuilder::write(const fs::path& path, uint32_t version, uint64_t alignment) const {
  const std::vector<std::byte> data = bytes(version, alignment);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<std::byte> floatBytes(std::span<const float> values) {
  std::vector<std::byte> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<std::byte> encodeQ8_0(std::span<const float> values) {
  std::vector<std::byte> out;
  for (size_t b = 0; b < values.size(); b += 32) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(values[b + j]));
    const float d = halfToFloat(floatToHalf(amax / 127.0f));  // the scale as it is stored
    putHalf(out, d);
    for (size_t j = 0; j < 32; ++j) {
      const float q = d == 0 ? 0.0f : std::round(values[b + j] / d);
      put<int8_t>(out, static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
    }
  }
  return out;
}

std::vector<std::byte> encodeQ4_0(std::span<const float> values) {
  std::vector<std::byte> out;
  for (size_t b = 0; b < values.size(); b += 32) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(values[b + j]));
    const float d = halfToFloat(floatToHalf(amax / 7.0f));
    putHalf(out, d);
    const auto nibble = [&](size_t j) {
      const float q = d == 0 ? 0.0f : std::round(values[b + j] / d);
      return static_cast<uint8_t>(std::clamp(q, -8.0f, 7.0f) + 8.0f);
    };
    for (size_t j = 0; j < 16; ++j)
      put<uint8_t>(out, static_cast<uint8_t>(nibble(j) | (nibble(j + 16) << 4)));
  }
  return out;
}

std::vector<std::byte> randomBlocks(GgmlBlocks kind, uint64_t count, uint64_t seed) {
  const GgmlBlockShape shape = ggmlBlockShape(kind);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  std::vector<std::byte> out(count * shape.bytes);
  for (std::byte& b : out) b = static_cast<std::byte>(byte(rng));
  // The f16 fields: Q8_0 / Q4_0 / Q5_0 d at 0; Q4_1 / Q5_1 / Q4_K / Q5_K two at 0 and 2; Q6_K d at 208.
  std::vector<size_t> halves;
  if (kind == GgmlBlocks::Q4_K || kind == GgmlBlocks::Q5_K || kind == GgmlBlocks::Q4_1 ||
      kind == GgmlBlocks::Q5_1)
    halves = {0, 2};  // d and dmin, or d and m
  else if (kind == GgmlBlocks::Q6_K)
    halves = {208};
  else
    halves = {0};
  for (uint64_t b = 0; b < count; ++b)
    for (size_t at : halves) {
      const uint16_t bits = floatToHalf(scale(rng));
      std::memcpy(out.data() + b * shape.bytes + at, &bits, sizeof bits);
    }
  return out;
}

namespace {

// Hugging Face layer part -> GGUF part, per llama.cpp's tensor map (gguf-py constants,
// convert_hf_to_gguf.py).
const std::map<std::string, std::string>& partsFor(Family family) {
  static const std::map<std::string, std::string> llama = {
      {"input_layernorm", "attn_norm"},   {"post_attention_layernorm", "ffn_norm"},
      {"self_attn.q_proj", "attn_q"},     {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},     {"self_attn.o_proj", "attn_output"},
      {"mlp.gate_proj", "ffn_gate"},      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},      {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"}};
  static const std::map<std::string, std::string> gemma3 = {
      {"input_layernorm", "attn_norm"},
      {"post_attention_layernorm", "post_attention_norm"},
      {"pre_feedforward_layernorm", "ffn_norm"},
      {"post_feedforward_layernorm", "post_ffw_norm"},
      {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"},
      {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
      {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"}};
  return family == Family::Gemma3 ? gemma3 : llama;
}

std::string ggufName(Family family, const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  if (hf.rfind(prefix, 0) != 0) throw std::runtime_error("no GGUF name for " + hf);
  const size_t dot = hf.find('.', prefix.size()), last = hf.rfind('.');
  const std::string layer = hf.substr(prefix.size(), dot - prefix.size());
  const std::string part = hf.substr(dot + 1, last - dot - 1);
  return "blk." + layer + "." + partsFor(family).at(part) + hf.substr(last);
}

// llama.cpp's LlamaModel.permute: rows of each head from rotate-half order [2][hd/2] to interleaved
// [hd/2][2].
std::vector<float> permuteForLlamaCpp(const std::vector<float>& w, int64_t heads, int64_t rows,
                                      int64_t cols) {
  std::vector<float> out(w.size());
  const int64_t hd = rows / heads, half = hd / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < half; ++i)
        std::copy_n(w.begin() + (h * hd + j * half + i) * cols, cols,
                    out.begin() + (h * hd + 2 * i + j) * cols);
  return out;
}

const char* archName(Family family) {
  switch (family) {
    case Family::Llama:
      return "llama";
    case Family::Qwen2:
      return "qwen2";
    case Family::Qwen3:
      return "qwen3";
    case Family::Gemma3:
      return "gemma3";
    default:
      throw std::runtime_error("no GGUF architecture for this family");
  }
}

}  // namespace

void writeGgufFromHf(const fs::path& hfDir, const fs::path& out, const GgufFromHf& how) {
  const auto ckpt = Checkpoint::open(hfDir);
  const Json& config = *ckpt->config();
  const std::string type = config.at("model_type");
  const Family family = type == "llama"   ? Family::Llama
                        : type == "qwen2" ? Family::Qwen2
                        : type == "qwen3" ? Family::Qwen3
                                          : Family::Gemma3;
  const std::string arch = archName(family);
  GgufBuilder g;
  g.string("general.architecture", arch);
  g.string("general.name", "sharelens-fixture-" + arch);
  const auto u = [&](const char* hf) { return static_cast<uint32_t>(config.at(hf).get<int64_t>()); };
  g.u32(arch + ".context_length", u("max_position_embeddings"));
  g.u32(arch + ".embedding_length", u("hidden_size"));
  g.u32(arch + ".block_count", u("num_hidden_layers"));
  g.u32(arch + ".feed_forward_length", u("intermediate_size"));
  g.u32(arch + ".attention.head_count", u("num_attention_heads"));
  g.u32(arch + ".attention.head_count_kv", u("num_key_value_heads"));
  g.f32(arch + ".attention.layer_norm_rms_epsilon", config.at("rms_norm_eps").get<float>());
  g.f32(arch + ".rope.freq_base", config.at("rope_theta").get<float>());
  if (config.contains("head_dim")) {
    g.u32(arch + ".attention.key_length", u("head_dim"));
    g.u32(arch + ".attention.value_length", u("head_dim"));
  }
  if (family == Family::Gemma3) g.u32(arch + ".attention.sliding_window", u("sliding_window"));
  if (how.withTokenizer) {
    std::vector<std::string> tokens;
    for (int64_t i = 0; i < config.at("vocab_size").get<int64_t>(); ++i)
      tokens.push_back("t" + std::to_string(i));
    g.stringArray("tokenizer.ggml.tokens", tokens);
  } else {
    g.u32(arch + ".vocab_size", u("vocab_size"));
  }
  const int64_t heads = config.at("num_attention_heads"), kvHeads = config.at("num_key_value_heads");
  for (const std::string& name : ckpt->tensorNames()) {
    const TensorRef& ref = ckpt->at(name);
    std::vector<float> w = ref.file->readFloat(*ref.info);
    const std::vector<int64_t>& shape = ref.info->shape;
    if (family == Family::Llama && name.ends_with("self_attn.q_proj.weight"))
      w = permuteForLlamaCpp(w, heads, shape[0], shape[1]);
    if (family == Family::Llama && name.ends_with("self_attn.k_proj.weight"))
      w = permuteForLlamaCpp(w, kvHeads, shape[0], shape[1]);
    if (family == Family::Gemma3 && name.ends_with("norm.weight"))
      for (float& x : w) x += 1.0f;  // Gemma3Model.modify_tensors: the norm's 1 + w
    std::vector<uint64_t> ne(shape.rbegin(), shape.rend());
    uint32_t type = kGgmlF32;
    std::vector<std::byte> data;
    if (shape.size() == 2 && how.matrixType == kGgmlQ8_0) {
      type = kGgmlQ8_0;
      data = encodeQ8_0(w);
    } else if (shape.size() == 2 && how.matrixType == kGgmlQ4_0) {
      type = kGgmlQ4_0;
      data = encodeQ4_0(w);
    } else if (shape.size() == 2 && how.matrixType == kGgmlF16) {
      type = kGgmlF16;
      data.resize(w.size() * 2);
      convertFromFloat(DType::F16, w, data.data());
    } else {
      data = floatBytes(w);
    }
    g.tensor(ggufName(family, name), std::move(ne), type, std::move(data));
  }
  g.write(out, how.version);
}

}  // namespace sharelens::testing
