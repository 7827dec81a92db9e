// Empirical spectral densities with a power-law fit, as WeightWatcher reports them (Martin & Mahoney,
// "Implicit self-regularization in deep neural networks"; Martin, Peng & Mahoney 2021): for every weight
// matrix W the eigenvalues lambda_i = sigma_i^2 of its correlation matrix W^T W (the normalisation by N does
// not change the exponent), and the exponent alpha of a power law p(lambda) ~ lambda^(-alpha) fitted to their
// tail by the method of Clauset, Shalizi & Newman (2009, Eq. 3.1 and Sec. 3.3): for each candidate lower
// bound x_min (every eigenvalue that leaves at least kMinTail above it), the maximum-likelihood
//     alpha = 1 + n / sum_{i: lambda_i >= x_min} ln(lambda_i / x_min),
// and the x_min kept is the one whose fitted CDF is closest to the tail's empirical CDF in the Kolmogorov-
// Smirnov distance D = max |S(x) - P(x)|, P(x) = 1 - (x / x_min)^(1 - alpha). Smaller alpha (2..4) marks a
// heavier-tailed, better-trained layer in WeightWatcher's reading; alpha > 6 an under-trained one.
#pragma once

#include <vector>

#include "analysis/analysis_ids.hpp"
#include "analysis/backend.hpp"
#include "analysis/weights.hpp"
#include "core/json_util.hpp"

namespace sharelens {

inline constexpr size_t kMinTail = 10;  // eigenvalues a fit must keep above x_min

struct PowerLawFit {
  double alpha = 0, xmin = 0, ks = 0;  // ks: the Kolmogorov-Smirnov distance D of the chosen fit
  int64_t tail = 0;                    // eigenvalues >= x_min
};

// The fit of one sample (positive values, any order); alpha = NaN when fewer than kMinTail positive values.
PowerLawFit fitPowerLaw(std::vector<double> values);

struct MatrixEsd {
  MatrixId id;
  int64_t rows = 0, cols = 0;
  std::vector<double> eigenvalues;  // sigma^2, descending
  PowerLawFit fit;
  double lambdaMax() const { return eigenvalues.empty() ? 0.0 : eigenvalues.front(); }
};

// Every projection of every layer (whole matrices, as WeightWatcher analyses layers).
std::vector<MatrixEsd> computeEsd(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                  const TaskContext& ctx);

Json toJson(const std::vector<MatrixEsd>& esd);
std::vector<MatrixEsd> esdFromJson(const Json& j);

// Its typed id (AnalysisId<T>: analysis_ids.hpp), from which registry.cpp builds its entry and by which
// views and the CLI ask for its result (`results.get(analyses::kX)` is the result typed).
namespace analyses {
inline constexpr AnalysisId<std::vector<MatrixEsd>> kEsd{"esd"};
}  // namespace analyses

}  // namespace sharelens
