#include "app/plot/figures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/compression_methods.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/statistics.hpp"

namespace sharelens::plot {

std::string percentText(double v) {
  char buf[32];
  // The fewest decimals (up to three) that read back within 0.0005 of the value: "95%", "90.4%", "99.96%",
  // never a rounded neighbour ("90%" for 0.904, "100%" for 0.9996).
  const double p = 100 * v;
  for (int decimals = 0; decimals <= 3; ++decimals) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, p);
    if (std::abs(std::strtod(buf, nullptr) - p) < 5e-4 || decimals == 3) break;
  }
  return std::string(buf) + "%";
}

std::vector<std::string> numberedLabels(const std::string& prefix, int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

namespace {

Heatmap rankHeatmap(const RankMap& map, Colormap colormap, const std::string& label) {
  Heatmap h;
  h.rows = h.cols = map.n;
  h.values.reserve(map.rank.size());
  int32_t top = 1;
  for (int32_t r : map.rank) {
    h.values.push_back(static_cast<float>(r));
    top = std::max(top, r);
  }
  for (int64_t i = 0; i < map.n; ++i)
    h.values[static_cast<size_t>(i * map.n + i)] = NAN;  // the diagonal is trivial
  h.missingMeaning = "the same matrix (a difference of zero)";
  h.colormap = colormap;
  h.vmin = 0;
  h.vmax = top;
  h.colorbarLabel = label;
  return h;
}

}  // namespace

Figure spectrumFigure(const std::vector<const MatrixSpectrum*>& chosen, bool normalised,
                      const std::string& title, bool logY) {
  Figure f;
  f.title = title;
  f.xLabel = "index i";
  f.xIntegers = true;
  f.yLabel = normalised ? "sigma_i / sigma_1" : "sigma_i";
  f.yScale = logY ? Scale::Log10 : Scale::Linear;
  int color = 0;
  for (const MatrixSpectrum* m : chosen) {
    Series s;
    s.label = m->id.name + "  (rank " + std::to_string(m->spectrum.effectiveRank) + ")";
    s.color = seriesColor(color);
    const double top =
        normalised && !m->spectrum.sigma.empty() && m->spectrum.sigma[0] > 0 ? m->spectrum.sigma[0] : 1.0;
    for (size_t i = 0; i < m->spectrum.sigma.size(); ++i) {
      s.x.push_back(static_cast<double>(i + 1));
      s.y.push_back(m->spectrum.sigma[i] / top);
    }
    f.markers.push_back(
        {static_cast<double>(m->spectrum.effectiveRank), "r" + percentText(m->spectrum.threshold), s.color});
    f.series.push_back(std::move(s));
    ++color;
  }
  if (!chosen.empty())
    f.subtitle =
        "dashed: effective rank at " + percentText(chosen.front()->spectrum.threshold) + " of the energy";
  return f;
}

Figure headPairSpectrumFigure(const MatrixSpectrum& pair) {
  return spectrumFigure({&pair}, true, "Spectrum of " + pair.id.name);
}

Figure tensorHistogramFigure(const TensorSummary& s) {
  Figure f;
  f.title = s.name;
  f.xLabel = "value";
  f.yLabel = "elements";
  f.legend = false;
  if (s.nan + s.infinite > 0)  // the bins span the finite values only
    f.subtitle = "over its " + std::to_string(s.finite) + " finite values; " + std::to_string(s.nan) +
                 " NaN and " + std::to_string(s.infinite) + " infinite left out";
  Series bars;
  bars.style = SeriesStyle::Bars;
  const double width = (s.max - s.min) / static_cast<double>(std::max<size_t>(1, s.histogram.size()));
  bars.barWidth = width > 0 ? width : 1.0;
  for (size_t b = 0; b < s.histogram.size(); ++b) {
    bars.x.push_back(s.min + (static_cast<double>(b) + 0.5) * width);
    bars.y.push_back(static_cast<double>(s.histogram[b]));
  }
  f.series.push_back(std::move(bars));
  return f;
}

namespace {

// One matrix's weights against step: a band between the percentiles a normal distribution has 1.5 standard
// deviations either side of its mean, an inner one at 0.5, and the median (kWeightPercentiles' indices 1, 7;
// 3, 5; 4).
void addWeightDistribution(Figure& f, const RankTrajectory& t, Rgb color) {
  auto band = [&](size_t lo, size_t hi, const std::string& label) {
    Series s;
    s.label = label;
    s.color = color;
    s.width = label.empty() ? 0.0f : 2.0f;
    for (const RankPoint& p : t.points) {
      s.x.push_back(static_cast<double>(p.step));
      s.y.push_back(p.weightPercentiles[4]);
      s.bandLow.push_back(p.weightPercentiles[lo]);
      s.bandHigh.push_back(p.weightPercentiles[hi]);
    }
    f.series.push_back(std::move(s));
  };
  band(1, 7, "");
  band(3, 5, t.matrix);
}

}  // namespace

Figure rankDynamicsFigure(const RankDynamics& d, RankQuantity quantity) {
  Figure f;
  const char* what = quantity == RankQuantity::EffectiveRank  ? "Effective rank"
                     : quantity == RankQuantity::StableRank   ? "Stable rank"
                     : quantity == RankQuantity::SpectralNorm ? "Spectral norm"
                     : quantity == RankQuantity::EsdAlpha     ? "ESD power-law alpha"
                                                              : "Weight distribution";
  f.title = std::string(what) + " against training step";
  f.xLabel = "training step";
  f.yLabel = quantity == RankQuantity::EffectiveRank  ? "effective rank (" + percentText(d.threshold) + ")"
             : quantity == RankQuantity::StableRank   ? "||W||_F^2 / ||W||_2^2"
             : quantity == RankQuantity::SpectralNorm ? "sigma_1"
             : quantity == RankQuantity::EsdAlpha     ? "alpha (p(lambda) ~ lambda^-alpha)"
                                                      : "weight";
  f.xIntegers = true;
  int color = 0;
  for (const RankTrajectory& t : d.trajectories) {
    if (quantity == RankQuantity::Weights) {
      addWeightDistribution(f, t, seriesColor(color++));
      continue;
    }
    Series s;
    s.label = t.matrix;
    s.color = seriesColor(color++);
    s.style = SeriesStyle::LineAndMarkers;
    for (const RankPoint& p : t.points) {
      s.x.push_back(static_cast<double>(p.step));
      s.y.push_back(quantity == RankQuantity::EffectiveRank  ? static_cast<double>(p.effectiveRank)
                    : quantity == RankQuantity::StableRank   ? p.stableRank
                    : quantity == RankQuantity::SpectralNorm ? p.spectralNorm
                                                             : p.esdAlpha);
    }
    f.series.push_back(std::move(s));
  }
  if (!d.trajectories.empty())
    f.subtitle = std::to_string(d.trajectories.front().points.size()) + " checkpoints";
  if (quantity == RankQuantity::Weights)
    f.subtitle += "; line: median, bands: the percentiles of a normal's mean +- 0.5 and +- 1.5 sd";
  if (quantity == RankQuantity::EsdAlpha)
    f.subtitle += "; 2-4: well trained, > 6: under-trained (WeightWatcher's reading)";
  return f;
}

std::vector<int64_t> headMapIndices(const HeadDiffLayer& layer, const std::optional<Proj>& proj) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < layer.map.n; ++i)
    if (!proj ||
        (static_cast<size_t>(i) < layer.heads.size() && layer.heads[static_cast<size_t>(i)].proj == *proj))
      out.push_back(i);
  return out;
}

Figure headDifferenceFigure(const HeadDiffLayer& layer, double threshold, Colormap colormap,
                            const HeadMapChoice& choice) {
  Figure f;
  const std::vector<int64_t> shown = headMapIndices(layer, choice.proj);
  if (shown.empty())
    throw Error({.what = "no heads of this projection in the map",
                 .where = "layer " + std::to_string(layer.layer),
                 .expected = "one of the projections the map holds (o only with the O heads computed)",
                 .found = std::string(projName(*choice.proj)),
                 .hint = "choose q, k, v or all pairs; run without --heads-qkv-only for o"});
  RankMap map;  // the shown rows and columns of the layer's map
  map.n = static_cast<int64_t>(shown.size());
  for (int64_t a : shown)
    for (int64_t b : shown) {
      map.rank.push_back(layer.map.rankAt(a, b));
      map.relativeDifference.push_back(
          layer.map.relativeDifference[static_cast<size_t>(a * layer.map.n + b)]);
    }
  f.title = "Head differences, layer " + std::to_string(layer.layer) +
            (choice.proj ? ", " + std::string(projName(*choice.proj)) + " heads" : "");
  f.subtitle = "effective rank (" + percentText(threshold) +
               " energy) of W_a - W_b for every pair of the layer's " +
               (choice.proj ? std::string(projName(*choice.proj)) + " heads" : "attention matrices");
  f.heatmap = rankHeatmap(map, colormap, "effective rank");
  if (choice.fitRange) {  // the shown off-diagonal ranks' span (the diagonal is NaN)
    float low = INFINITY, high = -INFINITY;
    for (float v : f.heatmap->values)
      if (!std::isnan(v)) low = std::min(low, v), high = std::max(high, v);
    if (low <= high) {
      f.heatmap->vmin = low;
      f.heatmap->vmax = std::max(high, low + 1);
      f.subtitle += "; colours fitted to " + std::to_string(static_cast<int>(low)) + ".." +
                    std::to_string(static_cast<int>(high));
    }
  }
  for (int64_t i : shown) f.heatmap->rowLabels.push_back(layer.labels[static_cast<size_t>(i)]);
  f.heatmap->colLabels = f.heatmap->rowLabels;
  f.xLabel = f.yLabel = "head";
  return f;
}

Figure layerDifferenceFigure(const LayerDiffMap& map, double threshold, Colormap colormap) {
  Figure f;
  f.title = "Layer differences: " + std::string(projName(map.proj)) + " (" + std::to_string(map.rows) +
            " x " + std::to_string(map.cols) + ")";
  f.subtitle = "effective rank (" + percentText(threshold) + " energy) of W_l - W_m";
  f.heatmap = rankHeatmap(map.map, colormap, "effective rank");
  f.heatmap->rowLabels = f.heatmap->colLabels = numberedLabels("", map.map.n);
  f.xLabel = f.yLabel = "layer";
  return f;
}

Figure layerOutputDifferenceFigure(const RankMap& map, int64_t tokens, double threshold, Colormap colormap) {
  Figure f;
  f.title = "Layer-output differences over " + std::to_string(tokens) + " tokens";
  f.subtitle = "effective rank (" + percentText(threshold) + " energy) of dh_l - dh_m, dh_l = h_l - h_(l-1)";
  f.heatmap = rankHeatmap(map, colormap, "effective rank");
  f.heatmap->rowLabels = f.heatmap->colLabels = numberedLabels("", map.n);
  f.xLabel = f.yLabel = "layer";
  return f;
}

Figure masaCoefficientFigure(const MatrixPcaGroup& g) {
  Figure f;
  f.title = "MASA coefficients, " + std::string(projName(g.proj)) + " (layers " +
            std::to_string(g.layers.front()) + ".." + std::to_string(g.layers.back()) + ")";
  f.subtitle = "C = D^T W: row s = atom, column = layer";
  Heatmap h;
  h.rows = g.coefficients.rows;
  h.cols = g.coefficients.cols;
  h.values = g.coefficients.data;
  float extreme = 1e-12f;
  for (float v : h.values) extreme = std::max(extreme, std::abs(v));
  h.colormap = Colormap::Diverging;  // signed: symmetric around 0
  h.vmin = -extreme;
  h.vmax = extreme;
  h.colorbarLabel = "coefficient";
  h.rowLabels = numberedLabels("D", h.rows);
  for (int64_t l : g.layers) h.colLabels.push_back(std::to_string(l));
  f.heatmap = std::move(h);
  f.xLabel = "layer";
  f.yLabel = "atom";
  return f;
}

Figure masaVarianceFigure(const std::vector<const MatrixPcaGroup*>& groups) {
  Figure f;
  f.title = "MASA: variance explained by the first S atoms";
  f.xLabel = "atoms S";
  f.xIntegers = true;
  f.yLabel = "explained variance";
  f.yRange = Range{0, 1.02};
  int color = 0;
  for (const MatrixPcaGroup* g : groups) {
    Series s;
    s.label = std::string(projName(g->proj)) + " layers " + std::to_string(g->layers.front()) + ".." +
              std::to_string(g->layers.back());
    s.color = seriesColor(color++);
    s.style = SeriesStyle::LineAndMarkers;
    for (size_t i = 0; i < g->explainedVariance.size(); ++i) {
      s.x.push_back(static_cast<double>(i + 1));
      s.y.push_back(g->explainedVariance[i]);
    }
    f.series.push_back(std::move(s));
  }
  return f;
}

Figure atomCorrelationFigure(const FloatMatrix& phi, const std::string& what) {
  Figure f;
  f.title = "Atom correlation " + what;
  f.subtitle = "Phi(D_i, D_j) = tr(D_i^T D_j) / (|D_i| |D_j|)";
  Heatmap h;
  h.rows = phi.rows;
  h.cols = phi.cols;
  h.values = phi.data;
  h.colormap = Colormap::Diverging;
  h.vmin = -1;
  h.vmax = 1;
  h.colorbarLabel = "Phi";
  h.rowLabels = h.colLabels = numberedLabels("D", phi.rows);
  f.heatmap = std::move(h);
  f.xLabel = f.yLabel = "atom";
  return f;
}

Figure klDriftFigure(const ActivationResults& a) {
  const std::vector<double>& drift = a.klDrift;
  const std::vector<std::vector<int64_t>>& groups = a.groups;
  Figure f;
  f.title = "Logit-lens KL drift between consecutive layers";
  f.xLabel = "layer l";
  f.xIntegers = true;
  f.yLabel = "KL(p_l || p_(l+1))";
  Series s;
  s.label = "KL drift";
  s.style = SeriesStyle::LineAndMarkers;
  for (size_t i = 0; i < drift.size(); ++i) {
    s.x.push_back(static_cast<double>(i));
    s.y.push_back(drift[i]);
  }
  f.series.push_back(std::move(s));
  f.legend = false;  // one curve, named by the title and the y axis: the markers' labels keep the corner
  // A cut after layer l is the drift point l that made it (KL between l and l + 1): the marker stands on it.
  for (size_t g = 1; g < groups.size(); ++g)
    f.markers.push_back({static_cast<double>(groups[g].front() - 1),
                         "group " + std::to_string(g) + " from layer " + std::to_string(groups[g].front()),
                         {200, 60, 60}});
  f.subtitle = std::to_string(groups.size()) + " MASA groups, " +
               (a.klGroupCount > 0 ? "cut after the " + std::to_string(a.klGroupCount - 1) + " largest drifts"
                                   : std::string("split after each local maximum")) +
               "; " + a.logitLens + " lens over " + std::to_string(a.logitLensTokens) + " tokens";
  return f;
}

std::string unitLabel(const DirectShareResult& r, int64_t layer, int64_t unit) {
  return "L" + std::to_string(layer) + (r.unitKind == "head" ? ".h" : ".g") + std::to_string(unit);
}

Figure directShareFigure(const DirectShareResult& r) {
  Figure f;
  const bool heads = r.unitKind == "head";
  f.title = heads ? "DirectShare: cosine similarity of [W_q ; W_k] between heads"
                  : "DirectShare: cosine similarity of [W_q ; W_k] between KV groups";
  char buf[200];
  std::snprintf(buf, sizeof buf, "alpha %.2f: %zu %s share Q, K, V; %s parameters saved (%.2f%% of %s)",
                r.achievedRatio(), r.chosen.size(), heads ? "heads" : "KV groups",
                humanCount(static_cast<double>(r.parametersSaved)).c_str(),
                100.0 * static_cast<double>(r.parametersSaved) /
                    std::max<double>(1, static_cast<double>(r.parametersTotal)),
                humanCount(static_cast<double>(r.parametersTotal)).c_str());
  f.subtitle = buf;
  Heatmap h;
  h.rows = h.cols = r.layers * r.units;
  h.values = r.similarity;
  h.colormap = Colormap::Diverging;  // cosine in [-1, 1]
  h.vmin = -1;
  h.vmax = 1;
  h.colorbarLabel = "cosine";
  for (int64_t l = 0; l < r.layers; ++l)
    for (int64_t u = 0; u < r.units; ++u) h.rowLabels.push_back(unitLabel(r, l, u));
  h.colLabels = h.rowLabels;
  f.heatmap = std::move(h);
  f.xLabel = f.yLabel = heads ? "layer, head" : "layer, KV group";
  return f;
}

Figure attentionSimilarityFigure(const FloatMatrix& similarity, const std::vector<std::string>& labels,
                                 Colormap colormap) {
  Figure f;
  f.title = "Attention-map similarity between heads";
  f.subtitle = "cosine similarity of attention maps over sample text";
  Heatmap h;
  h.rows = similarity.rows;
  h.cols = similarity.cols;
  h.values = similarity.data;
  h.colormap = colormap;
  h.vmin = 0;
  h.vmax = 1;
  h.colorbarLabel = "cosine";
  h.rowLabels = h.colLabels = labels;
  f.heatmap = std::move(h);
  f.xLabel = f.yLabel = "layer, head";
  return f;
}

Figure embeddingSpectrumFigure(const EmbeddingStudy& e) {
  MatrixSpectrum m;
  m.id.name = "embedding";
  m.spectrum = e.spectrum;
  Figure f = spectrumFigure(
      {&m}, true,
      "Token embedding spectrum (" + std::to_string(e.vocab) + " x " + std::to_string(e.hidden) + ")");
  char buf[96];
  std::snprintf(buf, sizeof buf, "rho = %.3f of all parameters are embeddings%s", e.rho,
                e.tied ? " (tied)" : "");
  f.subtitle = buf;
  return f;
}

Figure factorizationFigure(const EmbeddingStudy& e) {
  Figure f;
  f.title = "Embedding factorisation E ~ E_r P_r";
  f.xLabel = "rank r (fraction of d_model)";
  f.yLabel = "relative reconstruction error";
  f.yRange = Range{0, 1.02};
  Series error;
  error.label = "||E - E_r P_r|| / ||E||";
  error.style = SeriesStyle::LineAndMarkers;
  Series params;
  params.label = "parameters r(V + d) / V d";
  params.color = seriesColor(1);
  params.dashed = true;
  for (const FactorizationPoint& p : e.curve) {
    error.x.push_back(p.fractionOfHidden);
    error.y.push_back(p.relativeError);
    params.x.push_back(p.fractionOfHidden);
    params.y.push_back(static_cast<double>(p.parameters) / static_cast<double>(e.vocab * e.hidden));
  }
  f.series = {std::move(error), std::move(params)};
  if (e.tyingCosineMean) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "untied: mean cosine(e_j, u_j) = %.3f (median %.3f)", *e.tyingCosineMean,
                  *e.tyingCosineMedian);
    f.subtitle = buf;
  }
  return f;
}

Figure embeddingLossFigure(const EmbeddingStudy& e) {
  Figure f;
  f.title = "Held-out loss with the embedding truncated to rank r";
  f.subtitle = e.validationText;
  f.xLabel = "rank r (fraction of d_model)";
  f.yLabel = "validation NLL (nats / token)";
  Series truncated;
  truncated.label = "embedding at rank r";
  truncated.style = SeriesStyle::LineAndMarkers;
  Series stored;
  stored.label = "as stored (full rank)";
  stored.color = seriesColor(1);
  stored.dashed = true;
  for (const FactorizationPoint& p : e.curve) {
    if (!std::isfinite(p.validationNll)) continue;
    truncated.x.push_back(p.fractionOfHidden);
    truncated.y.push_back(p.validationNll);
  }
  if (!truncated.x.empty() && std::isfinite(e.fullRankValidationNll)) {
    stored.x = {truncated.x.front(), truncated.x.back()};
    stored.y = {e.fullRankValidationNll, e.fullRankValidationNll};
  }
  f.series = {std::move(truncated), std::move(stored)};
  return f;
}

Figure compressionSweepFigure(const SweepReport& sweep) {
  Figure f;
  f.title = "Perplexity against the attention parameters kept";
  f.subtitle = sweep.original.text.empty()
                   ? ""
                   : std::to_string(sweep.original.tokens) + " held-out tokens of " + sweep.original.text;
  f.xLabel = "share of attention parameters kept (achieved)";
  f.yLabel = "held-out perplexity";
  f.yScale = Scale::Log10;
  double lo = 1, hi = 0;
  int color = 0;
  for (const CompressionMethod& method : kCompressionMethods) {
    Series s;
    s.label = std::string(method.label);
    s.style = SeriesStyle::LineAndMarkers;
    s.color = seriesColor(color++);
    std::vector<std::pair<double, double>> xy;
    for (const SweepPoint& p : sweep.points)
      if (p.method == method.name && std::isfinite(p.eval.perplexity))
        xy.emplace_back(p.achievedRatio, p.eval.perplexity);
    std::sort(xy.begin(), xy.end());
    for (const auto& [x, y] : xy) {
      s.x.push_back(x);
      s.y.push_back(y);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    if (!s.x.empty()) f.series.push_back(std::move(s));
  }
  if (std::isfinite(sweep.original.perplexity) && hi > lo) {
    Series original;
    original.label = "original";
    original.color = Rgb{90, 90, 90};
    original.dashed = true;
    original.x = {lo, hi};
    original.y = {sweep.original.perplexity, sweep.original.perplexity};
    f.series.push_back(std::move(original));
  }
  return f;
}

}  // namespace sharelens::plot
