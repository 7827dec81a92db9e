// The linear algebra of compressing a pretrained model's attention (issue 10; DESIGN.md section 4, "MASA on
// pretrained models"), LAPACK in double, no torch:
//
//   plan       which method, the layer groups, atoms per group, the residual budget beta and the rank of
//   every
//              low-rank term, so that the stored parameters meet a target ratio alpha of the original ones
//   whitening  SVD-LLM's data whitening: the Cholesky factor S of a projection input's autocorrelation
//              X = sum_t x_t x_t^T = S S^T (damped when X is not positive definite)
//   truncation the rank-r term B A minimising the activation-weighted error ||(W - B A) S||_F^2, i.e.
//              sum_t ||(W - B A) x_t||^2: the truncated SVD U_r Sigma_r V_r^T of W S, mapped back by S^-1:
//              B = U_r Sigma_r, A = V_r^T S^-1
//
// The MASA paper ("Share Your Attention", Sec. "Matrix Weight-Sharing for Pretrained Models") gives Matrix
// PCA per layer group, then refines each layer's residual dW_l = W_l - W^_l with a whitened low-rank term
// whose ranks a balanced allocation chooses (Q with K, O with V, more rank to the matrix of higher intrinsic
// rank). Its appendix's Eq. 13 (beta ~ (alpha L - B) / (L - B)) and Algorithm 1 (rank moved within a pair
// while the tail energy falls) differ from the budget and allocation below, which are our variant (DESIGN.md,
// issue 36 item 1), tested on hand-computed cases.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/float_matrix.hpp"
#include "core/model_view.hpp"
#include "core/symmetric.hpp"

namespace sharelens {

struct CompressionSpec {
  std::string method = "masa";  // "masa" (Matrix PCA + refined residuals), "masa-noref" (atoms only), "svd"
  double ratio = 0.8;  // alpha: the fraction of the compressed projections' parameters kept, in (0, 1)
  std::vector<Proj> projections = {Proj::Q, Proj::K, Proj::V, Proj::O};
  std::vector<std::vector<int64_t>>
      groups;                    // MASA: a partition of the layers into groups of consecutive layers
  std::optional<int64_t> atoms;  // MASA: atoms B of every multi-layer group (default below)
};

struct CompressionPlan {
  CompressionSpec spec;
  std::vector<int64_t> atoms;                  // per group (MASA): single-layer groups 1 (the layer, exactly)
  std::map<Proj, std::vector<int64_t>> ranks;  // per projection, per layer: the rank of its B A term
  double beta = 0;                             // residual budget / original parameters (MASA)
  int64_t originalParameters = 0;              // the compressed projections' parameters, before
  int64_t targetParameters = 0;                // floor(alpha x original)
  int64_t atomParameters = 0;                  // atoms + coefficients
  int64_t plannedParameters = 0;               // atoms + coefficients + every B A term: what will be stored
};

// Parameters a projection's B A term of rank r costs: r (out + in).
int64_t lowRankParameters(const ModelShape& shape, Proj p, int64_t rank);

// The plan (named errors for a ratio outside (0, 1), groups that are not a partition of consecutive layers,
// more atoms than layers in a group, atoms that alone exceed the target, or a target too small for rank 1):
//   svd         every matrix keeps rank floor(alpha out in / (out + in)) (SVD-LLM's uniform ratio);
//   masa-noref  atoms only: B_g = max(1, floor(alpha |g|)) per multi-layer group, lowered where the largest
//               share of atoms sits until the atoms fit the target;
//   masa        B_g = the given atoms, else max(1, floor(alpha |g| / 2)) (half of what alpha pays for, ours);
//               beta = (target - atoms - coefficients) / original (our Eq. 13); the residual budget is split
//               evenly over the layers of multi-layer groups, within a layer between the pairs (Q, K) and (O,
//               V) in proportion to their sizes, and within a pair by balancedRanks().
// Single-layer groups store their layer as one atom with coefficient ||W||_F: exact, so never refined.
CompressionPlan planCompression(const ModelShape& shape, const CompressionSpec& spec);

// Our reading of Algorithm 1 for one pair (A, B) under a parameter budget: ranks in proportion to the pair's
// intrinsic ranks rho = min(out_B, in_B) / min(out_A, in_A) (rank(AB) <= min(rank A, rank B): the matrix that
// can hold more rank gets more), r_A = floor(budget / ((out_A + in_A) + rho (out_B + in_B))), r_B = floor(rho
// r_A), each capped at its matrix's full rank.
struct RankPair {
  int64_t a = 0, b = 0;
};
RankPair balancedRanks(int64_t budget, std::pair<int64_t, int64_t> shapeA,
                       std::pair<int64_t, int64_t> shapeB);

// X = S S^T with S lower triangular (n x n, row-major, double). When X is not positive definite (too few or
// degenerate calibration inputs, dead channels) the diagonal is damped by lambda = 1e-6 x mean(diag X), then
// 1e-5,
// ... up to 1e-1, and the lambda used is returned (0 when none was needed).
struct Whitening {
  int64_t n = 0;
  std::vector<double> s;  // lower triangular, row-major
  double damping = 0;     // lambda added to the diagonal, relative to mean(diag X)
};
Whitening whiteningOf(const PackedSymmetric& autocorrelation, const std::string& where);

struct LowRankTerm {
  FloatMatrix b;  // out x r
  FloatMatrix a;  // r x in
  int64_t rank() const { return b.cols; }
};
// The rank-r B A minimising ||(W - B A) S||_F (w: out x in, row-major, double), by the truncated SVD of W S.
LowRankTerm whitenedTruncation(const std::vector<double>& w, int64_t out, int64_t in,
                               const Whitening& whitening, int64_t rank);
// The same without whitening (S = I): the plain truncated SVD, for comparison.
LowRankTerm plainTruncation(const std::vector<double>& w, int64_t out, int64_t in, int64_t rank);

// sum_t ||(W - M) x_t||^2 = tr((W - M) X (W - M)^T) for the autocorrelation X: the error the whitening
// minimises.
double activationWeightedError(const std::vector<double>& w, const FloatMatrix& approximation,
                               const PackedSymmetric& x);
FloatMatrix product(const LowRankTerm& t);  // B A, out x in

}  // namespace sharelens
