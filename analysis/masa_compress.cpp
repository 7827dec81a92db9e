#include "analysis/masa_compress.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/compressed_checkpoint.hpp"
#include "core/compression_methods.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& where, const std::string& expected,
                         const std::string& found, const std::string& hint = {}) {
  throw Error({.what = what, .where = where, .expected = expected, .found = found, .hint = hint});
}

int64_t fullRank(std::pair<int64_t, int64_t> shape) {
  return std::min(shape.first, shape.second);
}

void checkGroups(const CompressionSpec& spec, int64_t layers) {
  std::set<int64_t> seen;
  for (const auto& g : spec.groups) {
    if (g.empty())
      refuse("an empty layer group", "--groups", "groups of one layer or more", "an empty group");
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] < 0 || g[i] >= layers)
        refuse("layer out of range", "--groups", "layers 0.." + std::to_string(layers - 1),
               std::to_string(g[i]));
      if (i > 0 && g[i] != g[i - 1] + 1)
        refuse("a layer group is not a run of consecutive layers", "--groups", "ranges like 0-0,1-10,11-11",
               std::to_string(g[i - 1]) + " then " + std::to_string(g[i]),
               "MASA shares atoms within runs of consecutive blocks");
      if (!seen.insert(g[i]).second)
        refuse("layer in two groups", "--groups", "each layer in one group", std::to_string(g[i]));
    }
  }
  if (static_cast<int64_t>(seen.size()) != layers)
    refuse("the groups do not cover every layer", "--groups", std::to_string(layers) + " layers",
           std::to_string(seen.size()) + " grouped",
           "list every layer once, e.g. 0-0,1-" + std::to_string(layers - 2) + "," +
               std::to_string(layers - 1) + "-" + std::to_string(layers - 1));
}

int64_t atomCost(const ModelShape& shape, const CompressionSpec& spec, const std::vector<int64_t>& atoms) {
  int64_t cost = 0;
  for (size_t g = 0; g < spec.groups.size(); ++g)
    for (Proj p : spec.projections) {
      const auto [out, in] = attentionShape(shape, p);
      cost += atoms[g] * out * in + static_cast<int64_t>(spec.groups[g].size()) * atoms[g];
    }
  return cost;
}

int64_t layerParameters(const ModelShape& shape, const CompressionSpec& spec) {
  int64_t size = 0;
  for (Proj p : spec.projections) size += attentionShape(shape, p).first * attentionShape(shape, p).second;
  return size;
}

// beta per group (0 for single-layer groups, which are exact): "exact" spreads what the atoms leave of the
// target evenly over the refined layers' parameters; "eq13" is MASA Eq. 13 per group.
std::vector<double> residualBudgets(const ModelShape& shape, const CompressionSpec& spec,
                                    const CompressionPlan& plan) {
  std::vector<double> beta(spec.groups.size(), 0.0);
  int64_t refinedLayers = 0;
  for (const auto& g : spec.groups)
    if (g.size() > 1) refinedLayers += static_cast<int64_t>(g.size());
  const double exact = refinedLayers == 0
                           ? 0.0
                           : static_cast<double>(plan.targetParameters - plan.atomParameters) /
                                 static_cast<double>(refinedLayers * layerParameters(shape, spec));
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const double size = static_cast<double>(spec.groups[g].size());
    if (size < 2) continue;
    const double atoms = static_cast<double>(plan.atoms[g]);
    beta[g] = spec.budget == "eq13" ? std::max(0.0, (spec.ratio * size - atoms) / std::max(1.0, size - atoms))
                                    : exact;
  }
  return beta;
}

// Ours ("by-shape"): a layer's budget split between the pairs (Q, K) and (O, V) in proportion to their sizes,
// within a pair by balancedRanks(); a projection without its partner alone.
void allocateByShape(const ModelShape& shape, const CompressionSpec& spec, double beta, size_t layer,
                     std::map<Proj, std::vector<int64_t>>& ranks) {
  auto selected = [&](Proj p) {
    return std::find(spec.projections.begin(), spec.projections.end(), p) != spec.projections.end();
  };
  auto budgetOf = [&](std::initializer_list<Proj> pair) {
    int64_t size = 0;
    for (Proj p : pair) size += attentionShape(shape, p).first * attentionShape(shape, p).second;
    return static_cast<int64_t>(std::floor(beta * static_cast<double>(size)));
  };
  for (const auto& [a, b] : {std::pair{Proj::Q, Proj::K}, std::pair{Proj::O, Proj::V}}) {
    if (selected(a) && selected(b)) {
      const RankPair r = balancedRanks(budgetOf({a, b}), attentionShape(shape, a), attentionShape(shape, b));
      ranks[a][layer] = r.a;
      ranks[b][layer] = r.b;
      continue;
    }
    for (Proj p : {a, b})
      if (selected(p)) {
        const auto s = attentionShape(shape, p);
        ranks[p][layer] = std::min(fullRank(s), budgetOf({p}) / (s.first + s.second));
      }
  }
}

std::vector<double> lowerCholesky(std::vector<double> a, int64_t n, int* info) {
  *info =
      LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', static_cast<lapack_int>(n), a.data(), static_cast<lapack_int>(n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j)
      a[static_cast<size_t>(i * n + j)] = 0.0;  // dpotrf leaves the upper triangle
  return a;
}

// Thin SVD of y (out x in, row-major, consumed): U (out x k), sigma (k, descending), V^T (k x in).
WhitenedSvd thinSvd(std::vector<double>& y, int64_t out, int64_t in) {
  const int64_t k = std::min(out, in);
  WhitenedSvd svd;
  svd.out = out;
  svd.in = in;
  svd.sigma.resize(static_cast<size_t>(k));
  svd.u.resize(static_cast<size_t>(out * k));
  svd.vt.resize(static_cast<size_t>(k * in));
  const lapack_int info =
      LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', static_cast<lapack_int>(out), static_cast<lapack_int>(in),
                     y.data(), static_cast<lapack_int>(in), svd.sigma.data(), svd.u.data(),
                     static_cast<lapack_int>(k), svd.vt.data(), static_cast<lapack_int>(in));
  if (info != 0)
    throw Error(
        {.what = "dgesdd did not converge",
         .where = "truncated SVD of a " + std::to_string(out) + " x " + std::to_string(in) + " matrix",
         .found = "info = " + std::to_string(info),
         .hint = "the weights or the calibration statistics hold NaN or Inf"});
  return svd;
}

// U_r Sigma_r (out x rank).
std::vector<double> leftFactor(const WhitenedSvd& svd, int64_t rank) {
  const int64_t k = static_cast<int64_t>(svd.sigma.size());
  std::vector<double> b(static_cast<size_t>(svd.out * rank));
  for (int64_t i = 0; i < svd.out; ++i)
    for (int64_t r = 0; r < rank; ++r)
      b[static_cast<size_t>(i * rank + r)] =
          svd.u[static_cast<size_t>(i * k + r)] * svd.sigma[static_cast<size_t>(r)];
  return b;
}

FloatMatrix toFloat(const std::vector<double>& d, int64_t rows, int64_t cols) {
  FloatMatrix m(rows, cols);
  for (size_t i = 0; i < d.size(); ++i) m.data[i] = static_cast<float>(d[i]);
  return m;
}

}  // namespace

int64_t lowRankParameters(const ModelShape& shape, Proj p, int64_t rank) {
  const auto [out, in] = attentionShape(shape, p);
  return rank * (out + in);
}

RankPair balancedRanks(int64_t budget, std::pair<int64_t, int64_t> a, std::pair<int64_t, int64_t> b) {
  if (budget <= 0) return {};
  const double rho = static_cast<double>(fullRank(b)) / static_cast<double>(fullRank(a));
  const double perUnit =
      static_cast<double>(a.first + a.second) + rho * static_cast<double>(b.first + b.second);
  RankPair r;
  r.a = std::min(fullRank(a), static_cast<int64_t>(std::floor(static_cast<double>(budget) / perUnit)));
  r.b = std::min(fullRank(b), static_cast<int64_t>(std::floor(rho * static_cast<double>(r.a))));
  return r;
}

CompressionPlan planCompression(const ModelShape& shape, const CompressionSpec& spec) {
  if (!(spec.ratio > 0.0 && spec.ratio < 1.0))
    refuse("compression ratio out of range", "--ratio", "a fraction in (0, 1): the share of parameters kept",
           std::to_string(spec.ratio), "0.8 keeps 80% of the attention parameters");
  if (!isCompressionMethod(spec.method))
    refuse("unknown compression method", "--method", compressionMethodList(), spec.method);
  if (spec.budget != "exact" && spec.budget != "eq13")
    refuse("unknown residual budget", "--budget", "exact or eq13", spec.budget);
  if (spec.allocation != "tail-energy" && spec.allocation != "by-shape")
    refuse("unknown rank allocation", "--allocation", "tail-energy or by-shape", spec.allocation);
  if (spec.projections.empty())
    refuse("no projection to compress", "--projections", "some of q,k,v,o", "none");
  for (Proj p : spec.projections)
    if (!isAttentionProj(p))
      refuse("not an attention projection", "--projections", "q, k, v or o", std::string(projName(p)));
  if (shape.heads <= 0 || shape.headDim <= 0 || shape.kvHeads <= 0)
    refuse("the head counts are unknown", "compression", "config.json with the head counts", "none",
           "put the model's config.json next to the weights");
  const int64_t layers = shape.layers;
  CompressionPlan plan;
  plan.spec = spec;
  for (Proj p : spec.projections) {
    const auto [out, in] = attentionShape(shape, p);
    plan.originalParameters += layers * out * in;
    plan.ranks[p].assign(static_cast<size_t>(layers), 0);
  }
  plan.targetParameters =
      static_cast<int64_t>(std::floor(spec.ratio * static_cast<double>(plan.originalParameters)));

  if (spec.method == "svd") {
    for (Proj p : spec.projections) {
      const auto shapeP = attentionShape(shape, p);
      const int64_t r = std::min(
          fullRank(shapeP),
          static_cast<int64_t>(std::floor(spec.ratio * static_cast<double>(shapeP.first * shapeP.second) /
                                          static_cast<double>(shapeP.first + shapeP.second))));
      if (r < 1)
        refuse("ratio too small for rank 1", "--ratio", "a ratio that pays for one rank of every matrix",
               std::to_string(spec.ratio));
      std::fill(plan.ranks[p].begin(), plan.ranks[p].end(), r);
      plan.plannedParameters += layers * lowRankParameters(shape, p, r);
    }
    return plan;
  }

  checkGroups(spec, layers);
  plan.atoms.assign(spec.groups.size(), 1);
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const int64_t size = static_cast<int64_t>(spec.groups[g].size());
    if (size == 1) continue;  // the layer itself: one atom, exact
    if (spec.method == "masa-noref") {
      plan.atoms[g] =
          std::max<int64_t>(1, static_cast<int64_t>(std::floor(spec.ratio * static_cast<double>(size))));
    } else if (spec.atoms) {
      if (*spec.atoms < 1 || *spec.atoms > size)
        refuse("more atoms than layers in a group", "--atoms",
               "1.." + std::to_string(size) + " for the group of layers " +
                   std::to_string(spec.groups[g].front()) + "-" + std::to_string(spec.groups[g].back()),
               std::to_string(*spec.atoms), "Matrix PCA of |G| matrices has at most |G| atoms");
      plan.atoms[g] = *spec.atoms;
    }  // else one basis per group (MASA Tables 6-7)
  }
  if (spec.method == "masa-noref") {  // lower the largest atom shares until the atoms fit
    while (atomCost(shape, spec, plan.atoms) > plan.targetParameters) {
      size_t worst = spec.groups.size();
      double share = 0;
      for (size_t g = 0; g < spec.groups.size(); ++g) {
        const double s = static_cast<double>(plan.atoms[g]) / static_cast<double>(spec.groups[g].size());
        if (plan.atoms[g] > 1 && s > share) share = s, worst = g;
      }
      if (worst == spec.groups.size()) break;
      --plan.atoms[worst];
    }
  }
  plan.atomParameters = atomCost(shape, spec, plan.atoms);
  if (plan.atomParameters > plan.targetParameters)
    refuse(
        "the atoms alone exceed the target", "--ratio " + std::to_string(spec.ratio).substr(0, 5),
        "at most " + std::to_string(plan.targetParameters) + " parameters",
        std::to_string(plan.atomParameters) + " in atoms and coefficients",
        "use fewer --atoms, larger groups, or a higher --ratio (single-layer groups keep their layer whole)");
  plan.plannedParameters = plan.atomParameters;
  if (spec.method == "masa-noref") return plan;

  plan.beta = residualBudgets(shape, spec, plan);
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    if (plan.beta[g] <= 0) continue;
    for (int64_t l : spec.groups[g]) {
      const auto layer = static_cast<size_t>(l);
      if (spec.allocation == "by-shape") {
        allocateByShape(shape, spec, plan.beta[g], layer, plan.ranks);
        continue;
      }
      for (Proj p : spec.projections) {  // Algorithm 1's start: r = floor(beta m n / (m + n))
        const auto s = attentionShape(shape, p);
        plan.ranks[p][layer] =
            std::min(fullRank(s),
                     static_cast<int64_t>(std::floor(plan.beta[g] * static_cast<double>(s.first * s.second) /
                                                     static_cast<double>(s.first + s.second))));
      }
    }
  }
  plan.startRanks = plan.ranks;
  plan.plannedParameters = plannedParametersOf(shape, plan);
  return plan;
}

int64_t plannedParametersOf(const ModelShape& shape, const CompressionPlan& plan) {
  int64_t total = plan.atomParameters;
  for (const auto& [p, perLayer] : plan.ranks)
    for (int64_t r : perLayer) total += lowRankParameters(shape, p, r);
  return total;
}

double tailEnergy(const std::vector<double>& sigma, int64_t rank) {
  double e = 0;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(0, rank)); i < sigma.size(); ++i)
    e += sigma[i] * sigma[i];
  return e;
}

RankPair tailEnergyRanks(const std::vector<double>& sigmaA, const std::vector<double>& sigmaB,
                         RankPair start) {
  RankPair best = start;
  double least = tailEnergy(sigmaA, start.a) + tailEnergy(sigmaB, start.b);
  for (RankPair r{start.a - 1, start.b + 1}; r.a >= 1 && r.b <= static_cast<int64_t>(sigmaB.size());
       --r.a, ++r.b) {
    const double e = tailEnergy(sigmaA, r.a) + tailEnergy(sigmaB, r.b);
    if (e < least) least = e, best = r;
  }
  return best;
}

Whitening whiteningOf(const PackedSymmetric& x, const std::string& where) {
  Whitening w;
  w.n = x.n;
  const std::vector<double> full = x.full();
  const double meanDiagonal = x.trace() / static_cast<double>(std::max<int64_t>(1, x.n));
  if (!(meanDiagonal > 0) || !std::isfinite(meanDiagonal))
    throw Error({.what = "the calibration inputs are all zero or not finite",
                 .where = where,
                 .found = "mean of diag(X) = " + std::to_string(meanDiagonal),
                 .hint = "calibrate on real text (--calibration brown:2048)"});
  int info = 0;
  w.s = lowerCholesky(full, x.n, &info);
  for (double lambda = 1e-6; info != 0; lambda *= 10) {
    if (lambda > 0.1 + 1e-12)
      throw Error({.what = "the input autocorrelation is not positive definite even when damped",
                   .where = where,
                   .expected = "X + lambda mean(diag X) I positive definite for some lambda <= 0.1",
                   .found = "dpotrf info " + std::to_string(info),
                   .hint = "calibrate on more tokens (at least the input width)"});
    std::vector<double> damped = full;
    for (int64_t i = 0; i < x.n; ++i) damped[static_cast<size_t>(i * x.n + i)] += lambda * meanDiagonal;
    w.s = lowerCholesky(std::move(damped), x.n, &info);
    w.damping = lambda;
  }
  return w;
}

WhitenedSvd whitenedSvd(const std::vector<double>& w, int64_t out, int64_t in, const Whitening& white) {
  if (white.n != in)
    throw Error({.what = "whitening of the wrong size",
                 .where = "low-rank truncation",
                 .expected = std::to_string(in),
                 .found = std::to_string(white.n)});
  std::vector<double> y = w;  // Y = W S
  cblas_dtrmm(CblasRowMajor, CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, static_cast<int>(out),
              static_cast<int>(in), 1.0, white.s.data(), static_cast<int>(in), y.data(),
              static_cast<int>(in));
  return thinSvd(y, out, in);
}

LowRankTerm truncate(const WhitenedSvd& svd, const Whitening& white, int64_t rank) {
  const int64_t k = static_cast<int64_t>(svd.sigma.size()), out = svd.out, in = svd.in;
  rank = std::min(rank, k);
  if (rank <= 0) return {FloatMatrix(out, 0), FloatMatrix(0, in)};
  const std::vector<double> b = leftFactor(svd, rank);
  std::vector<double> vt(svd.vt.begin(), svd.vt.begin() + rank * in);
  // A = V_r^T S^-1: solve A S = V_r^T.
  cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, static_cast<int>(rank),
              static_cast<int>(in), 1.0, white.s.data(), static_cast<int>(in), vt.data(),
              static_cast<int>(in));
  return {toFloat(b, out, rank), toFloat(vt, rank, in)};
}

LowRankTerm whitenedTruncation(const std::vector<double>& w, int64_t out, int64_t in, const Whitening& white,
                               int64_t rank) {
  if (std::min(rank, std::min(out, in)) <= 0) return {FloatMatrix(out, 0), FloatMatrix(0, in)};
  return truncate(whitenedSvd(w, out, in, white), white, rank);
}

LowRankTerm plainTruncation(const std::vector<double>& w, int64_t out, int64_t in, int64_t rank) {
  rank = std::min(rank, std::min(out, in));
  if (rank <= 0) return {FloatMatrix(out, 0), FloatMatrix(0, in)};
  std::vector<double> y = w;
  const WhitenedSvd svd = thinSvd(y, out, in);
  return {toFloat(leftFactor(svd, rank), out, rank),
          toFloat(std::vector<double>(svd.vt.begin(), svd.vt.begin() + rank * in), rank, in)};
}

FloatMatrix product(const LowRankTerm& t) {
  FloatMatrix m(t.b.rows, t.a.cols);
  if (t.rank() == 0) return m;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(t.b.rows),
              static_cast<int>(t.a.cols), static_cast<int>(t.rank()), 1.0f, t.b.data.data(),
              static_cast<int>(t.rank()), t.a.data.data(), static_cast<int>(t.a.cols), 0.0f, m.data.data(),
              static_cast<int>(m.cols));
  return m;
}

double activationWeightedError(const std::vector<double>& w, const FloatMatrix& approximation,
                               const PackedSymmetric& x) {
  const int64_t out = approximation.rows, in = approximation.cols;
  std::vector<double> d(w.size()), dx(w.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = w[i] - static_cast<double>(approximation.data[i]);
  const std::vector<double> full = x.full();
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(out), static_cast<int>(in),
              static_cast<int>(in), 1.0, d.data(), static_cast<int>(in), full.data(), static_cast<int>(in),
              0.0, dx.data(), static_cast<int>(in));
  double e = 0;
  for (size_t i = 0; i < d.size(); ++i) e += d[i] * dx[i];
  return e;
}

}  // namespace sharelens
