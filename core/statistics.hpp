// The statistics of a comparison over seeds: Student t quantiles, means with confidence intervals, paired
// differences, and the verdict they support. No dependencies; the t distribution's CDF comes from the
// regularised incomplete beta function, I_x(a, b), evaluated by its continued fraction (modified Lentz).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

namespace sharelens {

double regularizedIncompleteBeta(double x, double a, double b);
double studentTCdf(double t, double df);
double studentTQuantile(double p, double df);  // the inverse of studentTCdf, p in (0, 1)
// P(a, x) = gamma(a, x) / Gamma(a), by its series below x = a + 1 and its continued fraction above; the
// chi-squared distribution's quantile (chi^2_df is Gamma(df / 2, scale 2)), p in (0, 1).
double regularizedLowerGamma(double a, double x);
double chiSquaredQuantile(double p, double df);
// An upper confidence bound on a normal population's sd from a sample sd with `df` degrees of freedom:
// sd sqrt(df / chi^2_{1 - confidence, df}), since df s^2 / sigma^2 is chi^2_df. A pilot's 3 seeds leave 2
// degrees of freedom, under which the 80% bound is 2.12 s: sizing from s itself misses its target about
// half the time.
double sdUpperBound(double sd, double df, double confidence);
// The sd that seeds are sized from: sdUpperBound at `confidence`, or sd itself when confidence is 0 (the
// planner's pilot and the report's after-run check, one rule).
double sizingSd(double sd, double df, double confidence);

// mean +- t_{(1+level)/2, n-1} * sd / sqrt(n); needs n >= 2 (halfWidth NaN otherwise).
struct MeanInterval {
  int n = 0;
  double mean = 0, sd = 0, halfWidth = 0;
  double lo() const { return mean - halfWidth; }
  double hi() const { return mean + halfWidth; }
};
MeanInterval meanInterval(std::span<const double> values, double level = 0.95);

// The fewest seeds that give an interval (one degree of freedom).
constexpr int kFewestSeedsForAnInterval = 2;

// Power of a paired comparison whose per-seed differences have standard deviation `sd`:
//   the smallest n >= kFewestSeedsForAnInterval seeds with t_{(1+level)/2, n-1} sd / sqrt(n) <= halfWidth (0
//   when none up to maxSeeds does, or sd is not finite); the minimum detectable effect at n seeds,
//   (t_{(1+level)/2, n-1} + t_{power, n-1}) sd / sqrt(n): the true difference a two-sided test at that level
//   detects with probability `power` (the normal-theory formula with t quantiles for the n - 1 degrees of
//   freedom the interval has).
int seedsForHalfWidth(double sd, double halfWidth, int maxSeeds = 1000, double level = 0.95);
double minimumDetectableEffect(double sd, int seeds, double power = 0.8, double level = 0.95);

// A percentile bootstrap over clusters (documents of held-out text): `resamples` times, draw as many clusters
// as there are with replacement (weights[i] = how often cluster i was drawn) and evaluate `statistic` on the
// draw; the interval is the (1 - level)/2 and (1 + level)/2 quantiles of those values (type 7, as numpy's
// default). `estimate` is the statistic on every cluster once. Deterministic for a given seed. Needs 2
// clusters or more (NaN bounds otherwise).
struct BootstrapInterval {
  double estimate = NAN, lo = NAN, hi = NAN;
  int clusters = 0, resamples = 0;
};
BootstrapInterval clusterBootstrap(size_t clusters,
                                   const std::function<double(std::span<const double> weights)>& statistic,
                                   int resamples = 2000, double level = 0.95, uint64_t seed = 20261126);

// For a loss difference (arm minus reference): better when the whole interval is below 0, worse when above,
// inconclusive when it contains 0.
enum class Verdict { Better, Worse, Inconclusive };
Verdict verdictOf(const MeanInterval& difference);
std::string_view verdictName(Verdict v);

}  // namespace sharelens
