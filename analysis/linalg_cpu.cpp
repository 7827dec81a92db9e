#include "analysis/linalg_cpu.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"

namespace sharelens {
namespace {

constexpr int64_t kBlockSpan = 256;  // long-side slice per dsyrk update: at most 256 x 8192 doubles (16 MiB)

void checkLapack(int info, const char* routine, int64_t n) {
  if (info != 0)
    throw Error(
        {.what = std::string(routine) + " did not converge",
         .where = "eigenvalues of a " + std::to_string(n) + " x " + std::to_string(n) + " Gram matrix",
         .found = "info = " + std::to_string(info),
         .hint = "the matrix probably holds NaN or Inf values; check the checkpoint"});
}

}  // namespace

double SymmetricMatrix::trace() const {
  double t = 0.0;
  for (int64_t i = 0; i < n; ++i) t += a[static_cast<size_t>(i * n + i)];
  return t;
}

SymmetricMatrix gramOfSmallerSide(int64_t m, int64_t n, const BlockSource& source) {
  SymmetricMatrix g;
  const bool rowSide = m <= n;  // A A^T (m x m) or A^T A (n x n)
  g.n = rowSide ? m : n;
  g.a.assign(static_cast<size_t>(g.n * g.n), 0.0);
  if (m == 0 || n == 0) return g;
  const int64_t longSide = rowSide ? n : m;
  const int64_t step = std::min(kBlockSpan, longSide);
  std::vector<double> block(static_cast<size_t>(step * g.n));
  const int dim = static_cast<int>(g.n);
  for (int64_t k0 = 0; k0 < longSide; k0 += step) {
    const int64_t count = std::min(step, longSide - k0);
    if (rowSide) {  // block = A[:, k0:k0+count] (m x count); G += block block^T
      source(0, m, k0, count, block.data());
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, dim, static_cast<int>(count), 1.0, block.data(),
                  static_cast<int>(count), 1.0, g.a.data(), dim);
    } else {  // block = A[k0:k0+count, :] (count x n); G += block^T block
      source(k0, count, 0, n, block.data());
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, dim, static_cast<int>(count), 1.0, block.data(), dim,
                  1.0, g.a.data(), dim);
    }
  }
  return g;
}

SymmetricMatrix gramOfSmallerSide(const FloatMatrix& a) {
  return gramOfSmallerSide(a.rows, a.cols, [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc, double* out) {
    for (int64_t r = 0; r < nr; ++r) std::copy(a.row(r0 + r) + c0, a.row(r0 + r) + c0 + nc, out + r * nc);
  });
}

SymmetricMatrix gramOfDifference(const FloatMatrix& a, const FloatMatrix& b) {
  if (a.rows != b.rows || a.cols != b.cols) throw std::invalid_argument("gramOfDifference: shapes differ");
  return gramOfSmallerSide(a.rows, a.cols, [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc, double* out) {
    for (int64_t r = 0; r < nr; ++r) {
      const float* pa = a.row(r0 + r) + c0;
      const float* pb = b.row(r0 + r) + c0;
      double* o = out + r * nc;
      for (int64_t c = 0; c < nc; ++c)
        o[c] = static_cast<double>(pa[c]) - static_cast<double>(pb[c]);  // exact
    }
  });
}

SymmetricMatrix rowGram(const FloatMatrix& s) {
  SymmetricMatrix g;
  g.n = s.rows;
  g.a.assign(static_cast<size_t>(g.n * g.n), 0.0);
  std::vector<double> all(s.data.begin(), s.data.end());
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, static_cast<int>(s.rows), static_cast<int>(s.cols),
              1.0, all.data(), static_cast<int>(s.cols), 0.0, g.a.data(), static_cast<int>(s.rows));
  return g;
}

// Row-major upper triangle == column-major lower triangle, so LAPACK reads it in place.
std::vector<double> eigenvaluesDescending(SymmetricMatrix&& g) {
  std::vector<double> w(static_cast<size_t>(g.n));
  if (g.n == 0) return w;
  const int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'L', static_cast<int>(g.n), g.a.data(),
                                  static_cast<int>(g.n), w.data());
  checkLapack(info, "dsyevd", g.n);
  std::reverse(w.begin(), w.end());
  for (double& x : w) x = std::max(x, 0.0);
  return w;
}

void eigenDecomposition(SymmetricMatrix&& g, std::vector<double>& values, std::vector<double>& vectors) {
  const int64_t n = g.n;
  values.assign(static_cast<size_t>(n), 0.0);
  if (n == 0) {
    vectors.clear();
    return;
  }
  const int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', static_cast<int>(n), g.a.data(),
                                  static_cast<int>(n), values.data());
  checkLapack(info, "dsyevd", n);
  // g.a now holds eigenvectors as columns in column-major order (ascending); emit row-major, descending.
  vectors.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t src = n - 1 - k;
    for (int64_t i = 0; i < n; ++i)
      vectors[static_cast<size_t>(i * n + k)] = g.a[static_cast<size_t>(src * n + i)];
  }
  std::reverse(values.begin(), values.end());
  for (double& x : values) x = std::max(x, 0.0);
}

}  // namespace sharelens
