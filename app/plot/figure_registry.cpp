#include "app/plot/figure_registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/esd.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/spectra.hpp"
#include "app/plot/figures.hpp"
#include "core/error.hpp"

namespace sharelens::plot {
namespace {

[[noreturn]] void noSuch(const std::string& what, const std::string& expected, const std::string& found) {
  throw Error({.what = what, .where = "figure", .expected = expected, .found = found});
}

// The figure `id` drawn from the result of `analysis` (analysis/analysis_ids.hpp): `build` takes that
// result typed. A result of another kind (an entry bound to the wrong analysis) is a named error, not a
// null dereference.
template <class T, class Build>
FigureKind figure(FigureId figureId, AnalysisId<T> analysis, std::string_view summary, Build build) {
  const std::string_view id = figureId.name;
  return {id, analysis.id, summary, [id, analysis, build](const AnalysisResult& r, const FigureParams& p) {
            const T* result = resultAs<T>(r);
            if (!result)
              throw Error({.what = "no result to draw",
                           .where = "figure '" + std::string(id) + "'",
                           .expected = "the result of the " + std::string(analysis.id) + " analysis",
                           .found = r ? "a result of another analysis" : "none",
                           .hint = "run the analysis first"});
            return build(*result, p);
          }};
}

std::vector<const MatrixPcaGroup*> groupsOf(const std::vector<MatrixPcaGroup>& all, Proj p) {
  std::vector<const MatrixPcaGroup*> out;
  for (const MatrixPcaGroup& g : all)
    if (g.proj == p) out.push_back(&g);
  if (out.empty())
    noSuch("no matrix PCA for this projection", "one of the analysed projections", std::string(projName(p)));
  return out;
}

std::vector<FigureKind> makeKinds() {
  std::vector<FigureKind> k;
  k.push_back(figure(
      figure_ids::kSpectrum, analyses::kSpectra, "singular values of chosen matrices (log y)",
      [](const std::vector<MatrixSpectrum>& spectra, const FigureParams& p) {
        int64_t layers = 0;
        for (const MatrixSpectrum& s : spectra) layers = std::max(layers, s.id.layer + 1);
        if (p.layer && (*p.layer < 0 || *p.layer >= layers))
          noSuch("layer out of range", "0.." + std::to_string(layers - 1), std::to_string(*p.layer));
        std::vector<const MatrixSpectrum*> chosen;
        for (const MatrixSpectrum& s : spectra) {
          const bool named = std::find(p.matrices.begin(), p.matrices.end(), s.id.name) != p.matrices.end();
          const bool atLayer = p.layer
                                   ? s.id.layer == *p.layer
                                   : s.id.layer == 0 || s.id.layer == layers / 2 || s.id.layer == layers - 1;
          const bool byDefault = p.matrices.empty() && s.id.proj == p.proj && s.id.head < 0 && atLayer;
          if (named || byDefault) chosen.push_back(&s);
        }
        return spectrumFigure(chosen, p.normalised, "Singular-value spectra", p.logY);
      }));
  k.push_back(figure(
      figure_ids::kHeads, analyses::kHeads, "effective rank of W_a - W_b for the heads of one layer",
      [](const HeadDiffResult& h, const FigureParams& p) {
        const int64_t layer = p.layer.value_or(0);
        if (layer < 0 || layer >= static_cast<int64_t>(h.layers.size()))
          noSuch("layer out of range", "0.." + std::to_string(h.layers.size() - 1), std::to_string(layer));
        return headDifferenceFigure(h.layers[static_cast<size_t>(layer)], h.threshold, p.colormap,
                                    {p.headProj, p.fitRange});
      }));
  k.push_back(figure(figure_ids::kLayers, analyses::kLayers, "effective rank of W_l - W_m for one projection",
                     [](const LayerDiffResult& l, const FigureParams& p) {
                       const auto it = std::find_if(l.maps.begin(), l.maps.end(),
                                                    [&](const LayerDiffMap& m) { return m.proj == p.proj; });
                       if (it == l.maps.end())
                         noSuch("no layer map for this projection", "an analysed projection",
                                std::string(projName(p.proj)));
                       return layerDifferenceFigure(*it, l.threshold, p.colormap);
                     }));
  k.push_back(figure(figure_ids::kLayerOutputs, analyses::kActivations,
                     "effective rank of dh_l - dh_m over text",
                     [](const ActivationResults& a, const FigureParams& p) {
                       return layerOutputDifferenceFigure(a.layerOutputs, a.tokens, a.threshold, p.colormap);
                     }));
  k.push_back(figure(figure_ids::kKlDrift, analyses::kActivations,
                     "logit-lens KL drift between consecutive layers and its MASA groups",
                     [](const ActivationResults& a, const FigureParams&) { return klDriftFigure(a); }));
  k.push_back(figure(figure_ids::kAttentionSimilarity, analyses::kActivations,
                     "cosine similarity of heads' attention maps over text",
                     [](const ActivationResults& a, const FigureParams& p) {
                       return attentionSimilarityFigure(a.attentionSimilarity, a.headLabels, p.colormap);
                     }));
  k.push_back(figure(figure_ids::kMasaCoefficients, analyses::kMasa,
                     "Matrix PCA coefficients of one projection's layer group",
                     [](const std::vector<MatrixPcaGroup>& r, const FigureParams& p) {
                       const auto groups = groupsOf(r, p.proj);
                       return masaCoefficientFigure(*groups[std::min(p.group, groups.size() - 1)]);
                     }));
  k.push_back(figure(figure_ids::kMasaVariance, analyses::kMasa,
                     "variance explained against the number of atoms",
                     [](const std::vector<MatrixPcaGroup>& r, const FigureParams& p) {
                       return masaVarianceFigure(groupsOf(r, p.proj));
                     }));
  k.push_back(figure(
      figure_ids::kMasaCorrelation, analyses::kMasaTrained, "atom correlation of a learned MASA dictionary",
      [](const std::vector<LearnedDictionaryMap>& maps, const FigureParams& p) {
        const auto it = std::find_if(maps.begin(), maps.end(),
                                     [&](const LearnedDictionaryMap& m) { return m.proj == p.proj; });
        if (it == maps.end())
          throw Error(
              {.what = "no learned MASA atoms for this projection",
               .where = "figure masa-correlation",
               .found = std::string(projName(p.proj)),
               .hint = "the atom-correlation map needs a ShareLens checkpoint trained with MASA on it"});
        return atomCorrelationFigure(it->correlation,
                                     "(learned atoms, " + std::string(projName(p.proj)) + ")");
      }));
  k.push_back(figure(figure_ids::kDirectShare, analyses::kDirectShare,
                     "cosine similarity of [W_q ; W_k] between units",
                     [](const DirectShareResult& r, const FigureParams&) { return directShareFigure(r); }));
  k.push_back(
      figure(figure_ids::kEmbeddingSpectrum, analyses::kEmbedding, "singular values of the token embedding",
             [](const EmbeddingStudy& r, const FigureParams&) { return embeddingSpectrumFigure(r); }));
  k.push_back(figure(figure_ids::kEmbeddingLoss, analyses::kEmbeddingLoss,
                     "held-out NLL with the embedding truncated to each rank (Fig. 2c)",
                     [](const EmbeddingStudy& r, const FigureParams&) { return embeddingLossFigure(r); }));
  k.push_back(figure(figure_ids::kFactorization, analyses::kEmbedding, "factorisation error against the rank",
                     [](const EmbeddingStudy& r, const FigureParams&) { return factorizationFigure(r); }));
  k.push_back(figure(
      figure_ids::kEsd, analyses::kEsd, "eigenvalue density of one matrix with its power-law fit (log-log)",
      [](const std::vector<MatrixEsd>& all, const FigureParams& p) {
        const auto it = std::find_if(all.begin(), all.end(), [&](const MatrixEsd& e) {
          return e.id.layer == p.layer.value_or(0) && e.id.proj == p.proj;
        });
        if (it == all.end())
          noSuch("no such matrix", "an analysed layer and projection",
                 "layer " + std::to_string(p.layer.value_or(0)) + " " + std::string(projName(p.proj)));
        const MatrixEsd& e = *it;
        Figure f;
        f.title = "Empirical spectral density of " + e.id.name;
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "power-law alpha %.2f above x_min %.3g (%lld of %zu eigenvalues, KS distance %.3f)",
                      e.fit.alpha, e.fit.xmin, static_cast<long long>(e.fit.tail), e.eigenvalues.size(),
                      e.fit.ks);
        f.subtitle = buf;
        f.xLabel = "eigenvalue of W^T W";
        f.yLabel = "density";
        f.xScale = f.yScale = Scale::Log10;
        std::vector<double> positive;
        for (double v : e.eigenvalues)
          if (v > 0) positive.push_back(v);
        if (positive.size() < 2) return f;
        const double lo = std::log10(*std::min_element(positive.begin(), positive.end()));
        const double hi = std::log10(*std::max_element(positive.begin(), positive.end())) + 1e-9;
        const int bins = std::clamp(static_cast<int>(positive.size() / 4), 8, 60);
        std::vector<double> counts(static_cast<size_t>(bins), 0.0);
        for (double v : positive)
          counts[static_cast<size_t>(
              std::min(bins - 1, static_cast<int>((std::log10(v) - lo) / (hi - lo) * bins)))] += 1;
        Series hist{"eigenvalues", {}, {}, {0, 114, 178}, SeriesStyle::Markers};
        for (int b = 0; b < bins; ++b) {
          const double a = std::pow(10.0, lo + (hi - lo) * b / bins),
                       z = std::pow(10.0, lo + (hi - lo) * (b + 1) / bins);
          if (counts[static_cast<size_t>(b)] > 0) {
            hist.x.push_back(std::sqrt(a * z));
            hist.y.push_back(counts[static_cast<size_t>(b)] /
                             (static_cast<double>(positive.size()) * (z - a)));
          }
        }
        f.series.push_back(std::move(hist));
        if (std::isfinite(
                e.fit.alpha)) {  // p(x) = (alpha - 1)/x_min (x/x_min)^-alpha, weighted by the tail's share
          Series fit{"power law", {}, {}, {213, 94, 0}, SeriesStyle::Line, 2.0f};
          const double share = static_cast<double>(e.fit.tail) / static_cast<double>(positive.size());
          for (int i = 0; i <= 40; ++i) {
            const double x = e.fit.xmin * std::pow(std::pow(10.0, hi) / e.fit.xmin, i / 40.0);
            fit.x.push_back(x);
            fit.y.push_back(share * (e.fit.alpha - 1) / e.fit.xmin * std::pow(x / e.fit.xmin, -e.fit.alpha));
          }
          f.series.push_back(std::move(fit));
          f.markers.push_back({e.fit.xmin, "x_min", {213, 94, 0}});
        }
        return f;
      }));
  k.push_back(figure(
      figure_ids::kEsdAlpha, analyses::kEsd, "power-law alpha of every projection against the layer",
      [](const std::vector<MatrixEsd>& all, const FigureParams&) {
        Figure f;
        f.title = "Power-law alpha of the weight ESDs";
        f.subtitle = "WeightWatcher's reading: 2..4 well trained, above 6 under-trained";
        f.xLabel = "layer";
        f.yLabel = "alpha";
        f.xIntegers = true;
        const Rgb colors[] = {{0, 114, 178}, {213, 94, 0},   {0, 158, 115},  {204, 121, 167},
                              {230, 159, 0}, {86, 180, 233}, {120, 120, 120}};
        for (Proj p : kAllProjs) {
          Series s{
              std::string(projName(p)), {}, {}, colors[static_cast<int>(p)], SeriesStyle::LineAndMarkers};
          for (const MatrixEsd& e : all)
            if (e.id.proj == p && std::isfinite(e.fit.alpha)) {
              s.x.push_back(static_cast<double>(e.id.layer));
              s.y.push_back(e.fit.alpha);
            }
          if (!s.x.empty()) f.series.push_back(std::move(s));
        }
        return f;
      }));
  return k;
}

}  // namespace

const std::vector<FigureKind>& figureKinds() {
  static const std::vector<FigureKind> kinds = makeKinds();
  return kinds;
}

std::string figureIds() {
  std::string ids;
  for (const FigureKind& k : figureKinds()) ids += (ids.empty() ? "" : ", ") + std::string(k.id);
  return ids;
}

const FigureKind& figureKind(std::string_view id) {
  for (const FigureKind& k : figureKinds())
    if (k.id == id) return k;
  throw Error({.what = "unknown view",
               .where = "--view",
               .expected = figureIds(),
               .found = "'" + std::string(id) + "'"});
}

const FigureKind& figureKind(FigureId id) {
  return figureKind(id.name);
}

}  // namespace sharelens::plot
