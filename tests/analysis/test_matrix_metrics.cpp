// The ESD tab's table: the ESD's rows joined with the spectra by matrix name, the stable rank and spectral
// norm from their closed forms (sum sigma^2 / sigma_1^2, sigma_1), NaN and an empty CSV cell where the
// spectra did not cover a matrix.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/matrix_metrics.hpp"

namespace sharelens {
namespace {

TEST(MatrixMetrics, JoinsTheSpectraByNameAndWritesEmptyCellsForMissingValues) {
  MatrixEsd q;
  q.id = {"layers.0.q", 0, Proj::Q, -1};
  q.rows = 8;
  q.cols = 4;
  q.eigenvalues = {9, 4, 1};
  q.fit = {2.5, 1.0, 0.05, 3};
  MatrixEsd down = q;
  down.id = {"layers.0.down", 0, Proj::Down, -1};
  MatrixSpectrum sq{{"layers.0.q", 0, Proj::Q, -1}, {}};
  sq.spectrum.sigma = {3, 2, 1};
  sq.spectrum.frobeniusSquared = 14;
  sq.spectrum.effectiveRank = 2;
  MatrixSpectrum head{{"layers.0.down.head.0", 0, Proj::Down, 0}, {}};  // a head's: not the whole matrix
  head.spectrum.sigma = {5};
  head.spectrum.frobeniusSquared = 25;
  const std::vector<MatrixSpectrum> spectra = {sq, head};
  const auto rows = matrixMetrics({q, down}, &spectra);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "layers.0.q");
  EXPECT_EQ(rows[0].proj, "q");
  EXPECT_DOUBLE_EQ(rows[0].stableRank, 14.0 / 9.0);
  EXPECT_DOUBLE_EQ(rows[0].spectralNorm, 3.0);
  EXPECT_DOUBLE_EQ(rows[0].effectiveRank, 2.0);
  EXPECT_DOUBLE_EQ(rows[0].alpha, 2.5);
  EXPECT_DOUBLE_EQ(rows[0].lambdaMax, 9.0);
  EXPECT_TRUE(std::isnan(rows[1].stableRank)) << "down has no whole-matrix spectrum";
  const std::string csv = matrixMetricsCsv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "matrix,layer,projection,rows,cols,effective_rank,stable_rank,spectral_norm,alpha,xmin,tail,ks,"
            "lambda_max");
  EXPECT_NE(csv.find("\nlayers.0.q,0,q,8,4,2,1.55555556,3,2.5,1,3,0.05,9\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nlayers.0.down,0,down,8,4,,,,2.5,1,3,0.05,9\n"), std::string::npos) << csv;
  EXPECT_EQ(matrixMetrics({q}, nullptr).size(), 1u);
}

}  // namespace
}  // namespace sharelens
