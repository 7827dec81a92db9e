// Singular-value spectra and the quantities read off them (DESIGN.md section 4).
//
// Effective rank at threshold t: the smallest k with sum_{i<=k} sigma_i^2 >= t * ||A||_F^2. The total is the
// Gram's trace, i.e. ||A||_F^2 summed in double, not the sum of the computed eigenvalues.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sharelens {

// Eigenvalues of a Gram matrix (sigma^2, descending) and its trace (||A||_F^2).
struct GramSpectrum {
  std::vector<double> eigenvalues;
  double trace = 0.0;
};

int64_t effectiveRank(std::span<const double> sigmaSquaredDescending, double totalEnergy, double threshold);

struct Spectrum {
  int64_t rows = 0, cols = 0;
  std::vector<double> sigma;  // descending, min(rows, cols) values
  double frobeniusSquared = 0.0;
  double threshold = 0.95;
  int64_t effectiveRank = 0;

  double spectralNorm() const { return sigma.empty() ? 0.0 : sigma.front(); }
  double frobenius() const;
  double stableRank() const;  // ||A||_F^2 / ||A||_2^2, in [1, rank]
  // sum_{i<=k} sigma_i^2 / ||A||_F^2 for k = 1..n: the cumulative energy curve.
  std::vector<double> cumulativeEnergy() const;
};

Spectrum makeSpectrum(const GramSpectrum& gram, int64_t rows, int64_t cols, double threshold);

}  // namespace sharelens
