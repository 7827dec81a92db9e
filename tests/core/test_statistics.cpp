// The interval arithmetic of experiment reports against published values: Student t quantiles t_{0.975, df}
// (the two-sided 95% critical values of any statistics table), intervals of small samples worked by hand, and
// the verdicts they give.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include "core/statistics.hpp"

namespace sharelens {
namespace {

TEST(Statistics, StudentTQuantilesMatchTheTables) {
  const std::vector<std::pair<double, double>> table = {
      {1, 12.7062047}, {2, 4.30265273},  {3, 3.18244631},  {4, 2.77644511},  {5, 2.57058184},
      {9, 2.26215716}, {19, 2.09302405}, {29, 2.04522964}, {120, 1.97993040}};
  for (const auto& [df, t] : table) EXPECT_NEAR(studentTQuantile(0.975, df), t, 1e-6 * t) << "df " << df;
  EXPECT_NEAR(studentTQuantile(0.95, 4), 2.13184679, 1e-6);  // one-sided 95%, df 4
  EXPECT_NEAR(studentTQuantile(0.5, 7), 0.0, 1e-7);
  EXPECT_NEAR(studentTQuantile(0.025, 2), -4.30265273, 1e-6);
  EXPECT_NEAR(studentTQuantile(0.975, 1e6), 1.95996398, 1e-5) << "the normal limit";
  EXPECT_NEAR(studentTCdf(2.0, 10), 0.963305, 1e-6);
  EXPECT_TRUE(std::isnan(studentTQuantile(1.0, 3)));
}

// chi^2 quantiles against the tables (their closed-form CDFs: 1 - e^{-x/2} sum_{k < df/2} (x/2)^k / k! for
// even df, erf and its recurrence for odd), and the sd's upper confidence bound a pilot's sizing uses.
TEST(Statistics, ChiSquaredQuantilesMatchTheTablesAndBoundASampleSd) {
  EXPECT_NEAR(regularizedLowerGamma(1.0, 2.0), 1 - std::exp(-2.0), 1e-13);  // P(1, x) = 1 - e^-x
  EXPECT_NEAR(regularizedLowerGamma(0.5, 4.0), std::erf(2.0), 1e-13);       // P(1/2, x) = erf(sqrt x)
  EXPECT_NEAR(chiSquaredQuantile(0.2, 2), -2 * std::log(0.8), 1e-9);        // 0.446287
  EXPECT_NEAR(chiSquaredQuantile(0.05, 2), -2 * std::log(0.95), 1e-9);
  const std::vector<std::tuple<double, double, double>> table = {{0.2, 1, 0.0641848},   {0.2, 5, 2.342532},
                                                                 {0.2, 10, 6.179079},   {0.95, 10, 18.307038},
                                                                 {0.975, 4, 11.143287}, {0.5, 30, 29.336030}};
  for (const auto& [p, df, x] : table)
    EXPECT_NEAR(chiSquaredQuantile(p, df), x, 2e-6 * x) << "p " << p << ", df " << df;
  EXPECT_TRUE(std::isnan(chiSquaredQuantile(0.0, 3)));
  // df s^2 / sigma^2 ~ chi^2_df: with 2 degrees of freedom the 80% bound is s sqrt(2 / 0.446287) = 2.1169 s.
  EXPECT_NEAR(sdUpperBound(1.0, 2, 0.8), std::sqrt(2 / (-2 * std::log(0.8))), 1e-9);
  EXPECT_NEAR(sdUpperBound(0.05, 10, 0.8), 0.05 * std::sqrt(10 / 6.179079), 1e-7);
  EXPECT_TRUE(std::isnan(sdUpperBound(NAN, 2, 0.8)));
}

TEST(Statistics, IntervalsOfSmallSamplesAndVerdicts) {
  const std::vector<double> three = {1.0, 2.0, 3.0};  // mean 2, sd 1, half-width 4.30265 / sqrt(3)
  const MeanInterval m = meanInterval(three);
  EXPECT_EQ(m.n, 3);
  EXPECT_DOUBLE_EQ(m.mean, 2.0);
  EXPECT_NEAR(m.sd, 1.0, 1e-12);
  EXPECT_NEAR(m.halfWidth, 4.30265273 / std::sqrt(3.0), 1e-7);
  EXPECT_EQ(verdictOf(m), Verdict::Inconclusive) << "2 +- 2.48 contains zero";
  const std::vector<double> worse = {1.0, 1.2, 1.1};
  EXPECT_EQ(verdictOf(meanInterval(worse)), Verdict::Worse)
      << "an interval above zero: the arm's loss is higher";
  const std::vector<double> better = {-0.03, -0.02, -0.025};
  EXPECT_EQ(verdictOf(meanInterval(better)), Verdict::Better);
  const std::vector<double> straddles = {-0.03, 0.01, -0.01};
  EXPECT_EQ(verdictOf(meanInterval(straddles)), Verdict::Inconclusive);
  const std::vector<double> one = {0.5};
  EXPECT_TRUE(std::isnan(meanInterval(one).halfWidth)) << "no interval from one seed";
  EXPECT_EQ(verdictOf(meanInterval(one)), Verdict::Inconclusive);
}

}  // namespace
}  // namespace sharelens

namespace sharelens {
namespace {

// The cluster bootstrap against the closed form it approximates: resampling n values with replacement, the
// mean's bootstrap distribution has standard deviation sd_n / sqrt(n) (sd_n with divisor n; Efron &
// Tibshirani, "An Introduction to the Bootstrap", Sec. 5.2), so for n = 400 the 95% percentile interval is
// the mean +- 1.96 sd_n / sqrt(n) within Monte Carlo error. A ratio of sums over clusters (a token-weighted
// NLL: sum of document sums over sum of document tokens) is what the experiment report resamples; constant
// clusters give a zero-width interval; one cluster gives none; the same seed gives the same interval.
TEST(Statistics, ClusterBootstrapMatchesTheStandardErrorOfAMean) {
  std::vector<double> x;
  for (int i = 0; i < 400; ++i) x.push_back(std::sin(0.37 * i) * 3.0 + 0.01 * i);
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / 400;
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double se = std::sqrt(ss / 400) / std::sqrt(400.0);
  auto weightedMean = [&](std::span<const double> w) {
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); ++i) num += w[i] * x[i], den += w[i];
    return num / den;
  };
  const BootstrapInterval b = clusterBootstrap(x.size(), weightedMean, 4000);
  EXPECT_NEAR(b.estimate, mean, 1e-12);
  EXPECT_EQ(b.resamples, 4000);
  EXPECT_NEAR((b.hi - b.lo) / 2, 1.959964 * se, 0.06 * 1.959964 * se);
  EXPECT_NEAR((b.hi + b.lo) / 2, mean, 0.15 * se);
  const BootstrapInterval again = clusterBootstrap(x.size(), weightedMean, 4000);
  EXPECT_EQ(again.lo, b.lo);
  EXPECT_EQ(again.hi, b.hi);

  // Documents of unequal length with the same per-token loss: the ratio does not move.
  const std::vector<double> tokens = {10, 200, 35, 7, 90}, sums = {25, 500, 87.5, 17.5, 225};
  const BootstrapInterval flat = clusterBootstrap(5, [&](std::span<const double> w) {
    double num = 0, den = 0;
    for (size_t i = 0; i < 5; ++i) num += w[i] * sums[i], den += w[i] * tokens[i];
    return num / den;
  });
  EXPECT_DOUBLE_EQ(flat.estimate, 2.5);
  EXPECT_DOUBLE_EQ(flat.lo, 2.5);
  EXPECT_DOUBLE_EQ(flat.hi, 2.5);
  const BootstrapInterval one = clusterBootstrap(1, [](std::span<const double> w) { return w[0]; });
  EXPECT_EQ(one.estimate, 1.0);
  EXPECT_TRUE(std::isnan(one.lo) && std::isnan(one.hi));
}

}  // namespace
}  // namespace sharelens

namespace sharelens {
namespace {

// Seeds for a target interval and the minimum detectable effect, worked by hand from the t table: with
// sd = 0.05, t(0.975, 25) = 2.060 gives 2.060 x 0.05 / sqrt(26) = 0.0202 > 0.02, t(0.975, 26) = 2.056 gives
// 0.0198: 27 seeds. MDE at 10 seeds, 80% power: (t(0.975, 9) + t(0.80, 9)) sd / sqrt(10) = (2.262 + 0.883)
// x 0.05 / 3.1623 = 0.0497.
TEST(Statistics, SeedsForAHalfWidthAndTheMinimumDetectableEffect) {
  EXPECT_EQ(seedsForHalfWidth(0.05, 0.02), 27);
  EXPECT_EQ(seedsForHalfWidth(0.001, 0.02), 2);  // t(0.975, 1) = 12.706: 12.706 x 0.001 / 1.414 = 0.009
  EXPECT_EQ(seedsForHalfWidth(0.05, 0.02, 20), 0) << "none up to the cap";
  EXPECT_EQ(seedsForHalfWidth(NAN, 0.02), 0);
  EXPECT_NEAR(minimumDetectableEffect(0.05, 10), 0.0497, 2e-4);
  EXPECT_TRUE(std::isnan(minimumDetectableEffect(0.05, 1)));
}

}  // namespace
}  // namespace sharelens
