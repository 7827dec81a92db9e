// The compression plan and the whitened truncation (analysis/masa_compress.hpp): hand-computed budgets and
// ranks, and SVD-LLM's whitening against the closed form of the problem it solves.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analysis/masa_compress.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

// 4 layers, d = 64, 4 query heads and 2 KV heads of 16: Q and O are 64 x 64 (4096), K and V 32 x 64 (2048).
ModelShape smallShape() {
  ModelShape s;
  s.layers = 4;
  s.hidden = 64;
  s.heads = 4;
  s.kvHeads = 2;
  s.headDim = 16;
  return s;
}

TEST(CompressionPlan, BalancedRanksFollowTheIntrinsicRanksOfThePair) {
  // rho = min(32, 64) / min(64, 64) = 0.5; a rank of Q costs 128, of K 96: r_q = floor(816 / (128 + 0.5 x
  // 96)) = 4.
  RankPair r = balancedRanks(816, {64, 64}, {32, 64});
  EXPECT_EQ(r.a, 4);
  EXPECT_EQ(r.b, 2);
  // Equal shapes (MHA): equal ranks, floor(1000 / 256) = 3.
  r = balancedRanks(1000, {64, 64}, {64, 64});
  EXPECT_EQ(r.a, 3);
  EXPECT_EQ(r.b, 3);
  // Capped at full rank.
  r = balancedRanks(1 << 30, {64, 64}, {32, 64});
  EXPECT_EQ(r.a, 64);
  EXPECT_EQ(r.b, 32);
  EXPECT_EQ(balancedRanks(0, {64, 64}, {32, 64}).a, 0);
}

// MASA supplementary, "Local Refinement": the residual budget beta (Eq. 13) and Algorithm 1's initial ranks
// r = floor(beta m n / (m + n)), here from the exact count that Eq. 13 approximates.
TEST(CompressionPlan, MasaBudgetAndStartRanksAsComputedByHand) {
  CompressionSpec spec;
  spec.method = "masa";
  spec.ratio = 0.6;
  spec.groups = {{0}, {1, 2, 3}};
  const CompressionPlan plan = planCompression(smallShape(), spec);
  EXPECT_EQ(plan.atoms, (std::vector<int64_t>{1, 1})) << "one basis per group by default (Tables 6-7)";
  EXPECT_EQ(plan.originalParameters, 4 * 12288);
  EXPECT_EQ(plan.targetParameters, 29491);  // floor(0.6 x 49152)
  // Atoms: group {0} keeps its layer (12288 + 1 coefficient per projection), group {1,2,3} one atom per
  // projection (12288) + 3 coefficients per projection.
  EXPECT_EQ(plan.atomParameters, 12292 + 12300);
  // The 4899 parameters left over the 3 refined layers of 12288: beta = 4899 / 36864 of each.
  ASSERT_EQ(plan.beta.size(), 2u);
  EXPECT_EQ(plan.beta[0], 0.0);
  EXPECT_NEAR(plan.beta[1], 4899.0 / 36864.0, 1e-15);
  // r = floor(beta m n / (m + n)): Q, O floor(0.1329 x 32) = 4; K, V floor(0.1329 x 21.33) = 2.
  for (int64_t l : {1, 2, 3}) {
    EXPECT_EQ(plan.ranks.at(Proj::Q)[static_cast<size_t>(l)], 4);
    EXPECT_EQ(plan.ranks.at(Proj::K)[static_cast<size_t>(l)], 2);
    EXPECT_EQ(plan.ranks.at(Proj::O)[static_cast<size_t>(l)], 4);
    EXPECT_EQ(plan.ranks.at(Proj::V)[static_cast<size_t>(l)], 2);
  }
  EXPECT_EQ(plan.ranks.at(Proj::Q)[0], 0) << "single-layer groups are exact, never refined";
  EXPECT_EQ(plan.startRanks, plan.ranks);
  EXPECT_EQ(plan.plannedParameters, 24592 + 3 * (4 * 128 + 2 * 96 + 4 * 128 + 2 * 96));
  EXPECT_LE(plan.plannedParameters, plan.targetParameters);
}

// Eq. 13 as printed, beta = (alpha L - B) / (L - B), per group: (0.6 x 3 - 1) / 2 = 0.4, so Q keeps rank
// floor(0.4 x 32) = 12 and K floor(0.4 x 21.33) = 8, and the model stores 78% of the attention against the
// 60% asked -- why the exact count is the default.
TEST(CompressionPlan, Eq13AsPrintedStoresMoreThanAlpha) {
  CompressionSpec spec;
  spec.method = "masa";
  spec.ratio = 0.6;
  spec.groups = {{0}, {1, 2, 3}};
  spec.budget = "eq13";
  const CompressionPlan plan = planCompression(smallShape(), spec);
  EXPECT_NEAR(plan.beta[1], 0.4, 1e-15);
  EXPECT_EQ(plan.ranks.at(Proj::Q)[1], 12);
  EXPECT_EQ(plan.ranks.at(Proj::K)[1], 8);
  EXPECT_EQ(plan.plannedParameters, 24592 + 3 * 2 * (12 * 128 + 8 * 96));
  EXPECT_GT(plan.plannedParameters, plan.targetParameters);
}

// Ours ("by-shape"), kept as a named variant: the pair's budget beta (size_Q + size_K) = 816 split by
// balancedRanks, r_q = 4, r_k = 2.
TEST(CompressionPlan, ByShapeAllocationIsTheEarlierRule) {
  CompressionSpec spec;
  spec.method = "masa";
  spec.ratio = 0.6;
  spec.groups = {{0}, {1, 2, 3}};
  spec.allocation = "by-shape";
  const CompressionPlan plan = planCompression(smallShape(), spec);
  EXPECT_EQ(plan.ranks.at(Proj::Q)[2], 4);
  EXPECT_EQ(plan.ranks.at(Proj::K)[2], 2);
  spec.allocation = "balanced";
  EXPECT_THROW(planCompression(smallShape(), spec), Error);
  spec.allocation = "by-shape";
  spec.budget = "eq14";
  EXPECT_THROW(planCompression(smallShape(), spec), Error);
}

// MASA Algorithm 1: from the start, r_A falls and r_B rises one at a time until r_A < 1 or r_B >
// len(sigma_B); the split of least tail energy sum_{i > r_A} sigma_i^2 + sum_{j > r_B} sigma_j^2 (Eq. 17)
// wins.
TEST(CompressionPlan, Algorithm1MovesRankWhileTheTailEnergyFalls) {
  // A's spectrum flat and small, B's large: E(3,1) = 29, E(2,2) = 0.64 + 13, E(1,3) = 0.81 + 0.64 + 4 =
  // 5.45; r_A = 0 is never tried.
  RankPair r = tailEnergyRanks({1.0, 0.9, 0.8}, {5.0, 4.0, 3.0, 2.0}, {3, 1});
  EXPECT_EQ(r.a, 1);
  EXPECT_EQ(r.b, 3);
  // A's spectrum dominant: every move raises E (4.5 -> 5.25), the start stays.
  r = tailEnergyRanks({3.0, 2.0, 1.0}, {2.0, 1.5, 1.0, 0.5}, {2, 1});
  EXPECT_EQ(r.a, 2);
  EXPECT_EQ(r.b, 1);
  // r_B never passes B's full rank: from (3, 1) with two singular values in B only (2, 2) is tried.
  r = tailEnergyRanks({1.0, 1.0, 1.0}, {9.0, 9.0}, {3, 1});
  EXPECT_EQ(r.a, 2);
  EXPECT_EQ(r.b, 2);
  // Rank only moves from A to B, as the paper writes it: a B that would give rank away keeps it.
  r = tailEnergyRanks({9.0, 9.0, 9.0}, {1.0, 1.0, 1.0}, {1, 2});
  EXPECT_EQ(r.a, 1);
  EXPECT_EQ(r.b, 2);
  EXPECT_DOUBLE_EQ(tailEnergy({3.0, 2.0, 1.0}, 1), 5.0);
  EXPECT_DOUBLE_EQ(tailEnergy({3.0, 2.0, 1.0}, 0), 14.0);
}

TEST(CompressionPlan, SvdKeepsTheRatioPerMatrixAndNorefFitsItsAtoms) {
  CompressionSpec spec;
  spec.method = "svd";
  spec.ratio = 0.5;
  CompressionPlan plan = planCompression(smallShape(), spec);
  EXPECT_EQ(plan.ranks.at(Proj::Q)[2], 16);  // floor(0.5 x 4096 / 128)
  EXPECT_EQ(plan.ranks.at(Proj::K)[2], 10);  // floor(0.5 x 2048 / 96)
  EXPECT_EQ(plan.plannedParameters, 4 * (16 * 128 + 10 * 96 + 10 * 96 + 16 * 128));
  spec.method = "masa-noref";
  spec.ratio = 0.7;
  spec.groups = {{0, 1, 2, 3}};
  plan = planCompression(smallShape(), spec);
  // floor(0.7 x 4) = 2 atoms cost 2 x 12288 + 4 x 2 x 4 = 24608 <= 34406.
  EXPECT_EQ(plan.atoms, (std::vector<int64_t>{2}));
  EXPECT_EQ(plan.plannedParameters, 24608);
  EXPECT_EQ(plan.ranks.at(Proj::Q), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(CompressionPlan, BadRequestsAreNamedErrors) {
  CompressionSpec spec;
  spec.groups = {{0, 1}, {2, 3}};
  for (double ratio : {0.0, 1.0, 1.5, -0.2, std::nan("")}) {
    spec.ratio = ratio;
    EXPECT_THROW(planCompression(smallShape(), spec), Error) << ratio;
  }
  spec.ratio = 0.8;
  spec.atoms = 3;  // more atoms than layers in a group
  EXPECT_THROW(planCompression(smallShape(), spec), Error);
  spec.atoms.reset();
  spec.groups = {{0, 2}, {1, 3}};  // not consecutive
  EXPECT_THROW(planCompression(smallShape(), spec), Error);
  spec.groups = {{0, 1}};  // not covering
  EXPECT_THROW(planCompression(smallShape(), spec), Error);
  spec.groups = {{0}, {1}, {2}, {3}};  // every layer whole: the atoms alone are the model
  EXPECT_THROW(planCompression(smallShape(), spec), Error);
  spec.method = "zip";
  EXPECT_THROW(planCompression(smallShape(), spec), Error);
}

// Random W (out x in) and calibration inputs with a strongly anisotropic covariance; X = sum_t x_t x_t^T.
struct Problem {
  std::vector<double> w;
  PackedSymmetric x;
  int64_t out = 24, in = 32;
};
Problem anisotropicProblem(uint64_t seed) {
  Problem p;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  p.w.resize(static_cast<size_t>(p.out * p.in));
  for (double& v : p.w) v = normal(rng);
  p.x = PackedSymmetric(p.in);
  std::vector<double> full(static_cast<size_t>(p.in * p.in), 0.0);
  for (int t = 0; t < 400; ++t) {
    std::vector<double> x(static_cast<size_t>(p.in));
    for (int64_t i = 0; i < p.in; ++i)
      x[static_cast<size_t>(i)] = normal(rng) * std::pow(0.8, static_cast<double>(i));
    for (int64_t i = 0; i < p.in; ++i)
      for (int64_t j = 0; j < p.in; ++j)
        full[static_cast<size_t>(i * p.in + j)] += x[static_cast<size_t>(i)] * x[static_cast<size_t>(j)];
  }
  p.x.addFull(full.data(), 400);
  return p;
}

// SVD-LLM / MASA refinement: min over rank-r M of ||(W - M) S||_F with X = S S^T has the Eckart-Young
// solution on W S, so the activation-weighted error of the whitened term is sum_{i > r} sigma_i(W S)^2 -- and
// never more than the plain truncated SVD's activation-weighted error.
TEST(Whitening, MinimisesTheActivationWeightedErrorAsTheClosedFormSays) {
  const Problem p = anisotropicProblem(3);
  const Whitening s = whiteningOf(p.x, "test");
  EXPECT_EQ(s.damping, 0.0);
  for (int64_t rank : {1, 4, 12}) {
    const LowRankTerm whitened = whitenedTruncation(p.w, p.out, p.in, s, rank);
    const LowRankTerm plain = plainTruncation(p.w, p.out, p.in, rank);
    ASSERT_EQ(whitened.rank(), rank);
    const double ew = activationWeightedError(p.w, product(whitened), p.x);
    const double ep = activationWeightedError(p.w, product(plain), p.x);
    EXPECT_LT(ew, ep) << "rank " << rank;
    // Closed form: the tail energy of W S (computed here through the plain truncation of W S itself).
    std::vector<double> ws(p.w.size(), 0.0);
    for (int64_t i = 0; i < p.out; ++i)
      for (int64_t j = 0; j < p.in; ++j)
        for (int64_t k = j; k < p.in; ++k)  // S lower triangular: (W S)_ij = sum_{k >= j} W_ik S_kj
          ws[static_cast<size_t>(i * p.in + j)] +=
              p.w[static_cast<size_t>(i * p.in + k)] * s.s[static_cast<size_t>(k * p.in + j)];
    const FloatMatrix wsApprox = product(plainTruncation(ws, p.out, p.in, rank));
    double tail = 0;
    for (size_t i = 0; i < ws.size(); ++i) tail += (ws[i] - wsApprox.data[i]) * (ws[i] - wsApprox.data[i]);
    EXPECT_NEAR(ew, tail, 1e-4 * tail) << "rank " << rank;
  }
}

TEST(Whitening, DampsAnAutocorrelationThatIsNotPositiveDefinite) {
  PackedSymmetric x(4);
  const double rankOne[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};  // (1,1,1,1)(1,1,1,1)^T
  x.addFull(rankOne, 1);
  const Whitening s = whiteningOf(x, "test");
  EXPECT_GT(s.damping, 0.0);
  EXPECT_LE(s.damping, 0.1);
  PackedSymmetric zero(3);
  EXPECT_THROW(whiteningOf(zero, "test"), Error) << "all-zero inputs are a named error";
}

}  // namespace
}  // namespace sharelens
