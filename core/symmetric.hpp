// A symmetric matrix kept as its packed upper triangle in double: what calibration accumulates for every
// projection input (X^T X over the calibration tokens, d x d), at half the memory of the full matrix -- 16
// layers of a 2048-wide model hold their two autocorrelations in 0.5 GiB instead of 1 GiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sharelens {

struct PackedSymmetric {
  int64_t n = 0;
  std::vector<double> upper;  // row-major upper triangle: row i holds columns i..n-1
  int64_t samples = 0;        // rows of data accumulated (tokens)

  PackedSymmetric() = default;
  explicit PackedSymmetric(int64_t size) : n(size), upper(static_cast<size_t>(size * (size + 1) / 2), 0.0) {}

  // Adds the upper triangle of a full n x n row-major matrix (a Gram of `rows` new samples).
  void addFull(const double* full, int64_t rows);
  std::vector<double> full() const;  // n x n, row-major, both triangles
  double at(int64_t i, int64_t j) const;
  double trace() const;
};

}  // namespace sharelens
