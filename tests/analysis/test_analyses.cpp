// Matrix PCA, atom correlation, DirectShare and the embedding study on checkpoints built with known
// structure, so the expected results are closed forms.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/matrix_pca.hpp"
#include "core/arch/family.hpp"
#include "core/derived_checkpoint.hpp"
#include "core/error.hpp"
#include "core/topology.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

// Rewrites chosen tensors of a fixture (float values, original dtype).
void rewrite(const fs::path& dir, const std::map<std::string, std::vector<float>>& replacements) {
  const auto file = SafetensorsFile::open(dir / "model.safetensors");
  std::vector<EncodedTensor> encoded;
  std::vector<TensorWrite> writes;
  encoded.reserve(replacements.size());
  for (const TensorInfo& t : file->tensors()) {
    if (auto it = replacements.find(t.name); it != replacements.end()) {
      encoded.push_back(EncodedTensor::fromFloats(t.name, t.dtype, t.shape, it->second));
      writes.push_back(encoded.back().view());
    } else {
      writes.push_back({t.name, t.dtype, t.shape, file->bytes(t)});
    }
  }
  writeSafetensors(dir / "rewritten.safetensors", writes);
  fs::rename(dir / "rewritten.safetensors", dir / "model.safetensors");
}

std::vector<float> orthonormalAtomsCombination(const std::vector<Eigen::MatrixXd>& atoms,
                                               const std::vector<double>& c) {
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(atoms[0].rows(), atoms[0].cols());
  for (size_t s = 0; s < atoms.size(); ++s) w += c[s] * atoms[s];
  std::vector<float> out;
  for (int64_t i = 0; i < w.rows(); ++i)
    for (int64_t j = 0; j < w.cols(); ++j) out.push_back(static_cast<float>(w(i, j)));
  return out;
}

// A report's activation section read back (`export --input report.json`, through the registry's entry) holds
// what the pass measured, the model's width and head count too (issue 41: they were dropped), and a report
// written before they were kept still reads, its head count from the attention map's labels.
TEST(Activations, AReportReadBackKeepsTheMeasurementAndTheModelsShape) {
  ActivationResults r;
  r.corpus = "brown";
  r.tokenizer = "sentencepiece";
  r.tokenIds = {5, 9, 2};
  r.tokens = 3;
  r.layers = 2;
  r.hidden = 64;
  r.heads = 4;
  r.klDrift = {0.25};
  r.logitLensTokens = 3;
  r.attentionSimilarity = FloatMatrix(8, 8);
  r.attentionSimilarity(1, 2) = 0.5f;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) r.headLabels.push_back("L" + std::to_string(l) + ".h" + std::to_string(h));
  r.attentionTokens = 3;
  r.layerOutputs = {.n = 2, .rank = {0, 7, 7, 0}, .relativeDifference = {0, 0.5f, 0.5f, 0}};
  r.groups = {{0, 1}};
  r.threshold = 0.9;
  const AnalysisKind& kind = analysis(analyses::kActivations);
  const Json written = kind.toJson(makeResult(r));
  const AnalysisResult read = kind.fromJson(written);
  const ActivationResults* back = resultAs<ActivationResults>(read);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->hidden, 64);
  EXPECT_EQ(back->heads, 4);
  EXPECT_EQ(back->layers, 2);
  EXPECT_EQ(back->tokenIds, r.tokenIds);
  EXPECT_EQ(back->klDrift, r.klDrift);
  EXPECT_EQ(back->headLabels, r.headLabels);
  EXPECT_EQ(back->attentionSimilarity.data, r.attentionSimilarity.data);
  EXPECT_EQ(back->layerOutputs.rank, r.layerOutputs.rank);
  EXPECT_EQ(back->groups, r.groups);
  EXPECT_EQ(back->threshold, 0.9);
  EXPECT_EQ(kind.toJson(kind.fromJson(written)), written) << "read and written again, the same report";
  Json older = written;
  older.erase("hidden");
  older.erase("heads");
  const AnalysisResult readOld = kind.fromJson(older);
  const ActivationResults* old = resultAs<ActivationResults>(readOld);
  EXPECT_EQ(old->heads, 4) << "8 labels over 2 layers";
  EXPECT_EQ(old->hidden, 0) << "not known: not made up";
}

TEST(MatrixPca, RecoversAKnownNumberOfAtomsAndTheirVariance) {
  // Every layer's Q is a combination of 2 orthonormal atoms: explained variance reaches 1 at S = 2, the
  // error is 0 from there on, and the singular values are the norms of the coefficient rows.
  auto spec = testing::defaultSpec(Family::Llama);
  spec.layers = 5;
  const auto dir = testing::makeTempDir("pca");
  testing::writeHfFixture(dir, spec);
  const int64_t rows = spec.heads * spec.headDim, cols = spec.hidden;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd g(rows * cols, 2);
  for (int64_t i = 0; i < g.rows(); ++i) g(i, 0) = normal(rng), g(i, 1) = normal(rng);
  const Eigen::MatrixXd q =
      Eigen::HouseholderQR<Eigen::MatrixXd>(g).householderQ() * Eigen::MatrixXd::Identity(g.rows(), 2);
  std::vector<Eigen::MatrixXd> atoms(2, Eigen::MatrixXd(rows, cols));
  for (int s = 0; s < 2; ++s)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) atoms[s](i, j) = q(i * cols + j, s);
  const std::vector<std::vector<double>> coeff = {{3, 1}, {2.5, -1}, {3.5, 0.5}, {3, 0}, {2, 1.5}};
  std::map<std::string, std::vector<float>> replacements;
  for (int64_t l = 0; l < spec.layers; ++l)
    replacements["model.layers." + std::to_string(l) + ".self_attn.q_proj.weight"] =
        orthonormalAtomsCombination(atoms, coeff[static_cast<size_t>(l)]);
  rewrite(dir, replacements);

  const auto ckpt = Checkpoint::open(dir);
  const ModelView view = openModelView(*ckpt);
  MatrixPcaOptions options;
  options.projections = {Proj::Q};
  options.keepAtoms = true;
  const auto groups = computeMatrixPca(*ckpt, view, options, {});
  ASSERT_EQ(groups.size(), 1u);
  const MatrixPcaGroup& pca = groups[0];
  // X^T X = C^T C; its eigenvalues are those of the 2 x 2 matrix C C^T (C: 2 x 5 coefficient matrix).
  Eigen::MatrixXd c(2, 5);
  for (int l = 0; l < 5; ++l) c(0, l) = coeff[l][0], c(1, l) = coeff[l][1];
  const Eigen::VectorXd lambda =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(c * c.transpose()).eigenvalues();
  EXPECT_NEAR(pca.singularValues[0], std::sqrt(lambda(1)), 1e-4);
  EXPECT_NEAR(pca.singularValues[1], std::sqrt(lambda(0)), 1e-4);
  EXPECT_NEAR(pca.explainedVariance[0], lambda(1) / (lambda(0) + lambda(1)), 1e-6);
  EXPECT_NEAR(pca.explainedVariance[1], 1.0, 1e-6);
  EXPECT_LT(pca.reconstructionError[1], 1e-3);
  // Atoms 3..5 are the float32 rounding of the weights (s_s ~ 1e-7 ||X||, directions that change with the
  // BLAS threads): exactly 0, not noise that a coefficient map would colour.
  for (size_t s = 2; s < 5; ++s) {
    EXPECT_EQ(pca.singularValues[s], 0.0) << "atom " << s + 1;
    for (int64_t l = 0; l < 5; ++l) EXPECT_EQ(pca.coefficients(static_cast<int64_t>(s), l), 0.0f);
    EXPECT_TRUE(
        std::all_of(pca.atoms[s].data.begin(), pca.atoms[s].data.end(), [](float x) { return x == 0; }));
  }
  for (int64_t l = 0; l < 5; ++l) EXPECT_LT(pca.layerError(1, l), 1e-3) << "two atoms rebuild layer " << l;
  // Atoms are orthonormal: their correlation map is the identity (up to the 2 real atoms).
  const FloatMatrix phi = atomCorrelation(std::span<const FloatMatrix>(pca.atoms.data(), 2));
  EXPECT_NEAR(phi(0, 0), 1.0, 1e-5);
  EXPECT_NEAR(phi(0, 1), 0.0, 1e-4);
  // Coefficients reproduce each layer: sum_s C_sl^2 = ||W_l||^2.
  for (int64_t l = 0; l < 5; ++l) {
    const double expected = coeff[l][0] * coeff[l][0] + coeff[l][1] * coeff[l][1];
    EXPECT_NEAR(
        pca.coefficients(0, l) * pca.coefficients(0, l) + pca.coefficients(1, l) * pca.coefficients(1, l),
        expected, 1e-3);
  }
  fs::remove_all(dir);
}

TEST(MatrixPca, LayerGroupsParseAndRejectMistakes) {
  EXPECT_EQ(parseLayerGroups("0-2,3-5", 6), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(parseLayerGroups("0,2;1,3", 4), (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(parseLayerGroups("4", 6), (std::vector<std::vector<int64_t>>{{4}}));
  EXPECT_THROW(parseLayerGroups("0-9", 6), Error);
  EXPECT_THROW(parseLayerGroups("0-2,2-3", 6), Error);
  EXPECT_THROW(parseLayerGroups("0-2x", 6), Error);
  EXPECT_THROW(parseLayerGroups("3-1", 6), Error);
  EXPECT_THROW(parseLayerGroups("", 6), Error);
}

// MASA's grouping strategy ("Share Your Attention", Sec. Grouping Strategy): consecutive blocks with small
// drift stay together; G groups cut after the G-1 largest KL(p_l || p_{l+1}). Hand-worked cases.
TEST(MatrixPca, KlGroupsCutAfterTheLargestDrifts) {
  const std::vector<double> drift = {0.1, 0.9, 0.2, 0.05, 0.7};  // 6 layers
  using Groups = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(groupsFromKlDrift(drift, 6, 1), (Groups{{0, 1, 2, 3, 4, 5}}));
  EXPECT_EQ(groupsFromKlDrift(drift, 6, 2), (Groups{{0, 1}, {2, 3, 4, 5}}));
  EXPECT_EQ(groupsFromKlDrift(drift, 6, 3), (Groups{{0, 1}, {2, 3, 4}, {5}}));
  EXPECT_EQ(groupsFromKlDrift(drift, 6, 6), (Groups{{0}, {1}, {2}, {3}, {4}, {5}}));
  EXPECT_EQ(groupsFromKlDrift({0.5, 0.5, 0.5}, 4, 2), (Groups{{0}, {1, 2, 3}}))
      << "ties go to the earlier layer";
  EXPECT_THROW(groupsFromKlDrift(drift, 6, 7), Error);
  EXPECT_THROW(groupsFromKlDrift(drift, 6, 0), Error);
  // The older reading, kept as "kl-peaks": a group ends at each local maximum.
  EXPECT_EQ(groupsAtKlPeaks(drift, 6), (Groups{{0, 1}, {2, 3, 4}, {5}}));
  EXPECT_EQ(parseKlGrouping("kl"), kKlDefaultGroups);
  EXPECT_EQ(klGroupCount(kKlDefaultGroups, 12), 3) << "kl: the MASA paper's 3 groups";
  EXPECT_EQ(klGroupCount(kKlDefaultGroups, 2), 2) << "one per layer on a model of fewer";
  EXPECT_EQ(klGroupCount(5, 2), 5) << "a G typed is kept, to be refused where it is checked";
  EXPECT_EQ(klGroupCount(0, 2), 0) << "kl-peaks";
  EXPECT_EQ(parseKlGrouping("kl:5"), 5);
  EXPECT_EQ(parseKlGrouping("kl-peaks"), 0);
  EXPECT_EQ(parseKlGrouping("0-3,4-5"), std::nullopt);
  EXPECT_THROW(parseKlGrouping("kl:x"), Error);
  EXPECT_THROW(parseKlGrouping("kl:0"), Error);
}

TEST(AtomCorrelation, IsTheNormalisedInnerProduct) {
  FloatMatrix a(1, 2), b(1, 2), c(1, 2);
  a.data = {1, 0};
  b.data = {1, 1};
  c.data = {0, -2};
  const FloatMatrix atoms[] = {a, b, c};
  const FloatMatrix phi = atomCorrelation(atoms);
  EXPECT_NEAR(phi(0, 1), 1 / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(phi(0, 2), 0.0, 1e-6);
  EXPECT_NEAR(phi(1, 2), -1 / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(phi(2, 2), 1.0, 1e-6);
}

class DirectShareOnFamily : public ::testing::TestWithParam<Family> {};

// Head-wise shareable attention, Eq. 3 and Algorithms 1-2: a planted copy of a whole unit (a head under MHA,
// a KV group under GQA: its query heads and its key head) is the best match, and the written model shares the
// pair's W_q, W_k and W_v (and their biases).
TEST_P(DirectShareOnFamily, FindsPlantedCopiesAndSharesQKVOfWholeUnits) {
  auto spec = testing::defaultSpec(GetParam());
  const auto dir = testing::makeTempDir("ds");
  testing::writeHfFixture(dir, spec);
  const int64_t units = spec.kvHeads, srcUnit = units - 1, dstUnit = units > 1 ? 1 : 0;
  {
    const auto ckpt = Checkpoint::open(dir);
    const ModelView view = openModelView(*ckpt);
    TensorEditor editor(*ckpt);
    for (Proj p : {Proj::Q, Proj::K}) {  // the signature only: V stays different until shared
      const int64_t rows =
          unitRows(ModelDims{.heads = spec.heads, .kvHeads = spec.kvHeads, .headDim = spec.headDim}, p);
      editor.write(view.layers[2].at(p).sliceRows(dstUnit * rows, rows),
                   materialize(*ckpt, view.layers[0].at(p).sliceRows(srcUnit * rows, rows)));
    }
    editor.save(dir / "planted.safetensors", ckpt->metadata());
  }
  fs::rename(dir / "planted.safetensors", dir / "model.safetensors");
  const auto ckpt = Checkpoint::open(dir);
  const ModelView view = openModelView(*ckpt);
  const DirectShareResult r = computeDirectShare(*ckpt, view, 0.2, {});
  EXPECT_EQ(r.units, units);
  EXPECT_EQ(r.unitKind, spec.heads == spec.kvHeads ? "head" : "kv_group");
  ASSERT_FALSE(r.bestMatches.empty());
  EXPECT_EQ(r.bestMatches[0].target.layer, 2);
  EXPECT_EQ(r.bestMatches[0].target.unit, dstUnit);
  EXPECT_EQ(r.bestMatches[0].source.layer, 0);
  EXPECT_EQ(r.bestMatches[0].source.unit, srcUnit);
  EXPECT_NEAR(r.bestMatches[0].similarity, 1.0, 1e-5);
  // alpha = shared units / all units
  EXPECT_EQ(static_cast<int64_t>(r.chosen.size()), std::llround(0.2 * spec.layers * units));
  EXPECT_NEAR(r.achievedRatio(),
              static_cast<double>(r.chosen.size()) / static_cast<double>(spec.layers * units), 1e-12);
  for (const UnitMatch& m : r.chosen) EXPECT_LT(m.source.layer, m.target.layer);
  // Every shared weight and bias: Q rows of the unit's query heads, K and V rows of its KV head.
  const int64_t group = spec.heads / spec.kvHeads, d = spec.hidden, hd = spec.headDim;
  const int64_t biases = view.layers[0].bias[static_cast<int>(Proj::Q)] ? (group + 2) * hd : 0;
  EXPECT_EQ(r.parametersPerUnit, (group + 2) * hd * d + biases);
  EXPECT_EQ(r.parametersSaved, static_cast<int64_t>(r.chosen.size()) * r.parametersPerUnit);
  EXPECT_NEAR(r.similarityOf({1, 0}, {1, 0}), 1.0, 1e-5);
  EXPECT_FLOAT_EQ(r.similarityOf({0, 0}, {2, units - 1}), r.similarityOf({2, units - 1}, {0, 0}));

  writeDirectSharedCheckpoint(*ckpt, view, r, dir / "shared");
  const auto shared = Checkpoint::open(dir / "shared");
  const ModelView sharedView = openModelView(*shared);
  EXPECT_TRUE(shared->metadata().count("sharelens.directshare"));
  EXPECT_TRUE(fs::exists(dir / "shared" / "config.json")) << "the shared model opens like the original";
  for (const UnitMatch& m : r.chosen)
    for (Proj p : {Proj::Q, Proj::K, Proj::V}) {
      const int64_t rows = (p == Proj::Q ? group : 1) * hd;
      EXPECT_EQ(
          materialize(*shared, sharedView.layers[m.target.layer].at(p).sliceRows(m.target.unit * rows, rows))
              .data,
          materialize(*ckpt, view.layers[m.source.layer].at(p).sliceRows(m.source.unit * rows, rows)).data)
          << projName(p) << " of L" << m.target.layer << " unit " << m.target.unit;
      if (const auto& b = view.layers[m.source.layer].bias[static_cast<int>(p)]) {
        const auto& tb = *sharedView.layers[m.target.layer].bias[static_cast<int>(p)];
        EXPECT_EQ(materialize(*shared, VectorSlice{tb.tensor, tb.offset + m.target.unit * rows, rows}),
                  materialize(*ckpt, VectorSlice{b->tensor, b->offset + m.source.unit * rows, rows}))
            << "bias " << projName(p);
      }
    }
  // Units that were not targets are untouched.
  EXPECT_EQ(materialize(*shared, sharedView.layers[0].at(Proj::V)).data,
            materialize(*ckpt, view.layers[0].at(Proj::V)).data);
  // Writing again into the same place, or from a ratio outside (0, 1), is refused before anything is written.
  EXPECT_THROW(writeDirectSharedCheckpoint(*ckpt, view, r, dir / "shared"), Error);
  EXPECT_THROW(computeDirectShare(*ckpt, view, 1.0, {}), Error);
  EXPECT_THROW(computeDirectShare(*ckpt, view, 0.0, {}), Error);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, DirectShareOnFamily,
                         ::testing::Values(Family::Llama, Family::Qwen2, Family::Qwen3, Family::Gpt2,
                                           Family::Phi3),
                         [](const auto& info) { return std::string(familyName(info.param)); });

// [HSA] Table 3, "30% MHA": Llama2-7B 6.74B -> 6.09B, Llama2-13B 13.02B -> 11.76B. From the models' shapes
// (Llama 2: vocabulary 32000, untied head, RMSNorm weights, SwiGLU FFN; 7B: 32 layers of d 4096, 32 heads,
// FFN 11008; 13B: 40 layers of d 5120, 40 heads, FFN 13824) the table's rows follow when 30% of all heads
// give up Q, K, V and their O columns; Q, K and V alone (what Sec. 4.1's text shares) leave 6.26B and 12.07B.
TEST(DirectShare, Table3RowsFromShapes) {
  struct Row {
    int64_t layers, d, heads, ffn;
    double total, shared;  // the paper's numbers, in billions
  };
  for (const Row& row : {Row{32, 4096, 32, 11008, 6.74, 6.09}, Row{40, 5120, 40, 13824, 13.02, 11.76}}) {
    const int64_t vocab = 32000;
    const int64_t perLayer = 4 * row.d * row.d + 3 * row.d * row.ffn + 2 * row.d;  // attention, FFN, 2 norms
    const int64_t total = 2 * vocab * row.d + row.layers * perLayer + row.d;       // + embedding, head, norm
    auto billions = [](int64_t n) { return std::round(static_cast<double>(n) / 1e7) / 100.0; };
    EXPECT_DOUBLE_EQ(billions(total), row.total);
    const DirectShareCount c =
        directShareCount(row.layers, row.heads, row.heads, row.d / row.heads, row.d, 0.3);
    EXPECT_EQ(c.units, std::llround(0.3 * row.layers * row.heads));
    EXPECT_DOUBLE_EQ(billions(total - c.savedQkvo), row.shared) << row.layers << " layers";
    EXPECT_NE(billions(total - c.savedQkv), row.shared) << "Q, K and V alone do not give the table's count";
    EXPECT_NEAR(static_cast<double>(c.savedQkvo) / (row.layers * 4.0 * row.d * row.d), 0.3, 0.001)
        << "alpha is the share of the attention block removed";
  }
}

// The spectrum of one cell of a head map (the Heads view's clicked pair, `export --view head-pair-spectrum`):
// the singular values of W_a - W_b of two heads as the map compares them (the low-rank sharing paper's Sec.
// 3.1, "pairwise differences between all attention weight matrices within each layer"). Closed form: layer
// 1's Q head 0 is K head 1 plus a matrix whose rows are s_i times distinct unit vectors, so the difference's
// singular values are exactly the s_i; and an O head (hidden x head_dim) is compared transposed.
TEST(HeadPairSpectrum, IsTheSingularValuesOfTheTwoHeadsDifference) {
  const auto spec = testing::defaultSpec(Family::Llama);
  const int64_t hd = spec.headDim, hidden = spec.hidden;
  ASSERT_GE(hidden, hd);
  const auto dir = testing::makeTempDir("head-pair");
  testing::writeHfFixture(dir, spec);
  const std::string prefix = "model.layers.1.self_attn.";
  std::vector<float> q, k, o;
  {
    const auto file = SafetensorsFile::open(dir / "model.safetensors");
    const auto read = [&](const std::string& name) {  // the tensor's values as floats
      const TensorInfo& t = *std::find_if(file->tensors().begin(), file->tensors().end(),
                                          [&](const TensorInfo& i) { return i.name == name; });
      std::vector<float> values(static_cast<size_t>(t.numel));
      convertToFloat(t.dtype, file->bytes(t).data(), values.size(), values.data());
      return values;
    };
    q = read(prefix + "q_proj.weight"), k = read(prefix + "k_proj.weight"),
    o = read(prefix + "o_proj.weight");
  }
  std::vector<double> s;  // 16, 15, ..., 1: the planted singular values
  for (int64_t i = 0; i < hd; ++i) s.push_back(static_cast<double>(hd - i));
  for (int64_t i = 0; i < hd; ++i)
    for (int64_t j = 0; j < hidden; ++j) {
      const size_t at = static_cast<size_t>(i * hidden + j);  // q head 0: rows 0..hd-1
      const float kHead1 = k[static_cast<size_t>((hd + i) * hidden + j)];
      q[at] = kHead1 + (j == (3 * i + 5) % hidden ? static_cast<float>(s[static_cast<size_t>(i)]) : 0.0f);
    }
  // O head 2 (columns 2hd..3hd-1 of the hidden x (heads hd) W_o), transposed, is Q head 0 minus 2 I's block:
  // W_o[r, 2hd + c] = q0[c, r] - 2 [r == c], so q0 - o2^T = 2 [I 0] with hd singular values of 2.
  const int64_t oCols = spec.heads * hd;
  for (int64_t r = 0; r < hidden; ++r)
    for (int64_t c = 0; c < hd; ++c)
      o[static_cast<size_t>(r * oCols + 2 * hd + c)] =
          q[static_cast<size_t>(c * hidden + r)] - (r == c ? 2.0f : 0.0f);
  rewrite(dir, {{prefix + "q_proj.weight", q}, {prefix + "o_proj.weight", o}});

  const auto ckpt = Checkpoint::open(dir);
  const ModelView view = openModelView(*ckpt);
  const auto backend = makeCpuBackend();
  const MatrixSpectrum pair = headPairSpectrum(*ckpt, view, 1, parseHeadLabel("q0", "test"),
                                               parseHeadLabel("k1", "test"), *backend, 0.95, {});
  EXPECT_EQ(pair.id.name, "layer 1: q0 - k1");
  ASSERT_GE(pair.spectrum.sigma.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(pair.spectrum.sigma[i], s[i], 1e-5 * s[0]) << i;
  for (size_t i = s.size(); i < pair.spectrum.sigma.size(); ++i) EXPECT_NEAR(pair.spectrum.sigma[i], 0, 1e-4);
  // The effective rank at 95%: the fewest leading s_i^2 holding 95% of their sum.
  double total = 0, running = 0;
  for (const double v : s) total += v * v;
  int64_t rank = 0;
  while (running < 0.95 * total)
    running += s[static_cast<size_t>(rank)] * s[static_cast<size_t>(rank)], ++rank;
  EXPECT_EQ(pair.spectrum.effectiveRank, rank);

  const MatrixSpectrum withO =
      headPairSpectrum(*ckpt, view, 1, {Proj::Q, 0}, {Proj::O, 2}, *backend, 0.95, {});
  for (int64_t i = 0; i < hd; ++i) EXPECT_NEAR(withO.spectrum.sigma[static_cast<size_t>(i)], 2.0, 1e-5) << i;
  EXPECT_EQ(withO.spectrum.effectiveRank, static_cast<int64_t>(std::ceil(0.95 * static_cast<double>(hd))));

  // A head or layer the model does not have is a named error, and so is a label that is not a head's.
  EXPECT_THROW(headPairSpectrum(*ckpt, view, 1, {Proj::K, spec.kvHeads}, {Proj::Q, 0}, *backend, 0.95, {}),
               Error);
  EXPECT_THROW(headPairSpectrum(*ckpt, view, spec.layers, {Proj::Q, 0}, {Proj::Q, 1}, *backend, 0.95, {}),
               Error);
  const HeadId v12 = parseHeadLabel("v12", "test");
  EXPECT_EQ(v12.proj, Proj::V);
  EXPECT_EQ(v12.head, 12);
  EXPECT_EQ(headLabel(v12), "v12");
  for (const char* bad : {"", "q", "x1", "gate1", "q-1", "q1a", "01", "q01"})
    EXPECT_THROW(parseHeadLabel(bad, "--pair"), Error) << bad;
  fs::remove_all(dir);
}

TEST(EmbeddingStudy, FactorisationCurveRhoAndTyingGap) {
  auto spec = testing::defaultSpec(Family::Qwen2);  // untied
  const auto dir = testing::makeTempDir("emb");
  testing::writeHfFixture(dir, spec);
  // Output head = embedding for even rows, negated for odd rows: cosines +1 and -1, mean ~0.
  {
    const auto ckpt = Checkpoint::open(dir);
    std::vector<float> e = ckpt->readFloat("model.embed_tokens.weight");
    std::vector<float> u = e;
    for (int64_t j = 1; j < spec.vocab; j += 2)
      for (int64_t c = 0; c < spec.hidden; ++c) u[static_cast<size_t>(j * spec.hidden + c)] *= -1.0f;
    rewrite(dir, {{"lm_head.weight", u}});
  }
  const auto ckpt = Checkpoint::open(dir);
  const ModelView view = openModelView(*ckpt);
  auto backend = makeCpuBackend();
  const EmbeddingStudy s = computeEmbeddingStudy(*ckpt, view, *backend, 0.95, {});
  ASSERT_EQ(s.curve.size(), 20u);
  EXPECT_EQ(s.curve.back().rank, spec.hidden);
  EXPECT_NEAR(s.curve.back().relativeError, 0.0, 1e-6);
  EXPECT_EQ(s.curve.back().parameters, spec.hidden * (spec.vocab + spec.hidden));
  for (size_t i = 1; i < s.curve.size(); ++i)
    EXPECT_LE(s.curve[i].relativeError, s.curve[i - 1].relativeError);
  // Eckart-Young from the spectrum, by hand, at r = 10% of d:
  const auto& p = s.curve[1];
  double tail = 0, total = 0;
  for (size_t i = 0; i < s.spectrum.sigma.size(); ++i) {
    total += s.spectrum.sigma[i] * s.spectrum.sigma[i];
    if (static_cast<int64_t>(i) >= p.rank) tail += s.spectrum.sigma[i] * s.spectrum.sigma[i];
  }
  EXPECT_NEAR(p.relativeError, std::sqrt(tail / total), 1e-9);
  const RoleCounts counts = countParameters(*ckpt, view);
  EXPECT_NEAR(s.rho, 2.0 * spec.vocab * spec.hidden / static_cast<double>(counts.total), 1e-12);
  ASSERT_TRUE(s.tyingCosineMean.has_value());
  EXPECT_NEAR(*s.tyingCosineMean, 1.0 / spec.vocab, 1e-6) << "51 rows at +1, 50 at -1";
  EXPECT_EQ(s.tyingCosineHistogram.front() + s.tyingCosineHistogram.back(), spec.vocab);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
