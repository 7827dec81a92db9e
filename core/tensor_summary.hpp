// One tensor described the way Netron's details pane does, but over every element: dtype, shape, bytes,
// min / max / mean / standard deviation, how many values are zero, NaN or infinite, a histogram and the first
// values. The Model view's details pane and `sharelens inspect PATH --tensor NAME` show it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/task.hpp"

namespace sharelens {

struct TensorSummary {
  static constexpr int kBins = 40;        // what the Model view and `export --view tensor-histogram` draw
  static constexpr size_t kPreview = 16;  // values in `preview`
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t numel = 0, bytes = 0;
  // Over the finite values only (NaN and +-inf are counted apart); mean and std are 0 when none is finite.
  double min = 0, max = 0, mean = 0, std = 0;  // std: population (divides by the count)
  uint64_t finite = 0, nan = 0, infinite = 0, zeros = 0;
  // Equal-width bins over [min, max] of the finite values (the last bin closed); empty when none is finite.
  std::vector<uint64_t> histogram;
  std::vector<float> preview;  // the first values in storage (row-major) order
};

// Reads the tensor in chunks (never all of it at once) and makes two passes: the mean, then the squared
// deviations from it (so the std does not lose digits to cancellation) and the histogram.
TensorSummary summarizeTensor(const Checkpoint& checkpoint, std::string_view name,
                              int bins = TensorSummary::kBins, size_t previewCount = TensorSummary::kPreview,
                              const TaskContext& ctx = {});

std::string formatTensorSummary(const TensorSummary& s);  // the text `inspect --tensor` prints

}  // namespace sharelens
