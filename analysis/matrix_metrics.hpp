// One row per weight matrix with every per-matrix number the analyses give (WeightWatcher's details table):
// shape, effective rank at the threshold, stable rank ||W||_F^2 / ||W||_2^2 and spectral norm (from the
// spectra), and the ESD's power-law alpha, x_min, tail size, KS distance and lambda_max (from the ESD).
// Rows come from the ESD (whole projections); the spectra's numbers join by matrix name and are NaN when
// the spectra did not cover the matrix. The GUI's ESD tab sorts it; CSV for a spreadsheet or pandas.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/esd.hpp"
#include "analysis/spectra.hpp"

namespace sharelens {

struct MatrixMetrics {
  std::string name;
  int64_t layer = -1;
  std::string proj;
  int64_t rows = 0, cols = 0;
  double effectiveRank = NAN, stableRank = NAN, spectralNorm = NAN;
  double alpha = NAN, xmin = NAN, ks = NAN, lambdaMax = NAN;
  int64_t tail = 0;
};

std::vector<MatrixMetrics> matrixMetrics(const std::vector<MatrixEsd>& esd,
                                         const std::vector<MatrixSpectrum>* spectra);

std::string matrixMetricsCsv(const std::vector<MatrixMetrics>& rows);  // header + one line per matrix
void writeMatrixMetricsCsv(const std::vector<MatrixMetrics>& rows, const std::filesystem::path& path);

}  // namespace sharelens
