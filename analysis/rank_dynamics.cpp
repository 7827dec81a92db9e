#include "analysis/rank_dynamics.hpp"

#include <charconv>

#include "analysis/spectra.hpp"
#include "analysis/weights.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"

namespace sharelens {
namespace {

struct ParsedName {
  int64_t layer = -1;
  std::optional<Proj> proj;
  int64_t head = -1;
};

std::optional<int64_t> parseIndex(std::string_view s) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "layers.L.P" or "layers.L.P.head.H"; "embedding" and "output_head" are handled by the caller.
std::optional<ParsedName> parseLayerName(std::string_view name) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if ((parts.size() != 3 && parts.size() != 5) || parts[0] != "layers") return std::nullopt;
  ParsedName out;
  const auto layer = parseIndex(parts[1]);
  out.proj = parseProj(parts[2]);
  if (!layer || !out.proj) return std::nullopt;
  out.layer = *layer;
  if (parts.size() == 5) {
    const auto head = parseIndex(parts[4]);
    if (parts[3] != "head" || !head) return std::nullopt;
    out.head = *head;
  }
  return out;
}

}  // namespace

FloatMatrix matrixByName(const Checkpoint& checkpoint, const ModelView& view, std::string_view name,
                         const TaskContext& ctx) {
  auto missing = [&](const std::string& what) {
    return Error({.what = "no matrix " + std::string(name) + " in this model",
                  .where = checkpoint.path().string(),
                  .expected = "embedding, output_head, layers.L.P or layers.L.P.head.H",
                  .found = what,
                  .hint = "the Spectrum view lists the model's matrices by these names"});
  };
  if (name == "embedding") {
    if (!view.embedding) throw missing("no token embedding");
    return materializeFinite(checkpoint, *view.embedding);
  }
  if (name == "output_head") {
    if (!view.outputHead || view.shape.tiedEmbeddings)
      throw missing("the output head is tied to the embedding");
    return materializeFinite(checkpoint, *view.outputHead);
  }
  const auto parsed = parseLayerName(name);
  if (!parsed) throw missing("a name of another form");
  if (parsed->layer >= static_cast<int64_t>(view.layers.size()))
    throw missing(std::to_string(view.layers.size()) + " layers");
  const Proj projs[] = {*parsed->proj};
  LayerWeights w = loadLayer(checkpoint, view, parsed->layer, ctx, projs);
  if (!w.proj[static_cast<int>(*parsed->proj)]) throw missing("no such projection in that layer");
  if (parsed->head < 0) return std::move(*w.proj[static_cast<int>(*parsed->proj)]);
  if (!isAttentionProj(*parsed->proj) || !view.hasHeads() || parsed->head >= view.headCount(*parsed->proj))
    throw missing("no such head");
  return headSlice(view, w.at(*parsed->proj), *parsed->proj, parsed->head);
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
    const auto checkpoint = Checkpoint::open(checkpoints[c].dir);
    const ModelView view = openModelView(*checkpoint);
    for (RankTrajectory& t : out.trajectories) {
      const Spectrum s =
          computeSpectrum(matrixByName(*checkpoint, view, t.matrix, ctx), backend, threshold, ctx);
      t.points.push_back({checkpoints[c].step, s.effectiveRank, s.stableRank(), s.spectralNorm()});
    }
    ctx.report(static_cast<double>(c + 1) / static_cast<double>(checkpoints.size()),
               "step " + std::to_string(checkpoints[c].step));
  }
  return out;
}

}  // namespace sharelens
