// Training dynamics of chosen matrices: each one's spectrum at every complete checkpoint of a run, read off
// as effective rank, stable rank, spectral norm and the ESD's power-law exponent alpha against the training
// step (DESIGN.md section 4 defines them), and the distribution of its weights at each step. Matrices are
// named as the spectra name them: "embedding", "output_head", "layers.3.q", "layers.3.q.head.5".
#pragma once

#include <array>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/backend.hpp"
#include "core/model_view.hpp"

namespace sharelens {

// The percentiles of a matrix's weights kept at each step: TensorBoard's distribution dashboard's, the normal
// distribution's mean and 0.5, 1 and 1.5 standard deviations either side, and the extremes.
inline constexpr std::array<double, 9> kWeightPercentiles = {0,     6.68,  15.87, 30.85, 50,
                                                             69.15, 84.13, 93.32, 100};

struct RankPoint {
  int64_t step = 0;
  int64_t effectiveRank = 0;
  double stableRank = 0.0;
  double spectralNorm = 0.0;
  // alpha of the power law fitted to the ESD, the eigenvalues sigma_i^2 (analysis/esd.hpp: the same fit as
  // the ESD view's; normalising the eigenvalues does not change it). NaN with fewer than kMinTail of them.
  double esdAlpha = 0.0;
  std::array<double, 9> weightPercentiles{};  // at kWeightPercentiles, numpy's default (linear) definition
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
