// Model views of real HF-layout checkpoints for every family. Expected per-head matrices are built here
// directly from the raw tensors with each family's documented layout, independently of MatrixExpr.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "core/arch/family.hpp"
#include "core/arch/hf_decoder.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

// Raw tensor as a row-major [rows, cols] float matrix.
FloatMatrix raw2d(const Checkpoint& ckpt, const std::string& name) {
  const TensorInfo& t = *ckpt.at(name).info;
  FloatMatrix m(t.dim(0), t.dim(1));
  m.data = ckpt.readFloat(name);
  return m;
}

// rows [r0, r0+n) of m, or of m^T when transposed.
FloatMatrix rowBlock(const FloatMatrix& m, int64_t r0, int64_t n, bool transposed) {
  const int64_t cols = transposed ? m.rows : m.cols;
  FloatMatrix out(n, cols);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < cols; ++c) out(r, c) = transposed ? m(c, r0 + r) : m(r0 + r, c);
  return out;
}

FloatMatrix colBlock(const FloatMatrix& m, int64_t c0, int64_t n, bool transposed) {
  const int64_t rows = transposed ? m.cols : m.rows;
  FloatMatrix out(rows, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) out(r, c) = transposed ? m(c0 + c, r) : m(r, c0 + c);
  return out;
}

void expectSame(const FloatMatrix& a, const FloatMatrix& b, const std::string& what) {
  ASSERT_EQ(a.rows, b.rows) << what;
  ASSERT_EQ(a.cols, b.cols) << what;
  EXPECT_EQ(a.data, b.data) << what;
}

struct Opened {
  fs::path dir;
  std::unique_ptr<Checkpoint> ckpt;
  ModelView view;
};

Opened openFixture(const testing::FixtureSpec& spec, const std::string& tag) {
  Opened o;
  o.dir = testing::makeTempDir(tag);
  testing::writeHfFixture(o.dir, spec);
  o.ckpt = Checkpoint::open(o.dir);
  o.view = openModelView(*o.ckpt);
  return o;
}

using testing::errorOf;

class DecoderFamilies : public ::testing::TestWithParam<Family> {};

TEST_P(DecoderFamilies, ShapeRolesAndPerHeadSlicesMatchTheRawTensors) {
  const auto spec = testing::defaultSpec(GetParam());
  auto o = openFixture(spec, "view");
  const ModelView& v = o.view;
  EXPECT_EQ(v.family, GetParam());
  EXPECT_EQ(v.shape.layers, spec.layers);
  EXPECT_EQ(v.shape.hidden, spec.hidden);
  EXPECT_EQ(v.shape.heads, spec.heads);
  EXPECT_EQ(v.shape.kvHeads, spec.kvHeads);
  EXPECT_EQ(v.shape.headDim, spec.headDim);
  EXPECT_EQ(v.shape.ffn, spec.ffn);
  EXPECT_EQ(v.shape.vocab, spec.vocab);
  EXPECT_EQ(v.shape.tiedEmbeddings, spec.tied);
  EXPECT_TRUE(v.missing.empty());
  EXPECT_TRUE(v.unexpected.empty());
  ASSERT_EQ(v.layers.size(), static_cast<size_t>(spec.layers));

  const std::string prefix = "model.layers.";
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string base = prefix + std::to_string(l) + ".self_attn.";
    const FloatMatrix q = raw2d(*o.ckpt, base + "q_proj.weight"), k = raw2d(*o.ckpt, base + "k_proj.weight"),
                      o_ = raw2d(*o.ckpt, base + "o_proj.weight");
    for (int64_t h = 0; h < spec.heads; ++h) {
      expectSame(materialize(*o.ckpt, v.headMatrix(l, Proj::Q, h)),
                 rowBlock(q, h * spec.headDim, spec.headDim, false), "q head " + std::to_string(h));
      expectSame(materialize(*o.ckpt, v.headMatrix(l, Proj::O, h)),
                 colBlock(o_, h * spec.headDim, spec.headDim, false), "o head " + std::to_string(h));
    }
    for (int64_t j = 0; j < spec.kvHeads; ++j)
      expectSame(materialize(*o.ckpt, v.headMatrix(l, Proj::K, j)),
                 rowBlock(k, j * spec.headDim, spec.headDim, false), "k head " + std::to_string(j));
    EXPECT_THROW(v.headMatrix(l, Proj::K, spec.kvHeads), Error) << "GQA: no KV head beyond kv_heads";
  }
  const RoleCounts counts = countParameters(*o.ckpt, v);
  int64_t total = 0;
  for (const auto& name : o.ckpt->tensorNames()) total += static_cast<int64_t>(o.ckpt->at(name).info->numel);
  EXPECT_EQ(counts.total, total);
  const int64_t qkvo =
      2 * spec.heads * spec.headDim * spec.hidden + 2 * spec.kvHeads * spec.headDim * spec.hidden;
  const int64_t bias = GetParam() == Family::Qwen2 ? (spec.heads + 2 * spec.kvHeads) * spec.headDim : 0;
  EXPECT_EQ(counts.of(TensorRole::Attention), spec.layers * (qkvo + bias));
  EXPECT_EQ(counts.of(TensorRole::Ffn), spec.layers * 3 * spec.ffn * spec.hidden);
  EXPECT_EQ(counts.of(TensorRole::Embedding), spec.vocab * spec.hidden);
  EXPECT_EQ(counts.of(TensorRole::OutputHead), spec.tied ? 0 : spec.vocab * spec.hidden);
  fs::remove_all(o.dir);
}

INSTANTIATE_TEST_SUITE_P(All, DecoderFamilies,
                         ::testing::Values(Family::Llama, Family::Qwen2, Family::Qwen3, Family::Gemma3),
                         [](const auto& info) { return std::string(familyName(info.param)); });

TEST(ModelView, Qwen2BiasesAndGemmaNorms) {
  auto qwen = openFixture(testing::defaultSpec(Family::Qwen2), "qwen");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(qwen.view.layers[0].bias[i].has_value());
  EXPECT_FALSE(qwen.view.layers[0].bias[static_cast<int>(Proj::O)].has_value());
  auto gemma = openFixture(testing::defaultSpec(Family::Gemma3), "gemma");
  for (int s = 0; s < kNormSlotCount; ++s) EXPECT_TRUE(gemma.view.layers[1].norm[s].has_value()) << s;
  EXPECT_EQ(gemma.view.shape.heads * gemma.view.shape.headDim, 96) << "explicit head_dim, not hidden / heads";
  fs::remove_all(qwen.dir);
  fs::remove_all(gemma.dir);
}

TEST(ModelView, Qwen3HasQkNormNoBiasesAndItsOwnHeadDim) {
  // Qwen3 Technical Report, section 2: QKV biases removed, QK-Norm added; head_dim is a config field.
  auto o = openFixture(testing::defaultSpec(Family::Qwen3), "qwen3");
  EXPECT_EQ(o.view.family, Family::Qwen3);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(o.view.layers[0].bias[i].has_value());
  EXPECT_TRUE(o.view.layers[2].norm[static_cast<int>(NormSlot::QNorm)].has_value());
  EXPECT_TRUE(o.view.layers[2].norm[static_cast<int>(NormSlot::KNorm)].has_value());
  EXPECT_FALSE(o.view.layers[2].norm[static_cast<int>(NormSlot::FfnOut)].has_value()) << "no sandwich norms";
  EXPECT_EQ(o.view.shape.heads * o.view.shape.headDim, 128) << "explicit head_dim, not hidden / heads";
  EXPECT_TRUE(o.view.unexpected.empty());
  EXPECT_FALSE(forwardTraits(Family::Qwen3).normWeightPlusOne) << "plain RMSNorm, unlike Gemma's (1 + w)";
  fs::remove_all(o.dir);
}

// Phi-3 (transformers' modeling_phi3.py): qkv_proj's rows are Q (heads x head_dim), then K and V (kv_heads
// x head_dim each); gate_up_proj's are gate, then up (`gate, up = gate_up_proj(x).chunk(2, dim=-1)`).
TEST(ModelView, Phi3FusedQkvAndGateUpSplitIntoTheirRowBlocks) {
  const auto spec = testing::defaultSpec(Family::Phi3);
  auto o = openFixture(spec, "phi3");
  const ModelView& v = o.view;
  EXPECT_EQ(v.family, Family::Phi3);
  EXPECT_EQ(familyName(v.family), "phi3");
  EXPECT_EQ(v.shape.heads, spec.heads);
  EXPECT_EQ(v.shape.kvHeads, spec.kvHeads);
  EXPECT_EQ(v.shape.headDim, spec.hidden / spec.heads) << "Phi3Config has no head_dim";
  EXPECT_EQ(v.shape.ffn, spec.ffn);
  EXPECT_TRUE(v.missing.empty());
  EXPECT_TRUE(v.unexpected.empty());
  const int64_t q = spec.heads * spec.headDim, kv = spec.kvHeads * spec.headDim;
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string base = "model.layers." + std::to_string(l) + ".";
    const FloatMatrix qkv = raw2d(*o.ckpt, base + "self_attn.qkv_proj.weight"),
                      gateUp = raw2d(*o.ckpt, base + "mlp.gate_up_proj.weight");
    const LayerView& layer = v.layers[static_cast<size_t>(l)];
    expectSame(materialize(*o.ckpt, layer.at(Proj::Q)), rowBlock(qkv, 0, q, false), "Q");
    expectSame(materialize(*o.ckpt, layer.at(Proj::K)), rowBlock(qkv, q, kv, false), "K");
    expectSame(materialize(*o.ckpt, layer.at(Proj::V)), rowBlock(qkv, q + kv, kv, false), "V");
    expectSame(materialize(*o.ckpt, layer.at(Proj::Gate)), rowBlock(gateUp, 0, spec.ffn, false), "gate");
    expectSame(materialize(*o.ckpt, layer.at(Proj::Up)), rowBlock(gateUp, spec.ffn, spec.ffn, false), "up");
    for (int64_t j = 0; j < spec.kvHeads; ++j)
      expectSame(materialize(*o.ckpt, v.headMatrix(l, Proj::V, j)),
                 rowBlock(qkv, q + kv + j * spec.headDim, spec.headDim, false),
                 "v head " + std::to_string(j));
  }
  const RoleCounts counts = countParameters(*o.ckpt, v);
  EXPECT_EQ(counts.of(TensorRole::Attention), spec.layers * (2 * q + 2 * kv) * spec.hidden);
  EXPECT_EQ(counts.of(TensorRole::Ffn), spec.layers * 3 * spec.ffn * spec.hidden);
  EXPECT_TRUE(forwardTraits(Family::Phi3).slidingWindowAllLayers);
  fs::remove_all(o.dir);
}

// A config whose head counts do not add up to the fused tensor's rows is named, with the split it expected.
// Without config.json, Q has the hidden size's rows (Phi3Config has no head_dim) and K, V halve the rest.
TEST(ModelView, Phi3FusedTensorThatDoesNotSplitIsANamedError) {
  auto spec = testing::defaultSpec(Family::Phi3);
  const fs::path dir = testing::makeTempDir("phi3-bad");
  testing::writeHfFixture(dir, spec);
  Json config = readJsonFile(dir / "config.json");
  config["num_key_value_heads"] = 1;
  writeFileAtomically(dir / "config.json", config.dump());
  auto ckpt = Checkpoint::open(dir);
  std::string e = testing::errorOf([&] { openModelView(*ckpt); });
  EXPECT_NE(e.find("fused projection does not split"), std::string::npos) << e;
  EXPECT_NE(e.find("self_attn.qkv_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("q 64 + k 16 + v 16 = 96"), std::string::npos) << e;
  EXPECT_NE(e.find("[128, 64]"), std::string::npos) << e;
  fs::remove(dir / "config.json");
  ckpt = Checkpoint::open(dir);
  const ModelView v = openModelView(*ckpt);
  EXPECT_EQ(v.family, Family::Phi3) << "qkv_proj is Phi-3's evidence";
  const FloatMatrix qkv = raw2d(*ckpt, "model.layers.1.self_attn.qkv_proj.weight");
  expectSame(materialize(*ckpt, v.layers[1].at(Proj::Q)), rowBlock(qkv, 0, 64, false), "Q");
  expectSame(materialize(*ckpt, v.layers[1].at(Proj::V)), rowBlock(qkv, 96, 32, false), "V");
  fs::remove_all(dir);
}

// The window of every layer (core/arch/family.hpp), which the forward pass applies and post-training
// refuses: as transformers reads config.json -- its Mistral and Phi-3 mask every layer when sliding_window is
// set and not null, unless use_sliding_window is false; its Llama ignores the field; Gemma 3's windows are
// per layer, not this.
TEST(ModelView, TheWindowOfEveryLayerIsReadAsTransformersReadsIt) {
  auto view = [](Family family, std::string modelType) {
    ModelView v;
    v.family = family;
    v.modelType = std::move(modelType);
    return v;
  };
  const Json window = {{"sliding_window", 16}};
  EXPECT_EQ(everyLayerSlidingWindow(view(Family::Llama, "mistral"), window, "c.json"), 16);
  EXPECT_EQ(everyLayerSlidingWindow(view(Family::Phi3, "phi3"), window, "c.json"), 16);
  EXPECT_EQ(everyLayerSlidingWindow(view(Family::Llama, "llama"), window, "c.json"), std::nullopt);
  EXPECT_EQ(everyLayerSlidingWindow(view(Family::Gemma3, "gemma3_text"), window, "c.json"), std::nullopt);
  EXPECT_EQ(everyLayerSlidingWindow(view(Family::Phi3, "phi3"), {{"sliding_window", nullptr}}, "c.json"),
            std::nullopt);
  EXPECT_EQ(everyLayerSlidingWindow(view(Family::Llama, "mistral"),
                                    {{"sliding_window", 16}, {"use_sliding_window", false}}, "c.json"),
            std::nullopt);
  EXPECT_EQ(everyLayerSlidingWindow(view(Family::Llama, "mistral"), Json::object(), "c.json"), std::nullopt);
  const std::string bad = testing::errorOf([&] {
    everyLayerSlidingWindow(view(Family::Llama, "mistral"), {{"sliding_window", "4k"}}, "c.json");
  });
  EXPECT_NE(bad.find("c.json field 'sliding_window'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("\"4k\""), std::string::npos) << bad;
}

TEST(ModelView, WithoutConfigQkNormAloneSaysQwen3AndTheFfnSandwichSaysGemma3) {
  for (Family family : {Family::Qwen3, Family::Gemma3}) {
    auto spec = testing::defaultSpec(family);
    spec.writeConfig = false;
    auto o = openFixture(spec, "noconfig-qk");
    EXPECT_EQ(o.view.family, family) << familyName(family);
    fs::remove_all(o.dir);
  }
}

TEST(ModelView, GemmaMultimodalNestingPrefixAndVisionTower) {
  auto spec = testing::defaultSpec(Family::Gemma3);
  spec.gemmaMultimodal = true;
  auto o = openFixture(spec, "gemma-mm");
  EXPECT_EQ(o.view.family, Family::Gemma3);
  EXPECT_EQ(o.view.modelType, "gemma3");
  EXPECT_EQ(o.view.shape.headDim, spec.headDim);
  EXPECT_TRUE(o.view.unexpected.empty());
  EXPECT_EQ(o.view.ignored.size(), 2u);
  EXPECT_EQ(o.view.layers[0].at(Proj::Q).terms[0].left.tensor,
            "model.language_model.layers.0.self_attn.q_proj.weight");
  fs::remove_all(o.dir);
}

TEST(ModelView, GemmaTextConfigFallsBackToTheConfigClassDefaults) {
  const Json text = {{"hidden_size", 2560}, {"intermediate_size", 10240}, {"num_hidden_layers", 34}};
  const auto& layout = static_cast<const DecoderAdapter&>(gemma3Adapter()).layout();
  const ModelShape s = readConfigShape(JsonObject(text, "config.json.text_config"), layout.config,
                                       layout.tiedByDefault, layout.defaults);
  EXPECT_EQ(s.heads, 8);
  EXPECT_EQ(s.kvHeads, 4);
  EXPECT_EQ(s.headDim, 256);
  EXPECT_EQ(s.vocab, 262208);
  EXPECT_TRUE(s.tiedEmbeddings);
}

class Gpt2Prefix : public ::testing::TestWithParam<bool> {};

TEST_P(Gpt2Prefix, PackedConv1DSplitsIntoTransposedHeads) {
  auto spec = testing::defaultSpec(Family::Gpt2);
  spec.gpt2TransformerPrefix = GetParam();
  auto o = openFixture(spec, "gpt2");
  const ModelView& v = o.view;
  const std::string p = GetParam() ? "transformer." : "";
  EXPECT_EQ(v.family, Family::Gpt2);
  EXPECT_FALSE(v.shape.gatedFfn);
  EXPECT_EQ(v.shape.ffn, 4 * spec.hidden);
  EXPECT_EQ(v.ignored.size(), static_cast<size_t>(spec.layers)) << "attn.bias mask buffers";
  EXPECT_TRUE(v.unexpected.empty());
  EXPECT_TRUE(v.missing.empty());
  const int64_t d = spec.hidden, hd = d / spec.heads;
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string b = p + "h." + std::to_string(l) + ".";
    const FloatMatrix cAttn = raw2d(*o.ckpt, b + "attn.c_attn.weight");  // [d, 3d] = [in, out]
    for (int i = 0; i < 3; ++i) {
      const Proj proj = static_cast<Proj>(i);
      // canonical projection i = (columns [i*d, (i+1)*d) of c_attn)^T
      const FloatMatrix whole = colBlock(cAttn, i * d, d, false);
      FloatMatrix expected(d, d);
      for (int64_t r = 0; r < d; ++r)
        for (int64_t c = 0; c < d; ++c) expected(r, c) = whole(c, r);
      expectSame(materialize(*o.ckpt, v.layers[l].at(proj)), expected, "proj " + std::to_string(i));
      for (int64_t h = 0; h < spec.heads; ++h)
        expectSame(materialize(*o.ckpt, v.headMatrix(l, proj, h)), rowBlock(expected, h * hd, hd, false),
                   "head");
    }
    const FloatMatrix fc = raw2d(*o.ckpt, b + "mlp.c_fc.weight");  // [d, 4d]
    expectSame(materialize(*o.ckpt, v.layers[l].at(Proj::Up)), rowBlock(fc, 0, 4 * d, true), "up");
    EXPECT_FALSE(v.layers[l].has(Proj::Gate));
    const auto qBias = materialize(*o.ckpt, *v.layers[l].bias[1]);
    const auto all = o.ckpt->readFloat(b + "attn.c_attn.bias");
    EXPECT_EQ(qBias, std::vector<float>(all.begin() + d, all.begin() + 2 * d))
        << "K bias is the middle third";
  }
  fs::remove_all(o.dir);
}

INSTANTIATE_TEST_SUITE_P(Prefix, Gpt2Prefix, ::testing::Bool());

TEST(ModelView, NarrowDTypesReadAsTheirFloatValues) {
  for (DType d : {DType::BF16, DType::F16}) {
    auto spec = testing::defaultSpec(Family::Llama);
    spec.dtype = d;
    spec.shards = 2;
    auto o = openFixture(spec, "dtype");
    const TensorRef& ref = o.ckpt->at("model.layers.1.self_attn.q_proj.weight");
    EXPECT_EQ(ref.info->dtype, d);
    const FloatMatrix head = materialize(*o.ckpt, o.view.headMatrix(1, Proj::Q, 2));
    const auto bytes = ref.file->bytes(*ref.info);
    for (int64_t r = 0; r < head.rows; ++r)
      for (int64_t c = 0; c < head.cols; ++c) {
        const size_t index = static_cast<size_t>((2 * spec.headDim + r) * spec.hidden + c);
        uint16_t bits;
        std::memcpy(&bits, bytes.data() + 2 * index, 2);
        EXPECT_EQ(head(r, c), d == DType::BF16 ? bfloat16ToFloat(bits) : halfToFloat(bits));
      }
    fs::remove_all(o.dir);
  }
}

TEST(ModelView, LayersSortNumerically) {
  auto spec = testing::defaultSpec(Family::Llama);
  spec.layers = 12;
  spec.hidden = 32;
  spec.ffn = 48;
  spec.headDim = 8;
  auto o = openFixture(spec, "sort");
  ASSERT_EQ(o.view.layers.size(), 12u);
  for (int64_t l = 0; l < 12; ++l) {
    EXPECT_EQ(o.view.layers[l].index, l);
    EXPECT_EQ(o.view.layers[l].at(Proj::Down).terms[0].left.tensor,
              "model.layers." + std::to_string(l) + ".mlp.down_proj.weight");
  }
  fs::remove_all(o.dir);
}

TEST(ModelView, ConfigContradictingTheTensorsIsANamedError) {
  const auto dir = testing::makeTempDir("contradict");
  testing::writeHfFixture(dir, testing::defaultSpec(Family::Llama));
  Json config = readJsonFile(dir / "config.json");
  config["num_attention_heads"] = 8;  // tensors have 4 heads of 16
  writeFileAtomically(dir / "config.json", config.dump());
  const auto ckpt = Checkpoint::open(dir);
  const std::string e = errorOf([&] { openModelView(*ckpt); });
  EXPECT_NE(e.find("config.json field 'num_attention_heads'"), std::string::npos) << e;
  EXPECT_NE(e.find("q_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("128"), std::string::npos) << e;  // expected 8 x 16 rows
  EXPECT_NE(e.find("[64, 64]"), std::string::npos) << e;
  EXPECT_NE(e.find("Hint"), std::string::npos) << e;

  config["num_attention_heads"] = 4;
  config["num_key_value_heads"] = 3;
  writeFileAtomically(dir / "config.json", config.dump());
  const auto again = Checkpoint::open(dir);
  EXPECT_NE(errorOf([&] { openModelView(*again); }).find("num_key_value_heads"), std::string::npos);

  config["num_key_value_heads"] = 2;
  config["num_hidden_layers"] = 5;
  writeFileAtomically(dir / "config.json", config.dump());
  const auto third = Checkpoint::open(dir);
  EXPECT_NE(errorOf([&] { openModelView(*third); }).find("layer count contradicts"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ModelView, MissingAndUnexpectedTensorsAreReportedByName) {
  const auto dir = testing::makeTempDir("missing");
  testing::writeHfFixture(dir, testing::defaultSpec(Family::Llama));
  {
    const auto file = SafetensorsFile::open(dir / "model.safetensors");
    std::vector<TensorWrite> keep;
    for (const TensorInfo& t : file->tensors())
      if (t.name != "model.layers.1.mlp.up_proj.weight")
        keep.push_back({t.name, t.dtype, t.shape, file->bytes(t)});
    const std::vector<float> extra(8, 1.0f);
    keep.push_back({"model.layers.0.adapter.weight", DType::F32, {8}, std::as_bytes(std::span(extra))});
    writeSafetensors(dir / "rewritten.safetensors", keep);
  }
  fs::rename(dir / "rewritten.safetensors", dir / "model.safetensors");
  const auto ckpt = Checkpoint::open(dir);
  const ModelView v = openModelView(*ckpt);
  EXPECT_EQ(v.missing, std::vector<std::string>{"model.layers.1.mlp.up_proj.weight"});
  EXPECT_EQ(v.unexpected, std::vector<std::string>{"model.layers.0.adapter.weight"});
  EXPECT_FALSE(v.layers[1].has(Proj::Up));
  EXPECT_NE(errorOf([&] { v.layers[1].at(Proj::Up); }).find("no 'up' projection"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ModelView, AGpt2ProjectionNarrowerThanNEmbdIsANamedError) {
  // Found by fuzz_model_view: GPT-2's attention c_proj stored as 44 x 64 ([in, out]) under n_embd 64 passed
  // the view, and headMatrix then sliced the O heads' columns past its end (std::out_of_range). Conv1D's
  // input side of c_proj and c_fc and the output side of mlp.c_proj are now checked against n_embd too.
  for (const std::string narrowed :
       {"h.2.attn.c_proj.weight", "h.1.mlp.c_fc.weight", "h.0.mlp.c_proj.weight"}) {
    const auto dir = testing::makeTempDir("narrow-gpt2");
    testing::writeHfFixture(dir, testing::defaultSpec(Family::Gpt2));
    std::vector<int64_t> shape;
    std::vector<float> values;
    {
      const auto file = SafetensorsFile::open(dir / "model.safetensors");
      std::vector<TensorWrite> keep;
      for (const TensorInfo& t : file->tensors()) {
        if (t.name != narrowed) {
          keep.push_back({t.name, t.dtype, t.shape, file->bytes(t)});
          continue;
        }
        shape = t.shape;
        shape[narrowed == "h.0.mlp.c_proj.weight" ? 1 : 0] = 44;  // the side that must be n_embd = 64
        values.assign(static_cast<size_t>(shape[0] * shape[1]), 0.5f);
        keep.push_back({t.name, DType::F32, shape, std::as_bytes(std::span(values))});
      }
      writeSafetensors(dir / "rewritten.safetensors", keep);
    }
    fs::rename(dir / "rewritten.safetensors", dir / "model.safetensors");
    const auto ckpt = Checkpoint::open(dir);
    const std::string e = errorOf([&] { openModelView(*ckpt); });
    EXPECT_NE(e.find("contradicts tensor '" + narrowed + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("field 'n_embd'"), std::string::npos) << e;
    EXPECT_NE(e.find("n_embd = 64"), std::string::npos) << e;
    EXPECT_NE(e.find(shapeToString(shape)), std::string::npos) << e;
    fs::remove_all(dir);
  }
}

TEST(ModelView, AStrayHugeLayerIndexIsANamedErrorNotAnAllocation) {
  // Found by the bad-input probe: "model.layers.4294967296..." made the view allocate 2^32 layers.
  const auto dir = testing::makeTempDir("huge-index");
  testing::writeHfFixture(dir, testing::defaultSpec(Family::Llama));
  {
    const auto file = SafetensorsFile::open(dir / "model.safetensors");
    std::vector<TensorWrite> keep;
    for (const TensorInfo& t : file->tensors()) keep.push_back({t.name, t.dtype, t.shape, file->bytes(t)});
    const std::vector<float> extra(8, 1.0f);
    keep.push_back(
        {"model.layers.4294967296.mlp.up_proj.weight", DType::F32, {8}, std::as_bytes(std::span(extra))});
    writeSafetensors(dir / "rewritten.safetensors", keep);
  }
  fs::rename(dir / "rewritten.safetensors", dir / "model.safetensors");
  const auto ckpt = Checkpoint::open(dir);
  const std::string error = errorOf([&] { openModelView(*ckpt); });
  EXPECT_NE(error.find("layer indices are not contiguous"), std::string::npos) << error;
  EXPECT_NE(error.find("4294967296"), std::string::npos) << error;
  EXPECT_NE(error.find("none for layer 3"), std::string::npos) << error;
  fs::remove_all(dir);
}

TEST(ModelView, WithoutConfigTheShapeIsInferredAndHeadsNeedConfig) {
  auto spec = testing::defaultSpec(Family::Qwen2);
  spec.writeConfig = false;
  auto o = openFixture(spec, "noconfig");
  EXPECT_EQ(o.view.family, Family::Qwen2) << "detected from the q/k/v biases";
  EXPECT_EQ(o.view.shape.hidden, spec.hidden);
  EXPECT_EQ(o.view.shape.ffn, spec.ffn);
  EXPECT_EQ(o.view.shape.layers, spec.layers);
  EXPECT_FALSE(o.view.hasHeads());
  EXPECT_NE(errorOf([&] { o.view.headMatrix(0, Proj::Q, 0); }).find("config.json"), std::string::npos);
  fs::remove_all(o.dir);

  auto gemma = testing::defaultSpec(Family::Gemma3);
  gemma.writeConfig = false;
  auto g = openFixture(gemma, "noconfig-gemma");
  EXPECT_EQ(g.view.family, Family::Gemma3);
  EXPECT_EQ(g.view.shape.headDim, gemma.headDim) << "from q_norm";
  EXPECT_EQ(g.view.shape.heads, gemma.heads);
  fs::remove_all(g.dir);
}

TEST(ModelView, UnknownArchitectureIsANamedError) {
  const auto dir = testing::makeTempDir("unknown");
  const std::vector<float> v(4, 0.0f);
  writeSafetensors(dir / "model.safetensors", std::vector<EncodedTensor>{EncodedTensor::fromFloats(
                                                  "encoder.block.0.w", DType::F32, {2, 2}, v)});
  writeFileAtomically(dir / "config.json", R"({"model_type": "t5"})");
  const auto ckpt = Checkpoint::open(dir);
  const std::string e = errorOf([&] { openModelView(*ckpt); });
  EXPECT_NE(e.find("unrecognised model architecture"), std::string::npos) << e;
  EXPECT_NE(e.find("'t5'"), std::string::npos) << e;
  EXPECT_NE(e.find("qwen3, "), std::string::npos) << "the known model types come from the adapters: " << e;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
