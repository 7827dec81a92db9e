#include "analysis/rank_dynamics.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/esd.hpp"
#include "analysis/spectra.hpp"
#include "analysis/weights.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "core/text.hpp"

namespace sharelens {
namespace {

std::optional<int64_t> parseIndex(std::string_view s) {
  const auto v = parseWholeInt(s);
  return v && *v >= 0 ? v : std::nullopt;
}

std::vector<std::string_view> splitOnDots(std::string_view name) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

std::string projectionList() {
  std::string out;
  for (Proj p : kAllProjs) out += (out.empty() ? "" : ", ") + std::string(projName(p));
  return out;
}

// The values at kWeightPercentiles: sorted, then at rank h = (n - 1) p / 100 interpolated between its two
// neighbours (numpy.percentile's default, "linear").
std::array<double, 9> weightPercentilesOf(std::vector<float> values) {
  std::array<double, 9> out{};
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  for (size_t i = 0; i < kWeightPercentiles.size(); ++i) {
    const double h = static_cast<double>(values.size() - 1) * kWeightPercentiles[i] / 100.0;
    const size_t lo = static_cast<size_t>(std::floor(h)), hi = std::min(lo + 1, values.size() - 1);
    out[i] = values[lo] + (h - static_cast<double>(lo)) * (static_cast<double>(values[hi]) - values[lo]);
  }
  return out;
}

}  // namespace

FloatMatrix matrixByName(const Checkpoint& checkpoint, const ModelView& view, std::string_view name,
                         const TaskContext& ctx) {
  auto missing = [&](const std::string& what) {
    return Error({.what = "no matrix " + std::string(name) + " in this model",
                  .where = checkpoint.path().string(),
                  .expected = "embedding, output_head, layers.L.P or layers.L.P.head.H with P one of " +
                              projectionList(),
                  .found = what,
                  .hint = "the Spectrum view lists the model's matrices by these names"});
  };
  if (name == "embedding") {
    if (!view.embedding) throw missing("no token embedding");
    return materializeFinite(checkpoint, *view.embedding);
  }
  if (name == "output_head") {
    if (!view.outputHead) throw missing("no output head tensor");
    if (view.shape.tiedEmbeddings)
      throw missing("an output head tied to the embedding (ask for 'embedding')");
    return materializeFinite(checkpoint, *view.outputHead);
  }
  const std::vector<std::string_view> parts = splitOnDots(name);
  if ((parts.size() != 3 && parts.size() != 5) || parts[0] != "layers")
    throw missing("a name of " + std::to_string(parts.size()) + " dot-separated parts");
  const auto layer = parseIndex(parts[1]);
  if (!layer) throw missing("'" + std::string(parts[1]) + "' where a layer number belongs");
  if (*layer >= static_cast<int64_t>(view.layers.size()))
    throw missing("layer " + std::to_string(*layer) + " of a model with " +
                  std::to_string(view.layers.size()) + " layers");
  const auto proj = parseProj(parts[2]);
  if (!proj) throw missing("'" + std::string(parts[2]) + "' where a projection belongs");
  const Proj projs[] = {*proj};
  LayerWeights w = loadLayer(checkpoint, view, *layer, ctx, projs);
  if (!w.proj[static_cast<int>(*proj)])
    throw missing("no " + std::string(parts[2]) + " projection in that layer");
  if (parts.size() == 3) return std::move(*w.proj[static_cast<int>(*proj)]);
  const auto head = parseIndex(parts[4]);
  if (parts[3] != "head" || !head)
    throw missing("'" + std::string(parts[3]) + "." + std::string(parts[4]) + "' where head.H belongs");
  if (!isAttentionProj(*proj))
    throw missing("heads of " + std::string(parts[2]) + ", which is not attention");
  if (!view.hasHeads()) throw missing("no head count (config.json is missing)");
  if (*head >= view.headCount(*proj))
    throw missing("head " + std::to_string(*head) + " of " + std::to_string(view.headCount(*proj)));
  return headSlice(view, w.at(*proj), *proj, *head);
}

RankDynamics computeRankDynamics(const std::filesystem::path& runDir, std::span<const std::string> matrices,
                                 LinalgBackend& backend, double threshold, const TaskContext& ctx) {
  const std::vector<CheckpointEntry> checkpoints = listCheckpoints(runDir);
  if (checkpoints.empty())
    throw Error({.what = "no complete checkpoint to follow through training",
                 .where = runDir.string(),
                 .expected = "checkpoints/step-NNNNNNN with a COMPLETE marker",
                 .found = "none",
                 .hint = "train with --checkpoint-every N and --keep-checkpoints log or all"});
  RankDynamics out;
  out.threshold = threshold;
  for (const std::string& name : matrices) out.trajectories.push_back({name, {}});
  for (size_t c = 0; c < checkpoints.size(); ++c) {
    ctx.throwIfCancelled();
    // A live run's retention may delete a checkpoint after it was listed: skip it rather than fail the rest.
    std::error_code ec;
    if (!std::filesystem::exists(checkpoints[c].dir / kCompleteMarker, ec)) continue;
    const auto checkpoint = Checkpoint::open(checkpoints[c].dir);
    const ModelView view = openModelView(*checkpoint);
    for (RankTrajectory& t : out.trajectories) {
      FloatMatrix m = matrixByName(*checkpoint, view, t.matrix, ctx);
      const std::array<double, 9> percentiles = weightPercentilesOf(m.data);
      const Spectrum s = computeSpectrum(std::move(m), backend, threshold, ctx);
      std::vector<double> eigenvalues;
      for (const double sigma : s.sigma) eigenvalues.push_back(sigma * sigma);
      t.points.push_back({checkpoints[c].step, s.effectiveRank, s.stableRank(), s.spectralNorm(),
                          fitPowerLaw(std::move(eigenvalues)).alpha, percentiles});
    }
    ctx.report(static_cast<double>(c + 1) / static_cast<double>(checkpoints.size()),
               "step " + std::to_string(checkpoints[c].step));
  }
  return out;
}

}  // namespace sharelens
