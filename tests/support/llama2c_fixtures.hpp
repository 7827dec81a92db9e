// llama2.c checkpoints for tests, fuzz seeds and benchmarks, written by our own generator from the format as
// llama2.c's export.py writes it (legacy_export, version1_export, version2_export): the reader under test
// (core/llama2c) shares no code with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace sharelens::testing {

struct Llama2cSpec {
  int32_t dim = 16, hidden = 24, layers = 2, heads = 4, kvHeads = 2, vocab = 32, seqLen = 16;
  bool shared = true;  // the classifier is the token embedding
  int version = 0;     // 0: legacy, 1: float32, 2: Q8_0
  int32_t groupSize = 8;
  uint64_t seed = 1;
};

// The weights as llama2.c stores them (wq and wk rows in Meta's interleaved RoPE order; each matrix
// [out, in] row-major); for version 2 the values its int8 groups dequantise to.
struct Llama2cWeights {
  std::vector<float> embedding, classifier, finalNorm;
  std::vector<std::vector<float>> attentionNorm, wq, wk, wv, wo, ffnNorm, w1, w2, w3;  // [layer]
};

std::vector<std::byte> llama2cBytes(const Llama2cSpec& spec, Llama2cWeights* weights = nullptr);
void writeLlama2c(const std::filesystem::path& path, const Llama2cSpec& spec,
                  Llama2cWeights* weights = nullptr);

}  // namespace sharelens::testing
