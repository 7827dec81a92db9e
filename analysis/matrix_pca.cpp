#include "analysis/matrix_pca.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/linalg_cpu.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/sharelens_names.hpp"
#include "core/text.hpp"
#include "core/topology.hpp"

namespace sharelens {
namespace {

double dot(const FloatMatrix& a, const FloatMatrix& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) s += static_cast<double>(a.data[i]) * b.data[i];
  return s;
}

}  // namespace

MatrixPcaGroup matrixPcaOfMatrices(Proj proj, const std::vector<int64_t>& layers,
                                   const std::vector<FloatMatrix>& w, bool keepAtoms) {
  const int64_t n = static_cast<int64_t>(w.size());
  SymmetricMatrix gram;
  gram.n = n;
  gram.a.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) gram.a[static_cast<size_t>(i * n + j)] = dot(w[i], w[j]);
  const double total = gram.trace();
  std::vector<double> lambda, v;  // V: n x n, column s = right singular vector s
  eigenDecomposition(std::move(gram), lambda, v);
  // An atom below the float32 resolution of the weights themselves (s_s <= eps_f32 ||X||_F: storing X in
  // float32 moves it by up to eps_f32 / 2 ||X||_F) is rounding noise -- layers that share one block make
  // such atoms -- and its direction, and the signs of its coefficients, change with the BLAS threads that
  // solved the Gram. It is reported as exactly 0: its singular value, its coefficients and its atom.
  const double noiseFloor = total * std::pow(static_cast<double>(std::numeric_limits<float>::epsilon()), 2);
  for (double& l : lambda)
    if (l <= noiseFloor) l = 0.0;
  // Fix each vector's sign (largest component positive) so results are deterministic.
  for (int64_t s = 0; s < n; ++s) {
    int64_t arg = 0;
    for (int64_t l = 1; l < n; ++l)
      if (std::abs(v[static_cast<size_t>(l * n + s)]) > std::abs(v[static_cast<size_t>(arg * n + s)]))
        arg = l;
    if (v[static_cast<size_t>(arg * n + s)] < 0)
      for (int64_t l = 0; l < n; ++l) v[static_cast<size_t>(l * n + s)] *= -1.0;
  }
  MatrixPcaGroup g;
  g.proj = proj;
  g.layers = layers;
  g.coefficients = FloatMatrix(n, n);
  g.layerError = FloatMatrix(n, n);
  double cumulative = 0.0;
  for (int64_t s = 0; s < n; ++s) {
    g.singularValues.push_back(std::sqrt(lambda[static_cast<size_t>(s)]));
    cumulative += lambda[static_cast<size_t>(s)];
    const double explained = total > 0 ? std::min(1.0, cumulative / total) : 0.0;
    g.explainedVariance.push_back(explained);
    g.reconstructionError.push_back(std::sqrt(std::max(0.0, 1.0 - explained)));
    for (int64_t l = 0; l < n; ++l)  // C = S V^T
      g.coefficients(s, l) = static_cast<float>(g.singularValues.back() * v[static_cast<size_t>(l * n + s)]);
  }
  // Per-layer error with S atoms: ||x_l - U_S U_S^T x_l|| / ||x_l|| = sqrt(sum_{s>S} C_sl^2) / ||x_l||.
  for (int64_t l = 0; l < n; ++l) {
    const double norm2 = dot(w[l], w[l]);
    double tail = norm2;
    for (int64_t s = 0; s < n; ++s) {
      tail -= static_cast<double>(g.coefficients(s, l)) * g.coefficients(s, l);
      g.layerError(s, l) = norm2 > 0 ? static_cast<float>(std::sqrt(std::max(0.0, tail) / norm2)) : 0.0f;
    }
  }
  if (keepAtoms) {  // D_s = X v_s / s_s
    for (int64_t s = 0; s < n; ++s) {
      FloatMatrix atom(w[0].rows, w[0].cols);
      const double sv = g.singularValues[static_cast<size_t>(s)];
      if (sv > 0)
        for (int64_t l = 0; l < n; ++l) {
          const float c = static_cast<float>(v[static_cast<size_t>(l * n + s)] / sv);
          for (size_t i = 0; i < atom.data.size(); ++i) atom.data[i] += c * w[l].data[i];
        }
      g.atoms.push_back(std::move(atom));
    }
  }
  return g;
}

std::vector<std::vector<int64_t>> groupsFromKlDrift(const std::vector<double>& drift, int64_t layers,
                                                    int64_t count) {
  if (count < 1 || count > layers)
    throw Error({.what = "group count out of range",
                 .where = "kl:" + std::to_string(count),
                 .expected = "1.." + std::to_string(layers) + " groups",
                 .found = std::to_string(count),
                 .hint = "at most one group per layer"});
  std::vector<size_t> order(
      std::min<size_t>(drift.size(), static_cast<size_t>(std::max<int64_t>(0, layers - 1))));
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return drift[a] > drift[b]; });
  std::vector<bool> cutAfter(static_cast<size_t>(layers), false);
  for (size_t i = 0; i < order.size() && static_cast<int64_t>(i) + 1 < count; ++i) cutAfter[order[i]] = true;
  std::vector<std::vector<int64_t>> groups(1);
  for (int64_t l = 0; l < layers; ++l) {
    groups.back().push_back(l);
    if (cutAfter[static_cast<size_t>(l)] && l + 1 < layers) groups.emplace_back();
  }
  return groups;
}

std::optional<int64_t> parseKlGrouping(const std::string& spec) {
  if (spec == "kl") return kKlDefaultGroups;
  if (spec == "kl-peaks") return 0;
  if (spec.rfind("kl:", 0) != 0) return std::nullopt;
  const auto g = parseWholeInt(std::string_view(spec).substr(3));
  if (!g || *g < 1)
    throw Error({.what = "not a group count",
                 .where = "layer groups '" + spec + "'",
                 .expected = "kl:G with G >= 1",
                 .found = "'" + spec.substr(3) + "'"});
  return g;
}

int64_t klGroupCount(int64_t g, int64_t layers) {
  return g == kKlDefaultGroups ? std::min<int64_t>(3, std::max<int64_t>(layers, 1)) : g;
}

std::vector<std::vector<int64_t>> groupsAtKlPeaks(const std::vector<double>& drift, int64_t layers) {
  std::vector<std::vector<int64_t>> groups(1);
  for (int64_t l = 0; l < layers; ++l) {
    groups.back().push_back(l);
    const size_t i = static_cast<size_t>(l);
    if (i >= drift.size() || l + 1 >= layers) continue;
    const bool aboveLeft = i == 0 || drift[i] > drift[i - 1];
    const bool aboveRight = i + 1 >= drift.size() || drift[i] >= drift[i + 1];
    if (aboveLeft && aboveRight) groups.emplace_back();  // a local maximum: the next layer starts a group
  }
  return groups;
}

std::vector<std::vector<int64_t>> parseLayerGroups(const std::string& text, int64_t layers) {
  auto bad = [&](const std::string& what, const std::string& found) {
    throw Error({.what = what,
                 .where = "layer groups '" + text + "'",
                 .expected = "ranges like 0-5,6-11, or lists like 0,1,2;3,4 (groups separated by ';')",
                 .found = found,
                 .hint = "layers are numbered 0.." + std::to_string(layers - 1)});
  };
  auto number = [&](std::string_view token) {
    const auto v = parseWholeInt(token);
    if (!v) bad("not a layer number", "'" + std::string(token) + "'");
    if (*v < 0 || *v >= layers) bad("layer out of range", std::to_string(*v));
    return *v;
  };
  std::vector<std::vector<int64_t>> groups;
  const bool lists = text.find(';') != std::string::npos;
  for (std::string_view part : splitList(text, lists ? ';' : ',')) {
    std::vector<int64_t> group;
    if (lists) {
      for (std::string_view item : splitList(part, ',')) group.push_back(number(item));
    } else if (const auto dash = part.find('-'); dash != std::string_view::npos) {
      const int64_t a = number(part.substr(0, dash)), b = number(part.substr(dash + 1));
      if (b < a) bad("range runs backwards", "'" + std::string(part) + "'");
      for (int64_t l = a; l <= b; ++l) group.push_back(l);
    } else {
      group.push_back(number(part));
    }
    groups.push_back(std::move(group));
  }
  if (groups.empty()) bad("no groups", "'" + text + "'");
  std::vector<bool> used(static_cast<size_t>(layers), false);
  for (const auto& g : groups)
    for (int64_t l : g) {
      if (used[static_cast<size_t>(l)]) bad("layer in two groups", std::to_string(l));
      used[static_cast<size_t>(l)] = true;
    }
  return groups;
}

std::vector<MatrixPcaGroup> computeMatrixPca(const Checkpoint& ckpt, const ModelView& view,
                                             const MatrixPcaOptions& options, const TaskContext& ctx) {
  std::vector<std::vector<int64_t>> groups = options.groups;
  if (groups.empty()) {
    groups.emplace_back();
    for (const LayerView& l : view.layers) groups.back().push_back(l.index);
  }
  std::vector<MatrixPcaGroup> out;
  size_t step = 0;
  const size_t steps = options.projections.size() * groups.size();
  for (Proj p : options.projections) {
    for (const auto& group : groups) {
      ctx.throwIfCancelled();
      ++step;
      std::vector<FloatMatrix> w(group.size());
      bool present = true;
      for (int64_t l : group) present = present && view.layers.at(static_cast<size_t>(l)).has(p);
      if (!present) continue;
      parallelFor(group.size(), ctx, [&](size_t i) {
        w[i] = materializeFinite(ckpt, view.layers[static_cast<size_t>(group[i])].at(p));
      });
      out.push_back(matrixPcaOfMatrices(p, group, w, options.keepAtoms));
      ctx.report(static_cast<double>(step) / static_cast<double>(steps),
                 "matrix PCA: " + std::string(projName(p)));
    }
  }
  return out;
}

std::vector<TrainedDictionary> trainedDictionaries(const Checkpoint& ckpt) {
  std::vector<TrainedDictionary> out;
  const auto it = ckpt.metadata().find(names::kTopologyMetadataKey);
  if (it == ckpt.metadata().end()) return out;
  const Topology t = topologyFromJson(parseJsonStrict(it->second, "topology metadata"), "topology metadata");
  if (!t.masa.enabled) return out;
  const auto groups = t.masa.effectiveGroups(t.model.layers);
  for (Proj p : t.masa.projections) {
    const std::vector<float> coefficients = ckpt.readFloat(names::masaCoefficients(p));  // [L, S]
    for (size_t g = 0; g < groups.size(); ++g) {
      TrainedDictionary d;
      d.proj = p;
      d.group = static_cast<int64_t>(g);
      d.layers = groups[g];
      const std::string atomsName = names::masaAtoms(p, d.group);
      const TensorInfo& info = *ckpt.at(atomsName).info;  // [S, out, in]
      for (int64_t s = 0; s < info.dim(0); ++s) {
        MatrixExpr e;
        e.rows = info.dim(1);
        e.cols = info.dim(2);
        MatrixTerm term;
        term.left = TensorSlice{atomsName, false, s, 0, e.rows, 0, e.cols};
        e.terms.push_back(term);
        d.atoms.push_back(materializeFinite(ckpt, e));
      }
      const int64_t atoms = static_cast<int64_t>(d.atoms.size());
      d.coefficients = FloatMatrix(atoms, static_cast<int64_t>(d.layers.size()));
      for (int64_t s = 0; s < atoms; ++s)
        for (size_t i = 0; i < d.layers.size(); ++i)
          d.coefficients(s, static_cast<int64_t>(i)) =
              coefficients[static_cast<size_t>(d.layers[i] * atoms + s)];
      out.push_back(std::move(d));
    }
  }
  return out;
}

FloatMatrix atomCorrelation(std::span<const FloatMatrix> atoms) {
  const int64_t s = static_cast<int64_t>(atoms.size());
  FloatMatrix phi(s, s);
  std::vector<double> norms;
  for (const FloatMatrix& a : atoms) norms.push_back(std::sqrt(dot(a, a)));
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = i; j < s; ++j) {
      const double denom = norms[static_cast<size_t>(i)] * norms[static_cast<size_t>(j)];
      const float value = denom > 0 ? static_cast<float>(dot(atoms[i], atoms[j]) / denom) : 0.0f;
      phi(i, j) = phi(j, i) = value;
    }
  return phi;
}

}  // namespace sharelens

namespace sharelens {

std::vector<LearnedDictionaryMap> learnedDictionaryMaps(const Checkpoint& checkpoint) {
  std::vector<LearnedDictionaryMap> out;
  for (const TrainedDictionary& d : trainedDictionaries(checkpoint))
    out.push_back({d.proj, d.group, d.layers, atomCorrelation(d.atoms), d.coefficients});
  return out;
}

}  // namespace sharelens
