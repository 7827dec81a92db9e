#include "analysis/activations.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "analysis/matrix_pca.hpp"
#include "core/error.hpp"

namespace sharelens {

ActivationResults analyseActivations(const ActivationData& data, LinalgBackend& backend,
                                     const AnalysisParams& params, const TaskContext& ctx) {
  ActivationResults r;
  static_cast<ActivationSummary&>(r) = data;  // what the pass measured, as it measured it
  r.threshold = params.threshold;
  // A non-finite contribution would make its row of the map full rank, silently (its energy is not a number).
  for (size_t l = 0; l < data.residualDeltas.size(); ++l) {
    const std::vector<float>& dh = data.residualDeltas[l].data;
    const auto bad = std::find_if(dh.begin(), dh.end(), [](float v) { return !std::isfinite(v); });
    if (bad != dh.end())
      throw Error(
          {.what = "the model's residual stream holds a non-finite value",
           .where = "layer " + std::to_string(l) + "'s contribution dh_l = h_l - h_(l-1), token " +
                    std::to_string((bad - dh.begin()) / std::max<int64_t>(data.residualDeltas[l].cols, 1)),
           .expected = "finite values",
           .found = std::isnan(*bad) ? "NaN" : "Inf",
           .hint = "an activation overflowed float32 in that layer; the weights themselves are checked "
                   "when they are read"});
  }
  const auto start = std::chrono::steady_clock::now();
  r.layerOutputs = pairwiseDifferenceMap(data.residualDeltas, backend, params.threshold, ctx);
  r.rankMapSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.logitLens = params.logitLens;
  r.klGroupCount = klGroupCount(params.klGroups, data.layers);
  r.groups = r.klGroupCount > 0 ? groupsFromKlDrift(data.klDrift, data.layers, r.klGroupCount)
                                : groupsAtKlPeaks(data.klDrift, data.layers);
  return r;
}

}  // namespace sharelens
