// The linear algebra of compressing a pretrained model's attention (issue 10; DESIGN.md section 4, "MASA on
// pretrained models"), LAPACK in double, no torch:
//
//   plan        which method, the layer groups, atoms per group, the residual budget beta and the starting
//               rank of every low-rank term, so that the stored parameters meet a target ratio alpha
//   whitening   SVD-LLM's data whitening: the Cholesky factor S of a projection input's autocorrelation
//               X = sum_t x_t x_t^T = S S^T (damped when X is not positive definite)
//   truncation  the rank-r term B A minimising the activation-weighted error ||(W - B A) S||_F^2, i.e.
//               sum_t ||(W - B A) x_t||^2: the truncated SVD U_r Sigma_r V_r^T of W S, mapped back by S^-1:
//               B = U_r Sigma_r, A = V_r^T S^-1
//   allocation  MASA's Algorithm 1: within the pairs (Q, K) and (O, V), rank moved from the first to the
//               second while the summed tail energy of the two whitened residuals (Eq. 17) falls
//
// The MASA paper ("Share Your Attention", supplementary "Local Refinement"): Matrix PCA per layer group
// (Eq. 4), then each layer's residual dW_l = W_l - W^_l (Eq. 11) approximated by L^-1 g(L dW_l; r) (Eq. 12),
// with the residual budget beta of Eq. 13 and the ranks of Algorithm 1; one basis per group by default
// (Tables 6-7). Where the printed text cannot be taken literally, DESIGN.md says which reading is ours.
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
  std::string method = "masa";  // a name of kCompressionMethods (core/compression_methods.hpp)
  double ratio = 0.8;  // alpha: the fraction of the compressed projections' parameters kept, in (0, 1)
  std::vector<Proj> projections = {Proj::Q, Proj::K, Proj::V, Proj::O};
  std::vector<std::vector<int64_t>>
      groups;                    // MASA: a partition of the layers into groups of consecutive layers
  std::optional<int64_t> atoms;  // MASA: atoms B of every multi-layer group (default 1: Tables 6-7)
  // MASA's residual budget beta (the share of a refined layer's parameters its residual terms keep):
  //   "exact"  the beta at which atoms + coefficients + residual terms meet floor(alpha N), the count that
  //            Eq. 13 approximates (default: a comparison at ratio alpha stores what alpha says);
  //   "eq13"   Eq. 13 as printed, beta_g = (alpha |g| - B_g) / (|g| - B_g) per group (stores more than alpha
  //   N)
  std::string budget = "exact";
  // How a layer's residual budget becomes ranks:
  //   "tail-energy"  Algorithm 1: every matrix starts at r = floor(beta m n / (m + n)), then rank moves
  //   within
  //                  (Q, K) and (O, V) while the whitened residuals' tail energy falls (default, the
  //                  paper's);
  //   "by-shape"     ours, kept to reproduce earlier results: balancedRanks() on the pair's shapes only
  std::string allocation = "tail-energy";
};

struct CompressionPlan {
  CompressionSpec spec;
  std::vector<int64_t> atoms;  // per group (MASA): single-layer groups 1 (the layer, exactly)
  // Per projection, per layer: the rank of its B A term. With the tail-energy allocation these are
  // Algorithm 1's starting ranks until finishAllocation() records where it ended.
  std::map<Proj, std::vector<int64_t>> ranks;
  std::map<Proj, std::vector<int64_t>> startRanks;  // the ranks the plan started from (before Algorithm 1)
  std::vector<double> beta;                         // per group: the residual budget beta_g (0: not refined)
  int64_t originalParameters = 0;                   // the compressed projections' parameters, before
  int64_t targetParameters = 0;                     // floor(alpha x original)
  int64_t atomParameters = 0;                       // atoms + coefficients
  int64_t plannedParameters = 0;  // atoms + coefficients + every B A term: what will be stored
};

// Parameters a projection's B A term of rank r costs: r (out + in).
int64_t lowRankParameters(const ModelShape& shape, Proj p, int64_t rank);

// Parameters the plan stores with its current ranks: atoms + coefficients + every B A term.
int64_t plannedParametersOf(const ModelShape& shape, const CompressionPlan& plan);

// The plan (named errors for a ratio outside (0, 1), groups that are not a partition of consecutive layers,
// more atoms than layers in a group, atoms that alone exceed the target, or a target too small for rank 1):
//   svd         every matrix keeps rank floor(alpha out in / (out + in)) (SVD-LLM's uniform ratio);
//   masa-noref  atoms only: B_g = max(1, floor(alpha |g|)) per multi-layer group, lowered where the largest
//               share of atoms sits until the atoms fit the target;
//   masa        B_g = the given atoms, else 1 (the paper's default, Tables 6-7); beta from spec.budget; every
//               matrix of a refined layer starts at rank floor(beta out in / (out + in)) (Algorithm 1's
//               start, its "compression ratio" being 1 - beta), or by-shape: balancedRanks() per pair.
// Single-layer groups store their layer as one atom with coefficient ||W||_F: exact, so never refined.
CompressionPlan planCompression(const ModelShape& shape, const CompressionSpec& spec);

// MASA Algorithm 1 for one pair (A, B) = (Q, K) or (O, V): sigmaA, sigmaB are the singular values
// (descending) of the two whitened residuals; starting from `start`, r_A falls and r_B rises one at a time
// until r_A < 1 or r_B > len(sigmaB); the split with the least E = sum_{i > r_A} sigmaA_i^2 + sum_{j > r_B}
// sigmaB_j^2 (Eq. 17) is returned (the first such split; `start` when none is lower).
struct RankPair {
  int64_t a = 0, b = 0;
};
RankPair tailEnergyRanks(const std::vector<double>& sigmaA, const std::vector<double>& sigmaB,
                         RankPair start);
double tailEnergy(const std::vector<double>& sigma, int64_t rank);  // sum_{i > rank} sigma_i^2

// Our variant (allocation "by-shape"), for one pair (A, B) under a parameter budget: ranks in proportion to
// the pair's intrinsic ranks rho = min(out_B, in_B) / min(out_A, in_A) (rank(AB) <= min(rank A, rank B): the
// matrix that can hold more rank gets more), r_A = floor(budget / ((out_A + in_A) + rho (out_B + in_B))), r_B
// = floor(rho r_A), each capped at its matrix's full rank.
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
// The thin SVD of W S (w: out x in, row-major, double): everything a truncation at any rank needs.
struct WhitenedSvd {
  int64_t out = 0, in = 0;
  std::vector<double> u;      // out x k, k = min(out, in)
  std::vector<double> sigma;  // k, descending
  std::vector<double> vt;     // k x in
};
WhitenedSvd whitenedSvd(const std::vector<double>& w, int64_t out, int64_t in, const Whitening& whitening);
// B = U_r Sigma_r, A = V_r^T S^-1 (rank capped at k).
LowRankTerm truncate(const WhitenedSvd& svd, const Whitening& whitening, int64_t rank);
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
