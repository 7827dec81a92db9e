// The GGUF reader (core/gguf, core/ggml_blocks) on files our own generator writes from the format's
// description (tests/support/gguf_fixtures): every family converted as llama.cpp's convert_hf_to_gguf.py does
// reads back as the Hugging Face checkpoint it came from (names, shapes, values, config), the quantised
// blocks decode to the values ggml's block layouts define (ggml-common.h, dequantize_row_* in ggml-quants.c),
// and every malformed or unsupported file is a named error. tests/peer/peer_gguf.py checks the reader against
// a numpy reader written from the same description.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "core/arch/family.hpp"
#include "core/checkpoint.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/gguf.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/gguf_fixtures.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;
using testing::errorOf;
using testing::GgufBuilder;

std::vector<float> readAll(const Checkpoint& ckpt, const std::string& name) {
  return ckpt.readFloat(name);
}

struct Converted {
  std::unique_ptr<Checkpoint> hf, gguf;
};

Converted convert(Family family, const testing::GgufFromHf& how, const std::string& tag) {
  const fs::path dir = testing::makeTempDir("gguf-" + tag);
  const fs::path hfDir = testing::writeHfFixture(dir / "hf", testing::defaultSpec(family));
  testing::writeGgufFromHf(hfDir, dir / "model.gguf", how);
  return {Checkpoint::open(hfDir), Checkpoint::open(dir / "model.gguf")};
}

class EveryFamily : public ::testing::TestWithParam<Family> {};

TEST_P(EveryFamily, ReadsBackAsTheHuggingFaceCheckpointItWasConvertedFrom) {
  const Family family = GetParam();
  const Converted c = convert(family, {}, std::string(familyName(family)));
  EXPECT_EQ(c.gguf->tensorNames(), c.hf->tensorNames()) << "every tensor under its Hugging Face name";
  for (const std::string& name : c.hf->tensorNames()) {
    EXPECT_EQ(c.gguf->at(name).info->shape, c.hf->at(name).info->shape) << name;
    // llama's attn_q / attn_k rows come back from llama.cpp's permutation, Gemma's norms from 1 + w: exactly,
    // except the norms, where (1 + w) - 1 rounds.
    const std::vector<float> a = readAll(*c.gguf, name), b = readAll(*c.hf, name);
    ASSERT_EQ(a.size(), b.size()) << name;
    const float tolerance = family == Family::Gemma3 && name.ends_with("norm.weight") ? 1e-6f : 0.0f;
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tolerance) << name << " element " << i;
  }
  const ModelView hfView = openModelView(*c.hf), ggufView = openModelView(*c.gguf);
  EXPECT_EQ(ggufView.family, hfView.family);
  EXPECT_EQ(ggufView.shape.layers, hfView.shape.layers);
  EXPECT_EQ(ggufView.shape.hidden, hfView.shape.hidden);
  EXPECT_EQ(ggufView.shape.heads, hfView.shape.heads);
  EXPECT_EQ(ggufView.shape.kvHeads, hfView.shape.kvHeads);
  EXPECT_EQ(ggufView.shape.headDim, hfView.shape.headDim);
  EXPECT_EQ(ggufView.shape.ffn, hfView.shape.ffn);
  EXPECT_EQ(ggufView.shape.vocab, hfView.shape.vocab);
  EXPECT_TRUE(ggufView.missing.empty()) << ggufView.missing.front();
  EXPECT_TRUE(ggufView.unexpected.empty()) << ggufView.unexpected.front();
  const Json& hfConfig = *c.hf->config();
  const Json& config = *c.gguf->config();
  for (const char* key : {"hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
                          "num_key_value_heads", "vocab_size", "max_position_embeddings"})
    EXPECT_EQ(config.at(key), hfConfig.at(key)) << key;
  EXPECT_EQ(config.at("tie_word_embeddings"), hfConfig.value("tie_word_embeddings", true));
  EXPECT_NEAR(config.at("rms_norm_eps").get<double>(), hfConfig.at("rms_norm_eps").get<double>(), 1e-12);
  EXPECT_EQ(config.at("rope_theta").get<double>(), hfConfig.at("rope_theta").get<double>());
  EXPECT_EQ(c.gguf->format().rfind("GGUF v3 (", 0), 0u) << c.gguf->format();
  EXPECT_EQ(c.gguf->metadata().at("general.architecture"), family == Family::Llama   ? "llama"
                                                           : family == Family::Qwen2 ? "qwen2"
                                                           : family == Family::Qwen3 ? "qwen3"
                                                                                     : "gemma3");
}

INSTANTIATE_TEST_SUITE_P(Gguf, EveryFamily,
                         ::testing::Values(Family::Llama, Family::Qwen2, Family::Qwen3, Family::Gemma3),
                         [](const auto& info) { return std::string(familyName(info.param)); });

// Q8_0 stores d = max|x| / 127 per block of 32 and Q4_0 d = max|x| / 7; each value comes back within d / 2.
TEST(Gguf, QuantisedMatricesComeBackWithinHalfAStepOfTheirBlocksScale) {
  for (const uint32_t type : {testing::kGgmlQ8_0, testing::kGgmlQ4_0, testing::kGgmlF16}) {
    const Converted c = convert(Family::Llama, {.matrixType = type}, "quant-" + std::to_string(type));
    const int64_t levels = type == testing::kGgmlQ8_0 ? 127 : 7;
    for (const std::string& name : c.hf->tensorNames()) {
      if (c.hf->at(name).info->rank() != 2) continue;
      EXPECT_EQ(c.gguf->at(name).info->dtype, type == testing::kGgmlF16 ? DType::F16 : DType::F32) << name;
      const std::vector<float> got = readAll(*c.gguf, name), want = readAll(*c.hf, name);
      const bool permuted = name.ends_with("q_proj.weight") || name.ends_with("k_proj.weight");
      for (size_t b = 0; b < want.size(); b += 32) {
        float amax = 0;
        for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(want[b + j]));
        // Permuted rows move whole rows (each a whole number of blocks), so blocks stay blocks.
        const float bound =
            type == testing::kGgmlF16 ? amax * 1e-3f : 0.501f * amax / static_cast<float>(levels);
        for (size_t j = 0; j < 32; ++j)
          ASSERT_LE(std::fabs(got[b + j] - want[b + j]), bound)
              << name << " element " << b + j << (permuted ? " (permuted rows)" : "");
      }
    }
  }
}

// The metadata a file needs to open: its architecture and its dimensions.
void modelKeys(GgufBuilder& g, const std::string& arch = "llama") {
  g.string("general.architecture", arch);
  g.u32(arch + ".embedding_length", 32);
  g.u32(arch + ".block_count", 1);
  g.u32(arch + ".feed_forward_length", 64);
  g.u32(arch + ".attention.head_count", 4);
}

// One block of each kind with chosen fields; the expected values follow the block layout's definition.
TEST(Gguf, BlocksDecodeAsGgmlDefinesThem) {
  std::vector<float> want;
  GgufBuilder g;
  modelKeys(g);
  // Q8_0: d = 0.25, q[j] = j - 16.
  std::vector<std::byte> q8(2);
  const uint16_t quarter = floatToHalf(0.25f);
  std::memcpy(q8.data(), &quarter, 2);
  for (int j = 0; j < 32; ++j) q8.push_back(static_cast<std::byte>(static_cast<int8_t>(j - 16)));
  g.tensor("q8", {32}, testing::kGgmlQ8_0, q8);
  // Q4_0: d = 2, byte j holds nibble j (value j) low and 15 - j (value 16 + j) high: x = 2 * (nibble - 8).
  std::vector<std::byte> q4(2);
  const uint16_t two = floatToHalf(2.0f);
  std::memcpy(q4.data(), &two, 2);
  for (int j = 0; j < 16; ++j) q4.push_back(static_cast<std::byte>(j | ((15 - j) << 4)));
  g.tensor("q4", {32}, testing::kGgmlQ4_0, q4);
  // Q4_K: d = 0.5, dmin = 0.25, 6-bit scales s and mins m, those of sub-blocks 4..7 above 15 so that their
  // top two bits go to the packed high bits; byte l of group g holds l % 16 low and 15 - l % 16 high.
  const int s[8] = {1, 2, 3, 4, 17, 33, 49, 63}, m[8] = {5, 6, 7, 8, 20, 40, 50, 62};
  std::vector<std::byte> q4k(4);
  const uint16_t half = floatToHalf(0.5f), quarterMin = floatToHalf(0.25f);
  std::memcpy(q4k.data(), &half, 2);
  std::memcpy(q4k.data() + 2, &quarterMin, 2);
  uint8_t packed[12];
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(s[j] | ((s[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((s[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
  for (uint8_t p : packed) q4k.push_back(static_cast<std::byte>(p));
  for (int gIndex = 0; gIndex < 4; ++gIndex)
    for (int l = 0; l < 32; ++l) q4k.push_back(static_cast<std::byte>((l % 16) | ((15 - l % 16) << 4)));
  ASSERT_EQ(q4k.size(), 144u);
  g.tensor("q4k", {256}, testing::kGgmlQ4_K, q4k);
  // Q6_K: d = 0.125, scales i - 5 (negative ones too), 6-bit values v[n] = 7n mod 64 (x = d * scale * (v -
  // 32)), split into ql (low nibbles) and qh (high two bits) as the layout places them.
  std::vector<uint8_t> v(256);
  for (int n = 0; n < 256; ++n) v[n] = static_cast<uint8_t>((7 * n) % 64);
  std::vector<std::byte> q6k(210);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* x = v.data() + h * 128 + l;
      q6k[h * 64 + l] = static_cast<std::byte>((x[0] & 0xF) | ((x[64] & 0xF) << 4));
      q6k[h * 64 + l + 32] = static_cast<std::byte>((x[32] & 0xF) | ((x[96] & 0xF) << 4));
      q6k[128 + h * 32 + l] = static_cast<std::byte>((x[0] >> 4) | ((x[32] >> 4) << 2) | ((x[64] >> 4) << 4) |
                                                     ((x[96] >> 4) << 6));
    }
  for (int i = 0; i < 16; ++i) q6k[192 + i] = static_cast<std::byte>(static_cast<int8_t>(i - 5));
  const uint16_t eighth = floatToHalf(0.125f);
  std::memcpy(q6k.data() + 208, &eighth, 2);
  g.tensor("q6k", {256}, testing::kGgmlQ6_K, q6k);

  const fs::path path = testing::makeTempDir("gguf-blocks") / "blocks.gguf";
  g.write(path);
  const auto ckpt = Checkpoint::open(path);
  const std::vector<float> a = ckpt->readFloat("q8");
  for (int j = 0; j < 32; ++j) EXPECT_EQ(a[j], 0.25f * static_cast<float>(j - 16)) << j;
  const std::vector<float> b = ckpt->readFloat("q4");
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(b[j], 2.0f * static_cast<float>(j - 8)) << j;
    EXPECT_EQ(b[j + 16], 2.0f * static_cast<float>(7 - j)) << j + 16;
  }
  const std::vector<float> k4 = ckpt->readFloat("q4k");
  for (int sub = 0; sub < 8; ++sub)
    for (int l = 0; l < 32; ++l) {
      const int nibble = sub % 2 == 0 ? l % 16 : 15 - l % 16;
      EXPECT_FLOAT_EQ(k4[sub * 32 + l],
                      0.5f * static_cast<float>(s[sub] * nibble) - 0.25f * static_cast<float>(m[sub]))
          << "sub-block " << sub << " value " << l;
    }
  const std::vector<float> k6 = ckpt->readFloat("q6k");
  for (int n = 0; n < 256; ++n) {
    const int h = n / 128, l = n % 32, k = (n % 128) / 32;  // value n is q(k+1) of position l in half h
    const int scale = h * 8 + l / 16 + 2 * k - 5;
    EXPECT_FLOAT_EQ(k6[n], 0.125f * static_cast<float>(scale) * static_cast<float>(v[n] - 32)) << n;
  }
  // A read from the middle of a block, across into the next, gives the same values.
  const TensorRef& ref = ckpt->at("q6k");
  std::vector<float> part(100);
  ref.file->readFloat(*ref.info, 77, part);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(part[i], k6[77 + i]);
}

TEST(Gguf, Version2AndAWiderAlignmentRead) {
  const fs::path dir = testing::makeTempDir("gguf-v2");
  const fs::path hfDir = testing::writeHfFixture(dir / "hf", testing::defaultSpec(Family::Qwen2));
  testing::writeGgufFromHf(hfDir, dir / "v2.gguf", {.version = 2, .withTokenizer = false});
  const auto ckpt = Checkpoint::open(dir / "v2.gguf");
  EXPECT_EQ(ckpt->format().rfind("GGUF v2 (qwen2; F32 x", 0), 0u) << ckpt->format();
  EXPECT_EQ(ckpt->config()->at("vocab_size"), testing::defaultSpec(Family::Qwen2).vocab);

  GgufBuilder g;
  modelKeys(g);
  g.u32("general.alignment", 256);
  const std::vector<float> x = {1, 2, 3}, y = {4, 5};
  g.tensor("x", {3}, testing::kGgmlF32, testing::floatBytes(x));
  g.tensor("y", {2}, testing::kGgmlF32, testing::floatBytes(y));
  g.write(dir / "aligned.gguf", 3, 256);
  const auto aligned = Checkpoint::open(dir / "aligned.gguf");
  EXPECT_EQ(aligned->readFloat("y"), y);
  EXPECT_EQ(aligned->at("y").info->dataBegin, 256u);
}

// A small valid file to break: one F32 matrix and one Q8_0 matrix.
GgufBuilder smallFile(const std::string& arch = "llama") {
  GgufBuilder g;
  modelKeys(g, arch);
  std::vector<float> w(64, 0.5f);
  g.tensor("token_embd.weight", {32, 2}, testing::kGgmlF32, testing::floatBytes(w));
  g.tensor("blk.0.ffn_up.weight", {32, 2}, testing::kGgmlQ8_0, testing::encodeQ8_0(w));
  return g;
}

std::string openError(const std::vector<std::byte>& bytes, const std::string& name = "bad.gguf") {
  const fs::path path = testing::makeTempDir("gguf-bad") / name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return errorOf([&] { Checkpoint::open(path); });
}

TEST(Gguf, MalformedAndUnsupportedFilesAreNamedErrors) {
  EXPECT_EQ(openError(smallFile().bytes()), "") << "the unbroken file opens";

  const std::string v1 = openError(smallFile().bytes(1));
  EXPECT_NE(v1.find("version"), std::string::npos) << v1;
  EXPECT_NE(v1.find("2 or 3"), std::string::npos) << v1;

  GgufBuilder q5 = smallFile();
  q5.tensor("blk.0.ffn_down.weight", {256, 1}, testing::kGgmlQ2_K, std::vector<std::byte>(84));
  const std::string unsupported = openError(q5.bytes());
  EXPECT_NE(unsupported.find("Q2_K"), std::string::npos) << unsupported;
  EXPECT_NE(unsupported.find("blk.0.ffn_down.weight"), std::string::npos) << unsupported;
  EXPECT_NE(unsupported.find("llama-quantize"), std::string::npos) << unsupported;

  const std::string arch = openError(smallFile("phi3").bytes());
  EXPECT_NE(arch.find("'phi3'"), std::string::npos) << arch;
  EXPECT_NE(arch.find("general.architecture"), std::string::npos) << arch;

  GgufBuilder ragged = smallFile();
  ragged.tensor("blk.0.ffn_gate.weight", {48, 1}, testing::kGgmlQ8_0, std::vector<std::byte>(51));
  const std::string blocks = openError(ragged.bytes());
  EXPECT_NE(blocks.find("multiple of 32"), std::string::npos) << blocks;

  GgufBuilder twice = smallFile();
  twice.tensor("token_embd.weight", {1}, testing::kGgmlF32, std::vector<std::byte>(4));
  EXPECT_NE(openError(twice.bytes()).find("appears twice"), std::string::npos);

  GgufBuilder split = smallFile();
  split.raw("split.count", 2 /* u16 */, {std::byte{3}, std::byte{0}});
  const std::string parts = openError(split.bytes());
  EXPECT_NE(parts.find("llama-gguf-split --merge"), std::string::npos) << parts;

  // A tensor whose data runs past the end, and one whose offset is not aligned: the first tensor info's
  // offset field is patched in place (it follows the name "token_embd.weight", n_dims and ne).
  std::vector<std::byte> file = smallFile().bytes();
  const std::string needle = "token_embd.weight";
  const auto* start = reinterpret_cast<const char*>(file.data());
  const size_t name = std::string_view(start, file.size()).find(needle);
  ASSERT_NE(name, std::string::npos);
  const size_t offsetField = name + needle.size() + 4 + 2 * 8 + 4;
  for (const auto& [offset, message] :
       std::vector<std::pair<uint64_t, std::string>>{{1u << 20, "past the end"}, {8, "not aligned"}}) {
    std::vector<std::byte> broken = file;
    std::memcpy(broken.data() + offsetField, &offset, 8);
    const std::string e = openError(broken);
    EXPECT_NE(e.find(message), std::string::npos) << e;
    EXPECT_NE(e.find("token_embd.weight"), std::string::npos) << e;
  }
  // Text that is not UTF-8 (a tensor name, a metadata value), a norm epsilon that is not a positive number, a
  // metadata key given twice, a bool that is neither 0 nor 1, an alignment of the wrong type.
  GgufBuilder badName = smallFile();
  badName.tensor(std::string("blk.0.\xff"), {1}, testing::kGgmlF32, std::vector<std::byte>(4));
  EXPECT_NE(openError(badName.bytes()).find("not valid UTF-8"), std::string::npos);
  GgufBuilder badValue = smallFile();
  badValue.string("general.name", std::string("caf\xe9"));
  const std::string utf8 = openError(badValue.bytes());
  EXPECT_NE(utf8.find("metadata 'general.name'"), std::string::npos) << utf8;
  GgufBuilder nanEps = smallFile();
  nanEps.f32("llama.attention.layer_norm_rms_epsilon", std::nanf(""));
  const std::string eps = openError(nanEps.bytes());
  EXPECT_NE(eps.find("finite number above 0"), std::string::npos) << eps;
  GgufBuilder twiceKey = smallFile();
  twiceKey.u32("llama.block_count", 2);
  EXPECT_NE(openError(twiceKey.bytes()).find("metadata key appears twice"), std::string::npos);
  GgufBuilder badBool = smallFile();
  badBool.raw("general.flag", 7 /* bool */, {std::byte{2}});
  EXPECT_NE(openError(badBool.bytes()).find("neither 0 nor 1"), std::string::npos);
  GgufBuilder badAlignment = smallFile();
  badAlignment.f32("general.alignment", 32.0f);
  EXPECT_NE(openError(badAlignment.bytes()).find("power of two"), std::string::npos);

  // Every truncation is an error, never a crash or a tensor read past the end.
  for (size_t cut = 0; cut < file.size(); cut += 7) {
    const std::vector<std::byte> head(file.begin(), file.begin() + static_cast<ptrdiff_t>(cut));
    EXPECT_NE(openError(head), "") << "cut at " << cut;
  }
}

// The 32-value blocks with a minimum or a fifth bit, and Q5_K, with chosen fields; values as the layouts
// define.
TEST(Gguf, FiveBitAndOffsetBlocksDecodeAsGgmlDefinesThem) {
  GgufBuilder g;
  modelKeys(g);
  const auto halfBytes = [](float v) {
    const uint16_t bits = floatToHalf(v);
    std::vector<std::byte> out(2);
    std::memcpy(out.data(), &bits, 2);
    return out;
  };
  const auto append = [](std::vector<std::byte>& to, const std::vector<std::byte>& more) {
    to.insert(to.end(), more.begin(), more.end());
  };
  // The low nibbles: byte j holds j (value j) and 15 - j (value 16 + j). The fifth bits: qh = 0xA5A5F00F.
  std::vector<std::byte> nibbles;
  for (int j = 0; j < 16; ++j) nibbles.push_back(static_cast<std::byte>(j | ((15 - j) << 4)));
  const uint32_t qh = 0xA5A5F00Fu;
  std::vector<std::byte> qhBytes(4);
  std::memcpy(qhBytes.data(), &qh, 4);
  const auto low = [&](int v) { return v < 16 ? v : 15 - (v - 16); };  // value v's nibble
  const auto fifth = [&](int v) { return static_cast<int>((qh >> v) & 1u) * 16; };

  std::vector<std::byte> q41 = halfBytes(0.5f);  // d = 0.5, m = -3: x = 0.5 * nibble - 3
  append(q41, halfBytes(-3.0f));
  append(q41, nibbles);
  g.tensor("q41", {32}, testing::kGgmlQ4_1, q41);
  std::vector<std::byte> q50 = halfBytes(0.25f);  // x = 0.25 * (q5 - 16)
  append(q50, qhBytes);
  append(q50, nibbles);
  g.tensor("q50", {32}, testing::kGgmlQ5_0, q50);
  std::vector<std::byte> q51 = halfBytes(2.0f);  // x = 2 * q5 + 1
  append(q51, halfBytes(1.0f));
  append(q51, qhBytes);
  append(q51, nibbles);
  g.tensor("q51", {32}, testing::kGgmlQ5_1, q51);
  // Q5_K: Q4_K's scales and mins, qh[l] = l (so value l of sub-block s gets 16 when bit s of l is set), the
  // same nibble bytes as the Q4_K case above.
  const int s[8] = {1, 2, 3, 4, 17, 33, 49, 63}, m[8] = {5, 6, 7, 8, 20, 40, 50, 62};
  std::vector<std::byte> q5k = halfBytes(0.5f);
  append(q5k, halfBytes(0.25f));
  for (int j = 0; j < 4; ++j) q5k.push_back(static_cast<std::byte>(s[j] | ((s[j + 4] >> 4) << 6)));
  for (int j = 0; j < 4; ++j) q5k.push_back(static_cast<std::byte>(m[j] | ((m[j + 4] >> 4) << 6)));
  for (int j = 0; j < 4; ++j)
    q5k.push_back(static_cast<std::byte>((s[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4)));
  for (int l = 0; l < 32; ++l) q5k.push_back(static_cast<std::byte>(l));
  for (int gIndex = 0; gIndex < 4; ++gIndex)
    for (int l = 0; l < 32; ++l) q5k.push_back(static_cast<std::byte>((l % 16) | ((15 - l % 16) << 4)));
  ASSERT_EQ(q5k.size(), 176u);
  g.tensor("q5k", {256}, testing::kGgmlQ5_K, q5k);

  const fs::path path = testing::makeTempDir("gguf-blocks5") / "blocks.gguf";
  g.write(path);
  const auto ckpt = Checkpoint::open(path);
  const std::vector<float> a = ckpt->readFloat("q41"), b = ckpt->readFloat("q50"), c = ckpt->readFloat("q51");
  for (int v = 0; v < 32; ++v) {
    EXPECT_EQ(a[v], 0.5f * static_cast<float>(low(v)) - 3.0f) << v;
    EXPECT_EQ(b[v], 0.25f * static_cast<float>(low(v) + fifth(v) - 16)) << v;
    EXPECT_EQ(c[v], 2.0f * static_cast<float>(low(v) + fifth(v)) + 1.0f) << v;
  }
  const std::vector<float> k5 = ckpt->readFloat("q5k");
  for (int sub = 0; sub < 8; ++sub)
    for (int l = 0; l < 32; ++l) {
      const int q = (sub % 2 == 0 ? l % 16 : 15 - l % 16) + ((l >> sub) & 1) * 16;
      EXPECT_FLOAT_EQ(k5[sub * 32 + l],
                      0.5f * static_cast<float>(s[sub] * q) - 0.25f * static_cast<float>(m[sub]))
          << "sub-block " << sub << " value " << l;
    }
}

// llama.cpp's LlamaModel permutes a llama's q and k biases as it does their weights' rows; Gemma 3's 1 + w
// covers its text model's norms, not tensors kept under their GGUF names; the 27B model's query scale.
TEST(Gguf, BiasesNormsAndTheQueryScaleFollowLlamaCpp) {
  GgufBuilder g;
  modelKeys(g);  // 4 heads of 8 (hidden 32)
  std::vector<float> stored(32);
  for (int i = 0; i < 32; ++i) stored[i] = static_cast<float>(i);
  g.tensor("blk.0.attn_q.bias", {32}, testing::kGgmlF32, testing::floatBytes(stored));
  const fs::path dir = testing::makeTempDir("gguf-conventions");
  g.write(dir / "bias.gguf");
  const std::vector<float> bias =
      Checkpoint::open(dir / "bias.gguf")->readFloat("model.layers.0.self_attn.q_proj.bias");
  for (int h = 0; h < 4; ++h)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 4; ++i)  // presented h*8 + j*4 + i is stored h*8 + 2i + j
        EXPECT_EQ(bias[h * 8 + j * 4 + i], static_cast<float>(h * 8 + 2 * i + j));

  const std::vector<float> ones = {1.5f, 1.5f};
  GgufBuilder big;
  big.string("general.architecture", "gemma3");
  big.u32("gemma3.embedding_length", 5376);
  big.u32("gemma3.block_count", 62);
  big.u32("gemma3.feed_forward_length", 21504);
  big.u32("gemma3.attention.head_count", 32);
  big.u32("gemma3.attention.key_length", 128);
  big.tensor("blk.0.attn_norm.weight", {2}, testing::kGgmlF32, testing::floatBytes(ones));
  big.tensor("v.post_layernorm.weight", {2}, testing::kGgmlF32, testing::floatBytes(ones));
  big.write(dir / "gemma27b.gguf");
  const auto ckpt = Checkpoint::open(dir / "gemma27b.gguf");
  EXPECT_EQ(ckpt->config()->at("query_pre_attn_scalar"), 168) << "5376 / 32, the 27B config's value";
  EXPECT_EQ(ckpt->readFloat("model.layers.0.input_layernorm.weight"), std::vector<float>({0.5f, 0.5f}));
  EXPECT_EQ(ckpt->readFloat("v.post_layernorm.weight"), ones) << "not a text norm: stored as it is";
}

}  // namespace
}  // namespace sharelens
