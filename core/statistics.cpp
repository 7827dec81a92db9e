#include "core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace sharelens {
namespace {

// The continued fraction of I_x(a, b) (valid, and fast, for x < (a + 1) / (a + b + 2)).
double betaContinuedFraction(double x, double a, double b) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::abs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    for (const double coefficient :
         {m * (b - m) * x / ((a + m2 - 1) * (a + m2)),                // the even step
          -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))}) {  // the odd step
      d = 1.0 + coefficient * d;
      if (std::abs(d) < tiny) d = tiny;
      c = 1.0 + coefficient / c;
      if (std::abs(c) < tiny) c = tiny;
      d = 1.0 / d;
      h *= d * c;
    }
    if (std::abs(d * c - 1.0) < eps) break;
  }
  return h;
}

}  // namespace

double regularizedIncompleteBeta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * betaContinuedFraction(x, a, b) / a;
  return 1.0 - front * betaContinuedFraction(1 - x, b, a) / b;  // I_x(a, b) = 1 - I_{1-x}(b, a)
}

double studentTCdf(double t, double df) {
  const double tail = 0.5 * regularizedIncompleteBeta(df / (df + t * t), df / 2, 0.5);  // P(T > |t|)
  return t >= 0 ? 1 - tail : tail;
}

double studentTQuantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
  double lo = -1e6, hi = 1e6;  // the CDF is monotone: bisect
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::abs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (studentTCdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double regularizedLowerGamma(double a, double x) {
  if (!(x > 0)) return 0;
  const double front = std::exp(a * std::log(x) - x - std::lgamma(a));
  constexpr double eps = 1e-15, tiny = 1e-300;
  if (x < a + 1) {  // the series sum_n x^n / (a (a + 1) ... (a + n)), times x^a e^-x / Gamma(a)
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000 && std::abs(term) > eps * std::abs(sum); ++n) sum += term *= x / (a + n);
    return front * sum;
  }
  // Q(a, x) by its continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)), modified
  // Lentz; P = 1 - Q.
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int n = 1; n < 1000; ++n) {
    const double an = -n * (n - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    if (std::abs(d * c - 1) < eps) break;
  }
  return 1 - front * h;
}

double chiSquaredQuantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
  double lo = 0, hi = std::max(1.0, df);
  while (regularizedLowerGamma(df / 2, hi / 2) < p) hi *= 2;  // chi^2_df is Gamma(df / 2, scale 2)
  for (int i = 0; i < 200 && hi - lo > 1e-13 * std::max(1.0, hi); ++i) {
    const double mid = 0.5 * (lo + hi);
    (regularizedLowerGamma(df / 2, mid / 2) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double sdUpperBound(double sd, double df, double confidence) {
  if (!std::isfinite(sd) || !(df > 0) || !(confidence > 0 && confidence < 1)) return NAN;
  return sd * std::sqrt(df / chiSquaredQuantile(1 - confidence, df));
}

double sizingSd(double sd, double df, double confidence) {
  return confidence > 0 ? sdUpperBound(sd, df, confidence) : sd;
}

int seedsForHalfWidth(double sd, double halfWidth, int maxSeeds, double level) {
  if (!std::isfinite(sd) || !(halfWidth > 0)) return 0;
  for (int n = kFewestSeedsForAnInterval; n <= maxSeeds; ++n)
    if (studentTQuantile(0.5 + level / 2, n - 1) * sd / std::sqrt(static_cast<double>(n)) <= halfWidth)
      return n;
  return 0;
}

double minimumDetectableEffect(double sd, int seeds, double power, double level) {
  if (seeds < 2 || !std::isfinite(sd)) return NAN;
  const double df = seeds - 1;
  return (studentTQuantile(0.5 + level / 2, df) + studentTQuantile(power, df)) * sd /
         std::sqrt(static_cast<double>(seeds));
}

BootstrapInterval clusterBootstrap(size_t clusters,
                                   const std::function<double(std::span<const double> weights)>& statistic,
                                   int resamples, double level, uint64_t seed) {
  BootstrapInterval r;
  r.clusters = static_cast<int>(clusters);
  if (clusters == 0) return r;
  std::vector<double> weights(clusters, 1.0);
  r.estimate = statistic(weights);
  if (clusters < 2 || resamples < 2) return r;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, clusters - 1);
  std::vector<double> values;
  values.reserve(static_cast<size_t>(resamples));
  for (int b = 0; b < resamples; ++b) {
    std::fill(weights.begin(), weights.end(), 0.0);
    for (size_t i = 0; i < clusters; ++i) weights[pick(rng)] += 1.0;
    const double v = statistic(weights);
    if (std::isfinite(v)) values.push_back(v);
  }
  if (values.size() < 2) return r;
  std::sort(values.begin(), values.end());
  auto quantile = [&](double q) {  // linear interpolation between order statistics (type 7)
    const double h = q * static_cast<double>(values.size() - 1);
    const auto i = static_cast<size_t>(std::floor(h));
    return i + 1 < values.size() ? values[i] + (h - static_cast<double>(i)) * (values[i + 1] - values[i])
                                 : values.back();
  };
  r.resamples = static_cast<int>(values.size());
  r.lo = quantile((1 - level) / 2);
  r.hi = quantile((1 + level) / 2);
  return r;
}

MeanInterval meanInterval(std::span<const double> v, double level) {
  MeanInterval r;
  r.n = static_cast<int>(v.size());
  if (r.n == 0) return {0, NAN, NAN, NAN};
  r.mean = std::accumulate(v.begin(), v.end(), 0.0) / r.n;
  if (r.n < 2) {
    r.sd = r.halfWidth = NAN;
    return r;
  }
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / (r.n - 1));
  r.halfWidth = studentTQuantile(0.5 + level / 2, r.n - 1) * r.sd / std::sqrt(static_cast<double>(r.n));
  return r;
}

Verdict verdictOf(const MeanInterval& d) {
  if (!std::isfinite(d.halfWidth)) return Verdict::Inconclusive;
  if (d.hi() < 0) return Verdict::Better;
  if (d.lo() > 0) return Verdict::Worse;
  return Verdict::Inconclusive;
}

std::string_view verdictName(Verdict v) {
  switch (v) {
    case Verdict::Better:
      return "better";
    case Verdict::Worse:
      return "worse";
    default:
      return "inconclusive";
  }
}

}  // namespace sharelens
