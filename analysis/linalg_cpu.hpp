// CPU linear algebra for the Gram route (LAPACK/OpenBLAS, double precision).
//
// The singular values of A (m x n) are the square roots of the eigenvalues of its Gram matrix on the
// smaller side (A A^T when m <= n, else A^T A). Accumulated in double, the Gram's eigenvalues are accurate
// to about n * eps * sigma_1^2 absolutely, so sigma / sigma_1 > 1e-3 comes out to ~1e-10 relative -- far
// inside what effective rank and spectra need -- at a fraction of an SVD's cost.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/float_matrix.hpp"

namespace sharelens {

// A symmetric n x n matrix; only the upper triangle (row-major) is meaningful.
struct SymmetricMatrix {
  int64_t n = 0;
  std::vector<double> a;  // n * n, row-major
  double trace() const;
};

// Fills the block [row0, row0 + rows) x [col0, col0 + cols) of an m x n matrix, as doubles, into out
// (rows x cols, row-major).
using BlockSource = std::function<void(int64_t row0, int64_t rows, int64_t col0, int64_t cols, double* out)>;

// Gram of the smaller side of an m x n matrix read through `source`, accumulated in double over blocks
// along the long side with dsyrk (so no m x n double copy is ever held).
SymmetricMatrix gramOfSmallerSide(int64_t m, int64_t n, const BlockSource& source);
SymmetricMatrix gramOfSmallerSide(const FloatMatrix& a);
// Gram of (a - b), the difference formed exactly in double.
SymmetricMatrix gramOfDifference(const FloatMatrix& a, const FloatMatrix& b);
// S S^T for a row-stacked S (all block cross-products at once).
SymmetricMatrix rowGram(const FloatMatrix& stacked);

// Eigenvalues of g, descending, negatives (rounding) clamped to 0. Consumes g.
std::vector<double> eigenvaluesDescending(SymmetricMatrix&& g);

// Eigen-decomposition with vectors: values descending, vectors as columns (n x n, row-major) in the same
// order. Consumes g.
void eigenDecomposition(SymmetricMatrix&& g, std::vector<double>& values, std::vector<double>& vectors);

}  // namespace sharelens
