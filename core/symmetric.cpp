#include "core/symmetric.hpp"

#include <utility>

namespace sharelens {
namespace {

size_t packedIndex(int64_t n, int64_t i, int64_t j) {  // i <= j
  return static_cast<size_t>(i * n - i * (i - 1) / 2 + (j - i));
}

}  // namespace

void PackedSymmetric::addFull(const double* full, int64_t rows) {
  size_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double* row = full + i * n;
    for (int64_t j = i; j < n; ++j) upper[k++] += row[j];
  }
  samples += rows;
}

std::vector<double> PackedSymmetric::full() const {
  std::vector<double> out(static_cast<size_t>(n * n));
  size_t k = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j, ++k)
      out[static_cast<size_t>(i * n + j)] = out[static_cast<size_t>(j * n + i)] = upper[k];
  return out;
}

double PackedSymmetric::at(int64_t i, int64_t j) const {
  if (i > j) std::swap(i, j);
  return upper[packedIndex(n, i, j)];
}

double PackedSymmetric::trace() const {
  double t = 0;
  for (int64_t i = 0; i < n; ++i) t += upper[packedIndex(n, i, i)];
  return t;
}

}  // namespace sharelens
