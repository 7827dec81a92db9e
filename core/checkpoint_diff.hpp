// How two checkpoints differ, tensor by tensor: two steps of one run, a model and its fine-tune or its
// compressed copy. Tensors are matched by name; for each pair of one shape, the relative Frobenius difference
// ||A - B||_F / ||A||_F, the cosine similarity <A, B> / (||A|| ||B||) and the largest |A - B|, in float64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/task.hpp"

namespace sharelens {

struct TensorDifference {
  std::string name;
  std::vector<int64_t> shape;
  double relative = 0;  // ||A - B||_F / ||A||_F (infinity when A is zero and B is not; 0 when both are)
  double cosine = 0;    // <A, B> / (||A|| ||B||); NaN when either is zero
  double maxAbs = 0;    // max |A - B|
  double normA = 0, normB = 0;
};

struct CheckpointDifference {
  std::vector<TensorDifference> tensors;  // by relative difference, largest first
  std::vector<std::string> onlyInA, onlyInB;
  std::vector<std::string> shapeMismatch;  // "name: [a] vs [b]"
};

// Checks `task`'s stop between tensors (Cancelled) and reports the share of A's tensors done.
CheckpointDifference diffCheckpoints(const Checkpoint& a, const Checkpoint& b, const TaskContext& task = {});

}  // namespace sharelens
