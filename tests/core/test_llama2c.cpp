// The llama2.c reader (core/llama2c) on files our own generator writes from export.py's layouts
// (tests/support/llama2c_fixtures): every tensor under its Hugging Face name and shape, wq and wk presented
// in rotate-half row order, version 2's int8 groups dequantised, the config made from the header, and every
// malformed header a named error. The real trained model (../shared/data/stories260K.bin) is checked against
// llama2.c's own forward by tests/peer/peer_llama2c.py.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "core/llama2c.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/llama2c_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;
using testing::Llama2cSpec;
using testing::Llama2cWeights;

// Hugging Face's permutation (transformers convert_llama_weights_to_hf.py, `permute`:
// w.view(heads, rows / heads / 2, 2, columns).transpose(1, 2).reshape(rows, columns)), applied to the
// stored rows: what the reader must present.
std::vector<float> huggingFaceOrder(const std::vector<float>& w, int64_t heads, int64_t rows,
                                    int64_t columns) {
  const int64_t half = rows / heads / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t c = 0; c < columns; ++c)  // input index (h, i, j, c) goes to output (h, j, i, c)
          out[static_cast<size_t>(((h * 2 + j) * half + i) * columns + c)] =
              w[static_cast<size_t>(((h * half + i) * 2 + j) * columns + c)];
  return out;
}

std::string layer(int l, const char* what) {
  return "model.layers." + std::to_string(l) + "." + what + ".weight";
}

class Llama2cFormats : public ::testing::TestWithParam<Llama2cSpec> {};

TEST_P(Llama2cFormats, EveryTensorReadsAsLlama2cWroteIt) {
  const Llama2cSpec s = GetParam();
  const fs::path dir = testing::makeTempDir("llama2c");
  Llama2cWeights w;
  testing::writeLlama2c(dir / "model.bin", s, &w);
  const auto ckpt = Checkpoint::open(dir / "model.bin");
  const int64_t hd = s.dim / s.heads, kvDim = s.kvHeads * hd;
  auto expect = [&](const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values) {
    const TensorRef* ref = ckpt->find(name);
    ASSERT_NE(ref, nullptr) << name;
    EXPECT_EQ(ref->info->shape, shape) << name;
    EXPECT_EQ(ckpt->readFloat(name), values) << name;
  };
  expect("model.embed_tokens.weight", {s.vocab, s.dim}, w.embedding);
  expect("model.norm.weight", {s.dim}, w.finalNorm);
  for (int l = 0; l < s.layers; ++l) {
    expect(layer(l, "input_layernorm"), {s.dim}, w.attentionNorm[l]);
    expect(layer(l, "post_attention_layernorm"), {s.dim}, w.ffnNorm[l]);
    expect(layer(l, "self_attn.q_proj"), {s.dim, s.dim}, huggingFaceOrder(w.wq[l], s.heads, s.dim, s.dim));
    expect(layer(l, "self_attn.k_proj"), {kvDim, s.dim}, huggingFaceOrder(w.wk[l], s.kvHeads, kvDim, s.dim));
    expect(layer(l, "self_attn.v_proj"), {kvDim, s.dim}, w.wv[l]);
    expect(layer(l, "self_attn.o_proj"), {s.dim, s.dim}, w.wo[l]);
    expect(layer(l, "mlp.gate_proj"), {s.hidden, s.dim}, w.w1[l]);
    expect(layer(l, "mlp.down_proj"), {s.dim, s.hidden}, w.w2[l]);
    expect(layer(l, "mlp.up_proj"), {s.hidden, s.dim}, w.w3[l]);
  }
  if (s.shared)
    EXPECT_EQ(ckpt->find("lm_head.weight"), nullptr);
  else
    expect("lm_head.weight", {s.vocab, s.dim}, w.classifier);
  EXPECT_EQ(ckpt->tensorCount(), static_cast<size_t>(2 + 9 * s.layers + (s.shared ? 0 : 1)))
      << "the RoPE tables are not tensors";
  // A part of a permuted or quantised tensor reads as that part of the whole.
  const std::string q = layer(1, "self_attn.q_proj");
  const std::vector<float> whole = ckpt->readFloat(q);
  std::vector<float> part(static_cast<size_t>(s.dim + 3));
  ckpt->at(q).file->readFloat(*ckpt->at(q).info, static_cast<uint64_t>(s.dim) - 2, part);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + s.dim - 2));

  ASSERT_TRUE(ckpt->config().has_value());
  const Json& c = *ckpt->config();
  EXPECT_EQ(c["model_type"], "llama");
  EXPECT_EQ(c["hidden_size"], s.dim);
  EXPECT_EQ(c["intermediate_size"], s.hidden);
  EXPECT_EQ(c["num_key_value_heads"], s.kvHeads);
  EXPECT_EQ(c["max_position_embeddings"], s.seqLen);
  EXPECT_EQ(c["tie_word_embeddings"], s.shared);
  EXPECT_EQ(ckpt->configPath(), dir / "model.bin");
  EXPECT_EQ(ckpt->metadata().count("format"), 0u) << "a label for people, never written into converted files";
  const Json report = inspectCheckpoint(*ckpt);
  EXPECT_EQ(report["family"], "llama");
  const int64_t weights =
      int64_t{s.vocab} * s.dim * (s.shared ? 1 : 2) + s.dim +
      s.layers * (2 * s.dim + 2 * s.dim * s.dim + 2 * kvDim * s.dim + 3 * s.hidden * s.dim);
  EXPECT_EQ(report["parameters"]["total"], weights);
  fs::remove_all(dir);
}

Llama2cSpec variant(int version, bool shared) {
  Llama2cSpec s;
  s.version = version;
  s.shared = shared;
  s.seed = 10 + version + (shared ? 0 : 5);
  return s;
}

INSTANTIATE_TEST_SUITE_P(, Llama2cFormats,
                         ::testing::Values(variant(0, true), variant(0, false), variant(1, true),
                                           variant(1, false), variant(2, true), variant(2, false)),
                         [](const auto& info) {
                           return std::string(info.param.version == 0   ? "Legacy"
                                              : info.param.version == 1 ? "Version1"
                                                                        : "Version2Q8") +
                                  (info.param.shared ? "Tied" : "Untied");
                         });

// A legacy file with dim 640 begins with the bytes 80 02 00 00, a pickle's opening: it is still read as
// llama2.c (its size matches exactly), not refused as PyTorch's legacy format.
TEST(Llama2c, ALegacyFileThatBeginsLikeAPickleIsStillLlama2c) {
  const fs::path dir = testing::makeTempDir("llama2c-640");
  Llama2cSpec s;
  s.dim = 640, s.hidden = 16, s.layers = 1, s.heads = 10, s.kvHeads = 10, s.vocab = 8, s.seqLen = 4;
  testing::writeLlama2c(dir / "model.bin", s);
  const auto ckpt = Checkpoint::open(dir / "model.bin");
  EXPECT_EQ(ckpt->format(), "llama2.c legacy (v0)");
  EXPECT_EQ(ckpt->at("model.layers.0.self_attn.q_proj.weight").info->shape, (std::vector<int64_t>{640, 640}));
  fs::remove_all(dir);
}

// Bad input: each a named error that says which field or size is wrong; never a crash or a misread.
TEST(Llama2c, MalformedFilesAreNamedErrors) {
  const fs::path dir = testing::makeTempDir("llama2c-bad");
  auto errorOpening = [&](const std::string& name, std::vector<std::byte> bytes) -> std::string {
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    try {
      (void)Checkpoint::open(dir / name);
    } catch (const Error& e) {
      return e.what();
    }
    return "opened";
  };
  auto setInt = [](std::vector<std::byte>& b, size_t offset, int32_t v) {
    std::memcpy(b.data() + offset, &v, 4);
  };
  const std::vector<std::byte> legacy = testing::llama2cBytes(variant(0, true));
  const std::vector<std::byte> v2 = testing::llama2cBytes(variant(2, true));

  std::vector<std::byte> truncated(v2.begin(), v2.end() - 1);
  std::string e = errorOpening("truncated.bin", truncated);
  EXPECT_NE(e.find("file size does not match the header's dimensions"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated.bin"), std::string::npos) << e;

  std::vector<std::byte> version = v2;
  setInt(version, 4, 3);
  e = errorOpening("version.bin", version);
  EXPECT_NE(e.find("unsupported llama2.c format version"), std::string::npos) << e;
  EXPECT_NE(e.find("found 3"), std::string::npos) << e;

  std::vector<std::byte> heads = v2;
  setInt(heads, 20, 5);  // n_heads 5 does not divide dim 16
  e = errorOpening("heads.bin", heads);
  EXPECT_NE(e.find("header field n_heads"), std::string::npos) << e;

  std::vector<std::byte> group = v2;
  setInt(group, 37, 5);
  e = errorOpening("group.bin", group);
  EXPECT_NE(e.find("header field group_size"), std::string::npos) << e;

  std::vector<std::byte> flag = v2;
  flag[36] = std::byte{7};
  e = errorOpening("flag.bin", flag);
  EXPECT_NE(e.find("shared_classifier"), std::string::npos) << e;

  std::vector<std::byte> shortHeader(v2.begin(), v2.begin() + 100);
  e = errorOpening("short.bin", shortHeader);
  EXPECT_NE(e.find("shorter than its header"), std::string::npos) << e;

  // A legacy file whose size does not match is not recognised as llama2.c: the error says what was tried.
  std::vector<std::byte> legacyCut(legacy.begin(), legacy.end() - 4);
  e = errorOpening("legacy-cut.bin", legacyCut);
  EXPECT_NE(e.find("legacy-cut.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("llama2.c"), std::string::npos) << "the hint names the formats tried: " << e;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
