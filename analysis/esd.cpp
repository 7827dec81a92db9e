#include "analysis/esd.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace sharelens {

PowerLawFit fitPowerLaw(std::vector<double> x) {
  std::erase_if(x, [](double v) { return !(v > 0.0) || !std::isfinite(v); });
  std::sort(x.begin(), x.end());
  PowerLawFit best{NAN, NAN, INFINITY, 0};
  const size_t n = x.size();
  if (n < kMinTail) return best;
  // Suffix sums of ln x, so each candidate's MLE is O(1); its KS distance is O(tail).
  std::vector<double> logSuffix(n + 1, 0.0);
  for (size_t i = n; i-- > 0;) logSuffix[i] = logSuffix[i + 1] + std::log(x[i]);
  for (size_t i = 0; i + kMinTail <= n; ++i) {
    if (i > 0 && x[i] == x[i - 1]) continue;  // the same x_min as before
    const double xmin = x[i], k = static_cast<double>(n - i);
    const double sumLog = logSuffix[i] - k * std::log(xmin);
    if (!(sumLog > 0)) continue;
    const double alpha = 1.0 + k / sumLog;
    double d = 0;
    for (size_t j = i; j < n; ++j) {  // S jumps from (j - i) / k to (j - i + 1) / k at x_j
      const double model = 1.0 - std::pow(x[j] / xmin, 1.0 - alpha);
      d = std::max({d, std::abs(static_cast<double>(j - i + 1) / k - model),
                    std::abs(static_cast<double>(j - i) / k - model)});
    }
    if (d < best.ks) best = {alpha, xmin, d, static_cast<int64_t>(n - i)};
  }
  return best;
}

std::vector<MatrixEsd> computeEsd(const Checkpoint& ckpt, const ModelView& view, LinalgBackend& backend,
                                  const TaskContext& ctx) {
  std::vector<MatrixEsd> out;
  for (const LayerView& layer : view.layers) {
    ctx.throwIfCancelled();
    const LayerWeights w = loadLayer(ckpt, view, layer.index, ctx);
    std::vector<const FloatMatrix*> matrices;
    std::vector<MatrixId> ids;
    for (Proj p : kAllProjs)
      if (w.proj[static_cast<int>(p)]) {
        matrices.push_back(&*w.proj[static_cast<int>(p)]);
        ids.push_back(
            {"layers." + std::to_string(layer.index) + "." + std::string(projName(p)), layer.index, p, -1});
      }
    const auto grams = backend.gramSpectra(matrices, ctx);
    for (size_t i = 0; i < grams.size(); ++i) {
      MatrixEsd e{ids[i], matrices[i]->rows, matrices[i]->cols, grams[i].eigenvalues, {}};
      e.fit = fitPowerLaw(e.eigenvalues);
      out.push_back(std::move(e));
    }
    ctx.report(static_cast<double>(layer.index + 1) / static_cast<double>(view.layers.size()),
               "ESD: layer " + std::to_string(layer.index));
  }
  return out;
}

Json toJson(const std::vector<MatrixEsd>& esd) {
  Json out = Json::array();
  auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
  for (const MatrixEsd& e : esd)
    out.push_back({{"name", e.id.name},
                   {"layer", e.id.layer},
                   {"proj", e.id.proj ? Json(projName(*e.id.proj)) : Json(nullptr)},
                   {"rows", e.rows},
                   {"cols", e.cols},
                   {"alpha", number(e.fit.alpha)},
                   {"xmin", number(e.fit.xmin)},
                   {"ks_distance", number(e.fit.ks)},
                   {"tail", e.fit.tail},
                   {"lambda_max", e.lambdaMax()},
                   {"eigenvalues", e.eigenvalues}});
  return out;
}

std::vector<MatrixEsd> esdFromJson(const Json& j) {
  std::vector<MatrixEsd> out;
  auto number = [](const Json& v) { return v.is_number() ? v.get<double>() : NAN; };
  for (const Json& e : j) {
    MatrixEsd m;
    m.id.name = e.at("name").get<std::string>();
    m.id.layer = e.at("layer").get<int64_t>();
    if (!e.at("proj").is_null()) m.id.proj = parseProj(e["proj"].get<std::string>());
    m.rows = e.at("rows").get<int64_t>();
    m.cols = e.at("cols").get<int64_t>();
    m.fit = {number(e.at("alpha")), number(e.at("xmin")), number(e.at("ks_distance")),
             e.at("tail").get<int64_t>()};
    m.eigenvalues = e.at("eigenvalues").get<std::vector<double>>();
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace sharelens
