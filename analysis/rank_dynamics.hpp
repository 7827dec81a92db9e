// Training dynamics of chosen matrices: each one's spectrum at every complete checkpoint of a run, read off
// as effective rank, stable rank and spectral norm against the training step (DESIGN.md section 4 defines
// them). Matrices are named as the spectra name them: "embedding", "output_head", "layers.3.q",
// "layers.3.q.head.5".
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/backend.hpp"
#include "core/model_view.hpp"

namespace sharelens {

struct RankPoint {
  int64_t step = 0;
  int64_t effectiveRank = 0;
  double stableRank = 0.0;
  double spectralNorm = 0.0;
};

struct RankTrajectory {
  std::string matrix;
  std::vector<RankPoint> points;  // by step, ascending
};

struct RankDynamics {
  double threshold = 0.95;
  std::vector<RankTrajectory> trajectories;  // in the order asked
};

// One matrix of a model by its spectra name. Throws a named Error (naming the checkpoint and the matrix) when
// the name is malformed or the model has no such matrix.
FloatMatrix matrixByName(const Checkpoint& checkpoint, const ModelView& view, std::string_view name,
                         const TaskContext& ctx);

// The chosen matrices at every complete checkpoint of runDir, oldest first. Throws a named Error when the
// run has no complete checkpoint or a checkpoint lacks a matrix.
RankDynamics computeRankDynamics(const std::filesystem::path& runDir, std::span<const std::string> matrices,
                                 LinalgBackend& backend, double threshold, const TaskContext& ctx);

}  // namespace sharelens
