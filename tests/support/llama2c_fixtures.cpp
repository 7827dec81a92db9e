#include "tests/support/llama2c_fixtures.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

namespace sharelens::testing {
namespace {

class Writer {
 public:
  template <class T>
  void put(T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    m_bytes.insert(m_bytes.end(), p, p + sizeof value);
  }
  void floats(const std::vector<float>& values) {
    for (float v : values) put(v);
  }
  void padTo(size_t size) { m_bytes.resize(std::max(m_bytes.size(), size)); }
  std::vector<std::byte> take() { return std::move(m_bytes); }

 private:
  std::vector<std::byte> m_bytes;
};

// export.py quantize_q80: per group, scale = max|w| / 127, q = round(w / scale) (to nearest, ties to even);
// writes the int8 values then the scales, and returns what they dequantise to.
std::vector<float> writeQ8(Writer& out, const std::vector<float>& w, int32_t group) {
  std::vector<float> dequantised(w.size()), scales;
  std::vector<int8_t> q(w.size());
  for (size_t g = 0; g < w.size(); g += static_cast<size_t>(group)) {
    float largest = 0;
    for (size_t i = g; i < g + static_cast<size_t>(group); ++i) largest = std::max(largest, std::fabs(w[i]));
    const float scale = largest / 127.0f;
    scales.push_back(scale);
    for (size_t i = g; i < g + static_cast<size_t>(group); ++i) {
      q[i] = static_cast<int8_t>(scale > 0 ? std::nearbyint(w[i] / scale) : 0);
      dequantised[i] = static_cast<float>(q[i]) * scale;
    }
  }
  for (int8_t v : q) out.put(v);
  out.floats(scales);
  return dequantised;
}

}  // namespace

std::vector<std::byte> llama2cBytes(const Llama2cSpec& s, Llama2cWeights* weightsOut) {
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = normal(rng);
    return v;
  };
  const int32_t headSize = s.dim / s.heads, kvDim = s.kvHeads * headSize;
  Llama2cWeights w;
  w.embedding = random(int64_t{s.vocab} * s.dim);
  w.classifier = s.shared ? w.embedding : random(int64_t{s.vocab} * s.dim);
  for (int32_t l = 0; l < s.layers; ++l) {
    w.attentionNorm.push_back(random(s.dim));
    w.wq.push_back(random(int64_t{s.dim} * s.dim));
    w.wk.push_back(random(int64_t{kvDim} * s.dim));
    w.wv.push_back(random(int64_t{kvDim} * s.dim));
    w.wo.push_back(random(int64_t{s.dim} * s.dim));
    w.ffnNorm.push_back(random(s.dim));
    w.w1.push_back(random(int64_t{s.hidden} * s.dim));
    w.w2.push_back(random(int64_t{s.dim} * s.hidden));
    w.w3.push_back(random(int64_t{s.hidden} * s.dim));
  }
  w.finalNorm = random(s.dim);
  const int32_t header[7] = {s.dim,   s.hidden, s.layers, s.heads, s.kvHeads, s.shared ? s.vocab : -s.vocab,
                             s.seqLen};
  Writer out;
  auto perLayer = [](const std::vector<std::vector<float>>& all, auto&& write) {
    for (const auto& m : all) write(m);
  };
  if (s.version == 0) {  // legacy_export
    for (int32_t v : header) out.put(v);
    out.floats(w.embedding);
    const auto plain = [&](const std::vector<float>& m) { out.floats(m); };
    perLayer(w.attentionNorm, plain);
    for (const auto* kind : {&w.wq, &w.wk, &w.wv, &w.wo}) perLayer(*kind, plain);
    perLayer(w.ffnNorm, plain);
    for (const auto* kind : {&w.w1, &w.w2, &w.w3}) perLayer(*kind, plain);
    out.floats(w.finalNorm);
    for (int table = 0; table < 2; ++table) out.floats(random(int64_t{s.seqLen} * headSize / 2));  // RoPE
    if (!s.shared) out.floats(w.classifier);
  } else {  // version1_export, version2_export
    out.put(uint32_t{0x616b3432});
    out.put(int32_t{s.version});
    for (int i = 0; i < 7; ++i) out.put(i == 5 ? s.vocab : header[i]);
    out.put(static_cast<uint8_t>(s.shared ? 1 : 0));
    if (s.version == 2) out.put(s.groupSize);
    out.padTo(256);
    for (const auto& m : w.attentionNorm) out.floats(m);
    for (const auto& m : w.ffnNorm) out.floats(m);
    out.floats(w.finalNorm);
    const auto matrix = [&](std::vector<float>& m) {
      if (s.version == 2)
        m = writeQ8(out, m, s.groupSize);
      else
        out.floats(m);
    };
    matrix(w.embedding);
    for (auto* kind : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w1, &w.w2, &w.w3})
      for (auto& m : *kind) matrix(m);
    if (s.shared)
      w.classifier = w.embedding;
    else
      matrix(w.classifier);
  }
  if (weightsOut) *weightsOut = std::move(w);
  return out.take();
}

void writeLlama2c(const std::filesystem::path& path, const Llama2cSpec& spec, Llama2cWeights* weights) {
  const std::vector<std::byte> bytes = llama2cBytes(spec, weights);
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace sharelens::testing
