// Rank dynamics over a run's checkpoints, against closed forms (DESIGN.md section 4): a matrix with r equal
// non-zero singular values sigma has effective rank ceil(t r) at threshold t (the smallest k with k / r >=
// t), stable rank ||A||_F^2 / ||A||_2^2 = r and spectral norm sigma; the ESD alpha and the weights'
// percentiles (issue 41 item 8) against their definitions on an untouched matrix and a closed form.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <fstream>

#include "analysis/esd.hpp"
#include "analysis/rank_dynamics.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "core/safetensors.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// rows x cols with sigma at (i, 7 i mod cols) for i < r: distinct rows and columns (7 is prime to cols = 64),
// so the singular values are exactly r copies of sigma.
std::vector<float> equalSpectrum(int64_t rows, int64_t cols, int64_t r, float sigma) {
  std::vector<float> v(static_cast<size_t>(rows * cols), 0.0f);
  for (int64_t i = 0; i < r; ++i) v[static_cast<size_t>(i * cols + (7 * i) % cols)] = sigma;
  return v;
}

// A checkpoint of the fixture model whose layer-1 query projection is `q`; complete unless said otherwise.
void writeStep(const fs::path& runDir, const fs::path& fixture, int64_t step, std::span<const float> q,
               bool complete = true) {
  const fs::path dir = checkpointDirectory(runDir, step);
  fs::create_directories(dir);
  const auto source = SafetensorsFile::open(fixture / "model.safetensors");
  std::vector<EncodedTensor> tensors;
  for (const TensorInfo& t : source->tensors()) {
    const auto bytes = source->bytes(t);
    tensors.push_back({t.name, t.dtype, t.shape, {bytes.begin(), bytes.end()}});
    if (t.name == "model.layers.1.self_attn.q_proj.weight")
      tensors.back() = EncodedTensor::fromFloats(t.name, DType::F32, t.shape, q);
  }
  writeSafetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
  fs::copy_file(fixture / "config.json", dir / "config.json");
  if (complete) std::ofstream(dir / kCompleteMarker) << "";
}

TEST(RankDynamics, RanksNormAlphaAndWeightPercentilesAgainstStepFollowTheirDefinitions) {
  const fs::path root = testing::makeTempDir("dynamics");
  const auto spec = testing::defaultSpec(Family::Llama);  // q_proj: 4 heads x 16 = 64 rows, 64 columns
  const fs::path fixture = testing::writeHfFixture(root / "fixture", spec);
  const int64_t rows = spec.heads * spec.headDim, cols = spec.hidden;
  const fs::path run = root / "run";
  // step -> (r, sigma); step 300 is torn (no COMPLETE marker) and must be skipped.
  const std::vector<std::tuple<int64_t, int64_t, float>> steps = {
      {100, 3, 0.5f}, {200, 10, 1.0f}, {400, 24, 2.0f}};
  for (const auto& [step, r, sigma] : steps)
    writeStep(run, fixture, step, equalSpectrum(rows, cols, r, sigma));
  writeStep(run, fixture, 300, equalSpectrum(rows, cols, 40, 1.0f), /*complete=*/false);

  auto backend = makeCpuBackend();
  const std::vector<std::string> names = {"layers.1.q", "layers.1.q.head.0", "layers.0.q"};
  const RankDynamics d = computeRankDynamics(run, names, *backend, 0.85, {});
  ASSERT_EQ(d.trajectories.size(), 3u);
  const RankTrajectory& whole = d.trajectories[0];
  EXPECT_EQ(whole.matrix, "layers.1.q");
  ASSERT_EQ(whole.points.size(), 3u) << "the checkpoint without COMPLETE is not read";
  // ceil(0.85 r): r = 3 -> 3, r = 10 -> 9, r = 24 -> 21 (none on a boundary).
  const int64_t expectedRank[] = {3, 9, 21};
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& [step, r, sigma] = steps[i];
    EXPECT_EQ(whole.points[i].step, step);
    EXPECT_EQ(whole.points[i].effectiveRank, expectedRank[i]) << "step " << step;
    EXPECT_NEAR(whole.points[i].stableRank, static_cast<double>(r), 1e-4) << "step " << step;
    EXPECT_NEAR(whole.points[i].spectralNorm, sigma, 1e-5) << "step " << step;
  }
  // Head 0 is rows 0..15: min(r, 16) non-zero rows -> ranks 3, 10, 16; effective ranks 3, 9, ceil(13.6) = 14.
  const RankTrajectory& head = d.trajectories[1];
  ASSERT_EQ(head.points.size(), 3u);
  EXPECT_EQ(head.points[0].effectiveRank, 3);
  EXPECT_EQ(head.points[1].effectiveRank, 9);
  EXPECT_EQ(head.points[2].effectiveRank, 14);
  EXPECT_NEAR(head.points[2].stableRank, 16.0, 1e-4);
  // An untouched matrix, against Eigen's SVD of the raw tensor (not our Gram route), at every step.
  const auto raw = SafetensorsFile::open(fixture / "model.safetensors");
  const std::vector<float> q0 = raw->readFloat(raw->at("model.layers.0.self_attn.q_proj.weight"));
  const Eigen::MatrixXd a =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(q0.data(), rows,
                                                                                              cols)
          .cast<double>();
  const Eigen::VectorXd sigma = Eigen::JacobiSVD<Eigen::MatrixXd>(a).singularValues();
  const double total = sigma.squaredNorm();
  int64_t rank = 0;
  for (double energy = 0; energy < 0.85 * total;) energy += sigma[rank] * sigma[rank], ++rank;
  // Its ESD alpha: the power law fitted to the eigenvalues sigma_i^2 of Eigen's SVD (the fit itself is
  // checked against the peer in test_esd); its weights' percentiles by numpy's default definition, the value
  // at rank (n - 1) p / 100 of the sorted weights, interpolated.
  std::vector<double> eigenvalues;
  for (Eigen::Index i = 0; i < sigma.size(); ++i) eigenvalues.push_back(sigma[i] * sigma[i]);
  const double alpha = fitPowerLaw(eigenvalues).alpha;
  std::vector<float> sorted = q0;
  std::sort(sorted.begin(), sorted.end());
  for (const RankPoint& p : d.trajectories[2].points) {
    EXPECT_EQ(p.effectiveRank, rank) << "step " << p.step;
    EXPECT_NEAR(p.stableRank, total / (sigma[0] * sigma[0]), 1e-5) << "step " << p.step;
    EXPECT_NEAR(p.spectralNorm, sigma[0], 1e-5) << "step " << p.step;
    EXPECT_NEAR(p.esdAlpha, alpha, 1e-6 * alpha) << "step " << p.step;
    for (size_t i = 0; i < kWeightPercentiles.size(); ++i) {
      const double h = static_cast<double>(sorted.size() - 1) * kWeightPercentiles[i] / 100;
      const auto lo = static_cast<size_t>(h);
      const double expected =
          lo + 1 < sorted.size() ? sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]) : sorted[lo];
      EXPECT_NEAR(p.weightPercentiles[i], expected, 1e-7) << "percentile " << kWeightPercentiles[i];
    }
  }
  EXPECT_LT(d.trajectories[2].points[0].weightPercentiles[0], 0) << "random weights of both signs";
  // Step 400's layers.1.q: 24 entries of 2 among 4096 zeros (0.6%, under the top 6.68%): every percentile
  // but the maximum is 0, which is 2; 24 equal eigenvalues leave no tail to fit (NaN would need fewer than
  // 10; equal values give alpha = 1 + n / 0 = infinity).
  const RankPoint& last = whole.points[2];
  for (size_t i = 0; i + 1 < kWeightPercentiles.size(); ++i) EXPECT_EQ(last.weightPercentiles[i], 0.0);
  EXPECT_NEAR(last.weightPercentiles[8], 2.0, 1e-6);
  fs::remove_all(root);
}

TEST(RankDynamics, AnUnknownMatrixOrAnEmptyRunIsANamedError) {
  const fs::path root = testing::makeTempDir("dynamics-errors");
  const auto spec = testing::defaultSpec(Family::Llama);
  const fs::path fixture = testing::writeHfFixture(root / "fixture", spec);
  auto backend = makeCpuBackend();
  const std::vector<std::string> none = {"layers.0.q"};
  std::string e = testing::errorOf([&] { computeRankDynamics(root / "run", none, *backend, 0.95, {}); });
  EXPECT_NE(e.find("no complete checkpoint"), std::string::npos) << e;
  writeStep(root / "run", fixture, 10, equalSpectrum(64, 64, 4, 1.0f));
  for (const std::string bad :
       {"layers.9.q", "layers.0.q.head.4", "layers.0.gate.head.0", "layers.x.q", "lm"}) {
    const std::vector<std::string> names = {bad};
    e = testing::errorOf([&] { computeRankDynamics(root / "run", names, *backend, 0.95, {}); });
    EXPECT_NE(e.find("no matrix " + bad), std::string::npos) << e;
    EXPECT_NE(e.find("step-0000010"), std::string::npos) << "names the checkpoint: " << e;
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace sharelens
