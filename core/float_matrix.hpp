// A dense row-major float matrix: the currency between checkpoints and the analysis engine.
#pragma once

#include <cstdint>
#include <vector>

namespace sharelens {

struct FloatMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> data;  // rows * cols, row-major

  FloatMatrix() = default;
  FloatMatrix(int64_t r, int64_t c) : rows(r), cols(c), data(static_cast<size_t>(r * c), 0.0f) {}

  float& operator()(int64_t r, int64_t c) { return data[static_cast<size_t>(r * cols + c)]; }
  float operator()(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
  float* row(int64_t r) { return data.data() + r * cols; }
  const float* row(int64_t r) const { return data.data() + r * cols; }
  int64_t size() const { return rows * cols; }
};

}  // namespace sharelens
