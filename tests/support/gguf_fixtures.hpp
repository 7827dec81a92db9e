// GGUF files for tests, fuzz seeds and benchmarks, written by our own generator from the format's public
// description (ggml's docs/gguf.md; block layouts of ggml-common.h) and llama.cpp's convert_hf_to_gguf.py
// conventions (tensor names, the "llama" architecture's permuted attn_q / attn_k rows, Gemma's 1 + w
// norms): the reader under test (core/gguf) shares no code with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/ggml_blocks.hpp"
#include "core/model_view.hpp"

namespace sharelens::testing {

// ggml type numbers (ggml.h).
inline constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6,
                          kGgmlQ5_1 = 7, kGgmlQ8_0 = 8, kGgmlQ2_K = 10, kGgmlQ4_K = 12, kGgmlQ5_K = 13,
                          kGgmlQ6_K = 14, kGgmlBF16 = 30;

class GgufBuilder {
 public:
  void u32(const std::string& key, uint32_t value);
  void f32(const std::string& key, float value);
  void string(const std::string& key, const std::string& value);
  void stringArray(const std::string& key, const std::vector<std::string>& values);
  void u32Array(const std::string& key, const std::vector<uint32_t>& values);
  // A metadata entry of any type: its raw value bytes after the key and the type.
  void raw(const std::string& key, uint32_t type, std::vector<std::byte> value);
  // ne[0] is the row length (a row-major [out, in] matrix is ne = {in, out}).
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, std::vector<std::byte> data);

  std::vector<std::byte> bytes(uint32_t version = 3, uint64_t alignment = 32) const;
  void write(const std::filesystem::path& path, uint32_t version = 3, uint64_t alignment = 32) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<std::byte> data;
  };
  std::vector<std::byte> m_metadata;
  uint64_t m_metadataCount = 0;
  std::vector<Tensor> m_tensors;
};

// ggml's block encodings of float values (count a multiple of the block's values): Q8_0 with d = max|x| /
// 127, Q4_0 with d = max|x| / 7 (nibble = round(x / d) + 8). Each value comes back within d / 2.
std::vector<std::byte> encodeQ8_0(std::span<const float> values);
std::vector<std::byte> encodeQ4_0(std::span<const float> values);
// `count` blocks of random bytes whose f16 scale fields are finite and small: valid data of any block kind.
std::vector<std::byte> randomBlocks(GgmlBlocks kind, uint64_t count, uint64_t seed);
std::vector<std::byte> floatBytes(std::span<const float> values);

// A Hugging Face fixture (hf_fixtures) written as llama.cpp's convert_hf_to_gguf.py would: GGUF names,
// metadata from config.json, attn_q / attn_k rows permuted for "llama", norms stored as 1 + w for Gemma 3.
// Matrices are stored as `matrixType` (F32, F16, Q8_0 or Q4_0); vectors as F32.
struct GgufFromHf {
  uint32_t matrixType = kGgmlF32;
  uint32_t version = 3;
  bool withTokenizer = true;  // tokenizer.ggml.tokens (the vocabulary's length); no vocab_size key
};
void writeGgufFromHf(const std::filesystem::path& hfDir, const std::filesystem::path& out,
                     const GgufFromHf& how);

}  // namespace sharelens::testing
