// Spectra, effective rank and the difference maps on matrices whose spectra are known by construction
// (A = U diag(s) V^T with random orthonormal U, V), so every expected value is a closed form.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "analysis/backend.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/linalg_cpu.hpp"
#include "analysis/spectrum.hpp"

namespace sharelens {
namespace {

using MatrixXd = Eigen::MatrixXd;

MatrixXd randomOrthonormal(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  MatrixXd g(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) g(i, j) = normal(rng);
  Eigen::HouseholderQR<MatrixXd> qr(g);
  return qr.householderQ() * MatrixXd::Identity(rows, cols);
}

// rows x cols with singular values `s` (and zeros beyond them).
MatrixXd withSpectrumExact(int64_t rows, int64_t cols, const std::vector<double>& s, std::mt19937_64& rng) {
  const int64_t k = static_cast<int64_t>(s.size());
  const MatrixXd u = randomOrthonormal(rows, k, rng), v = randomOrthonormal(cols, k, rng);
  return u * Eigen::Map<const Eigen::VectorXd>(s.data(), k).asDiagonal() * v.transpose();
}

FloatMatrix withSpectrum(int64_t rows, int64_t cols, const std::vector<double>& s, std::mt19937_64& rng) {
  const MatrixXd a = withSpectrumExact(rows, cols, s, rng);
  FloatMatrix m(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m(i, j) = static_cast<float>(a(i, j));
  return m;
}

// The effective rank straight from the definition, on exact singular values.
int64_t closedFormRank(const std::vector<double>& s, double threshold) {
  double total = 0;
  for (double x : s) total += x * x;
  double cumulative = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    cumulative += s[k] * s[k];
    if (cumulative >= threshold * total) return static_cast<int64_t>(k + 1);
  }
  return static_cast<int64_t>(s.size());
}

std::vector<double> geometric(int64_t n, double first, double ratio) {
  std::vector<double> s;
  for (int64_t i = 0; i < n; ++i) s.push_back(first * std::pow(ratio, static_cast<double>(i)));
  return s;
}

// Singular values of the float-rounded matrix, from an independent solver (Eigen's BDCSVD, double).
std::vector<double> referenceSigma(const FloatMatrix& m) {
  MatrixXd a(m.rows, m.cols);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) a(i, j) = m(i, j);
  const Eigen::VectorXd s = Eigen::BDCSVD<MatrixXd>(a).singularValues();
  return std::vector<double>(s.data(), s.data() + s.size());
}

struct Shape {
  int64_t rows, cols, rank;
};

class KnownSpectrum : public ::testing::TestWithParam<Shape> {};

TEST_P(KnownSpectrum, SingularValuesNormsAndEffectiveRank) {
  const Shape shape = GetParam();
  std::mt19937_64 rng(static_cast<uint64_t>(shape.rows * 31 + shape.cols));
  const std::vector<double> s = geometric(shape.rank, 3.0, 0.93);
  const FloatMatrix m = withSpectrum(shape.rows, shape.cols, s, rng);
  auto backend = makeCpuBackend();
  const FloatMatrix* list[] = {&m};
  const Spectrum spectrum = makeSpectrum(backend->gramSpectra(list, {}).front(), m.rows, m.cols, 0.95);

  ASSERT_EQ(spectrum.sigma.size(), static_cast<size_t>(std::min(shape.rows, shape.cols)));
  const std::vector<double> reference = referenceSigma(m);  // of the float-rounded matrix
  for (size_t i = 0; i < reference.size(); ++i) {
    if (reference[i] / reference[0] > 1e-3)
      EXPECT_NEAR(spectrum.sigma[i], reference[i], 1e-9 * reference[0] + 1e-6 * reference[i]) << i;
    else
      EXPECT_LT(spectrum.sigma[i], 2e-3 * reference[0]) << i;  // rounding floor of a float matrix
  }
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(spectrum.sigma[i], s[i], 1e-6 * s[0]) << "vs the exact s";
  EXPECT_EQ(spectrum.effectiveRank, closedFormRank(s, 0.95));
  EXPECT_NEAR(spectrum.spectralNorm(), s[0], 1e-6);
  double frob2 = 0;
  for (double x : s) frob2 += x * x;
  EXPECT_NEAR(spectrum.frobeniusSquared, frob2, 1e-5 * frob2);
  EXPECT_NEAR(spectrum.stableRank(), frob2 / (s[0] * s[0]), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KnownSpectrum,
                         ::testing::Values(Shape{64, 64, 64}, Shape{64, 300, 40}, Shape{300, 48, 48},
                                           Shape{1000, 96, 20}, Shape{96, 1500, 96}),
                         [](const auto& info) {
                           return std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols) +
                                  "_r" + std::to_string(info.param.rank);
                         });

TEST(EffectiveRank, MatchesTheDefinitionAtExactBoundaries) {
  // Energies 4, 3, 2, 1 (total 10): cumulative 0.4, 0.7, 0.9, 1.0.
  const std::vector<double> lambda = {4, 3, 2, 1};
  EXPECT_EQ(effectiveRank(lambda, 10, 0.4), 1);
  EXPECT_EQ(effectiveRank(lambda, 10, 0.41), 2);
  EXPECT_EQ(effectiveRank(lambda, 10, 0.7), 2);
  EXPECT_EQ(effectiveRank(lambda, 10, 0.9), 3);
  EXPECT_EQ(effectiveRank(lambda, 10, 0.95), 4);
  EXPECT_EQ(effectiveRank(lambda, 10, 1.0), 4);
  EXPECT_EQ(effectiveRank({}, 0, 0.95), 0);
  EXPECT_EQ(effectiveRank(std::vector<double>(5, 0.0), 0.0, 0.95), 0) << "zero matrix";
}

TEST(EffectiveRank, AtThresholdOneIsTheRankOfAnExactlyLowRankMatrix) {
  // t = 1 asks for all the energy: B C with small integers (exact in float and in double, as is its Gram)
  // has rank 5, and its Gram's eigenvalues sum to the trace only to rounding, either side of it.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> digit(-3, 3);
  auto backend = makeCpuBackend();
  for (int trial = 0; trial < 20; ++trial) {
    FloatMatrix b(40, 5), c(5, 30), m(40, 30);
    for (float& x : b.data) x = static_cast<float>(digit(rng));
    for (float& x : c.data) x = static_cast<float>(digit(rng));
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = 0; j < 30; ++j)
        for (int64_t k = 0; k < 5; ++k) m(i, j) += b(i, k) * c(k, j);
    const FloatMatrix* list[] = {&m};
    const GramSpectrum g = backend->gramSpectra(list, {}).front();
    EXPECT_EQ(effectiveRank(g.eigenvalues, g.trace, 1.0), 5) << "trial " << trial;
  }
}

TEST(DifferenceMaps, HeadPairsFromTheSharedCrossGramHaveTheKnownDifferenceRank) {
  // Six 16 x 96 "heads": head i = base + delta_i with delta_i of rank i + 1, except that heads 4 and 5 share
  // their delta. Every pair's difference spectrum from the one shared cross-Gram must match Eigen's SVD of
  // the explicit difference; (4, 5) must be exactly zero; (0, 1) has rank at most 1 + 2.
  std::mt19937_64 rng(7);
  const int64_t r = 16, d = 96, heads = 6;
  MatrixXd base = withSpectrumExact(r, d, geometric(16, 1.0, 0.8), rng);
  std::vector<MatrixXd> h(heads);
  for (int64_t i = 0; i < heads; ++i) {
    const int64_t rank = i == 5 ? 5 : i + 1;
    std::mt19937_64 local(static_cast<uint64_t>(100 + (i == 5 ? 4 : i)));
    h[i] = base + withSpectrumExact(r, d, geometric(rank, 0.5, 0.7), local);
  }
  FloatMatrix stacked(r * heads, d);
  for (int64_t i = 0; i < heads; ++i)
    for (int64_t a = 0; a < r; ++a)
      for (int64_t c = 0; c < d; ++c) stacked(i * r + a, c) = static_cast<float>(h[i](a, c));
  auto backend = makeCpuBackend();
  const auto pairs = backend->blockPairDifferenceSpectra(stacked, r, {});
  ASSERT_EQ(pairs.size(), 15u);
  for (const auto& [a, b] : allPairs(heads)) {
    // Reference: SVD of the float-rounded difference.
    FloatMatrix diff(r, d);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t c = 0; c < d; ++c)
        diff(i, c) =
            stacked(static_cast<int64_t>(a) * r + i, c) - stacked(static_cast<int64_t>(b) * r + i, c);
    const auto ref = referenceSigma(diff);
    const GramSpectrum& g = pairs[pairIndex(a, b, heads)];
    for (size_t i = 0; i < ref.size(); ++i) {
      if (ref[i] > 1e-3 * ref[0]) {
        EXPECT_NEAR(std::sqrt(g.eigenvalues[i]), ref[i], 1e-6 * ref[0]) << a << "," << b;
      }
    }
  }
  EXPECT_NEAR(pairs[pairIndex(4, 5, heads)].trace, 0.0, 1e-9) << "identical heads differ by zero";
  // A rank-1 vs rank-2 head differ by at most rank 3.
  const GramSpectrum& g12 = pairs[pairIndex(0, 1, heads)];
  EXPECT_LE(effectiveRank(g12.eigenvalues, g12.trace, 0.999999), 3);
}

TEST(DifferenceMaps, LayerPairsHaveTheRankOfTheirLowRankDifference) {
  // W_l = C + sum_{i<=l} s_i u_i v_i^T with orthonormal u_i, v_i: W_m - W_l = sum_{l<i<=m} s_i u_i v_i^T
  // has exactly the singular values s_{l+1..m}, so every cell of the map is a closed form.
  std::mt19937_64 rng(3);
  const int64_t rows = 80, cols = 120, layers = 6;
  const MatrixXd u = randomOrthonormal(rows, layers, rng), v = randomOrthonormal(cols, layers, rng);
  const MatrixXd common = withSpectrumExact(rows, cols, geometric(60, 2.0, 0.9), rng);
  const std::vector<double> step = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5};
  std::vector<FloatMatrix> w;
  for (int64_t l = 0; l < layers; ++l) {
    MatrixXd m = common;
    for (int64_t i = 0; i <= l; ++i) m += step[static_cast<size_t>(i)] * u.col(i) * v.col(i).transpose();
    FloatMatrix f(rows, cols);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) f(i, j) = static_cast<float>(m(i, j));
    w.push_back(std::move(f));
  }
  std::vector<const FloatMatrix*> pointers;
  std::vector<double> norms(layers, 1.0);
  for (const auto& m : w) pointers.push_back(&m);
  auto backend = makeCpuBackend();
  const RankMap map = rankMapFromPairs(backend->pairDifferenceSpectra(pointers, {}), norms, 0.999);
  for (int64_t a = 0; a < layers; ++a)
    for (int64_t b = 0; b < layers; ++b) {
      if (a == b) {
        EXPECT_EQ(map.rankAt(a, b), 0);
        continue;
      }
      std::vector<double> s(step.begin() + std::min(a, b) + 1, step.begin() + std::max(a, b) + 1);
      EXPECT_EQ(map.rankAt(a, b), closedFormRank(s, 0.999)) << a << "," << b;
    }
}

}  // namespace
}  // namespace sharelens
