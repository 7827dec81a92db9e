#include "analysis/spectrum.hpp"

#include <cmath>

namespace sharelens {

// The eigenvalues and the trace are the same energy rounded two ways (the eigensolver's, ~n u relative, and
// the trace's): "reaches t of the total" is taken within this relative tolerance of it. Without it t = 1
// gives the numerical rank or the full dimension by chance, as the rounding falls; below t = 1 it moves only
// ranks whose cumulative energy lies within 1e-12 of the threshold, which the peer checks call ambiguous
// (1e-9).
constexpr double kEnergyTolerance = 1e-12;

int64_t effectiveRank(std::span<const double> lambda, double total, double threshold) {
  if (total <= 0.0 || lambda.empty()) return 0;
  const double target = threshold * total * (1.0 - kEnergyTolerance);
  double cumulative = 0.0;
  for (size_t k = 0; k < lambda.size(); ++k) {
    cumulative += lambda[k];
    if (cumulative >= target) return static_cast<int64_t>(k + 1);
  }
  return static_cast<int64_t>(lambda.size());
}

double Spectrum::frobenius() const {
  return std::sqrt(frobeniusSquared);
}

double Spectrum::stableRank() const {
  const double s1 = spectralNorm();
  return s1 > 0.0 ? frobeniusSquared / (s1 * s1) : 0.0;
}

std::vector<double> Spectrum::cumulativeEnergy() const {
  std::vector<double> out(sigma.size());
  double cumulative = 0.0;
  for (size_t i = 0; i < sigma.size(); ++i) {
    cumulative += sigma[i] * sigma[i];
    out[i] = frobeniusSquared > 0.0 ? cumulative / frobeniusSquared : 0.0;
  }
  return out;
}

Spectrum makeSpectrum(const GramSpectrum& gram, int64_t rows, int64_t cols, double threshold) {
  Spectrum s;
  s.rows = rows;
  s.cols = cols;
  s.threshold = threshold;
  s.frobeniusSquared = gram.trace;
  s.sigma.reserve(gram.eigenvalues.size());
  for (double l : gram.eigenvalues) s.sigma.push_back(std::sqrt(std::max(l, 0.0)));
  s.effectiveRank = effectiveRank(gram.eigenvalues, gram.trace, threshold);
  return s;
}

}  // namespace sharelens
